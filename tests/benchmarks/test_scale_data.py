"""The scale-up generator (benchmarks/scale_data.py): new unique ids, real field values, stable output."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from benchmarks.scale_data import (
    IDENTITY,
    RATINGS,
    generate,
    load_pool,
    parse_size,
    product_id,
    product_lines,
    size_label,
)
from ecombench.catalog.ingest import write_catalog_snapshot

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "amazon-reviews-2023"
REAL_META = ("meta_electronics_beauty_office.jsonl", "meta_home_toys_sports.jsonl",
             "with-reviews/meta_electronics_with_reviews.jsonl")


@pytest.fixture(scope="module")
def pool():
    if not SHARED.is_dir():
        pytest.skip(f"shared real data not found at {SHARED}")
    return load_pool(SHARED)


@pytest.fixture(scope="module")
def real() -> dict:
    """Every real value by field, as JSON text, to check generated values against."""
    values: dict[str, set[str]] = {}
    for name in REAL_META:
        for line in (SHARED / name).read_bytes().splitlines():
            obj = json.loads(line)
            for k, v in obj.items():
                values.setdefault(k, set()).add(json.dumps(v, sort_keys=True))
    reviews = {json.dumps({k: v for k, v in json.loads(line).items() if k not in ("asin", "parent_asin")},
                          sort_keys=True)
               for line in (SHARED / "with-reviews" / "reviews_electronics.jsonl").read_bytes().splitlines()}
    return {"meta": values, "reviews": reviews}


def test_sizes_parse_and_print_back():
    assert [parse_size(s) for s in ("100k", "1m", "3.7m", "2500")] == [100_000, 1_000_000, 3_700_000, 2500]
    assert [size_label(n) for n in (100_000, 1_000_000, 3_700_000)] == ["100k", "1m", "3.7m"]
    with pytest.raises(ValueError, match="3.7x"):
        parse_size("3.7x")


def test_every_product_gets_a_new_unique_parent_asin_and_real_values(pool, real):
    meta, reviews = product_lines(pool, 0, 0, 2000)
    rows = [json.loads(line) for line in meta.splitlines()]
    ids = [r["parent_asin"] for r in rows]
    assert ids == [product_id(i) for i in range(2000)] and len(set(ids)) == 2000
    assert not set(ids) & real["meta"]["parent_asin"]
    for r in rows:
        for k, v in r.items():
            if k in (*IDENTITY, *RATINGS, "price", "details"):
                assert json.dumps(v, sort_keys=True) in real["meta"][k], (r["parent_asin"], k)
    review_rows = [json.loads(line) for line in reviews.splitlines()]
    assert review_rows and {r["parent_asin"] for r in review_rows} <= set(ids)
    assert all(r["asin"] == r["parent_asin"] for r in review_rows)
    for r in review_rows:
        assert (json.dumps({k: v for k, v in r.items() if k not in ("asin", "parent_asin")}, sort_keys=True)
                in real["reviews"])


def test_lines_are_in_the_official_raw_form(pool):
    meta, _ = product_lines(pool, 0, 0, 300)
    for line in meta.splitlines():
        obj = json.loads(line)
        # the source files' own serialisation: json.dumps with real Unicode, keys in source order
        assert json.dumps(obj, ensure_ascii=False).encode() == line
        assert list(obj)[:4] == ["main_category", "title", "average_rating", "rating_number"]


def test_product_i_does_not_depend_on_the_catalog_size(pool):
    small, _ = product_lines(pool, 7, 0, 50)
    big, _ = product_lines(pool, 7, 0, 120)
    middle, _ = product_lines(pool, 7, 50, 120)
    assert big == small + middle
    other_seed, _ = product_lines(pool, 8, 0, 50)
    assert other_seed != small


def test_generated_catalog_ingests_cleanly_and_is_reused(pool, tmp_path):
    first = generate(2500, tmp_path / "gen", workers=2, data_dir=SHARED, log=lambda m: None)
    again = generate(2500, tmp_path / "gen", workers=1, data_dir=SHARED, verify=True, log=lambda m: None)
    assert again == first
    with gzip.open(tmp_path / "gen" / "meta.jsonl.gz", "rb") as fh:
        assert sum(1 for _ in fh) == 2500
    manifest = write_catalog_snapshot([tmp_path / "gen" / "meta.jsonl.gz"], [tmp_path / "gen" / "reviews.jsonl.gz"],
                                      tmp_path / "snap", workers=1)
    assert manifest["counts"]["products"] == 2500
    assert manifest["counts"]["reviews"] == first["reviews"] > 0
    assert manifest["counts"]["bad_records"] == 0 and manifest["counts"]["orphan_reviews"] == 0


def test_a_catalog_started_from_a_smaller_one_has_the_bytes_of_one_made_whole(pool, tmp_path, monkeypatch):
    import benchmarks.scale_data as scale_data

    monkeypatch.setattr(scale_data, "BLOCK", 40)  # blocks of 40 products: a 200-product prefix is 5 whole blocks
    small = generate(200, tmp_path / "beside" / "200", workers=1, data_dir=SHARED)
    grown = generate(360, tmp_path / "beside" / "360", workers=1, data_dir=SHARED)
    whole = generate(360, tmp_path / "alone" / "360", workers=1, data_dir=SHARED)
    assert small["products"] == 200 and grown["files"] == whole["files"] and grown["reviews"] == whole["reviews"]
