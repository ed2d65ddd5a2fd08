"""Catalog ingestion: Amazon Reviews 2023 metadata and review files into one normalised snapshot.

Reads the official raw JSONL form and the Hugging Face form (price strings, `details` as a
JSON-encoded string, column-dict images), plain or gzip (inflated by ISA-L), in blocks of lines.
Every record that cannot be used becomes a bad record with a stable reason code; nothing stops
a run. The pure part (`parse_price`, `normalize_product`, `normalize_review`, `convert_block`,
`CatalogReader`) takes bytes and dicts; `write_catalog_snapshot` at the bottom is the thin
file-writing edge, which hands blocks to worker processes and applies the rules that need
everything read before (duplicates, orphans, review copies) in file and line order, so the
snapshot is the same whatever the worker count.

Memory is bounded by the blocks in flight and one row group being written, plus one dict entry
per ingested product id (which doubles as the review counter) and one integer per distinct
review content (the occurrence counter of `review_id`); for the full release (48M products,
571M reviews) budget roughly 100 bytes per product and 70 bytes per review for those two
tables.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson
from isal import isal_zlib

from stages.fields import FieldTable, load_field_table

SCHEMA_VERSION = 1

# Stable reason codes of bad records (manifest `bad_by_reason`, bad_records.jsonl `reason`).
INVALID_JSON = "invalid_json"
INVALID_UTF8 = "invalid_utf8"
NOT_AN_OBJECT = "not_an_object"
MISSING_PARENT_ASIN = "missing_parent_asin"
DUPLICATE_PARENT_ASIN = "duplicate_parent_asin"
WRONG_TYPE = "wrong_type"
TRUNCATED_GZIP = "truncated_gzip"
REASONS = (INVALID_JSON, INVALID_UTF8, NOT_AN_OBJECT, MISSING_PARENT_ASIN, DUPLICATE_PARENT_ASIN,
           WRONG_TYPE, TRUNCATED_GZIP)

EXCERPT_CHARS = 200

# Price strings in the Hugging Face form that mean "no price" (SOURCES.md; "—" is an em dash).
_NO_PRICE = frozenset({"", "none", "null", "nan", "—", "-", "–", "n/a"})
_PRICE_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?|\.\d+")


class RecordError(ValueError):
    """A record that cannot be ingested; `reason` is one of `REASONS`."""

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
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(WRONG_TYPE, f"{name} is a {type(value).__name__}, expected an integer")
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
    return load_field_table(table_path).canonical_key(raw_key)


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
                      table: FieldTable | None = None) -> dict[str, Any]:
    """One metadata record (raw or Hugging Face form) as a `products.parquet` row.

    Args:
        obj: the parsed JSON object.
        source_file: file name (no directory), kept for provenance.
        source_line: 1-based line number in that file.
        table: field table for detail keys; None loads the bundled one.

    Returns:
        A dict with exactly the keys of `PRODUCT_SCHEMA`; `review_count` is 0 here and is
        filled by the snapshot writer once reviews are read. Images, videos, bought_together
        and unknown fields are dropped.

    Raises:
        RecordError: `missing_parent_asin`, or `wrong_type` naming the field.
    """
    table = table or load_field_table()
    parent_asin = _parent_asin(obj)
    price, price_raw = parse_price(obj.get("price"))
    return {
        "parent_asin": parent_asin,
        "title": _text(obj, "title") or "",
        "main_category": _optional_label(obj, "main_category"),
        "store": _optional_label(obj, "store"),
        "average_rating": _float(obj, "average_rating"),
        "rating_number": _int(obj, "rating_number"),
        "price": price,
        "price_raw": price_raw,
        "features": _str_list(obj, "features"),
        "description": _str_list(obj, "description"),
        "categories": _str_list(obj, "categories"),
        "details": normalize_details(obj.get("details"), table),
        "source_file": source_file,
        "source_line": source_line,
        "review_count": 0,
    }


def review_content_key(review: dict[str, Any]) -> bytes:
    """sha256 of the fields that identify a review's content (before the occurrence counter)."""
    content = [review["parent_asin"], review["user_id"], review["timestamp"], review["rating"],
               review["title"], review["text"]]
    return hashlib.sha256(orjson.dumps(content)).digest()


def review_id(content_key: bytes, occurrence: int) -> str:
    """Content-derived review id: first 16 hex chars of sha256(content key, occurrence).

    The occurrence counter (0 for the first copy) keeps identical reviews apart: the real
    reviews file holds the same (product, title, text, rating) more than once, with user_id
    and timestamp nulled by the source.
    """
    return hashlib.sha256(content_key + occurrence.to_bytes(8, "big")).hexdigest()[:16]


def normalize_review(obj: dict, *, source_file: str, source_line: int) -> dict[str, Any]:
    """One review record as a `reviews.parquet` row, without its `review_id`.

    `CatalogReader` adds `review_id`, because the occurrence counter needs every review seen
    before. Missing `helpful_vote` counts as 0, missing `verified_purchase` as False.

    Raises:
        RecordError: `missing_parent_asin`, or `wrong_type` naming the field.
    """
    return {
        "review_id": "",
        "parent_asin": _parent_asin(obj),
        "asin": _optional_label(obj, "asin"),
        "rating": _float(obj, "rating"),
        "title": _text(obj, "title") or "",
        "text": _text(obj, "text") or "",
        "helpful_vote": _int(obj, "helpful_vote", 0),
        "verified_purchase": _bool(obj, "verified_purchase"),
        "timestamp": _int(obj, "timestamp"),
        "user_id": _optional_label(obj, "user_id"),
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

    Raises:
        RecordError: `invalid_utf8`, `invalid_json` or `not_an_object`.
    """
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as uexc:
            raise RecordError(INVALID_UTF8, f"bytes are not UTF-8 at offset {uexc.start}") from None
        raise RecordError(INVALID_JSON, str(exc)) from None
    if not isinstance(obj, dict):
        raise RecordError(NOT_AN_OBJECT, f"line is a JSON {type(obj).__name__}, expected an object")
    return obj


def excerpt(raw: bytes) -> str:
    """First `EXCERPT_CHARS` characters of a raw line, undecodable bytes replaced."""
    return raw[: EXCERPT_CHARS * 4].decode("utf-8", errors="replace")[:EXCERPT_CHARS].rstrip("\r\n")


def is_gzip(path: str | os.PathLike) -> bool:
    """True when the file starts with the gzip magic bytes (the extension is not trusted)."""
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


@dataclass
class TruncatedInput:
    """Marker yielded by `iter_blocks`/`iter_lines` when a gzip stream ends early or is corrupt."""

    line: int
    message: str


class _Truncated(Exception):
    pass


# Compressed bytes fed to the decompressor at a time: with JSON's ~3x ratio a step yields ~1 MB,
# and even a pathological 1000:1 stream stays within a few hundred MB per step.
_READ_BYTES = 256 * 1024
BLOCK_BYTES = 4 * 1024 * 1024  # decompressed bytes per block: one unit of work for a worker


def _decompressed_chunks(path: Path, plain_bytes: int) -> Iterator[bytes]:
    # ISA-L's inflate (`isal`) is about 2x zlib's on this data (benchmarks/RESULTS.md). A stream
    # of concatenated gzip members is read whole, like gzip.open does. Raises _Truncated when the
    # stream stops early or is corrupt; every byte decoded before that has been yielded.
    with open(path, "rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            fh.seek(0)
            while chunk := fh.read(plain_bytes):
                yield chunk
            return
        fh.seek(0)
        inflater = isal_zlib.decompressobj(wbits=31)
        in_member = False
        while buf := fh.read(_READ_BYTES):
            while buf:
                in_member = True
                try:
                    out = inflater.decompress(buf)
                except isal_zlib.error as exc:
                    raise _Truncated(str(exc)) from None
                if out:
                    yield out
                buf = b""
                if inflater.eof:
                    rest = inflater.unused_data
                    inflater = isal_zlib.decompressobj(wbits=31)
                    in_member = False
                    # gzip.open ignores zero padding after the last member; so do we.
                    buf = rest if rest.strip(b"\x00") else b""
        if in_member and not inflater.eof:
            raise _Truncated("Compressed file ended before the end-of-stream marker was reached")


@dataclass
class Block:
    """Consecutive lines of one file: `lines[k]` is line `first_line + k`, without its newline.

    `last_has_newline` is False only for a file's last line when the file does not end in one.
    """

    first_line: int
    lines: list[bytes]
    last_has_newline: bool = True

    def raw(self, line: int) -> bytes:
        """The line as read, with its newline (what error messages and excerpts are made from)."""
        k = line - self.first_line
        has_newline = self.last_has_newline or k < len(self.lines) - 1
        return self.lines[k] + b"\n" if has_newline else self.lines[k]


def iter_blocks(path: str | os.PathLike, block_bytes: int = BLOCK_BYTES) -> Iterator[Block | TruncatedInput]:
    """Lines of a plain or gzip JSONL file in blocks of about `block_bytes`, streamed.

    Blank lines are included (callers skip them) so line numbers match the file. A gzip file
    that stops early or is corrupt yields its complete lines, then one `TruncatedInput` whose
    `line` is the last complete line + 1, then ends: everything read before it stands.
    """
    line_no = 0
    parts: list[bytes] = []
    size = 0
    try:
        for chunk in _decompressed_chunks(Path(path), block_bytes):
            parts.append(chunk)
            size += len(chunk)
            if size < block_bytes:
                continue
            data = b"".join(parts)
            cut = data.rfind(b"\n")
            if cut < 0:
                parts = [data]
                continue
            lines = data[:cut].split(b"\n")
            parts, size = [data[cut + 1:]], len(data) - cut - 1
            yield Block(line_no + 1, lines)
            line_no += len(lines)
    except _Truncated as exc:
        data = b"".join(parts)
        cut = data.rfind(b"\n")
        if cut >= 0:
            lines = data[:cut].split(b"\n")
            yield Block(line_no + 1, lines)
            line_no += len(lines)
        yield TruncatedInput(line_no + 1, f"gzip stream ends or is corrupt after line {line_no}: {exc}")
        return
    data = b"".join(parts)
    if data:
        lines = data.split(b"\n")
        ends = data.endswith(b"\n")
        if ends:
            lines.pop()
        yield Block(line_no + 1, lines, last_has_newline=ends)


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, bytes] | TruncatedInput]:
    """Lines of a plain or gzip JSONL file with their 1-based numbers, streamed.

    Yields `(line_number, raw_bytes)` for every line (with its newline), blank ones included.
    A gzip file that stops early or is corrupt yields one `TruncatedInput` (see `iter_blocks`).
    """
    for block in iter_blocks(path):
        if isinstance(block, TruncatedInput):
            yield block
            return
        for k in range(len(block.lines)):
            yield block.first_line + k, block.raw(block.first_line + k)


# --------------------------------------------------------------------------------------------
# Blocks to rows (pure; runs in worker processes)


@dataclass
class Converted:
    """One block's records after per-record checks, before cross-block rules (duplicates, orphans).

    Attributes:
        rows: normalised rows in line order (reviews carry the `review_id` of occurrence 0).
        ids: parent_asin of each row. lines: source line of each row.
        keys: reviews only, `review_content_key` of each row.
        bad: bad records of the block, in line order. last_line: last line number in the block.
        batch: the rows as a pyarrow RecordBatch when converted for the snapshot writer (then
            `rows` is empty).
    """

    rows: list[dict[str, Any]]
    ids: list[str]
    lines: list[int]
    keys: list[bytes]
    bad: list[dict[str, Any]]
    last_line: int
    batch: Any = None


def convert_block(kind: str, name: str, block: Block, table: FieldTable) -> Converted:
    """Parse and normalise every line of a block: the per-record rules of ingestion.

    Args:
        kind: "meta" (`normalize_product`) or "reviews" (`normalize_review` plus content key).
        name: file name for provenance and bad records.
        block: the lines. table: field table for detail keys.

    Returns:
        A `Converted`; blank lines are skipped, failing lines become bad records with their
        reason (`invalid_json`, `invalid_utf8`, `not_an_object`, `missing_parent_asin`,
        `wrong_type`). Cross-block rules are `CatalogReader.claim`'s.
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
            if kind == "meta":
                row = normalize_product(obj, source_file=name, source_line=line, table=table)
            else:
                row = normalize_review(obj, source_file=name, source_line=line)
                key = review_content_key(row)
                row["review_id"] = review_id(key, 0)
                keys.append(key)
        except RecordError as err:
            bad.append(_bad(name, line, err.reason, err.message, block.raw(line)))
            continue
        rows.append(row)
        ids.append(row["parent_asin"])
        lines.append(line)
    return Converted(rows, ids, lines, keys, bad, first + len(block.lines) - 1)


def rows_to_batch(rows: list[dict[str, Any]], schema) -> Any:
    """Rows (dicts with the schema's keys) as one pyarrow RecordBatch of `schema`."""
    import pyarrow as pa

    # Measured: from_pylist is ~3.5x faster than building flat value arrays and offsets in
    # Python for the list and struct columns (benchmarks/RESULTS.md, issue 6).
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def _convert_to_batch(kind: str, name: str, block: Block, table_path: str) -> Converted:
    # The unit of work of a worker process: rows go back as one Arrow batch (cheap to pickle).
    conv = convert_block(kind, name, block, load_field_table(table_path))
    schema = _part_schema() if kind == "meta" else review_schema()
    conv.batch = rows_to_batch(conv.rows, schema)
    conv.rows = []
    return conv


# --------------------------------------------------------------------------------------------
# Reading many files


@dataclass
class InputStats:
    """Counters for one input file, as they go into the manifest's `inputs`."""

    path: str
    kind: str
    lines: int = 0
    records_ok: int = 0
    bad_by_reason: Counter = field(default_factory=Counter)
    orphan_reviews: int = 0


@dataclass
class Claimed:
    """What `CatalogReader.claim` decided for one converted block.

    Attributes:
        keep: indices of the rows kept, or None when all are kept.
        new_ids: row index -> review_id, for reviews that are a later copy (occurrence > 0).
        bad: the block's bad records plus its duplicates, in line order.
    """

    keep: list[int] | None
    new_ids: dict[int, str]
    bad: list[dict[str, Any]]


class CatalogReader:
    """Streams normalised products and reviews from many files, remembering ids across them.

    Read all metadata files first (`iter_products`), then reviews (`iter_reviews`): a review
    whose product was not ingested is an orphan, counted per file but not listed. The first
    occurrence of a parent_asin wins across all metadata files, in the order given; an
    occurrence that is itself a bad record (e.g. `wrong_type`) does not claim the id, so a
    later good copy is kept.

    The per-record work (`convert_block`) may run anywhere (worker processes); `claim` applies
    the rules that need everything read before, so it sees blocks in file and line order.

    Attributes:
        review_counts: parent_asin -> number of ingested reviews; its keys are the ingested
            products (the "seen ids").
        inputs: one `InputStats` per file read, in order.
    """

    def __init__(self) -> None:
        self.review_counts: dict[str, int] = {}
        self.inputs: list[InputStats] = []
        # 64-bit prefix of each review content key -> copies seen; a prefix collision only
        # bumps an occurrence number, ids stay unique and deterministic.
        self._review_copies: dict[int, int] = {}

    def start(self, path: str | os.PathLike, kind: str) -> InputStats:
        """Register the next input file; its blocks then go to `claim` in order."""
        stats = InputStats(path=str(path), kind=kind)
        self.inputs.append(stats)
        return stats

    def claim(self, conv: Converted, block: Block, stats: InputStats) -> Claimed:
        """Apply the cross-block rules to a converted block and count it into `stats`.

        Products: a parent_asin already ingested makes the row a `duplicate_parent_asin` bad
        record. Reviews: a review of a product not ingested is an orphan (dropped, counted);
        a later copy of the same content gets the next occurrence number in its `review_id`.
        """
        name = Path(stats.path).name
        counts = self.review_counts
        stats.lines = conv.last_line
        keep: list[int] | None = None
        new_ids: dict[int, str] = {}
        extra_bad: list[dict[str, Any]] = []
        if stats.kind == "meta":
            for i, asin in enumerate(conv.ids):
                if asin in counts:
                    if keep is None:
                        keep = list(range(i))
                    line = conv.lines[i]
                    extra_bad.append(_bad(name, line, DUPLICATE_PARENT_ASIN,
                                          f"parent_asin {asin} was already ingested", block.raw(line)))
                    continue
                counts[asin] = 0
                if keep is not None:
                    keep.append(i)
        else:
            copies = self._review_copies
            for i, asin in enumerate(conv.ids):
                if asin not in counts:
                    stats.orphan_reviews += 1
                    if keep is None:
                        keep = list(range(i))
                    continue
                key = conv.keys[i]
                short = int.from_bytes(key[:8], "big")
                occurrence = copies.get(short, 0)
                copies[short] = occurrence + 1
                if occurrence:
                    new_ids[i] = review_id(key, occurrence)
                counts[asin] += 1
                if keep is not None:
                    keep.append(i)
        bad = conv.bad
        if extra_bad:
            bad = sorted([*bad, *extra_bad], key=lambda b: b["line"])
        for rec in bad:
            stats.bad_by_reason[rec["reason"]] += 1
        stats.records_ok += len(conv.ids) if keep is None else len(keep)
        return Claimed(keep, new_ids, bad)

    def truncated(self, marker: TruncatedInput, stats: InputStats) -> dict[str, Any]:
        """Count a truncated gzip stream; returns its bad record."""
        stats.bad_by_reason[TRUNCATED_GZIP] += 1
        return _bad(Path(stats.path).name, marker.line, TRUNCATED_GZIP, marker.message, b"")


def _bad(file: str, line: int, reason: str, message: str, raw: bytes) -> dict[str, Any]:
    return {"file": file, "line": line, "reason": reason, "message": message, "excerpt": excerpt(raw)}


# --------------------------------------------------------------------------------------------
# Snapshot writer (file I/O edge)


def _schemas():
    # pyarrow is imported lazily so the pure functions above load fast in workers and tests.
    import pyarrow as pa

    strings = pa.list_(pa.field("item", pa.string(), nullable=False))
    detail = pa.struct([pa.field("key", pa.string(), nullable=False),
                        pa.field("raw_key", pa.string(), nullable=False),
                        pa.field("value", pa.string(), nullable=False)])
    product_fields = [
        pa.field("parent_asin", pa.string(), nullable=False),
        pa.field("title", pa.string(), nullable=False),
        pa.field("main_category", pa.string()),
        pa.field("store", pa.string()),
        pa.field("average_rating", pa.float64()),
        pa.field("rating_number", pa.int64()),
        pa.field("price", pa.float64()),
        pa.field("price_raw", pa.string()),
        pa.field("features", strings, nullable=False),
        pa.field("description", strings, nullable=False),
        pa.field("categories", strings, nullable=False),
        pa.field("details", pa.list_(pa.field("item", detail, nullable=False)), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("source_line", pa.int64(), nullable=False),
        pa.field("review_count", pa.int64(), nullable=False),
    ]
    review_fields = [
        pa.field("review_id", pa.string(), nullable=False),
        pa.field("parent_asin", pa.string(), nullable=False),
        pa.field("asin", pa.string()),
        pa.field("rating", pa.float64()),
        pa.field("title", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("helpful_vote", pa.int64(), nullable=False),
        pa.field("verified_purchase", pa.bool_(), nullable=False),
        pa.field("timestamp", pa.int64()),
        pa.field("user_id", pa.string()),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("source_line", pa.int64(), nullable=False),
    ]
    return pa.schema(product_fields), pa.schema(review_fields)


def product_schema():
    """The pyarrow schema of `products.parquet` (the contract other stages read)."""
    return _schemas()[0]


def review_schema():
    """The pyarrow schema of `reviews.parquet`."""
    return _schemas()[1]


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, streamed."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def snapshot_fingerprint(input_digests: Sequence[tuple[str, str]], field_table_sha256: str) -> str:
    """sha256 over (schema version, (kind, sha256) of each input in order, field table sha256).

    The kind is included so the same files split differently between metadata and reviews
    give different fingerprints. No paths or times: the same bytes give the same fingerprint
    wherever and whenever they are ingested.
    """
    payload = {"schema_version": SCHEMA_VERSION, "inputs": [list(d) for d in input_digests],
               "field_table_sha256": field_table_sha256}
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _part_schema():
    # products.parquet without review_count: what the first pass writes.
    schema = product_schema()
    return schema.remove(schema.get_field_index("review_count"))


class _RowGroups:
    """Passes batches on to `write` as tables of exactly `size` rows (the last shorter).

    Row groups, and so the file's bytes, depend only on the rows and `size`, never on how the
    rows arrived (block sizes, worker count). Rows of consecutive input files share groups.
    """

    def __init__(self, write: Callable[[Any], None], size: int):
        from concurrent.futures import ThreadPoolExecutor

        self.write, self.size = write, size
        self.pending: list = []
        self.rows = 0
        # Encoding a row group releases the GIL: one background thread overlaps it with reading
        # and claiming the next blocks. At most one group is in flight, so memory stays bounded.
        self._thread = ThreadPoolExecutor(1)
        self._writing = None

    def _write(self, table) -> None:
        if self._writing is not None:
            self._writing.result()
        self._writing = self._thread.submit(self.write, table)

    def add(self, batch) -> None:
        import pyarrow as pa

        if batch.num_rows == 0:
            return
        self.pending.append(batch)
        self.rows += batch.num_rows
        while self.rows >= self.size:
            table = pa.Table.from_batches(self.pending)
            self._write(table.slice(0, self.size).combine_chunks())
            rest = table.slice(self.size)
            self.pending, self.rows = rest.to_batches(), rest.num_rows

    def flush(self) -> None:
        import pyarrow as pa

        if self.rows:
            self._write(pa.Table.from_batches(self.pending).combine_chunks())
        if self._writing is not None:
            self._writing.result()
        self.pending, self.rows, self._writing = [], 0, None

    def close(self) -> None:
        """Wait for a write in flight (its error, if any, was or will be raised by `flush`)."""
        self._thread.shutdown(wait=True)


def _ordered(jobs: Iterator, run: Callable, executor, ahead: int) -> Iterator[tuple[Any, Any]]:
    # (job, result) in job order, at most `ahead` jobs in flight; a job that is not a Block
    # (the truncation marker) passes through unrun.
    from collections import deque

    pending: deque = deque()
    for job in jobs:
        if executor is None or not isinstance(job, Block):
            while pending:
                done_job, fut = pending.popleft()
                yield done_job, fut.result()
            yield job, (run(job) if isinstance(job, Block) else None)
            continue
        pending.append((job, executor.submit(run, job)))
        if len(pending) >= ahead:
            done_job, fut = pending.popleft()
            yield done_job, fut.result()
    while pending:
        done_job, fut = pending.popleft()
        yield done_job, fut.result()


def default_workers() -> int:
    """Worker processes used by `write_catalog_snapshot` when not told: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def write_catalog_snapshot(meta_paths: Sequence[str | os.PathLike], review_paths: Sequence[str | os.PathLike],
                           out_dir: str | os.PathLike, *, batch_size: int = 20_000,
                           name: str | None = None, table: FieldTable | None = None,
                           progress: Callable[[str, int], None] | None = None,
                           workers: int | None = None, block_bytes: int = BLOCK_BYTES) -> dict[str, Any]:
    """Ingest metadata and review files into a catalog snapshot directory.

    Writes `out_dir/` with `products.parquet`, `reviews.parquet` (schemas `product_schema()`
    and `review_schema()`, row groups of `batch_size` rows), `bad_records.jsonl` and `manifest.json` (DESIGN.md "Artifacts").
    Everything goes to a temporary sibling directory renamed to `out_dir` only when complete,
    so a crash leaves no half snapshot. Products keep file and line order; `review_count` is
    added in a second streamed pass over the products part.

    Files are cut into blocks of lines (`iter_blocks`); with `workers` > 1 the blocks are parsed
    and normalised (`convert_block`) by a pool of processes while this process decompresses,
    applies the cross-block rules in order (`CatalogReader.claim`) and writes. The snapshot's
    bytes are the same for any worker count.

    Args:
        meta_paths: metadata files (raw or Hugging Face form, plain or gzip), read in order.
        review_paths: review files, read after all metadata.
        out_dir: the snapshot directory to create; it must not exist.
        batch_size: rows per parquet row group; bounds memory together with the id tables
            (about 100 bytes per product and 70 per review) and the blocks in flight
            (`block_bytes` x 3 per worker).
        name: snapshot name for the manifest; defaults to `out_dir`'s name.
        table: field table; None loads the bundled one. Workers reload it from its file.
        progress: called as `progress(file_name, lines_read)` after each block.
        workers: processes parsing blocks; None uses `default_workers()`, 1 parses in this
            process. Inputs smaller than two blocks are always parsed in this process.
        block_bytes: decompressed bytes per block of lines, the unit of work of a worker;
            smaller blocks spread small inputs over the pool (as tests do). The snapshot is
            the same for any value.

    Returns:
        The manifest dict (also written to `manifest.json`).

    Raises:
        FileNotFoundError: an input file is missing (nothing is written).
        FileExistsError: `out_dir` already exists (it is left untouched).
        ValueError: `batch_size`, `workers` or `block_bytes` is below 1.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    inputs = [(Path(p), "meta") for p in meta_paths] + [(Path(p), "reviews") for p in review_paths]
    for path, _ in inputs:
        if not path.is_file():
            raise FileNotFoundError(f"input file not found: {path}")
    if out.exists():
        raise FileExistsError(f"catalog snapshot already exists, not overwriting: {out}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if block_bytes < 1:
        raise ValueError(f"block_bytes must be at least 1, got {block_bytes}")
    workers = default_workers() if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    table = table or load_field_table()
    field_table_sha = file_sha256(table.source_path)
    digests = [(str(path), kind, file_sha256(path), path.stat().st_size) for path, kind in inputs]
    if sum(size for *_, size in digests) < 2 * block_bytes:
        workers = 1  # a pool's start-up (~1 s) costs more than it saves

    out.parent.mkdir(parents=True, exist_ok=True)
    # os.mkdir (not mkdtemp, which makes 0700) so the renamed snapshot gets the usual umask.
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.mkdir(tmp)
    executor = None
    try:
        if workers > 1:
            # fork is fast and needs no `if __name__ == "__main__"` guard in the caller's script,
            # but forking a process with other threads (a Prefect flow's) can deadlock the child:
            # then spawn, which re-imports the caller's main module (guarded, as Prefect's are).
            alone = threading.active_count() == 1 and sys.platform == "linux"
            executor = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork" if alone else "spawn"))
        product_schema_, review_schema_ = _schemas()
        part_schema = _part_schema()
        reader = CatalogReader()
        bad_total: Counter = Counter()
        # The products part is Arrow IPC, not parquet: it is read back once, batch by batch, to
        # add review_count, and an IPC write and read cost ~0.4 s per 100k products against ~4.4 s
        # for parquet (benchmarks/RESULTS.md); it takes ~2.1 KB per product of temporary disk.
        with open(tmp / "bad_records.jsonl", "wb") as bad_fh, \
                pa.ipc.new_file(tmp / "products.part.arrow", part_schema) as products_w, \
                pq.ParquetWriter(tmp / "reviews.parquet", review_schema_) as reviews_w:
            row_groups = {"meta": _RowGroups(products_w.write_table, batch_size),
                          "reviews": _RowGroups(lambda t: reviews_w.write_table(t, row_group_size=batch_size),
                                                batch_size)}
            try:
                for path, kind in inputs:
                    stats = reader.start(path, kind)
                    groups = row_groups[kind]
                    run = partial(_convert_to_batch, kind, path.name, table_path=table.source_path)
                    for block, conv in _ordered(iter_blocks(path, block_bytes), run, executor, 3 * workers):
                        if isinstance(block, TruncatedInput):
                            bad = [reader.truncated(block, stats)]
                        else:
                            done = reader.claim(conv, block, stats)
                            bad = done.bad
                            batch = conv.batch
                            if done.new_ids:
                                ids = batch.column("review_id").to_pylist()
                                for i, rid in done.new_ids.items():
                                    ids[i] = rid
                                batch = batch.set_column(0, batch.schema.field(0), pa.array(ids, pa.string()))
                            if done.keep is not None:
                                batch = batch.take(pa.array(done.keep, pa.int64()))
                            groups.add(batch)
                        for rec in bad:
                            bad_fh.write(orjson.dumps(rec) + b"\n")
                            bad_total[rec["reason"]] += 1
                        if progress is not None:
                            progress(path.name, stats.lines)
                for groups in row_groups.values():
                    groups.flush()
            finally:
                for groups in row_groups.values():
                    groups.close()

        # Second pass: the counts are only known once every review is read.
        counts = reader.review_counts
        # Plain reads, not a memory map: mapped pages would count in this process's RSS.
        with pa.OSFile(str(tmp / "products.part.arrow")) as source, \
                pq.ParquetWriter(tmp / "products.parquet", product_schema_) as writer:
            part = pa.ipc.open_file(source)
            for k in range(part.num_record_batches):  # each batch is one row group of batch_size rows
                rb = part.get_batch(k)
                ids = rb.column(0).to_pylist()
                review_count = pa.array([counts[i] for i in ids], type=pa.int64())
                writer.write_batch(pa.RecordBatch.from_arrays([*rb.columns, review_count], schema=product_schema_))
        if progress is not None:
            progress("products.parquet", len(counts))
        (tmp / "products.part.arrow").unlink()

        stats = reader.inputs
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "kind": "catalog_snapshot",
            "name": name or out.name,
            "inputs": [{"path": path, "kind": kind, "sha256": sha, "bytes": size, "lines": st.lines,
                        "records_ok": st.records_ok, "bad_by_reason": dict(sorted(st.bad_by_reason.items()))}
                       for (path, kind, sha, size), st in zip(digests, stats, strict=True)],
            "counts": {
                "products": len(counts),
                "reviews": sum(st.records_ok for st in stats if st.kind == "reviews"),
                "orphan_reviews": sum(st.orphan_reviews for st in stats),
                "bad_records": sum(bad_total.values()),
                "bad_by_reason": dict(sorted(bad_total.items())),
            },
            "field_table_sha256": field_table_sha,
            "fingerprint": snapshot_fingerprint([(kind, sha) for _, kind, sha, _ in digests], field_table_sha),
        }
        (tmp / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
        if out.exists():
            raise FileExistsError(f"catalog snapshot already exists, not overwriting: {out}")
        try:
            os.rename(tmp, out)
        except OSError as exc:  # another run created out_dir meanwhile (rename onto a non-empty dir)
            raise FileExistsError(f"catalog snapshot already exists, not overwriting: {out}") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if executor is not None:
            executor.shutdown(cancel_futures=True)
    return manifest


META_MARKERS = frozenset({"main_category", "average_rating", "rating_number", "details", "features", "store"})
REVIEW_MARKERS = frozenset({"rating", "text", "user_id", "helpful_vote", "verified_purchase"})


def sniff_kind(path: str | os.PathLike, lines: int = 20) -> str | None:
    """Guess whether a file holds product metadata ("meta") or reviews ("reviews") from its first records.

    Returns None when the first `lines` lines hold no parseable record. Used to refuse a review
    file given as metadata (or the reverse) before anything is written.
    """
    votes = {"meta": 0, "reviews": 0}
    for item in iter_lines(path):
        if isinstance(item, TruncatedInput):
            break
        line_no, raw = item
        if line_no > lines:
            break
        if not raw.strip():
            continue
        try:
            keys = set(parse_line(raw))
        except RecordError:
            continue
        votes["meta"] += len(keys & META_MARKERS)
        votes["reviews"] += len(keys & REVIEW_MARKERS)
    if not any(votes.values()):
        return None
    return max(votes, key=votes.get)
