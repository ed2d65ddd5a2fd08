"""Stage 4, locked rubrics: the assignment -> typed, source-tagged rubrics and their lock.

The rubrics fix what is correct before any text exists (DESIGN "central rule"). `rubric_lock`
is sha256 of their canonical JSON; stage 7 recomputes it after verbalisation, so no text
writer (template or LLM) can change a requirement.
"""

from __future__ import annotations

from typing import Any

from stages.features import NUMBER_UNITS, Feature
from stages.fields import FieldTable
from stages.hashing import canonical_json, sha256_hex
from stages.split import Assignment
from stages.text import format_number

RUBRIC_TYPE_BY_KIND = {"detail": "attribute_match", "numeric": "numeric_range", "entity": "entity_match",
                       "negative": "negative_attribute", "budget": "budget_match", "opinion": "review_opinion"}


def bound_phrase(field: str, bound: dict[str, Any]) -> str:
    """How a person states a numeric bound: "at least 4.5 stars", "no more than $20", "at least 100 ratings".

    Exclusive bounds say "more than" / "less than"; inclusive ones "at least" / "no more than".
    """
    unit_before, unit_after = NUMBER_UNITS.get(field, ("", ""))
    parts = []
    if bound.get("min") is not None:
        word = "at least" if bound.get("min_inclusive", True) else "more than"
        parts.append(f"{word} {unit_before}{format_number(bound['min'])}{unit_after}")
    if bound.get("max") is not None:
        word = "no more than" if bound.get("max_inclusive", True) else "less than"
        parts.append(f"{word} {unit_before}{format_number(bound['max'])}{unit_after}")
    return " and ".join(parts)


def describe(feature: Feature, table: FieldTable) -> str:
    """One readable sentence for the rubric of `feature`."""
    spec = table.by_rubric_field(feature.field)
    if feature.kind == "numeric":
        verb = {"average_rating": "is rated", "rating_number": "has", "price": "costs"}.get(feature.field, "is")
        return f"The product {verb} {bound_phrase(feature.field, feature.value)}."
    if feature.kind == "entity":
        return f"The product is a kind of {feature.value} (its title says so)."
    if feature.kind == "negative":
        return f"The product's {spec.label} is none of " + ", ".join(f'"{v}"' for v in feature.value) + "."
    if feature.kind == "budget":
        return (f"After the {feature.value['voucher']['scenario']} voucher, the product costs at most "
                f"${format_number(feature.value['max_total'])}.")
    if feature.kind == "opinion":
        return f"The product's reviews say \"{feature.value}\"."
    return f"The product's {spec.label} is or includes \"{feature.value}\"."


def feature_rubric(feature: Feature) -> dict[str, Any]:
    """The checkable core of a feature's rubric: {type, field, expected_value} (no id, source or text yet).

    What `CatalogIndex.support` counts before the split decides where the feature goes, and what
    `build_rubrics` completes afterwards, so the two cannot differ.
    """
    return {"type": RUBRIC_TYPE_BY_KIND[feature.kind], "field": feature.field, "expected_value": feature.value}


def build_rubrics(assignment: Assignment, table: FieldTable) -> list[dict[str, Any]]:
    """Rubric records for an assignment, ids r1..rN in source order (query, persona, clarification).

    Returns:
        A list of dicts matching schemas/rubric.schema.json:
        {id, type, field, expected_value, info_source, description} (+ source_review_ids for
        review opinions).
    """
    rubrics = []
    for source in ("query", "persona", "clarification"):
        for feature in getattr(assignment, source):
            core = feature_rubric(feature)
            rubric = {"id": f"r{len(rubrics) + 1}", **core, "info_source": source,
                      "description": describe(feature, table)}
            if feature.kind == "opinion":
                rubric["source_review_ids"] = list(feature.evidence)
            rubrics.append(rubric)
    return rubrics


def rubric_lock(rubrics: list[dict[str, Any]]) -> str:
    """sha256 of the canonical JSON of the rubrics (order included)."""
    return sha256_hex(canonical_json(rubrics))
