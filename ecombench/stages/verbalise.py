"""Stage 5, verbalisation: locked rubrics -> user query, persona and clarification script (offline templates).

The persona and clarification writers serve both offline verbalisers; `write_query` is template-v1's query
(template-v2's is stages/verbalise_v2.py, the default). Deterministic, no network; implicit requirements are
stated through the curated cues of cues.toml. It can only phrase what the
locked rubrics fix; stages 6 and 7 check the text it writes, exactly as they will check an LLM's.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from ecombench.rubrics import RubricLike, as_spec
from ecombench.schemas.models import Rubric
from ecombench.stages.persona_fit import BUDGET_MINDED, persona_needs, persona_vocab
from ecombench.stages.phrasing import phrasing_of, slot_reply
from ecombench.stages.replies import DEFAULT_RESPONSE, profile_reply
from ecombench.tables.fields import FieldTable
from ecombench.text import contains_phrase, fix_articles, join_words

OPENERS = ("I'm looking for", "I need", "Can you help me find", "I want to buy", "Please find me")


def noise_whitelist() -> dict[str, set[str]]:
    """Every allowed value per noise field path ("demographics.household" -> {...}), by_age lists merged."""
    vocab = persona_vocab()
    allowed: dict[str, set[str]] = {}
    for group, fields in vocab.items():
        if group in ("by_age", "location_by_household"):
            continue
        for name, options in fields.items():
            allowed[f"{group}.{name}"] = set(options)
    for lists in vocab["by_age"].values():
        allowed.setdefault("lifestyle.occupation", set()).update(lists["occupation"])
        allowed.setdefault("demographics.household", set()).update(lists["household"])
    return allowed


def requirement_phrase(rubric: RubricLike | Mapping[str, Any], table: FieldTable) -> str:
    """How the query states one rubric.

    For example "made of Plastic", "cost no more than $20", "its colour must not be Blue or Red"
    (its rubric type's phrase; a record is parsed first).
    """
    typed = as_spec(rubric)
    return phrasing_of(typed).query_phrase(typed, table)


def write_query(rubrics: list[Rubric], table: FieldTable, rng: random.Random,
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
    parts: dict[str, list[str]] = {role: [] for role in ("subject", "attribute", "exclusion", "bound", "opinion",
                                                         "budget")}
    for r in rubrics:
        if r.info_source == "query":
            kind = phrasing_of(r)
            parts[kind.query_role].append((cues.get(r.id) if kind.query_role == "attribute" else None)
                                          or kind.query_phrase(r, table))
    entity = parts["subject"][0] if parts["subject"] else None
    attrs, negs, nums = parts["attribute"], parts["exclusion"], parts["bound"]
    opinions, budgets = parts["opinion"], parts["budget"]
    subject, plural = _subject(entity)
    first = f"{rng.choice(OPENERS)} {subject}"
    if attrs[:3]:
        # sentence 1 hangs the attributes on the subject; sentence 2 on the singular "one"
        first += " " + join_words([_plural_verb(a) for a in attrs[:3]] if plural else attrs[:3])
    sentences = [first + ("?" if first.startswith("Can you") else ".")]
    second = []
    if attrs[3:]:
        second.append(f"it has to be one {join_words(attrs[3:])}")
    second += negs
    if second:
        sentences.append(_capitalise(join_words(second)) + ".")
    third = []
    if nums:
        third.append(f"it must {join_words(nums)}")
    if opinions:
        third.append(f"its reviews should say {join_words(opinions)}")
    if third:
        sentences.append(_capitalise(join_words(third)) + ".")
    sentences += budgets
    return fix_articles(" ".join(sentences))


def _subject(entity: str | None) -> tuple[str, bool]:
    """The query's subject and whether it is plural.

    For example ("wall clocks", True) / ("a VGA cable", False) / ("a product", False). Acronyms and
    codes keep their case; other words are lower-cased.
    """
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
                 "replaces": "replace", "keeps": "keep", "uses": "use", "links": "link", "matches": "match",
                 "feels": "feel", "softens": "soften", "shows": "show", "carries": "carry", "stays": "stay",
                 "takes": "take", "covers": "cover", "curves": "curve"}


def _plural_verb(phrase: str) -> str:
    """Make a phrase that opens with "that <verb>" agree with a plural subject: "that pairs" -> "that pair".

    Only a phrase's opening verb changes, and only a listed one ("that keys in the same pocket
    won't mark" has no verb there).
    """
    words = phrase.split(" ", 2)
    if len(words) >= 2 and words[0] == "that" and words[1] in _PLURAL_VERBS:
        words[1] = _PLURAL_VERBS[words[1]]
    return " ".join(words)


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def persona_entry(rubric: RubricLike | Mapping[str, Any], table: FieldTable) -> tuple[str, str | list[str]]:
    """The (key, value) a persona rubric takes under `product_requirements` (its rubric type's entry).

    attribute: (persona_key, value); negative: ("avoid_" + persona_key, excluded values);
    numeric: (persona_key, the bound in words, e.g. "no more than $20"). Writer and semantic
    check both use this, so they cannot disagree.
    """
    typed = as_spec(rubric)
    return phrasing_of(typed).persona_entry(typed, table)


def write_persona(rubrics: list[Rubric], table: FieldTable, rng: random.Random, user_id: str,
                  for_whom: tuple[str, str, str] | None = None) -> dict[str, Any]:
    """A persona: whitelisted noise that fits the requirements, plus `product_requirements` holding the persona rubrics.

    The background is drawn to explain the task (stages/persona_fit.py): a child's product (by a rubric, or by
    the target's own page: `for_whom`, `product_for_whom`) goes to a household with children or grandchildren
    (and an age range that has one), a price cap or budget to a shopper who watches prices. Noise values that
    would repeat any rubric value (token-aware) are skipped, so background
    never states a requirement by accident.
    """
    values = [v for r in rubrics for v in phrasing_of(r).forms(r)]
    needs = persona_needs(rubrics, for_whom)

    def pick(options: list[str] | tuple[str, ...]) -> str:
        options = list(options)
        rng.shuffle(options)
        for opt in options:
            if not any(contains_phrase(opt, v) or contains_phrase(v, opt) for v in values):
                return opt
        return options[0]  # every option collides: stage 6 will reject with persona_noise_leak

    vocab = persona_vocab()
    households = needs.households
    ages = [a for a in vocab["demographics"]["age_range"]
            if households is None or set(vocab["by_age"][a]["household"]) & households]
    age = pick(ages or vocab["demographics"]["age_range"])
    by_age = vocab["by_age"][age]
    household = pick([h for h in by_age["household"] if households is None or h in households] or by_age["household"])
    hobby = pick(vocab["lifestyle"]["hobbies"])
    habits = dict(vocab["shopping_habits"])
    if needs.budget_minded:
        habits["price_sensitivity"] = [p for p in habits["price_sensitivity"] if p in BUDGET_MINDED]
    persona: dict[str, Any] = {
        "user_id": user_id,
        "demographics": {"age_range": age, "household": household,
                         "location_type": pick(vocab.get("location_by_household", {}).get(household)
                                               or vocab["demographics"]["location_type"])},
        "lifestyle": {"occupation": pick(by_age["occupation"]),
                      "hobbies": [hobby, pick([h for h in vocab["lifestyle"]["hobbies"] if h != hobby])]},
        "shopping_habits": {name: pick(options) for name, options in habits.items()},
    }
    persona["product_requirements"] = dict(persona_entry(r, table) for r in rubrics if r.info_source == "persona")
    return persona


def clarification_reply(rubric: RubricLike | Mapping[str, Any], table: FieldTable,
                        rng: random.Random | None = None) -> str:
    """The shopper's reply revealing one clarification rubric (its rubric type's reply, stages/replies.py)."""
    return slot_reply(rubric, table, rng)


def write_profile_replies(rubrics: list[Rubric], table: FieldTable,
                          rng: random.Random | None = None) -> list[dict[str, Any]]:
    """One reply per persona rubric, for a question about its field: it points to the profile or states the value.

    Returns:
        [{field, linked_rubric_ids, mode, user_response}] (schemas ProfileReply), in rubric order.
    """
    out = []
    for r in (r for r in rubrics if r.info_source == "persona"):
        mode, reply = profile_reply(r, table, rng, slot_reply(r, table, rng))
        out.append({"field": r.field, "linked_rubric_ids": [r.id], "mode": mode, "user_response": reply})
    return out


def write_clarification(rubrics: list[Rubric], table: FieldTable, max_turns: int,
                        rng: random.Random | None = None) -> dict[str, Any]:
    """One slot per clarification rubric and one profile reply per persona rubric.

    Each slot holds the field's keywords (label included) and a reply containing the value, in one of the
    field's reply forms drawn with `rng` (the verbalisation stage's generator; None: each field's first form).
    """
    slots: list[dict[str, Any]] = []
    for r in (r for r in rubrics if r.info_source == "clarification"):
        spec = table.by_rubric_field(r.field)
        slots.append({
            "slot_id": f"s{len(slots) + 1}",
            "linked_rubric_ids": [r.id],
            "field": r.field,
            "trigger_keywords": list(spec.keywords[:10]),
            "user_response": clarification_reply(r, table, rng),
        })
    return {"clarification_slots": slots, "profile_replies": write_profile_replies(rubrics, table, rng),
            "default_response": DEFAULT_RESPONSE, "max_clarification_turns": max_turns}
