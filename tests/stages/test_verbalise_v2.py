"""template-v2 (stages/verbalise_v2.py): queries that name the product type and read like a shopper's, and
the stage-7 checks that accept them (issue #14)."""

from __future__ import annotations

import random
import re

import pytest

from ecombench.catalog.type_vocabulary import TypeVocabulary
from ecombench.schemas.models import Rubric
from ecombench.stages.product_naming import natural_type
from ecombench.stages.stating import product_type_drift
from ecombench.stages.verbalise_v2 import write_query_v2
from ecombench.tables.fields import load_field_table
from ecombench.validation.leakage import check_leakage
from ecombench.validation.semantic import check_sources
from ecombench.validation.shopper_text import phrase_counts

TABLE = load_field_table()
# The product nouns these queries name, as a catalog's type vocabulary would hold them.
TYPES = TypeVocabulary(nouns=frozenset({"headphone", "cable", "pad", "adapter", "case", "phone"}),
                       modifiers=frozenset({"audio", "ear", "phone"}))


def rubric(rid: str, type_: str, field: str, value, source: str = "query") -> Rubric:
    return Rubric(id=rid, type=type_, field=field, expected_value=value, info_source=source, description="d")


# The rubrics of real accepted tasks of the shared-data split (template-v1 wrote "I'm looking for adapters
# with Wall Mount mounting. It must have at least 10 ratings and be rated at least 4 stars." and
# "Please find me a mice in Black.").
ADAPTER = [rubric("r1", "entity_match", "title", "Adapters"),
           rubric("r2", "attribute_match", "details.Mounting Type", "Wall Mount"),
           rubric("r3", "numeric_range", "rating_number", {"min": 10.0, "min_inclusive": True}),
           rubric("r4", "numeric_range", "average_rating", {"min": 4.0, "min_inclusive": True}),
           rubric("r5", "numeric_range", "price", {"max": 25.0, "max_inclusive": True})]
MOUSE = [rubric("r1", "entity_match", "title", "Mice"),
         rubric("r2", "attribute_match", "details.Color", "Black"),
         rubric("r3", "negative_attribute", "details.Connectivity Technology", ["Bluetooth", "USB"]),
         rubric("r4", "attribute_match", "details.Manufacturer recommended age", "6 - 6 years")]


@pytest.mark.parametrize("entity, said", [("Mice", "a mouse"), ("Wall Clocks", "a wall clock"), ("Earbuds", "earbuds"),
                                          ("VGA Cables", "a VGA cable"), ("Adapters", "an adapter"),
                                          ("Women's", "a women's")])
def test_the_product_type_is_named_in_natural_form(entity, said):
    assert natural_type(entity) == said


@pytest.mark.parametrize("seed", range(6))
def test_every_query_names_its_product_type_and_never_a_product(seed):
    for rubrics, noun in ((ADAPTER, "adapter"), (MOUSE, "mouse")):
        query = write_query_v2(rubrics, TABLE, random.Random(seed))
        assert noun in query.lower() and "a product" not in query


def test_a_phone_case_is_asked_for_as_a_phone_case_whichever_source_holds_the_phone():
    # the shared build's "I need a case." (negative_constraint-273a29ca8bd1: a Galaxy Note 9 case whose phone
    # model is in the persona) and "Recommend a cover, please." of a phone case; a band whose labels list a Fitbit
    # as a phone model (product_search-c142e5c03924) is no phone band
    for phone, said in (("IPhone 7", "a phone case"), ("Samsung Galaxy Note 9", "a phone case"),
                        ("Fitbit Versa 2", "a case")):
        rubrics = [rubric("r1", "entity_match", "title", "Cases"),
                   rubric("r2", "attribute_match", "details.Compatible Phone Models", phone, source="persona")]
        queries = {write_query_v2(rubrics, TABLE, random.Random(s)).lower() for s in range(5)}
        assert all(said in q for q in queries), queries
    assert "a phone case" not in write_query_v2([rubric("r1", "entity_match", "title", "Cases")], TABLE,
                                                random.Random(0)).lower()
    assert "a watch band" in write_query_v2([rubric("r1", "entity_match", "title", "Watch Bands"),
                                            rubric("r2", "attribute_match", "details.Compatible Phone Models",
                                                   "IPhone 7", source="persona")], TABLE, random.Random(0)).lower()


def test_values_are_said_as_people_say_them():
    query = write_query_v2(MOUSE, TABLE, random.Random(0))
    assert "a black mouse" in query and "for a 6-year-old" in query and "6 - 6" not in query


def test_the_exclusion_names_its_field():
    query = write_query_v2(MOUSE, TABLE, random.Random(0))
    assert "connectivity" in query and "Bluetooth or USB" in query


def test_thresholds_are_folded_into_one_phrase_not_listed():
    queries = {write_query_v2(ADAPTER, TABLE, random.Random(s)) for s in range(12)}
    assert all("It must" not in q for q in queries)
    folded = re.compile(r"[^.]*\b4\b[^.]*\bstars?\b[^.]*\b10\b[^.]*\b(?:reviews|ratings)\b[^.]*\.")
    assert all(folded.search(q) for q in queries)


def test_the_same_bounds_read_differently_across_tasks():
    """Thirty tasks with the same rating, count and price bounds share no run of five words in more than 4 queries."""
    bounds = [r for r in ADAPTER if r.field != "details.Mounting Type"]
    tasks = [{"rubrics": [r.model_dump() for r in bounds],
              "user_query": write_query_v2(bounds, TABLE, random.Random(s))} for s in range(30)]
    assert max(phrase_counts(tasks).values()) <= 4


def test_the_seeded_generator_picks_among_several_sentence_plans():
    queries = [write_query_v2(ADAPTER, TABLE, random.Random(s)) for s in range(12)]
    assert len(set(queries)) >= 6
    assert write_query_v2(ADAPTER, TABLE, random.Random(3)) == queries[3]


def task_of(rubrics: list[Rubric], query: str) -> dict:
    from ecombench.stages.rubrics import rubric_lock

    return {"user_query": query, "rubrics": [r.record() for r in rubrics], "rubric_lock": rubric_lock(rubrics),
            "implicit_rubric_ids": [], "user_persona": {"product_requirements": {}},
            "clarification_script": {"clarification_slots": [], "default_response": "?", "max_clarification_turns": 3}}


@pytest.mark.parametrize("seed", range(6))
def test_stage_6_and_7_accept_every_v2_query(seed):
    for rubrics in (ADAPTER, MOUSE):
        task = task_of(rubrics, write_query_v2(rubrics, TABLE, random.Random(seed)))
        assert [f.reason for f in check_sources(task, TABLE) if f.severity == "error"] == []
        assert [f.reason for f in check_leakage(task, TABLE) if f.reason in ("hidden_value_in_query",
                                                                           "implicit_value_in_query")] == []


def test_a_paraphrased_value_and_bounds_are_accepted():
    query = ("I need an adapter I can have mounted on a wall, with 10 or more reviews, "
             "rated 4 stars or better, for $25 or under.")
    assert check_sources(task_of(ADAPTER, query), TABLE) == []


def test_a_drifted_value_or_bound_is_still_missing():
    query = "I need an adapter for a desk, rated no more than 4 stars, with 10 or more reviews, for $25 or under."
    reasons = [(f.reason, f.evidence["rubric_id"]) for f in check_sources(task_of(ADAPTER, query), TABLE)]
    assert reasons == [("query_missing_requirement", "r2"), ("query_missing_requirement", "r4")]


def test_a_hidden_value_paraphrased_in_the_query_leaks():
    hidden = [ADAPTER[0], rubric("r2", "attribute_match", "details.Mounting Type", "Wall Mount", "persona")]
    task = task_of(hidden, "I need an adapter that I can have mounted on a wall.")
    leaks = [f for f in check_leakage(task, TABLE) if f.reason == "hidden_value_in_query"]
    assert leaks and {f.evidence["rubric_id"] for f in leaks} == {"r2"}  # one finding per spelling of the value


CABLE = [rubric("r1", "entity_match", "title", "Audio Cables"),
         rubric("r2", "attribute_match", "details.Connector Type", "RCA")]


def test_a_query_naming_another_product_type_is_rejected_with_its_own_reason():
    # the small model's accepted query for an RCA audio cable (issue #14)
    task = task_of(CABLE, "I need RCA headphones, the kind of audio cable with an RCA connector.")
    findings = check_sources(task, TABLE, type_vocabulary=TYPES)
    assert [(f.reason, f.evidence["value"]) for f in findings] == [("query_names_other_product_type", "headphone")]


@pytest.mark.parametrize("query", ["I need an RCA audio cable for my headphones.",
                                   "Could you find me a phone audio cable with an RCA connector?"])
def test_naming_the_type_first_is_no_drift_whatever_follows(query):
    assert product_type_drift(query, CABLE, set(), type_vocabulary=TYPES) is None


def test_a_compatible_device_in_the_query_is_not_read_as_the_product_type():
    pads = [rubric("r1", "entity_match", "title", "Ear Pads"),
            rubric("r2", "attribute_match", "details.Compatible Devices", "Headphones")]
    assert product_type_drift("Headphones compatible ear pads, please.", pads, set(), type_vocabulary=TYPES) is None


# Query rubrics of real accepted tasks of the shared-data split whose first v2 wording read stiffly:
# "a case with card slot" (B08C7852QM), "a mug ... with microwave safe" (B09SG7GF4P), "a curtain for adult users"
# (B08CKH2XS3), "Ideally one for a Christmas." (B08C4SX7KK), "a mirror with frame type framed" (B082XW98SM).
@pytest.mark.parametrize("asin, rubrics, said", [
    ("B08C7852QM", [rubric("r1", "entity_match", "title", "Case"),
                    rubric("r3", "attribute_match", "details.Special Feature", "Card Slot")],
     "a case with a card slot"),
    ("B09SG7GF4P", [rubric("r1", "entity_match", "title", "Mug"),
                    rubric("r4", "attribute_match", "details.Special Feature", "Microwave Safe")],
     "a microwave safe mug"),
    ("B08CKH2XS3", [rubric("r1", "entity_match", "title", "Curtains"),
                    rubric("r2", "attribute_match", "details.Age Range (Description)", "Adult")],
     "a curtain for adults"),
    ("B08C4SX7KK", [rubric("r1", "entity_match", "title", "Ornaments"),
                    rubric("r5", "attribute_match", "details.Occasion", "Christmas")], "an ornament for Christmas"),
    ("B082XW98SM", [rubric("r1", "entity_match", "title", "Mirrors"),
                    rubric("r3", "attribute_match", "details.Frame Type", "Framed")], "a mirror that comes framed"),
    # "I'd love a print in a wall design." (rating_quality-f20f887ac7fe), "a blue USB cable with a data transfer"
    ("B08F9C77YK", [rubric("r1", "entity_match", "title", "Prints"),
                    rubric("r3", "attribute_match", "details.Mounting Type", "Wall")], "a print that mounts on a wall"),
    ("B07WP2YNX6", [rubric("r1", "entity_match", "title", "USB Cables"),
                    rubric("r3", "attribute_match", "details.Special Feature", "Data Transfer")],
     "a USB cable with data transfer"),
])
def test_a_detail_value_reads_as_speech_and_stage_7_still_finds_it(asin, rubrics, said):
    query = write_query_v2(rubrics, TABLE, random.Random(0))
    assert said in query
    assert [f.reason for f in check_sources(task_of(rubrics, query), TABLE) if f.severity == "error"] == []


def test_an_excluded_brand_keeps_its_case():
    # B07XDJ68P6's exclusion read "I don't want ambesonne or moslion as the brand."
    rubrics = [rubric("r1", "entity_match", "title", "Shower Curtain"),
               rubric("r2", "negative_attribute", "details.Brand", ["Ambesonne", "Moslion"])]
    queries = [write_query_v2(rubrics, TABLE, random.Random(s)) for s in range(6)]
    assert all("Ambesonne or Moslion" in q for q in queries)
    assert all(check_sources(task_of(rubrics, q), TABLE) == [] for q in queries)


def test_an_excluded_value_that_is_the_type_word_does_not_hide_the_type():
    # B010R114GU (shared-data split): the excluded form factor "Case" is the type's own word; the query names
    # the case before its cue mentions a phone, so there is no drift even when the cue's words are read
    rubrics = [rubric("r1", "entity_match", "title", "Case"),
               rubric("r2", "negative_attribute", "details.Form Factor", ["Case", "Flip"])]
    query = ("I'd like a case that can prop my phone upright on the table to watch videos. "
             "I'm fine with any form factor but case or flip.")
    assert product_type_drift(query, rubrics, set()) is None


def test_cues_holding_a_comma_are_joined_with_a_serial_comma():
    # B09KN213QM (shared-data split): "with no added perfume, since smells give me headaches and without any
    # corners, ..." read the second cue as part of the first one's reason
    from ecombench.stages.verbalise_v2 import join_clauses

    cues = ["with no added perfume, since smells give me headaches",
            "without any corners, shaped like a full moon"]
    assert join_clauses(cues) == ("with no added perfume, since smells give me headaches, and without any corners, "
                                  "shaped like a full moon")


def test_relative_clauses_follow_the_other_phrases_and_join_only_each_other():
    # Queries of the shared-data build f19f that reviewers read as broken grammar: B00466OF46 "a scratch resistant
    # sign that goes up on a hook or a nail and made by SignMission", B071KZGSXJ "a sign made of metal and that
    # mounts on a wall"
    from ecombench.stages.verbalise_v2 import join_clauses

    assert (join_clauses(["that goes up on a hook or a nail", "made by SignMission"])
            == "made by SignMission that goes up on a hook or a nail")
    assert join_clauses(["made of metal", "that mounts on a wall"]) == "made of metal that mounts on a wall"
    assert join_clauses(["that closes all the way across", "that dries quickly"]) == (
        "that closes all the way across and that dries quickly")
    rubrics = [rubric("r1", "entity_match", "title", "Signs"),
               rubric("r2", "attribute_match", "details.Special Feature", "Scratch Resistant"),
               rubric("r3", "attribute_match", "details.Brand", "SignMission"),
               rubric("r4", "attribute_match", "details.Mounting Type", "Wall Mount")]
    queries = [write_query_v2(rubrics, TABLE, random.Random(s)) for s in range(8)]
    assert not any(re.search(r"\band (?:that|made)\b", q) for q in queries)
    assert all(check_sources(task_of(rubrics, q), TABLE) == [] for q in queries)


@pytest.mark.parametrize("field, value, said", [
    # Mounting Type and Special Feature values of the shared catalog's facts, each as a shopper says it
    ("Mounting Type", "Floor Standing", "that stands on the floor"), ("Mounting Type", "Hanging", "that hangs up"),
    ("Mounting Type", "Tabletop", "that sits on a tabletop"), ("Mounting Type", "Flush Mount", "with flush mounting"),
    ("Special Feature", "Wireless Charging", "with wireless charging"),
    ("Special Feature", "Drop Protection", "with drop protection"), ("Special Feature", "Alarm", "with an alarm"),
    ("Special Feature", "Soft", "that's soft"), ("Special Feature", "Easy To Use", "that's easy to use"),
    ("Special Feature", "Kickstand", "with a kickstand"), ("Special Feature", "Card Slots", "with card slots"),
    # B09MBKBJ2G (f19f): "I'm after a cover labelled machine wash." read as unnatural
    ("Product Care Instructions", "Machine Wash", "that you can machine wash"),
    ("Product Care Instructions", "Dishwasher Safe", "that's dishwasher safe"),
    ("Product Care Instructions", "Wipe Clean", "that you can wipe clean"),
    # B0053GI7ZG (f22a): "I'm hoping for a sign to use for outdoor" read as unnatural
    ("Recommended Uses For Product", "Outdoor", "for outdoor use"),
    ("Recommended Uses For Product", "Car", "for the car"),
    ("Recommended Uses For Product", "Travel", "for travel"),
])
def test_mounting_and_features_read_as_speech_and_stage_7_still_finds_them(field, value, said):
    from ecombench.stages.value_phrases import attribute_phrase

    assert attribute_phrase(f"details.{field}", value, TABLE) == said
    rubrics = [rubric("r1", "entity_match", "title", "Signs"),
               rubric("r2", "attribute_match", f"details.{field}", value)]
    query = write_query_v2(rubrics, TABLE, random.Random(0))
    assert [f.reason for f in check_sources(task_of(rubrics, query), TABLE) if f.severity == "error"] == []


def test_a_code_opening_with_a_digit_follows_the_noun():
    # B07JJTYMZL (shared-data split) read "I want to buy a 802.11b laptop ..."
    rubrics = [rubric("r1", "entity_match", "title", "Laptops"),
               rubric("r2", "attribute_match", "details.Connectivity Technology", "802.11b")]
    query = write_query_v2(rubrics, TABLE, random.Random(0))
    assert "a laptop that connects over 802.11b" in query
    assert check_sources(task_of(rubrics, query), TABLE) == []


def test_no_two_exclusion_wordings_share_a_run_of_five_words():
    # two tasks excluding the same value ("any theme but Christmas") would repeat the run across the split
    from ecombench.stages.value_phrases import EXCLUDE
    from ecombench.validation.shopper_text import PHRASE_WORDS, _words

    def runs(text: str) -> set[str]:
        ws = _words(text)
        return {" ".join(ws[i:i + PHRASE_WORDS]) for i in range(len(ws) - PHRASE_WORDS + 1)}

    filled = [t.format(label="theme", values="Christmas") for t in EXCLUDE]
    assert [(a, b) for i, a in enumerate(filled) for b in filled[i + 1:] if runs(a) & runs(b)] == []


def test_a_sentence_with_its_own_link_word_takes_no_other():
    # "... Plus, and that closes all the way across so nothing falls out, if possible." (rating_quality-11f381778de3)
    from ecombench.stages.verbalise_v2 import linked

    sentences = ["And with a zipper closure, please.", "Also, one in a modern style.", "Get me one in red."]
    outs = [linked(sentences, random.Random(seed)) for seed in range(40)]
    assert all(out[:2] == sentences[:2] for out in outs)
    assert any(out[2] != sentences[2] for out in outs)  # a sentence without a link of its own still takes one


# Reviewers read a locked requirement said as optional as telling the agent it may skip it: "And with a zipper closure,
# if possible." (feature_combination-b1abd2aae4ac, B09WHZFDMV), "Ideally an option carrying 10 ratings or more"
# (negative_constraint-3ee48ee824f9, B07W8XYSM4), "And ideally one that I can close up fully" (B09VDHW754).
OPTIONAL = re.compile(r"\b(?:ideally|if possible|preferably|would be (?:ideal|best|nice)|best if)\b", re.IGNORECASE)


@pytest.mark.parametrize("seed", range(30))
def test_no_requirement_of_a_query_is_said_as_optional(seed):
    rubrics = [rubric("r1", "entity_match", "title", "Throw Pillow Covers"),
               rubric("r2", "attribute_match", "details.Style", "Modern"),
               rubric("r3", "attribute_match", "details.Product Care Instructions", "Machine Wash"),
               rubric("r4", "attribute_match", "details.Closure", "Zipper"),
               rubric("r5", "attribute_match", "details.Material", "Polyester"),
               rubric("r6", "attribute_match", "details.Pattern", "Floral"),
               rubric("r7", "numeric_range", "rating_number", {"min": 10.0, "min_inclusive": True})]
    query = write_query_v2(rubrics, TABLE, random.Random(seed))
    assert not OPTIONAL.search(query), query
    assert [f.reason for f in check_sources(task_of(rubrics, query), TABLE) if f.severity == "error"] == []
