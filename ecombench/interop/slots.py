"""Task requirements as the slots of conversational-recommendation formats, and where a text states them.

UserSimCRS and DialogueKit speak of *slots* (upper-case names such as `COLOR`) with string values. One
place maps a field or rubric to its slot and its value in words, and finds the words of a text that
state a rubric's value (every spelling the leakage rules know), so an exported utterance can annotate
exactly the characters a template builder will replace with a placeholder.
"""

from __future__ import annotations

import re
from typing import Any

from ecombench.tables.fields import FieldTable
from ecombench.text import find_phrase
from ecombench.validation.leakage import leak_forms

# Slots of the top-level product fields, in item-collection column order after ID, ASIN and NAME.
TOP_LEVEL_SLOTS = {"main_category": "MAIN_CATEGORY", "store": "STORE", "price": "PRICE",
                   "average_rating": "AVERAGE_RATING", "rating_number": "RATING_NUMBER"}
# Slots of rubric fields that are not product columns.
RUBRIC_FIELD_SLOTS = {"title": "PRODUCT_TYPE", "review": "REVIEWS", "budget": "BUDGET"}


def slot_name(name: str) -> str:
    """The slot of a field: upper case, runs of other characters as one underscore.

    >>> slot_name("details.Age Range (Description)")
    'AGE_RANGE_DESCRIPTION'
    >>> slot_name("average_rating")
    'AVERAGE_RATING'
    """
    name = name.removeprefix("details.")
    if name in TOP_LEVEL_SLOTS:
        return TOP_LEVEL_SLOTS[name]
    if name in RUBRIC_FIELD_SLOTS:
        return RUBRIC_FIELD_SLOTS[name]
    return re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_")


def constraint_slot(rubric: dict[str, Any]) -> str:
    """The slot a rubric constrains: its field's slot, with `NOT_` before it for an excluded value."""
    slot = slot_name(rubric["field"])
    return f"NOT_{slot}" if rubric["type"] == "negative_attribute" else slot


def _num(x: float) -> str:
    return f"{x:g}"


def constraint_value(rubric: dict[str, Any]) -> Any:
    """A rubric's value as a slot value a simulator can say: words, or a list for several values.

    attribute / entity / review opinion -> the value itself; negative_attribute -> the excluded
    values (list); numeric_range -> "at least 3.5", "under 30", "between 10 and 30";
    budget_match -> "at most 7 after coupons". The exact typed value stays in the metadata.

    >>> constraint_value({"type": "numeric_range", "expected_value": {"min": 4, "max": 30, "max_inclusive": False}})
    'at least 4 and under 30'
    """
    value = rubric["expected_value"]
    if rubric["type"] == "numeric_range":
        lo, hi = value.get("min"), value.get("max")
        lo_in, hi_in = value.get("min_inclusive", True), value.get("max_inclusive", True)
        if lo is not None and hi is not None and lo_in and hi_in:
            return f"between {_num(lo)} and {_num(hi)}"
        parts = []
        if lo is not None:
            parts.append(("at least " if lo_in else "more than ") + _num(lo))
        if hi is not None:
            parts.append(("at most " if hi_in else "under ") + _num(hi))
        return " and ".join(parts)
    if rubric["type"] == "budget_match":
        return f"at most {_num(value['max_total'])} after coupons"
    return list(value) if isinstance(value, (list, tuple)) else value


def spoken_value(rubric: dict[str, Any]) -> str:
    """`constraint_value` as one string (several values joined by ", ")."""
    value = constraint_value(rubric)
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def stated_spans(text: str, rubric: dict[str, Any], table: FieldTable) -> list[tuple[str, int, int]]:
    """Where `text` states a rubric's value: (the words as written, start, end), in text order.

    Every spelling the leakage rules know counts (aliases, "$30" for a price bound, a spoken age).
    A rubric with one value gives at most one span (its first stated spelling); an exclusion gives
    one per excluded value the text names. [] when the text states none.
    """
    try:
        forms = leak_forms(rubric, table)
    except (KeyError, TypeError, ValueError):  # a rubric the table cannot spell (an imported record)
        forms = [spoken_value(rubric)]
    spans: list[tuple[int, int]] = []
    for form in dict.fromkeys(f for f in forms if f):
        span = find_phrase(text, form)
        if span is None or any(s < span[1] and span[0] < e for s, e in spans):
            continue
        spans.append(span)
        if rubric["type"] != "negative_attribute":
            break
    return [(text[s:e], s, e) for s, e in sorted(spans)]
