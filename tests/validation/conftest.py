"""A real accepted task to break in the leakage and semantic tests."""

from __future__ import annotations

import copy

import pytest


@pytest.fixture(scope="session")
def clean_task(accepted_tasks):
    """The first accepted task with a string persona rubric, a query attribute rubric and two slots."""
    for t in accepted_tasks:
        persona = [r for r in t["rubrics"] if r["info_source"] == "persona" and isinstance(r["expected_value"], str)]
        query = [r for r in t["rubrics"] if r["info_source"] == "query" and r["type"] == "attribute_match"]
        if persona and query and len(t["clarification_script"]["clarification_slots"]) >= 2:
            return t
    raise AssertionError("no accepted task has persona and query attributes and two slots")


@pytest.fixture
def task(clean_task):
    """A private copy of the real task, free to break."""
    return copy.deepcopy(clean_task)


def first(task, source, type_=None):
    return next(r for r in task["rubrics"] if r["info_source"] == source
                and (type_ is None or r["type"] == type_) and isinstance(r["expected_value"], str))
