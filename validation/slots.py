"""The clarification slot matcher: which slots a shopper's question opens.

One matcher for validation and, later, the agent sandbox's `ask_user`: a slot opens when one of
its trigger keywords occurs in the question as whole tokens (so "use" does not open on
"user", unlike the reference's loose substring test, §15.23). Validation asks each slot's
canonical question — built from its field's label — and requires that it opens that slot and
no other.
"""

from __future__ import annotations

from typing import Any

from stages.fields import FieldTable
from stages.text import normalize, tokens
from validation.findings import Finding


def opened_slots(question: str, slots: list[dict[str, Any]]) -> list[str]:
    """Ids of the slots a question opens, in slot order.

    A slot matches where one of its trigger keywords occurs in `question` as whole tokens. A
    match lying inside a longer match of another keyword is dropped, so "What screen size ...?"
    opens the screen-size slot and not a plain "size" slot, while "What is it made from, and
    what price?" opens both the material and the price slot. Equal matches on the same words
    open every tied slot (a collision).
    """
    words = tokens(question)
    matches: list[tuple[int, int, str]] = []
    for s in slots:
        for kw in s["trigger_keywords"]:
            k = tokens(kw)
            matches += [(i, i + len(k), s["slot_id"]) for i in range(len(words) - len(k) + 1)
                        if k and words[i:i + len(k)] == k]
    kept = {sid for start, end, sid in matches
            if not any(s2 <= start and end <= e2 and (e2 - s2) > (end - start) for s2, e2, _ in matches)}
    return [s["slot_id"] for s in slots if s["slot_id"] in kept]


def canonical_question(label: str) -> str:
    """The plain question an agent would ask about a field: "What colour do you want?"."""
    return f"What {label} do you want?"


def rephrased_question(synonym: str) -> str:
    """A second way to ask, built from another of the field's own words: "Anything about fabric I should know?"."""
    return f"Anything about {synonym} I should know?"


def check_reachability(script: dict[str, Any], table: FieldTable) -> list[Finding]:
    """Ask each slot's canonical question and one rephrased from the field's synonyms.

    The synonyms are the field's other keywords in the field table: slot_unreachable when a question
    does not open the slot, slot_collision when it opens other slots too. Findings carry the question
    and the slots it opened.
    """
    findings = []
    slots = script["clarification_slots"]
    for slot in slots:
        spec = table.fields.get(slot["field"].removeprefix("details."))
        if spec is None:  # reported as slot_incomplete by the leakage check; no question to ask
            continue
        synonyms = [k for k in spec.keywords if normalize(k) != normalize(spec.label)]
        questions = [canonical_question(spec.label)] + [rephrased_question(k) for k in synonyms[:1]]
        for question in questions:
            opened = opened_slots(question, slots)
            if slot["slot_id"] not in opened:
                findings.append(Finding("slot_unreachable", f"slot {slot['slot_id']} does not open on {question!r}",
                                        {"slot_id": slot["slot_id"], "question": question, "opened": opened}))
            if [o for o in opened if o != slot["slot_id"]]:
                findings.append(Finding("slot_collision",
                                        f"{question!r} opens slots {opened}, not only {slot['slot_id']}",
                                        {"slot_id": slot["slot_id"], "question": question, "opened": opened}))
    return findings
