"""Stage 4, locked rubrics: the assignment -> typed, source-tagged rubrics and their lock.

The rubrics fix what is correct before any text exists (DESIGN "central rule"). `rubric_lock`
is sha256 of their canonical JSON; stage 7 recomputes it after verbalisation, so no text
writer (template or LLM) can change a requirement. Rubrics are `ecombench.schemas.models.Rubric`; what a
rubric type means is its classes in three registries: its checker (ecombench.rubrics), its answer-set filter
(ecombench.answers.filters) and its phrases (ecombench.stages.phrasing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ecombench.hashing import canonical_json, sha256_hex
from ecombench.rubrics import kind_for_feature
from ecombench.schemas.models import Rubric, RubricSpec
from ecombench.stages.features import Feature
from ecombench.stages.phrasing import phrasing_of
from ecombench.stages.split import Assignment
from ecombench.stages.value_forms import bound_phrase
from ecombench.tables.fields import FieldTable

__all__ = ["bound_phrase", "build_rubrics", "describe", "feature_rubric", "rubric_lock"]


def describe(feature: Feature, table: FieldTable) -> str:
    """One readable sentence for the rubric of `feature` (its rubric type's sentence)."""
    return phrasing_of(kind_for_feature(feature.kind).type).describe(feature.field, feature.value, table)


def feature_rubric(feature: Feature) -> RubricSpec:
    """The checkable core of a feature's rubric: type, field, expected value (no id, source or text yet).

    What `CatalogIndex.support` counts before the split decides where the feature goes, and what
    `build_rubrics` completes afterwards, so the two cannot differ.
    """
    return RubricSpec.model_validate({"type": kind_for_feature(feature.kind).type, "field": feature.field,
                                      "expected_value": feature.value})


def build_rubrics(assignment: Assignment, table: FieldTable) -> list[Rubric]:
    """Typed rubrics for an assignment, ids r1..rN in source order (query, persona, clarification).

    Returns:
        `Rubric`s matching schemas/rubric.schema.json: id, type, field, expected_value,
        info_source, description (+ source_review_ids for review opinions).

    Raises:
        pydantic.ValidationError: a feature's value does not fit its rubric type (a bug upstream).
    """
    rubrics: list[Rubric] = []
    for source in ("query", "persona", "clarification"):
        for feature in getattr(assignment, source):
            record: dict[str, Any] = {"id": f"r{len(rubrics) + 1}", "type": kind_for_feature(feature.kind).type,
                                      "field": feature.field, "expected_value": feature.value, "info_source": source,
                                      "description": describe(feature, table)}
            if feature.kind == "opinion":
                record["source_review_ids"] = list(feature.evidence)
            rubrics.append(Rubric.model_validate(record))
    return rubrics


def rubric_lock(rubrics: Iterable[Rubric | Mapping[str, Any]]) -> str:
    """sha256 of the canonical JSON of the rubrics (order included), typed or as records."""
    return sha256_hex(canonical_json([r.record() if not isinstance(r, Mapping) else dict(r)
                                      for r in rubrics]))
