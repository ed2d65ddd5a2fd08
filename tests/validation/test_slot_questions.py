"""The natural-question suite (data/slot_questions.toml) against the matcher: recall and false openings per field.

Every field question is asked of a script holding its field's slot alone and of a script holding it
beside each other clarification field's slot (the field table's whole space of pairs); the shared-data
split's own figures come from benchmarks/slot_questions.py.
"""

from __future__ import annotations

import pytest

from benchmarks.slot_questions import load_suite, measure, table_markdown, totals
from ecombench.stages.replies import DEFAULT_RESPONSE, ONE_AT_A_TIME
from ecombench.validation.slots import answer_question, read_question


def _slot(table, name, i):
    spec = table.fields[name]
    return {"slot_id": f"s{i}", "field": spec.rubric_field, "linked_rubric_ids": [f"r{i}"],
            "trigger_keywords": list(spec.keywords), "user_response": f"reply about {spec.label}"}


@pytest.fixture(scope="module")
def suite_result(rich_catalog):
    table = rich_catalog.table
    names = [f.name for f in table.fields.values() if "clarification" in f.sources]
    scripts = [[_slot(table, a, 1)] for a in names]
    scripts += [[_slot(table, a, 1), _slot(table, b, 2)] for a in names for b in names if a != b]
    tasks = [{"clarification_script": {"clarification_slots": s}} for s in scripts]

    def ask(task, question):
        slots = task["clarification_script"]["clarification_slots"]
        answer = answer_question(question, slots, table)
        reply = (ONE_AT_A_TIME if answer.too_many else "slot" if answer.opened
                 else "no preference" if answer.reading.fields else DEFAULT_RESPONSE)
        return list(answer.opened), reply

    result = measure(tasks, load_suite(), ask)
    print("\n" + table_markdown(result))  # the per-field report (pytest -s shows it)
    return result


def test_the_suite_has_five_natural_questions_for_every_clarification_field(rich_catalog):
    suite = load_suite()
    for spec in rich_catalog.table.fields.values():
        if "clarification" in spec.sources:
            assert len(suite["fields"].get(spec.name, {}).get("questions", [])) >= 5, spec.name


def test_natural_questions_open_the_intended_slot_and_rarely_another(suite_result):
    t = totals(suite_result)
    assert t["recall"] >= 0.97 and t["false_rate"] <= 0.02, t


def test_every_field_reaches_ninety_percent(suite_result):
    low = {name: round(r["recall"], 3) for name, r in suite_result["fields"].items() if r["recall"] < 0.9}
    assert not low


def test_generic_questions_open_nothing_and_get_the_inviting_reply(suite_result):
    block = suite_result["generic"]
    assert block["opened"] == 0 and set(block["replies"]) == {DEFAULT_RESPONSE}
    assert "nothing" not in DEFAULT_RESPONSE and "specific" in DEFAULT_RESPONSE


def test_questions_listing_more_than_three_fields_open_nothing(suite_result):
    block = suite_result["dumps"]
    assert block["opened"] == 0 and set(block["replies"]) == {ONE_AT_A_TIME}


def test_a_value_guess_asks_about_the_field_of_its_value(rich_catalog):
    # A person asked "Is it blue?" answers with the colour they want; "Christmas" is a value of Occasion and of
    # Theme, so "Is it for Christmas?" names neither.
    want = {"Is it blue?": "Color", "Do you want it glossy?": "Finish Type",
            "Is it wireless?": "Connectivity Technology", "Should it be leather?": "Material",
            "Is it for Christmas?": None, "Do you want a zipper?": "Closure", "Is it round?": "Shape",
            "Portrait?": "Orientation", "Do you want it in black?": "Color",
            "Will it be used outdoors?": "Indoor/Outdoor Usage", "Should it be automatic?": "Operation Mode",
            "Is single use okay?": "Reusability"}
    questions = load_suite()["guesses"]["questions"]
    assert set(want) <= set(questions)
    for question, field in want.items():
        reading = read_question(question, rich_catalog.table)
        assert reading.fields == ((field,) if field else ()) and not reading.topics, (question, reading)
