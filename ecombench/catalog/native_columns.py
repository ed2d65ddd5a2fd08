"""DuckDB's per-line query of the native reader and its rows as typed columns with each field's JSON type.

`STRICT_SQL` parses a line once (`json_transform_strict`: every declared field as its JSON text, the string lists
as lists, the details' keys and values from the details' own text) and refuses a line with a missing or repeated
declared key; `LAX_SQL` reads the refused lines with the JSON type of every field and the key list.
`_strict_columns` and `_lax_columns` turn either result into the same table: k, t_<field> (type codes: `ABSENT`,
`NULL`, `STRING`, `UINT`, `INT`, `FLOAT`, `BOOL`, `ARRAY`, `OBJECT`, `OTHER`), the declared fields as values
(strings unescaped as orjson reads them, numbers as the doubles orjson reads), repeated, and for products price_number,
price_text, details (raw key -> value as JSON text) and details_t. `ecombench.catalog.native` checks those columns
against the record rules and builds the snapshot's batch from them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

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


def _cast_where(texts: pa.Array, ok: np.ndarray, to: pa.DataType, whole: bool) -> pa.Array:
    """`texts` cast to `to` where `ok` (bool per row), null elsewhere; `whole`: every text casts as it is."""
    if whole:
        return pc.cast(texts, to)
    out = pa.nulls(len(texts), to)
    if ok.any():
        mask = pa.array(ok)
        out = pc.replace_with_mask(out, mask, pc.cast(texts.filter(mask), to))
    return out


def _integers(texts: pa.Array, codes: np.ndarray) -> pa.Array:
    """Integer JSON texts as int64 where they fit in 18 characters (null for any other, which the checks refuse)."""
    offsets, _ = _offsets_data(texts)
    fits = np.isin(codes, (UINT, INT)) & (np.diff(offsets) <= 18)
    return _cast_where(texts, fits, pa.int64(), bool(fits.all()))


def _doubles(texts: pa.Array, codes: np.ndarray) -> pa.Array:
    """Number JSON texts (DuckDB's shortest round-trip form) as the doubles orjson reads; null for other types."""
    number = np.isin(codes, _NUMBER)
    return _cast_where(texts, number, pa.float64(), bool((number | (codes == NULL)).all()))


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


def _bools(mask: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow boolean array as numpy, null as False."""
    if mask.null_count:
        mask = pc.fill_null(mask, False)
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


def _map_lengths(maps: pa.MapArray) -> np.ndarray:
    """Entries per row of a map column (0 for a null row)."""
    offsets = maps.offsets.to_numpy()
    return np.where(_bools(pc.is_valid(maps)), np.diff(offsets), 0).astype(np.int64)


def _bools_int(lengths: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(lengths, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
