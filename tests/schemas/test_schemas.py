"""Data contracts: schema files on disk, their generator and their validators (schemas/)."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from ecombench.schemas import SCHEMA_DIR, SchemaError, schema_errors, validate_record
from ecombench.schemas.evidence import REASON_FIELDS
from ecombench.schemas.generate import MODELS, render
from ecombench.schemas.models import Task


@pytest.mark.parametrize("name", sorted(MODELS))
def test_schema_file_on_disk_equals_the_generated_one(name):
    assert (SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8") == render(name)


def test_every_schema_file_has_a_model():
    assert {p.name.removesuffix(".schema.json") for p in SCHEMA_DIR.glob("*.schema.json")} == set(MODELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_schema_is_a_valid_draft_2020_12_schema(name):
    Draft202012Validator.check_schema(json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8")))


def test_real_tasks_validate_against_the_pydantic_model_too(accepted_tasks):
    for t in accepted_tasks[:10]:
        Task.model_validate(t)


def test_a_task_without_its_lock_is_invalid(accepted_tasks):
    task = {k: v for k, v in accepted_tasks[0].items() if k != "rubric_lock"}
    assert any("rubric_lock" in e for e in schema_errors("task", task))


def test_a_rubric_without_a_value_is_invalid(accepted_tasks):
    r = next(r for r in accepted_tasks[0]["rubrics"] if r["type"] == "numeric_range")
    assert schema_errors("rubric", dict(r, expected_value=None)) != []


# Regression: the JSON Schema lacks the model's type/value rule (_value_fits_type), so a numeric_range rubric with a
# string value passes schema_errors and publishing
def test_a_numeric_rubric_with_a_string_value_is_invalid(accepted_tasks):
    r = next(r for r in accepted_tasks[0]["rubrics"] if r["type"] == "numeric_range")
    assert schema_errors("rubric", dict(r, expected_value="cheap")) != []


# Regression: the JSON Schema lacks NumericBound's 'min or max' rule, so an empty bound {} (which every product
# satisfies) passes schema_errors
def test_an_empty_numeric_bound_is_invalid(accepted_tasks):
    r = next(r for r in accepted_tasks[0]["rubrics"] if r["type"] == "numeric_range")
    assert schema_errors("rubric", dict(r, expected_value={})) != []


def test_validate_record_lists_every_problem(accepted_tasks):
    task = {k: v for k, v in accepted_tasks[0].items() if k not in ("rubric_lock", "answer_set")}
    with pytest.raises(SchemaError) as exc:
        validate_record("task", task)
    assert "rubric_lock" in str(exc.value) and "answer_set" in str(exc.value)


@pytest.mark.parametrize("reason", sorted(REASON_FIELDS))
def test_evidence_schema_file_on_disk_equals_the_generated_one(reason):
    from ecombench.schemas import SCHEMA_DIR
    from ecombench.schemas.generate import render_evidence

    assert (SCHEMA_DIR / "evidence" / f"{reason}.schema.json").read_text(encoding="utf-8") == render_evidence(reason)
