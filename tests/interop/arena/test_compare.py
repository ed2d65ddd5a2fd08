"""`ecombench compare` over graded real runs: pairwise battles, Bradley–Terry and Elo with bootstrap intervals."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from typer.testing import CliRunner

from ecombench.flows.cli import app
from ecombench.interop.arena.battles import LOSS, TIE, WIN, outcome


def _graded(status, satisfied, not_satisfied):
    rows = [{"status": "satisfied", "info_source": "query"}] * satisfied
    rows += [{"status": "not_satisfied", "info_source": "query"}] * not_satisfied
    return {"status": status, "rubric_results": rows}


def test_correct_beats_incorrect_then_satisfaction_decides_else_tie():
    assert outcome(_graded("correct", 3, 0), _graded("incorrect", 2, 1)) == WIN
    assert outcome(_graded("incorrect", 1, 2), _graded("incorrect", 2, 1)) == LOSS
    assert outcome(_graded("incorrect", 0, 3), _graded("incorrect", 0, 3)) == TIE
    assert outcome(_graded("correct", 3, 0), _graded("correct", 3, 0)) == TIE


class Page(HTMLParser):
    """Start/end tags (balanced), every <script> or external reference, and each <svg> block's text."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.stack, self.scripts, self.external, self.svgs = [], 0, [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "br", "img", "link"):
            self.stack.append(tag)
        self.scripts += tag == "script"
        self.external += [v for k, v in attrs if k in ("src", "href") and v and "//" in v]

    def handle_startendtag(self, tag, attrs):  # <meta/>, <line/>: opens nothing
        self.scripts += tag == "script"
        self.external += [v for k, v in attrs if k in ("src", "href") and v and "//" in v]

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}>"
        self.stack.pop()


def _run_and_grade(runner, split, folder, name, *args):
    out = folder / f"{name}.trajectories.jsonl"
    assert runner.invoke(app, ["run-agent", str(split), *args, "--out", str(out)]).exit_code == 0
    assert runner.invoke(app, ["grade", str(out), "--split", str(split)]).exit_code == 0
    return folder / f"{name}.metrics.json"


@pytest.fixture(scope="module")
def graded_runs(full_build, tmp_path_factory):
    """The oracle, the null agent and an oracle held to 12 tool calls, each run once over the full build and graded
    (their metrics.json paths, by name); a test that changes a run copies it first (`_copy`)."""
    runner, folder = CliRunner(), tmp_path_factory.mktemp("runs")
    return {name: _run_and_grade(runner, full_build.path, folder, name, *args)
            for name, args in (("oracle", ("--agent", "oracle")), ("null", ("--agent", "null")),
                               ("oracle-12calls", ("--agent", "oracle", "--max-tool-calls", "12")))}


def _copy(metrics, folder, name=None):
    """A run's metrics.json and graded.jsonl copied into `folder` (as `name`, else under their own name)."""
    stem = metrics.name.removesuffix(".metrics.json")
    for suffix in ("metrics.json", "graded.jsonl"):
        shutil.copyfile(metrics.with_name(f"{stem}.{suffix}"), folder / f"{name or stem}.{suffix}")
    return folder / f"{name or stem}.metrics.json"


def test_compare_ranks_oracle_above_a_budgeted_oracle_above_null(full_build, graded_runs, tmp_path):
    runner = CliRunner()
    runs = [graded_runs["oracle"], graded_runs["null"], graded_runs["oracle-12calls"]]
    out = tmp_path / "cmp"
    res = runner.invoke(app, ["compare", *map(str, runs), "--out", str(out), "--bootstrap", "300"])
    assert res.exit_code == 0, res.output
    c = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    r = c["ratings"]["runs"]
    assert c["tasks"] == len(full_build.tasks)
    assert r["oracle"]["rank"] == 1 and r["null"]["rank"] == 3
    assert r["oracle"]["accuracy"] == 1.0 and r["null"]["accuracy"] < 0.2
    # Far-apart accuracies give intervals that do not overlap, both in accuracy and in rating.
    pair = c["ratings"]["pairs"]["oracle vs null"]
    assert not pair["bt_intervals_overlap"] and not pair["accuracy_intervals_overlap"] and pair["p_a_better"] == 1.0
    assert r["null"]["bt_ci"][1] < r["oracle-12calls"]["bt_ci"][0]
    for v in r.values():
        assert v["bt_ci"][0] <= v["bt"] <= v["bt_ci"][1] and v["elo_ci"][0] <= v["elo"] <= v["elo_ci"][1]
    wtl = c["win_tie_loss"]["oracle vs null"]
    assert sum(wtl["overall"].values()) == len(full_build.tasks) and wtl["overall"]["loss"] == 0
    assert sum(sum(v.values()) for v in wtl["by_intent"].values()) == len(full_build.tasks)
    assert set(wtl["by_source"]) <= {"query", "persona", "clarification"}
    # The page parses: balanced tags, no scripts or external resources, each plot is well-formed SVG.
    text = (out / "compare.html").read_text(encoding="utf-8")
    page = Page(text)
    assert page.stack == [] and page.scripts == 0 and page.external == []
    svgs = [text[i:text.index("</svg>", i) + 6] for i in range(len(text)) if text.startswith("<svg", i)]
    assert len(svgs) == 2 and all(ET.fromstring(s).tag.endswith("svg") for s in svgs)
    assert "| oracle | null |" in (out / "compare.md").read_text(encoding="utf-8")
    assert pair["better"] == "oracle" and "oracle (P 1.000)" in (out / "compare.md").read_text(encoding="utf-8")
    # Seeds come from sha256 of named parts: a rerun gives the same intervals.
    again = tmp_path / "cmp2"
    assert runner.invoke(app, ["compare", *map(str, runs), "--out", str(again), "--bootstrap", "300"]).exit_code == 0
    assert (again / "compare.json").read_text(encoding="utf-8").replace(str(again), "") == \
        (out / "compare.json").read_text(encoding="utf-8").replace(str(out), "")


def test_compare_refuses_runs_of_different_task_sets(graded_runs, tmp_path):
    runner = CliRunner()
    a = graded_runs["oracle"]
    b = _copy(graded_runs["null"], tmp_path)
    graded = b.with_name("null.graded.jsonl")
    graded.write_text("".join(graded.read_text(encoding="utf-8").splitlines(keepends=True)[1:]), encoding="utf-8")
    res = runner.invoke(app, ["compare", str(a), str(b)])
    assert res.exit_code == 1 and "different tasks" in res.output
    assert runner.invoke(app, ["compare", str(a)]).exit_code == 1


def test_two_identical_runs_are_even_not_one_better(graded_runs, tmp_path):
    runner = CliRunner()
    first = _copy(graded_runs["oracle"], tmp_path)
    _copy(graded_runs["oracle"], tmp_path, "again")
    out = tmp_path / "cmp"
    res = runner.invoke(app, ["compare", str(first), str(tmp_path / "again.metrics.json"), "--out", str(out),
                              "--bootstrap", "100"])
    assert res.exit_code == 0, res.output
    pair = json.loads((out / "compare.json").read_text(encoding="utf-8"))["ratings"]["pairs"]["oracle vs again"]
    assert (pair["better"], pair["p_better"], pair["p_a_better"]) == (None, 0.5, 0.5)
    assert "neither (P 0.500)" in (out / "compare.md").read_text(encoding="utf-8")
