"""What every rubric type must say about itself, and the one registry keyed by `RubricType`.

A rubric type bundles every rule that depends on it: its code checker, how it narrows the catalog
through the answer-set index's token postings, its vectorised filter, how its value is stated in a
query, in a persona entry and in a clarification reply, the strings whose presence states its value
(leakage and completeness checks), the field kind it applies to and the feature kind it is built
from. Adding a rubric type is one subclass registered with `@register` plus data rows (fields.toml,
intents.toml); no dispatch on the type string lives anywhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ecombench.schemas.models import Rubric, RubricSpec
from ecombench.stages.features import value_forms
from ecombench.tables.fields import FieldTable

if TYPE_CHECKING:  # the index imports this module; only its type is needed here
    import numpy as np
    import polars as pl

    from ecombench.answers.index import CatalogIndex

RubricLike = Rubric | RubricSpec


@dataclass(frozen=True)
class Verdict:
    """Outcome of checking one rubric against one product: status is satisfied, not_satisfied or unscorable."""

    status: str
    why: str = ""

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
        query_role: where the template query states it: "subject", "attribute", "exclusion",
            "bound", "opinion" or "budget" (ecombench.stages.verbalise.write_query's sentence plan).
        needs_reviews: checking it needs the product's reviews.
        vectorised: `vector_filter` decides it in polars; False leaves it to the checker on the
            products the others leave (budget arithmetic).
        reads: the product keys `check` reads ("title", "details", "price", "reviews", ...); answer sets
            gather just these columns of the rows they grade. None (the default): every column.
    """

    type: ClassVar[str]
    feature_kind: ClassVar[str]
    field_kind: ClassVar[str]
    check_cost: ClassVar[int] = 9
    query_role: ClassVar[str] = "attribute"
    needs_reviews: ClassVar[bool] = False
    vectorised: ClassVar[bool] = True
    reads: ClassVar[tuple[str, ...] | None] = None

    # ---- grading -------------------------------------------------------------------------------

    def check(self, rubric: RubricLike, product: Mapping[str, Any], table: FieldTable) -> Verdict:
        """Satisfied, NotSatisfied(why) or Unscorable(why) for one product (a products.parquet row)."""
        raise NotImplementedError

    def narrow(self, index: CatalogIndex, rubric: RubricLike) -> np.ndarray | None:
        """Sorted rows holding every token of the value where this type looks, or None (cannot narrow).

        A superset of the rows that satisfy the rubric; the checker decides on the rows left.
        """
        return None

    def within_bounds(self, index: CatalogIndex, rows: np.ndarray, rubric: RubricLike) -> np.ndarray:
        """`rows` less those this rubric excludes by a catalog column in numpy (only bounds can)."""
        return rows

    def vector_filter(self, index: CatalogIndex, frame: pl.LazyFrame, rubric: RubricLike) -> pl.LazyFrame:
        """The products frame (row, title_norm, numeric columns) filtered by this rubric, same rule as `check`."""
        raise NotImplementedError

    # ---- text ----------------------------------------------------------------------------------

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The rubric's one readable sentence ("The product's colour is or includes "Blue".")."""
        raise NotImplementedError

    def forms(self, rubric: RubricLike) -> list[str]:
        """The strings whose presence in text states this rubric's value (ecombench.stages.features.value_forms)."""
        return value_forms(plain_value(rubric), rubric.field)

    def stated_forms(self, rubric: RubricLike) -> list[str]:
        """What a text must contain to state the rubric (its value forms; a bound with its direction)."""
        return self.forms(rubric)

    def query_phrase(self, rubric: RubricLike, table: FieldTable) -> str:
        """How the template query states it ("made of Plastic", "cost no more than $20")."""
        raise NotImplementedError

    def stated_in(self, rubric: RubricLike, text: str) -> bool | None:
        """Whether `text` states the rubric when the type's own wording decides, else None.

        A bound decides by its direction and unit in any wording ("4 stars or higher"); None leaves it
        to the value forms, which validation/semantic.py counts.
        """
        return None

    def query_phrase_v2(self, rubric: RubricLike, table: FieldTable, rng: Any) -> str:
        """How template-v2 states it (stages/verbalise_v2.py); defaults to the template-v1 phrase.

        Args:
            rubric: the query rubric.
            table: the field table.
            rng: the verbalisation stage's generator (types with several wordings draw from it).
        """
        return self.query_phrase(rubric, table)

    def persona_entry(self, rubric: RubricLike, table: FieldTable) -> tuple[str, str | list[str]]:
        """The (key, value) a persona rubric takes under `product_requirements`."""
        return table.by_rubric_field(rubric.field).persona_key, plain_value(rubric)

    def reply(self, rubric: RubricLike, table: FieldTable) -> str:
        """The shopper's clarification reply revealing it (ecombench.stages.replies.value_reply for one value)."""
        from ecombench.stages.replies import value_reply

        return value_reply(rubric.field, str(plain_value(rubric)), table)

    def prompt_value(self, rubric: RubricLike, table: FieldTable) -> str:
        """The value as an LLM prompt shows it for a clarification slot."""
        return str(rubric.expected_value)


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
        raise KeyError(f"no rubric type {name!r} is registered (rubric_types)") from None


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
