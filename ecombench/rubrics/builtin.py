"""The six rubric types of the design (DESIGN.md "Rubric types"), each one class with all its rules.

Missing evidence (no price, no such detail) is NotSatisfied, as in the reference grader (§7.3);
Unscorable is kept for checks code cannot decide, and reports count it separately (inspect_ai's
rule: a grader that cannot decide never scores). The vectorised filters and the postings
narrowing implement the same rules as the checkers; tests hold them equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ecombench.lemmas import states_bound
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
from ecombench.schemas.models import NumericBound
from ecombench.stages.features import NUMBER_UNITS, detail_options
from ecombench.stages.product_naming import natural_type
from ecombench.stages.reviews import opinion_overlap, review_text
from ecombench.stages.value_phrases import attribute_phrase, exclusion_sentence
from ecombench.stages.vouchers import apply_voucher, describe_budget
from ecombench.tables.fields import FieldTable
from ecombench.text import contains_phrase, fill, format_number, join_words, keywords, normalize, tokens

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

    from ecombench.answers.index import CatalogIndex

# review_opinion: a review sharing this much of the opinion's content words, but not the phrase, is unscorable.
UNSCORABLE_OVERLAP = 0.6
# How the template query opens a bound ("it must be rated at least 4 stars").
NUMERIC_VERBS = {"average_rating": "be rated", "rating_number": "have", "price": "cost"}


def bound_phrase(field: str, bound: Mapping[str, Any] | Any) -> str:
    """How a person states a numeric bound: "at least 4.5 stars", "no more than $20", "at least 100 ratings".

    Exclusive bounds say "more than" / "less than"; inclusive ones "at least" / "no more than".

    Args:
        field: the rubric field (its unit comes from ecombench.stages.features.NUMBER_UNITS).
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
    query_role = "attribute"

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Satisfied when some option of the field contains the value as whole tokens."""
        spec = table.by_rubric_field(rubric.field)
        options = detail_options(product, spec)
        if not options:
            return NotSatisfied(f"product has no {spec.name}")
        if any(contains_phrase(opt, rubric.expected_value) for opt in options):  # type: ignore[arg-type]
            return SATISFIED
        return NotSatisfied(f"{spec.name} is {options!r}, not {rubric.expected_value!r}")

    def narrow(self, index: CatalogIndex, rubric: RubricLike) -> np.ndarray | None:
        """Rows with an option of the field holding every token of the value."""
        key = rubric.field.removeprefix("details.")
        sets = [index.option_token_rows(key, t) for t in tokens(str(rubric.expected_value))]
        return index.intersect(sets) if sets else None

    def vector_filter(self, index: CatalogIndex, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """Keep the rows with an option of the field containing the normalised value."""
        import polars as pl

        key = rubric.field.removeprefix("details.")
        needle = f" {normalize(str(rubric.expected_value))} "
        return frame.join(index.rows_with_option(key, pl.col("option_norm").str.contains(needle, literal=True)),
                          on="row", how="semi")

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The readable sentence, e.g. The product's colour is or includes "Blue"."""
        return f"The product's {table.by_rubric_field(field).label} is or includes \"{value}\"."

    def query_phrase(self, rubric: RubricLike, table: FieldTable) -> str:
        """The field table's query phrase with the value filled in."""
        return fill(table.by_rubric_field(rubric.field).query_phrase, str(rubric.expected_value))

    def query_phrase_v2(self, rubric: RubricLike, table: FieldTable, rng: Any) -> str:
        """The value as a shopper writes it ("made of faux leather", "for a 6-month-old")."""
        return attribute_phrase(rubric.field, str(rubric.expected_value), table)


@register
class NumericRange(RubricKind):
    """A top-level numeric field (price, average_rating, rating_number) lies within a NumericBound."""

    type = "numeric_range"
    feature_kind = "numeric"
    field_kind = "numeric"
    check_cost = 0
    reads = ("price", "average_rating", "rating_number")
    query_role = "bound"

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Satisfied when the product's numeric field lies within the bound; a missing value is not."""
        value = product.get(rubric.field)
        if value is None:
            return NotSatisfied(f"product has no {rubric.field}")
        if in_bound(float(value), rubric.expected_value):
            return SATISFIED
        return NotSatisfied(f"{rubric.field} = {value} is outside {plain_value(rubric)}")

    def within_bounds(self, index: CatalogIndex, rows: np.ndarray, rubric: RubricLike) -> np.ndarray:
        """Keep the rows whose numeric column is known and within the bound."""
        import numpy as np

        values = index.numeric.get(rubric.field)
        if values is None or not len(rows):
            return rows
        v, bound = values[rows], rubric.expected_value
        keep = ~np.isnan(v)
        if bound.min is not None:  # type: ignore[union-attr]
            keep &= (v >= bound.min) if bound.min_inclusive else (v > bound.min)  # type: ignore[union-attr]
        if bound.max is not None:  # type: ignore[union-attr]
            keep &= (v <= bound.max) if bound.max_inclusive else (v < bound.max)  # type: ignore[union-attr]
        return rows[keep]

    def vector_filter(self, index: CatalogIndex, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """Keep the rows whose numeric column is not null and within the bound."""
        import polars as pl

        col, bound = pl.col(rubric.field), rubric.expected_value
        expr = col.is_not_null()
        if bound.min is not None:  # type: ignore[union-attr]
            expr &= (col >= bound.min) if bound.min_inclusive else (col > bound.min)  # type: ignore[union-attr]
        if bound.max is not None:  # type: ignore[union-attr]
            expr &= (col <= bound.max) if bound.max_inclusive else (col < bound.max)  # type: ignore[union-attr]
        return frame.filter(expr)

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The readable sentence, e.g. The product costs no more than $20."""
        verb = {"average_rating": "is rated", "rating_number": "has", "price": "costs"}.get(field, "is")
        return f"The product {verb} {bound_phrase(field, value)}."

    def stated_forms(self, rubric: RubricLike) -> list[str]:
        """The bound in words with its direction ("no more than $20")."""
        return [bound_phrase(rubric.field, rubric.expected_value)]

    def stated_in(self, rubric: RubricLike, text: str) -> bool | None:
        """The bound's direction, inclusiveness and unit decide, in any wording ("$25 or under", "up to $25")."""
        return states_bound(text, rubric.field, plain_value(rubric))

    def query_phrase(self, rubric: RubricLike, table: FieldTable) -> str:
        """The field's verb and the bound ("cost no more than $20")."""
        return f"{NUMERIC_VERBS.get(rubric.field, 'be')} {bound_phrase(rubric.field, rubric.expected_value)}"

    def persona_entry(self, rubric: RubricLike, table: FieldTable) -> tuple[str, str | list[str]]:
        """The field's persona key and the bound in words."""
        return table.by_rubric_field(rubric.field).persona_key, bound_phrase(rubric.field, rubric.expected_value)

    def reply(self, rubric: RubricLike, table: FieldTable) -> str:
        """The bound said aloud (ecombench.stages.replies.bound_reply)."""
        from ecombench.stages.replies import bound_reply

        return bound_reply(rubric.field, rubric.expected_value, table)

    def prompt_value(self, rubric: RubricLike, table: FieldTable) -> str:
        """The bound in words."""
        return bound_phrase(rubric.field, rubric.expected_value)


@register
class EntityMatch(RubricKind):
    """The product type: every content word of the phrase occurs in the title (singular/plural folded)."""

    type = "entity_match"
    feature_kind = "entity"
    field_kind = "entity"
    check_cost = 1
    reads = ("title",)
    query_role = "subject"

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Satisfied when every content word of the phrase is in the title."""
        missing = keywords(str(rubric.expected_value)) - keywords(product.get("title") or "")
        if not missing:
            return SATISFIED
        return NotSatisfied(f"title lacks {sorted(missing)}")

    def narrow(self, index: CatalogIndex, rubric: RubricLike) -> np.ndarray | None:
        """Rows whose title holds every content word of the phrase."""
        sets = [index.title_token_rows(t) for t in keywords(str(rubric.expected_value))]
        return index.intersect(sets) if sets else None

    def vector_filter(self, index: CatalogIndex, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """Keep the rows whose normalised title holds every content word."""
        import polars as pl

        for word in sorted(keywords(str(rubric.expected_value))):
            frame = frame.filter(pl.col("title_norm").str.contains(f" {word} ", literal=True))
        return frame

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The readable sentence, e.g. The product is a kind of wall clock (its title says so)."""
        return f"The product is a kind of {value} (its title says so)."

    def query_phrase(self, rubric: RubricLike, table: FieldTable) -> str:
        """The product type itself, as the query's subject."""
        return str(rubric.expected_value)

    def query_phrase_v2(self, rubric: RubricLike, table: FieldTable, rng: Any) -> str:
        """The product type in natural form ("a wall clock", "earbuds")."""
        return natural_type(str(rubric.expected_value))


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
    query_role = "exclusion"

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

    def vector_filter(self, index: CatalogIndex, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """Keep the rows that have the field and no option containing any spelling of an excluded value."""
        import polars as pl

        key = rubric.field.removeprefix("details.")
        needles = [f" {normalize(s)} " for v in cast("list[str]", rubric.expected_value)
                   for s in index.table.spellings(v)]
        hit = pl.lit(False)
        for needle in needles:
            hit = hit | pl.col("option_norm").str.contains(needle, literal=True)
        return (frame.join(index.rows_with_option(key, pl.lit(True)), on="row", how="semi")
                .join(index.rows_with_option(key, hit), on="row", how="anti"))

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The readable sentence, e.g. The product's colour is none of "Blue", "Red"."""
        return (f"The product's {table.by_rubric_field(field).label} is none of "
                + ", ".join(f'"{v}"' for v in value) + ".")

    def query_phrase(self, rubric: RubricLike, table: FieldTable) -> str:
        """The query phrase, e.g. its colour must not be Blue or Red."""
        label = table.by_rubric_field(rubric.field).label
        return f"its {label} must not be " + join_words(list(rubric.expected_value), "or")  # type: ignore[arg-type]

    def query_phrase_v2(self, rubric: RubricLike, table: FieldTable, rng: Any) -> str:
        """A sentence naming the field and its excluded values ("Nothing in green or pink colours, please.")."""
        return exclusion_sentence(rubric.field, list(rubric.expected_value), table, rng)  # type: ignore[arg-type]

    def persona_entry(self, rubric: RubricLike, table: FieldTable) -> tuple[str, str | list[str]]:
        """The key avoid_<persona_key> and the excluded values."""
        return f"avoid_{table.by_rubric_field(rubric.field).persona_key}", list(rubric.expected_value)  # type: ignore[arg-type]

    def reply(self, rubric: RubricLike, table: FieldTable) -> str:
        """The excluded values said aloud (ecombench.stages.replies.exclusion_reply)."""
        from ecombench.stages.replies import exclusion_reply

        return exclusion_reply(rubric.field, list(rubric.expected_value), table)  # type: ignore[arg-type]

    def prompt_value(self, rubric: RubricLike, table: FieldTable) -> str:
        """The value as the prompt shows it, e.g. anything but Blue or Red."""
        return "anything but " + " or ".join(rubric.expected_value)  # type: ignore[arg-type]


@register
class BudgetMatch(RubricKind):
    """The price after the rubric's voucher is at most the budget (ecombench.stages.vouchers.apply_voucher)."""

    type = "budget_match"
    feature_kind = "budget"
    field_kind = "budget"
    check_cost = 3
    reads = ("price",)
    query_role = "budget"
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

    def vector_filter(self, index: CatalogIndex, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """No filter: voucher arithmetic runs in `check` on the products the other rubrics leave."""
        return frame  # voucher arithmetic runs in `check` on the products the other rubrics leave

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The readable sentence, e.g. After the simple voucher, the product costs at most $24."""
        return (f"After the {value['voucher']['scenario']} voucher, the product costs at most "
                f"${format_number(value['max_total'])}.")

    def query_phrase(self, rubric: RubricLike, table: FieldTable) -> str:
        """The voucher and budget in words (ecombench.stages.vouchers.describe_budget)."""
        return describe_budget(plain_value(rubric))


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
    query_role = "opinion"
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

    def narrow(self, index: CatalogIndex, rubric: RubricLike) -> np.ndarray | None:
        """Rows with a review holding every token of the opinion, or None without review postings."""
        if index.review_postings is None:
            return None
        sets = [index.review_token_rows(t) for t in tokens(str(rubric.expected_value))]
        return index.intersect(sets) if sets else None

    def vector_filter(self, index: CatalogIndex, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """Keep the rows with a review containing the normalised opinion."""
        import polars as pl

        if index.reviews is None:
            raise ValueError("review_opinion rubrics need a CatalogIndex built with reviews")
        needle = f" {normalize(str(rubric.expected_value))} "
        hits = (index.reviews.lazy().filter(pl.col("text_norm").str.contains(needle, literal=True))
                .select("row").unique())
        return frame.join(hits, on="row", how="semi")

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The readable sentence, e.g. The product's reviews say "easy to clean"."""
        return f"The product's reviews say \"{value}\"."

    def query_phrase(self, rubric: RubricLike, table: FieldTable) -> str:
        """The opinion in double quotes."""
        return f'"{rubric.expected_value}"'

