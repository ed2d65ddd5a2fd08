"""`ecombench stats`: a snapshot's statistics written again, so a partitioned build plans in slices (issue #17)."""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from ecombench.flows.cli import app
from ecombench.validation.catalog_stats import load_catalog_stats

runner = CliRunner()


def test_stats_writes_the_statistics_a_build_then_reads(sample_catalog, tmp_path):
    copy = tmp_path / "sample"
    shutil.copytree(sample_catalog.path, copy)
    shutil.rmtree(copy / "stats", ignore_errors=True)
    fingerprint = json.loads((copy / "manifest.json").read_text())["fingerprint"]
    assert load_catalog_stats(copy, fingerprint, sample_catalog.table) is None
    result = runner.invoke(app, ["stats", "--catalog", str(copy)])
    assert result.exit_code == 0, result.output
    assert f"{copy / 'stats'}: written (normalisation" in result.output
    stats = load_catalog_stats(copy, fingerprint, sample_catalog.table)
    assert stats is not None and stats.catalog_suite is not None and stats.catalog_suite["success"]


def test_stats_on_a_folder_that_is_no_snapshot_is_one_line(tmp_path):
    result = runner.invoke(app, ["stats", "--catalog", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"error: {tmp_path / 'manifest.json'} not found: is {tmp_path} a catalog snapshot? "
        "(create one with `ecombench ingest`)"]
