"""A real accepted task to break in the leakage and semantic tests."""

from __future__ import annotations

import copy

import pytest


def _qualifies(t) -> bool:
    persona = [r for r in t["rubrics"] if r["info_source"] == "persona" and isinstance(r["expected_value"], str)]
    query = [r for r in t["rubrics"] if r["info_source"] == "query" and r["type"] == "attribute_match"
             and r["id"] not in t["implicit_rubric_ids"]]
    by_id = {r["id"]: r for r in t["rubrics"]}
    slots = t["clarification_script"]["clarification_slots"]
    return bool(persona and query and len(slots) >= 2
                and all(isinstance(by_id[rid]["expected_value"], str)
                        for s in slots[:2] for rid in s["linked_rubric_ids"]))


@pytest.fixture(scope="session")
def clean_task(accepted_tasks, rich_plan, rich_catalog):
    """The first accepted task with string persona and slot values, a stated query attribute and two slots.

    Issue #12's answer-set split often hides bounds, so when no task of the rich build has two string slots,
    one comes from the same candidates built with its quality rules off (these tests break text, not quality).
    """
    import dataclasses

    from ecombench.pipeline.candidate import build_candidate

    for t in accepted_tasks:
        if _qualifies(t):
            return t
    ctx, _, sampling = rich_plan
    ctx = dataclasses.replace(ctx, config=ctx.config.model_copy(update={"min_hidden_answer_set": 1,
                                                                        "min_value_support": 1}))
    for asin in sampling["product_search"]["candidates"]:
        t = build_candidate(rich_catalog.product(asin), "product_search", ctx).task
        if t is not None and _qualifies(t):
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
