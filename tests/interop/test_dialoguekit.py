"""`ecombench export RUN --format dialoguekit`: trajectories written and read back with DialogueKit's own classes."""

from __future__ import annotations

import json

from dialoguekit.core.dialogue import Dialogue
from dialoguekit.participant import DialogueParticipant
from dialoguekit.utils.dialogue_reader import json_to_dialogues
from typer.testing import CliRunner

from ecombench.flows.cli import app
from ecombench.interop.dialoguekit import trajectory_dialogue


def test_a_run_round_trips_through_dialoguekit(full_build, tmp_path):
    runner = CliRunner()
    run = tmp_path / "oracle.trajectories.jsonl"
    assert runner.invoke(app, ["run-agent", str(full_build.path), "--agent", "oracle", "--limit", "12",
                               "--out", str(run)]).exit_code == 0
    res = runner.invoke(app, ["export", str(run), "--format", "dialoguekit", "--split", str(full_build.path)])
    assert res.exit_code == 0, res.output
    path = tmp_path / "oracle.dialogues.json"
    read = json_to_dialogues(str(path))
    records = [json.loads(line) for line in run.read_text(encoding="utf-8").splitlines()]
    tasks = {t["id"]: t for t in full_build.tasks}
    assert len(read) == len(records) == 12
    for dialogue, rec in zip(read, records):
        built = trajectory_dialogue(rec, tasks[rec["task_id"]])
        assert isinstance(dialogue, Dialogue) and dialogue.conversation_id == f"{rec['task_id']}/oracle"
        assert (dialogue.agent_id, dialogue.user_id) == ("oracle", "ecombench-shopper-scripted")
        assert dialogue.metadata["task_id"] == rec["task_id"]
        assert len(dialogue.utterances) == len(built.utterances)
        for got, want in zip(dialogue.utterances, built.utterances):
            assert (got.text, got.participant, got.dialogue_acts, got.annotations) == (
                want.text, want.participant, want.dialogue_acts, want.annotations)
            assert want.metadata.items() <= got.metadata.items()  # the reader adds the utterance id
        # The shopper opens with the query; each question is answered; the recommendation closes.
        assert dialogue.utterances[0].text == tasks[rec["task_id"]]["user_query"]
        asks = [s for s in rec["steps"] if s["tool"] == "ask_user"]
        agent_turns = [u for u in dialogue.utterances if u.participant is DialogueParticipant.AGENT]
        assert len(agent_turns) == len(asks) + 1 and agent_turns[-1].dialogue_acts[0].intent.label == "REVEAL"
        # Every tool call is kept, in order, as an annotation.
        calls = [a.value["step"] for u in agent_turns for a in u.annotations if a.key == "tool_call"]
        assert (calls + [c["step"] for c in dialogue.metadata["trailing_tool_calls"]]
                == [s["step"] for s in rec["steps"]])


def test_revealed_slots_are_disclosed_with_their_slot_and_value(full_build, tmp_path):
    runner = CliRunner()
    run = tmp_path / "oracle.trajectories.jsonl"
    assert runner.invoke(app, ["run-agent", str(full_build.path), "--agent", "oracle", "--limit", "30",
                               "--out", str(run)]).exit_code == 0
    out = tmp_path / "d.json"
    assert runner.invoke(app, ["export", str(run), "--format", "dialoguekit", "--split", str(full_build.path),
                               "--out", str(out)]).exit_code == 0
    revealed = sum(len(json.loads(line)["revealed_slots"]) for line in run.read_text(encoding="utf-8").splitlines())
    disclosed = [a for d in json_to_dialogues(str(out)) for u in d.utterances[1:]
                 if u.participant is DialogueParticipant.USER for da in u.dialogue_acts
                 if da.intent.label == "DISCLOSE" for a in da.annotations]
    assert revealed > 0 and len(disclosed) >= revealed
    assert all(a.slot and a.value for a in disclosed)
