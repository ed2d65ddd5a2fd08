"""What every rubric type must say about its grading, and the one registry keyed by `RubricType`.

A rubric type's grading is its code checker, the product keys it reads, the field kind it applies to and
the feature kind it is built from. How it narrows the catalog in answer sets lives in
ecombench.answers.filters, how it is stated in text in ecombench.stages.phrasing, each a registry keyed by the
same type name: grading never imports phrasing. Adding a rubric type is one subclass registered here with
`@register`, its filter and its phrasing, plus data rows (fields.toml, intents.toml).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ecombench.schemas.models import Rubric, RubricSpec
from ecombench.tables.fields import FieldTable

RubricLike = Rubric | RubricSpec


# What a verdict rests on: the page states the requirement, contradicts it, or says nothing of it.
STATES, CONTRADICTS, SAYS_NOTHING = "states", "contradicts", "says_nothing"


@dataclass(frozen=True)
class Verdict:
    """Outcome of checking one rubric against one product.

    Attributes:
        status: satisfied, not_satisfied or unscorable.
        why: the reason in words.
        basis: for a requirement on a field of the page, whether the page `states` it, `contradicts` it or
            `says_nothing` of the field ("" where no page field decides: a price bound, a budget).
        evidence: the text the verdict rests on (a fact's evidence), when there is one.
    """

    status: str
    why: str = ""
    basis: str = ""
    evidence: str = ""

    @property
    def satisfied(self) -> bool:
        """Whether the status is "satisfied"."""
        return self.status == "satisfied"


SATISFIED = Verdict("satisfied")


def NotSatisfied(why: str) -> Verdict:  # noqa: N802 - reads as the design's verdict name
    """A not_satisfied verdict with its reason."""
    return Verdict("not_satisfied", why)


def Unscorable(why: str) -> Verdict:  # noqa: N802
    """An unscorable verdict (code cannot decide; a judge may), with its reason."""
    return Verdict("unscorable", why)


def plain_value(rubric: RubricLike) -> Any:
    """The expected value as JSON data (bounds and budgets as dicts with the keys they were given)."""
    value = rubric.expected_value
    return value.model_dump(mode="json", exclude_unset=True) if hasattr(value, "model_dump") else value


class RubricKind:
    """Base of the rubric types: defaults every type may keep, hooks each one fills.

    Class attributes:
        type: the `RubricType` value it grades ("attribute_match", ...).
        feature_kind: the `ecombench.stages.features.Feature.kind` it is built from ("detail", ...).
        field_kind: the field table kind (`FieldSpec.kind`) of the fields it applies to.
        check_cost: answer sets grade cheap types first (the verdict of all() does not depend on it).
        needs_reviews: checking it needs the product's reviews.
        vectorised: its answer-set filter (ecombench.answers.filters) decides it in polars; False leaves it to
            the checker on the products the others leave (budget arithmetic).
        reads: the product keys `check` reads ("title", "details", "price", "reviews", ...); answer sets
            gather just these columns of the rows they grade. None (the default): every column.
    """

    type: ClassVar[str]
    feature_kind: ClassVar[str]
    field_kind: ClassVar[str]
    check_cost: ClassVar[int] = 9
    needs_reviews: ClassVar[bool] = False
    vectorised: ClassVar[bool] = True
    reads: ClassVar[tuple[str, ...] | None] = None

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Satisfied, NotSatisfied(why) or Unscorable(why) for one product (a products.parquet row)."""
        raise NotImplementedError


RUBRIC_TYPES: dict[str, RubricKind] = {}
_BY_FEATURE_KIND: dict[str, RubricKind] = {}
K = TypeVar("K", bound=type[RubricKind])


def register(cls: K) -> K:
    """Class decorator: add one instance of a rubric type to the registry (one per type and feature kind).

    Raises:
        ValueError: the type or its feature kind is registered already.
    """
    if cls.type in RUBRIC_TYPES or cls.feature_kind in _BY_FEATURE_KIND:
        raise ValueError(f"rubric type {cls.type} (feature kind {cls.feature_kind}) registered twice")
    RUBRIC_TYPES[cls.type] = _BY_FEATURE_KIND[cls.feature_kind] = cls()
    return cls


def unregister(rubric_type: str) -> None:
    """Remove a registered type (tests that register a type of their own clean up with it)."""
    kind = RUBRIC_TYPES.pop(rubric_type)
    _BY_FEATURE_KIND.pop(kind.feature_kind, None)


def kind_of(rubric: RubricLike | str) -> RubricKind:
    """The registered rubric type of a rubric (or of a type name).

    Raises:
        KeyError: no rubric type of that name is registered.
    """
    name = rubric if isinstance(rubric, str) else rubric.type
    try:
        return RUBRIC_TYPES[name]
    except KeyError:
        raise KeyError(f"no rubric type {name!r} is registered (ecombench.rubrics)") from None


def kind_for_feature(feature_kind: str) -> RubricKind:
    """The rubric type built from features of this kind ("detail" -> attribute_match).

    Raises:
        KeyError: no registered type is built from that feature kind.
    """
    try:
        return _BY_FEATURE_KIND[feature_kind]
    except KeyError:
        raise KeyError(f"no rubric type is built from feature kind {feature_kind!r}") from None


def as_rubric(rubric: RubricLike | Mapping[str, Any]) -> RubricLike:
    """A typed rubric from a rubric record (JSON data) or a typed one (returned as it is).

    Records with an id are `Rubric`s; bare {type, field, expected_value} are `RubricSpec`s.

    Raises:
        pydantic.ValidationError: the record breaks schemas/rubric.schema.json.
    """
    if isinstance(rubric, (Rubric, RubricSpec)):
        return rubric
    return Rubric.model_validate(rubric) if "id" in rubric else RubricSpec.model_validate(rubric)


def as_spec(rubric: RubricLike | Mapping[str, Any]) -> RubricLike:
    """What a checker or an answer set needs of a rubric.

    Typed ones as they are, a record's {type, field, expected_value} as a `RubricSpec` (its id,
    source and sentence do not decide a verdict).

    Raises:
        pydantic.ValidationError: the value does not fit the type.
    """
    if isinstance(rubric, (Rubric, RubricSpec)):
        return rubric
    return RubricSpec.model_validate({k: rubric[k] for k in ("type", "field", "expected_value")})


def as_rubrics(rubrics: Iterable[RubricLike | Mapping[str, Any]]) -> list[Rubric]:
    """Typed rubrics of a task (records parsed once at the boundary: a task file, a test).

    Raises:
        pydantic.ValidationError: a record breaks schemas/rubric.schema.json.
    """
    return [as_rubric(r) for r in rubrics]  # type: ignore[misc]
