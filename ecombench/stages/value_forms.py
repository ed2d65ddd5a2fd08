"""The strings whose presence in text states a requirement's value, and how a numeric bound is said.

Leakage checks (a hidden value must not surface), completeness checks (a source must state its values) and
the phrasing of bounds all read these, so "$20" is never "20 ratings" to one check and a price to another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ecombench.stages.vouchers import budget_numbers
from ecombench.text import format_number

NUMBER_UNITS = {"price": ("$", ""), "average_rating": ("", " stars"), "rating_number": ("", " ratings")}


def value_forms(value: Any, field: str = "") -> list[str]:
    """The strings whose presence in text states a requirement's value.

    A string is itself; excluded values are each value; a numeric bound is each of its numbers
    with the field's unit ("$20", "4.5 stars", "100 ratings", so "$20" is not "20 ratings"); a
    budget is every amount of its voucher and limit. Leakage and completeness checks both use this.
    """
    if isinstance(value, dict) and "voucher" in value:
        return budget_numbers(value)
    if isinstance(value, dict):
        before, after = NUMBER_UNITS.get(field, ("", ""))
        return [f"{before}{format_number(value[k])}{after}" for k in ("min", "max") if value.get(k) is not None]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def bound_phrase(field: str, bound: Mapping[str, Any] | Any) -> str:
    """How a person states a numeric bound: "at least 4.5 stars", "no more than $20", "at least 100 ratings".

    Exclusive bounds say "more than" / "less than"; inclusive ones "at least" / "no more than".

    Args:
        field: the rubric field (its unit comes from NUMBER_UNITS).
        bound: a NumericBound or its dict form.
    """
    b = bound.model_dump() if hasattr(bound, "model_dump") else bound
    unit_before, unit_after = NUMBER_UNITS.get(field, ("", ""))
    parts = []
    if b.get("min") is not None:
        word = "at least" if b.get("min_inclusive", True) else "more than"
        parts.append(f"{word} {unit_before}{format_number(b['min'])}{unit_after}")
    if b.get("max") is not None:
        word = "no more than" if b.get("max_inclusive", True) else "less than"
        parts.append(f"{word} {unit_before}{format_number(b['max'])}{unit_after}")
    return " and ".join(parts)
