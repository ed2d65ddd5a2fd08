"""Rubric checkers on real products (validation/checkers.py)."""

from __future__ import annotations

import pytest

from ecombench.rubrics.checkers import CHECKERS, check, failing_rubrics, in_bound


def rubric(type_, field, value, rid="r1"):
    return {"id": rid, "type": type_, "field": field, "expected_value": value, "info_source": "query",
            "description": ""}


@pytest.fixture(scope="module")
def tablet(rich_catalog):
    # B012I6UBXY: "Samsung Galaxy Tab 4 4G LTE Tablet, Black 8-Inch 16GB (Verizon Wireless)", $489.95,
    # raw keys "OS" (Android 4.4 KitKat), "Wireless communication technologies" and "Connectivity technologies".
    return rich_catalog.product("B012I6UBXY")


@pytest.fixture(scope="module")
def filter_20(rich_catalog):
    # B07L23PWNG: a Samsung microwave grease filter priced exactly $20.00, 4.3 stars from 7 ratings.
    return rich_catalog.product("B07L23PWNG")


def test_registry_has_the_three_code_checkable_types():
    assert {"attribute_match", "numeric_range", "entity_match"} <= set(CHECKERS)


# ---------------------------------------------------------------- attribute_match

def test_attribute_match_passes_on_a_whole_word_of_the_value(tablet, rich_catalog):
    assert check(rubric("attribute_match", "details.Color", "Black"), tablet, rich_catalog.table).satisfied


def test_attribute_match_fails_on_another_value(tablet, rich_catalog):
    v = check(rubric("attribute_match", "details.Color", "White"), tablet, rich_catalog.table)
    assert v.status == "not_satisfied" and "White" in v.why


def test_attribute_match_fails_when_the_product_lacks_the_field(tablet, rich_catalog):
    v = check(rubric("attribute_match", "details.Material", "Plastic"), tablet, rich_catalog.table)
    assert v.status == "not_satisfied" and "no Material" in v.why


def test_a_raw_os_key_satisfies_an_operating_system_rubric(tablet, rich_catalog):
    assert [d["raw_key"] for d in tablet["details"] if d["key"] == "Operating System"] == ["OS"]
    assert check(rubric("attribute_match", "details.Operating System", "Android"), tablet, rich_catalog.table).satisfied


def test_every_alias_of_a_field_is_checked(tablet, rich_catalog):
    # "Wireless" is only under the raw key "Connectivity technologies", which is Connectivity Technology. ("GPS",
    # only under "Wireless communication technologies", is a label no other product of the snapshot carries: no
    # product fact, so the page facts the checker reads do not hold it.)
    assert check(rubric("attribute_match", "details.Connectivity Technology", "Wireless"), tablet,
                 rich_catalog.table).satisfied


def test_attribute_match_is_whole_token(sample_catalog):
    # B082XT1F9H (embroidered hummingbird curtains), Color "White,pink,purple": "ink" is inside "pink" but is
    # not one of its words.
    product = sample_catalog.product("B082XT1F9H")
    assert check(rubric("attribute_match", "details.Color", "pink"), product, sample_catalog.table).satisfied
    assert not check(rubric("attribute_match", "details.Color", "ink"), product, sample_catalog.table).satisfied


# ---------------------------------------------------------------- numeric_range

@pytest.mark.parametrize(("bound", "status"), [
    ({"max": 20.0, "max_inclusive": True}, "satisfied"),
    ({"max": 20.0, "max_inclusive": False}, "not_satisfied"),
    ({"min": 20.0, "min_inclusive": True}, "satisfied"),
    ({"min": 20.0, "min_inclusive": False}, "not_satisfied"),
    ({"min": 10.0, "max": 25.0}, "satisfied"),
    ({"max": 15.0}, "not_satisfied"),
])
def test_numeric_range_at_the_boundary_follows_inclusiveness(filter_20, rich_catalog, bound, status):
    assert check(rubric("numeric_range", "price", bound), filter_20, rich_catalog.table).status == status


def test_numeric_range_on_a_rating(tablet, rich_catalog):
    assert check(rubric("numeric_range", "average_rating", {"min": 3.5}), tablet, rich_catalog.table).satisfied
    assert not check(rubric("numeric_range", "average_rating", {"min": 4.0}), tablet, rich_catalog.table).satisfied


def test_numeric_range_fails_when_the_value_is_missing(filter_20, rich_catalog):
    product = dict(filter_20, price=None)  # real product, price removed
    v = check(rubric("numeric_range", "price", {"max": 20.0}), product, rich_catalog.table)
    assert v.status == "not_satisfied" and "no price" in v.why


def test_in_bound_missing_inclusive_flags_mean_inclusive():
    assert in_bound(20.0, {"min": 20.0, "max": 20.0})


# ---------------------------------------------------------------- entity_match

def test_entity_match_folds_plural_category_to_singular_title(tablet, rich_catalog):
    assert check(rubric("entity_match", "title", "Tablets"), tablet, rich_catalog.table).satisfied


def test_entity_match_fails_when_a_word_is_missing(tablet, rich_catalog):
    v = check(rubric("entity_match", "title", "Laptops"), tablet, rich_catalog.table)
    assert v.status == "not_satisfied" and "laptop" in v.why


def test_entity_match_needs_every_content_word(filter_20, rich_catalog):
    assert check(rubric("entity_match", "title", "Grease Filters"), filter_20, rich_catalog.table).satisfied
    assert not check(rubric("entity_match", "title", "Air Filters"), filter_20, rich_catalog.table).satisfied


# ---------------------------------------------------------------- registry

@pytest.mark.parametrize("type_", ["store_match", "no_such_type"])
def test_a_type_without_a_checker_is_unscorable(tablet, rich_catalog, type_):
    v = check(rubric(type_, "details.Color", "Black"), tablet, rich_catalog.table)
    assert v.status == "unscorable" and type_ in v.why


def test_failing_rubrics_lists_every_failure_with_its_verdict(tablet, rich_catalog):
    rubrics = [rubric("attribute_match", "details.Color", "Black", "r1"),
               rubric("attribute_match", "details.Color", "White", "r2"),
               rubric("review_opinion", "details.Color", "sturdy", "r3")]
    assert [(f["rubric_id"], f["status"]) for f in failing_rubrics(rubrics, tablet, rich_catalog.table)] == [
        ("r2", "not_satisfied"), ("r3", "unscorable")]
