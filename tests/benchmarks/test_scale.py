"""The scale benchmark script runs end to end on a tiny generated catalog and keeps other RESULTS.md sections."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "amazon-reviews-2023"


def test_scale_script_measures_every_reader_and_writes_its_section(tmp_path):
    if not SHARED.is_dir():
        pytest.skip(f"shared real data not found at {SHARED}")
    results = tmp_path / "RESULTS.md"
    results.write_text("# Measured results\n\n## Earlier section\n\nkept\n")
    cmd = [sys.executable, str(REPO / "benchmarks" / "scale.py"), "--sizes", "1500", "--skip", "build,answers,cli",
           "--data", str(tmp_path / "data"), "--work", str(tmp_path / "work"), "--results", str(results)]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    row = json.loads((tmp_path / "work" / "results-1500.json").read_text())
    for step in ("stage", "naive", "parse", "inflate", "duckdb"):
        assert row["steps"][step]["returncode"] == 0 and row["steps"][step]["products_per_s"] > 0
    assert row["steps"]["stage"]["result"]["products"] == 1500
    assert row["steps"]["naive"]["result"]["products"] == 1500
    assert row["steps"]["duckdb"]["result"]["products"] == 1500  # every line: the generator writes no copies
    gen = json.loads((tmp_path / "data" / "1500" / "generated.json").read_text())
    assert row["steps"]["inflate"]["result"]["bytes"] == sum(f["uncompressed_bytes"] for f in gen["files"].values())
    text = results.read_text()
    assert "## Earlier section\n\nkept" in text and "## Scale: ingest, build and answer sets" in text
    assert "- 1500: 8x naive means at most" in text and "DuckDB read_json only" in text
    # a rerun replaces the section instead of adding a second one
    subprocess.run([*cmd, "--reuse-results"], cwd=REPO, capture_output=True, text=True, timeout=600, check=True)
    assert results.read_text().count("## Scale: ingest, build and answer sets") == 1
