"""Stage 1, catalog sampling over the rich real snapshot (stages/sampling.py)."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from ecombench.stages.sampling import NO_CATEGORY, eligibility_columns, sample_candidates
from ecombench.tables.intents import load_intents


@pytest.fixture(scope="module")
def eligibility(rich_catalog):
    return eligibility_columns(rich_catalog.products, rich_catalog.table)


@pytest.fixture(scope="module")
def intents():
    return load_intents()


def eligible(eligibility, intent):
    cond = pl.col("detail_field_count") >= intent.min_detail_fields
    if intent.min_average_rating is not None:
        cond &= pl.col("average_rating") >= intent.min_average_rating
    if intent.min_rating_number is not None:
        cond &= pl.col("rating_number") >= intent.min_rating_number
    return eligibility.filter(cond)


def test_every_eligible_category_gets_candidates(eligibility, intents):
    intent = intents["product_search"]
    categories = set(eligible(eligibility, intent).get_column("main_category"))
    result = sample_candidates(eligibility, intent, len(categories), seed=0)
    assert set(result.by_category) == categories
    assert set(result.by_category.values()) == {1}


def test_categories_get_equal_shares_while_they_last(eligibility, intents):
    intent = intents["product_search"]
    pool = eligible(eligibility, intent)
    sizes = dict(pool.group_by("main_category").len().iter_rows())
    per = min(sizes.values())
    result = sample_candidates(eligibility, intent, per * len(sizes), seed=0)
    assert set(result.by_category.values()) == {per}


def test_products_without_a_category_form_their_own_stratum(sample_catalog, intents):
    # The bundled sample has 60 real products with no main_category (and no field-table details,
    # so the detail minimum is lifted here).
    eligibility = eligibility_columns(sample_catalog.products, sample_catalog.table)
    intent = dataclasses.replace(intents["product_search"], min_detail_fields=0)
    result = sample_candidates(eligibility, intent, 100, seed=0)
    assert result.by_category.get(NO_CATEGORY, 0) > 0


def test_rating_quality_candidates_meet_its_thresholds(rich_catalog, eligibility, intents):
    result = sample_candidates(eligibility, intents["rating_quality"], 200, seed=0)
    rows = eligibility.filter(pl.col("parent_asin").is_in(result.candidates))
    assert rows.height == len(result.candidates) > 0
    assert rows.get_column("average_rating").min() >= 4.0
    assert rows.get_column("rating_number").min() >= 20
    assert rows.get_column("detail_field_count").min() >= 5


def test_eligible_count_equals_a_direct_filter(eligibility, intents):
    intent = intents["rating_quality"]
    assert sample_candidates(eligibility, intent, 1, seed=0).eligible == eligible(eligibility, intent).height


def test_the_same_seed_gives_the_same_candidates(eligibility, intents):
    a = sample_candidates(eligibility, intents["product_search"], 40, seed=11)
    b = sample_candidates(eligibility, intents["product_search"], 40, seed=11)
    assert a.candidates == b.candidates


def test_a_different_seed_gives_different_candidates(eligibility, intents):
    a = sample_candidates(eligibility, intents["product_search"], 40, seed=11)
    b = sample_candidates(eligibility, intents["product_search"], 40, seed=12)
    assert a.candidates != b.candidates


def test_excluded_products_are_never_sampled(eligibility, intents):
    first = sample_candidates(eligibility, intents["product_search"], 40, seed=0)
    again = sample_candidates(eligibility, intents["product_search"], 40, seed=0, exclude=set(first.candidates))
    assert not set(first.candidates) & set(again.candidates)


def test_categories_restrict_the_pool(eligibility, intents):
    result = sample_candidates(eligibility, intents["product_search"], 50, seed=0, categories=["Computers"])
    assert set(result.by_category) == {"Computers"}


def test_asking_for_more_than_eligible_reports_a_shortfall(eligibility, intents):
    intent = intents["feature_combination"]
    n = eligible(eligibility, intent).height
    result = sample_candidates(eligibility, intent, n + 7, seed=0)
    assert (len(result.candidates), result.shortfall) == (n, 7)


def test_detail_field_count_counts_distinct_canonical_fields(rich_catalog, eligibility):
    # B012I6UBXY: RAM and Screen Size appear under two raw keys each; Form Factor, OS, Color, Brand,
    # Connectivity Technology (two raw keys) are the other fields of the table.
    row = eligibility.filter(pl.col("parent_asin") == "B012I6UBXY").to_dicts()[0]
    fields = {d["key"] for d in rich_catalog.product("B012I6UBXY")["details"]
              if d["key"] in rich_catalog.table.fields and d["value"].strip()}
    assert row["detail_field_count"] == len(fields) == 7
