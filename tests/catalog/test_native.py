"""The native reader (DuckDB, catalog.native) against the Python reader: the same snapshot from the same bytes.

Real shared files and damaged copies of real lines go through `write_catalog_snapshot` with each
reader; the parquet tables (sorted by parent_asin / review_id) and bad_records.jsonl must be equal.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ecombench.catalog.ingest import write_catalog_snapshot
from ecombench.catalog.integrity import verify_snapshot
from tests.catalog.test_ingest import damage


def snapshots(tmp_path: Path, meta: list[Path], reviews: list[Path] = (), **kw) -> tuple[Path, Path]:
    out = {}
    for reader in ("python", "native"):
        out[reader] = tmp_path / reader
        write_catalog_snapshot(meta, reviews, out[reader], reader=reader, **kw)
    return out["python"], out["native"]


def assert_same_snapshot(py: Path, native: Path) -> None:
    for name, key in (("products.parquet", "parent_asin"), ("reviews.parquet", "review_id")):
        a, b = pq.read_table(py / name), pq.read_table(native / name)
        assert a.schema == b.schema
        assert a.sort_by(key).equals(b.sort_by(key)), name
        assert a.equals(b), f"{name}: same rows, other order"
    assert (py / "bad_records.jsonl").read_bytes() == (native / "bad_records.jsonl").read_bytes()
    m_py, m_native = (orjson.loads((p / "manifest.json").read_bytes()) for p in (py, native))
    assert m_py["fingerprint"] == m_native["fingerprint"] and m_py["counts"] == m_native["counts"]
    assert [i["bad_by_reason"] for i in m_py["inputs"]] == [i["bad_by_reason"] for i in m_native["inputs"]]
    assert m_native["reader"] == "native"


def test_every_shared_real_file_gives_the_same_snapshot(shared, tmp_path):
    meta = [shared / "meta_electronics_beauty_office.jsonl", shared / "meta_hf_form_sample.jsonl",
            shared / "meta_home_toys_sports.jsonl", shared / "with-reviews" / "meta_electronics_with_reviews.jsonl"]
    py, native = snapshots(tmp_path, meta, [shared / "with-reviews" / "reviews_electronics.jsonl"], workers=1)
    assert_same_snapshot(py, native)
    assert set(verify_snapshot(native).values()) == {"hashed"}


def test_the_hugging_face_form_gzipped_gives_the_same_snapshot(shared, tmp_path):
    gz = tmp_path / "meta_hf.jsonl.gz"
    gz.write_bytes(gzip.compress((shared / "meta_hf_form_sample.jsonl").read_bytes(), mtime=0))
    assert_same_snapshot(*snapshots(tmp_path, [gz], workers=1, block_bytes=64 * 1024))


def test_damaged_files_give_the_same_snapshot_and_bad_records(sample_lines, tmp_path):
    plain, truncated, _, _ = damage(sample_lines, tmp_path)
    assert_same_snapshot(*snapshots(tmp_path, [plain, truncated], batch_size=7, workers=2, block_bytes=4096))


def lenient_lines(sample_lines: list[bytes]) -> list[bytes]:
    """Real lines edited into what DuckDB reads differently from orjson, or what only the Python rules decide."""
    rec = [orjson.loads(line) for line in sample_lines[100:120]]
    text = [line.rstrip(b"\n") for line in sample_lines[120:130]]
    assert b'"details": {' in text[6]
    padded = dict(rec[6], store="\u3000 Acme \x1c", main_category=" ", details={" ": "Shape Irregular",
                  "Color": "  Red\u00a0", "Battery Cell Composition Sealed Lead Acid": "", "Rank": {"Toys": 12},
                  "Size": ["S", None, " M "], "Weight": 2.5, "Flag": True, "Nothing": None})
    return [
        text[0][:-1] + b', "rating_number": NaN}',                              # NaN literal: invalid_json
        text[1][:-1] + b",}",                                                    # trailing comma: invalid_json
        text[2][:-1] + b', "title": "a later title"}',                           # repeated key: orjson keeps the last
        text[3][:-1] + b', "price": 1e999}',                                     # overflowing exponent
        b"\xef\xbb\xbf" + text[4],                                               # byte order mark
        text[5][:-1] + b', "extra": "\\ud800"}',                                 # lone surrogate
        orjson.dumps(dict(rec[0], features=["Bluetooth", 5, None])),             # a number in a string list
        orjson.dumps(dict(rec[1], features=["a", None, "b"], categories=None)),  # nulls dropped, null list
        orjson.dumps(dict(rec[2], rating_number=12.0, average_rating=4)),        # float count, int rating
        orjson.dumps(dict(rec[3], rating_number=2**40, average_rating=1)),        # a large count, the lowest rating
        orjson.dumps(dict(rec[4], price="$10.99 - $24.99")),                     # a price text
        orjson.dumps(dict(rec[5], price=-3.0, parent_asin=" " + rec[5]["parent_asin"])),
        orjson.dumps(padded),
        orjson.dumps(dict(rec[7], details=orjson.dumps({"Color": "Blue", "Color ": "Navy"}).decode())),
        orjson.dumps(dict(rec[8], details='{"Color": "Blue", "Color": "Navy"}')),  # repeated key in HF details
        orjson.dumps(dict(rec[9], details="  ")),
        orjson.dumps(dict(rec[10], details="null", title=None, store="")),
        orjson.dumps(dict(rec[11], details="{not json")),
        orjson.dumps(dict(rec[12], details=[1, 2])),
        orjson.dumps(dict(rec[13], title=7)),
        orjson.dumps(dict(rec[14], average_rating=True)),
        orjson.dumps(rec[15]).replace(b'"title":', b'"title" :  ', 1),
        b"  " + orjson.dumps(rec[16]) + b"\t",
        orjson.dumps(dict(rec[17], parent_asin="")),
        orjson.dumps(dict(rec[18], price="None")),
        orjson.dumps(dict(rec[19], description="one string")),
        orjson.dumps(dict(orjson.loads(sample_lines[130]), rating_number=2**63)),  # past Int64: out_of_range
        # Detail values of every kind in the Hugging Face form (details as JSON text), then in the raw form with
        # a nested object DuckDB re-serialises (floats, an exponent, a repeated key orjson collapses).
        orjson.dumps(dict(orjson.loads(sample_lines[131]), details=orjson.dumps(padded["details"]).decode())),
        text[6][:-1].replace(b'"details": {', b'"details": {"Rank": {"Toys": 1.50, "Big": 1e20, "Toys": 3}, ', 1)
        + b"}",
        orjson.dumps(dict(orjson.loads(sample_lines[132]), price=-0.0)),        # a negative zero price
        orjson.dumps(dict(orjson.loads(sample_lines[133]), price=5)),           # an integer price: raw "5.0"
        orjson.dumps(dict(orjson.loads(sample_lines[134]), price="  9.99 ")),   # a padded price text
        orjson.dumps(dict(orjson.loads(sample_lines[135]), features="one")),   # a string for a list
        orjson.dumps(dict(orjson.loads(sample_lines[136]), details={})),        # no details at all
        b"   ", b"\t",                                                          # blank lines, skipped
        text[7] + b"\r",                                                        # a CRLF line end
        text[8].replace(b'"title":', b'"\\u0074itle": "escaped", "title":', 1),  # a key spelt with an escape
        # What the one-parse query refuses, read again with every field's type: a declared key missing, a detail key
        # repeated in the raw form (orjson keeps the last value), details of another type.
        orjson.dumps({k: v for k, v in orjson.loads(sample_lines[137]).items() if k not in ("store", "details")}),
        text[9].replace(b'"details": {', b'"details": {"Color": "Blue", "Color": "Navy", ', 1),
        orjson.dumps(dict(orjson.loads(sample_lines[138]), details=5)),
        # Values whose JSON text the columns unescape: quotes, backslashes, control characters, non-ASCII.
        orjson.dumps(dict(orjson.loads(sample_lines[139]), title='12" \\ Pan\t\u0001 caf\u00e9',
                          details={"Size": ' 12" ', "Note": "a\\b\nc", "Empty": "", "Plain": "caf\u00e9 \u3000"})),
    ]


def test_lines_duckdb_reads_leniently_take_the_python_rules(sample_lines, tmp_path):
    path = tmp_path / "lenient.jsonl"
    path.write_bytes(b"\n".join(lenient_lines(sample_lines)))  # and no newline at the end
    py, native = snapshots(tmp_path, [path], workers=1)
    assert_same_snapshot(py, native)
    reasons = [b["reason"] for b in map(orjson.loads, (py / "bad_records.jsonl").read_bytes().splitlines())]
    assert reasons.count("invalid_json") >= 4 and "wrong_type" in reasons and "out_of_range" in reasons


def test_the_whitespace_set_is_pythons():
    from ecombench.catalog.native import _WS

    assert _WS == "".join(chr(c) for c in range(0x110000) if chr(c).isspace())


def test_repeated_declared_keys_take_the_python_rules(shared, tmp_path):
    # Real lines whose videos hold nested "title" keys (not repeats), and copies with a repeated top-level key.
    lines = [x for x in (shared / "meta_home_toys_sports.jsonl").read_bytes().splitlines() if b'"videos": [{' in x][:20]
    # First in the file, so that they claim their parent_asin before the originals do.
    lines = [lines[0][:-1] + b', "store": "Later Store"}', lines[1][:-1] + b', "title": "Later title"}',
             lines[2][:-1] + b', "details": {"Color": "Teal"}}', *lines]
    path = tmp_path / "repeated.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    py, native = snapshots(tmp_path, [path], workers=1)
    assert_same_snapshot(py, native)
    titles = pq.read_table(native / "products.parquet").column("title").to_pylist()
    assert "Later title" in titles


def test_reviews_damaged_give_the_same_snapshot(shared, tmp_path):
    lines = (shared / "with-reviews" / "reviews_electronics.jsonl").read_bytes().splitlines()[:300]
    recs = [orjson.loads(x) for x in lines[:6]]
    lines += [orjson.dumps(dict(recs[0], rating=7)), orjson.dumps(dict(recs[1], helpful_vote=-1)),
              orjson.dumps(dict(recs[2], verified_purchase="yes")), orjson.dumps(dict(recs[3], timestamp=-5)),
              orjson.dumps(dict(recs[4], user_id="  u1 ", asin="")), lines[5], b"", lines[7][:50]]
    path = tmp_path / "reviews.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    meta = [shared / "with-reviews" / "meta_electronics_with_reviews.jsonl"]
    assert_same_snapshot(*snapshots(tmp_path, meta, [path], workers=1))


def test_an_unknown_reader_is_refused(tmp_path, shared):
    with pytest.raises(ValueError, match="reader must be one of"):
        write_catalog_snapshot([shared / "meta_hf_form_sample.jsonl"], [], tmp_path / "s", reader="fast")


def test_one_parse_reads_nearly_every_real_raw_line(shared):
    # The strict query (one parse per line) must read the raw form whole; only the Hugging Face form (details as
    # text) takes the second query. Equality alone would also hold if every line took the second query.
    from ecombench.catalog.ingest import iter_blocks
    from ecombench.catalog.native import STRICT_SQL, _block_lines, _connection, _strict_rows

    for name, kind, want in (("meta_home_toys_sports.jsonl", "meta", 1.0), ("meta_hf_form_sample.jsonl", "meta", 0.0),
                             ("with-reviews/reviews_electronics.jsonl", "reviews", 1.0)):
        read = lines = 0
        for block in iter_blocks(shared / name, split=False):
            arr = _block_lines(block).cast(pa.large_string())
            con = _connection()
            con.register("lines", pa.table({"k": pa.array(range(len(arr)), pa.int64()), "line": arr}))
            try:
                read += int(_strict_rows(kind, con.sql(STRICT_SQL[kind]).to_arrow_table()).sum())
            finally:
                con.unregister("lines")
            lines += len(arr)
        assert read == round(want * lines), (name, read, lines)


def test_the_columns_not_the_python_rules_read_nearly_every_real_line(shared):
    # The equality tests above would also pass if every line took the Python rules; this one holds the fast
    # path to the real files (and the Hugging Face form) so that the column rules are what they test.
    from ecombench.catalog.ingest import iter_blocks
    from ecombench.catalog.native import _run_sql
    from ecombench.catalog.records import RawBlock

    for name, kind in (("meta_home_toys_sports.jsonl", "meta"), ("meta_hf_form_sample.jsonl", "meta"),
                       ("with-reviews/reviews_electronics.jsonl", "reviews")):
        lines = python = 0
        for block in iter_blocks(shared / name, split=False):
            assert isinstance(block, RawBlock)
            lines += block.count
            python += len(_run_sql(kind, block)[2])
        assert lines > 250 and python <= lines // 100, (name, python, lines)
