"""The native reader: a block of JSONL lines parsed by DuckDB's JSON reader and normalised as whole columns.

`convert_block_native` is a drop-in for `ecombench.catalog.records.convert_block` (same `Converted`, same rows,
same bad records). Per line DuckDB parses once: `json_transform_strict` gives every declared field as its JSON
text (its type is the first byte; a string is unescaped only where it holds a backslash) and the string lists
as lists, and refuses a line that lacks a declared key or repeats one; the details object's keys and values are
read from its own text. The lines it refuses take a second query with the JSON type of every field and the
key list (the queries and their columns: `ecombench.catalog.native_columns`). A few RE2 passes over the raw
lines (`pyarrow.compute.match_substring_regex`, `_SCREEN`) find what DuckDB's parser accepts and orjson refuses
(NaN / Infinity literals, trailing commas, exponents that overflow a double, escaped ASCII that could spell a
key); string list elements that DuckDB read from a number, a boolean, an array or an object are found in its
lists (`_string_elements`). The record rules of `ecombench.catalog.records` then run as pyarrow compute kernels
and numpy over whole columns: types, value ranges, Python's whitespace strip (`utf8_trim` with every
`str.isspace` character), labels, null-free string lists, detail keys (canonical per distinct raw key), the fast
path of `normalize_details`, prices per distinct value.

A line takes the Python rules instead, whole (`ecombench.catalog.records.convert_block` on that line), when
any of those checks says the columns might not give exactly their result: every bad record comes
from there, so its file, line, reason and excerpt are the Python reader's. What is left for Python
on the rows the columns keep is per distinct value or rare: canonical detail keys, price texts,
detail values that are not strings (a `Best Sellers Rank` object is re-serialised by orjson, as
`detail_value_text` does), and the review content keys (sha256).

The line numbers come from the block, so blank lines, truncated gzip streams and the cross-record
rules (`CrossRecordRules`) are untouched. `tests/catalog/test_native.py` holds the snapshot equal to
the Python reader's on every shared real file and the damaged inputs.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ecombench.catalog.native_columns import (
    _NUMBER,
    ABSENT,
    ARRAY,
    BOOL,
    INT,
    LAX_SQL,
    NULL,
    OBJECT,
    STRICT_SQL,
    STRING,
    UINT,
    _bools,
    _bools_int,
    _holding,
    _lax_columns,
    _map_lengths,
    _offsets_data,
    _strict_columns,
    _strict_rows,
    _valid,
)
from ecombench.catalog.records import (
    Block,
    Converted,
    RawBlock,
    content_key,
    convert_block,
    detail_value_text,
    parse_price,
    review_id,
)
from ecombench.catalog.schema import PRODUCT_SCHEMA, REVIEW_SCHEMA
from ecombench.tables.fields import FieldTable, load_field_table

_PRODUCT_PART_SCHEMA = PRODUCT_SCHEMA.remove(PRODUCT_SCHEMA.get_field_index("review_count"))

# Every character Python's str.strip() removes (str.isspace; tests/catalog/test_native.py checks the list):
# utf8_trim with these strips exactly as the rules do.
_WS = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
       "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
# What DuckDB's JSON parser accepts and orjson refuses, found in the raw line (a match inside a string only sends
# a good line the slow way): NaN / Infinity literals (DuckDB reads them case-insensitively), a trailing comma, an
# exponent of three digits or a 300-digit number (a double overflows: orjson refuses it), and an escaped printable
# ASCII character (a key spelt with escapes could repeat a declared key unseen by the other checks). A value
# follows a colon, a comma or an opening bracket, so the search is one RE2 pass per such byte: RE2 skips to the
# next occurrence of a pattern's single first byte (memchr), several times faster than one pattern whose first
# byte is any of three. (A byte order mark needs no search: DuckDB's parser refuses it, as orjson does.)
_VALUE = r"(?:[-+]?(?i:nan|inf|infinity)\s*[,\]}]|[-+]?\d+(?:\.\d+)?[eE][+-]?\d{3}|[-+]?\d{300})"
_SCREEN = (r":\s*" + _VALUE, r",\s*(?:[\]}]|" + _VALUE[3:], r"\[\s*" + _VALUE, r"\\u00[2-7]")
# A string list element (features, description, categories) as DuckDB's VARCHAR[] gives a JSON number or boolean
# (the Python rules drop such a list as wrong_type); an element starting with "[" or "{" is checked by orjson. The
# string "5" reads the same as the number 5, so a row found so is confirmed on its raw line (`_LIST_ELEMENT`).
_SCALAR_ELEMENT = r"^(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|-?(?:NaN|Infinity)|true|false)$"
_LIST_ELEMENT = (r'"(?:features|description|categories)"\s*:\s*\[(?:\s*(?:"(?:[^"\\]|\\.)*"|null)\s*,)*'
                 r'\s*[^"\s\]n]')
_ELEMENT_START = np.zeros(256, dtype=bool)
_ELEMENT_START[np.frombuffer(b"-0123456789NItf[{", dtype=np.uint8)] = True
_ELEMENT_END = np.zeros(256, dtype=bool)
_ELEMENT_END[np.frombuffer(b"0123456789Nye]}", dtype=np.uint8)] = True


# --------------------------------------------------------------------------------------------
# DuckDB, one connection per thread


_LOCAL = threading.local()
THREADS_ENV = "ECOMBENCH_DUCKDB_THREADS"


def _connection() -> Any:
    # One in-memory DuckDB per thread (ecombench.catalog.ingest runs blocks on a pool of threads: DuckDB and pyarrow
    # release the GIL), made in that process (a forked child must not share its parent's). Threads of DuckDB
    # itself: ECOMBENCH_DUCKDB_THREADS, else 1 (the pool spreads blocks over the cores; one block's lines
    # are one Arrow chunk, which DuckDB would scan on one thread anyway).
    made = getattr(_LOCAL, "connection", None)
    if made is None or made[0] != os.getpid():
        # deferred: duckdb loads only for the native reader
        import duckdb

        con = duckdb.connect(":memory:")
        con.execute(f"SET threads = {int(os.environ.get(THREADS_ENV) or 1)}")
        con.execute("SET preserve_insertion_order = true")
        made = _LOCAL.connection = (os.getpid(), con)
    return made[1]


# --------------------------------------------------------------------------------------------
# A block through SQL


def _block_lines(block: Block) -> pa.LargeBinaryArray:
    """Every line of the block (blank ones included) as one Arrow binary array.

    A `RawBlock`'s lines are views of its bytes, each with its line break (the last has none): JSON allows the
    whitespace, and nothing is copied. A `Block`'s lines have none.
    """
    if isinstance(block, RawBlock):
        data, end, breaks = block.data, block.end, block.breaks
        if breaks is None:
            breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8, count=end) == ord("\n"))
        offsets = np.empty(len(breaks) + 2, dtype=np.int64)
        offsets[0], offsets[1:-1], offsets[-1] = 0, breaks + 1, end
        return pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1,
                                     [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    lengths = np.fromiter((len(x) for x in block.lines), dtype=np.int64, count=len(block.lines))
    offsets = np.zeros(len(block.lines) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.Array.from_buffers(pa.large_binary(), len(block.lines), [None, pa.py_buffer(offsets.tobytes()),
                                                                        pa.py_buffer(b"".join(block.lines))])


def _run_sql(kind: str, block: Block) -> tuple[pa.Table | None, np.ndarray, list[int], pa.LargeBinaryArray]:
    """Parse the block's non-blank UTF-8 lines in DuckDB.

    Returns:
        (the normalisable rows' columns (`_strict_columns`, `_lax_columns`; column k = position in `picked`) or
        None; `picked`, the
        block indices of the lines given to DuckDB; block indices of the lines for the Python rules: not
        UTF-8, not a JSON object to DuckDB, or failing a check of `_meta_ok` / `_review_ok` / the screen;
        every line of the block, `_block_lines`).
    """
    every = _block_lines(block)
    # bytes.isspace: the blank lines convert_block skips.
    picked = np.flatnonzero(~_bools(pc.match_substring_regex(every, r"^[ \t\n\r\x0b\x0c]*$")))
    python: list[int] = []
    chosen = every if len(picked) == len(every) else every.take(pa.array(picked))
    try:
        arr = chosen.cast(pa.large_string())  # validates UTF-8
    except pa.ArrowInvalid:
        good = []
        for i in picked.tolist():
            try:
                block.lines[i].decode("utf-8")
                good.append(i)
            except UnicodeDecodeError:
                python.append(i)
        picked = np.asarray(good, dtype=np.int64)
        arr = every.take(pa.array(picked)).cast(pa.large_string())
    if not len(picked):
        return None, picked, sorted(python), every
    screen = ~_screened(arr)
    lines = pa.table({"k": pa.array(np.arange(len(picked)), pa.int64()), "line": arr})
    con = _connection()
    con.register("lines", lines)
    try:
        strict = con.sql(STRICT_SQL[kind]).to_arrow_table()
    finally:
        con.unregister("lines")
    parsed = _strict_rows(kind, strict)
    result = _strict_columns(kind, strict if parsed.all() else strict.filter(pa.array(parsed)))
    if not parsed.all():
        # The lines the strict query refuses (a missing or repeated key, details as text, not JSON) are read
        # again with every field's JSON type and the key list.
        refused = strict.column("k").to_numpy()[~parsed]
        con.register("lines", lines.take(pa.array(refused)))
        try:
            lax = con.sql(LAX_SQL[kind]).to_arrow_table()
        finally:
            con.unregister("lines")
        result = pa.concat_tables([result, _lax_columns(kind, lax, arr, con).cast(result.schema)])
    k = result.column("k").to_numpy()
    if len(k) > 1 and not (np.diff(k) > 0).all():  # DuckDB keeps the lines' order; never rely on it unchecked
        result = result.take(pa.array(np.argsort(k, kind="stable")))
    index = picked
    k = result.column("k").to_numpy()
    seen = np.zeros(len(picked), dtype=bool)
    seen[k] = True
    python.extend(index[~seen].tolist())  # not a JSON object to DuckDB
    ok = (_meta_ok(result, arr) if kind == "meta" else _review_ok(result)) & screen[k]
    python.extend(index[k[~ok]].tolist())
    return (result if ok.all() else result.filter(pa.array(ok))), index, sorted(python), every


# --------------------------------------------------------------------------------------------
# The record rules as column checks: a row failing one takes the Python rules (which log why)


def _or_empty(strings: pa.Array) -> pa.Array:
    """Null strings as "" (a copy only when there is a null)."""
    return pc.fill_null(strings, "") if strings.null_count else strings


def _screened(lines: pa.Array) -> np.ndarray:
    """Lines holding what DuckDB's parser accepts and orjson refuses (`_SCREEN`)."""
    found = np.zeros(len(lines), dtype=bool)
    for pattern in _SCREEN:
        found |= _bools(pc.match_substring_regex(lines, pattern))
    return found


def _string_elements(lists: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Rows of a string list column none of whose elements might have been a JSON number, boolean, array or object.

    Exact for arrays and objects; a row with an element that reads as a number or a boolean may hold it as a string.
    """
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    flat = lists.flatten()
    ok = np.ones(len(lists), dtype=bool)
    if not len(flat):
        return ok
    offsets, data = _offsets_data(flat)
    starts = (offsets[1:] > offsets[:-1]) & _valid(flat)
    starts[starts] = _ELEMENT_START[data[offsets[:-1][starts]]] & _ELEMENT_END[data[offsets[1:][starts] - 1]]
    if not starts.any():
        return ok
    where = np.flatnonzero(starts)
    chosen = flat.take(pa.array(where))
    bad = _bools(pc.match_substring_regex(chosen, _SCALAR_ELEMENT))
    opening = np.flatnonzero(np.isin(data[offsets[:-1][where]], (ord("["), ord("{"))))
    for i, text in zip(opening.tolist(), chosen.take(pa.array(opening)).to_pylist(), strict=True):
        try:
            bad[i] = not isinstance(orjson.loads(text), str)
        except orjson.JSONDecodeError:
            pass
    if bad.any():
        ok[pc.list_parent_indices(lists).to_numpy()[where[bad]]] = False
    return ok


def _codes(result: pa.Table, name: str) -> np.ndarray:
    """The type codes of a declared field (`ABSENT`, `NULL`, `STRING`, ...), one per row."""
    return np.asarray(result.column(f"t_{name}").to_numpy(), dtype=np.int8)


def _absent(result: pa.Table, name: str) -> np.ndarray:
    # The field is missing or a JSON null: the rules read it as None (or their default).
    codes = _codes(result, name)
    return (codes == ABSENT) | (codes == NULL)


def _json_type(result: pa.Table, name: str, *types: int) -> np.ndarray:
    return np.isin(_codes(result, name), types)


def _text_ok(result: pa.Table, name: str) -> np.ndarray:
    return _absent(result, name) | _json_type(result, name, STRING)


def _rating_ok(result: pa.Table, name: str) -> np.ndarray:
    value = result.column(name)
    inside = pc.and_kleene(pc.is_finite(value), pc.and_kleene(pc.greater_equal(value, 1), pc.less_equal(value, 5)))
    return _absent(result, name) | (_json_type(result, name, *_NUMBER) & _bools(inside))


def _count_ok(result: pa.Table, name: str) -> np.ndarray:
    # A non-negative JSON integer that fits int64 (a larger one reads as null). A float count (12.0, as Hugging Face
    # exports give) takes the Python rules, which accept it.
    return _absent(result, name) | (_json_type(result, name, UINT) & _bools(pc.is_valid(result.column(name))))


def _parent_asin(result: pa.Table) -> pa.Array:
    return pc.utf8_trim(result.column("parent_asin"), _WS)


def _common_ok(result: pa.Table) -> np.ndarray:
    # No repeated top-level key (orjson keeps the last copy, DuckDB the first) and a usable parent_asin.
    repeated = result.column("repeated").to_numpy(zero_copy_only=False)
    return ((repeated <= 0) & _json_type(result, "parent_asin", STRING)
            & _bools(pc.not_equal(_parent_asin(result), "")))


def _meta_ok(result: pa.Table, lines: pa.Array) -> np.ndarray:
    """Rows whose every field the columns below normalise exactly as `normalize_product` does, without a drop.

    Args:
        result: `_strict_columns` / `_lax_columns` rows.
        lines: the lines the rows were read from (row i from `lines[k[i]]`).
    """
    ok = _common_ok(result)
    for name in ("title", "main_category", "store"):
        ok &= _text_ok(result, name)
    ok &= _rating_ok(result, "average_rating") & _count_ok(result, "rating_number")
    number = result.column("price_number")
    # -0.0 is a price (its raw text "-0.0"); it is left to the Python rules rather than to a hash of floats.
    price = pc.and_kleene(pc.is_finite(number), pc.greater(number, 0.0))
    zero = pc.and_kleene(pc.equal(number, 0.0), pc.invert(pc.is_in(pc.cast(number, pa.string()), pa.array(["-0"]))))
    ok &= (_absent(result, "price") | _json_type(result, "price", STRING)
           | (_json_type(result, "price", *_NUMBER) & (_bools(price) | _bools(zero))))
    elements = np.ones(result.num_rows, dtype=bool)
    for name in ("features", "description", "categories"):
        ok &= _absent(result, name) | _json_type(result, name, ARRAY)
        elements &= _string_elements(result.column(name))
    if not elements.all():
        doubtful = np.flatnonzero(~elements)
        raw = lines.take(pa.array(result.column("k").to_numpy()[doubtful]))
        ok[doubtful[_bools(pc.match_substring_regex(raw, _LIST_ELEMENT))]] = False
    details = result.column("details").combine_chunks()
    types = pc.list_value_length(result.column("details_t").combine_chunks())
    same_length = _bools(pc.is_valid(details)) & (_map_lengths(details) == _bools_int(types))
    ok &= _absent(result, "details") | (_json_type(result, "details", OBJECT, STRING) & same_length)
    return ok


def _review_ok(result: pa.Table) -> np.ndarray:
    """Rows whose every field the columns below normalise exactly as `normalize_review` does, without a drop."""
    ok = _common_ok(result)
    for name in ("asin", "title", "text", "user_id"):
        ok &= _text_ok(result, name)
    ok &= _rating_ok(result, "rating") & _count_ok(result, "helpful_vote")
    ok &= _absent(result, "verified_purchase") | _json_type(result, "verified_purchase", BOOL)
    ok &= _absent(result, "timestamp") | (_json_type(result, "timestamp", UINT, INT)
                                          & _bools(pc.is_valid(result.column("timestamp"))))
    return ok


# --------------------------------------------------------------------------------------------
# Columns to snapshot columns


def _label(col: pa.Array) -> pa.Array:
    # ecombench.catalog.records._optional_label: stripped, "" is None.
    trimmed = pc.utf8_trim(col, _WS)
    return pc.if_else(pc.equal(trimmed, ""), pa.scalar(None, pa.string()), trimmed)


def _offsets(lengths: np.ndarray) -> pa.Array:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.array(offsets, pa.int32())


def _strings(col: pa.Array, list_type: pa.DataType) -> pa.Array:
    # ecombench.catalog.records._str_list on a list the checks passed: null elements dropped, a null list is [].
    flat = col.flatten()
    lengths = pc.fill_null(pc.list_value_length(col), 0).to_numpy().astype(np.int64)
    if flat.null_count:
        valid = _bools(pc.is_valid(flat))
        parents = pc.list_parent_indices(col).to_numpy()
        lengths = np.bincount(parents[valid], minlength=len(col)).astype(np.int64)
        flat = flat.filter(pa.array(valid))
    return pa.ListArray.from_arrays(_offsets(lengths), flat.cast(pa.string())).cast(list_type)


@lru_cache(maxsize=1 << 16)
def _price_text(text: str) -> tuple[float | None, str | None]:
    return parse_price(text)


def _prices(number: pa.Array, text: pa.Array) -> tuple[pa.Array, pa.Array]:
    # parse_price's (price, price_raw) per distinct value: a number's raw text is its repr, a text is parsed.
    numbers = number.dictionary_encode()
    reprs = pa.array([repr(v) for v in numbers.dictionary.to_pylist()], pa.string()).take(numbers.indices)
    texts = text.dictionary_encode()
    parsed = [_price_text(t) for t in texts.dictionary.to_pylist()]
    text_price = pa.array([p for p, _ in parsed], pa.float64()).take(texts.indices)
    text_raw = pa.array([r for _, r in parsed], pa.string()).take(texts.indices)
    has_number = pc.is_valid(number)
    return pc.if_else(has_number, number, text_price), pc.if_else(has_number, reprs, text_raw)


_CANONICAL: dict[int, tuple[FieldTable, dict[str, str]]] = {}


def _canonical_key(table: FieldTable, raw_key: str) -> str:
    # `FieldTable.canonical_key` per distinct raw key, cached per table object (bounded like the Python rules'
    # cache; the table object itself, not a reload of its file, which costs ~0.5 s).
    entry = _CANONICAL.get(id(table))
    if entry is None or entry[0] is not table:
        if len(_CANONICAL) >= 8:  # a process ingesting with many tables (tests) keeps only the latest few
            _CANONICAL.clear()
        entry = _CANONICAL[id(table)] = (table, {})
    cache = entry[1]
    key = cache.get(raw_key)
    if key is None:
        if len(cache) > 1 << 16:
            cache.clear()
        key = cache[raw_key] = table.canonical_key(raw_key)
    return key


def _canonical(raw_keys: pa.Array, table: FieldTable) -> tuple[pa.Array, np.ndarray]:
    """Each raw detail key's canonical key, and whether it is not blank (Python's strip), both per distinct key."""
    encoded = raw_keys.dictionary_encode()
    distinct = encoded.dictionary.to_pylist()
    indices = encoded.indices.to_numpy()
    canonical = pa.array([_canonical_key(table, k) for k in distinct], pa.string()).take(encoded.indices)
    return canonical, np.array([bool(k.strip()) for k in distinct], dtype=bool)[indices]


def _details(details: pa.Array, types: pa.Array, table: FieldTable) -> pa.Array:
    """`normalize_details` over the details column (a MAP of raw key -> value as JSON text) and its type codes.

    An entry with a string value without a backslash and a non-blank key and value takes the rule's fast path as
    columns (quotes and whitespace trimmed in one pass, key canonical per distinct raw key). Any other entry is read
    by orjson: an escaped string takes the same fast path, an object is its compact orjson text (as
    `detail_value_text` gives it), anything else (a number, list, null, a blank key or value) the rule's general
    path.
    """
    n = len(details)
    lengths = _map_lengths(details)
    offsets = details.offsets.to_numpy()
    start, stop = int(offsets[0]), int(offsets[-1])
    raw_keys = details.keys.slice(start, stop - start).cast(pa.string())
    texts = details.items.slice(start, stop - start).cast(pa.string())
    kinds = np.asarray(types.flatten().to_numpy(zero_copy_only=False), dtype=np.int8)
    # A JSON string without a backslash holds no quote: trimming quotes and whitespace gives its value stripped.
    trimmed = pc.utf8_trim(texts, '"' + _WS)
    keys, key_ok = _canonical(raw_keys, table)
    fast = (kinds == STRING) & key_ok & _bools(pc.not_equal(trimmed, "")) & ~_holding(texts, ord("\\"))
    slow = np.flatnonzero(~fast)
    keep = np.ones(len(raw_keys), dtype=bool)
    if len(slow):
        objects = (kinds[slow] == OBJECT) & key_ok[slow]
        new_values = np.empty(len(slow), dtype=object)
        new_values[objects] = _compact_objects(texts.take(pa.array(slow[objects])))
        rest = np.flatnonzero(~objects)
        text_list = texts.take(pa.array(slow[rest])).to_pylist()
        key_list = raw_keys.take(pa.array(slow[rest])).to_pylist()
        rest_ok = key_ok[slow[rest]].tolist()
        general: list[int] = []  # positions in `slow` whose key the general path rewrote
        new_keys: list[str] = []
        new_raw: list[str] = []
        for j, raw_key, text, ok in zip(rest.tolist(), key_list, text_list, rest_ok, strict=True):
            value = None if text is None else orjson.loads(text)
            if ok and value.__class__ is str and value.strip():
                new_values[j] = value.strip()
                continue
            key, value_text = table.split_fused(raw_key, detail_value_text(value))
            value_text = value_text.strip()
            if not key.strip() and not value_text:
                keep[slow[j]] = False
            general.append(j)
            new_keys.append(_canonical_key(table, key))
            new_raw.append(key)
            new_values[j] = value_text
        trimmed = pc.replace_with_mask(trimmed, pa.array(~fast), pa.array(new_values, pa.string()))
        if general:
            changed = np.zeros(len(raw_keys), dtype=bool)
            changed[slow[general]] = True
            keys = pc.replace_with_mask(keys, pa.array(changed), pa.array(new_keys, pa.string()))
            raw_keys = pc.replace_with_mask(raw_keys, pa.array(changed), pa.array(new_raw, pa.string()))
    struct = pa.StructArray.from_arrays([keys, raw_keys, trimmed], names=["key", "raw_key", "value"])
    if not keep.all():
        rows = np.repeat(np.arange(n), lengths)
        lengths = np.bincount(rows[keep], minlength=n).astype(np.int64)
        struct = struct.filter(pa.array(keep))
    return pa.ListArray.from_arrays(_offsets(lengths), struct)


def _compact_objects(texts: pa.Array) -> list[str]:
    """Each JSON object text as orjson writes the object it reads (`detail_value_text` of a dict).

    One orjson call reads them all and one writes them back; the written array is cut between its objects at
    "},{", checked to give one text per object (a string holding "},{" makes more: then one call per object).
    """
    if not len(texts):
        return []
    values = texts.to_pylist()
    written = orjson.dumps(orjson.loads("[" + ",".join(values) + "]"))
    parts = written[2:-2].split(b"},{")
    if len(parts) != len(values):
        return [orjson.dumps(orjson.loads(v)).decode() for v in values]
    return ["{" + part.decode() + "}" for part in parts]


def _meta_batch(result: pa.Table, name: str, lines: np.ndarray, table: FieldTable) -> pa.RecordBatch:
    price, price_raw = _prices(result.column("price_number").combine_chunks(),
                               result.column("price_text").combine_chunks())
    schema = _PRODUCT_PART_SCHEMA
    col = lambda c: result.column(c).combine_chunks()  # noqa: E731
    columns = [
        _parent_asin(result).combine_chunks().cast(pa.string()),
        _or_empty(col("title")).cast(pa.string()),
        _label(col("main_category")).cast(pa.string()),
        _label(col("store")).cast(pa.string()),
        col("average_rating").cast(pa.float64()),
        col("rating_number").cast(pa.int64()),
        price, price_raw,
        *(_strings(col(c), schema.field(c).type) for c in ("features", "description", "categories")),
        _details(col("details"), col("details_t"), table).cast(schema.field("details").type),
        pa.array([name] * result.num_rows, pa.string()),
        pa.array(lines, pa.int64()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _review_batch(result: pa.Table, name: str, lines: np.ndarray) -> tuple[pa.RecordBatch, list[bytes]]:
    col = lambda c: result.column(c).combine_chunks()  # noqa: E731
    parent, asin, user = _parent_asin(result).combine_chunks(), _label(col("asin")), _label(col("user_id"))
    title, text = _or_empty(col("title")), _or_empty(col("text"))
    rating, stamps = col("rating").cast(pa.float64()), col("timestamp").cast(pa.int64())
    keys = [content_key(*v) for v in zip(parent.to_pylist(), user.to_pylist(), stamps.to_pylist(),
                                         rating.to_pylist(), title.to_pylist(), text.to_pylist(), strict=True)]
    columns = [
        pa.array([review_id(key, 0) for key in keys], pa.string()),
        parent.cast(pa.string()), asin.cast(pa.string()), rating, title.cast(pa.string()), text.cast(pa.string()),
        pc.fill_null(col("helpful_vote"), 0).cast(pa.int64()),
        pc.fill_null(col("verified_purchase"), False).cast(pa.bool_()), stamps, user.cast(pa.string()),
        pa.array([name] * result.num_rows, pa.string()), pa.array(lines, pa.int64()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=REVIEW_SCHEMA), keys


def _python_rows(kind: str, name: str, block: Block, table: FieldTable | None, python: list[int],
                 every: pa.LargeBinaryArray) -> Converted:
    """The Python rules (`convert_block`) on the given lines of the block (`every`: its lines), each as one block."""
    count = block.count if isinstance(block, RawBlock) else len(block.lines)
    out = Converted([], [], [], [], [], block.first_line + count - 1)
    last = count - 1
    for i in python:
        line = every[i].as_py()
        one = Block(block.first_line + i, [line[:-1] if line.endswith(b"\n") else line],
                    last_has_newline=block.last_has_newline or i < last)
        conv = convert_block(kind, name, one, table)
        out.rows += conv.rows
        out.ids += conv.ids
        out.lines += conv.lines
        out.keys += conv.keys
        out.bad += conv.bad
    return out


def convert_block_native(kind: str, name: str, block: Block, table: FieldTable | None) -> Converted:
    """Parse and normalise every line of a block through DuckDB: `catalog.records.convert_block`'s result, faster.

    Args:
        kind: "meta" or "reviews".
        name: file name for provenance and bad records.
        block: the lines.
        table: field table for detail keys (metadata; None is fine for reviews, and loads the bundled one for
            metadata).

    Returns:
        A `Converted` with `batch` set (`rows` empty), equal to what `convert_block` and
        `ecombench.catalog.ingest.rows_to_batch` give for the same block: rows in line order, bad records
        (all from the lines the Python rules read) in line order.

    Raises:
        duckdb.Error: DuckDB failed on the block for a reason of its own (the caller may retry it with
            the Python rules).
    """
    result, picked, python, every = _run_sql(kind, block)
    slow = _python_rows(kind, name, block, table, python, every)
    schema = _PRODUCT_PART_SCHEMA if kind == "meta" else REVIEW_SCHEMA
    slow_batch = pa.RecordBatch.from_pylist(slow.rows, schema=schema)
    if result is None or result.num_rows == 0:
        return Converted([], slow.ids, slow.lines, slow.keys, slow.bad, slow.last_line, slow_batch)
    keys: list[bytes] = []
    lines = picked[result.column("k").to_numpy()] + block.first_line
    if kind == "meta":
        fast = _meta_batch(result, name, lines, table or load_field_table(check_vocabulary=False))
    else:
        fast, keys = _review_batch(result, name, lines)
    fast_lines = lines.tolist()
    if not slow.lines:
        return Converted([], fast.column("parent_asin"), fast_lines, keys, slow.bad, slow.last_line, fast)
    fast_ids = fast.column("parent_asin").to_pylist()
    merged = pa.Table.from_batches([fast, slow_batch])
    order = np.argsort(np.asarray(fast_lines + slow.lines, dtype=np.int64), kind="stable")
    batch = merged.take(pa.array(order)).combine_chunks().to_batches()[0]
    ids = fast_ids + slow.ids
    all_lines = fast_lines + slow.lines
    all_keys = keys + slow.keys
    return Converted([], [ids[i] for i in order], [all_lines[i] for i in order],
                     [all_keys[i] for i in order] if kind == "reviews" else [], slow.bad, slow.last_line, batch)
