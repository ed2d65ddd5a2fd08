"""When a text states a value (stages/lemmas.py): paraphrases accepted, drift refused (issue #14's quoted cases)."""

from __future__ import annotations

import pytest

from ecombench.lemmas import stated_count, states_bound, states_cue, states_phrase


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


# Queries Qwen2.5-Coder-1.5B-Instruct wrote for real targets of meta_electronics_beauty_office.jsonl, each
# stating its implicit requirement's cue in its own words (stage 7 rejected all four before, issue #14).
@pytest.mark.parametrize("asin, query, cue", [
    ("B07LB62ZD5", "I'm looking for screen protectors that are rated at least 3 stars, cost no more than $10, "
     "and keys in the same pocket won't mark.", "that keys in the same pocket won't mark"),
    ("B07YNWBJQS", "I'm looking for cases that have at least 10 ratings, match the sky-coloured team shirts we "
     "wear, and only wrap the edges so I can still see the back of my phone.",
     "that matches the sky-coloured team shirts we wear"),
    ("B094FKW96K", "I'm looking for cases that guard only the rim and corners and leave the back bare, and they "
     "should cost no more than $15.", "that guards only the rim and corners and leaves the back bare"),
    ("B083SFVKB6", "I'm looking for cases that only wrap the edges so I can still see the back of my phone, and "
     "they should survive being knocked off the table onto a tiled floor, and they should have at least 20 "
     "ratings.", "that survives being knocked off the table onto a tiled floor"),
])
def test_a_cue_in_the_models_own_words_is_stated(asin, query, cue):
    assert states_cue(query, cue), asin


@pytest.mark.parametrize("query, cue", [
    # B08B8HDQB2: the model left the form-factor cue out; its words elsewhere do not make it up
    ("I'm looking for a case that also holds my ID so I can leave my wallet at home, and it should be made of "
     "Faux Leather.", "whose front closes over the screen when I put it in my bag"),
    # the value, not the cue
    ("I'm looking for cases in sky blue.", "that matches the sky-coloured team shirts we wear"),
    ("a case that guards the corners", "that guards only the rim and corners and leaves the back bare"),  # part only
])
def test_a_cue_left_out_or_cut_short_is_not_stated(query, cue):
    assert not states_cue(query, cue)
