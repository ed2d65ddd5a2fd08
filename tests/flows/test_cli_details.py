"""CLI details a new user meets (issue #18): choices in --help, --version, paths wherever a split is named,
the catalog from the manifest, a directory given as an input file, a closed pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ecombench.flows.cli import app
from ecombench.pipeline.build import build_split
from ecombench.pipeline.config import BuildConfig

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def version(sample_catalog, tmp_path_factory, artifacts) -> Path:
    """One real version of split "sample" over the bundled sample."""
    root = tmp_path_factory.mktemp("splits")
    build_split(BuildConfig(min_hidden_division=1,
                            catalog=str(sample_catalog.path), candidates_per_intent=10), "sample", root=root,
                artifacts=artifacts)
    return root / "sample" / "v1"


def test_version_prints_the_installed_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("ecombench ")


@pytest.mark.parametrize(("command", "choices"), [
    ("build", ["<template-v2|template-v1|template|llm>", "<threads|dask>"]),
    ("run-agent", ["<oracle|null|llm|diligent>", "<scripted|llm>"]),
    ("export", ["<usersimcrs|dialoguekit>"]),
])
def test_help_lists_the_choices_of_each_option(command, choices):
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for choice in choices:
        assert choice in result.output


def test_a_wrong_choice_names_the_option():
    result = runner.invoke(app, ["build", "--verbaliser", "gpt"])
    assert result.exit_code == 2 and "--verbaliser" in result.output


def test_diff_takes_version_directories(version):
    result = runner.invoke(app, ["diff", str(version), str(version), "--json"])
    assert result.exit_code == 0, result.output
    assert '"added": []' in result.output or '"added"' in result.output


def test_validate_takes_the_catalog_from_the_manifest(version, tmp_path):
    result = runner.invoke(app, ["validate", str(version), "--out", str(tmp_path / "f.jsonl")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "f.jsonl").is_file()


def test_a_directory_given_as_an_input_file_says_so(tmp_path):
    sample = REPO / "ecombench" / "data" / "sample"
    result = runner.invoke(app, ["ingest", "--meta", str(sample), "--out", str(tmp_path / "c")])
    assert result.exit_code == 1
    assert "is a directory" in result.output and "--meta" in result.output


def test_a_closed_pipe_exits_quietly(version):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = f"{sys.executable} -m ecombench.flows.cli inspect {version} --stage 2 | head -1; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and done.stdout.count("\n") == 1
