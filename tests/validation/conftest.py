"""A real accepted task to break in the leakage and semantic tests."""

from __future__ import annotations

import copy

import pytest


@pytest.fixture(scope="session")
def clean_task(accepted_tasks):
    """The first accepted task with string persona and clarification rubrics, a query attribute rubric and two slots."""
    for t in accepted_tasks:
        persona = [r for r in t["rubrics"] if r["info_source"] == "persona" and isinstance(r["expected_value"], str)]
        query = [r for r in t["rubrics"] if r["info_source"] == "query" and r["type"] == "attribute_match"
                 and r["id"] not in t["implicit_rubric_ids"]]
        # string clarification rubrics only: with issue #12's answer-set split, clarification may hold bounds
        clar = [r for r in t["rubrics"] if r["info_source"] == "clarification"]
        if (persona and query and clar and all(isinstance(r["expected_value"], str) for r in clar)
                and len(t["clarification_script"]["clarification_slots"]) >= 2):
            return t
    raise AssertionError("no accepted task has persona and query attributes and two slots")


@pytest.fixture
def task(clean_task):
    """A private copy of the real task, free to break."""
    return copy.deepcopy(clean_task)


def first(task, source, type_=None):
    """The first rubric of `source` (and type) with a string value, stated outright (not through an implicit cue:
    product_search and rating_quality may now state some through cues, issue #12)."""
    return next(r for r in task["rubrics"] if r["info_source"] == source
                and (type_ is None or r["type"] == type_) and isinstance(r["expected_value"], str)
                and r["id"] not in (task.get("implicit_rubric_ids") or []))
