"""Stage 7, semantic validation: each source carries exactly its rubrics, the lock holds, the answer set is small.

Cheap deterministic checks that the reference left to one LLM judge (§15.19-20): the query
states every query rubric, the persona holds every persona rubric, exactly one slot reveals
each clarification rubric, the rubrics still match their lock, and the target is in an answer
set no larger than the configured bound.
"""

from __future__ import annotations

from typing import Any

from stages.fields import FieldTable
from stages.rubrics import bound_phrase, rubric_lock
from stages.verbalise import persona_entry
from stages.text import contains_phrase, count_phrase
from validation.answer_set import CatalogIndex
from validation.findings import Finding
from validation.leakage import rubric_forms


def check_sources(task: dict[str, Any], table: FieldTable, cues: dict[str, str] | None = None) -> list[Finding]:
    """Findings where a source does not carry its rubrics (query, persona, clarification) or the lock broke.

    Args:
        task: a task record.
        table: the field table.
        cues: {rubric id: cue clause} of the task's implicit rubrics; their value must not be in
            the query (stage 6 checks that) and the cue must be. None skips the cue check.
    """
    findings: list[Finding] = []
    query = task["user_query"]
    requirements = task["user_persona"]["product_requirements"]
    slots = task["clarification_script"]["clarification_slots"]
    implicit = set(task.get("implicit_rubric_ids") or [])
    for r in task["rubrics"]:
        forms = rubric_forms(r)
        if r["id"] in implicit:
            if cues is not None and not contains_phrase(query, cues.get(r["id"], "")):
                findings.append(Finding("implicit_cue_missing", f"implicit rubric {r['id']} ({r['field']}) has no cue "
                                        "in the query", {"rubric_id": r["id"], "cue": cues.get(r["id"]), "text": query}))
        elif r["info_source"] == "query":
            missing = _unstated(r, forms, task["rubrics"], implicit, query)
            if missing:
                findings.append(Finding("query_missing_requirement",
                                        f"query rubric {r['id']} ({r['field']}) value {missing[0]!r} is not in the query",
                                        {"rubric_id": r["id"], "field": r["field"], "value": missing[0], "text": query}))
        elif r["info_source"] == "persona":
            key, value = persona_entry(r, table)
            if requirements.get(key) != value:
                findings.append(Finding("persona_missing_requirement",
                                        f"persona rubric {r['id']} ({r['field']}) is not under product_requirements.{key}",
                                        {"rubric_id": r["id"], "field": r["field"], "persona_key": key,
                                         "value": value, "found": requirements.get(key)}))
        else:
            revealing = [s["slot_id"] for s in slots if r["id"] in s["linked_rubric_ids"]
                         and all(contains_phrase(s["user_response"], f) for f in forms)]
            if len(revealing) != 1:
                findings.append(Finding("clarification_not_revealed",
                                        f"clarification rubric {r['id']} ({r['field']}) is revealed by "
                                        f"{len(revealing)} slots, not exactly one",
                                        {"rubric_id": r["id"], "field": r["field"], "slot_ids": revealing}))
    keys = {persona_entry(r, table)[0] for r in task["rubrics"] if r["info_source"] == "persona"}
    extra = sorted(set(requirements) - keys)
    if extra:
        findings.append(Finding("persona_missing_requirement",
                                f"product_requirements holds keys with no persona rubric: {extra}",
                                {"extra_keys": extra}))
    if rubric_lock(task["rubrics"]) != task["rubric_lock"]:
        findings.append(Finding("rubric_lock_mismatch", "rubrics changed after they were locked",
                                {"expected": task["rubric_lock"], "found": rubric_lock(task["rubrics"])}))
    return findings


def _unstated(rubric: dict[str, Any], forms: list[str], rubrics: list[dict[str, Any]], implicit: set[str],
              query: str) -> list[str]:
    """The forms of a query rubric the query does not state on their own.

    A bound must appear with its direction and unit ("at least 4.5 stars"), so "$4.5" does not
    stand for a rating. A value must occur more often than it occurs inside the other query
    rubrics' values, so "Blue" inside "Dark Blue" does not stand for a dropped colour.
    """
    if rubric["type"] == "numeric_range":
        phrase = bound_phrase(rubric["field"], rubric["expected_value"])
        return [] if contains_phrase(query, phrase) else [phrase]
    others = [f for o in rubrics if o["info_source"] == "query" and o["id"] != rubric["id"] and o["id"] not in implicit
              for f in rubric_forms(o)]
    return [f for f in forms if count_phrase(query, f) <= sum(count_phrase(o, f) for o in others)]


def check_answer_set(rubrics: list[dict[str, Any]], target: str, index: CatalogIndex,
                     max_size: int) -> tuple[list[str], list[Finding]]:
    """The answer set over the catalog, and findings if it misses the target or exceeds `max_size`.

    Returns:
        (sorted parent_asins, findings). The evidence of answer_set_too_large lists up to 10 ids.
    """
    answers = index.answer_set(rubrics)
    findings = []
    if target not in answers:
        findings.append(Finding("answer_set_missing_target", f"target {target} is not in its own answer set",
                                {"target": target, "answer_set_size": len(answers)}))
    if len(answers) > max_size:
        findings.append(Finding("answer_set_too_large",
                                f"{len(answers)} catalog products satisfy every rubric (bound {max_size})",
                                {"answer_set_size": len(answers), "bound": max_size, "examples": answers[:10]}))
    return answers, findings
