"""How each rubric type is stated in text: its sentence, query phrase, persona entry, clarification reply.

One class per rubric type, registered by type name beside its grading (ecombench.rubrics) and its answer-set
filter (ecombench.answers.filters). It also says which strings state a rubric's value, for the leakage and
completeness checks of stages 6-7, and where the template query puts it (`query_role`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from ecombench.lemmas import states_bound
from ecombench.rubrics import RubricLike, as_spec, plain_value
from ecombench.stages.product_naming import natural_type
from ecombench.stages.replies import bound_reply, exclusion_reply, value_reply
from ecombench.stages.value_forms import bound_phrase, value_forms
from ecombench.stages.value_phrases import attribute_phrase, exclusion_sentence
from ecombench.stages.vouchers import describe_budget
from ecombench.tables.fields import FieldTable
from ecombench.text import fill, format_number, join_words

# How the template query opens a bound ("it must be rated at least 4 stars").
NUMERIC_VERBS = {"average_rating": "be rated", "rating_number": "have", "price": "cost"}


class RubricPhrasing:
    """The text side of one rubric type: defaults every type may keep, hooks each one fills.

    Class attributes:
        type: the `RubricType` value it phrases ("attribute_match", ...).
        query_role: where the template query states it: "subject", "attribute", "exclusion",
            "bound", "opinion" or "budget" (ecombench.stages.verbalise.write_query's sentence plan).
    """

    type: ClassVar[str]
    query_role: ClassVar[str] = "attribute"

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The rubric's one readable sentence ("The product's colour is or includes "Blue".")."""
        raise NotImplementedError

    def forms(self, rubric: RubricLike) -> list[str]:
        """The strings whose presence in text states this rubric's value (ecombench.stages.value_forms)."""
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
        to the value forms, which ecombench.validation.semantic counts.
        """
        return None

    def query_phrase_v2(self, rubric: RubricLike, table: FieldTable, rng: Any) -> str:
        """How template-v2 states it (ecombench.stages.verbalise_v2); defaults to the template-v1 phrase.

        Args:
            rubric: the query rubric.
            table: the field table.
            rng: the verbalisation stage's generator (types with several wordings draw from it).
        """
        return self.query_phrase(rubric, table)

    def persona_entry(self, rubric: RubricLike, table: FieldTable) -> tuple[str, str | list[str]]:
        """The (key, value) a persona rubric takes under `product_requirements`."""
        return table.by_rubric_field(rubric.field).persona_key, plain_value(rubric)

    def reply(self, rubric: RubricLike, table: FieldTable, rng: Any = None) -> str:
        """The shopper's reply revealing it (ecombench.stages.replies.value_reply for one value).

        Args:
            rubric: the rubric.
            table: the field table.
            rng: the verbalisation stage's generator, which draws one of the field's reply forms; None says
                the first.
        """
        return value_reply(rubric.field, str(plain_value(rubric)), table, rng)

    def prompt_value(self, rubric: RubricLike, table: FieldTable) -> str:
        """The value as an LLM prompt shows it for a clarification slot."""
        return str(rubric.expected_value)


PHRASINGS: dict[str, RubricPhrasing] = {}
P = TypeVar("P", bound=type[RubricPhrasing])


def register_phrasing(cls: P) -> P:
    """Class decorator: add one instance of a rubric type's phrasing to the registry.

    Raises:
        ValueError: the type has a phrasing already.
    """
    if cls.type in PHRASINGS:
        raise ValueError(f"rubric type {cls.type} has two phrasings")
    PHRASINGS[cls.type] = cls()
    return cls


def unregister_phrasing(rubric_type: str) -> None:
    """Remove a registered phrasing (tests that register a type of their own clean up with it)."""
    PHRASINGS.pop(rubric_type, None)


def phrasing_of(rubric: RubricLike | str) -> RubricPhrasing:
    """The registered phrasing of a rubric's type (or of a type name).

    Raises:
        KeyError: no phrasing of that type is registered.
    """
    name = rubric if isinstance(rubric, str) else rubric.type
    try:
        return PHRASINGS[name]
    except KeyError:
        raise KeyError(f"no phrasing of rubric type {name!r} is registered (ecombench.stages.phrasing)") from None


def slot_reply(rubric: RubricLike | Mapping[str, Any], table: FieldTable, rng: Any = None) -> str:
    """The shopper's reply revealing one clarification rubric (dict or typed model): its type's `reply`.

    Args:
        rubric: the rubric.
        table: the field table.
        rng: the verbalisation stage's generator (a seeded `random.Random`) drawing the reply form; None
            says each field's first form.

    Raises:
        KeyError: the rubric's field is not in the field table.
    """
    typed = as_spec(rubric)
    return phrasing_of(typed).reply(typed, table, rng)


@register_phrasing
class AttributeMatchPhrasing(RubricPhrasing):
    """A detail value: "made of faux leather", "in blue"."""

    type = "attribute_match"
    query_role = "attribute"

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The readable sentence, e.g. The product's colour is or includes "Blue"."""
        return f"The product's {table.by_rubric_field(field).label} is or includes \"{value}\"."

    def query_phrase(self, rubric: RubricLike, table: FieldTable) -> str:
        """The field table's query phrase with the value filled in."""
        return fill(table.by_rubric_field(rubric.field).query_phrase, str(rubric.expected_value))

    def query_phrase_v2(self, rubric: RubricLike, table: FieldTable, rng: Any) -> str:
        """The value as a shopper writes it ("made of faux leather", "for a 6-month-old")."""
        return attribute_phrase(rubric.field, str(rubric.expected_value), table, rng)


@register_phrasing
class NumericRangePhrasing(RubricPhrasing):
    """A bound with its direction: "cost no more than $20"."""

    type = "numeric_range"
    query_role = "bound"

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

    def reply(self, rubric: RubricLike, table: FieldTable, rng: Any = None) -> str:
        """The bound said aloud (ecombench.stages.replies.bound_reply)."""
        return bound_reply(rubric.field, rubric.expected_value, table, rng)

    def prompt_value(self, rubric: RubricLike, table: FieldTable) -> str:
        """The bound in words."""
        return bound_phrase(rubric.field, rubric.expected_value)


@register_phrasing
class EntityMatchPhrasing(RubricPhrasing):
    """The product type, the query's subject: "a wall clock"."""

    type = "entity_match"
    query_role = "subject"

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The readable sentence, e.g. The product is a kind of wall clock (its title says so)."""
        return f"The product is a kind of {value} (its title says so)."

    def query_phrase(self, rubric: RubricLike, table: FieldTable) -> str:
        """The product type itself, as the query's subject."""
        return str(rubric.expected_value)

    def query_phrase_v2(self, rubric: RubricLike, table: FieldTable, rng: Any) -> str:
        """The product type in natural form ("a wall clock", "earbuds")."""
        return natural_type(str(rubric.expected_value))


@register_phrasing
class NegativeAttributePhrasing(RubricPhrasing):
    """Excluded values: "Nothing in green or pink colours, please."."""

    type = "negative_attribute"
    query_role = "exclusion"

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

    def reply(self, rubric: RubricLike, table: FieldTable, rng: Any = None) -> str:
        """The excluded values said aloud (ecombench.stages.replies.exclusion_reply)."""
        return exclusion_reply(rubric.field, list(rubric.expected_value), table, rng)  # type: ignore[arg-type]

    def prompt_value(self, rubric: RubricLike, table: FieldTable) -> str:
        """The value as the prompt shows it, e.g. anything but Blue or Red."""
        return "anything but " + " or ".join(rubric.expected_value)  # type: ignore[arg-type]


@register_phrasing
class BudgetMatchPhrasing(RubricPhrasing):
    """A voucher and the budget after it."""

    type = "budget_match"
    query_role = "budget"

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The readable sentence, e.g. After the simple voucher, the product costs at most $24."""
        return (f"After the {value['voucher']['scenario']} voucher, the product costs at most "
                f"${format_number(value['max_total'])}.")

    def query_phrase(self, rubric: RubricLike, table: FieldTable) -> str:
        """The voucher and budget in words (ecombench.stages.vouchers.describe_budget)."""
        return describe_budget(plain_value(rubric))

    def query_phrase_v2(self, rubric: RubricLike, table: FieldTable, rng: Any) -> str:
        """The voucher and budget in one of several wordings drawn with the stage's generator."""
        return describe_budget(plain_value(rubric), rng)


@register_phrasing
class ReviewOpinionPhrasing(RubricPhrasing):
    """An opinion the target's reviews state, quoted."""

    type = "review_opinion"
    query_role = "opinion"

    def describe(self, field: str, value: Any, table: FieldTable) -> str:
        """The readable sentence, e.g. The product's reviews say "easy to clean"."""
        return f"The product's reviews say \"{value}\"."

    def query_phrase(self, rubric: RubricLike, table: FieldTable) -> str:
        """The opinion in double quotes."""
        return f'"{rubric.expected_value}"'


def rubric_forms(rubric: RubricLike | Mapping[str, Any]) -> list[str]:
    """The strings whose presence in text states this rubric's value (its rubric type's `forms`)."""
    typed = as_spec(rubric)
    return phrasing_of(typed).forms(typed)
