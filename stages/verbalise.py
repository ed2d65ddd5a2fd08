"""Stage 5, verbalisation: locked rubrics -> user query, persona and clarification script (offline templates).

The template verbaliser is the default: deterministic, no network; implicit requirements are
stated through the curated cues of cues.toml. It can only phrase what the
locked rubrics fix; stages 6 and 7 check the text it writes, exactly as they will check an LLM's.
"""

from __future__ import annotations

import random
import re
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from stages.features import value_forms
from stages.fields import FieldTable
from stages.replies import DEFAULT_RESPONSE, slot_reply
from stages.rubrics import bound_phrase
from stages.vouchers import describe_budget
from stages.text import contains_phrase, fix_articles, normalize

PERSONA_VOCAB = Path(__file__).with_name("persona_vocab.toml")

OPENERS = ("I'm looking for", "I need", "Can you help me find", "I want to buy", "Please find me")
NUMERIC_VERBS = {"average_rating": "be rated", "rating_number": "have", "price": "cost"}


@lru_cache(maxsize=4)
def persona_vocab(path: str | None = None) -> dict[str, Any]:
    """The persona noise vocabulary as written in persona_vocab.toml (groups, plus by_age lists)."""
    return tomllib.loads(Path(path or PERSONA_VOCAB).read_text(encoding="utf-8"))


def noise_whitelist() -> dict[str, set[str]]:
    """Every allowed value per noise field path ("demographics.household" -> {...}), by_age lists merged."""
    vocab = persona_vocab()
    allowed: dict[str, set[str]] = {}
    for group, fields in vocab.items():
        if group == "by_age":
            continue
        for name, options in fields.items():
            allowed[f"{group}.{name}"] = set(options)
    for lists in vocab["by_age"].values():
        allowed.setdefault("lifestyle.occupation", set()).update(lists["occupation"])
        allowed.setdefault("demographics.household", set()).update(lists["household"])
    return allowed


def _join(parts: list[str], word: str = "and") -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + f" {word} " + parts[-1]


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
    """How the query states one attribute or numeric rubric: "made of Plastic", "cost no more than $20"."""
    spec = table.by_rubric_field(rubric["field"])
    if rubric["type"] == "numeric_range":
        return f"{NUMERIC_VERBS.get(rubric['field'], 'be')} {bound_phrase(rubric['field'], rubric['expected_value'])}"
    return fill(spec.query_phrase, rubric["expected_value"])


def negative_phrase(rubric: dict[str, Any], table: FieldTable) -> str:
    """"its colour must not be Blue or Red"."""
    label = table.by_rubric_field(rubric["field"]).label
    return f"its {label} must not be " + _join(list(rubric["expected_value"]), "or")


def write_query(rubrics: list[dict[str, Any]], table: FieldTable, rng: random.Random,
                cues: dict[str, str] | None = None) -> str:
    """A request of one to four sentences stating every query rubric and nothing else.

    Sentence 1 names the product type (entity) and up to three attributes; sentence 2 the other
    attributes and the excluded values; sentence 3 the numeric bounds and review opinions;
    sentence 4 the voucher and budget.

    Args:
        rubrics: the locked rubrics.
        table: the field table (phrases).
        rng: the candidate's seeded generator (opening words).
        cues: {rubric id: clause} for implicit rubrics: the clause replaces the rubric's phrase.
    """
    cues = cues or {}
    q = [r for r in rubrics if r["info_source"] == "query"]
    entity = next((r["expected_value"] for r in q if r["type"] == "entity_match"), None)
    attrs = [cues.get(r["id"]) or requirement_phrase(r, table) for r in q if r["type"] == "attribute_match"]
    negs = [negative_phrase(r, table) for r in q if r["type"] == "negative_attribute"]
    nums = [requirement_phrase(r, table) for r in q if r["type"] == "numeric_range"]
    opinions = [f'"{r["expected_value"]}"' for r in q if r["type"] == "review_opinion"]
    budgets = [describe_budget(r["expected_value"]) for r in q if r["type"] == "budget_match"]
    subject, plural = _subject(entity)
    first = f"{rng.choice(OPENERS)} {subject}"
    if attrs[:3]:
        # sentence 1 hangs the attributes on the subject; sentence 2 on the singular "one"
        first += " " + _join([_plural_verb(a) for a in attrs[:3]] if plural else attrs[:3])
    sentences = [first + ("?" if first.startswith("Can you") else ".")]
    second = []
    if attrs[3:]:
        second.append(f"it has to be one {_join(attrs[3:])}")
    second += negs
    if second:
        sentences.append(_capitalise(_join(second)) + ".")
    third = []
    if nums:
        third.append(f"it must {_join(nums)}")
    if opinions:
        third.append(f"its reviews should say {_join(opinions)}")
    if third:
        sentences.append(_capitalise(_join(third)) + ".")
    sentences += budgets
    return fix_articles(" ".join(sentences))


def _subject(entity: str | None) -> tuple[str, bool]:
    """("wall clocks", True) / ("a VGA cable", False) / ("a product", False): the query's subject and
    whether it is plural. Acronyms and codes keep their case; other words are lower-cased."""
    if not entity:
        return "a product", False
    words = [w if (len(w) > 1 and w.isupper()) or any(c.isdigit() for c in w) else w.lower() for w in entity.split()]
    last = words[-1].lower()
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is"))
    phrase = " ".join(words)
    return (phrase, True) if plural else (fix_articles(f"a {phrase}"), False)


# Verbs that open phrases ("that pairs over ...", cues.toml, fields.toml) and their plural forms.
_PLURAL_VERBS = {"is": "are", "has": "have", "does": "do", "pairs": "pair", "joins": "join", "talks": "talk",
                 "connects": "connect", "survives": "survive", "collapses": "collapse", "sticks": "stick",
                 "runs": "run", "charges": "charge", "draws": "draw", "hangs": "hang", "sits": "sit",
                 "attaches": "attach", "smells": "smell", "closes": "close", "cinches": "cinch", "works": "work",
                 "holds": "hold", "comes": "come", "fits": "fit", "plugs": "plug", "goes": "go", "hides": "hide",
                 "replaces": "replace", "keeps": "keep", "uses": "use"}


def _plural_verb(phrase: str) -> str:
    """Make a phrase that opens with "that <verb>" agree with a plural subject: "that pairs" -> "that pair".

    Only a phrase's opening verb changes, and only a listed one ("that keys in the same pocket
    won't mark" has no verb there)."""
    words = phrase.split(" ", 2)
    if len(words) >= 2 and words[0] == "that" and words[1] in _PLURAL_VERBS:
        words[1] = _PLURAL_VERBS[words[1]]
    return " ".join(words)


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def persona_entry(rubric: dict[str, Any], table: FieldTable) -> tuple[str, str | list[str]]:
    """The (key, value) a persona rubric takes under `product_requirements`.

    attribute: (persona_key, value); negative: ("avoid_" + persona_key, excluded values);
    numeric: (persona_key, the bound in words, e.g. "no more than $20"). Writer and semantic
    check both use this, so they cannot disagree.
    """
    spec = table.by_rubric_field(rubric["field"])
    if rubric["type"] == "negative_attribute":
        return f"avoid_{spec.persona_key}", list(rubric["expected_value"])
    if rubric["type"] == "numeric_range":
        return spec.persona_key, bound_phrase(rubric["field"], rubric["expected_value"])
    return spec.persona_key, rubric["expected_value"]


def write_persona(rubrics: list[dict[str, Any]], table: FieldTable, rng: random.Random, user_id: str) -> dict[str, Any]:
    """A persona: whitelisted noise plus `product_requirements` holding exactly the persona rubrics.

    Noise values that would repeat any rubric value (token-aware) are skipped, so background
    never states a requirement by accident.
    """
    values = [v for r in rubrics for v in value_forms(r["expected_value"], r["field"])]

    def pick(options: list[str]) -> str:
        options = list(options)
        rng.shuffle(options)
        for opt in options:
            if not any(contains_phrase(opt, v) or contains_phrase(v, opt) for v in values):
                return opt
        return options[0]  # every option collides: stage 6 will reject with persona_noise_leak

    vocab = persona_vocab()
    age = pick(vocab["demographics"]["age_range"])
    by_age = vocab["by_age"][age]
    hobby = pick(vocab["lifestyle"]["hobbies"])
    habits = vocab["shopping_habits"]
    persona: dict[str, Any] = {
        "user_id": user_id,
        "demographics": {"age_range": age, "household": pick(by_age["household"]),
                         "location_type": pick(vocab["demographics"]["location_type"])},
        "lifestyle": {"occupation": pick(by_age["occupation"]),
                      "hobbies": [hobby, pick([h for h in vocab["lifestyle"]["hobbies"] if h != hobby])]},
        "shopping_habits": {name: pick(options) for name, options in habits.items()},
    }
    persona["product_requirements"] = dict(persona_entry(r, table) for r in rubrics if r["info_source"] == "persona")
    return persona


def clarification_reply(rubric: dict[str, Any], table: FieldTable) -> str:
    """The shopper's reply revealing one clarification rubric (stages/replies.py writes it)."""
    return slot_reply(rubric, table)


def write_clarification(rubrics: list[dict[str, Any]], table: FieldTable, max_turns: int) -> dict[str, Any]:
    """One slot per clarification rubric: the field's keywords (label included) and a reply containing the value."""
    slots = []
    for r in (r for r in rubrics if r["info_source"] == "clarification"):
        spec = table.by_rubric_field(r["field"])
        slots.append({
            "slot_id": f"s{len(slots) + 1}",
            "linked_rubric_ids": [r["id"]],
            "field": r["field"],
            "trigger_keywords": list(spec.keywords[:10]),
            "user_response": clarification_reply(r, table),
        })
    return {"clarification_slots": slots, "default_response": DEFAULT_RESPONSE,
            "max_clarification_turns": max_turns}
