"""Ingestion's rules: one raw Amazon Reviews 2023 line in, one snapshot row or one bad record out.

Pure functions and small state over bytes and dicts, no files: `parse_line` and
`normalize_product` / `normalize_review` are the per-record rules (the raw JSONL form and the
Hugging Face form normalise to the same row), `convert_block` applies them to a block of lines
(in a worker process), and `CrossRecordRules` applies the rules that need every record read
before (duplicate parent_asin, orphan reviews, copies of one review) in file and line order.
Every record that cannot be used becomes a bad record with a stable reason code (`REASONS`).
`ecombench.catalog.ingest` does the reading and writing around them.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from ecombench.catalog.id_tables import ContentCopies, IdTable
from ecombench.tables.fields import FieldTable, load_field_table

if TYPE_CHECKING:  # pyarrow is not needed to apply the rules, only to carry their rows
    import pyarrow as pa

# Stable reason codes of bad records (manifest `bad_by_reason`, bad_records.jsonl `reason`).
INVALID_JSON = "invalid_json"
INVALID_UTF8 = "invalid_utf8"
NOT_AN_OBJECT = "not_an_object"
MISSING_PARENT_ASIN = "missing_parent_asin"
DUPLICATE_PARENT_ASIN = "duplicate_parent_asin"
WRONG_TYPE = "wrong_type"
TRUNCATED_GZIP = "truncated_gzip"
TRUNCATED_LINE = "truncated_line"
OUT_OF_RANGE = "out_of_range"
REASONS = (INVALID_JSON, INVALID_UTF8, NOT_AN_OBJECT, MISSING_PARENT_ASIN, DUPLICATE_PARENT_ASIN,
           WRONG_TYPE, TRUNCATED_GZIP, TRUNCATED_LINE, OUT_OF_RANGE)
# Reasons a single field can be dropped for while the rest of its record is kept (bad record with "field").
FIELD_REASONS = (WRONG_TYPE, OUT_OF_RANGE)

EXCERPT_CHARS = 200

# Price strings in the Hugging Face form that mean "no price" (SOURCES.md; "—" is an em dash).
_NO_PRICE = frozenset({"", "none", "null", "nan", "—", "-", "–", "n/a"})
_PRICE_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?|\.\d+")


@dataclass(frozen=True)
class ValueRule:
    """The range a numeric field's value must lie in; the one definition ingest and the catalog suite read.

    Attributes:
        field: the snapshot column.
        min_value: the smallest allowed value, or None.
        max_value: the largest allowed value, or None.
    """

    field: str
    min_value: float | None = None
    max_value: float | None = None

    def allows(self, value: float) -> bool:
        """Whether `value` lies in the range (None, "no value", always does)."""
        return ((self.min_value is None or value >= self.min_value)
                and (self.max_value is None or value <= self.max_value))

    def describe(self) -> str:
        """The rule as words, e.g. "in [1, 5]" or "at least 0"."""
        if self.max_value is None:
            return f"at least {self.min_value:g}"
        return f"in [{self.min_value:g}, {self.max_value:g}]"


# The value rules of a good record. A product whose field breaks one keeps the rest (the field is
# dropped and logged with reason out_of_range); validation/expectations.py builds its range checks
# of the snapshot from PRODUCT_VALUE_RULES, so ingest and build agree on what is good.
PRODUCT_VALUE_RULES = (ValueRule("average_rating", 1, 5), ValueRule("rating_number", 0), ValueRule("price", 0))
REVIEW_VALUE_RULES = (ValueRule("rating", 1, 5), ValueRule("helpful_vote", 0))
# Without these a product is not a product: a bad one rejects the record.
ESSENTIAL_PRODUCT_FIELDS = ("parent_asin", "title")


class RecordError(ValueError):
    """A record that cannot be ingested.

    Attributes:
        reason: one of `REASONS`, the bad record's stable code.
        message: what is wrong, naming the field (goes into bad_records.jsonl).
        field: the non-essential field dropped for it, when the record is kept without it (else None).
    """

    field: str | None = None

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


# --------------------------------------------------------------------------------------------
# Values


def parse_price(value: Any) -> tuple[float | None, str | None]:
    """Price as a number plus the raw text it came from.

    The raw form stores a float or null, the Hugging Face form a string ("9.99", "None", "—",
    "from 4.95", "$10.99 - $24.99"). The raw text of a float is its Python `repr` ("59.0"),
    which is exactly the string the Hugging Face export holds for the same price, so both forms
    normalise to the same pair.

    Rules: the first number in the text is the price, so "from 4.95" -> 4.95 and a range
    "$10.99 - $24.99" -> its low end 10.99 (the cheapest variant is what a budget can buy);
    thousands separators are dropped. Empty, "None", "null" and dash-only strings mean no price
    and give (None, None), like null. Text with no number ("Currently unavailable") keeps its
    raw text with price None.

    Args:
        value: float, int, str or None, as found in a metadata record.

    Returns:
        (price, price_raw).

    Raises:
        RecordError: `wrong_type` for a bool, list or dict.

    Examples:
        >>> parse_price(9.99), parse_price("from 4.95"), parse_price("$10.99 - $24.99")
        ((9.99, '9.99'), (4.95, 'from 4.95'), (10.99, '$10.99 - $24.99'))
        >>> parse_price("None"), parse_price(None)
        ((None, None), (None, None))
    """
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise RecordError(WRONG_TYPE, f"price is a {type(value).__name__}")
    if isinstance(value, (int, float)):
        number = float(value)
        return number, repr(number)
    raw = value.strip()
    if raw.lower() in _NO_PRICE:
        return None, None
    match = _PRICE_NUMBER.search(raw)
    if match is None:
        return None, raw
    return float(match.group().replace(",", "")), raw


def detail_value_text(value: Any) -> str:
    """A detail value as stripped text: lists joined with ", ", dicts and bools as compact JSON.

    Real records hold dict values (`Best Sellers Rank`), and other dumps hold lists or numbers;
    the snapshot stores every detail value as a string so one column type serves all.

    Args:
        value: any JSON value of a `details` entry.

    Returns:
        The text; "" for None, `str(value)` for numbers.

    Examples:
        >>> detail_value_text([" 2 x AA ", None, "USB"]), detail_value_text({"Electronics": 12})
        ('2 x AA, USB', '{"Electronics":12}')
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return ", ".join(t for t in (detail_value_text(v) for v in value) if t)
    if isinstance(value, (dict, bool)):
        return orjson.dumps(value).decode()
    return str(value)


def _text(obj: dict, name: str) -> str | None:
    value = obj.get(name)
    if value is None or isinstance(value, str):
        return value
    raise RecordError(WRONG_TYPE, f"{name} is a {type(value).__name__}, expected a string")


def _optional_label(obj: dict, name: str) -> str | None:
    # Empty labels mean "not given"; stratification by main_category must not see "" as a class.
    value = _text(obj, name)
    value = value.strip() if value is not None else None
    return value or None


def _float(obj: dict, name: str) -> float | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordError(WRONG_TYPE, f"{name} is a {type(value).__name__}, expected a number")
    return float(value)


def _int(obj: dict, name: str, default: int | None = None) -> int | None:
    value = obj.get(name)
    if value is None:
        return default
    # Hugging Face exports of columns with nulls turn ints into floats (12 -> 12.0).
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # then range-checked like any integer: 1e20 is integral and too large
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(WRONG_TYPE, f"{name} is a {type(value).__name__}, expected an integer")
    if not -2**63 <= value < 2**63:  # the snapshot's Int64 column: larger counts are catalog damage, not data
        raise RecordError(OUT_OF_RANGE, f"{name} is {value}, more than a 64-bit integer holds")
    return value


def _str_list(obj: dict, name: str) -> list[str]:
    value = obj.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecordError(WRONG_TYPE, f"{name} is a {type(value).__name__}, expected a list")
    for item in value:  # fast path: only strings, the list is kept as parsed
        if item.__class__ is not str:
            break
    else:
        return value
    out = []
    for item in value:
        if item is None:
            continue
        if not isinstance(item, str):
            raise RecordError(WRONG_TYPE, f"{name} holds a {type(item).__name__}, expected strings")
        out.append(item)
    return out


def _parent_asin(obj: dict) -> str:
    value = obj.get("parent_asin")
    if value is None:
        raise RecordError(MISSING_PARENT_ASIN, "parent_asin is missing or null")
    if not isinstance(value, str):
        raise RecordError(WRONG_TYPE, f"parent_asin is a {type(value).__name__}, expected a string")
    value = value.strip()
    if not value:
        raise RecordError(MISSING_PARENT_ASIN, "parent_asin is empty")
    return value


@lru_cache(maxsize=1 << 16)
def _canonical_key(table_path: str, raw_key: str) -> str:
    # Real catalogs reuse a few thousand detail keys millions of times; the alias lookup was
    # half of the normalisation time before this cache (bounded, so memory stays flat).
    return load_field_table(table_path, check_vocabulary=False).canonical_key(raw_key)


def normalize_details(raw: Any, table: FieldTable) -> list[dict[str, str]]:
    """Detail pairs in source order with canonical keys.

    Each pair is repaired with `FieldTable.split_fused` (a value fused into its key, or an empty
    key), then `key = table.canonical_key(raw_key)`; `raw_key` is the (repaired) key as written.
    Pairs whose key and value are both empty after repair are dropped.

    Args:
        raw: the record's `details`: a dict (raw form), a JSON-encoded dict (Hugging Face form),
            or None / "" for none.
        table: the field table.

    Returns:
        `[{"key", "raw_key", "value"}, ...]`.

    Raises:
        RecordError: `wrong_type` when `details` is neither a dict nor a JSON object string.
    """
    if raw is None:
        return []
    if isinstance(raw, str):
        if not raw.strip():
            return []
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise RecordError(WRONG_TYPE, "details is a string that is not valid JSON") from None
        if raw is None:
            return []
    if not isinstance(raw, dict):
        raise RecordError(WRONG_TYPE, f"details is a {type(raw).__name__}, expected an object")
    out = []
    canonical = _key_cache(table)
    for raw_key, raw_value in raw.items():
        # Fast path, nearly every real pair: a string value and a non-empty key and value, which
        # `split_fused` returns unchanged. The general path below gives the same result for them.
        if raw_value.__class__ is str and raw_key.__class__ is str:
            value = raw_value.strip()
            if value and not raw_key.isspace() and raw_key:
                key = canonical.get(raw_key)
                if key is None:
                    key = canonical[raw_key] = _canonical_key(table.source_path, raw_key)
                out.append({"key": key, "raw_key": raw_key, "value": value})
                continue
        key, value = table.split_fused(raw_key, detail_value_text(raw_value))
        value = value.strip()
        if not key.strip() and not value:
            continue
        out.append({"key": _canonical_key(table.source_path, key), "raw_key": key, "value": value})
    return out


_KEY_CACHES: dict[str, dict[str, str]] = {}


def _key_cache(table: FieldTable) -> dict[str, str]:
    # raw key -> canonical key per field table file (as `_canonical_key` keys it), bounded: a
    # plain dict lookup is several times cheaper than an lru_cache call, and this runs per pair.
    cache = _KEY_CACHES.setdefault(table.source_path, {})
    if len(cache) > 1 << 16:
        cache.clear()
    return cache


def normalize_product(obj: dict, *, source_file: str, source_line: int,
                      table: FieldTable | None = None, dropped: list[RecordError] | None = None) -> dict[str, Any]:
    """One metadata record (raw or Hugging Face form) as a `products.parquet` row.

    Args:
        obj: the parsed JSON object.
        source_file: file name (no directory), kept for provenance.
        source_line: 1-based line number in that file.
        table: field table for detail keys; None loads the bundled one.
        dropped: when given, a non-essential field of the wrong type or outside its `PRODUCT_VALUE_RULES`
            range is left at its default (None, or [] for lists) and its RecordError (`wrong_type` /
            `out_of_range`, with `.field`) appended here; when None such a field raises.

    Returns:
        A dict with exactly the keys of `ecombench.catalog.schema.PRODUCT_SCHEMA`; `review_count` is 0 here and is
        filled by the snapshot writer once reviews are read. Images, videos, bought_together
        and unknown fields are dropped.

    Raises:
        RecordError: an essential field (`ESSENTIAL_PRODUCT_FIELDS`) is bad: `missing_parent_asin`, or
        `wrong_type` naming parent_asin or title; any bad field when `dropped` is None.
    """
    table = table or load_field_table(check_vocabulary=False)
    parent_asin = _parent_asin(obj)
    title = _text(obj, "title") or ""  # essential: a wrong-typed title rejects the record
    keep = _FieldKeeper(dropped)
    price, price_raw = keep("price", lambda: parse_price(obj.get("price")), (None, None), lambda v: v[0])
    row = {
        "parent_asin": parent_asin,
        "title": title,
        "main_category": keep("main_category", lambda: _optional_label(obj, "main_category"), None),
        "store": keep("store", lambda: _optional_label(obj, "store"), None),
        "average_rating": keep("average_rating", lambda: _float(obj, "average_rating"), None),
        "rating_number": keep("rating_number", lambda: _int(obj, "rating_number"), None),
        "price": price,
        "price_raw": price_raw,
        "features": keep("features", lambda: _str_list(obj, "features"), []),
        "description": keep("description", lambda: _str_list(obj, "description"), []),
        "categories": keep("categories", lambda: _str_list(obj, "categories"), []),
        "details": keep("details", lambda: normalize_details(obj.get("details"), table), []),
        "source_file": source_file,
        "source_line": source_line,
        "review_count": 0,
    }
    return row


class _FieldKeeper:
    """Reads one non-essential field at a time.

    A value of the wrong type or out of its range becomes the field's default, and the reason goes to
    `dropped` (or is raised when no list was given).
    """

    _RULES = {r.field: r for r in (*PRODUCT_VALUE_RULES, *REVIEW_VALUE_RULES)}

    def __init__(self, dropped: list[RecordError] | None):
        self.dropped = dropped

    def __call__(self, name: str, read: Any, default: Any, number: Any = None) -> Any:
        try:
            value = read()
            rule = self._RULES.get(name)
            checked = number(value) if number else value
            if rule is not None and checked is not None and not rule.allows(checked):
                raise RecordError(OUT_OF_RANGE, f"{name} is {checked:g}, expected {rule.describe()}")
        except RecordError as err:
            if self.dropped is None:
                raise
            err.field = name
            self.dropped.append(err)
            return default
        return value


def review_content_key(review: dict[str, Any]) -> bytes:
    """sha256 of the fields that identify a review's content (before the occurrence counter).

    Args:
        review: a `normalize_review` row.

    Returns:
        32 bytes: sha256 of (parent_asin, user_id, timestamp, rating, title, text) as JSON.
    """
    return content_key(review["parent_asin"], review["user_id"], review["timestamp"], review["rating"],
                       review["title"], review["text"])


def content_key(parent_asin: str, user_id: str | None, timestamp: int | None, rating: float | None, title: str,
                text: str) -> bytes:
    """`review_content_key` from the six values themselves (the native reader has columns, not row dicts).

    Returns:
        32 bytes: sha256 of the JSON list (parent_asin, user_id, timestamp, rating, title, text).
    """
    return hashlib.sha256(orjson.dumps([parent_asin, user_id, timestamp, rating, title, text])).digest()


def review_id(content_key: bytes, occurrence: int) -> str:
    """Content-derived review id: first 16 hex chars of sha256(content key, occurrence).

    The occurrence counter (0 for the first copy) keeps identical reviews apart: the real
    reviews file holds the same (product, title, text, rating) more than once, with user_id
    and timestamp nulled by the source.

    Args:
        content_key: `review_content_key` of the review.
        occurrence: copies of the same content ingested before this one (0 for the first).

    Returns:
        16 lowercase hex characters.
    """
    return hashlib.sha256(content_key + occurrence.to_bytes(8, "big")).hexdigest()[:16]


def normalize_review(obj: dict, *, source_file: str, source_line: int,
                     dropped: list[RecordError] | None = None) -> dict[str, Any]:
    """One review record as a `reviews.parquet` row, without its `review_id`.

    `convert_block` sets the `review_id` of a first copy and `CrossRecordRules` that of a later
    one, because the occurrence counter needs every review seen before. Missing `helpful_vote`
    counts as 0, missing `verified_purchase` as False.

    Args:
        obj: the parsed JSON object.
        source_file: file name (no directory), kept for provenance.
        source_line: 1-based line number in that file.
        dropped: as for `normalize_product` (rules `REVIEW_VALUE_RULES`; parent_asin is essential).

    Returns:
        A dict with exactly the keys of `ecombench.catalog.schema.REVIEW_SCHEMA`, `review_id` "".
        `timestamp` stays as the source gives it (milliseconds since the epoch, or None).

    Raises:
        RecordError: `missing_parent_asin`, or `wrong_type` naming the field.
    """
    parent_asin = _parent_asin(obj)
    try:  # the common case, without the per-field bookkeeping (reviews are hundreds of millions)
        row = {
            "review_id": "", "parent_asin": parent_asin, "asin": _optional_label(obj, "asin"),
            "rating": _float(obj, "rating"), "title": _text(obj, "title") or "", "text": _text(obj, "text") or "",
            "helpful_vote": _int(obj, "helpful_vote", 0), "verified_purchase": _bool(obj, "verified_purchase"),
            "timestamp": _int(obj, "timestamp"), "user_id": _optional_label(obj, "user_id"),
            "source_file": source_file, "source_line": source_line,
        }
        for rule in REVIEW_VALUE_RULES:
            value = row[rule.field]
            if isinstance(value, (int, float)) and not rule.allows(float(value)):
                raise RecordError(OUT_OF_RANGE, f"{rule.field} is {row[rule.field]:g}, expected {rule.describe()}")
        return row
    except RecordError:
        if dropped is None:
            raise
    keep = _FieldKeeper(dropped)
    return {
        "review_id": "",
        "parent_asin": parent_asin,
        "asin": keep("asin", lambda: _optional_label(obj, "asin"), None),
        "rating": keep("rating", lambda: _float(obj, "rating"), None),
        "title": keep("title", lambda: _text(obj, "title") or "", ""),
        "text": keep("text", lambda: _text(obj, "text") or "", ""),
        "helpful_vote": keep("helpful_vote", lambda: _int(obj, "helpful_vote", 0), 0),
        "verified_purchase": keep("verified_purchase", lambda: _bool(obj, "verified_purchase"), False),
        "timestamp": keep("timestamp", lambda: _int(obj, "timestamp"), None),
        "user_id": keep("user_id", lambda: _optional_label(obj, "user_id"), None),
        "source_file": source_file,
        "source_line": source_line,
    }


def _bool(obj: dict, name: str) -> bool:
    value = obj.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RecordError(WRONG_TYPE, f"{name} is a {type(value).__name__}, expected a boolean")
    return value


# --------------------------------------------------------------------------------------------
# Lines and blocks


def parse_line(raw: bytes) -> dict:
    """Parse one JSONL line into a dict.

    Args:
        raw: the line's bytes (a trailing newline is fine).

    Returns:
        The JSON object.

    Raises:
        RecordError: `invalid_utf8`, `truncated_line` (the JSON stops inside a value: a line cut
        short), `invalid_json` or `not_an_object`.
    """
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        body = raw.rstrip()
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as uexc:
            if uexc.reason != "unexpected end of data":  # not a character cut at the end of a short line
                raise RecordError(INVALID_UTF8, f"bytes are not UTF-8 at offset {uexc.start}") from None
            raise RecordError(TRUNCATED_LINE, _truncated(body)) from None
        try:
            orjson.loads(body)
        except orjson.JSONDecodeError as bexc:
            if str(bexc).startswith("unexpected end of data"):  # the text stops inside a value
                raise RecordError(TRUNCATED_LINE, _truncated(body)) from None
        raise RecordError(INVALID_JSON, str(exc)) from None
    if not isinstance(obj, dict):
        raise RecordError(NOT_AN_OBJECT, f"line is a JSON {type(obj).__name__}, expected an object")
    return obj


def _truncated(body: bytes) -> str:
    return f"the line stops inside a JSON value after {len(body)} bytes (truncated)"


def excerpt(raw: bytes) -> str:
    """The bad record's `excerpt` of a line.

    Args:
        raw: the line's bytes.

    Returns:
        Its first `EXCERPT_CHARS` characters, undecodable bytes replaced by U+FFFD, without
        the line break.
    """
    return raw[: EXCERPT_CHARS * 4].decode("utf-8", errors="replace")[:EXCERPT_CHARS].rstrip("\r\n")


@dataclass
class TruncatedInput:
    """Marker yielded by `ecombench.catalog.ingest.iter_blocks` when a gzip stream ends early or is corrupt.

    Attributes:
        line: the line after the last complete one (where the bad record is reported).
        message: what the decompressor said.
    """

    line: int
    message: str


@dataclass
class Block:
    """Consecutive lines of one file, the unit of work of a worker process.

    Attributes:
        first_line: 1-based number of `lines[0]` in its file.
        lines: the lines without their newline; `lines[k]` is line `first_line + k`.
        last_has_newline: False only for a file's last line when the file does not end in one.
    """

    first_line: int
    lines: list[bytes]
    last_has_newline: bool = True

    def raw(self, line: int) -> bytes:
        """The line as read, with its newline (what error messages and excerpts are made from)."""
        k = line - self.first_line
        has_newline = self.last_has_newline or k < len(self.lines) - 1
        return self.lines[k] + b"\n" if has_newline else self.lines[k]


class RawBlock(Block):
    """A `Block` kept as the decompressed bytes it was cut from: its lines are split only when read.

    The native reader (`ecombench.catalog.native`) splits and parses `data[:end]` as whole Arrow columns, so the
    reading process makes no Python object per line; `lines` (and so `raw`) split the bytes on first use,
    for the few lines the Python rules read.

    Attributes:
        first_line: 1-based number of the block's first line in its file.
        data: bytes whose first `end` bytes are the block's lines joined by line breaks (no final one).
        end: where the block's lines stop in `data`.
        count: number of lines in the block (line breaks in `data[:end]`, plus one).
        breaks: where the line breaks of `data[:end]` are (int64 positions, ascending), when the reader found them.
        last_has_newline: False only for a file's last line when the file does not end in one.
    """

    def __init__(self, first_line: int, data: bytes, end: int, count: int, last_has_newline: bool = True,
                 breaks: np.ndarray | None = None):
        self.first_line, self.data, self.end, self.count = first_line, data, end, count
        self.last_has_newline, self.breaks = last_has_newline, breaks
        self._lines: list[bytes] | None = None

    @property  # a read-only view of Block.lines, made on first use
    def lines(self) -> list[bytes]:  # type: ignore[override]
        """The lines without their newline, split from `data` on first use."""
        if self._lines is None:
            self._lines = self.data[:self.end].split(b"\n")
        return self._lines


# --------------------------------------------------------------------------------------------
# Blocks to rows (pure; runs in worker processes)


@dataclass
class Converted:
    """One block's records after per-record checks, before cross-record rules (duplicates, orphans).

    Attributes:
        rows: normalised rows in line order (reviews carry the `review_id` of occurrence 0).
        ids: parent_asin of each row (a list, or a string array from the native reader).
        lines: source line of each row.
        keys: reviews only, `review_content_key` of each row.
        bad: bad records of the block, in line order.
        last_line: last line number in the block.
        batch: the rows as a pyarrow RecordBatch when converted for the snapshot writer (then
            `rows` is empty).
    """

    rows: list[dict[str, Any]]
    ids: list[str] | pa.Array
    lines: list[int]
    keys: list[bytes]
    bad: list[dict[str, Any]]
    last_line: int
    batch: pa.RecordBatch | None = None


def convert_block(kind: str, name: str, block: Block, table: FieldTable | None) -> Converted:
    """Parse and normalise every line of a block: the per-record rules of ingestion.

    Args:
        kind: "meta" (`normalize_product`) or "reviews" (`normalize_review` plus content key).
        name: file name for provenance and bad records.
        block: the lines.
        table: field table for detail keys (metadata; None loads the bundled one, and reviews need none).

    Returns:
        A `Converted`; blank lines are skipped, failing lines become bad records with their
        reason (`invalid_json`, `truncated_line`, `invalid_utf8`, `not_an_object`, `missing_parent_asin`,
        `wrong_type` of an essential field); a non-essential field of the wrong type or out of range
        is dropped and becomes a bad record with `"field"` and `"kept": true` (the record is kept).
        Cross-record rules are `CrossRecordRules.claim`'s.
    """
    rows, ids, lines, keys, bad = [], [], [], [], []
    loads, first = orjson.loads, block.first_line
    for k, raw in enumerate(block.lines):
        if not raw or raw.isspace():
            continue
        line = first + k
        try:
            try:
                obj = loads(raw)
            except orjson.JSONDecodeError:
                obj = parse_line(block.raw(line))  # raises the RecordError, worded as for the line
            if obj.__class__ is not dict:
                obj = parse_line(block.raw(line))
            dropped: list[RecordError] = []
            if kind == "meta":
                row = normalize_product(obj, source_file=name, source_line=line, table=table, dropped=dropped)
            else:
                row = normalize_review(obj, source_file=name, source_line=line, dropped=dropped)
                key = review_content_key(row)
                row["review_id"] = review_id(key, 0)
                keys.append(key)
        except RecordError as err:
            bad.append(_bad(name, line, err.reason, err.message, block.raw(line)))
            continue
        for drop in dropped:  # the record is kept without these fields
            bad.append(_bad(name, line, drop.reason, drop.message, block.raw(line), field=drop.field))
        rows.append(row)
        ids.append(row["parent_asin"])
        lines.append(line)
    return Converted(rows, ids, lines, keys, bad, first + len(block.lines) - 1)


# --------------------------------------------------------------------------------------------
# Cross-record rules (need every record read before; run in the writing process, in order)


@dataclass
class InputStats:
    """Counters for one input file, as they go into the manifest's `inputs`.

    Attributes:
        path: the file as given.
        kind: "meta" or "reviews".
        lines: lines read (blank ones included).
        records_ok: rows kept in the snapshot.
        bad_by_reason: reason code -> bad records.
        orphan_reviews: reviews dropped because their product was not ingested.
    """

    path: str
    kind: str
    lines: int = 0
    records_ok: int = 0
    bad_by_reason: Counter = field(default_factory=Counter)
    orphan_reviews: int = 0


@dataclass
class Claimed:
    """What `CrossRecordRules.claim` decided for one converted block.

    Attributes:
        keep: indices of the rows kept, or None when all are kept.
        new_ids: row index -> review_id, for reviews that are a later copy (occurrence > 0).
        bad: the block's bad records plus its duplicates, in line order.
    """

    keep: list[int] | None
    new_ids: dict[int, str]
    bad: list[dict[str, Any]]


class CrossRecordRules:
    """The rules of ingestion that need every record read before, remembering ids across files.

    Feed it every metadata file first, then the review files, each as `start(path, kind)`
    followed by its converted blocks in line order (`claim`). The first occurrence of a
    parent_asin wins across all metadata files, in the order given; an occurrence that is itself
    a bad record (e.g. `wrong_type`) does not claim the id, so a later good copy is kept. A
    review whose product was not ingested is an orphan, counted per file but not listed.

    The per-record work (`convert_block`) may run anywhere (worker processes); `claim` must see
    blocks in file and line order, so the snapshot is the same whatever ran the blocks.

    Memory: the id tables of `ecombench.catalog.id_tables`, about 12 bytes per ingested product and 16 per
    distinct review content.

    Attributes:
        products: the ingested products' ids (`IdTable`: parent_asin -> ordinal in ingest order); the
            "seen ids".
        inputs: one `InputStats` per file read, in order.
    """

    def __init__(self) -> None:
        self.products = IdTable()
        self.inputs: list[InputStats] = []
        # Copies seen per review content (by the 64-bit prefix of its key); a prefix collision only
        # bumps an occurrence number, ids stay unique and deterministic.
        self._review_copies = ContentCopies()

    def start(self, path: str | os.PathLike, kind: str) -> InputStats:
        """Register the next input file; its blocks then go to `claim` in order.

        Args:
            path: the file (its name goes into bad records, the path into the manifest).
            kind: "meta" or "reviews".

        Returns:
            The file's counters, to pass to `claim` and `truncated` (also kept in `inputs`).
        """
        stats = InputStats(path=str(path), kind=kind)
        self.inputs.append(stats)
        return stats

    def claim(self, conv: Converted, block: Block | None, stats: InputStats) -> Claimed:
        """Apply the cross-record rules to a converted block and count it into `stats`.

        Products: a parent_asin already ingested makes the row a `duplicate_parent_asin` bad
        record. Reviews: a review of a product not ingested is an orphan (dropped, counted);
        a later copy of the same content gets the next occurrence number in its `review_id`.

        Args:
            conv: the block after `convert_block` (its `rows` or `batch` are not read).
            block: the same block's lines (excerpts of duplicate products come from them); None for reviews,
                which the rules never quote.
            stats: the counters `start` returned for the block's file.

        Returns:
            Which rows to keep, which review ids to replace, and the block's bad records
            (its own plus its duplicates) in line order.
        """
        name = Path(stats.path).name
        stats.lines = conv.last_line
        keep: list[int] | None = None
        new_ids: dict[int, str] = {}
        extra_bad: list[dict[str, Any]] = []
        if stats.kind == "meta":
            new = self.products.add_new(conv.ids)
            if not new.all():
                keep = np.flatnonzero(new).tolist()
                assert block is not None, "claim: a metadata block needs its lines"
                for i in np.flatnonzero(~new).tolist():
                    line = conv.lines[i]
                    asin = conv.ids[i] if isinstance(conv.ids, list) else conv.ids[i].as_py()
                    extra_bad.append(_bad(name, line, DUPLICATE_PARENT_ASIN,
                                          f"parent_asin {asin} was already ingested", block.raw(line)))
        else:
            has_product = self.products.lookup(conv.ids) >= 0
            kept: Sequence[int] = range(len(conv.ids))
            if not has_product.all():
                stats.orphan_reviews += int((~has_product).sum())
                keep = np.flatnonzero(has_product).tolist()
                kept = keep
            keys = [conv.keys[i] for i in kept]
            occurrence = self._review_copies.occurrences(keys)
            for j in np.flatnonzero(occurrence).tolist():
                new_ids[kept[j]] = review_id(keys[j], int(occurrence[j]))
        bad = conv.bad
        if extra_bad:
            bad = sorted([*bad, *extra_bad], key=lambda b: b["line"])
        for rec in bad:
            stats.bad_by_reason[rec["reason"]] += 1
        stats.records_ok += len(conv.ids) if keep is None else len(keep)
        return Claimed(keep, new_ids, bad)

    def truncated(self, marker: TruncatedInput, stats: InputStats) -> dict[str, Any]:
        """Count a truncated gzip stream into `stats`.

        Returns:
            Its bad record (reason `truncated_gzip`, at the line after the last complete one).
        """
        stats.bad_by_reason[TRUNCATED_GZIP] += 1
        return _bad(Path(stats.path).name, marker.line, TRUNCATED_GZIP, marker.message, b"")


def _bad(file: str, line: int, reason: str, message: str, raw: bytes, field: str | None = None) -> dict[str, Any]:
    # The bad_records.jsonl record (DESIGN.md "Artifacts"); a dropped field's names it and says the record was kept.
    record = {"file": file, "line": line, "reason": reason, "message": message, "excerpt": excerpt(raw)}
    if field is not None:
        record.update({"field": field, "kept": True})
    return record


