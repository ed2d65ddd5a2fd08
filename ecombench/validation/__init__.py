"""The checks behind stages 6 and 7 (leakage, answer sets, semantics, rubric checkers, expectations) and `validate`."""
