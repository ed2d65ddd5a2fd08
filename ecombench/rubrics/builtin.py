"""The six rubric types of the design (DESIGN.md "Rubric types"): how each is graded against one product.

Missing evidence (no price, no such detail) is NotSatisfied, as in the reference grader (§7.3);
Unscorable is kept for checks code cannot decide, and reports count it separately (inspect_ai's
rule: a grader that cannot decide never scores). The answer-set filters of ecombench.answers.filters
implement the same rules over the whole catalog; tests hold them equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ecombench.catalog.devices import device_holds
from ecombench.catalog.facts import IMITATIONS, MODEL_SUFFIXES, page_facts
from ecombench.catalog.reviews import opinion_overlap, review_text
from ecombench.rubrics.base import (
    CONTRADICTS,
    SATISFIED,
    SAYS_NOTHING,
    STATES,
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
from ecombench.tables.fields import FieldSpec, FieldTable
from ecombench.text import contains_phrase, keywords, tokens

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


def value_holds(value: str, expected: str, spec: FieldSpec, table: FieldTable) -> bool:
    """Whether a stated value holds the required one.

    It contains any spelling of it as whole words ("Dark Blue" holds "Blue"), not as an imitation of it ("Faux
    Leather" does not hold "Leather": ecombench.catalog.facts.IMITATIONS). For a compatibility field, a required
    device model holds when the value names the same device in any spelling and variant ("Galaxy S23 5G" holds
    "Samsung S23", "Galaxy S21 Ultra" does not hold "Galaxy S21": ecombench.catalog.devices.device_holds); a
    requirement naming no model ("Tablets") is matched as words that do not run on into another model.
    """
    if spec.compatibility:
        device = device_holds(value, expected)
        if device is not None:
            return device
    for spelling in table.spellings(expected):
        if (contains_phrase(value, spelling) and not _imitation(value, spelling)
                and not (spec.compatibility and _other_model(value, spelling))):
            return True
    return False


def _spots(have: tuple[str, ...], want: tuple[str, ...]) -> list[int]:
    return [i for i in range(len(have) - len(want) + 1) if have[i:i + len(want)] == want]


def _imitation(value: str, material: str) -> bool:
    """True when every place `material` occurs in `value` follows an imitation word ("PU Leather", "Faux Fur")."""
    have, want = tokens(value), tokens(material)
    spots = _spots(have, want)
    return bool(spots) and all(i > 0 and have[i - 1] in IMITATIONS for i in spots)


def _other_model(value: str, model: str) -> bool:
    """True when every place `model` occurs in `value` is followed by a word that makes it another model."""
    have, want = tokens(value), tokens(model)
    spots = _spots(have, want)
    return bool(spots) and all(i + len(want) < len(have) and have[i + len(want)] in MODEL_SUFFIXES for i in spots)


@register
class AttributeMatch(RubricKind):
    """A detail field (any alias) has an option containing the value as whole tokens: colour "Blue"."""

    type = "attribute_match"
    feature_kind = "detail"
    field_kind = "detail"
    check_cost = 2
    reads = ("details", "facts")

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Satisfied when a value the page states for the field holds the requirement (`value_holds`).

        The page is the product's facts (ecombench.catalog.facts); a product dict without them (a raw record)
        is read by its `details` labels alone.
        """
        spec = table.by_rubric_field(rubric.field)
        expected = str(rubric.expected_value)
        stated, denied = page_facts(product, spec)
        hit = next((f for f in stated if value_holds(f["value"], expected, spec, table)), None)
        if hit is not None:
            return Verdict("satisfied", "", STATES, hit.get("evidence") or hit["value"])
        against = next((f for f in denied if value_holds(f["value"], expected, spec, table)), None)
        if against is not None:
            return Verdict("not_satisfied", f"the page contradicts {spec.name} {expected!r}", CONTRADICTS,
                           against.get("evidence") or against["value"])
        if not stated:
            return Verdict("not_satisfied", f"product has no {spec.name}", SAYS_NOTHING)
        values = [f["value"] for f in stated]
        return Verdict("not_satisfied", f"{spec.name} is {values!r}, not {expected!r}", STATES,
                       stated[0].get("evidence") or stated[0]["value"])


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
    reads = ("details", "facts")

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Not satisfied when the page states no value of the field, or a stated value holds an excluded one."""
        spec = table.by_rubric_field(rubric.field)
        stated, _ = page_facts(product, spec)
        if not stated:
            return Verdict("not_satisfied", f"product has no {spec.name}", SAYS_NOTHING)
        for excluded in cast("list[str]", rubric.expected_value):
            hit = next((f for f in stated if value_holds(f["value"], excluded, spec, table)), None)
            if hit is not None:
                return Verdict("not_satisfied", f"{spec.name} {hit['value']!r} is excluded ({excluded!r})", STATES,
                               hit.get("evidence") or hit["value"])
        return Verdict("satisfied", "", STATES, stated[0].get("evidence") or stated[0]["value"])


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
