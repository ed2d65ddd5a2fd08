"""Stage 7, semantic validation: a real accepted task, broken one way at a time (validation/semantic.py)."""

from __future__ import annotations

import re

import pytest

from ecombench.text import contains_phrase
from ecombench.validation.semantic import check_answer_set, check_sources, task_problems
from tests.validation.conftest import first


def test_the_unbroken_task_has_no_source_findings(task, rich_catalog):
    assert check_sources(task, rich_catalog.table) == []


def test_the_unbroken_task_has_a_small_answer_set_with_its_target(task, rich_catalog, rich_plan):
    target = task["target_product"]["parent_asin"]
    answers, findings = check_answer_set(task["rubrics"], target, rich_catalog.index,
                                         rich_plan[0].config.max_answer_set)
    assert (answers, findings) == (task["answer_set"], [])


def test_dropping_a_query_requirement_is_query_missing_requirement(task, rich_catalog):
    r = first(task, "query", "attribute_match")
    # template-v2 says values in speech case ("a corded electric laptop"): the value is cut out whatever its case
    task["user_query"] = re.sub(re.escape(r["expected_value"]), "something nice", task["user_query"], flags=re.I)
    assert not contains_phrase(task["user_query"], r["expected_value"])
    findings = check_sources(task, rich_catalog.table)
    assert [(f.reason, f.evidence["rubric_id"]) for f in findings] == [("query_missing_requirement", r["id"])]


def test_changing_an_expected_value_after_locking_is_rubric_lock_mismatch(task, rich_catalog):
    r = first(task, "clarification")
    r["expected_value"] += " Plus"
    for slot in task["clarification_script"]["clarification_slots"]:  # keep the slot consistent with it
        if r["id"] in slot["linked_rubric_ids"]:
            slot["user_response"] += f" ({r['expected_value']})"
    assert [f.reason for f in check_sources(task, rich_catalog.table)] == ["rubric_lock_mismatch"]


def test_a_persona_requirement_missing_from_the_persona_is_reported(task, rich_catalog):
    r = first(task, "persona")
    key = rich_catalog.table.by_rubric_field(r["field"]).persona_key
    del task["user_persona"]["product_requirements"][key]
    findings = check_sources(task, rich_catalog.table)
    assert [(f.reason, f.evidence.get("rubric_id")) for f in findings] == [("persona_missing_requirement", r["id"])]


def test_an_extra_persona_requirement_is_reported(task, rich_catalog):
    task["user_persona"]["product_requirements"]["preferred_store"] = "anywhere"
    assert [f.reason for f in check_sources(task, rich_catalog.table)] == ["persona_missing_requirement"]


def test_a_clarification_rubric_without_its_slot_is_not_revealed(task, rich_catalog):
    slots = task["clarification_script"]["clarification_slots"]
    removed = slots.pop(0)
    findings = check_sources(task, rich_catalog.table)
    assert [(f.reason, f.evidence["rubric_id"]) for f in findings] == [
        ("clarification_not_revealed", removed["linked_rubric_ids"][0])]


def test_an_answer_set_over_the_bound_is_answer_set_too_large(task, rich_catalog):
    target = task["target_product"]["parent_asin"]
    answers, findings = check_answer_set(task["rubrics"], target, rich_catalog.index, max_size=0)
    assert [(f.reason, f.evidence["answer_set_size"]) for f in findings] == [("answer_set_too_large", len(answers))]


def test_a_target_outside_its_answer_set_is_reported(task, rich_catalog):
    other = next(a for a in rich_catalog.products.get_column("parent_asin") if a not in task["answer_set"])
    _, findings = check_answer_set(task["rubrics"], other, rich_catalog.index, max_size=100)
    assert [f.reason for f in findings] == ["answer_set_missing_target"]


def test_semantic_findings_belong_to_stage_7(task, rich_catalog):
    first(task, "clarification")["expected_value"] += " Plus"
    assert {f.stage for f in check_sources(task, rich_catalog.table)} == {7}


# ---------------------------------------------------------------- task invariants (checked before publishing)

def test_an_accepted_task_is_sound(task, rich_catalog):
    assert task_problems(task, rich_catalog.table) == []


def _break_and_report(task, table, breaker):
    breaker(task)
    return " | ".join(task_problems(task, table))


@pytest.mark.parametrize(("breaker", "expected"), [
    (lambda t: t.update(id=t["id"][:-1] + ("0" if t["id"][-1] != "0" else "1")), "is not derived from"),
    (lambda t: t["rubrics"][1].update(id=t["rubrics"][0]["id"]), "rubric ids repeat"),
    (lambda t: t["rubrics"][0].update(field="details.No Such Field"), "absent from the field table"),
    (lambda t: next(r for r in t["rubrics"] if r["type"] == "attribute_match").update(type="numeric_range"),
     "is numeric_range on detail field"),
    (lambda t: t["clarification_script"]["clarification_slots"][0].update(linked_rubric_ids=["r99"]),
     "which is not a clarification rubric"),
    (lambda t: t.update(implicit_rubric_ids=["r99"]), "implicit id r99"),
    (lambda t: t.update(answer_set=[a for a in t["answer_set"] if a != t["target_product"]["parent_asin"]]
                        + ["B000000000"]), "answer set lacks the target"),
    (lambda t: t["difficulty"].update(answer_set_size=t["difficulty"]["answer_set_size"] + 1),
     "answer_set_size differs"),
])
def test_a_broken_task_is_reported(task, rich_catalog, breaker, expected):
    assert expected in _break_and_report(task, rich_catalog.table, breaker)


def test_publishing_refuses_an_unsound_task(task, tmp_path):
    from ecombench.schemas import SchemaError
    from ecombench.splits.publish import publish_split

    task["answer_set"] = ["B000000000"]
    with pytest.raises(SchemaError, match="is unsound: answer set lacks the target"):
        publish_split(tmp_path, "s", "v1", [task], [], {})
    assert not (tmp_path / "s" / "v1").exists()
