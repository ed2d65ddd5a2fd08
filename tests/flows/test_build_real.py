"""A build on real data: the electronics/beauty/office catalog plus its Hugging Face-form copy, 3 intents x 100
candidates, without Prefect. That two builds of one config give the same bytes is tested by
tests/flows/test_dask_runner.py (three runners, every candidate computed each time) and tests/flows/test_resume.py."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ecombench.catalog.facts import with_facts
from ecombench.catalog.ingest import write_catalog_snapshot
from ecombench.catalog.snapshot import load_snapshot
from ecombench.pipeline.build import build_split
from ecombench.pipeline.config import BuildConfig
from ecombench.rubrics.checkers import check
from ecombench.schemas import schema_errors
from ecombench.stages.phrasing import rubric_forms
from ecombench.tables.fields import load_field_table
from ecombench.text import contains_phrase
from ecombench.validation.catalog_stats import snapshot_facts

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "amazon-reviews-2023"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"real data folder {DATA} is absent")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real")
    catalog = tmp / "catalog"
    manifest = write_catalog_snapshot([DATA / "meta_electronics_beauty_office.jsonl",
                                       DATA / "meta_hf_form_sample.jsonl"], [], catalog)
    config = BuildConfig(min_hidden_division=1,
                         catalog=str(catalog), intents=["product_search", "rating_quality", "feature_combination"],
                         candidates_per_intent=100, resume=False)  # both builds compute everything
    first = build_split(config, "real", root=tmp / "splits", artifacts=tmp / "artifacts")
    products, _ = load_snapshot(catalog)
    # The targets as the build read them: with their product facts (what the whole page states).
    products = with_facts(products, snapshot_facts(catalog, load_field_table()).facts)
    return manifest, first, products


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_hf_copies_are_reported_as_duplicates(built):
    manifest, *_ = built
    assert manifest["counts"]["bad_by_reason"] == {"duplicate_parent_asin": 300}


def test_at_least_10_tasks_accepted(built):
    # Rejecting queries that leave fewer than min_query_answer_set (3) products costs mostly
    # feature_combination, whose query attributes pin the target. Every hidden source needed, values at least 3
    # products carry: in this 1,000-product copy one persona or clarification value with the query often singles
    # out the target.
    _, first, _ = built
    assert first.manifest["counts"]["tasks"] >= 10
    assert first.manifest["counts"]["rejection_reasons"].get("query_pins_target", 0) > 0


def test_every_task_matches_the_schema(built):
    _, first, _ = built
    for task in _lines(first.path / "tasks.jsonl"):
        assert schema_errors("task", task) == [], task["id"]


def test_every_target_passes_each_of_its_rubrics_by_code(built):
    _, first, products = built
    table = load_field_table()
    by_id = {p["parent_asin"]: p for p in products.filter(
        pl.col("parent_asin").is_in([t["target_product"]["parent_asin"] for t in _lines(first.path / "tasks.jsonl")])
    ).to_dicts()}
    for task in _lines(first.path / "tasks.jsonl"):
        product = by_id[task["target_product"]["parent_asin"]]
        for rubric in task["rubrics"]:
            assert check(rubric, product, table).satisfied, (task["id"], rubric)


def test_no_persona_or_clarification_value_appears_in_a_query(built):
    _, first, _ = built
    for task in _lines(first.path / "tasks.jsonl"):
        for rubric in task["rubrics"]:
            if rubric["info_source"] != "query":
                for form in rubric_forms(rubric):
                    assert not contains_phrase(task["user_query"], form), (task["id"], rubric["id"], form)


def test_every_candidate_is_a_task_or_a_rejection_with_a_reason(built):
    _, first, _ = built
    tasks = _lines(first.path / "tasks.jsonl")
    rejections = _lines(first.path / "rejections.jsonl")
    sampled = sum(s["sampled"] for s in first.manifest["sampling"].values())
    # 3 x 100 requested; fewer when an intent runs short of products of a type whose statistics decide (the
    # manifest's shortfall says how many).
    short = sum(s["shortfall"] for s in first.manifest["sampling"].values())
    assert len(tasks) + len(rejections) == sampled == 300 - short and sampled >= 200
    assert all(r["reason"] and schema_errors("rejection", r) == [] for r in rejections)
    assert {t["target_product"]["parent_asin"] for t in tasks}.isdisjoint({r["parent_asin"] for r in rejections})
