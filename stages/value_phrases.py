"""How template-v2 says one requirement (issue #14): a detail value and an exclusion, as a shopper writes them.

Each rubric type's `query_phrase_v2` (rubric_types/builtin.py) calls these; stages/verbalise_v2.py
composes the phrases into sentence plans. Kept apart from the query writer because rubric_types
imports this module and the writer imports rubric_types.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from stages.fields import FieldTable
from stages.replies import AGE_FIELDS, age_phrase, speech_case
from stages.text import fill, join_words

EXCLUDE = ("I'm fine with any {label} but {values}.", "Any {label} but {values} is fine.",
           "I don't want {values} as the {label}.")
EXCLUDE_COLOUR = ("Nothing in {values} colours, please.", "I'd rather not have it in {values} colours.")

# How a query states a detail value where the field table's template-v1 phrase reads stiffly.
PHRASES: dict[str, str] = {
    "Mounting Type": "in a {value} design",
    "Form Factor": "in the {value} style",
    "Connectivity Technology": "that connects over {value}",
    "Special Feature": "with {value}",
    "Power Source": "that's {value}",
    "Compatible Devices": "that works with {value}",
    "Compatible Phone Models": "that fits the {value}",
    "Recommended Uses For Product": "to use for {value}",
    "Capacity": "that holds {value}",
    "Age Range (Description)": "for {value} users",
    "Size": "in size {value}",
    "Item Form": "in {value} form",
}


def attribute_phrase(field: str, value: str, table: FieldTable) -> str:
    """A detail value as a shopper writes it.

    "made of faux leather", "for ages 4 to 12", "for a 6-month-old", "with a 17-inch screen",
    "that connects over Bluetooth".

    Args:
        field: the rubric field ("details.Material").
        value: the rubric's expected value.
        table: the field table (its query phrase where PHRASES has none).
    """
    spec = table.by_rubric_field(field)
    if spec.name in AGE_FIELDS:
        said = age_phrase(value)
        if said is not None:
            return f"for {said}"
    m = re.match(r"^(\d+(?:\.\d+)?)\s*(inch|inches|in)$", value.strip(), re.IGNORECASE)
    if spec.name == "Screen Size" and m:
        return f"with a {m.group(1)}-inch screen"
    said = value if spec.name == "Brand" else speech_case(value)
    return fill(PHRASES.get(spec.name, spec.query_phrase), said)


def exclusion_sentence(field: str, values: Sequence[str], table: FieldTable, rng: random.Random) -> str:
    """Excluded values with their field named.

    "Nothing in green or pink colours, please.", "I'm fine with any material but plastic or metal.".

    Args:
        field: the negative rubric's field.
        values: the excluded values.
        table: the field table (the field's label).
        rng: the verbalisation stage's generator (draws the wording).
    """
    spec = table.by_rubric_field(field)
    said = join_words([speech_case(v) for v in values], "or")
    plans = EXCLUDE_COLOUR if spec.name == "Color" else EXCLUDE
    text = rng.choice(plans).format(label=spec.label, values=said)
    return text[:1].upper() + text[1:]
