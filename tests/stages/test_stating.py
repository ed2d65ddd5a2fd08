"""When a text states a value (stages/lemmas.py): paraphrases accepted, drift refused (issue #14's quoted cases)."""

from __future__ import annotations

import pytest

from stages.lemmas import stated_count, states_bound, states_phrase


@pytest.mark.parametrize("text, value", [
    ("I'd like it to be mounted on a wall.", "Wall Mount"),   # the small model's reply, rejected before
    ("a clock that mounts to the wall", "Wall Mount"),
    ("I need a case made of faux leather.", "Faux Leather"),
    ("something for my children", "Children"),
    ("it fits true to size", "true to size"),
])
def test_a_paraphrase_holding_the_content_words_states_the_value(text, value):
    assert states_phrase(text, value)


@pytest.mark.parametrize("text, value", [
    ("it runs a size small", "true to size"),      # shares "size" only
    ("a wall clock with a magnet on its back so it can hold a mount", "Wall Mount Bracket"),
    ("a mount; I'll decide where later. It should be dark grey. The wall behind is white and bare", "Wall Mount"),
    ("rated 4.5 stars", "4.5 ratings"),            # numbers only count next to their own unit
])
def test_drift_or_words_far_apart_do_not_state_the_value(text, value):
    assert not states_phrase(text, value)


def test_a_value_stated_twice_counts_twice():
    assert stated_count("wall mounted, and mounted on the wall", "Wall Mount") == 2


@pytest.mark.parametrize("text", ["at least 500 reviews", "at least 500 ratings", "500 or more reviews",
                                  "well rated (4 stars or more) with plenty of reviews (at least 500)"])
def test_a_count_of_ratings_is_stated_as_reviews_too(text):
    assert states_bound(text, "rating_number", {"min": 500.0, "min_inclusive": True})


@pytest.mark.parametrize("text, stated", [
    ("rated at least 4 stars", True), ("4 stars or higher", True), ("4 stars or better", True),
    ("rated no more than 4 stars", False),   # the other direction
    ("more than 4 stars", False),            # exclusive: 4.0 itself would not do
    ("4 ratings or more", False),            # the other unit
])
def test_a_rating_floor_in_any_wording_but_with_its_direction_and_unit(text, stated):
    assert states_bound(text, "average_rating", {"min": 4.0, "min_inclusive": True}) is stated


@pytest.mark.parametrize("text, inclusive, exclusive", [
    ("I'd like to keep it to $25 or under.", True, False), ("My budget is up to $25.", True, False),
    ("It should cost no more than $25.", True, False), ("under $25", False, True), ("more than $25", False, False),
])
def test_a_price_cap_keeps_its_inclusiveness(text, inclusive, exclusive):
    assert states_bound(text, "price", {"max": 25.0, "max_inclusive": True}) is inclusive
    assert states_bound(text, "price", {"max": 25.0, "max_inclusive": False}) is exclusive
