"""The six rubric types of the design (DESIGN.md "Rubric types"): how each is graded against one product.

Missing evidence (no price, no such detail) is NotSatisfied, as in the reference grader (§7.3);
Unscorable is kept for checks code cannot decide, and reports count it separately (inspect_ai's
rule: a grader that cannot decide never scores). The answer-set filters of ecombench.answers.filters
implement the same rules over the whole catalog; tests hold them equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ecombench.catalog.details import detail_options
from ecombench.catalog.reviews import opinion_overlap, review_text
from ecombench.rubrics.base import (
    SATISFIED,
    NotSatisfied,
    RubricKind,
    RubricLike,
    Unscorable,
    Verdict,
    plain_value,
    register,
)
from ecombench.rubrics.vouchers import apply_voucher
from ecombench.schemas.models import NumericBound
from ecombench.tables.fields import FieldTable
from ecombench.text import contains_phrase, keywords

# review_opinion: a review sharing this much of the opinion's content words, but not the phrase, is unscorable.
UNSCORABLE_OVERLAP = 0.6


def in_bound(value: float, bound: Any) -> bool:
    """Whether `value` lies within a NumericBound (inclusiveness as stated in the bound)."""
    if value != value:  # NaN states nothing, as polars' comparisons (false) treat it in answer sets
        return False
    if isinstance(bound, Mapping):
        bound = NumericBound.model_validate(bound)
    lo, hi = bound.min, bound.max
    if lo is not None and (value < lo or (value == lo and not bound.min_inclusive)):
        return False
    if hi is not None and (value > hi or (value == hi and not bound.max_inclusive)):
        return False
    return True


@register
class AttributeMatch(RubricKind):
    """A detail field (any alias) has an option containing the value as whole tokens: colour "Blue"."""

    type = "attribute_match"
    feature_kind = "detail"
    field_kind = "detail"
    check_cost = 2
    reads = ("details",)

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Satisfied when some option of the field contains the value as whole tokens."""
        spec = table.by_rubric_field(rubric.field)
        options = detail_options(product, spec)
        if not options:
            return NotSatisfied(f"product has no {spec.name}")
        if any(contains_phrase(opt, rubric.expected_value) for opt in options):  # type: ignore[arg-type]
            return SATISFIED
        return NotSatisfied(f"{spec.name} is {options!r}, not {rubric.expected_value!r}")


@register
class NumericRange(RubricKind):
    """A top-level numeric field (price, average_rating, rating_number) lies within a NumericBound."""

    type = "numeric_range"
    feature_kind = "numeric"
    field_kind = "numeric"
    check_cost = 0
    reads = ("price", "average_rating", "rating_number")

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Satisfied when the product's numeric field lies within the bound; a missing value is not."""
        value = product.get(rubric.field)
        if value is None:
            return NotSatisfied(f"product has no {rubric.field}")
        if in_bound(float(value), rubric.expected_value):
            return SATISFIED
        return NotSatisfied(f"{rubric.field} = {value} is outside {plain_value(rubric)}")


@register
class EntityMatch(RubricKind):
    """The product type: every content word of the phrase occurs in the title (singular/plural folded)."""

    type = "entity_match"
    feature_kind = "entity"
    field_kind = "entity"
    check_cost = 1
    reads = ("title",)

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Satisfied when every content word of the phrase is in the title."""
        missing = keywords(str(rubric.expected_value)) - keywords(product.get("title") or "")
        if not missing:
            return SATISFIED
        return NotSatisfied(f"title lacks {sorted(missing)}")


@register
class NegativeAttribute(RubricKind):
    """No option of a detail field contains any excluded value, in any spelling ("Blue-green" fails "Blue").

    A product without the field cannot show it avoids the values: not satisfied.
    """

    type = "negative_attribute"
    feature_kind = "negative"
    field_kind = "detail"
    check_cost = 4
    reads = ("details",)

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Not satisfied when the product lacks the field or an option contains any spelling of an excluded value."""
        spec = table.by_rubric_field(rubric.field)
        options = detail_options(product, spec)
        if not options:
            return NotSatisfied(f"product has no {spec.name}")
        for excluded in cast("list[str]", rubric.expected_value):
            for spelling in table.spellings(excluded):
                hit = next((o for o in options if contains_phrase(o, spelling)), None)
                if hit is not None:
                    return NotSatisfied(f"{spec.name} {hit!r} is excluded ({excluded!r})")
        return SATISFIED


@register
class BudgetMatch(RubricKind):
    """The price after the rubric's voucher is at most the budget (ecombench.rubrics.vouchers.apply_voucher)."""

    type = "budget_match"
    feature_kind = "budget"
    field_kind = "budget"
    check_cost = 3
    reads = ("price",)
    vectorised = False

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Satisfied when the price after the voucher is at most the budget; a missing price is not."""
        price = product.get("price")
        if price is None:
            return NotSatisfied("product has no price")
        budget = rubric.expected_value
        total = apply_voucher(budget.voucher.model_dump(), float(price))  # type: ignore[union-attr]
        if total <= budget.max_total:  # type: ignore[union-attr]
            return SATISFIED
        return NotSatisfied(f"${price} is ${total:.2f} after the voucher, over ${budget.max_total:g}")  # type: ignore[union-attr]


@register
class ReviewOpinion(RubricKind):
    """Some review of the product states the opinion (normalised phrase match).

    Without an exact phrase, a review holding at least UNSCORABLE_OVERLAP of the opinion's content
    words is evidence code cannot weigh: unscorable (for a judge), never a guess. Needs
    `product["reviews"]` (reviews.parquet rows); without it the rubric is unscorable.
    """

    type = "review_opinion"
    feature_kind = "opinion"
    field_kind = "opinion"
    check_cost = 5
    reads = ("reviews",)
    needs_reviews = True

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Satisfied when a review states the phrase; unscorable on a near match or without loaded reviews."""
        reviews = product.get("reviews")
        if reviews is None:
            return Unscorable("the product's reviews were not loaded")
        phrase = str(rubric.expected_value)
        if any(contains_phrase(review_text(r), phrase) for r in reviews):
            return SATISFIED
        best = max((opinion_overlap(phrase, review_text(r)) for r in reviews), default=0.0)
        if best >= UNSCORABLE_OVERLAP:
            return Unscorable(f"a review shares {best:.0%} of the opinion's words but not the phrase")
        return NotSatisfied("no review states the opinion" if reviews else "product has no reviews")
