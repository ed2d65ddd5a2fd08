"""Clarification replies (stages/replies.py): one natural sentence per field and value kind, values from real slots.

The values are those of real clarification rubrics in the shared-data split (Amazon details of toys,
phone cases, bottles and laptops); each reply must read like speech and still reveal its value.
"""

from __future__ import annotations

import random

import pytest

from ecombench.stages.phrasing import slot_reply
from ecombench.stages.replies import (
    DEFAULT_RESPONSE,
    age_phrase,
    reads_as_adjective,
    reply_states,
    speech_case,
    value_reply,
)
from ecombench.stages.value_phrases import attribute_phrase
from ecombench.tables.fields import load_field_table

TABLE = load_field_table()


def _reply(field, value, type_="attribute_match"):
    return slot_reply({"field": field, "type": type_, "expected_value": value}, load_field_table())


@pytest.mark.parametrize("value, reply", [
    ("6 - 6 months", "It's for a 6-month-old."),
    ("12 - 12 years", "It's for a 12-year-old."),
    ("4 - 12 years", "It's for ages 4 to 12."),
    ("15 years and up", "It's for ages 15 and up."),
    ("3 months and up", "It's for babies 3 months and older."),
])
def test_a_recommended_age_reads_as_an_age(value, reply):
    assert _reply("details.Manufacturer recommended age", value) == reply
    assert reply_states(reply, value, "details.Manufacturer recommended age")


@pytest.mark.parametrize("value, reply", [
    ("48 months to 144 months", "It's for ages 4 to 12."),
    ("12 Up", "It's for ages 12 and up."),
    ("13+", "It's for ages 13 and up."),
    ("Kid", "It's for a kid."),
    ("Adult", "It's for an adult."),
    # a group said bare: "The person using it is a kids." was read unnatural (negative_constraint-e3c1661b128d)
    ("Kids", "It's for kids."),
    ("Toddlers", "It's for toddlers."),
])
def test_an_age_range_reads_as_an_age_or_a_person(value, reply):
    assert _reply("details.Age Range (Description)", value) == reply
    assert reply_states(reply, value, "details.Age Range (Description)")


@pytest.mark.parametrize("field, value, reply", [
    ("details.Screen Size", "10.1 Inches", "I'd like a 10.1-inch screen."),
    ("details.Capacity", "3.4 Fluid Ounces", "It needs to hold 3.4 fluid ounces."),
    ("details.Voltage", "12 Volts", "It has to run on 12 volts."),
    ("details.RAM", "8 GB", "I need 8 GB of RAM."),
    ("details.Hard Drive", "250 GB", "I need 250 GB of storage."),
    ("details.Size", "6 x 9-inches", "It should measure 6 x 9-inches."),
])
def test_a_measure_reads_with_its_unit(field, value, reply):
    assert _reply(field, value) == reply
    assert reply_states(reply, value, field)


@pytest.mark.parametrize("field, value, reply", [
    ("details.Material", "Iron", "I'd like it made of iron."),
    ("details.Material", "TPU", "I'd like it made of TPU."),
    ("details.Special Feature", "Shock-Absorbent", "It has to be shock-absorbent, that matters most."),
    ("details.Recommended Uses For Product", "Hunting", "I'll mainly use it for hunting."),
    ("details.Connectivity Technology", "Wi-Fi", "It needs to connect over Wi-Fi."),
    ("details.Operating System", "Windows 10", "It has to work with Windows 10."),
    ("details.Connector Type", "barrel connector", "I need a barrel connector."),
    ("details.RAM", "16 GB DDR4", "I need 16 GB DDR4 RAM."),
    ("details.Size", "1 Count (Pack of 12)", "I need 1 count, pack of 12."),
])
def test_a_plain_value_reads_in_speech_case(field, value, reply):
    assert _reply(field, value) == reply
    assert reply_states(reply, value, field)


def test_a_numeric_bound_reads_as_a_limit():
    assert (_reply("price", {"max": 10.0, "max_inclusive": True}, "numeric_range")
            == "I can spend no more than $10 on it.")
    assert (_reply("rating_number", {"min": 100.0, "min_inclusive": True}, "numeric_range")
            == "I'd like something lots of people have tried, with at least 100 ratings.")


def test_excluded_values_read_as_an_exception_and_keep_their_capitals():
    reply = _reply("details.Connector Type", ["USB Type A", "USB Type C"], "negative_attribute")
    assert reply == "Any connector type is fine except USB type A or USB type C."
    assert reply_states(reply, ["USB Type A", "USB Type C"], "details.Connector Type")


def test_speech_case_keeps_acronyms_codes_and_names():
    assert speech_case("Faux Leather") == "faux leather"
    assert speech_case("802.11n") == "802.11n" and speech_case("Bluetooth") == "Bluetooth"


def test_an_age_that_is_no_number_has_no_age_phrase():
    assert age_phrase("Kid") is None and age_phrase("Toddler") is None


def test_the_default_reply_invites_a_specific_question_and_never_claims_nothing_is_left():
    assert "specific" in DEFAULT_RESPONSE and "preference" not in DEFAULT_RESPONSE
    assert "nothing" not in DEFAULT_RESPONSE and "else" not in DEFAULT_RESPONSE


def test_no_reply_of_the_real_split_states_a_raw_age_range(full_build):
    import re

    raw = re.compile(r"\d+\s*-\s*\d+\s*(?:months|years)|\d+ months to \d+ months", re.IGNORECASE)
    replies = [s["user_response"] for t in full_build.tasks for s in t["clarification_script"]["clarification_slots"]]
    assert replies and not [r for r in replies if raw.search(r)]
    assert all(t["clarification_script"]["default_response"] == DEFAULT_RESPONSE for t in full_build.tasks)


@pytest.mark.parametrize("field, value", [
    ("details.Material", "Faux Leather"), ("details.Special Feature", "Shock-Absorbent"),
    ("details.Screen Size", "15.6 Inches"), ("details.Manufacturer recommended age", "4 - 12 years"),
    ("details.Product Care Instructions", "Hand Wash Only"), ("details.Compatible Phone Models", "iPhone 8"),
])
def test_a_seeded_generator_draws_several_reply_forms_each_stating_the_value(field, value):
    import random

    rubric = {"field": field, "type": "attribute_match", "expected_value": value}
    replies = {slot_reply(rubric, load_field_table(), random.Random(seed)) for seed in range(24)}
    assert len(replies) >= 2
    assert all(reply_states(r, value, field) for r in replies)


@pytest.mark.parametrize("field, bound", [
    ("price", {"max": 25.0, "max_inclusive": True}), ("average_rating", {"min": 4.5, "min_inclusive": True}),
    ("rating_number", {"min": 100.0, "min_inclusive": True}),
])
def test_bound_reply_forms_all_state_the_bound_with_its_direction(field, bound):
    import random

    from ecombench.lemmas import states_bound

    rubric = {"field": field, "type": "numeric_range", "expected_value": bound}
    replies = {slot_reply(rubric, load_field_table(), random.Random(seed)) for seed in range(24)}
    assert len(replies) >= 3
    assert all(states_bound(r, field, bound) for r in replies)


def test_a_profile_reply_points_to_the_profile_or_states_the_value_never_denies():
    import random

    from ecombench.stages.replies import profile_reply

    rubric = {"id": "r3", "field": "details.Compatible Phone Models", "type": "attribute_match",
              "expected_value": "iPhone 8", "info_source": "persona"}
    table = load_field_table()
    seen = {profile_reply(rubric, table, random.Random(seed), slot_reply(rubric, table)) for seed in range(16)}
    assert {mode for mode, _ in seen} == {"points", "states"}
    for mode, reply in seen:
        assert "profile" in reply or mode == "states"
        assert ("iPhone 8" in reply) == (mode == "states")
        assert "don't have" not in reply


# Values of real shared-data tasks whose replies misfit their form ("I really need it to be built-in screen
# protector.", "It has to be card slots, that matters most.", "I'd like it to use wired.", "I want to be able to
# dishwasher safe it." in negative_constraint-019b2444e9d2, "I only buy things I can do not bleach." in
# knowledge_reasoning-7c55521c2c17); "Wipe with Dry Cloth" is the shared catalog's fifth care label.
@pytest.mark.parametrize("field, value, wrong", [
    ("details.Special Feature", "Built-in Screen Protector", ("to be built-in", "be a built-in")),
    ("details.Special Feature", "Card Slots", ("be card slots",)),
    ("details.Special Feature", "Kickstand", ("be kickstand", "be a kickstand", "have: kickstand", "with kickstand")),
    ("details.Special Feature", "Microphone", ("be microphone", "be a microphone")),
    ("details.Special Feature", "Durable", ("have: durable", "with durable", "have durable", "is durable.")),
    ("details.Special Feature", "Waterproof", ("have: waterproof", "with waterproof", "have waterproof")),
    ("details.Connectivity Technology", "Wired", ("use wired", "over wired", "Wired is how")),
    ("details.Connectivity Technology", "Wireless", ("use wireless", "over wireless", "Wireless is how")),
    ("details.Connectivity Technology", "Bluetooth", ("it Bluetooth.", "be Bluetooth")),
    ("details.Product Care Instructions", "Dishwasher Safe", ("can dishwasher safe", "safe it", "to dishwasher safe")),
    ("details.Product Care Instructions", "Hand Wash Only", ("can hand wash only", "to hand wash only", "only it")),
    ("details.Product Care Instructions", "Do Not Bleach", ("can do not bleach", "to do not bleach", "bleach it")),
    ("details.Product Care Instructions", "Wipe with Dry Cloth", ("cloth it",)),
    # the shared build's replies "It's mostly for car.", "It's mostly for outdoor.", "The closure should be buckle.",
    # "I find sheet easiest to use.", "I'd go for a basic case one." (review of the shared build, 2026-12-06)
    ("details.Recommended Uses For Product", "Car", ("for car", "it for car")),
    ("details.Recommended Uses For Product", "Garden", ("for garden",)),
    ("details.Recommended Uses For Product", "Outdoor", ("for outdoor.", "outdoor, mainly")),
    ("details.Recommended Uses For Product", "Home", ("for home.", "home, mainly")),
    ("details.Recommended Uses For Product", "Travel", ("the travel", "travel use")),
    ("details.Closure", "Buckle", ("be buckle",)),
    ("details.Item Form", "Sheet", ("find sheet",)),
    ("details.Form Factor", "Basic Case", ("case one",)),
    # "It's a spring gift." of a garden flag, "It's a coffee shop gift." of a pillow cover (reviews of the shared
    # build, 2026-12-07): an occasion that is no event one gives presents for is no gift
    ("details.Occasion", "Spring", ("gift", "present", "celebration", "a spring")),
    ("details.Occasion", "Coffee Shop", ("gift", "present", "celebration")),
    ("details.Occasion", "Picnic", ("gift", "present", "for picnic")),
    # "I'm buying it as a birthday present." of party supplies, "... a Thanksgiving present." of a sofa's pillow
    # covers (review of the shared build, session 17): a celebration, not a gift
    ("details.Occasion", "Birthday", ("for birthday", "gift", "present")),
    ("details.Occasion", "Thanksgiving", ("gift", "present")),
    ("details.Occasion", "Everyday", ("gift", "present", "celebration")),  # a word ending in "day" is no holiday
    # "One thing it really must have: an easy to install." (review of the shared build, session 14)
    ("details.Special Feature", "Easy to Install", ("an easy", "have: easy", "with easy")),
    # "I really need it to have a compact." (review of the shared build, session 17)
    ("details.Special Feature", "Compact", ("a compact", "with compact")),
    # "The shape should be heart." of a poodle ornament, "Something with funny on it." of a mug (reviews of the
    # shared build, session 16): a shape named by a noun, a theme that describes
    ("details.Shape", "Heart", ("be heart", "a heart one", "heart in shape")),
    ("details.Theme", "Funny", ("with funny", "a funny on")),
])
def test_every_reply_form_drawn_fits_the_kind_of_value(field, value, wrong):
    replies = {value_reply(field, value, TABLE, random.Random(s)) for s in range(30)}
    assert len(replies) >= 3
    assert [r for r in replies if any(w in r for w in wrong) or not reply_states(r, value, field)] == []


def test_a_feature_a_product_has_takes_an_article_when_countable():
    assert reads_as_adjective("Shock-Absorbent") and reads_as_adjective("Microwave Safe")
    assert not reads_as_adjective("Card Slots") and not reads_as_adjective("Wireless Charging")
    said = {value_reply("details.Special Feature", "Kickstand", TABLE, random.Random(s)) for s in range(20)}
    assert all("a kickstand" in r for r in said)
    said = {value_reply("details.Special Feature", "Drop Protection", TABLE, random.Random(s)) for s in range(20)}
    assert all("a drop" not in r for r in said)


@pytest.mark.parametrize(("value", "said"), [
    # the shared catalog's Department spellings of running shoes' titles and labels
    ("Women", "women's"), ("Womens", "women's"), ("mens", "men's"), ("Men's", "men's"), ("Girls", "girls'"),
])
def test_a_department_is_said_as_whose_range_it_is(value, said):
    # a reviewer read "It should be from the women range." as no shopper's English
    table = load_field_table()
    for seed in range(5):
        reply = value_reply("details.Department", value, table, random.Random(seed))
        assert said in reply and reply_states(reply, value, "details.Department")
    assert attribute_phrase("details.Department", value, table) == f"from the {said} department"


def test_a_profile_reply_calls_a_watch_listed_as_a_phone_model_my_device():
    # knowledge_reasoning-e3c337a220b4 (YAXIN sport bands "Compatible with Fitbit Sense/Fitbit Versa 3"): the facts
    # file Fitbit Versa 3 as a compatible phone model, and a reviewer read "I saved my phone model there." as no
    # shopper's reply for a Fitbit band
    import random

    from ecombench.stages.replies import profile_reply

    table = load_field_table()
    for value, name in (("Fitbit Versa 3", "my device"), ("iPhone 8", "my phone model")):
        rubric = {"id": "r5", "field": "details.Compatible Phone Models", "type": "attribute_match",
                  "expected_value": value, "info_source": "persona"}
        points = {reply for seed in range(16)
                  for mode, reply in [profile_reply(rubric, table, random.Random(seed), slot_reply(rubric, table))]
                  if mode == "points"}
        assert points and all(name in reply for reply in points)
