"""Rubric types: how each is graded against one product, in one registry keyed by the rubric-type enum.

`kind_of(rubric)` gives the registered type of a rubric: its code checker and what it reads. The six
built-in types register on import. Answer-set filters (ecombench.answers.filters) and phrasing
(ecombench.stages.phrasing) are registries of their own, keyed by the same names: grading never imports phrasing.
"""

from ecombench.rubrics.base import (
    RUBRIC_TYPES,
    SATISFIED,
    NotSatisfied,
    RubricKind,
    RubricLike,
    Unscorable,
    Verdict,
    as_rubric,
    as_rubrics,
    as_spec,
    kind_for_feature,
    kind_of,
    plain_value,
    register,
    unregister,
)
from ecombench.rubrics.builtin import in_bound

__all__ = ["RUBRIC_TYPES", "SATISFIED", "NotSatisfied", "RubricKind", "RubricLike", "Unscorable", "Verdict",
           "as_rubric", "as_rubrics", "as_spec", "in_bound", "kind_for_feature", "kind_of",
           "plain_value", "register", "unregister"]
