"""`ecombench run-agent` and `ecombench grade` on a real published split."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ecombench.flows.cli import app


def test_run_agent_then_grade_writes_trajectories_metrics_and_a_summary(full_build, tmp_path):
    runner = CliRunner()
    out = tmp_path / "oracle.trajectories.jsonl"
    run = runner.invoke(app, ["run-agent", str(full_build.path), "--agent", "oracle", "--limit", "6",
                              "--out", str(out)])
    assert run.exit_code == 0, run.output
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["task_id"] for r in records] == sorted(t["id"] for t in full_build.tasks)[:6]
    graded = runner.invoke(app, ["grade", str(out), "--split", str(full_build.path)])
    assert graded.exit_code == 0, graded.output
    metrics = json.loads((tmp_path / "oracle.metrics.json").read_text(encoding="utf-8"))
    # Six episodes ran; every other task of the split counts as missing (no recommendation).
    assert metrics["overall"]["tasks"] == len(full_build.tasks)
    assert metrics["overall"]["correct"] == 6
    assert metrics["episodes"]["missing_trajectories"] == len(full_build.tasks) - 6
    assert (tmp_path / "oracle.summary.md").read_text(encoding="utf-8").startswith("# oracle on ")
    assert "accuracy" in graded.output


def test_cli_errors_are_one_line(full_build, tmp_path):
    runner = CliRunner()
    bad = runner.invoke(app, ["run-agent", str(full_build.path), "--agent", "random"])
    assert bad.exit_code == 2 and "--agent" in bad.output and "'random'" in bad.output  # a usage error, by click
    broken = tmp_path / "t.jsonl"
    broken.write_text('{"task_id": "x"}\nnot json\n', encoding="utf-8")
    res = runner.invoke(app, ["grade", str(broken), "--split", str(full_build.path)])
    assert res.exit_code == 1 and f"{broken}:2: not JSON" in res.output
    llm = runner.invoke(app, ["run-agent", str(full_build.path), "--agent", "llm"], env={"OPENAI_BASE_URL": "",
                                                                                      "ECOMBENCH_LLM_MODEL": ""})
    assert llm.exit_code == 1 and "--base-url" in llm.output
