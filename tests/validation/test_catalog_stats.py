"""Catalog statistics written once at ingest (ecombench.validation.catalog_stats) equal what a build computes itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecombench.answers.norms import CatalogNorms
from ecombench.catalog.details import detail_rows, field_vocabulary
from ecombench.catalog.facts import stated_rows
from ecombench.catalog.ingest import write_catalog_snapshot
from ecombench.catalog.snapshot import load_reviews, load_snapshot
from ecombench.tables.fields import load_field_table
from ecombench.validation.catalog_stats import (
    STATS_DIR,
    catalog_knowledge,
    load_catalog_stats,
    negative_fields,
    stored_catalog_suite,
    write_catalog_stats,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "amazon-reviews-2023" / "with-reviews"


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"shared real data not found at {SHARED}")
    out = tmp_path_factory.mktemp("stats") / "snap"
    write_catalog_snapshot([SHARED / "meta_electronics_with_reviews.jsonl"], [SHARED / "reviews_electronics.jsonl"],
                           out, workers=1)
    write_catalog_stats(out, load_field_table(), with_suite=False)
    return out


def test_stored_norms_equal_the_ones_a_build_computes(snapshot):
    table = load_field_table()
    products, manifest = load_snapshot(snapshot)
    stats = load_catalog_stats(snapshot, manifest["fingerprint"], table)
    assert stats is not None
    # As a build computes them: options are the values the pages state (their product facts).
    details = stated_rows(catalog_knowledge(snapshot, table).facts.facts)
    fresh = CatalogNorms.compute(products, table, load_reviews(snapshot), details=details)
    assert stats.norms.titles.equals(fresh.titles)
    assert stats.norms.options.equals(fresh.options)
    assert stats.norms.review_texts is not None and stats.norms.review_texts.equals(fresh.review_texts)
    assert fresh.titles.height == products.get_column("title").n_unique()


def test_stored_vocabulary_restricted_to_a_build_s_fields_equals_field_vocabulary(snapshot):
    table = load_field_table()
    products, manifest = load_snapshot(snapshot)
    stats = load_catalog_stats(snapshot, manifest["fingerprint"], table)
    # As a build computes it: over the values the pages state ("2.4G Wireless Mouse" states a Connectivity
    # Technology no label carries), not over the labels alone.
    details = stated_rows(catalog_knowledge(snapshot, table).facts.facts)
    assert not details.equals(detail_rows(products, table))
    fields = negative_fields(table)
    assert stats.vocabulary_for(fields) == field_vocabulary(products, table, fields, details=details)
    some = fields[:2]
    assert stats.vocabulary_for(some) == field_vocabulary(products, table, some, details=details)
    assert stats.vocabulary_for(["not a field"]) is None


def test_statistics_of_other_bytes_are_not_used(snapshot):
    table = load_field_table()
    assert load_catalog_stats(snapshot, "0" * 64, table) is None
    record = json.loads((snapshot / STATS_DIR / "stats.json").read_text())
    assert record["fingerprint"] == json.loads((snapshot / "manifest.json").read_text())["fingerprint"]
    assert stored_catalog_suite(snapshot) is None  # written without the suite


def test_the_stored_catalog_suite_is_the_one_a_build_runs(snapshot, tmp_path):
    from ecombench.validation.expectations import catalog_suite, run_suites

    products, _ = load_snapshot(snapshot)
    write_catalog_stats(snapshot, load_field_table(), with_suite=True)
    stored = stored_catalog_suite(snapshot)
    assert stored == catalog_suite(products)
    assert run_suites(products, [], catalog_summary=stored)["suites"]["catalog"] == stored


def test_statistics_written_in_slices_equal_the_whole_catalog_s(snapshot, tmp_path, monkeypatch):
    # Ingest reads products.parquet in slices (6.5 GB at 3.7M products when it read the whole table): with slices
    # of 97 rows over this real snapshot, every file but the timings is the same as in one slice.
    import shutil

    import ecombench.validation.catalog_stats as catalog_stats

    assert load_snapshot(snapshot)[0].height > 3 * 97
    whole, sliced = tmp_path / "whole", tmp_path / "sliced"
    for where, rows in ((whole, 10**9), (sliced, 97)):
        shutil.copytree(snapshot, where)
        monkeypatch.setattr(catalog_stats, "SLICE_ROWS", rows)
        monkeypatch.setattr(catalog_stats, "KNOWLEDGE_SLICE_ROWS", rows)
        write_catalog_stats(where, load_field_table(), with_suite=False)
    names = sorted(p.name for p in (whole / STATS_DIR).iterdir())
    assert names == sorted(p.name for p in (sliced / STATS_DIR).iterdir()) and "vocabulary.json" in names
    for name in names:
        if name != "stats.json":
            assert (whole / STATS_DIR / name).read_bytes() == (sliced / STATS_DIR / name).read_bytes(), name


def test_the_suite_reads_presence_only_where_it_checks_presence(snapshot):
    # catalog_table passes title, main_category and store as "" or null: on real products with those fields
    # removed, the suite's result is the one the full texts give.
    import polars as pl

    from ecombench.validation.expectations import _context, _validate, catalog_expectations, catalog_suite

    products, _ = load_snapshot(snapshot)
    damaged = products.with_columns(*(pl.when(pl.int_range(pl.len()) % k == 0).then(None).otherwise(pl.col(c)).alias(c)
                                      for c, k in (("title", 7), ("main_category", 3), ("store", 2))))
    full_texts = damaged.select(
        "parent_asin", "title", "main_category", "store", "average_rating", "rating_number", "price",
        pl.col("categories").list.len().fill_null(0).alias("category_count"),
        pl.col("details").list.len().fill_null(0).alias("detail_count"))
    result = catalog_suite(damaged)
    assert result == _validate(_context(), "catalog", full_texts, catalog_expectations(), "parent_asin")
    failed = {e["name"] for e in result["expectations"] if not e["success"]}
    assert {"title_present", "main_category_mostly_present", "store_mostly_present"} <= failed


def test_a_snapshot_without_reviews_gets_its_statistics(tmp_path):
    # The real products ingested alone: reviews.parquet has no row (the sliced reader once failed on it).
    if not SHARED.is_dir():
        pytest.skip(f"shared real data not found at {SHARED}")
    out = tmp_path / "snap"
    write_catalog_snapshot([SHARED / "meta_electronics_with_reviews.jsonl"], [], out, workers=1)
    write_catalog_stats(out, load_field_table(), with_suite=False)
    products, manifest = load_snapshot(out)
    stats = load_catalog_stats(out, manifest["fingerprint"], load_field_table())
    assert stats is not None and stats.norms.review_texts is not None and stats.norms.review_texts.height == 0
    assert stats.norms.titles.equals(CatalogNorms.compute(products, load_field_table()).titles)


def test_the_suite_run_in_a_process_of_its_own_gives_the_inline_result(snapshot, tmp_path, monkeypatch):
    # Big snapshots run the suite in a spawned process beside the other statistics (PARALLEL_SUITE_PRODUCTS);
    # forced here on the real snapshot, its catalog_suite.json is the inline one's, byte for byte.
    import shutil

    import ecombench.validation.catalog_stats as catalog_stats

    results = {}
    for name, threshold in (("inline", 10**12), ("beside", 0)):
        where = tmp_path / name
        shutil.copytree(snapshot, where)
        monkeypatch.setattr(catalog_stats, "PARALLEL_SUITE_PRODUCTS", threshold)
        record = write_catalog_stats(where, load_field_table(), with_suite=True)
        assert record["seconds"]["catalog_suite"] > 0
        results[name] = (where / STATS_DIR / "catalog_suite.json").read_bytes()
    assert results["inline"] == results["beside"] and b"parent_asin_unique" in results["inline"]


def test_the_suite_in_slices_equals_the_suite_on_the_whole_table(snapshot):
    # Real products damaged across slice boundaries: repeated parent_asins (one copy far from the other), nulls,
    # out-of-range values and a bad id shape. Validated 97 rows at a time, the summary is the whole table's.
    import polars as pl

    from ecombench.validation.expectations import catalog_suite, catalog_suite_in_parts

    products, _ = load_snapshot(snapshot)
    n = products.height
    row = pl.int_range(pl.len())
    first = products.get_column("parent_asin")
    damaged = products.with_columns(
        pl.when(row.is_in([5, n - 3])).then(pl.lit(first[1])).when(row == 150).then(pl.lit(first[140]))
        .when(row == 77).then(None).when(row == 200).then(pl.lit("not-an-asin")).otherwise(pl.col("parent_asin"))
        .alias("parent_asin"),
        pl.when(row % 11 == 0).then(None).otherwise(pl.col("title")).alias("title"),
        pl.when(row % 13 == 0).then(7.5).otherwise(pl.col("average_rating")).alias("average_rating"),
        pl.when(row % 5 == 0).then(None).otherwise(pl.col("store")).alias("store"),
    )
    whole = catalog_suite(damaged)
    failed = {e["name"] for e in whole["expectations"] if not e["success"]}
    assert {"parent_asin_unique", "parent_asin_present", "parent_asin_shape", "title_present",
            "average_rating_in_range", "store_mostly_present"} <= failed
    assert catalog_suite_in_parts(lambda: iter(damaged.iter_slices(97))) == whole
    assert catalog_suite_in_parts(lambda: iter([damaged])) == whole
