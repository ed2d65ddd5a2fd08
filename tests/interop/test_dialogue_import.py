"""`ecombench grade` on dialogue files: our own DialogueKit export, another system's dialogues, CRSArena-Dial's form.

The CRSArena-Dial dialogues below are written here in that corpus's format (iai-group/crsarena-dial README:
`conversation ID`, agent and user as {"id", "type"}, utterances with participant, utterance and
`utterance ID`, no dialogue acts); the corpus itself has no licence and is not copied.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ecombench.flows.cli import app
from ecombench.interop.dialogue_import import read_dialogue_file
from ecombench.sandbox.trajectory import read_trajectories


@pytest.fixture(scope="module")
def oracle(full_build, tmp_path_factory):
    """An oracle run of 25 tasks graded, then exported as dialogues: (folder, trajectories, dialogues)."""
    tmp = tmp_path_factory.mktemp("oracle")
    runner = CliRunner()
    run = tmp / "oracle.trajectories.jsonl"
    assert runner.invoke(app, ["run-agent", str(full_build.path), "--limit", "25", "--out", str(run)]).exit_code == 0
    assert runner.invoke(app, ["grade", str(run), "--split", str(full_build.path)]).exit_code == 0
    assert runner.invoke(app, ["export", str(run), "--format", "dialoguekit", "--split",
                               str(full_build.path)]).exit_code == 0
    return tmp, run, tmp / "oracle.dialogues.json"


def _grade(path, split, *args):
    res = CliRunner().invoke(app, ["grade", str(path), "--split", str(split), *args])
    assert res.exit_code == 0, res.output
    stem = path.name.removesuffix(".json")
    metrics = json.loads(path.with_name(f"{stem}.metrics.json").read_text(encoding="utf-8"))
    graded = [json.loads(line) for line in path.with_name(f"{stem}.graded.jsonl").open(encoding="utf-8")]
    return metrics, graded


def test_grade_scores_our_exported_dialogues_identically_to_the_run(full_build, oracle):
    folder, run, dialogues = oracle
    before = json.loads((folder / "oracle.metrics.json").read_text(encoding="utf-8"))
    after, _ = _grade(dialogues, full_build.path)
    assert (folder / "oracle.dialogues.graded.jsonl").read_bytes() == (folder / "oracle.graded.jsonl").read_bytes()
    assert {k: v for k, v in after.items() if k != "trajectories"} == {k: v for k, v in before.items()
                                                                      if k != "trajectories"}
    assert before["overall"]["correct"] == 25
    # The records come back whole, steps included.
    assert read_dialogue_file(dialogues) == read_trajectories(run)


def test_another_systems_dialogues_are_graded_from_their_recommendation_acts(full_build, oracle, tmp_path):
    folder, _, dialogues = oracle
    outside = []
    for d in json.loads(dialogues.read_text(encoding="utf-8")):
        # What another DialogueKit system writes (Dialogue.to_dict): plain ids, no record, no tool calls.
        outside.append({"conversation ID": d["conversation_id"], "agent": "other-crs", "user": "User",
                        "metadata": {"task_id": d["metadata"]["task_id"]},
                        "conversation": [{"participant": u["participant"], "utterance": u["utterance"],
                                          "dialogue_acts": u["dialogue_acts"]} for u in d["conversation"]]})
    path = tmp_path / "other.json"
    path.write_text(json.dumps(outside), encoding="utf-8")
    metrics, graded = _grade(path, full_build.path)
    ours = [json.loads(line) for line in (folder / "oracle.graded.jsonl").open(encoding="utf-8")]
    assert [(g["predicted_product_id"], g["status"]) for g in graded] == [(g["predicted_product_id"], g["status"])
                                                                          for g in ours]
    assert metrics["agents"] == ["other-crs"] and metrics["overall"]["correct"] == 25
    assert metrics["imported"] == {"dialogues": 25, "recommendation_from": {"act": 25}}
    assert metrics["episodes"]["ask_user_calls"] == json.loads(
        (folder / "oracle.metrics.json").read_text(encoding="utf-8"))["episodes"]["ask_user_calls"]


def _arena(crs, task_id, turns):
    """One dialogue in CRSArena-Dial's form, with the task named in its metadata."""
    user = "0b6f7c1e-5d1a-4a57-9a56-1f3c2e9d8b7a"
    return {"conversation ID": f"{crs}_{user}", "agent": {"id": crs, "type": "AGENT"},
            "user": {"id": user, "type": "USER"}, "metadata": {"sentiment": "satisfied", "task_id": task_id},
            "conversation": [{"participant": p, "utterance": text, "utterance ID": f"{crs}-{user}_{i}"}
                             for i, (p, text) in enumerate(turns)]}


def test_crsarena_dialogues_that_name_task_and_item_are_graded(full_build, tmp_path):
    a, b, c = sorted(full_build.tasks, key=lambda t: t["id"])[:3]
    by_asin = [_arena("kbrd_redial", a["id"], [("USER", a["user_query"]), ("AGENT", "Any colour in mind?"),
                                                ("USER", "No."),
                                                ("AGENT", f"You could try {a['target_product']['parent_asin']}.")]),
               _arena("kbrd_redial", b["id"], [("USER", b["user_query"]),
                                                ("AGENT", f"How about the {b['target_product']['title']}?")]),
               _arena("kbrd_redial", c["id"], [("USER", c["user_query"]), ("AGENT", "I am not sure, sorry.")])]
    path = tmp_path / "arena.json"
    path.write_text(json.dumps(by_asin), encoding="utf-8")
    metrics, graded = _grade(path, full_build.path)
    status = {g["task_id"]: (g["status"], g["predicted_product_id"]) for g in graded}
    assert status[a["id"]] == ("correct", a["target_product"]["parent_asin"])
    assert status[b["id"]] == ("correct", b["target_product"]["parent_asin"])
    assert status[c["id"]] == ("incorrect", None)
    assert metrics["imported"]["recommendation_from"] == {"None": 1, "text": 2}
    assert metrics["episodes"]["ask_user_calls"]["max"] == 1


def test_a_file_of_several_agents_needs_agent_and_every_dialogue_a_task(full_build, tmp_path):
    t = full_build.tasks[0]
    two = [_arena("kbrd_redial", t["id"], [("USER", "hi")]), _arena("barcor_redial", t["id"], [("USER", "hi")])]
    path = tmp_path / "two.json"
    path.write_text(json.dumps(two), encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(app, ["grade", str(path), "--split", str(full_build.path)])
    assert res.exit_code == 1 and "2 agents (barcor_redial, kbrd_redial): choose one with --agent" in res.output
    assert runner.invoke(app, ["grade", str(path), "--split", str(full_build.path), "--agent",
                               "barcor_redial"]).exit_code == 0
    nameless = _arena("kbrd_redial", None, [("USER", "hi")])
    path.write_text(json.dumps([nameless]), encoding="utf-8")
    res = runner.invoke(app, ["grade", str(path), "--split", str(full_build.path)])
    assert res.exit_code == 1 and "dialogue 0 (kbrd_redial_" in res.output and "names no task" in res.output
    assert len(res.output.strip().splitlines()) == 1
