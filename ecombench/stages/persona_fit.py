"""What a persona's background must agree with: who the product is for and how the shopper treats money.

One place for the rules, read by the persona writers (stages/verbalise.py, stages/verbalise_llm.py) to
draw a background that explains the requirements, and by stage 7 (validation/semantic.py) to reject a
persona that contradicts them (reason `persona_incoherent`):

- a child's product (an age range such as "Kid" or "4 - 12 years", a recommended age under 13, a
  department such as "Boys" or "Baby", a nursery) needs a household with children or grandchildren;
  a teenager's product a household with teenagers or grandchildren;
- a price cap or a budget after coupons (any source) is never paired with "pays more for quality".

Rubrics are read as dicts or typed models; only requirements the product must meet count (an excluded
"Kid" says nothing about the household).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ecombench.catalog.facts import STATED
from ecombench.catalog.type_vocabulary import heads
from ecombench.text import tokens

CHILD_HOUSEHOLDS = frozenset({"family with young children", "lives near the grandchildren"})
TEEN_HOUSEHOLDS = frozenset({"family with teenagers", "lives near the grandchildren"})
SPLURGE = "pays more for quality"
BUDGET_MINDED = ("watches every dollar", "compares prices first", "value-conscious")

_CHILD_WORDS = frozenset({"kid", "child", "toddler", "baby", "infant", "boy", "girl", "nursery", "newborn",
                          "preschool", "preschooler", "playroom"})
_TEEN_WORDS = frozenset({"teen", "teenager", "youth", "junior", "tween"})
_AGE_FIELDS = ("Age Range (Description)", "Manufacturer recommended age")
_WHO_FIELDS = (*_AGE_FIELDS, "Department", "Room Type")
_NUMBER_UNIT = re.compile(r"(\d+(?:\.\d+)?)\s*(years?|yrs?|months?|mos?)?", re.IGNORECASE)
ADULT_FROM = 13  # years: a product whose ages all lie below this is a child's
OPEN_CHILD_BELOW = 6  # years: an open range ("3 years and up") starting below this is a child's
TEEN_TO = 18


def _get(rubric: Any, key: str) -> Any:
    return rubric[key] if isinstance(rubric, Mapping) else getattr(rubric, key)


def _years(text: str) -> list[float]:
    """The ages a value names, in years ("6 - 24 months" -> [0.5, 2.0]; "3 years and up" -> [3.0])."""
    out = []
    unit_default = "month" if "month" in text.lower() else "year"
    for m in _NUMBER_UNIT.finditer(text):
        n = float(m.group(1))
        unit = (m.group(2) or unit_default).lower()
        out.append(n / 12 if unit.startswith("mo") else n)
    return out


def who_for(field: str, value: str) -> str | None:
    """"child", "teen" or None: whom a requirement's value says the product is for.

    >>> who_for("Age Range (Description)", "Kid"), who_for("Manufacturer recommended age", "4 - 12 years")
    ('child', 'child')
    >>> who_for("Manufacturer recommended age", "13 - 17 years"), who_for("Department", "Womens")
    ('teen', None)
    """
    name = field.removeprefix("details.")
    if name not in _WHO_FIELDS:
        return None
    words = set(tokens(value))
    if words & _CHILD_WORDS:
        return "child"
    if words & _TEEN_WORDS:
        return "teen"
    if name in _AGE_FIELDS:
        ages = _years(value)
        if not ages:
            return None
        opens_up = bool(re.search(r"\+|and up|up\b|older|plus|over", value, re.IGNORECASE))
        top = ages[0] if opens_up else max(ages)
        if opens_up:  # "3 years and up" is a small child's; "12 and up" suits adults as well
            return "child" if top < OPEN_CHILD_BELOW else None
        return "child" if top < ADULT_FROM else "teen" if top < TEEN_TO else None
    return None


# A word right after "for" in a title says whom the product is for ("Smart Watch for Kids"); words in its head
# say it of the product ("HOBIBEAR Kids Breathable Knit Sneakers", "Avia ... Slip On Girls' Sneakers").
# A room of the target's own page is no such word: catch-all lists name a nursery for curtains ("for Bedroom Living
# Room Kitchen ... Nursery").
_PRODUCT_WHO_FIELDS = (*_AGE_FIELDS, "Department")
_FOR_WORD = re.compile(r"\bfor\s+([A-Za-z']+)", re.IGNORECASE)


def product_for_whom(product: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """("child" or "teen", field, value): whom the target's own page says it is for, or None.

    A stated fact of an age or department field (`who_for`; the product's "facts", `ecombench.catalog.facts`; not a
    room: `_PRODUCT_WHO_FIELDS`)
    that a title, bullet or label states, or a child's word (`_CHILD_WORDS`) in the title's head or right after
    its "for". A shopper who buys a kid's smartwatch or girls' sneakers has a child to buy for, whether or not the
    age is among the task's requirements: a reviewer read three such tasks, whose persona lived alone, as a
    shopper with no reason to buy the product. A description alone does not count ("kid's birthday party" of
    balloon clips). Field "title" for a title's word.
    """
    for fact in product.get("facts") or ():
        sources = set(fact.get("sources") or [fact.get("source")])
        if fact.get("field") in _PRODUCT_WHO_FIELDS and fact.get("polarity") == STATED and sources - {"description"}:
            who = who_for(str(fact.get("field", "")), str(fact.get("value", "")))
            if who is not None:
                return who, str(fact["field"]), str(fact["value"])
    title = str(product.get("title") or "")
    head = heads(title)[:1]
    words = [*(tokens(head[0]) if head else ()), *(t for w in _FOR_WORD.findall(title) for t in tokens(w)[:1])]
    word = next((w for w in words if w in _CHILD_WORDS), None)
    return ("child", "title", word) if word else None


def young_wearer_fact(product: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, value) of the first fact saying the target is a child's or a teen's that its title or label states.

    Of the fields naming a person (age, department: `_PRODUCT_WHO_FIELDS`); a bullet's mention is too weak to be the
    requirement ("kid's birthday party" of balloon clips), though it still chooses the household
    (`product_for_whom`). A shopper buying girls' running shoes says so: a reviewer read such tasks, which never
    did, as missing what the product is.
    """
    for fact in product.get("facts") or ():
        sources = set(fact.get("sources") or [fact.get("source")])
        if (fact.get("field") in _PRODUCT_WHO_FIELDS and fact.get("polarity") == STATED
                and sources & {"title", "details"} and who_for(str(fact["field"]), str(fact.get("value", "")))):
            return str(fact["field"]), str(fact["value"])
    return None


@dataclass(frozen=True)
class PersonaNeeds:
    """What the background must agree with.

    Attributes:
        households: the households allowed (None: any); with the rubric that asks it.
        budget_minded: a price cap or budget is required, so the shopper must not splurge.
        reasons: (rule, rubric id, field, value) behind each need, for findings.
    """

    households: frozenset[str] | None
    budget_minded: bool
    reasons: tuple[tuple[str, str, str, str], ...]


def persona_needs(rubrics: list[Any], for_whom: tuple[str, str, str] | None = None) -> PersonaNeeds:
    """The background's needs from a task's rubrics (every source: the whole request must make sense).

    `for_whom`: whom the target itself is for (`product_for_whom`), a need even when no rubric asks it.
    """
    households: frozenset[str] | None = None
    budget = False
    reasons = []
    if for_whom is not None:
        households = CHILD_HOUSEHOLDS if for_whom[0] == "child" else TEEN_HOUSEHOLDS
        reasons.append((f"{for_whom[0]}_product", "", for_whom[1], for_whom[2]))
    for r in rubrics:
        rtype, field, value = _get(r, "type"), _get(r, "field"), _get(r, "expected_value")
        if rtype == "attribute_match" and isinstance(value, str):
            who = who_for(field, value)
            if who is not None:
                allowed = CHILD_HOUSEHOLDS if who == "child" else TEEN_HOUSEHOLDS
                households = allowed if households is None else (households & allowed) or allowed
                reasons.append((f"{who}_product", _get(r, "id"), field, value))
        elif (rtype == "numeric_range" and field == "price" and _bound(value).get("max") is not None) \
                or rtype == "budget_match":
            budget = True
            reasons.append(("price_cap", _get(r, "id"), field, str(_bound(value).get("max", "budget"))))
    return PersonaNeeds(households=households, budget_minded=budget, reasons=tuple(reasons))


def _bound(value: Any) -> dict[str, Any]:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return value if isinstance(value, dict) else {}


PERSONA_VOCAB = Path(__file__).resolve().parent.parent / "tables" / "persona_vocab.toml"


@lru_cache(maxsize=4)
def persona_vocab(path: str | None = None) -> dict[str, Any]:
    """The persona noise vocabulary as written in persona_vocab.toml (groups, by_age and location_by_household)."""
    return tomllib.loads(Path(path or PERSONA_VOCAB).read_text(encoding="utf-8"))


def incoherences(persona: Mapping[str, Any], rubrics: list[Any]) -> list[dict[str, str]]:
    """Every way the persona's background contradicts the task's requirements (empty when it fits).

    Returns:
        [{rule, rubric_id, field, value, noise_field, noise_value}]: rule "child_product" / "teen_product"
        (the household has no child / teenager of the right age), "price_cap" (a splurging shopper with a cap),
        "home" (a household living where it cannot: a dorm in a suburban house; persona_vocab.toml's
        location_by_household).
    """
    needs = persona_needs(rubrics)
    household = str((persona.get("demographics") or {}).get("household", ""))
    sensitivity = str((persona.get("shopping_habits") or {}).get("price_sensitivity", ""))
    out = []
    location = str((persona.get("demographics") or {}).get("location_type", ""))
    places = persona_vocab().get("location_by_household", {}).get(household)
    if places and location and location not in places:
        out.append({"rule": "home", "rubric_id": "", "field": "", "value": "",
                    "noise_field": "demographics.location_type", "noise_value": location})
    for rule, rid, field, value in needs.reasons:
        if rule in ("child_product", "teen_product") and needs.households is not None and household \
                and household not in needs.households:  # a record with no household says nothing against it
            out.append({"rule": rule, "rubric_id": rid, "field": field, "value": value,
                        "noise_field": "demographics.household", "noise_value": household})
        elif rule == "price_cap" and sensitivity == SPLURGE:
            out.append({"rule": rule, "rubric_id": rid, "field": field, "value": value,
                        "noise_field": "shopping_habits.price_sensitivity", "noise_value": sensitivity})
    return out
