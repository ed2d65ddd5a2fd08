"""Rubric checkers: one code checker per rubric type, registered once and looked up by name.

`check(rubric, product)` returns Satisfied, NotSatisfied(why) or Unscorable(why). Missing
evidence (no price, no such detail) is NotSatisfied, as in the reference grader (§7.3);
Unscorable is kept for checks code cannot decide, and reports count it separately
(inspect_ai's rule: a grader that cannot decide never scores). The answer-set filters in
validation/answer_set.py implement the same rules vectorised; tests hold the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from stages.features import detail_options
from stages.fields import FieldTable, load_field_table
from stages.reviews import opinion_overlap, review_text
from stages.text import contains_phrase, keywords
from stages.vouchers import apply_voucher

UNSCORABLE_OVERLAP = 0.6


@dataclass(frozen=True)
class Verdict:
    """Outcome of checking one rubric against one product: status is satisfied, not_satisfied or unscorable."""

    status: str
    why: str = ""

    @property
    def satisfied(self) -> bool:
        return self.status == "satisfied"


SATISFIED = Verdict("satisfied")


def NotSatisfied(why: str) -> Verdict:  # noqa: N802 - reads as the design's verdict name
    return Verdict("not_satisfied", why)


def Unscorable(why: str) -> Verdict:  # noqa: N802
    return Verdict("unscorable", why)


Checker = Callable[[dict[str, Any], dict[str, Any], FieldTable], Verdict]
CHECKERS: dict[str, Checker] = {}


def checker(rubric_type: str) -> Callable[[Checker], Checker]:
    """Register the checker for `rubric_type` (one per type)."""

    def register(fn: Checker) -> Checker:
        if rubric_type in CHECKERS:
            raise ValueError(f"checker for {rubric_type} registered twice")
        CHECKERS[rubric_type] = fn
        return fn

    return register


def in_bound(value: float, bound: dict[str, Any]) -> bool:
    """Whether `value` lies within a NumericBound dict (inclusiveness as stated in the bound)."""
    if value != value:  # NaN states nothing, as polars' comparisons (false) treat it in answer sets
        return False
    lo, hi = bound.get("min"), bound.get("max")
    if lo is not None and (value < lo or (value == lo and not bound.get("min_inclusive", True))):
        return False
    if hi is not None and (value > hi or (value == hi and not bound.get("max_inclusive", True))):
        return False
    return True


@checker("attribute_match")
def check_attribute(rubric: dict[str, Any], product: dict[str, Any], table: FieldTable) -> Verdict:
    """Some option of the product's canonical field (any alias) contains the expected value as whole tokens."""
    spec = table.by_rubric_field(rubric["field"])
    options = detail_options(product, spec)
    if not options:
        return NotSatisfied(f"product has no {spec.name}")
    if any(contains_phrase(opt, rubric["expected_value"]) for opt in options):
        return SATISFIED
    return NotSatisfied(f"{spec.name} is {options!r}, not {rubric['expected_value']!r}")


@checker("numeric_range")
def check_numeric(rubric: dict[str, Any], product: dict[str, Any], table: FieldTable) -> Verdict:
    """The product's top-level numeric field lies within the bound."""
    value = product.get(rubric["field"])
    if value is None:
        return NotSatisfied(f"product has no {rubric['field']}")
    if in_bound(float(value), rubric["expected_value"]):
        return SATISFIED
    return NotSatisfied(f"{rubric['field']} = {value} is outside {rubric['expected_value']}")


@checker("entity_match")
def check_entity(rubric: dict[str, Any], product: dict[str, Any], table: FieldTable) -> Verdict:
    """Every content word of the entity phrase occurs in the title (singular/plural folded)."""
    missing = keywords(rubric["expected_value"]) - keywords(product.get("title") or "")
    if not missing:
        return SATISFIED
    return NotSatisfied(f"title lacks {sorted(missing)}")


@checker("negative_attribute")
def check_negative(rubric: dict[str, Any], product: dict[str, Any], table: FieldTable) -> Verdict:
    """No option of the product's field contains any excluded value, in any spelling ("Blue-green" fails "Blue").

    A product without the field cannot show it avoids the values: not satisfied.
    """
    spec = table.by_rubric_field(rubric["field"])
    options = detail_options(product, spec)
    if not options:
        return NotSatisfied(f"product has no {spec.name}")
    for excluded in rubric["expected_value"]:
        for spelling in table.spellings(excluded):
            hit = next((o for o in options if contains_phrase(o, spelling)), None)
            if hit is not None:
                return NotSatisfied(f"{spec.name} {hit!r} is excluded ({excluded!r})")
    return SATISFIED


@checker("budget_match")
def check_budget(rubric: dict[str, Any], product: dict[str, Any], table: FieldTable) -> Verdict:
    """The product's price after the rubric's voucher is at most the budget (stages.vouchers.apply_voucher)."""
    price = product.get("price")
    if price is None:
        return NotSatisfied("product has no price")
    budget = rubric["expected_value"]
    total = apply_voucher(budget["voucher"], float(price))
    if total <= budget["max_total"]:
        return SATISFIED
    return NotSatisfied(f"${price} is ${total:.2f} after the voucher, over ${budget['max_total']:g}")


@checker("review_opinion")
def check_review_opinion(rubric: dict[str, Any], product: dict[str, Any], table: FieldTable) -> Verdict:
    """Some review of the product states the opinion (normalised phrase match).

    Without an exact phrase, a review holding at least UNSCORABLE_OVERLAP of the opinion's
    content words is evidence code cannot weigh: unscorable (for a judge), never a guess.
    Needs `product["reviews"]` (reviews.parquet rows); without it the rubric is unscorable.
    """
    reviews = product.get("reviews")
    if reviews is None:
        return Unscorable("the product's reviews were not loaded")
    phrase = rubric["expected_value"]
    if any(contains_phrase(review_text(r), phrase) for r in reviews):
        return SATISFIED
    best = max((opinion_overlap(phrase, review_text(r)) for r in reviews), default=0.0)
    if best >= UNSCORABLE_OVERLAP:
        return Unscorable(f"a review shares {best:.0%} of the opinion's words but not the phrase")
    return NotSatisfied("no review states the opinion" if reviews else "product has no reviews")


def check(rubric: dict[str, Any], product: dict[str, Any], table: FieldTable | None = None) -> Verdict:
    """Check one rubric against one product with the registered checker for its type.

    Args:
        rubric: a rubric record (schemas/rubric.schema.json).
        product: a products.parquet row as a dict.
        table: the field table; None loads the bundled one.

    Returns:
        Unscorable when no checker exists for the type (never a silent pass or fail).
    """
    fn = CHECKERS.get(rubric["type"])
    if fn is None:
        return Unscorable(f"no code checker for rubric type {rubric['type']}")
    return fn(rubric, product, table or load_field_table())


def failing_rubrics(rubrics: list[dict[str, Any]], product: dict[str, Any], table: FieldTable) -> list[dict[str, Any]]:
    """Every rubric the product does not satisfy, with the verdict: [{rubric_id, status, why}]."""
    out = []
    for r in rubrics:
        v = check(r, product, table)
        if not v.satisfied:
            out.append({"rubric_id": r["id"], "field": r["field"], "status": v.status, "why": v.why})
    return out
