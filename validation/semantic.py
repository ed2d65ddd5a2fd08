"""Stage 7, semantic validation: each source carries exactly its rubrics, the lock holds, the answer set is small.

Cheap deterministic checks that the reference left to one LLM judge (§15.19-20): the query
states every query rubric, the persona holds every persona rubric, exactly one slot reveals
each clarification rubric, the rubrics still match their lock, and the target is in an answer
set no larger than the configured bound.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rubric_types import RUBRIC_TYPES, RubricLike, as_rubrics, kind_of
from schemas.models import Rubric
from stages.lemmas import stated_count
from stages.product_naming import named_type
from stages.replies import spoken_forms
from stages.fields import FieldTable
from stages.hashing import digest
from stages.rubrics import rubric_lock
from stages.text import contains_phrase, count_phrase, tokens
from validation.answer_set import CatalogIndex
from validation.findings import Finding
from validation.leakage import reply_reveals, rubric_forms


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
    rubrics = as_rubrics(task["rubrics"])
    for r in rubrics:
        forms = rubric_forms(r)
        if r.id in implicit:
            if cues is not None and not contains_phrase(query, cues.get(r.id, "")):
                findings.append(Finding("implicit_cue_missing", f"implicit rubric {r.id} ({r.field}) has no cue "
                                        "in the query", {"rubric_id": r.id, "cue": cues.get(r.id), "text": query}))
        elif r.info_source == "query":
            missing = _unstated(r, forms, rubrics, implicit, query, table)
            if missing:
                findings.append(Finding("query_missing_requirement",
                                        f"query rubric {r.id} ({r.field}) value {missing[0]!r} is not in the query",
                                        {"rubric_id": r.id, "field": r.field, "value": missing[0], "text": query}))
        elif r.info_source == "persona":
            key, value = kind_of(r).persona_entry(r, table)
            if requirements.get(key) != value:
                findings.append(Finding("persona_missing_requirement",
                                        f"persona rubric {r.id} ({r.field}) is not under product_requirements.{key}",
                                        {"rubric_id": r.id, "field": r.field, "persona_key": key,
                                         "value": value, "found": requirements.get(key)}))
        else:
            revealing = [s["slot_id"] for s in slots if r.id in s["linked_rubric_ids"]
                         and reply_reveals(s["user_response"], r, table)]
            if len(revealing) != 1:
                findings.append(Finding("clarification_not_revealed",
                                        f"clarification rubric {r.id} ({r.field}) is revealed by "
                                        f"{len(revealing)} slots, not exactly one",
                                        {"rubric_id": r.id, "field": r.field, "slot_ids": revealing}))
    drift = product_type_drift(query, rubrics, implicit, cues)
    if drift is not None:
        entity = next(r for r in rubrics if r.info_source == "query" and kind_of(r).query_role == "subject")
        findings.append(Finding("query_names_other_product_type",
                                f"the query names {drift!r}, but the product is {entity.expected_value!r} ({entity.id})",
                                {"rubric_id": entity.id, "value": drift, "expected": entity.expected_value,
                                 "text": query}))
    keys = {kind_of(r).persona_entry(r, table)[0] for r in rubrics if r.info_source == "persona"}
    extra = sorted(set(requirements) - keys)
    if extra:
        findings.append(Finding("persona_missing_requirement",
                                f"product_requirements holds keys with no persona rubric: {extra}",
                                {"extra_keys": extra}))
    if rubric_lock(rubrics) != task["rubric_lock"]:
        findings.append(Finding("rubric_lock_mismatch", "rubrics changed after they were locked",
                                {"expected": task["rubric_lock"], "found": rubric_lock(rubrics)}))
    if task.get("query_surfaces") is not None:
        findings.extend(check_query_surfaces(task, cues))
    return findings


def check_query_surfaces(task: dict[str, Any], cues: dict[str, str] | None = None) -> list[Finding]:
    """Findings where the `query_surfaces` an LLM gave do not hold (reference §9.1 "anchored" rule, token-aware).

    Each query rubric needs a surface (query_surface_missing); each surface must occur in the query
    (query_surface_unanchored) and state its rubric the way the query check accepts it: an explicit
    rubric's value forms (a bound with its direction and unit), an implicit rubric's cue and not its
    value; a surface naming no query rubric is a mismatch (query_surface_mismatch). The leakage
    check already covers the whole query, so a surface cannot hide a hidden value.

    Args:
        task: a task record with `query_surfaces` ({rubric id: span of user_query}).
        cues: {rubric id: cue} of implicit rubrics; None takes the surface of an implicit rubric as given.
    """
    findings: list[Finding] = []
    query = task["user_query"]
    surfaces = task.get("query_surfaces") or {}
    implicit = set(task.get("implicit_rubric_ids") or [])
    query_rubrics = {r.id: r for r in as_rubrics(task["rubrics"]) if r.info_source == "query"}
    for rid, surface in surfaces.items():
        if rid not in query_rubrics:
            findings.append(Finding("query_surface_mismatch", f"query surface {surface!r} names {rid}, which is no "
                                    "query rubric", {"rubric_id": rid, "surface": surface}))
    for rid, r in query_rubrics.items():
        surface = surfaces.get(rid)
        if not surface:
            findings.append(Finding("query_surface_missing", f"query rubric {rid} ({r.field}) has no query surface",
                                    {"rubric_id": rid, "field": r.field}))
            continue
        if not contains_phrase(query, surface):
            findings.append(Finding("query_surface_unanchored", f"query surface {surface!r} of {rid} is not in the query",
                                    {"rubric_id": rid, "surface": surface, "text": query}))
            continue
        if rid in implicit:
            wanted = [cues[rid]] if cues and cues.get(rid) else []
        else:
            wanted = kind_of(r).stated_forms(r)
        missing = [w for w in wanted if not contains_phrase(surface, w)]
        if missing:
            findings.append(Finding("query_surface_mismatch", f"query surface {surface!r} of {rid} ({r.field}) does "
                                    f"not state {missing[0]!r}", {"rubric_id": rid, "surface": surface,
                                                                  "value": missing[0]}))
    return findings


def _unstated(rubric: Rubric, forms: list[str], rubrics: list[Rubric], implicit: set[str],
              query: str, table: FieldTable) -> list[str]:
    """The forms of a query rubric the query does not state on their own.

    A bound must appear with its direction and unit, in any wording ("at least 4.5 stars", "4.5 stars or
    higher"), so "$4.5" does not stand for a rating. A value is stated by its content words in any of the
    field's spellings (stages.lemmas: "mounted on a wall" states "Wall Mount", "it runs a size small" does
    not state "true to size") or by its spoken form ("for ages 4 to 12"), and must be stated more often
    than inside the other query rubrics' values, so "Blue" inside "Dark Blue" does not stand for a
    dropped colour.
    """
    kind = kind_of(rubric)
    said = kind.stated_in(rubric, query)
    if said is not None:  # a bound: its own wording decides
        return [] if said else kind.stated_forms(rubric)
    if any(contains_phrase(query, f) for f in spoken_forms(rubric.expected_value, rubric.field)):
        return []
    others = [f for o in rubrics if o.info_source == "query" and o.id != rubric.id and o.id not in implicit
              for f in rubric_forms(o)]

    def count(text: str, form: str) -> int:
        return max(max(count_phrase(text, s), stated_count(text, s)) for s in table.spellings(form))

    return [f for f in forms if count(query, f) <= sum(count(o, f) for o in others)]


def product_type_drift(query: str, rubrics: list[Rubric], implicit: set[str],
                       cues: dict[str, str] | None = None) -> str | None:
    """The product noun a query names instead of its entity rubric's ("headphones" for an audio cable), or None.

    The query's first product noun phrase must hold a word of the entity (stages.product_naming.named_type);
    words the query spends on other requirements (a compatible device "Headphones" of an earpad, a cue)
    are not read as the product's name.
    """
    entity = next((r for r in rubrics if r.info_source == "query" and kind_of(r).query_role == "subject"), None)
    if entity is None:
        return None
    spans = [f for r in rubrics if r.info_source == "query" and r.id != entity.id and r.id not in implicit
             for f in rubric_forms(r) if isinstance(f, str)]
    spans += [c for rid, c in (cues or {}).items() if rid in implicit]
    toks = tokens(query)
    skip: set[int] = set()
    for span in spans:
        n = tokens(span)
        for i in range(len(toks) - len(n) + 1):
            if n and toks[i:i + len(n)] == n:
                skip.update(range(i, i + len(n)))
    return named_type(query, str(entity.expected_value), frozenset(skip))


def semantic_findings(task: dict[str, Any], table: FieldTable, index: CatalogIndex, cues: dict[str, str] | None,
                      max_answer_set: int) -> tuple[list[str], list[Finding]]:
    """Stage 7's code checks of a task record, as the build runs them and `ecombench validate` reruns them.

    Each source carries its rubrics and the lock holds (`check_sources`), and the answer set over
    the catalog holds the target and stays within `max_answer_set` (`check_answer_set`).

    Returns:
        (the answer set: sorted parent_asins, every finding: errors and warns).
    """
    findings = check_sources(task, table, cues)
    answers, answer_findings = check_answer_set(task["rubrics"], task["target_product"]["parent_asin"], index,
                                                max_answer_set)
    return answers, findings + answer_findings


def check_answer_set(rubrics: list[RubricLike] | list[dict[str, Any]], target: str, index: CatalogIndex,
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


def task_problems(task: dict[str, Any], table: FieldTable) -> list[str]:
    """Invariants of a finished task that JSON Schema cannot state, as readable problems (empty: sound).

    The id is content-derived from (intent, target, lock); rubric ids are unique; the lock
    matches the rubrics; every rubric's field is in the field table and fits its type; bounds
    are ordered; every slot links existing clarification rubrics and every clarification rubric
    has one slot; implicit ids name query rubrics; the answer set holds the target, is sorted
    and unique, and its size is the one recorded.
    """
    problems = []
    asin = task["target_product"]["parent_asin"]
    if task["id"] != f"{task['intent']}-{digest(task['intent'], asin, task['rubric_lock'])[:12]}":
        problems.append(f"id {task['id']} is not derived from its intent, target and rubric lock")
    rubrics = task["rubrics"]  # records: a broken one is reported here, not parsed
    ids = [r["id"] for r in rubrics]
    if len(set(ids)) != len(ids):
        problems.append(f"rubric ids repeat: {ids}")
    if rubric_lock(rubrics) != task["rubric_lock"]:
        problems.append("rubric_lock does not match the rubrics")
    for r in rubrics:
        try:
            spec = table.by_rubric_field(r["field"])
        except KeyError:
            problems.append(f"rubric {r['id']} names field {r['field']!r}, absent from the field table")
            continue
        if r["type"] not in RUBRIC_TYPES or kind_of(r["type"]).field_kind != spec.kind:
            problems.append(f"rubric {r['id']} is {r['type']} on {spec.kind} field {r['field']}")
        v = r["expected_value"]
        if isinstance(v, dict) and v.get("min") is not None and v.get("max") is not None and v["min"] > v["max"]:
            problems.append(f"rubric {r['id']} has min {v['min']} above max {v['max']}")
    by_id = {r["id"]: r for r in rubrics}
    linked = [rid for s in task["clarification_script"]["clarification_slots"] for rid in s["linked_rubric_ids"]]
    for rid in linked:
        if rid not in by_id or by_id[rid]["info_source"] != "clarification":
            problems.append(f"a slot links {rid}, which is not a clarification rubric of the task")
    for r in rubrics:
        if r["info_source"] == "clarification" and linked.count(r["id"]) != 1:
            problems.append(f"clarification rubric {r['id']} is linked by {linked.count(r['id'])} slots")
    for rid in task["implicit_rubric_ids"]:
        if rid not in by_id or by_id[rid]["info_source"] != "query":
            problems.append(f"implicit id {rid} is not a query rubric")
    answers = task["answer_set"]
    if asin not in answers:
        problems.append(f"answer set lacks the target {asin}")
    if answers != sorted(set(answers)):
        problems.append("answer set is not sorted and unique")
    if task["difficulty"]["answer_set_size"] != len(answers):
        problems.append("difficulty.answer_set_size differs from the answer set")
    return problems


def intent_problems(rubrics: list[Rubric] | list[dict[str, Any]], intent: Any) -> list[str]:
    """What the intent's definition requires but the rubrics lack: its required rubric types (with
    counts) and a query rubric on each of its query_fields (stages/intents.toml)."""
    typed = as_rubrics(rubrics)
    have = Counter(r.type for r in typed)
    missing = [f"{n} x {t}" for t, n in Counter(intent.required_types).items() if have[t] < n]
    query_fields = {r.field for r in typed if r.info_source == "query"}
    missing += [f"a query rubric on {f}" for f in intent.query_fields if f not in query_fields]
    return missing
