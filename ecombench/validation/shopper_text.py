"""Figures on how the shopper talks and what it keeps hidden, over a split's tasks (report.md, manifest counts).

- reply forms: every clarification reply and every profile reply with its value and field label masked
  (stages/replies.py `reply_form`); the largest share one form takes of all replies;
- five-word phrases: the share of queries holding each run of five words, words of the product type aside;
- thresholds: numeric bounds (price, rating, rating count) among persona and clarification requirements;
- persona coherence: personas whose background contradicts their requirements (stages/persona_fit.py);
- backgrounds: how many personas share the whole background (demographics, lifestyle, shopping habits);
- profile replies by mode ("points" to the profile, or "states" the value too).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ecombench.rubrics import as_rubrics
from ecombench.stages.persona_fit import incoherences
from ecombench.stages.phrasing import rubric_forms
from ecombench.stages.product_naming import natural_type
from ecombench.stages.replies import reply_form, speech_case, spoken_forms
from ecombench.stages.reply_forms import profile_name
from ecombench.tables.fields import FieldTable

THRESHOLD_FIELDS = ("price", "average_rating", "rating_number")
PHRASE_WORDS = 5
TOP = 5
_WORD = re.compile(r"[a-z0-9$][a-z0-9$'.-]*")


def _words(text: str) -> list[str]:
    return [w.rstrip(".'-") for w in _WORD.findall(text.lower())]


def _masks(rubric: dict[str, Any], table: FieldTable) -> list[str]:
    """The strings a reply's form hides: the value's forms, spoken and speech-case spellings, the field's label."""
    value = rubric["expected_value"]
    out = list(rubric_forms(rubric))
    for v in value if isinstance(value, list) else [value]:
        if isinstance(v, str):
            out += [v, speech_case(v), *spoken_forms(v, rubric["field"])]
    try:
        spec = table.by_rubric_field(rubric["field"])
        out += [spec.label, profile_name(spec.name, spec.label)]
    except KeyError:
        pass
    return [o for o in out if isinstance(o, str)]


def replies_of(task: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(reply, linked rubric ids) of every clarification slot and profile reply of a task."""
    script = task["clarification_script"]
    return ([(s["user_response"], s["linked_rubric_ids"]) for s in script["clarification_slots"]]
            + [(p["user_response"], p["linked_rubric_ids"]) for p in script.get("profile_replies") or []])


def reply_form_counts(tasks: list[dict[str, Any]], table: FieldTable) -> Counter[str]:
    """How many replies of the split use each form."""
    forms: Counter[str] = Counter()
    for t in tasks:
        by_id = {r["id"]: r for r in t["rubrics"]}
        for reply, ids in replies_of(t):
            masks = [m for rid in ids if rid in by_id for m in _masks(by_id[rid], table)]
            forms[reply_form(reply, masks)] += 1
    return forms


def query_phrases(task: dict[str, Any]) -> set[str]:
    """The runs of PHRASE_WORDS words of a task's query, runs holding a word of its product type left out."""
    types = [str(r["expected_value"]) for r in task["rubrics"] if r["type"] == "entity_match"]
    # the product type as the query names it too ("Mice" is said "a mouse"; stages/product_naming.py)
    entity = {w for v in types for w in _words(v) + _words(natural_type(v))} - {"a", "an"}
    entity |= {w[:-1] for w in entity if w.endswith("s")} | {w + "s" for w in entity}
    ws = _words(task["user_query"])
    return {" ".join(ws[i:i + PHRASE_WORDS]) for i in range(len(ws) - PHRASE_WORDS + 1)
            if not set(ws[i:i + PHRASE_WORDS]) & entity}


def phrase_counts(tasks: list[dict[str, Any]]) -> Counter[str]:
    """In how many queries each run of PHRASE_WORDS words occurs (runs holding a product-type word are skipped)."""
    counts: Counter[str] = Counter()
    for t in tasks:
        counts.update(query_phrases(t))
    return counts


def _top(counter: Counter[str], total: int) -> list[list[Any]]:
    return [[k, n, round(n / total, 4)] for k, n in counter.most_common(TOP)] if total else []


def background(persona: dict[str, Any]) -> str:
    """The whole background of a persona as one comparable string (requirements and id aside)."""
    parts = []
    for group in ("demographics", "lifestyle", "shopping_habits"):
        for k, v in sorted((persona.get(group) or {}).items()):
            parts.append(f"{group}.{k}={sorted(v) if isinstance(v, list) else v}")
    return "; ".join(parts)


def shopper_text_figures(tasks: list[dict[str, Any]], table: FieldTable) -> dict[str, Any]:
    """The module's figures for one split.

    Returns:
        {replies, reply_forms, max_reply_form_share, top_reply_forms: [[form, count, share]],
         queries, max_phrase_share, top_phrases: [[phrase, queries, share]], hidden_requirements,
         hidden_thresholds, threshold_share, max_thresholds_in_a_source, incoherent_personas,
         incoherent_examples, shared_backgrounds (personas whose whole background another persona has),
         profile_replies_by_mode}; shares are fractions in [0, 1], None when there is nothing to count.
    """
    forms = reply_form_counts(tasks, table)
    n_replies = sum(forms.values())
    phrases = phrase_counts(tasks)
    hidden = [(t, r) for t in tasks for r in t["rubrics"] if r["info_source"] in ("persona", "clarification")]
    thresholds = [r for _, r in hidden if r["field"] in THRESHOLD_FIELDS]
    per_source = Counter((t["id"], r["info_source"]) for t, r in hidden if r["field"] in THRESHOLD_FIELDS)
    incoherent = [(t["id"], c) for t in tasks for c in incoherences(t["user_persona"], as_rubrics(t["rubrics"]))]
    backgrounds = Counter(background(t["user_persona"]) for t in tasks)
    modes = Counter(p["mode"] for t in tasks for p in t["clarification_script"].get("profile_replies") or [])
    return {
        "replies": n_replies,
        "reply_forms": len(forms),
        "max_reply_form_share": round(max(forms.values()) / n_replies, 4) if n_replies else None,
        "top_reply_forms": _top(forms, n_replies),
        "queries": len(tasks),
        "max_phrase_share": round(max(phrases.values()) / len(tasks), 4) if phrases else None,
        "top_phrases": _top(phrases, len(tasks)),
        "hidden_requirements": len(hidden),
        "hidden_thresholds": len(thresholds),
        "threshold_share": round(len(thresholds) / len(hidden), 4) if hidden else None,
        "max_thresholds_in_a_source": max(per_source.values(), default=0),
        "incoherent_personas": len({tid for tid, _ in incoherent}),
        "incoherent_examples": [{"task_id": tid, **c} for tid, c in incoherent[:TOP]],
        "shared_backgrounds": sum(n for n in backgrounds.values() if n > 1),
        "profile_replies_by_mode": dict(sorted(modes.items())),
    }
