"""Rubric checkers: `check(rubric, product)` with the registered rubric type's code checker.

Returns Satisfied, NotSatisfied(why) or Unscorable(why). Each type's rule lives in its class in
ecombench/rubrics/builtin.py; this module is the checking entry point for the build, validate and the
grader. The answer-set filters in ecombench/answers/filters.py implement the same rules vectorised;
tests hold the two equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecombench.rubrics import (
    RUBRIC_TYPES,
    SATISFIED,
    NotSatisfied,
    RubricLike,
    Unscorable,
    Verdict,
    as_spec,
    in_bound,
    kind_of,
)
from ecombench.rubrics.builtin import UNSCORABLE_OVERLAP
from ecombench.tables.fields import FieldTable, load_field_table

__all__ = ["CHECKERS", "SATISFIED", "UNSCORABLE_OVERLAP", "NotSatisfied", "Unscorable", "Verdict", "check",
           "failing_rubrics", "in_bound"]

CHECKERS = RUBRIC_TYPES  # the registry: rubric type -> its class (with .check)


def check(rubric: RubricLike | Mapping[str, Any], product: Mapping[str, Any],
          table: FieldTable | None = None) -> Verdict:
    """Check one rubric against one product with the registered checker for its type.

    Args:
        rubric: a typed rubric, or a rubric record (parsed here: a task file's JSON).
        product: a products.parquet row as a dict (with "reviews" for review opinions).
        table: the field table; None loads the bundled one.

    Returns:
        Unscorable when no checker exists for the type (never a silent pass or fail).
    """
    name = rubric.type if not isinstance(rubric, Mapping) else rubric.get("type")
    if name not in RUBRIC_TYPES:
        return Unscorable(f"no code checker for rubric type {name}")
    typed = as_spec(rubric)
    return kind_of(typed).check(typed, product, table or load_field_table())


def failing_rubrics(rubrics: Sequence[RubricLike] | Sequence[Mapping[str, Any]], product: Mapping[str, Any],
                    table: FieldTable) -> list[dict[str, Any]]:
    """Every rubric the product does not satisfy, with the verdict: [{rubric_id, field, status, why}]."""
    out = []
    for r in rubrics:
        v = check(r, product, table)
        if not v.satisfied:
            rid, field = (r["id"], r["field"]) if isinstance(r, Mapping) else (getattr(r, "id", None), r.field)
            out.append({"rubric_id": rid, "field": field, "status": v.status, "why": v.why})
    return out
