"""Data expectations (great-expectations) over real catalog snapshots and real accepted tasks.

The suites pass on the real data; a real snapshot with one real row duplicated breaks an ERROR
expectation and the build refuses to publish, writing nothing; a WARN that real rows break is only
reported. This module and the builds it triggers are where GX gets imported (~7 s once).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ecombench.catalog.integrity import snapshot_files
from ecombench.pipeline.build import assemble, batches_of, build_split, plan_build, run_batch
from ecombench.pipeline.config import BuildConfig
from ecombench.validation.expectations import (
    ERROR,
    WARN,
    ExpectationsFailed,
    catalog_expectations,
    raise_if_blocking,
    run_suites,
    task_expectations,
    task_table,
)
from tests.conftest import session_prefect_url

REPO = Path(__file__).resolve().parents[2]
INTENTS = ["product_search", "review_driven"]


def _by_name(summary: dict, suite: str) -> dict[str, dict]:
    return {e["name"]: e for e in summary["suites"][suite]["expectations"]}


@pytest.fixture(scope="module")
def sample_build(sample_catalog, tmp_path_factory, artifacts):
    """`build_split` of two intents over the bundled real sample."""
    # Issue #12's quality rules off: from 20 candidates per intent they leave few review_driven tasks; this file tests
    # the data expectations, not task quality.
    config = BuildConfig(catalog=str(sample_catalog.path), intents=INTENTS, candidates_per_intent=20,
                         min_hidden_answer_set=1, min_hidden_division=1, min_value_support=1)
    return build_split(config, "sample", root=tmp_path_factory.mktemp("splits"), artifacts=artifacts)


@pytest.fixture(scope="module")
def sample_tasks(sample_build) -> list[dict]:
    """The accepted tasks of `sample_build` (review_driven among them: the sample has reviews)."""
    text = (sample_build.path / "tasks.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def duplicated_snapshot(sample_catalog, tmp_path_factory) -> tuple[Path, str]:
    """A copy of the sample snapshot whose products.parquet holds one real product twice."""
    out = tmp_path_factory.mktemp("dup") / "sample-dup"
    shutil.copytree(sample_catalog.path, out)
    products = pl.read_parquet(out / "products.parquet")
    row = products.filter(pl.col("main_category").is_not_null()).head(1)
    pl.concat([products, row]).write_parquet(out / "products.parquet")
    # Its manifest re-records the files, as a snapshot written by other code would: the integrity check
    # passes and the expectations suite is what refuses it.
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["files"] = snapshot_files(out)
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out, row.get_column("parent_asin")[0]


# ---- the suites as data (no GX) ------------------------------------------------------------------

def test_every_expectation_has_a_severity_and_a_unique_name():
    suite = catalog_expectations() + task_expectations(["product_search"])
    assert {e.severity for e in suite} == {ERROR, WARN}
    assert len({e.name for e in suite}) == len(suite)


def test_task_table_takes_review_driven_minimums_from_intents_toml(sample_tasks):
    rows = task_table(sample_tasks).to_dicts()
    minimums = {(r["intent"], r["min_persona_rubrics"], r["min_clarification_rubrics"]) for r in rows}
    assert ("review_driven", 1, 1) in minimums
    assert ("product_search", 2, 2) in minimums


# ---- suites on real data ---------------------------------------------------------------------------

def test_catalog_suite_passes_on_the_bundled_sample(sample_catalog):
    summary = run_suites(sample_catalog.products, [])
    assert summary["blocking"] == []
    assert summary["suites"]["catalog"]["success"], [e for e in summary["suites"]["catalog"]["expectations"]
                                                     if not e["success"]]
    assert summary["suites"]["catalog"]["rows"] == sample_catalog.products.height


def test_summary_is_plain_json(sample_catalog, accepted_tasks):
    summary = run_suites(sample_catalog.products, accepted_tasks)
    assert json.loads(json.dumps(summary, allow_nan=False)) == summary


@pytest.mark.parametrize("which", ["rich", "sample"])
def test_error_expectations_pass_on_real_accepted_tasks(which, rich_catalog, accepted_tasks, sample_catalog,
                                                        sample_tasks):
    products, tasks = (rich_catalog.products, accepted_tasks) if which == "rich" else \
        (sample_catalog.products, sample_tasks)
    summary = run_suites(products, tasks)
    assert summary["blocking"] == []
    assert summary["suites"]["catalog"]["success"]
    assert summary["suites"]["tasks"]["rows"] == len(tasks)
    assert all(e["success"] for e in summary["suites"]["tasks"]["expectations"] if e["severity"] == ERROR)


def test_query_leaves_choice_reports_how_often_the_query_pins_the_target(rich_catalog, accepted_tasks):
    pinned = sum(t["difficulty"]["query_answer_set_size"] == 1 for t in accepted_tasks)
    warn = _by_name(run_suites(rich_catalog.products, accepted_tasks), "tasks")["query_leaves_choice"]
    assert warn["severity"] == WARN
    assert warn["unexpected_count"] == pinned
    assert warn["unexpected_percent"] == pytest.approx(100 * pinned / len(accepted_tasks))


# ---- ERROR blocks, WARN informs ----------------------------------------------------------------------

def test_a_duplicated_real_product_fails_the_uniqueness_expectation(sample_catalog):
    row = sample_catalog.products.head(1)
    asin = row.get_column("parent_asin")[0]
    summary = run_suites(pl.concat([sample_catalog.products, row]), [])
    assert [(b["suite"], b["name"]) for b in summary["blocking"]] == [("catalog", "parent_asin_unique")]
    assert summary["blocking"][0]["partial_unexpected_keys"] == [asin, asin]
    with pytest.raises(ExpectationsFailed, match=f"catalog.parent_asin_unique .*{asin}"):
        raise_if_blocking(summary)


def test_a_duplicated_task_id_fails_task_id_unique(sample_catalog, accepted_tasks):
    summary = run_suites(sample_catalog.products, accepted_tasks + accepted_tasks[:1])
    assert [b["name"] for b in summary["blocking"]] == ["task_id_unique"]
    assert summary["blocking"][0]["partial_unexpected_keys"] == [accepted_tasks[0]["id"]] * 2


def test_a_failed_warn_does_not_block(sample_catalog):
    # Real rows only: every sample product without main_category plus as many with one (50 % missing).
    products = sample_catalog.products
    missing = products.filter(pl.col("main_category").is_null())
    subset = pl.concat([missing, products.filter(pl.col("main_category").is_not_null()).head(missing.height)])
    summary = run_suites(subset, [])
    warn = _by_name(summary, "catalog")["main_category_mostly_present"]
    assert not warn["success"] and warn["unexpected_count"] == missing.height
    assert summary["blocking"] == []
    raise_if_blocking(summary)  # does not raise


def test_build_refuses_to_publish_a_snapshot_with_a_duplicated_product(duplicated_snapshot, tmp_path, artifacts):
    snapshot, asin = duplicated_snapshot
    config = BuildConfig(min_hidden_division=1, catalog=str(snapshot), intents=INTENTS, candidates_per_intent=10)
    with pytest.raises(ExpectationsFailed, match=f"parent_asin_unique.*{asin}.*nothing was written"):
        build_split(config, "dup", root=tmp_path / "splits", artifacts=artifacts)
    assert not (tmp_path / "splits").exists() or not any((tmp_path / "splits").rglob("*"))


def test_assemble_refuses_before_writing_anything(duplicated_snapshot, tmp_path, artifacts):
    snapshot, _ = duplicated_snapshot
    config = BuildConfig(min_hidden_division=1, catalog=str(snapshot), intents=INTENTS, candidates_per_intent=10)
    ctx, products, sampling, catalog_manifest = plan_build(config, artifacts)
    results = [r for intent, batch in batches_of(products, sampling, config.batch_size, ctx.reviews)
               for r in run_batch(batch, intent, ctx)]
    root = tmp_path / "splits"
    root.mkdir()
    with pytest.raises(ExpectationsFailed):
        assemble(config, ctx, products, sampling, catalog_manifest, results, "dup", "v1", root)
    assert list(root.rglob("*")) == []


# ---- what a published split holds ---------------------------------------------------------------------

def test_manifest_of_a_real_build_holds_the_expectations_summary(sample_build):
    summary = sample_build.manifest["expectations"]
    assert summary["blocking"] == []
    assert set(summary["suites"]) == {"catalog", "tasks"}
    assert summary["suites"]["tasks"]["rows"] == sample_build.manifest["counts"]["tasks"]
    assert {e["name"] for e in summary["suites"]["catalog"]["expectations"]} == \
        {e.name for e in catalog_expectations()}
    on_disk = json.loads((sample_build.path / "manifest.json").read_text(encoding="utf-8"))
    assert on_disk["expectations"] == summary


def test_report_lists_every_expectation_with_its_severity(sample_build):
    report = (sample_build.path / "report.md").read_text(encoding="utf-8")
    assert "## Data expectations" in report
    for suite, s in sample_build.manifest["expectations"]["suites"].items():
        for e in s["expectations"]:
            assert f"| {suite} | `{e['name']}` ({e['type']}) | {e['severity']} |" in report


@pytest.mark.prefect
def test_cli_build_prints_one_error_line_and_writes_nothing(duplicated_snapshot, tmp_path):
    snapshot, asin = duplicated_snapshot
    env = {"PREFECT_HOME": str(tmp_path / "prefect-home"), "ECOMBENCH_ARTIFACTS": str(tmp_path / "art"),
           "PYTHONPATH": str(REPO)}
    env = dict(os.environ, **env)
    env.pop("PREFECT_API_URL", None)
    env.update(session_prefect_url())  # the run's Prefect server (tests/conftest.py)
    out = tmp_path / "splits"
    proc = subprocess.run([sys.executable, "-m", "ecombench.flows.cli", "build", "--catalog", str(snapshot), "--intent",
                           "product_search", "--candidates", "10", "--out", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "parent_asin_unique" in errors[0] and asin in errors[0], proc.stderr[-2000:]
    assert not out.exists() or not any(out.rglob("*"))
