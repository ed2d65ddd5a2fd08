"""`ecombench export RUN --format dialoguekit`: dialogues that DialogueKit's reader and template builder load.

DialogueKit 0.1.1 is the crs extra's (the version UserSimCRS pins). UserSimCRS reads a dialogue file with
`json_to_dialogues(file, agent_ids=[agent_id], user_ids=["User"])` (usersimcrs/utils/simulation_utils.py
l.160-165) and learns its NLG templates with `extract_utterance_template` (l.269-276), which replaces every
slot value in the text with `str.replace`.
"""

from __future__ import annotations

import json

import pytest
from dialoguekit.core.dialogue import Dialogue
from dialoguekit.nlg.template_from_training_data import extract_utterance_template
from dialoguekit.participant import DialogueParticipant
from dialoguekit.utils.dialogue_reader import json_to_dialogues
from typer.testing import CliRunner

from ecombench.flows.cli import app
from ecombench.interop.dialoguekit import ACCEPT, REJECT, trajectory_dialogue
from ecombench.interop.slots import constraint_slot
from ecombench.tables.fields import load_field_table


@pytest.fixture(scope="module")
def oracle_run(full_build, tmp_path_factory):
    """An oracle run on 30 tasks of the real build, graded, exported as dialogues: (trajectories, dialogues)."""
    tmp = tmp_path_factory.mktemp("oracle")
    runner = CliRunner()
    run = tmp / "oracle.trajectories.jsonl"
    assert runner.invoke(app, ["run-agent", str(full_build.path), "--agent", "oracle", "--limit", "30",
                               "--out", str(run)]).exit_code == 0
    res = runner.invoke(app, ["export", str(run), "--format", "dialoguekit", "--split", str(full_build.path)])
    assert res.exit_code == 0, res.output
    return run, tmp / "oracle.dialogues.json"


def _records(run):
    return [json.loads(line) for line in run.read_text(encoding="utf-8").splitlines()]


def test_a_run_loads_through_dialoguekits_reader_with_the_user_id_usersimcrs_keeps(full_build, oracle_run):
    run, path = oracle_run
    records = _records(run)
    read = json_to_dialogues(str(path), agent_ids=["oracle"], user_ids=["User"])  # UserSimCRS's filter
    tasks = {t["id"]: t for t in full_build.tasks}
    assert len(read) == len(records) == 30
    table = load_field_table()
    for dialogue, rec in zip(read, records):
        built = trajectory_dialogue(rec, tasks[rec["task_id"]], table)
        assert isinstance(dialogue, Dialogue) and dialogue.conversation_id == f"{rec['task_id']}/oracle"
        assert dialogue.metadata["task_id"] == rec["task_id"] and dialogue.metadata["user"] == "scripted"
        assert len(dialogue.utterances) == len(built.utterances)
        for got, want in zip(dialogue.utterances, built.utterances):
            assert (got.text, got.participant, got.dialogue_acts) == (want.text, want.participant, want.dialogue_acts)
            assert got.annotations == []  # nothing but strings reaches the template builder
            assert want.metadata.items() <= got.metadata.items()  # the reader adds the utterance id
        assert dialogue.utterances[0].text == tasks[rec["task_id"]]["user_query"]
        # Every tool call is kept, in order, in the agent utterances' metadata and the trailing calls.
        calls = [c["step"] for u in dialogue.utterances for c in u.metadata.get("tool_calls", [])]
        trailing = [c["step"] for c in dialogue.metadata["trailing_tool_calls"]]
        assert calls + trailing == [s["step"] for s in rec["steps"]]


def test_the_template_builder_learns_user_and_agent_templates(oracle_run):
    _, path = oracle_run
    user = extract_utterance_template(str(path))
    agent = extract_utterance_template(str(path), participant_to_learn="AGENT")
    assert {"DISCLOSE", ACCEPT} <= set(user) and {"INQUIRE.ELICIT", "REVEAL"} <= set(agent)
    # A value with a span is literally in the text, so its template holds the slot's placeholder.
    for d in json.loads(path.read_text(encoding="utf-8")):
        for u in d["conversation"]:
            for act in u["dialogue_acts"]:
                for _slot, value, start, end in act["slot_values"]:
                    assert isinstance(value, str) and value
                    assert start is None or u["utterance"][start:end] == value
    assert any("{ASIN}" in t.text and "{NAME}" in t.text for t in agent["REVEAL"])
    assert any("{" in t.text for t in user["DISCLOSE"])


def test_questions_name_their_slot_and_the_query_its_values(full_build, oracle_run):
    run, path = oracle_run
    tasks = {t["id"]: t for t in full_build.tasks}
    dialogues = json_to_dialogues(str(path))
    asked = answered = 0
    for d, rec in zip(dialogues, _records(run)):
        task = tasks[rec["task_id"]]
        query = d.utterances[0].dialogue_acts[0].annotations
        assert "PRODUCT_TYPE" in {a.slot for a in query}  # every query names the product type
        query_slots = {constraint_slot(r) for r in task["rubrics"] if r["info_source"] == "query"}
        assert {a.slot for a in query} <= query_slots
        for question, reply in zip(d.utterances[1:], d.utterances[2:]):
            if question.participant is not DialogueParticipant.AGENT or reply.metadata.get("revealed_slots") == []:
                continue
            if question.dialogue_acts[0].intent.label != "INQUIRE.ELICIT":
                continue
            asked += 1
            # The oracle asks about one clarification slot's field; the reply discloses that slot.
            answered += bool({a.slot.removeprefix("NOT_") for a in reply.dialogue_acts[0].annotations}
                             & {a.slot for a in question.dialogue_acts[0].annotations})
    assert asked > 20 and answered == asked


def test_the_oracle_accepts_and_a_graded_null_run_rejects_its_wrong_picks(full_build, oracle_run, tmp_path):
    _, path = oracle_run
    for d in json_to_dialogues(str(path)):
        labels = [u.dialogue_acts[0].intent.label for u in d.utterances]
        assert labels[-2:] == ["REVEAL", ACCEPT] and d.metadata["outcome"] == "accepted"
    runner = CliRunner()
    run = tmp_path / "null.trajectories.jsonl"
    assert runner.invoke(app, ["run-agent", str(full_build.path), "--agent", "null", "--limit", "30",
                               "--out", str(run)]).exit_code == 0
    assert runner.invoke(app, ["grade", str(run), "--split", str(full_build.path)]).exit_code == 0
    res = runner.invoke(app, ["export", str(run), "--format", "dialoguekit", "--split", str(full_build.path)])
    assert res.exit_code == 0 and "from the grade" in res.output
    graded = {g["task_id"]: g["status"] for g in map(json.loads, (tmp_path / "null.graded.jsonl").open())}
    verdicts = {}
    for d in json_to_dialogues(str(tmp_path / "null.dialogues.json")):
        last = d.utterances[-1]
        verdicts[d.metadata["task_id"]] = last.dialogue_acts[0].intent.label
        assert last.metadata["outcome_from"] == "grade"
    assert verdicts == {t: ACCEPT if graded[t] == "correct" else REJECT for t in verdicts}
    assert REJECT in verdicts.values()
