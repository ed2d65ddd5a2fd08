"""Stage 5, verbalisation: locked rubrics -> user query, persona and clarification script (offline templates).

The template verbaliser is the default: deterministic, no network. It can only phrase what the
locked rubrics fix; stages 6 and 7 check the text it writes, exactly as they will check an LLM's.
"""

from __future__ import annotations

import random
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from stages.fields import FieldTable
from stages.rubrics import bound_phrase
from stages.text import contains_phrase, fix_articles, normalize

PERSONA_VOCAB = Path(__file__).with_name("persona_vocab.toml")

OPENERS = ("I'm looking for", "I need", "Can you help me find", "I want to buy", "Please find me")
DEFAULT_RESPONSE = "I don't have a preference on that; whatever fits the rest of what I asked for."
NUMERIC_VERBS = {"average_rating": "be rated", "rating_number": "have", "price": "cost"}


@lru_cache(maxsize=4)
def persona_vocab(path: str | None = None) -> dict[str, dict[str, list[str]]]:
    """The whitelist of persona noise values: {group: {field: [values]}}."""
    return tomllib.loads(Path(path or PERSONA_VOCAB).read_text(encoding="utf-8"))


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def fill(template: str, value: str) -> str:
    """Put a value into a field template without doubling the template's noun.

    "with a {value} connector" + "barrel connector" -> "with a barrel connector" (not
    "barrel connector connector"); articles follow the value ("an Automobile theme").
    """
    pre, _, post = template.partition("{value}")
    noun = post.rstrip(".!?")
    tail = normalize(noun).split()
    if tail and normalize(value).split()[-len(tail):] == tail:
        post = post[len(noun):]
    return fix_articles(f"{pre}{value}{post}")


def requirement_phrase(rubric: dict[str, Any], table: FieldTable) -> str:
    """How the query states one rubric: "made of Plastic", "cost no more than $20"."""
    spec = table.by_rubric_field(rubric["field"])
    if rubric["type"] == "numeric_range":
        return f"{NUMERIC_VERBS.get(rubric['field'], 'be')} {bound_phrase(rubric['field'], rubric['expected_value'])}"
    return fill(spec.query_phrase, rubric["expected_value"])


def write_query(rubrics: list[dict[str, Any]], table: FieldTable, rng: random.Random) -> str:
    """A one-to-three-sentence request stating every query rubric and nothing else.

    Sentence 1 names the product type (entity) and up to three attributes, sentence 2 the other
    attributes, sentence 3 the numeric bounds.
    """
    q = [r for r in rubrics if r["info_source"] == "query"]
    entity = next((r["expected_value"] for r in q if r["type"] == "entity_match"), None)
    attrs = [requirement_phrase(r, table) for r in q if r["type"] == "attribute_match"]
    nums = [requirement_phrase(r, table) for r in q if r["type"] == "numeric_range"]
    subject = entity.lower() if entity else "a product"
    first = f"{rng.choice(OPENERS)} {subject}"
    if attrs[:3]:
        first += " " + _join(attrs[:3])
    sentences = [first + ("?" if first.startswith("Can you") else ".")]
    if attrs[3:]:
        sentences.append(f"It has to be one {_join(attrs[3:])}.")
    if nums:
        sentences.append(f"It must {_join(nums)}.")
    return fix_articles(" ".join(sentences))


def write_persona(rubrics: list[dict[str, Any]], table: FieldTable, rng: random.Random, user_id: str) -> dict[str, Any]:
    """A persona: whitelisted noise plus `product_requirements` holding exactly the persona rubrics.

    Noise values that would repeat any rubric value (token-aware) are skipped, so background
    never states a requirement by accident.
    """
    values = [str(r["expected_value"]) for r in rubrics if isinstance(r["expected_value"], str)]

    def pick(options: list[str]) -> str:
        options = list(options)
        rng.shuffle(options)
        for opt in options:
            if not any(contains_phrase(opt, v) or contains_phrase(v, opt) for v in values):
                return opt
        return options[0]  # every option collides: stage 6 will reject with persona_noise_leak

    vocab = persona_vocab()
    persona: dict[str, Any] = {"user_id": user_id}
    for group, fields in vocab.items():
        persona[group] = {}
        for name, options in fields.items():
            if name == "hobbies":
                first = pick(options)
                second = pick([o for o in options if o != first])
                persona[group][name] = [first, second]
            else:
                persona[group][name] = pick(options)
    persona["product_requirements"] = {
        table.by_rubric_field(r["field"]).persona_key: r["expected_value"]
        for r in rubrics if r["info_source"] == "persona"
    }
    return persona


def write_clarification(rubrics: list[dict[str, Any]], table: FieldTable, max_turns: int) -> dict[str, Any]:
    """One slot per clarification rubric: the field's keywords (label first) and a reply containing the value."""
    slots = []
    for r in (r for r in rubrics if r["info_source"] == "clarification"):
        spec = table.by_rubric_field(r["field"])
        if r["type"] == "numeric_range":
            reply = spec.reply.format(bound=bound_phrase(r["field"], r["expected_value"]))
        else:
            reply = fill(spec.reply, r["expected_value"])
        slots.append({
            "slot_id": f"s{len(slots) + 1}",
            "linked_rubric_ids": [r["id"]],
            "field": r["field"],
            "trigger_keywords": list(spec.keywords[:10]),
            "user_response": reply,
        })
    return {"clarification_slots": slots, "default_response": DEFAULT_RESPONSE,
            "max_clarification_turns": max_turns}
