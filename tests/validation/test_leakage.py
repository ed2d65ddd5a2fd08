"""Stage 6, leakage checks: a real accepted task, broken one way at a time (validation/leakage.py)."""

from __future__ import annotations

from ecombench.text import normalize
from ecombench.validation.leakage import check_leakage
from tests.validation.conftest import first


def reasons(findings):
    return sorted({f.reason for f in findings})


def test_the_unbroken_task_has_no_leakage(task, rich_catalog):
    assert check_leakage(task, rich_catalog.table) == []


def test_a_persona_value_in_the_query_is_hidden_value_in_query(task, rich_catalog):
    r = first(task, "persona")
    task["user_query"] += f" I usually pick {r['expected_value']}."
    leaks = [f for f in check_leakage(task, rich_catalog.table) if f.reason == "hidden_value_in_query"]
    assert [f.evidence["rubric_id"] for f in leaks] == [r["id"]]


def test_hidden_value_in_query_evidence_points_at_the_value(task, rich_catalog):
    r = first(task, "persona")
    task["user_query"] += f" I usually pick {r['expected_value'].upper()}."
    leak = next(f for f in check_leakage(task, rich_catalog.table) if f.reason == "hidden_value_in_query")
    start, end = leak.evidence["span"]
    assert normalize(task["user_query"][start:end]) == normalize(r["expected_value"])


def test_a_clarification_value_in_the_query_is_hidden_value_in_query(task, rich_catalog):
    r = first(task, "clarification")
    task["user_query"] += f" Also {r['expected_value']}."
    leaks = [f for f in check_leakage(task, rich_catalog.table) if f.reason == "hidden_value_in_query"]
    assert r["id"] in [f.evidence["rubric_id"] for f in leaks]


def test_a_persona_value_inside_a_longer_query_word_is_no_leak(task, rich_catalog):
    # Whole-token rule: appending the value glued to other letters must not count.
    r = first(task, "persona")
    glued = "x" + "".join(ch for ch in r["expected_value"] if ch.isalnum()).lower() + "x"
    task["user_query"] += f" {glued}."
    assert check_leakage(task, rich_catalog.table) == []


def test_persona_noise_repeating_a_rubric_value_is_persona_noise_leak(task, rich_catalog):
    r = first(task, "query", "attribute_match")
    task["user_persona"]["lifestyle"]["occupation"] = f"{r['expected_value']} enthusiast"
    leaks = [f for f in check_leakage(task, rich_catalog.table) if f.reason == "persona_noise_leak"]
    # One finding per spelling found: "Corded Electric" also leaks as its alias "Corded" (fields.toml values).
    assert {(f.evidence["rubric_id"], f.evidence["field"]) for f in leaks} == {(r["id"], "lifestyle.occupation")}
    assert r["expected_value"] in [f.evidence["value"] for f in leaks]


def test_persona_noise_outside_the_whitelist_is_reported(task, rich_catalog):
    task["user_persona"]["lifestyle"]["hobbies"][1] = "astronomy"
    findings = check_leakage(task, rich_catalog.table)
    assert [(f.reason, f.evidence["field"], f.evidence["value"]) for f in findings] == [
        ("persona_noise_not_whitelisted", "lifestyle.hobbies", "astronomy")]


def test_a_slot_with_three_keywords_is_slot_incomplete(task, rich_catalog):
    slot = task["clarification_script"]["clarification_slots"][0]
    slot["trigger_keywords"] = slot["trigger_keywords"][:3]
    findings = check_leakage(task, rich_catalog.table)
    assert reasons(findings) == ["slot_incomplete"]
    assert "3 trigger keywords" in findings[0].message


def test_a_slot_whose_reply_lacks_the_value_is_slot_incomplete(task, rich_catalog):
    slot = task["clarification_script"]["clarification_slots"][0]
    slot["user_response"] = "I'm not sure, surprise me."
    findings = check_leakage(task, rich_catalog.table)
    assert [(f.reason, f.evidence["slot_id"]) for f in findings] == [("slot_incomplete", slot["slot_id"])]
    assert "reply does not contain" in findings[0].message


def test_a_slot_without_the_fields_own_name_is_incomplete(task, rich_catalog):
    # Still reachable: questions open a slot through its field's vocabulary in the field table.
    slot = task["clarification_script"]["clarification_slots"][0]
    slot["trigger_keywords"] = slot["trigger_keywords"][1:] + ["what would you like"]
    assert reasons(check_leakage(task, rich_catalog.table)) == ["slot_incomplete"]


def test_a_slot_linked_to_a_query_rubric_is_slot_incomplete(task, rich_catalog):
    slot = task["clarification_script"]["clarification_slots"][0]
    slot["linked_rubric_ids"] = [first(task, "query", "attribute_match")["id"]]
    assert "slot_incomplete" in reasons(check_leakage(task, rich_catalog.table))


def test_two_slots_sharing_a_keyword_is_slot_collision(task, rich_catalog):
    s1, s2 = task["clarification_script"]["clarification_slots"][:2]
    s2["trigger_keywords"][-1] = s1["trigger_keywords"][-1]
    findings = check_leakage(task, rich_catalog.table)
    assert [(f.reason, f.evidence["slot_ids"]) for f in findings] == [
        ("slot_collision", [s1["slot_id"], s2["slot_id"]])]


def test_keywords_differing_only_in_case_and_plural_collide(task, rich_catalog):
    s1, s2 = task["clarification_script"]["clarification_slots"][:2]
    s2["trigger_keywords"][-1] = s1["trigger_keywords"][-1].upper() + "S"
    assert reasons(check_leakage(task, rich_catalog.table)) == ["slot_collision"]


def test_every_finding_is_reported_not_just_the_first(task, rich_catalog):
    task["user_query"] += f" {first(task, 'persona')['expected_value']}"
    task["user_persona"]["lifestyle"]["hobbies"][1] = "astronomy"
    task["clarification_script"]["clarification_slots"][0]["trigger_keywords"] = ["a", "b", "c"]
    assert {"hidden_value_in_query", "persona_noise_not_whitelisted", "slot_incomplete"} <= set(
        reasons(check_leakage(task, rich_catalog.table)))


def test_leakage_findings_belong_to_stage_6(task, rich_catalog):
    task["user_query"] += f" {first(task, 'persona')['expected_value']}"
    assert {f.stage for f in check_leakage(task, rich_catalog.table)} == {6}
