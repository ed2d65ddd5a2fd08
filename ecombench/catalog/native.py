"""The native reader: a block of JSONL lines parsed by DuckDB's JSON reader and normalised as whole columns.

`convert_block_native` is a drop-in for `ecombench.catalog.records.convert_block` (same `Converted`, same rows,
same bad records). Per line DuckDB parses once: `json_transform_strict` gives every declared field as its JSON
text (its type is the first byte; a string is unescaped only where it holds a backslash) and the string lists
as lists, and refuses a line that lacks a declared key or repeats one; the details object's keys and values are
read from its own text. The lines it refuses take a second query with the JSON type of every field and the
key list (`LAX_SQL`). A few RE2 passes over the raw lines (`pyarrow.compute.match_substring_regex`, `_SCREEN`)
find what DuckDB's parser accepts and orjson refuses (NaN / Infinity literals, trailing commas, exponents that
overflow a double, escaped ASCII that could spell a key); string list elements that DuckDB read from a number,
a boolean, an array or an object are found in its lists (`_string_elements`). The record rules of
`ecombench.catalog.records` then run as pyarrow compute kernels and numpy over whole columns: types, value
ranges, Python's whitespace strip (`utf8_trim` with every `str.isspace` character), labels, null-free string
lists, detail keys (canonical per distinct raw key), the fast path of `normalize_details`, prices per distinct
value.

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


_META_FIELDS = {"parent_asin": "VARCHAR", "title": "VARCHAR", "main_category": "VARCHAR", "store": "VARCHAR",
                "average_rating": "DOUBLE", "rating_number": "BIGINT", "price": "JSON", "features": "VARCHAR[]",
                "description": "VARCHAR[]", "categories": "VARCHAR[]", "details": "MAP(VARCHAR, VARCHAR)"}
_REVIEW_FIELDS = {"parent_asin": "VARCHAR", "asin": "VARCHAR", "rating": "DOUBLE", "title": "VARCHAR",
                  "text": "VARCHAR", "helpful_vote": "BIGINT", "verified_purchase": "BOOLEAN", "timestamp": "BIGINT",
                  "user_id": "VARCHAR"}
_STRING_LISTS = ("features", "description", "categories")

# The JSON type of a declared field or of a detail value, as a small code (DuckDB's json_type name beside each).
ABSENT, NULL, STRING, UINT, INT, FLOAT, BOOL, ARRAY, OBJECT, OTHER = range(10)
_TYPE_CODES = {"NULL": NULL, "VARCHAR": STRING, "UBIGINT": UINT, "BIGINT": INT, "DOUBLE": FLOAT, "BOOLEAN": BOOL,
               "ARRAY": ARRAY, "OBJECT": OBJECT}
_NUMBER = (UINT, INT, FLOAT)
# A JSON value's type from its first byte, as DuckDB writes values (numbers are refined by `_number_codes`).
_FIRST_BYTE = np.full(256, OTHER, dtype=np.int8)
for _byte, _code in ((b'"', STRING), (b"{", OBJECT), (b"[", ARRAY), (b"t", BOOL), (b"f", BOOL), (b"n", NULL),
                     (b"N", FLOAT), (b"I", FLOAT), (b"-", UINT), *((bytes([c]), UINT) for c in b"0123456789")):
    _FIRST_BYTE[_byte[0]] = _code


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _strict_sql(fields: dict[str, str]) -> str:
    # The per-line work of nearly every line: one parse. json_transform_strict refuses (and try() makes NULL) a line
    # that is not a JSON object, lacks a declared key or repeats one (orjson keeps the last copy, DuckDB the first),
    # or holds a list in another JSON type. Every other declared field comes as its JSON text, whose first byte
    # gives its type; strings are unescaped afterwards only where they hold a backslash. The details object's keys
    # and values (JSON texts) are read from its own text, a few hundred bytes (a MAP column costs more than the
    # whole line's parse).
    declared = {name: "VARCHAR[]" if name in _STRING_LISTS else "JSON" for name in fields}
    transform = f"try(json_transform_strict(line, {_sql_text(orjson.dumps(declared).decode())}))"
    if "details" not in fields:
        return f"SELECT k, {transform} AS j FROM lines"
    return f"""SELECT k, j, json_keys(j.details) AS detail_keys, j.details -> '$.*' AS detail_values
               FROM (SELECT k, {transform} AS j FROM lines)"""


def _lax_sql(fields: dict[str, str], details: bool) -> str:
    # The lines json_transform_strict refuses: one typed transform, the JSON type of each declared field (NULL:
    # absent, 'NULL': a JSON null), the top-level keys (for repeated ones) and, for products, the JSON type of every
    # detail value. try(): a line that is not JSON to DuckDB gives NULLs (and then the Python rules).
    declared = _sql_text(orjson.dumps(fields).decode())
    paths = "[" + ", ".join(f"'$.{n}'" for n in fields) + "]"
    detail_types = ", try(json_type(line, '$.details.*')) AS details_t" if details else ""
    return f"""SELECT k, try(json_transform(line, {declared})) AS j, try(json_type(line, {paths})) AS t,
                      try(json_keys(line)) AS keys{detail_types} FROM lines"""


STRICT_SQL = {"meta": _strict_sql(_META_FIELDS), "reviews": _strict_sql(_REVIEW_FIELDS)}
LAX_SQL = {"meta": _lax_sql(_META_FIELDS, details=True), "reviews": _lax_sql(_REVIEW_FIELDS, details=False)}
# The Hugging Face form holds details as the JSON text of the object: its lines (few of a raw file, all of an
# HF one) get the map and the value types from that text.
HF_DETAILS_SQL = """
SELECT try(json_transform(d, '"MAP(VARCHAR, VARCHAR)"')) AS details, try(json_type(d, '$.*')) AS details_t
FROM (SELECT k, try(json_extract_string(line, '$.details')) AS d FROM lines) ORDER BY k"""


# --------------------------------------------------------------------------------------------
# JSON texts to values


def _offsets_data(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string array's value offsets (n + 1, its own slice) and its data bytes, as numpy views."""
    width = np.int64 if pa.types.is_large_string(texts.type) or pa.types.is_large_binary(texts.type) else np.int32
    offsets = np.frombuffer(texts.buffers()[1], dtype=width)[texts.offset:texts.offset + len(texts) + 1]
    data = texts.buffers()[2]
    return offsets, (np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8))


def _valid(array: pa.Array) -> np.ndarray:
    """Which entries are not null."""
    return np.ones(len(array), dtype=bool) if array.null_count == 0 else _bools(pc.is_valid(array))


def _type_codes(texts: pa.Array) -> np.ndarray:
    """The JSON type code of each JSON text from its first byte (a null is a JSON null; numbers are all UINT)."""
    offsets, data = _offsets_data(texts)
    codes = np.full(len(texts), NULL, dtype=np.int8)
    has = (offsets[1:] > offsets[:-1]) & _valid(texts)
    codes[has] = _FIRST_BYTE[data[offsets[:-1][has]]]
    return codes


_FRACTION_BYTE = np.zeros(256, dtype=bool)
_FRACTION_BYTE[np.frombuffer(b".eEnN", dtype=np.uint8)] = True


def _entries_with(offsets: np.ndarray, positions: np.ndarray, n: int) -> np.ndarray:
    """Which of n entries hold one of the data `positions` (entry i spans offsets[i]:offsets[i + 1])."""
    out = np.zeros(n, dtype=bool)
    out[np.searchsorted(offsets, positions, side="right") - 1] = True
    return out


def _number_codes(texts: pa.Array, codes: np.ndarray) -> np.ndarray:
    """`codes` with the numbers told apart as json_type does: UINT (no sign), INT (negative), FLOAT (., e, NaN)."""
    number = codes == UINT
    if number.any():
        offsets, data = _offsets_data(texts)
        span = data[offsets[0]:offsets[-1]]
        fraction = _entries_with(offsets - offsets[0], np.flatnonzero(_FRACTION_BYTE[span]), len(texts))
        negative = np.zeros(len(texts), dtype=bool)
        negative[number] = data[offsets[:-1][number]] == ord("-")
        codes = codes.copy()
        codes[number & fraction] = FLOAT
        codes[number & ~fraction & negative] = INT
    return codes


def _holding(texts: pa.Array, byte: int) -> np.ndarray:
    """Which entries of a string array hold the given byte."""
    offsets, data = _offsets_data(texts)
    found = np.flatnonzero(data[offsets[0]:offsets[-1]] == byte) + offsets[0]
    return _entries_with(offsets, found, len(texts)) if len(found) else np.zeros(len(texts), dtype=bool)


def _unquoted(texts: pa.Array, strings: np.ndarray) -> pa.Array:
    """The value of each JSON string text where `strings` (quotes off, escapes read as orjson reads them); else null.

    The quotes are sliced off in Arrow; only a string holding a backslash is read by orjson.
    """
    n = len(texts)
    if not strings.any():
        return pa.nulls(n, pa.string())
    if strings.all():
        inner = pc.utf8_slice_codeunits(texts, 1, -1)
    else:
        mask = pa.array(strings)
        inner = pc.replace_with_mask(pa.nulls(n, pa.string()), mask,
                                     pc.utf8_slice_codeunits(texts.filter(mask), 1, -1))
    escaped = np.flatnonzero(strings & _holding(texts, ord("\\")))
    if len(escaped):
        where = np.zeros(n, dtype=bool)
        where[escaped] = True
        values = [orjson.loads(text) for text in texts.take(pa.array(escaped)).to_pylist()]
        inner = pc.replace_with_mask(inner, pa.array(where), pa.array(values, pa.string()))
    return inner.cast(pa.string())


def _integers(texts: pa.Array, codes: np.ndarray) -> pa.Array:
    """Integer JSON texts as int64 where they fit in 18 characters (null for any other, which the checks refuse)."""
    offsets, _ = _offsets_data(texts)
    fits = np.isin(codes, (UINT, INT)) & (np.diff(offsets) <= 18)
    if fits.all():
        return pc.cast(texts, pa.int64())
    out = pa.nulls(len(texts), pa.int64())
    if fits.any():
        mask = pa.array(fits)
        out = pc.replace_with_mask(out, mask, pc.cast(texts.filter(mask), pa.int64()))
    return out


def _doubles(texts: pa.Array, codes: np.ndarray) -> pa.Array:
    """Number JSON texts (DuckDB's shortest round-trip form) as the doubles orjson reads; null for other types."""
    number = np.isin(codes, _NUMBER)
    if (number | (codes == NULL)).all():
        return pc.cast(texts, pa.float64())
    out = pa.nulls(len(texts), pa.float64())
    if number.any():
        mask = pa.array(number)
        out = pc.replace_with_mask(out, mask, pc.cast(texts.filter(mask), pa.float64()))
    return out


def _strict_columns(kind: str, raw: pa.Table) -> pa.Table:
    """`_lax_columns`' table from json_transform_strict's rows (every declared key present once, no repeat)."""
    j = raw.column("j")
    j = j.chunk(0) if j.num_chunks == 1 else j.combine_chunks()
    fields = _META_FIELDS if kind == "meta" else _REVIEW_FIELDS
    cols: dict[str, Any] = {"k": raw.column("k").combine_chunks()}
    values: dict[str, Any] = {}
    for name, declared in fields.items():
        texts = j.field(name)
        if name in _STRING_LISTS:
            codes = np.where(_valid(texts), ARRAY, NULL).astype(np.int8)
            values[name] = texts
        else:
            codes = _type_codes(texts)
            if declared in ("DOUBLE", "BIGINT", "JSON"):
                codes = _number_codes(texts, codes)
            values[name] = (_unquoted(texts, codes == STRING) if declared == "VARCHAR"
                            else _doubles(texts, codes) if declared == "DOUBLE"
                            else _integers(texts, codes) if declared == "BIGINT"
                            else pc.equal(texts, "true") if declared == "BOOLEAN" else texts)
        cols[f"t_{name}"] = codes
    cols.update(values)
    cols["repeated"] = np.zeros(len(j), dtype=np.int64)
    if kind == "meta":
        cols.update(_price_columns(cols["t_price"], cols["price"]))
        keys, texts = (_one_chunk(raw.column(c)) for c in ("detail_keys", "detail_values"))
        offsets = _list_offsets(keys)
        items = texts.flatten()
        absent = pa.array(cols["t_details"] == NULL)
        cols["details"] = pa.MapArray.from_arrays(offsets, keys.flatten(), items, mask=absent)
        cols["details_t"] = pa.ListArray.from_arrays(offsets, pa.array(_type_codes(items), pa.int8()), mask=absent)
    return pa.table(cols)


def _one_chunk(column: pa.ChunkedArray) -> pa.Array:
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _strict_rows(kind: str, raw: pa.Table) -> np.ndarray:
    """Which rows of the strict query `_strict_columns` reads.

    A JSON object with every declared key once; for products, details an object or null with no repeated key
    (orjson keeps a repeated key's last value, in the place of its first).
    """
    ok = _valid(raw.column("j"))
    if kind == "meta" and ok.any():
        j = _one_chunk(raw.column("j"))
        ok &= np.isin(_type_codes(j.field("details")), (OBJECT, NULL))
        keys, texts = (_one_chunk(raw.column(c)) for c in ("detail_keys", "detail_values"))
        lengths = [pc.fill_null(pc.list_value_length(c), 0) for c in (keys, texts)]
        ok &= _bools(pc.equal(*lengths))
        ok[_rows_with_repeated_keys(keys)] = False
    return ok


def _rows_with_repeated_keys(keys: pa.ListArray) -> np.ndarray:
    """Rows of a list-of-keys column that hold one key twice."""
    flat = keys.flatten()
    if not len(flat):
        return np.zeros(0, dtype=np.int64)
    codes = pc.dictionary_encode(flat).indices.to_numpy()
    rows = pc.list_parent_indices(keys).to_numpy()
    # Entries grouped by key, rows ascending within each (a stable sort: radix on small integer codes): a key held
    # twice by one row gives two neighbours with the same key and row.
    order = np.argsort(codes.astype(np.uint16) if len(codes) and codes.max() < 2**16 else codes, kind="stable")
    codes, rows = codes[order], rows[order]
    twice = (codes[1:] == codes[:-1]) & (rows[1:] == rows[:-1])
    return np.unique(rows[1:][twice])


def _lax_columns(kind: str, raw: pa.Table, arr: pa.LargeStringArray, con: Any) -> pa.Table:
    """The lax query's rows as flat columns: k, t_<field> (type codes), the declared fields, repeated, details."""
    fields = _META_FIELDS if kind == "meta" else _REVIEW_FIELDS
    valid = pc.and_kleene(pc.and_kleene(pc.is_valid(raw.column("j")), pc.is_valid(raw.column("t"))),
                          pc.is_valid(raw.column("keys")))
    raw = (raw if valid.null_count == 0 and pc.all(valid).as_py() else raw.filter(valid)).combine_chunks()
    j, t, keys = (raw.column(c).chunk(0) if raw.column(c).num_chunks else raw.column(c).combine_chunks()
                  for c in ("j", "t", "keys"))
    cols: dict[str, Any] = {"k": raw.column("k")}
    for i, name in enumerate(fields):
        cols[f"t_{name}"] = _json_type_codes(pc.list_element(t, i))
    for name in fields:
        cols[name] = j.field(name)
    # A repeated top-level key: orjson keeps its last copy, DuckDB its first. Declared keys counted in the key
    # list against the declared fields present.
    present = sum((cols[f"t_{name}"] != ABSENT).astype(np.int64) for name in fields)
    flat = keys.flatten()
    declared = _bools(pc.is_in(flat, pa.array(list(fields), pa.string())))
    parents = pc.list_parent_indices(keys).to_numpy()
    cols["repeated"] = np.bincount(parents[declared], minlength=len(raw)) - present
    if kind == "meta":
        cols.update(_price_columns(cols["t_price"], cols["price"]))
        details, detail_types = cols["details"], raw.column("details_t").combine_chunks()
        hf = np.flatnonzero(cols["t_details"] == STRING)
        if len(hf):
            lines = pa.table({"k": pa.array(np.arange(len(hf)), pa.int64()),
                              "line": arr.take(pa.array(raw.column("k").to_numpy()[hf]))})
            con.register("lines", lines)
            try:
                extra = con.sql(HF_DETAILS_SQL).to_arrow_table().combine_chunks()
            finally:
                con.unregister("lines")
            where = np.arange(len(raw))
            where[hf] = len(raw) + np.arange(len(hf))
            details = pa.concat_arrays([details, extra.column("details").combine_chunks().cast(details.type)]
                                       ).take(pa.array(where))
            detail_types = pa.concat_arrays([detail_types, extra.column("details_t").combine_chunks().cast(
                detail_types.type)]).take(pa.array(where))
        cols["details"] = _json_text_details(details, detail_types)
        cols["details_t"] = pa.ListArray.from_arrays(
            _list_offsets(detail_types), pa.array(_json_type_codes(detail_types.flatten()), pa.int8()),
            mask=pc.is_null(detail_types))
    return pa.table(cols)


def _json_text_details(details: pa.MapArray, detail_types: pa.ListArray) -> pa.MapArray:
    """The lax query's details map with its values as JSON texts, as the strict query gives them.

    DuckDB's VARCHAR of a detail string is its value: it is written back as JSON by orjson. A row whose map and
    type list differ in length (a repeated key) keeps its values; `_meta_ok` refuses it.
    """
    offsets = details.offsets.to_numpy()
    start, count = int(offsets[0]), int(offsets[-1] - offsets[0])
    values = details.items.slice(start, count).to_pylist()
    same = _map_lengths(details) == _bools_int(pc.list_value_length(detail_types))
    codes = np.full(count, OTHER, dtype=np.int8)
    rows = np.repeat(np.arange(len(details)), np.diff(offsets))  # list_parent_indices aborts on a map
    codes[same[rows]] = _json_type_codes(detail_types.flatten())[same[pc.list_parent_indices(detail_types).to_numpy()]]
    texts = [orjson.dumps(v).decode() if c == STRING else v for v, c in zip(values, codes.tolist(), strict=True)]
    return pa.MapArray.from_arrays(_list_offsets(details), details.keys.slice(start, count),
                                   pa.array(texts, pa.string()), mask=pc.is_null(details))


def _list_offsets(lists: pa.ListArray) -> pa.Array:
    """A list array's offsets rebased to start at 0 (for `ListArray.from_arrays` over its flattened values)."""
    offsets = lists.offsets.to_numpy()
    return pa.array(offsets - offsets[0], pa.int32())


def _json_type_codes(names: pa.Array) -> np.ndarray:
    """DuckDB's json_type names as type codes (a null name: the key is absent)."""
    index = pc.index_in(names, value_set=pa.array(list(_TYPE_CODES), pa.string()))
    table = np.array([*_TYPE_CODES.values(), OTHER, ABSENT], dtype=np.int8)
    # index_in: null for a name not in the set (OTHER) and for a null name (ABSENT), told apart by is_null(names).
    found = pc.fill_null(index, len(_TYPE_CODES)).to_numpy(zero_copy_only=False)
    found = np.where(_bools(pc.is_null(names)), len(_TYPE_CODES) + 1, found)
    return table[found]


def _price_columns(codes: np.ndarray, price: pa.Array) -> dict[str, pa.Array]:
    """price_number (a number's JSON text read as the double orjson reads) and price_text (a string's value)."""
    return {"price_number": _doubles(price, codes), "price_text": _unquoted(price, codes == STRING)}


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
        # bytes.find (memchr) finds the ~5,000 line breaks of a block faster than any whole-array kernel.
        data, end, breaks = block.data, block.end, []
        at = data.find(b"\n", 0, end)
        while at >= 0:
            breaks.append(at + 1)
            at = data.find(b"\n", at + 1, end)
        offsets = np.array([0, *breaks, end], dtype=np.int64)
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


def _bools(mask: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow boolean array as numpy, null as False."""
    if mask.null_count:
        mask = pc.fill_null(mask, False)
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


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


def _map_lengths(maps: pa.MapArray) -> np.ndarray:
    """Entries per row of a map column (0 for a null row)."""
    offsets = maps.offsets.to_numpy()
    return np.where(_bools(pc.is_valid(maps)), np.diff(offsets), 0).astype(np.int64)


def _bools_int(lengths: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(lengths, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


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
        fast = _meta_batch(result, name, lines, table or load_field_table())
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
