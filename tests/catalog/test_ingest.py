"""Catalog ingestion on real Amazon Reviews 2023 files: the snapshot writer and its cross-record rules.

Bad input is made by damaging copies of real lines, never by inventing products. Files go
through the same path as `ecombench ingest` (worker pool, blocks, parquet writer).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from ecombench.catalog.ingest import write_catalog_snapshot
from ecombench.catalog.schema import PRODUCT_SCHEMA, REVIEW_SCHEMA

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "ecombench" / "data" / "sample"
SAMPLE_META = SAMPLE / "meta.jsonl.gz"
SAMPLE_REVIEWS = SAMPLE / "reviews.jsonl.gz"


def ingest(out: Path, meta: list[Path], reviews: list[Path] = (), batch_size: int = 50,
           block_bytes: int = 16 * 1024) -> tuple[dict, list[dict], list[dict], list[dict]]:
    """Ingest through the snapshot writer with two workers and small blocks.

    Even these small files are then cut into many blocks parsed by the worker pool, the path
    `ecombench ingest` takes on real data.

    Returns:
        (manifest, products.parquet rows, reviews.parquet rows, bad_records.jsonl records).
    """
    manifest = write_catalog_snapshot(meta, reviews, out, batch_size=batch_size, workers=2,
                                      block_bytes=block_bytes)
    bad = [orjson.loads(line) for line in (out / "bad_records.jsonl").read_bytes().splitlines()]
    return (manifest, pq.read_table(out / "products.parquet").to_pylist(),
            pq.read_table(out / "reviews.parquet").to_pylist(), bad)


def without_source(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in ("source_file", "source_line")}

# ---------------------------------------------------------------- the two forms

def test_hugging_face_form_normalises_like_raw_form(shared, tmp_path):
    _, hf, _, hf_bad = ingest(tmp_path / "hf", [shared / "meta_hf_form_sample.jsonl"])
    _, raw, _, _ = ingest(tmp_path / "raw", [shared / "meta_electronics_beauty_office.jsonl"])
    assert len(hf) == 300 and hf_bad == []
    raw_by_id = {row["parent_asin"]: row for row in raw}
    for row in hf:
        assert without_source(row) == without_source(raw_by_id[row["parent_asin"]])
    assert any(row["details"] for row in hf) and any(row["price"] for row in hf)


def test_hugging_face_copies_after_raw_file_are_duplicates(shared, tmp_path):
    hf_path = shared / "meta_hf_form_sample.jsonl"
    manifest, products, _, bad = ingest(tmp_path / "snap", [shared / "meta_electronics_beauty_office.jsonl", hf_path])
    assert len(products) == 2556
    assert [b["reason"] for b in bad] == ["duplicate_parent_asin"] * 300
    assert [b["line"] for b in bad] == list(range(1, 301))
    assert {b["file"] for b in bad} == {hf_path.name}
    assert manifest["inputs"][1]["bad_by_reason"] == {"duplicate_parent_asin": 300}

# ---------------------------------------------------------------- damaged input

def damage(sample_lines: list[bytes], tmp_path: Path) -> tuple[Path, Path, list[tuple[int, str]], list[str]]:
    """A plain file of 30 real lines with damaged copies mixed in, plus a truncated gzip of 40 more.

    Returns the two files, the expected (line, reason) of every bad record of the plain file, and the
    parent_asin of every product it should keep, in order: the 30 good lines and the real products
    whose non-essential fields were damaged (kept without those fields).
    """
    good = sample_lines[:30]
    # Other real products, each with one or two non-essential fields damaged: they stay in the catalog.
    wrong = dict(orjson.loads(sample_lines[80]), average_rating="4.5 out of 5", features="Bluetooth 5.0")
    out_of_range = dict(orjson.loads(sample_lines[81]), average_rating=7.5, rating_number=-3)
    missing = {k: v for k, v in orjson.loads(good[2]).items() if k != "parent_asin"}
    lines = list(good)
    expected_bad, kept_at = [], {}
    inserts = [
        (good[3][: len(good[3]) // 2] + b"\n", ["truncated_line"], None),
        (good[4].replace(b'"title": "', b'"title": "\xff\xfe', 1), ["invalid_utf8"], None),
        (orjson.dumps(wrong) + b"\n", ["wrong_type", "wrong_type"], wrong["parent_asin"]),
        (b"[" + good[5].rstrip(b"\n") + b"]\n", ["not_an_object"], None),
        (orjson.dumps(missing) + b"\n", ["missing_parent_asin"], None),
        (good[6], ["duplicate_parent_asin"], None),
        (orjson.dumps(out_of_range) + b"\n", ["out_of_range", "out_of_range"], out_of_range["parent_asin"]),
        (good[7][:-40] + b"}\n", ["invalid_json"], None),
        (b"\n", [], None),
    ]
    for i, (line, reasons, kept) in enumerate(inserts):
        # Positions grow, so lines inserted earlier keep their numbers.
        pos = 5 + 4 * i
        lines.insert(pos, line)
        expected_bad += [(pos + 1, reason) for reason in reasons]
        if kept:
            kept_at[pos] = kept
    plain = tmp_path / "damaged.jsonl"
    plain.write_bytes(b"".join(lines))
    whole = gzip.compress(b"".join(sample_lines[30:70]), mtime=0)
    truncated = tmp_path / "truncated.jsonl.gz"
    truncated.write_bytes(whole[: len(whole) * 2 // 3])
    order = {line: orjson.loads(line)["parent_asin"] for line in good}
    expected_ids = [kept_at[i] if i in kept_at else order.get(line) for i, line in enumerate(lines)]
    seen: set[str] = set()
    expected_ids = [a for a in expected_ids if a and not (a in seen or seen.add(a))]
    return plain, truncated, expected_bad, expected_ids


def test_damaged_files_ingest_with_every_bad_record_listed(sample_lines, tmp_path):
    plain, truncated, expected_bad, expected_ids = damage(sample_lines, tmp_path)
    _, products, _, bad = ingest(tmp_path / "snap", [plain, truncated], batch_size=7, block_bytes=4096)

    assert [(b["line"], b["reason"]) for b in bad if b["file"] == plain.name] == expected_bad
    assert all(len(b["excerpt"]) <= 200 for b in bad)
    assert "\ufffd" in next(b for b in bad if b["reason"] == "invalid_utf8")["excerpt"]

    from_plain = [p["parent_asin"] for p in products if p["source_file"] == plain.name]
    assert from_plain == expected_ids

    from_gz = [p for p in products if p["source_file"] == truncated.name]
    cut = [b for b in bad if b["file"] == truncated.name]
    assert [b["reason"] for b in cut] == ["truncated_gzip"]
    assert 0 < len(from_gz) < 40
    assert cut[0]["line"] == len(from_gz) + 1
    assert [p["parent_asin"] for p in from_gz] == [orjson.loads(x)["parent_asin"]
                                                   for x in sample_lines[30:30 + len(from_gz)]]


def test_a_bad_field_is_dropped_and_logged_while_its_product_is_kept(sample_lines, tmp_path):
    plain, truncated, _, _ = damage(sample_lines, tmp_path)
    _, products, _, bad = ingest(tmp_path / "snap", [plain, truncated], batch_size=7, block_bytes=4096)
    by_asin = {p["parent_asin"]: p for p in products}
    wrong, ranged = (orjson.loads(sample_lines[k]) for k in (80, 81))
    kept = by_asin[wrong["parent_asin"]]
    assert kept["average_rating"] is None and kept["features"] == [] and kept["title"] == wrong["title"]
    assert kept["rating_number"] == wrong["rating_number"]
    kept = by_asin[ranged["parent_asin"]]
    assert kept["average_rating"] is None and kept["rating_number"] is None and kept["title"] == ranged["title"]
    fields = {(b["field"], b["reason"]): b for b in bad if b.get("kept")}
    assert set(fields) == {("average_rating", "wrong_type"), ("features", "wrong_type"),
                           ("average_rating", "out_of_range"), ("rating_number", "out_of_range")}
    assert "7.5" in fields["average_rating", "out_of_range"]["message"]
    assert "[1, 5]" in fields["average_rating", "out_of_range"]["message"]
    truncated_line = next(b for b in bad if b["reason"] == "truncated_line")
    assert "truncated" in truncated_line["message"]


def test_damaged_files_snapshot_counts_match(sample_lines, tmp_path):
    plain, truncated, expected_bad, expected_ids = damage(sample_lines, tmp_path)
    out = tmp_path / "snap"
    manifest, products, _, bad = ingest(out, [plain, truncated], batch_size=7, block_bytes=4096)
    assert manifest["counts"]["bad_records"] == len(bad) == len(expected_bad) + 1
    assert manifest["counts"]["products"] == len(products)
    from collections import Counter
    assert manifest["counts"]["bad_by_reason"] == dict(Counter([r for _, r in expected_bad] + ["truncated_gzip"]))
    first = manifest["inputs"][0]
    assert first["records_ok"] == len(expected_ids) and first["lines"] == 30 + 9
    assert sum(i["records_ok"] for i in manifest["inputs"]) == len(products)


@pytest.mark.parametrize("content", [b"", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8], ids=["empty", "binary"])
def test_a_metadata_file_without_products_fails_the_ingest_naming_it(content, tmp_path):
    from ecombench.errors import InputError

    path = tmp_path / "meta.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError, match="no product records") as err:
        write_catalog_snapshot([path], [], tmp_path / "snap", workers=1)
    assert str(path) in str(err.value) and len(str(err.value).splitlines()) == 1
    assert not (tmp_path / "snap").exists()


# ---------------------------------------------------------------- reviews

def test_reviews_of_unknown_products_are_counted_as_orphans(sample_lines, tmp_path):
    catalog_only = tmp_path / "catalog_only.jsonl"
    catalog_only.write_bytes(b"".join(sample_lines[:437]))  # the products without reviews
    manifest, _, reviews, bad = ingest(tmp_path / "snap", [catalog_only], [SAMPLE_REVIEWS])
    assert reviews == [] and bad == []
    assert manifest["counts"]["orphan_reviews"] == manifest["inputs"][1]["lines"] == 430
    assert manifest["inputs"][1]["records_ok"] == 0


def test_identical_reviews_get_distinct_stable_ids(shared, tmp_path):
    paths = ([shared / "with-reviews" / "meta_electronics_with_reviews.jsonl"],
             [shared / "with-reviews" / "reviews_electronics.jsonl"])
    _, _, reviews, _ = ingest(tmp_path / "a", *paths)
    _, _, again, _ = ingest(tmp_path / "b", *paths, batch_size=1000, block_bytes=256 * 1024)
    ids = [r["review_id"] for r in reviews]
    assert len(reviews) == 3175 and len(set(ids)) == 3175
    assert ids == [r["review_id"] for r in again]
    content = {(r["parent_asin"], r["title"], r["text"], r["rating"]) for r in reviews}
    assert len(content) < len(reviews)  # the real file repeats some reviews
    assert all(len(i) == 16 for i in ids)


# ---------------------------------------------------------------- the snapshot writer

def test_snapshot_of_the_sample_is_complete(tmp_path):
    out = tmp_path / "sample"
    manifest = write_catalog_snapshot([SAMPLE_META], [SAMPLE_REVIEWS], out, batch_size=64)
    assert sorted(p.name for p in out.iterdir()) == ["bad_records.jsonl", "manifest.json",
                                                     "products.parquet", "reviews.parquet"]
    assert json.loads((out / "manifest.json").read_text()) == manifest
    products = pq.read_table(out / "products.parquet")
    reviews = pq.read_table(out / "reviews.parquet")
    assert products.schema == PRODUCT_SCHEMA and reviews.schema == REVIEW_SCHEMA
    assert manifest["counts"] == {"products": 527, "reviews": 430, "orphan_reviews": 0,
                                  "bad_records": 0, "bad_by_reason": {}}
    counts = dict(zip(products["parent_asin"].to_pylist(), products["review_count"].to_pylist()))
    assert sum(counts.values()) == 430
    reviewed = [a for a, n in counts.items() if n]
    assert len(reviewed) == 90 and list(counts)[437:] == reviewed  # the last 90 lines, each with its reviews
    per_product: dict[str, int] = {}
    for a in reviews["parent_asin"].to_pylist():
        per_product[a] = per_product.get(a, 0) + 1
    assert per_product == {a: counts[a] for a in reviewed}
    assert [i["kind"] for i in manifest["inputs"]] == ["meta", "reviews"]
    assert manifest["inputs"][0]["bytes"] == SAMPLE_META.stat().st_size


def test_the_manifest_lists_each_written_file_with_its_own_sha256_and_size(sample_lines, tmp_path):
    from ecombench.catalog.integrity import snapshot_files, verify_snapshot

    meta = tmp_path / "meta.jsonl"  # with bad records, so bad_records.jsonl is not empty
    meta.write_bytes(b"".join(sample_lines[:200]) + b"{not json\n" + b"".join(sample_lines[200:]))
    out = tmp_path / "snap"
    manifest = write_catalog_snapshot([meta], [SAMPLE_REVIEWS], out, batch_size=64)
    assert manifest["files"] == snapshot_files(out)  # hashed while written, as a second read finds them
    assert manifest["files"]["bad_records.jsonl"]["bytes"] > 0
    verify_snapshot(out)


def test_snapshot_fingerprint_depends_on_input_bytes_only(tmp_path):
    a = write_catalog_snapshot([SAMPLE_META], [SAMPLE_REVIEWS], tmp_path / "a", batch_size=64)
    b = write_catalog_snapshot([SAMPLE_META], [SAMPLE_REVIEWS], tmp_path / "b", batch_size=1000)
    c = write_catalog_snapshot([SAMPLE_META], [], tmp_path / "c")
    assert a["fingerprint"] == b["fingerprint"] != c["fingerprint"]
    assert pq.read_table(tmp_path / "a" / "products.parquet").equals(pq.read_table(tmp_path / "b" / "products.parquet"))


def test_snapshot_refuses_an_existing_directory_and_leaves_it_alone(tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "products.parquet").write_bytes(b"earlier snapshot")
    with pytest.raises(FileExistsError, match="taken"):
        write_catalog_snapshot([SAMPLE_META], [SAMPLE_REVIEWS], out)
    assert (out / "products.parquet").read_bytes() == b"earlier snapshot"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_snapshot_names_a_missing_input_before_writing(tmp_path):
    missing = tmp_path / "nowhere.jsonl"
    with pytest.raises(FileNotFoundError, match="nowhere.jsonl"):
        write_catalog_snapshot([SAMPLE_META], [missing], tmp_path / "snap")
    assert list(tmp_path.iterdir()) == []
