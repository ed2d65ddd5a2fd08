"""`ecombench build` end to end through the CLI and Prefect, on the bundled real sample.

This is the README's main command: it ingests the bundled sample, runs the seven stages as a
Prefect flow (temporary local server), publishes a split version and prints where it is with
counts by reason. Run in subprocesses with a private PREFECT_HOME and artifacts folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ecombench.pipeline.build import build_split
from ecombench.pipeline.config import BuildConfig
from tests.conftest import session_prefect_url

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "ecombench.flows.cli"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, PREFECT_HOME=str(tmp_path / "prefect-home"), ECOMBENCH_ARTIFACTS=str(tmp_path / "art"),
               PYTHONPATH=str(REPO))
    env.pop("PREFECT_API_URL", None)
    env.update(session_prefect_url())  # the run's Prefect server (tests/conftest.py)
    return env


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + args, cwd=REPO, env=_env(tmp_path), capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    # --min-hidden-division 1: the bundled sample is too small for the k-fold rule (test_hidden_division.py);
    # --candidates 10 keeps three builds of every intent quick (the full main job: test_wheel.py, RESULTS.md)
    first = _run(["build", "--min-hidden-division", "1", "--candidates", "10"], tmp)
    second = _run(["build", "--min-hidden-division", "1", "--candidates", "10", "--batch-size", "17"], tmp)
    return tmp, first, second


@pytest.mark.prefect
def test_main_command_ingests_the_sample_and_publishes_a_split(two_builds):
    tmp, first, _ = two_builds
    assert first.returncode == 0, first.stderr[-3000:]
    version = tmp / "art" / "splits" / "sample" / "v1"
    assert f"split version: {version}" in first.stdout
    manifest = json.loads((version / "manifest.json").read_text())
    assert f"{manifest['counts']['tasks']} tasks accepted, {manifest['counts']['rejections']} candidates rejected" \
        in first.stdout
    for reason, n in manifest["counts"]["rejection_reasons"].items():
        assert f"{reason} {n}" in first.stdout
    assert manifest["counts"]["tasks"] > 0
    assert sorted(p.name for p in version.iterdir()) == ["README.md", "manifest.json", "rejections.jsonl",
                                                         "rejections.parquet", "report.html", "report.md",
                                                         "tasks.jsonl"]


@pytest.mark.prefect
def test_rebuild_gives_a_new_version_with_identical_tasks(two_builds):
    tmp, first, second = two_builds
    assert second.returncode == 0, second.stderr[-3000:]
    v1, v2 = (tmp / "art" / "splits" / "sample" / v for v in ("v1", "v2"))
    assert (v1 / "tasks.jsonl").read_bytes() == (v2 / "tasks.jsonl").read_bytes()
    assert (v1 / "rejections.jsonl").read_bytes() == (v2 / "rejections.jsonl").read_bytes()


@pytest.mark.prefect
def test_prefect_flow_and_plain_build_agree(two_builds):
    tmp, first, _ = two_builds
    catalog = tmp / "art" / "catalogs" / "sample"
    out = build_split(BuildConfig(min_hidden_division=1, candidates_per_intent=10,
                                  catalog=str(catalog)), "plain", root=tmp / "plain", artifacts=tmp / "art")
    v1 = tmp / "art" / "splits" / "sample" / "v1"
    assert (out.path / "tasks.jsonl").read_bytes() == (v1 / "tasks.jsonl").read_bytes()


@pytest.mark.prefect
def test_existing_version_is_refused_and_left_untouched(two_builds):
    tmp, _, _ = two_builds
    version = tmp / "art" / "splits" / "sample" / "v1"
    before = {p.name: p.read_bytes() for p in version.iterdir()}
    done = _run(["build", "--version", "v1"], tmp)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("error: split version")
    assert {p.name: p.read_bytes() for p in version.iterdir()} == before


def test_missing_catalog_is_one_clear_line(tmp_path):
    done = _run(["build", "--catalog", str(tmp_path / "nowhere")], tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == (f"error: {tmp_path / 'nowhere' / 'manifest.json'} not found: is "
                                   f"{tmp_path / 'nowhere'} a catalog snapshot? (create one with `ecombench ingest`)")


def test_bad_setting_names_the_setting(tmp_path):
    cfg = tmp_path / "build.json"
    cfg.write_text(json.dumps({"catalog": str(tmp_path), "max_answer_set": 0}))
    done = _run(["build", "--config", str(cfg)], tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: build setting max_answer_set:")
