"""Checkers of negative_attribute, budget_match and review_opinion (validation/checkers.py) on real products."""

from __future__ import annotations

import pytest

from ecombench.catalog.reviews import opinion_overlap, review_text
from ecombench.rubrics.checkers import CHECKERS, UNSCORABLE_OVERLAP, check
from ecombench.text import contains_phrase

# Real products of the shared catalog (full_catalog) and the detail values the tests rely on.
GPS = "B002RL8H1Y"           # Garmin nuvi 1450, Color "Grey"
BLUE_GREEN = "B09QM3617J"    # iPhone 12 case, Color "Blue-green"
BLUE_SPACE_GREEN = "B0B8YMS9B2"  # iPhone 8 Plus wallet case, Color "Blue Green"
NAVY = "B08QN2HVKV"          # Revvl 5G phone case, Color "Navy Blue"
MACBOOK = "B09NS19VWF"       # MacBook Pro 14, Color "Space Gray"
TABLET = "B012I6UBXY"        # Galaxy Tab 4: raw key "OS" = "Android 4.4 KitKat"; no Material
CLOCK = "B002HXPY4K"         # Rooster wall clock, $19.99
KEYBOARD = "B08CXN6MR8"      # MageGee keyboard combo: 10 reviews ("Well worth the purchase."), no details


def rubric(type_, field, value, rid="r1"):
    return {"id": rid, "type": type_, "field": field, "expected_value": value, "info_source": "query",
            "description": ""}


def colour(catalog, asin: str) -> list[str]:
    return [d["value"] for d in catalog.product(asin)["details"] if d["key"] == "Color"]


def verdict(catalog, asin, r, reviews=False):
    product = catalog.reviewed_product(asin) if reviews else catalog.product(asin)
    return check(r, product, catalog.table)


def test_the_registry_has_a_checker_for_each_new_type():
    assert {"negative_attribute", "budget_match", "review_opinion"} <= set(CHECKERS)


# ---------------------------------------------------------------- negative_attribute

def test_negative_passes_when_the_products_colour_is_none_of_the_excluded(full_catalog):
    assert colour(full_catalog, NAVY) == ["Navy Blue"]
    assert verdict(full_catalog, NAVY, rubric("negative_attribute", "details.Color", ["Red", "Green"])).satisfied


def test_negative_fails_when_the_products_colour_is_excluded(full_catalog):
    v = verdict(full_catalog, GPS, rubric("negative_attribute", "details.Color", ["Grey", "Red"]))
    assert v.status == "not_satisfied" and "Grey" in v.why


@pytest.mark.parametrize(("asin", "value", "excluded"), [
    (BLUE_GREEN, "Blue-green", "Blue"),
    (BLUE_GREEN, "Blue-green", "Green"),
    (BLUE_SPACE_GREEN, "Blue Green", "Blue"),
    (BLUE_SPACE_GREEN, "Blue Green", "Green"),
    (NAVY, "Navy Blue", "Blue"),
])
def test_negative_fails_when_an_excluded_colour_is_part_of_a_multi_word_colour(full_catalog, asin, value, excluded):
    assert colour(full_catalog, asin) == [value]
    v = verdict(full_catalog, asin, rubric("negative_attribute", "details.Color", [excluded, "Red"]))
    assert v.status == "not_satisfied"


def test_negative_catches_another_spelling_of_an_excluded_colour(full_catalog):
    assert colour(full_catalog, GPS) == ["Grey"]
    v = verdict(full_catalog, GPS, rubric("negative_attribute", "details.Color", ["Gray", "Red"]))
    assert v.status == "not_satisfied"


def test_negative_catches_another_spelling_inside_a_multi_word_colour(full_catalog):
    assert colour(full_catalog, MACBOOK) == ["Space Gray"]
    v = verdict(full_catalog, MACBOOK, rubric("negative_attribute", "details.Color", ["Grey", "Silver"]))
    assert v.status == "not_satisfied"


def test_negative_is_checked_through_a_raw_key_alias(full_catalog):
    # The tablet's operating system sits under the raw key "OS".
    v = verdict(full_catalog, TABLET, rubric("negative_attribute", "details.Operating System", ["Android", "iOS"]))
    assert v.status == "not_satisfied"


def test_negative_on_a_field_the_product_lacks_is_not_satisfied(full_catalog):
    v = verdict(full_catalog, TABLET, rubric("negative_attribute", "details.Material", ["Metal", "Wood"]))
    assert v.status == "not_satisfied" and "no Material" in v.why


def test_negative_is_whole_token(full_catalog):
    # "Re" and "Gre" are pieces of words, never whole tokens of "Grey".
    assert verdict(full_catalog, GPS, rubric("negative_attribute", "details.Color", ["Re", "Gre"])).satisfied


# ---------------------------------------------------------------- budget_match

def budget(max_total, off=5.0, threshold=15.0):
    return {"max_total": max_total, "voucher": {"scenario": "simple", "coupons": [
        {"voucher_type": "shop", "threshold": threshold, "discount_type": "fixed", "face_value": off,
         "percent": None, "cap": None}]}}


def test_budget_passes_when_the_price_after_the_voucher_is_within_it(full_catalog):
    assert full_catalog.product(CLOCK)["price"] == 19.99
    assert verdict(full_catalog, CLOCK, rubric("budget_match", "budget", budget(15.0))).satisfied


def test_budget_fails_when_the_price_after_the_voucher_exceeds_it(full_catalog):
    v = verdict(full_catalog, CLOCK, rubric("budget_match", "budget", budget(14.0)))
    assert v.status == "not_satisfied" and "14.99" in v.why


def test_budget_fails_when_the_price_does_not_reach_the_voucher(full_catalog):
    # $19.99 does not reach a $20 threshold, so it stays over a $15 budget.
    v = verdict(full_catalog, CLOCK, rubric("budget_match", "budget", budget(15.0, threshold=20.0)))
    assert v.status == "not_satisfied"


# ---------------------------------------------------------------- review_opinion

def test_review_opinion_passes_when_a_review_states_the_phrase(full_catalog):
    v = verdict(full_catalog, KEYBOARD, rubric("review_opinion", "review", "well worth the purchase"), reviews=True)
    assert v.satisfied


def test_review_opinion_passes_on_a_phrase_from_a_review_title(full_catalog):
    # "nice but mouse dont work" is a real review title of the keyboard.
    v = verdict(full_catalog, KEYBOARD, rubric("review_opinion", "review", "nice but mouse dont work"), reviews=True)
    assert v.satisfied


def test_review_opinion_fails_when_no_review_comes_close(full_catalog):
    v = verdict(full_catalog, KEYBOARD, rubric("review_opinion", "review", "battery lasts all week"), reviews=True)
    assert v.status == "not_satisfied"


def test_review_opinion_is_unscorable_when_a_review_shares_most_words_but_not_the_phrase(full_catalog):
    phrase = "worth the purchase well"
    reviews = full_catalog.reviewed_product(KEYBOARD)["reviews"]
    assert not any(contains_phrase(review_text(r), phrase) for r in reviews)
    assert max(opinion_overlap(phrase, review_text(r)) for r in reviews) >= UNSCORABLE_OVERLAP
    v = verdict(full_catalog, KEYBOARD, rubric("review_opinion", "review", phrase), reviews=True)
    assert v.status == "unscorable"


def test_review_opinion_is_unscorable_when_reviews_were_not_loaded(full_catalog):
    product = full_catalog.product(KEYBOARD)
    assert "reviews" not in product
    v = check(rubric("review_opinion", "review", "well worth the purchase"), product, full_catalog.table)
    assert v.status == "unscorable"


def test_review_opinion_on_a_product_without_reviews_is_not_satisfied(full_catalog):
    product = full_catalog.reviewed_product(CLOCK)
    assert product["reviews"] == []
    v = check(rubric("review_opinion", "review", "well worth the purchase"), product, full_catalog.table)
    assert v.status == "not_satisfied"
