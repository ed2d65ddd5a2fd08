"""Without the crs extra, `export` and `compare` fail with one line saying what to install, not a traceback."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from ecombench.flows.cli import app


@pytest.fixture
def no_crs_extra(monkeypatch):
    """dialoguekit and choix as if not installed (a None entry in sys.modules makes their import fail)."""
    for name in ("dialoguekit", "dialoguekit.core", "dialoguekit.core.dialogue", "choix"):
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize("args", [["export", "some-split", "--format", "usersimcrs"],
                                  ["export", "run.trajectories.jsonl", "--format", "dialoguekit", "--split", "s"],
                                  ["compare", "--votes", "votes.csv"],
                                  ["compare", "a.metrics.json", "b.metrics.json"]])
def test_crs_commands_name_the_missing_extra_in_one_line(no_crs_extra, args):
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1 and (res.exception is None or isinstance(res.exception, SystemExit))
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ecombench ") and "install ecombench[crs]" in lines[0]
