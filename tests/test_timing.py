"""`--verbose`: where a command's time went (ecombench/timing.py)."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from ecombench import timing
from ecombench.flows.cli import app
from ecombench.flows.ingest import SAMPLE_DIR


def test_breakdown_lists_each_phase_then_the_total_and_the_load(monkeypatch):
    monkeypatch.setattr(timing, "PHASES", [])
    with timing.phase("imports"):
        pass
    timing.record("flow", 1.5)
    text = timing.breakdown(total=2.0)
    lines = text.splitlines()
    assert lines[0] == "timing:" and lines[1].split()[0] == "imports" and lines[2].split()[:2] == ["flow", "1.50"]
    assert lines[-1].split()[:4] == ["total", "(process", "age)", "2.00"] and "load average" in lines[-1]


def test_process_age_includes_the_time_before_this_module_was_imported():
    assert timing.process_age() > 0


@pytest.mark.prefect
def test_ingest_verbose_prints_the_breakdown(tmp_path, monkeypatch):
    monkeypatch.setattr(timing, "PHASES", [])
    # a temporary server of its own: neither the run's server (tests/conftest.py) nor the one an earlier in-process
    # command of this worker found
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr(sys.modules["ecombench.flows.cli.app"], "_SERVER", None)
    result = CliRunner().invoke(app, ["ingest", "--meta", str(SAMPLE_DIR / "meta.jsonl.gz"),
                                      "--out", str(tmp_path / "one"), "--verbose"])
    assert result.exit_code == 0, result.output
    phases = [line.split("  ")[1].strip() for line in result.output.split("timing:\n")[1].splitlines()]
    assert phases[0] == "start-up (python, CLI imports)" and "ingest flow" in phases
    assert any(p.startswith("prefect server: wait (ephemeral)") for p in phases)
