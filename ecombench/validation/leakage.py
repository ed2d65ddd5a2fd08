"""Stage 6, leakage checks: hidden values must not surface where they do not belong.

- an implicit requirement's value must not appear in the query (only its cue), nor may
- a persona or clarification value appear in the query, in any spelling the field
  table lists for it (token-, number- and unit-aware through ecombench.text, so "red" never matches
  "bored" and "1.69 in" matches "1.69-inch"; reference §15.15 compared characters and skipped numbers);
- persona noise must come from the whitelist and repeat no rubric value;
- every clarification slot must be complete, no keyword may belong to two slots, and each slot's
  canonical question must open it and only it (validation/slots.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ecombench.lemmas import states_phrase
from ecombench.rubrics import RubricLike, as_rubrics, as_spec
from ecombench.schemas.findings import Finding
from ecombench.schemas.models import Rubric
from ecombench.stages.phrasing import phrasing_of, rubric_forms
from ecombench.stages.replies import reply_states, spoken_forms
from ecombench.stages.verbalise import noise_whitelist, persona_vocab
from ecombench.tables.fields import SLOT_KEYWORDS, FieldTable
from ecombench.text import contains_phrase, find_phrase, normalize
from ecombench.validation.slots import check_reachability


def leak_forms(rubric: RubricLike | Mapping[str, Any], table: FieldTable) -> list[str]:
    """`value_forms` plus every alias spelling and the spoken form a reply uses.

    Aliases come from the field table ("USB-C" for "USB Type C"); the spoken form is stages/replies.py's
    ("6-month-old" for "6 - 6 months").
    """
    typed = as_spec(rubric)
    forms = rubric_forms(typed)
    if typed.field == "rating_number":  # ratings are said as reviews too
        forms += [f.replace(" ratings", " reviews") for f in forms]
    return [s for form in forms for s in table.spellings(form)] + spoken_forms(typed.expected_value, typed.field)


def states_value(text: str, form: str, table: FieldTable) -> bool:
    """True when `text` states a value form in any of its field-table spellings.

    As whole tokens or by its content words (ecombench.lemmas: "mounted on a wall" states "Wall Mount").
    The one rule the query check (stage 7) and the leakage checks (stage 6) share, so a paraphrase that
    states a value also leaks it.
    """
    return any(states_phrase(text, s) for s in table.spellings(form))


def reply_reveals(reply: str, rubric: RubricLike, table: FieldTable) -> bool:
    """True when a clarification reply reveals its rubric.

    As ecombench.stages.replies.reply_states reads it (the value's forms or its spoken form), a bound in any
    wording ("at least 500 reviews" for 500 ratings), or every value form by its content words ("I'd
    like it to be mounted on a wall." for Wall Mount).
    """
    if reply_states(reply, rubric.expected_value, rubric.field):
        return True
    said = phrasing_of(rubric).stated_in(rubric, reply)
    if said is not None:
        return said
    return all(states_value(reply, f, table) for f in rubric_forms(rubric))


def _noise_values(persona: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for group in ("demographics", "lifestyle", "shopping_habits"):
        for name, value in (persona.get(group) or {}).items():
            for item in value if isinstance(value, list) else [value]:
                out.append((f"{group}.{name}", str(item)))
    return out


def check_leakage(task: dict[str, Any], table: FieldTable) -> list[Finding]:
    """Every leakage finding for a verbalised candidate (all of them, not the first).

    Args:
        task: a task record (user_query, user_persona, clarification_script, rubrics).
        table: the field table (slot keyword rules).

    Returns:
        Findings with reasons hidden_value_in_query, implicit_value_in_query, persona_noise_leak,
        persona_noise_not_whitelisted, slot_incomplete, slot_collision, slot_unreachable.
    """
    findings: list[Finding] = []
    query = task["user_query"]
    rubrics = as_rubrics(task["rubrics"])
    implicit = set(task.get("implicit_rubric_ids") or [])
    for r in rubrics:
        # An implicit requirement may show only its cue; a hidden one may not show at all.
        if r.id in implicit:
            reason, what = "implicit_value_in_query", f"implicit rubric {r.id} ({r.field}) is stated literally"
        elif r.info_source != "query":
            reason, what = "hidden_value_in_query", f"{r.info_source} rubric {r.id} ({r.field}) appears"
        else:
            continue
        for form in leak_forms(r, table):
            if states_phrase(query, form):
                findings.append(Finding(reason, f"{what} in the query as {form!r}",
                                        {"rubric_id": r.id, "field": r.field, "value": form, "text": query,
                                         "span": find_phrase(query, form)}))
    persona = task["user_persona"]
    allowed = noise_whitelist()
    noise_fields = {"demographics", "lifestyle", "shopping_habits"}
    for group in sorted(noise_fields & set(persona)):
        if not isinstance(persona[group], dict):
            findings.append(Finding("persona_noise_not_whitelisted", f"persona {group} is not a set of noise fields",
                                    {"field": group, "value": persona[group]}))
    for path, value in _noise_values(persona):
        # A leak is the graver finding, so it comes first when one value is both leaked and off the whitelist.
        for r in rubrics:
            for form in leak_forms(r, table):
                if isinstance(r.expected_value, (str, list)) and contains_phrase(value, form):
                    findings.append(Finding(
                        "persona_noise_leak", f"persona noise {path} = {value!r} repeats rubric {r.id} value {form!r}",
                        {"rubric_id": r.id, "field": path, "value": form, "text": value}))
        if value not in allowed.get(path, ()):
            findings.append(Finding("persona_noise_not_whitelisted", f"persona {path} = {value!r} is not whitelisted",
                                    {"field": path, "value": value}))
    # Occupation and household are whitelisted per age range (persona_vocab.toml by_age): an LLM may
    # pick each from the merged lists, but "18-24" with "retired engineer" is not a person.
    by_age = persona_vocab()["by_age"].get(str((persona.get("demographics") or {}).get("age_range")))
    if by_age:
        for group, name in (("lifestyle", "occupation"), ("demographics", "household")):
            chosen = (persona.get(group) or {}).get(name)
            if chosen is not None and chosen in allowed.get(f"{group}.{name}", ()) and chosen not in by_age[name]:
                findings.append(Finding("persona_noise_not_whitelisted",
                                        f"persona {group}.{name} = {chosen!r} does not fit age range "
                                        f"{persona['demographics']['age_range']!r}",
                                        {"field": f"{group}.{name}", "value": chosen,
                                         "age_range": persona["demographics"]["age_range"]}))
    findings.extend(check_slots(task["clarification_script"], rubrics, table))
    return findings


def check_slots(script: dict[str, Any], rubrics: list[Rubric] | list[dict[str, Any]],
                table: FieldTable) -> list[Finding]:
    """The clarification script's findings.

    slot_incomplete (bad link, not 7-10 distinct keywords after normalisation, no field name among
    them, reply without the value in an accepted or spoken spelling),
    slot_collision (a keyword in two slots, a question opening two slots) and slot_unreachable
    (validation/slots.py). Used by check_leakage and, before the task schema, for LLM-written slots.
    """
    findings: list[Finding] = []
    by_id = {r.id: r for r in as_rubrics(rubrics)}
    owners: dict[str, str] = {}
    for slot in script["clarification_slots"]:
        problems = []
        linked = [by_id.get(rid) for rid in slot["linked_rubric_ids"]]
        if any(r is None or r.info_source != "clarification" for r in linked):
            problems.append("links a rubric that is missing or not a clarification rubric")
        kws = slot["trigger_keywords"]
        distinct = list(dict.fromkeys(normalize(k) for k in kws))  # text order: findings come out the same every run
        if not SLOT_KEYWORDS[0] <= len(kws) <= SLOT_KEYWORDS[1]:
            problems.append(f"has {len(kws)} trigger keywords (7-10 required)")
        elif len(distinct) < 7:
            problems.append(f"has {len(distinct)} distinct trigger keywords after normalisation (7-10 required)")
        spec = table.fields.get(slot["field"].removeprefix("details.")) if slot["field"] else None
        if spec is None:
            problems.append(f"names field {slot['field']!r}, absent from the field table")
        label = spec.label if spec else ""
        if label and normalize(label) not in distinct:
            problems.append(f"lacks the field's own name {label!r} among its keywords")
        for r in (r for r in linked if r is not None):
            if not reply_reveals(slot["user_response"], r, table):
                problems.append(f"reply does not contain the value of {r.id}")
        for p in problems:
            findings.append(Finding("slot_incomplete", f"slot {slot['slot_id']} {p}",
                                    {"slot_id": slot["slot_id"], "rubric_ids": slot["linked_rubric_ids"],
                                     "trigger_keywords": kws, "user_response": slot["user_response"]}))
        for kw in distinct:
            other = owners.setdefault(kw, slot["slot_id"])
            if other != slot["slot_id"]:
                findings.append(Finding("slot_collision", f"keyword {kw!r} opens slots {other} and {slot['slot_id']}",
                                        {"keyword": kw, "slot_ids": [other, slot["slot_id"]]}))
    findings.extend(check_reachability(script, table))
    return findings
