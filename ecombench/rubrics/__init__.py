"""Rubric types as classes in one registry keyed by the rubric-type enum (issue #11).

`kind_of(rubric)` gives the registered type of a rubric: its checker, answer-set narrowing and
filter, and how its value is stated in text. The six built-in types register on import.
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
from ecombench.rubrics.builtin import bound_phrase, in_bound

__all__ = ["RUBRIC_TYPES", "SATISFIED", "NotSatisfied", "RubricKind", "RubricLike", "Unscorable", "Verdict",
           "as_rubric", "as_rubrics", "as_spec", "bound_phrase", "in_bound", "kind_for_feature", "kind_of",
           "plain_value", "register", "unregister"]
