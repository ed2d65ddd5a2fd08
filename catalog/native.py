"""The native reader: a block of JSONL lines parsed and normalised by DuckDB's JSON reader, not per record in Python.

`convert_block_native` is a drop-in for `catalog.records.convert_block` (same `Converted`, same rows,
same bad records): DuckDB's JSON functions (`json_transform` with declared columns, `details` as
`MAP(VARCHAR, JSON)`, the Hugging Face form's JSON-string `details` parsed in SQL) read every line, and
the record rules of `catalog.records` that are plain SQL (types, labels, value ranges, whitespace
strip, list cleaning) are SQL expressions. A line takes the Python rules instead, whole, when a
cheap predicate says the SQL might not give exactly their result: it is not valid JSON to DuckDB,
holds something DuckDB accepts but orjson refuses (NaN, Infinity, trailing commas, huge exponents, a
byte order mark), repeats a top-level key, or has a field of another type or out of its range (every
bad record comes from there, so its file, line, reason and excerpt are the Python reader's). What is
left for Python on the rows SQL keeps is vectorised over distinct values: canonical detail keys
(`stages.fields`), price texts (`parse_price`), and the review content keys (sha256).

The line numbers come from the block, so blank lines, truncated gzip streams and the cross-record
rules (`CrossRecordRules`) are untouched. `tests/catalog/test_native.py` holds the snapshot equal to
the Python reader's on every shared real file and the damaged inputs.
"""

from __future__ import annotations

import multiprocessing
import os
from functools import lru_cache
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from catalog.records import (
    Block,
    Converted,
    _canonical_key,
    content_key,
    convert_block,
    detail_value_text,
    parse_price,
    review_id,
)
from catalog.schema import PRODUCT_SCHEMA, REVIEW_SCHEMA
from stages.fields import FieldTable

_PRODUCT_PART_SCHEMA = PRODUCT_SCHEMA.remove(PRODUCT_SCHEMA.get_field_index("review_count"))

# Every character Python's str.strip() removes (str.isspace), so SQL's trim strips exactly as the rules do.
_WS = "".join(chr(c) for c in range(0x110000) if chr(c).isspace())
# Text DuckDB's JSON parser accepts and orjson refuses (NaN/Infinity literals, trailing commas, an
# exponent that overflows a double, a byte order mark): such a line goes to the Python rules, which
# then log it as invalid_json. Matches inside strings only send a good line the slow way.
_LENIENT = r"[:\[,]\s*-?(?:NaN|Infinity)|,\s*[\]}]|[:\[,]\s*-?\d+(?:\.\d+)?[eE][+-]?\d{3}|^\x{feff}"
_INT64_MAX = 2**63 - 1

def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


WS = _sql_text(_WS)
# Each record rule below is a condition on the field's JSON type (one `json_type(line, [paths])` per line:
# t[i] is NULL for a missing key, 'NULL' for a JSON null) and on its value as `json_transform` cast it to
# the declared type (lenient: the value is only read where the type condition holds).
_NUMBER = "('DOUBLE', 'UBIGINT', 'BIGINT')"
_WS_CODES = "(" + ", ".join(str(ord(c)) for c in _WS) + ")"


class _Fields:
    """SQL snippets over one record kind's declared fields: `t(name)` its JSON type, `v(name)` its value."""

    def __init__(self, declared: dict[str, str]):
        self.declared = declared
        self.names = list(declared)

    def t(self, name: str) -> str:
        return f"t[{self.names.index(name) + 1}]"

    def v(self, name: str) -> str:
        return f"j.{name}"

    def absent(self, name: str) -> str:
        return f"coalesce({self.t(name)} = 'NULL', true)"

    def text_ok(self, name: str) -> str:
        return f"({self.absent(name)} OR {self.t(name)} = 'VARCHAR')"

    def label(self, name: str) -> str:
        # catalog.records._optional_label: stripped, "" is None.
        return f"nullif(trim({self.v(name)}, {WS}), '')"

    def float_ok(self, name: str, low: float, high: float) -> str:
        return (f"({self.absent(name)} OR ({self.t(name)} IN {_NUMBER} AND isfinite({self.v(name)}) "
                f"AND {self.v(name)} BETWEEN {low} AND {high}))")

    def count_ok(self, name: str) -> str:
        # A non-negative JSON integer that fits int64 (declared BIGINT, so a larger one reads as NULL).
        return f"({self.absent(name)} OR ({self.t(name)} = 'UBIGINT' AND {self.v(name)} IS NOT NULL))"

    def int_ok(self, name: str) -> str:
        return f"({self.absent(name)} OR ({self.t(name)} IN ('UBIGINT', 'BIGINT') AND {self.v(name)} IS NOT NULL))"

    def strings_ok(self, name: str) -> str:
        # catalog.records._str_list without a wrong_type: absent, or an array of strings and nulls.
        return (f"({self.absent(name)} OR ({self.t(name)} = 'ARRAY' AND "
                f"len(list_filter(json_type({self.v(name)}, '$[*]'), lambda e: e NOT IN ('VARCHAR', 'NULL'))) = 0))")

    def strings(self, name: str) -> str:
        return f"coalesce(list_filter(TRY_CAST({self.v(name)} AS VARCHAR[]), lambda e: e IS NOT NULL), [])"

    def parent_asin_ok(self) -> str:
        return (f"({self.t('parent_asin')} = 'VARCHAR' AND j.parent_asin <> '' "
                f"AND trim(j.parent_asin, {WS}) = j.parent_asin)")

    def parsed(self) -> str:
        # One parse into the declared columns, one for the JSON types, one for repeated keys; the guards
        # first (CASE evaluates its branch only where its condition holds, so a line DuckDB cannot read as
        # an object never reaches json_transform).
        paths = "[" + ", ".join(f"'$.{n}'" for n in self.names) + "]"
        declared = _sql_text(orjson.dumps(self.declared).decode())
        return f"""
        SELECT k,
          CASE WHEN json_valid(line) AND NOT regexp_matches(line, {_sql_text(_LENIENT)})
                    AND json_type(line) = 'OBJECT' THEN json_transform(line, {declared}) END AS j,
          CASE WHEN j IS NOT NULL THEN json_type(line, {paths}) END AS t,
          -- A MAP holds each key once: NULL when the object repeats a key (orjson keeps the last, DuckDB the first).
          CASE WHEN j IS NOT NULL THEN json_transform(line, '"MAP(VARCHAR, BOOLEAN)"') IS NOT NULL END AS uniq
        FROM lines"""


def _edges_bare(s: str) -> str:
    # Neither end of the non-empty text `s` is whitespace, so str.strip() leaves it as it is (the fast
    # path of normalize_details); cheaper than trim() with the whole set, which would run on every detail.
    return f"(unicode({s}) NOT IN {_WS_CODES} AND unicode(right({s}, 1)) NOT IN {_WS_CODES})"


_M = _Fields({"parent_asin": "VARCHAR", "title": "VARCHAR", "main_category": "VARCHAR", "store": "VARCHAR",
              "average_rating": "DOUBLE", "rating_number": "BIGINT", "price": "JSON", "features": "JSON",
              "description": "JSON", "categories": "JSON", "details": "JSON"})
# details: the raw form's object, or the Hugging Face form's JSON text of one (blank or "null": none).
_DETAILS_TEXT = "(j.details ->> '$')"
_DETAILS_OBJECT = f"""CASE {_M.t('details')}
      WHEN 'OBJECT' THEN j.details
      WHEN 'VARCHAR' THEN CASE WHEN json_valid({_DETAILS_TEXT}) AND json_type({_DETAILS_TEXT}) = 'OBJECT'
                               THEN {_DETAILS_TEXT}::JSON END END"""
_DETAILS_NONE = f"""({_M.absent('details')} OR ({_M.t('details')} = 'VARCHAR' AND (trim({_DETAILS_TEXT}, {WS}) = ''
      OR (json_valid({_DETAILS_TEXT}) AND json_type({_DETAILS_TEXT}) = 'NULL'))))"""
_PLAIN_ENTRY = (f"(json_type(e.value) = 'VARCHAR' AND (e.value ->> '$') <> '' AND e.key <> '' "
                f"AND {_edges_bare(chr(40) + 'e.value ->> ' + chr(39) + '$' + chr(39) + chr(41))} "
                f"AND unicode(e.key) NOT IN {_WS_CODES})")

META_SQL = f"""
WITH p AS MATERIALIZED ({_M.parsed()}),
d AS MATERIALIZED (SELECT *, json_transform({_DETAILS_OBJECT}, '"MAP(VARCHAR, JSON)"') AS dmap
                   FROM p WHERE j IS NOT NULL)
SELECT k,
  coalesce(uniq
    AND {_M.parent_asin_ok()} AND {_M.text_ok('title')} AND {_M.text_ok('main_category')} AND {_M.text_ok('store')}
    AND {_M.float_ok('average_rating', 1, 5)} AND {_M.count_ok('rating_number')}
    AND ({_M.absent('price')} OR {_M.t('price')} = 'VARCHAR'
         OR ({_M.t('price')} IN {_NUMBER} AND isfinite(TRY_CAST(j.price AS DOUBLE))
             AND TRY_CAST(j.price AS DOUBLE) >= 0))
    AND {_M.strings_ok('features')} AND {_M.strings_ok('description')} AND {_M.strings_ok('categories')}
    AND ({_DETAILS_NONE} OR dmap IS NOT NULL), false) AS ok,
  j.parent_asin AS parent_asin,
  coalesce(j.title, '') AS title,
  {_M.label('main_category')} AS main_category,
  {_M.label('store')} AS store,
  j.average_rating AS average_rating,
  j.rating_number AS rating_number,
  CASE WHEN {_M.t('price')} IN {_NUMBER} THEN TRY_CAST(j.price AS DOUBLE) END AS price_number,
  CASE WHEN {_M.t('price')} = 'VARCHAR' THEN j.price ->> '$' END AS price_text,
  {_M.strings('features')} AS features,
  {_M.strings('description')} AS description,
  {_M.strings('categories')} AS categories,
  coalesce(list_transform(map_entries(dmap), lambda e: {{
      'raw_key': e.key,
      'value': e.value ->> '$',
      'plain': coalesce({_PLAIN_ENTRY}, false),
      'raw_value': CASE WHEN NOT coalesce({_PLAIN_ENTRY}, false) THEN e.value::VARCHAR END}}), []) AS details
FROM d ORDER BY k"""

_R = _Fields({"parent_asin": "VARCHAR", "asin": "VARCHAR", "rating": "DOUBLE", "title": "VARCHAR", "text": "VARCHAR",
              "helpful_vote": "BIGINT", "verified_purchase": "BOOLEAN", "timestamp": "BIGINT", "user_id": "VARCHAR"})

REVIEW_SQL = f"""
WITH p AS MATERIALIZED ({_R.parsed()})
SELECT k,
  coalesce(uniq
    AND {_R.parent_asin_ok()} AND {_R.text_ok('asin')} AND {_R.text_ok('user_id')}
    AND {_R.text_ok('title')} AND {_R.text_ok('text')} AND {_R.float_ok('rating', 1, 5)}
    AND {_R.count_ok('helpful_vote')}
    AND ({_R.absent('verified_purchase')} OR {_R.t('verified_purchase')} = 'BOOLEAN')
    AND {_R.int_ok('timestamp')}, false) AS ok,
  j.parent_asin AS parent_asin,
  {_R.label('asin')} AS asin,
  j.rating AS rating,
  coalesce(j.title, '') AS title,
  coalesce(j.text, '') AS text,
  coalesce(j.helpful_vote, 0) AS helpful_vote,
  coalesce(j.verified_purchase, false) AS verified_purchase,
  j.timestamp AS timestamp,
  {_R.label('user_id')} AS user_id
FROM p WHERE j IS NOT NULL ORDER BY k"""


# --------------------------------------------------------------------------------------------
# DuckDB, one connection per process


_CONNECTION: tuple[int, Any] | None = None
THREADS_ENV = "ECOMBENCH_DUCKDB_THREADS"


def _connection() -> Any:
    # One in-memory DuckDB per process, made in that process (a worker forked from a parent that had one
    # must not share its threads). Threads: ECOMBENCH_DUCKDB_THREADS, else DuckDB's default (every core).
    global _CONNECTION
    if _CONNECTION is None or _CONNECTION[0] != os.getpid():
        import duckdb

        con = duckdb.connect(":memory:")
        threads = os.environ.get(THREADS_ENV)
        if not threads and multiprocessing.parent_process() is not None:
            threads = "1"  # a worker of catalog.ingest's pool: the pool spreads blocks over the cores
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        con.execute("SET preserve_insertion_order = true")
        _CONNECTION = (os.getpid(), con)
    return _CONNECTION[1]


# --------------------------------------------------------------------------------------------
# A block through SQL


def _line_array(lines: list[bytes], picked: list[int]) -> pa.StringArray | None:
    # The picked lines as one Arrow string array over a single buffer (no Python str per line); None when
    # some line is not UTF-8 (the caller then sends those lines to the Python rules).
    lengths = np.fromiter((len(lines[i]) for i in picked), dtype=np.int64, count=len(picked))
    offsets = np.zeros(len(picked) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = b"".join([lines[i] for i in picked])
    arr = pa.LargeStringArray.from_buffers(len(picked), pa.py_buffer(offsets.tobytes()), pa.py_buffer(data))
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        return None
    return arr


def _run_sql(sql: str, block: Block) -> tuple[pa.Table | None, list[int]]:
    """(rows SQL normalised, with column k = index in the block; indices of the lines for the Python rules)."""
    picked = [i for i, raw in enumerate(block.lines) if raw and not raw.isspace()]
    python: list[int] = []
    arr = _line_array(block.lines, picked) if picked else None
    if arr is None and picked:
        good = []
        for i in picked:
            try:
                block.lines[i].decode("utf-8")
                good.append(i)
            except UnicodeDecodeError:
                python.append(i)
        picked = good
        arr = _line_array(block.lines, picked) if picked else None
    if not picked or arr is None:
        return None, sorted(python + picked)
    lines = pa.table({"k": pa.array(picked, pa.int64()), "line": arr})
    con = _connection()
    con.register("lines", lines)
    try:
        result = con.sql(sql).to_arrow_table()
    finally:
        con.unregister("lines")
    ok = result.column("ok")
    python.extend(pc.filter(result.column("k"), pc.invert(ok)).to_pylist())
    # Lines DuckDB could not read as a JSON object are not in the result.
    seen = set(result.column("k").to_pylist())
    python.extend(i for i in picked if i not in seen)
    return result.filter(ok), sorted(python)


def _python_rows(kind: str, name: str, block: Block, table: FieldTable, python: list[int]) -> Converted:
    """The Python rules (`convert_block`) on the given lines of the block, each as a one-line block."""
    out = Converted([], [], [], [], [], block.first_line + len(block.lines) - 1)
    last = len(block.lines) - 1
    for i in python:
        one = Block(block.first_line + i, [block.lines[i]], last_has_newline=block.last_has_newline or i < last)
        conv = convert_block(kind, name, one, table)
        out.rows += conv.rows
        out.ids += conv.ids
        out.lines += conv.lines
        out.keys += conv.keys
        out.bad += conv.bad
    return out


@lru_cache(maxsize=1 << 16)
def _price_text(text: str) -> tuple[float | None, str | None]:
    return parse_price(text)


def _prices(number: pa.ChunkedArray, text: pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    # parse_price's (price, price_raw): a number's raw text is its repr, a text is parsed; over distinct values.
    numbers, texts = number.to_pylist(), text.to_pylist()
    price: list[float | None] = []
    raw: list[str | None] = []
    reprs: dict[float, str] = {}
    for n, t in zip(numbers, texts, strict=True):
        if n is not None:
            r = reprs.get(n)
            if r is None:
                r = reprs[n] = repr(n)
            price.append(n)
            raw.append(r)
        elif t is not None:
            p, r2 = _price_text(t)
            price.append(p)
            raw.append(r2)
        else:
            price.append(None)
            raw.append(None)
    return pa.array(price, pa.float64()), pa.array(raw, pa.string())


def _details(details: pa.ChunkedArray, table: FieldTable) -> pa.Array:
    """The SQL's detail entries as `normalize_details` gives them: canonical keys, the fused or odd entries repaired."""
    lists = details.combine_chunks()
    flat = lists.flatten()
    lengths = pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    raw_keys = flat.field("raw_key")
    values = flat.field("value")
    plain = flat.field("plain").to_numpy(zero_copy_only=False)
    encoded = raw_keys.dictionary_encode()
    keys = pa.array([_canonical_key(table.source_path, k) for k in encoded.dictionary.to_pylist()],
                    pa.string()).take(encoded.indices)
    if plain.all():
        entries = pa.StructArray.from_arrays([keys, raw_keys, values], names=["key", "raw_key", "value"])
    else:
        # The few entries off the fast path (a non-string value, an empty key or value): the general rule of
        # normalize_details, in Python, on those entries only; an entry left empty by it is dropped.
        key_list, raw_list, value_list = keys.to_pylist(), raw_keys.to_pylist(), values.to_pylist()
        raw_values = flat.field("raw_value")
        keep = np.ones(len(flat), dtype=bool)
        for i in np.flatnonzero(~plain):
            key, value = table.split_fused(raw_list[i], detail_value_text(orjson.loads(raw_values[i].as_py())))
            value = value.strip()
            if not key.strip() and not value:
                keep[i] = False
                continue
            key_list[i], raw_list[i], value_list[i] = _canonical_key(table.source_path, key), key, value
        if not keep.all():
            rows = np.repeat(np.arange(len(lengths)), lengths)
            lengths = np.bincount(rows[keep], minlength=len(lengths)).astype(np.int64)
            idx = np.flatnonzero(keep)
            key_list = [key_list[i] for i in idx]
            raw_list = [raw_list[i] for i in idx]
            value_list = [value_list[i] for i in idx]
        entries = pa.StructArray.from_arrays([pa.array(key_list, pa.string()), pa.array(raw_list, pa.string()),
                                              pa.array(value_list, pa.string())], names=["key", "raw_key", "value"])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), entries)


def _strings_column(col: pa.ChunkedArray) -> pa.Array:
    return col.combine_chunks().cast(_PRODUCT_PART_SCHEMA.field("features").type)


def _meta_batch(result: pa.Table, name: str, first_line: int, table: FieldTable) -> pa.RecordBatch:
    price, price_raw = _prices(result.column("price_number"), result.column("price_text"))
    n = result.num_rows
    columns = [
        result.column("parent_asin").combine_chunks().cast(pa.string()),
        result.column("title").combine_chunks().cast(pa.string()),
        result.column("main_category").combine_chunks().cast(pa.string()),
        result.column("store").combine_chunks().cast(pa.string()),
        result.column("average_rating").combine_chunks().cast(pa.float64()),
        result.column("rating_number").combine_chunks().cast(pa.int64()),
        price, price_raw,
        _strings_column(result.column("features")),
        _strings_column(result.column("description")),
        _strings_column(result.column("categories")),
        _details(result.column("details"), table).cast(_PRODUCT_PART_SCHEMA.field("details").type),
        pa.array([name] * n, pa.string()),
        pc.add(result.column("k").combine_chunks(), first_line),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=_PRODUCT_PART_SCHEMA)


def _review_batch(result: pa.Table, name: str, first_line: int) -> tuple[pa.RecordBatch, list[bytes]]:
    cols = {c: result.column(c).combine_chunks() for c in result.column_names}
    asins, users, stamps = cols["parent_asin"].to_pylist(), cols["user_id"].to_pylist(), cols["timestamp"].to_pylist()
    ratings, titles, texts = cols["rating"].to_pylist(), cols["title"].to_pylist(), cols["text"].to_pylist()
    keys = [content_key(*v) for v in zip(asins, users, stamps, ratings, titles, texts, strict=True)]
    columns = [
        pa.array([review_id(key, 0) for key in keys], pa.string()),
        cols["parent_asin"].cast(pa.string()), cols["asin"].cast(pa.string()), cols["rating"].cast(pa.float64()),
        cols["title"].cast(pa.string()), cols["text"].cast(pa.string()), cols["helpful_vote"].cast(pa.int64()),
        cols["verified_purchase"].cast(pa.bool_()), cols["timestamp"].cast(pa.int64()),
        cols["user_id"].cast(pa.string()), pa.array([name] * result.num_rows, pa.string()),
        pc.add(cols["k"], first_line),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=REVIEW_SCHEMA), keys


def convert_block_native(kind: str, name: str, block: Block, table: FieldTable) -> Converted:
    """Parse and normalise every line of a block through DuckDB: `catalog.records.convert_block`'s result, faster.

    Args:
        kind: "meta" or "reviews".
        name: file name for provenance and bad records.
        block: the lines.
        table: field table for detail keys.

    Returns:
        A `Converted` with `batch` set (`rows` empty), equal to what `convert_block` and
        `catalog.ingest.rows_to_batch` give for the same block: rows in line order, bad records
        (all from the lines the Python rules read) in line order.

    Raises:
        duckdb.Error: DuckDB failed on the block for a reason of its own (the caller may retry it with
            the Python rules).
    """
    result, python = _run_sql(META_SQL if kind == "meta" else REVIEW_SQL, block)
    slow = _python_rows(kind, name, block, table, python)
    schema = _PRODUCT_PART_SCHEMA if kind == "meta" else REVIEW_SCHEMA
    slow_batch = pa.RecordBatch.from_pylist(slow.rows, schema=schema)
    if result is None or result.num_rows == 0:
        return Converted([], slow.ids, slow.lines, slow.keys, slow.bad, slow.last_line, slow_batch)
    keys: list[bytes] = []
    if kind == "meta":
        fast = _meta_batch(result, name, block.first_line, table)
    else:
        fast, keys = _review_batch(result, name, block.first_line)
    fast_lines = fast.column("source_line").to_pylist()
    fast_ids = fast.column("parent_asin").to_pylist()
    if not slow.lines:
        return Converted([], fast_ids, fast_lines, keys, slow.bad, slow.last_line, fast)
    merged = pa.Table.from_batches([fast, slow_batch])
    order = np.argsort(np.asarray(fast_lines + slow.lines, dtype=np.int64), kind="stable")
    batch = merged.take(pa.array(order)).combine_chunks().to_batches()[0]
    ids = fast_ids + slow.ids
    lines = fast_lines + slow.lines
    all_keys = keys + slow.keys
    return Converted([], [ids[i] for i in order], [lines[i] for i in order],
                     [all_keys[i] for i in order] if kind == "reviews" else [], slow.bad, slow.last_line, batch)

