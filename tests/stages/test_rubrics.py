"""Stage 4, locked rubrics, built from real products' assignments (stages/rubrics.py)."""

from __future__ import annotations

import copy

import pytest

from ecombench.hashing import rng
from ecombench.schemas import schema_errors
from ecombench.schemas.config import SplitConfig
from ecombench.stages.features import extract_features
from ecombench.stages.rubrics import bound_phrase, build_rubrics, rubric_lock
from ecombench.stages.split import select_features, split_features
from ecombench.tables.intents import load_intents


@pytest.fixture(scope="module")
def assignment(rich_catalog):
    intent = load_intents()["product_search"]
    gen = rng(0)
    features, _ = extract_features(rich_catalog.product("B012I6UBXY"), intent, rich_catalog.table, gen,
                                   type_vocabulary=rich_catalog.type_vocabulary)
    return split_features(select_features(features, intent, gen), intent, SplitConfig(), gen)


@pytest.fixture(scope="module")
def rubrics(assignment, rich_catalog):
    return build_rubrics(assignment, rich_catalog.table)


def test_rubric_ids_are_r1_to_rn(rubrics):
    assert [r.id for r in rubrics] == [f"r{i}" for i in range(1, len(rubrics) + 1)]


def test_rubrics_are_ordered_query_persona_clarification(rubrics, assignment):
    expected = ["query"] * len(assignment.query) + ["persona"] * len(assignment.persona) \
        + ["clarification"] * len(assignment.clarification)
    assert [r.info_source for r in rubrics] == expected


def test_rubric_types_follow_the_feature_kind(rubrics):
    by_field = {r.field: r.type for r in rubrics}
    assert by_field["title"] == "entity_match"
    assert all(t == "attribute_match" for f, t in by_field.items() if f.startswith("details."))
    assert all(t == "numeric_range" for f, t in by_field.items() if f in ("price", "average_rating", "rating_number"))


def test_rubric_lock_is_stable_for_equal_rubrics(rubrics):
    assert rubric_lock(copy.deepcopy(rubrics)) == rubric_lock(rubrics)


def test_rubric_lock_ignores_key_order(rubrics):
    reordered = [dict(reversed(list(r.record().items()))) for r in rubrics]
    assert rubric_lock(reordered) == rubric_lock(rubrics)


def test_rubric_lock_changes_when_any_expected_value_changes(rubrics):
    lock = rubric_lock(rubrics)
    for i, r in enumerate(rubrics):
        changed = [x.record() for x in rubrics]
        v = changed[i]["expected_value"]
        changed[i]["expected_value"] = ({k: (x + 1 if isinstance(x, float) else x) for k, x in v.items()}
                                        if isinstance(v, dict) else v + " Pro")
        assert rubric_lock(changed) != lock, r.id


def test_rubric_lock_changes_when_a_source_changes(rubrics):
    changed = [x.record() for x in rubrics]
    changed[-1]["info_source"] = "query"
    assert rubric_lock(changed) != rubric_lock(rubrics)


def test_every_rubric_of_real_tasks_matches_the_rubric_schema(accepted_tasks):
    problems = [(t["id"], r["id"], schema_errors("rubric", r)) for t in accepted_tasks for r in t["rubrics"]]
    assert [p for p in problems if p[2]] == []


def test_every_built_rubric_matches_the_rubric_schema(rubrics):
    assert [schema_errors("rubric", r.record()) for r in rubrics] == [[] for _ in rubrics]


def test_a_rubric_record_is_its_lock_input(rubrics):
    assert rubric_lock(rubrics) == rubric_lock([r.record() for r in rubrics])


@pytest.mark.parametrize(("field", "bound", "text"), [
    ("price", {"max": 20.0, "max_inclusive": True}, "no more than $20"),
    ("price", {"max": 20.0, "max_inclusive": False}, "less than $20"),
    ("average_rating", {"min": 4.5, "min_inclusive": True}, "at least 4.5 stars"),
    ("rating_number", {"min": 1000.0, "min_inclusive": False}, "more than 1,000 ratings"),
])
def test_bound_phrase_states_inclusiveness(field, bound, text):
    assert bound_phrase(field, bound) == text
