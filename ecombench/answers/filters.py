"""How each rubric type narrows the catalog in an answer set: token postings, numeric bounds, polars filters.

One class per rubric type, registered by type name beside its grading (ecombench.rubrics): `narrow` gives a
superset of the rows that satisfy the rubric from the index's postings (the checker decides on the rows left),
`within_bounds` trims rows by a numeric column, `vector_filter` decides the rubric over the products frame with the
same rule as its checker (tests hold the two equal). A type without a filter here is graded by its checker alone.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any, ClassVar, Protocol, TypeVar, cast

import numpy as np
import polars as pl

from ecombench.catalog.devices import device_holds, device_tokens, names_device
from ecombench.catalog.facts import IMITATIONS, MODEL_SUFFIXES
from ecombench.rubrics import RubricLike
from ecombench.tables.fields import FieldTable
from ecombench.text import keywords, normalize, tokens


class IndexView(Protocol):
    """What a filter reads of the answer-set index (ecombench.answers.index.CatalogIndex implements it)."""

    @property
    def table(self) -> FieldTable:
        """The field table (aliases, spellings)."""
        ...

    @property
    def numeric(self) -> dict[str, np.ndarray]:
        """Numeric columns by name, by row (NaN where unknown)."""
        ...

    @property
    def review_postings(self) -> Any:
        """Token postings of the reviews, or None when the index has none."""
        ...

    @property
    def reviews(self) -> pl.DataFrame | None:
        """(row, text_norm) of the reviews, or None without reviews."""
        ...

    def option_token_rows(self, key: str, token: str) -> np.ndarray:
        """Sorted rows with an option of detail field `key` holding `token`."""
        ...

    def title_token_rows(self, token: str) -> np.ndarray:
        """Sorted rows whose title holds `token`."""
        ...

    def review_token_rows(self, token: str) -> np.ndarray:
        """Sorted rows with a review holding `token`."""
        ...

    def intersect(self, sets: list[np.ndarray]) -> np.ndarray:
        """The rows in every one of `sets`."""
        ...

    def rows_with_option(self, key: str, condition: pl.Expr) -> pl.LazyFrame:
        """(row) of products with an option of detail field `key` meeting `condition` (on option_norm)."""
        ...


class RubricFilter:
    """The answer-set side of one rubric type; the defaults narrow nothing and keep every row."""

    type: ClassVar[str] = "(unregistered)"

    def narrow(self, index: IndexView, rubric: RubricLike) -> np.ndarray | None:
        """Sorted rows holding every token of the value where this type looks, or None (cannot narrow).

        A superset of the rows that satisfy the rubric; the checker decides on the rows left.
        """
        return None

    def within_bounds(self, index: IndexView, rows: np.ndarray, rubric: RubricLike) -> np.ndarray:
        """`rows` less those this rubric excludes by a catalog column in numpy (only bounds can)."""
        return rows

    def vector_filter(self, index: IndexView, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """The products frame (row, title_norm, numeric columns) filtered by this rubric, same rule as its checker."""
        raise NotImplementedError(f"rubric type {self.type} has no vectorised filter")


FILTERS: dict[str, RubricFilter] = {}
F = TypeVar("F", bound=type[RubricFilter])
_NO_FILTER = RubricFilter()


def register_filter(cls: F) -> F:
    """Class decorator: add one instance of a rubric type's filter to the registry.

    Raises:
        ValueError: the type has a filter already.
    """
    if cls.type in FILTERS:
        raise ValueError(f"rubric type {cls.type} has two answer-set filters")
    FILTERS[cls.type] = cls()
    return cls


def unregister_filter(rubric_type: str) -> None:
    """Remove a registered filter (tests that register a type of their own clean up with it)."""
    FILTERS.pop(rubric_type, None)


def filter_of(rubric: RubricLike | str) -> RubricFilter:
    """The registered filter of a rubric's type; a type without one narrows nothing."""
    return FILTERS.get(rubric if isinstance(rubric, str) else rubric.type, _NO_FILTER)


def option_holds(table: FieldTable, values: list[str], compatibility: bool = False) -> pl.Expr:
    """Over "option_norm": the option holds one of `values` (`value_holds`, vectorised).

    In some spelling, not as an imitation of it ("Faux Leather" does not hold "Leather"); for a compatibility
    field, a device model in any spelling and not another variant of it ("Galaxy S21 Ultra" does not hold "Galaxy
    S21": ecombench.catalog.devices.device_holds, decided per distinct option).
    """
    option = pl.col("option_norm")
    holds = pl.lit(False)
    for value in values:
        if compatibility and names_device(value):  # one device in any spelling (ecombench.catalog.devices)
            holds = holds | option.map_elements(partial(device_holds, required=value), return_dtype=pl.Boolean)
            continue
        for spelling in table.spellings(value):
            needle = f" {normalize(spelling)} "
            imitation = f" (?:{'|'.join(sorted(IMITATIONS))}){re.escape(needle)}"
            hit = option.str.contains(needle, literal=True) & ~option.str.contains(imitation)
            if compatibility:
                other = f"{re.escape(needle)}(?:{'|'.join(sorted(MODEL_SUFFIXES))}) "
                hit = hit & (option.str.count_matches(re.escape(needle)) > option.str.count_matches(other))
            holds = holds | hit
    return holds


def _compatibility(table: FieldTable, key: str) -> bool:
    spec = table.fields.get(key)
    return spec is not None and spec.compatibility


@register_filter
class AttributeMatchFilter(RubricFilter):
    """Rows with an option of the field holding the value (ecombench.rubrics.builtin.AttributeMatch)."""

    type = "attribute_match"

    def narrow(self, index: IndexView, rubric: RubricLike) -> np.ndarray | None:
        """Rows with an option of the field holding every token of the value in one of its spellings."""
        key = rubric.field.removeprefix("details.")
        models = device_tokens(str(rubric.expected_value)) if _compatibility(index.table, key) else None
        if models:  # the same device in any spelling holds its model's tokens
            return index.intersect([index.option_token_rows(key, t) for t in models])
        found = []
        for spelling in index.table.spellings(str(rubric.expected_value)):
            sets = [index.option_token_rows(key, t) for t in tokens(spelling)]
            if not sets:
                return None
            found.append(index.intersect(sets))
        return np.unique(np.concatenate(found)) if len(found) > 1 else found[0]

    def vector_filter(self, index: IndexView, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """Keep the rows with an option of the field holding the value (`option_holds`)."""
        key = rubric.field.removeprefix("details.")
        compat = _compatibility(index.table, key)
        return frame.join(index.rows_with_option(key, option_holds(index.table, [str(rubric.expected_value)], compat)),
                          on="row", how="semi")


@register_filter
class NumericRangeFilter(RubricFilter):
    """Rows whose numeric column lies within the bound (ecombench.rubrics.builtin.NumericRange)."""

    type = "numeric_range"

    def within_bounds(self, index: IndexView, rows: np.ndarray, rubric: RubricLike) -> np.ndarray:
        """Keep the rows whose numeric column is known and within the bound."""
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

    def vector_filter(self, index: IndexView, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """Keep the rows whose numeric column is not null and within the bound."""
        col, bound = pl.col(rubric.field), rubric.expected_value
        expr = col.is_not_null()
        if bound.min is not None:  # type: ignore[union-attr]
            expr &= (col >= bound.min) if bound.min_inclusive else (col > bound.min)  # type: ignore[union-attr]
        if bound.max is not None:  # type: ignore[union-attr]
            expr &= (col <= bound.max) if bound.max_inclusive else (col < bound.max)  # type: ignore[union-attr]
        return frame.filter(expr)


@register_filter
class EntityMatchFilter(RubricFilter):
    """Rows whose title holds every content word of the type (ecombench.rubrics.builtin.EntityMatch)."""

    type = "entity_match"

    def narrow(self, index: IndexView, rubric: RubricLike) -> np.ndarray | None:
        """Rows whose title holds every content word of the phrase."""
        sets = [index.title_token_rows(t) for t in keywords(str(rubric.expected_value))]
        return index.intersect(sets) if sets else None

    def vector_filter(self, index: IndexView, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """Keep the rows whose normalised title holds every content word."""
        for word in sorted(keywords(str(rubric.expected_value))):
            frame = frame.filter(pl.col("title_norm").str.contains(f" {word} ", literal=True))
        return frame


@register_filter
class NegativeAttributeFilter(RubricFilter):
    """Rows that have the field and none of the excluded values (ecombench.rubrics.builtin.NegativeAttribute)."""

    type = "negative_attribute"

    def vector_filter(self, index: IndexView, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """Keep the rows that have the field and no option containing any spelling of an excluded value."""
        key = rubric.field.removeprefix("details.")
        hit = option_holds(index.table, cast("list[str]", rubric.expected_value), _compatibility(index.table, key))
        return (frame.join(index.rows_with_option(key, pl.lit(True)), on="row", how="semi")
                .join(index.rows_with_option(key, hit), on="row", how="anti"))


@register_filter
class BudgetMatchFilter(RubricFilter):
    """No filter: voucher arithmetic runs in the checker on the products the other rubrics leave."""

    type = "budget_match"

    def vector_filter(self, index: IndexView, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """The frame unchanged (ecombench.rubrics.builtin.BudgetMatch is not vectorised)."""
        return frame


@register_filter
class ReviewOpinionFilter(RubricFilter):
    """Rows with a review holding the opinion (ecombench.rubrics.builtin.ReviewOpinion)."""

    type = "review_opinion"

    def narrow(self, index: IndexView, rubric: RubricLike) -> np.ndarray | None:
        """Rows with a review holding every token of the opinion, or None without review postings."""
        if index.review_postings is None:
            return None
        sets = [index.review_token_rows(t) for t in tokens(str(rubric.expected_value))]
        return index.intersect(sets) if sets else None

    def vector_filter(self, index: IndexView, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """Keep the rows with a review containing the normalised opinion."""
        if index.reviews is None:
            raise ValueError("review_opinion rubrics need a CatalogIndex built with reviews")
        needle = f" {normalize(str(rubric.expected_value))} "
        hits = (index.reviews.lazy().filter(pl.col("text_norm").str.contains(needle, literal=True))
                .select("row").unique())
        return frame.join(hits, on="row", how="semi")
