"""`ecombench inspect` and `ecombench diff` read published split versions (in-process, no Prefect)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ecombench.flows.cli import app
from ecombench.pipeline.build import build_split
from ecombench.pipeline.config import BuildConfig

runner = CliRunner()


@pytest.fixture(scope="module")
def versions(sample_catalog, tmp_path_factory, artifacts) -> Path:
    """Two real versions of split "sample" over the bundled sample: v1 with seed 0, v2 with seed 1."""
    root = tmp_path_factory.mktemp("splits")
    for seed in (0, 1):
        # issue #12's quality rules off: from 20 candidates per intent they leave too few tasks to diff
        build_split(BuildConfig(catalog=str(sample_catalog.path), candidates_per_intent=20, seed=seed,
                                min_hidden_answer_set=1, min_hidden_division=1, min_value_support=1), "sample",
                    root=root, artifacts=artifacts)
    return root


def _lines(path: Path) -> list[dict]:
    """Records of a JSONL file; a rejection's evidence (JSON text in the file) decoded, as inspect prints it."""
    from ecombench.schemas.evidence import unflatten_rejection

    return [unflatten_rejection(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]


def _error_line(result) -> str:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len([line for line in lines if line.startswith("error: ")]) == 1
    return lines[-1]


def test_inspect_task_prints_query_persona_slots_rubrics_answer_set_and_difficulty(versions):
    v1 = versions / "sample" / "v1"
    task = next(t for t in _lines(v1 / "tasks.jsonl") if t["clarification_script"]["clarification_slots"]
                and t["user_persona"]["product_requirements"])
    result = runner.invoke(app, ["inspect", str(v1), "--task", task["id"]])
    assert result.exit_code == 0, result.output
    out = result.output
    assert task["user_query"] in out
    key, value = next(iter(task["user_persona"]["product_requirements"].items()))
    assert f"{key}: {value if isinstance(value, str) else json.dumps(value)}" in out
    assert task["user_persona"]["demographics"]["age_range"] in out
    slot = task["clarification_script"]["clarification_slots"][0]
    assert ", ".join(slot["trigger_keywords"]) in out and slot["user_response"] in out
    for r in task["rubrics"]:
        assert f"{r['id']} [{r['info_source']}" in out and r["field"] in out
    assert all(asin in out for asin in task["answer_set"])
    assert f"answer_set_size {task['difficulty']['answer_set_size']}" in out


def test_inspect_task_as_json_is_the_record(versions):
    v1 = versions / "sample" / "v1"
    task = _lines(v1 / "tasks.jsonl")[0]
    result = runner.invoke(app, ["inspect", str(v1), "--task", task["id"], "--json"])
    assert json.loads(result.output) == task


def test_inspect_reason_lists_its_rejections_with_message_and_evidence(versions):
    v1 = versions / "sample" / "v1"
    rejected = [r for r in _lines(v1 / "rejections.jsonl") if r["reason"] == "too_few_features"]
    result = runner.invoke(app, ["inspect", str(v1), "--reason", "too_few_features"])
    assert result.exit_code == 0, result.output
    assert f"{len(rejected)} rejected candidate(s)" in result.output
    for r in rejected:
        assert r["candidate_id"] in result.output and r["message"] in result.output
    assert "features: [" in result.output  # the evidence


def test_inspect_stage_lists_only_that_stage(versions):
    v1 = versions / "sample" / "v1"
    rejections = _lines(v1 / "rejections.jsonl")
    result = runner.invoke(app, ["inspect", str(v1), "--stage", "2", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [r for r in rejections if r["stage"] == 2]
    shown = runner.invoke(app, ["inspect", str(v1), "--stage", "5"]).output
    assert all(r["candidate_id"] in shown for r in rejections if r["stage"] == 5)
    assert not any(r["candidate_id"] in shown for r in rejections if r["stage"] != 5)


def test_inspect_without_filter_counts_per_intent_and_reason(versions):
    v1 = versions / "sample" / "v1"
    manifest = json.loads((v1 / "manifest.json").read_text(encoding="utf-8"))
    result = runner.invoke(app, ["inspect", str(v1), "--json"])
    s = json.loads(result.output)
    assert s["per_intent"] == manifest["counts"]["per_intent"]
    assert {k: v["count"] for k, v in s["rejection_reasons"].items()} == manifest["counts"]["rejection_reasons"]
    text = runner.invoke(app, ["inspect", str(v1)]).output
    assert f"{manifest['counts']['tasks']} tasks accepted" in text and "too_few_features" in text


def test_inspect_unknown_task_or_reason_is_one_error_line(versions):
    v1 = versions / "sample" / "v1"
    assert "no task 'nope'" in _error_line(runner.invoke(app, ["inspect", str(v1), "--task", "nope"]))
    assert "unknown reason code 'nope'" in _error_line(runner.invoke(app, ["inspect", str(v1), "--reason", "nope"]))
    assert "not found" in _error_line(runner.invoke(app, ["inspect", str(versions / "sample" / "v9")]))


def test_diff_lists_count_changes_and_added_removed_changed_tasks(versions):
    root = versions
    old, new = (_lines(root / "sample" / v / "tasks.jsonl") for v in ("v1", "v2"))
    result = runner.invoke(app, ["diff", "sample@v1", "sample@v2", "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.output)
    old_ids, new_ids = {t["id"] for t in old}, {t["id"] for t in new}
    changed = {(c["old_id"], c["new_id"]) for c in d["changed"]}
    assert {t["id"] for t in d["added"]} | {n for _, n in changed} == new_ids - old_ids
    assert {t["id"] for t in d["removed"]} | {o for o, _ in changed} == old_ids - new_ids
    assert d["added"] and d["tasks"] == {"old": len(old), "new": len(new)}
    for c in d["changed"]:  # same target and intent, other rubrics
        assert c["old_rubric_lock"] != c["new_rubric_lock"]
    m1, m2 = (json.loads((root / "sample" / v / "manifest.json").read_text()) for v in ("v1", "v2"))
    for intent, counts in d["per_intent"].items():
        assert counts["accepted"] == {"old": m1["counts"]["per_intent"][intent]["accepted"],
                                      "new": m2["counts"]["per_intent"][intent]["accepted"]}
    text = runner.invoke(app, ["diff", "sample@v1", "sample@v2", "--root", str(root)]).output
    assert f"tasks {len(old)} -> {len(new)}" in text
    assert f"added ({len(d['added'])})" in text and d["added"][0]["id"] in text


def test_diff_of_a_missing_version_is_one_error_line(versions):
    line = _error_line(runner.invoke(app, ["diff", "sample@v1", "sample@v7", "--root", str(versions)]))
    assert "v7 not found" in line


def test_a_split_name_alone_or_at_latest_means_its_newest_version(versions):
    from ecombench.splits.inspect import resolve_version

    assert resolve_version("sample", versions) == versions / "sample" / "v2"
    assert resolve_version("sample@latest", versions) == versions / "sample" / "v2"
    assert resolve_version("sample@v1", versions) == versions / "sample" / "v1"
    result = runner.invoke(app, ["diff", "sample@v1", "sample", "--root", str(versions), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["tasks"]["new"] == len(_lines(versions / "sample" / "v2" / "tasks.jsonl"))
    assert "has no versions" in _error_line(runner.invoke(app, ["diff", "sample", "other", "--root", str(versions)]))


def test_inspect_reads_a_version_whose_tasks_predate_a_difficulty_field(versions, tmp_path):
    import shutil

    old = tmp_path / "v1"
    shutil.copytree(versions / "sample" / "v1", old)
    tasks = _lines(old / "tasks.jsonl")
    for t in tasks:
        del t["difficulty"]["query_answer_set_size"]
    (old / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    result = runner.invoke(app, ["inspect", str(old), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["tasks"] == len(tasks)
