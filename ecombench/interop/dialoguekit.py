"""Agent trajectories as DialogueKit dialogues, built and serialised with `dialoguekit`'s own classes.

A trajectory (sandbox/trajectory.py) becomes one `dialoguekit.core.dialogue.Dialogue` that both
DialogueKit's reader (`utils/dialogue_reader.py` `json_to_dialogues`) and its template builder
(`nlg/template_from_training_data.py` `extract_utterance_template`) load, and that UserSimCRS's
loaders keep (they read only dialogues whose user id is "User", `usersimcrs/utils/simulation_utils.py`
l.160-165):

- the shopper's query opens it: USER `DISCLOSE`, one slot value per query requirement the query
  states (with its character span; requirements said only through a cue are not annotated);
- each `ask_user` call is an AGENT `INQUIRE.ELICIT` whose slot values name the slots the question asks
  about (the slot matcher's reading, ecombench.validation.slots), answered by a USER `DISCLOSE` with the
  revealed slots' values, or `DISCLOSE.NON-DISCLOSE` when it reveals nothing;
- a valid `recommend_product` call is an AGENT `REVEAL` naming the item by `NAME` (its title) and
  `ASIN`, followed by the shopper's verdict: USER `NOTE.ACCEPT` when the recommendation is correct,
  `NOTE.DISLIKE` when it is not (from the run's grade, else from the task's answer set).

Every slot value is a non-empty string; DialogueKit's template builder replaces values in the text
with `str.replace`, so nothing else goes into dialogue acts or utterance annotations. Tool calls,
revealed slot ids and turn numbers are utterance keys the reader keeps as utterance metadata, and
the trajectory record (without its steps, which the tool calls hold) is the dialogue's
`metadata.record`, so ecombench.interop.dialogue_import rebuilds the record exactly. Intent labels are
the CIR6 / crs_v1 ones UserSimCRS's interaction models use (docs/crs-formats.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ecombench.errors import InputError
from ecombench.hashing import seed_int
from ecombench.interop.extra import require_crs_extra
from ecombench.interop.slots import constraint_slot, slot_name, spoken_value, stated_spans
from ecombench.io import write_atomic
from ecombench.sandbox.tools import NO_MORE_TURNS
from ecombench.tables.fields import FieldTable
from ecombench.text import find_phrase
from ecombench.validation.slots import read_question

ELICIT, DISCLOSE, NON_DISCLOSE, REVEAL = "INQUIRE.ELICIT", "DISCLOSE", "DISCLOSE.NON-DISCLOSE", "REVEAL"
ACCEPT, REJECT = "NOTE.ACCEPT", "NOTE.DISLIKE"
# The user id UserSimCRS loads dialogues for (json_to_dialogues(..., user_ids=["User"])); which shopper
# answered (scripted or llm) is in the dialogue's metadata.
USER_ID = "User"
ACCEPT_TEXTS = ("That one works for me, thanks.", "Great, I'll take it.", "Perfect, that's what I was looking for.")
REJECT_TEXTS = ("That one doesn't fit what I need.", "No, that's not what I'm after.",
                "I don't think that one works for me.")


def require_dialoguekit() -> None:
    """Check that the crs extra's `dialoguekit` imports.

    Raises:
        SettingError: it does not (one line saying what to install).
    """
    require_crs_extra("DialogueKit dialogues", "dialoguekit")


def agent_id(record: dict[str, Any]) -> str:
    """The DialogueKit agent id of a run: the agent name, with its model after a colon when there is one."""
    return f"{record.get('agent') or 'agent'}" + (f":{record['model']}" if record.get("model") else "")


def conversation_id(record: dict[str, Any]) -> str:
    """One id per (task, agent, model): '<task_id>/<agent id>'."""
    return f"{record['task_id']}/{agent_id(record)}"


def slot_value(slot: str, value: str, start: int | None = None, end: int | None = None) -> Any:
    """A `SlotValueAnnotation` (slot, value, character span or None)."""
    # deferred: an optional dependency (the crs extra)
    from dialoguekit.core.slot_value_annotation import SlotValueAnnotation

    return SlotValueAnnotation(slot, value, start, end)


def rubric_values(text: str, rubric: dict[str, Any], table: FieldTable, unstated: bool) -> list[Any]:
    """SlotValueAnnotations of one rubric in `text`: the words stating its value, with their span.

    Args:
        text: the utterance.
        rubric: the rubric (its slot is `constraint_slot`).
        table: the field table (value spellings).
        unstated: when the text states no spelling of the value, annotate the value in words without a
            span (a reply that reveals the slot in other words) instead of nothing.
    """
    slot = constraint_slot(rubric)
    spans = stated_spans(text, rubric, table)
    if spans:
        return [slot_value(slot, words, s, e) for words, s, e in spans]
    return [slot_value(slot, spoken_value(rubric))] if unstated else []


def query_values(task: dict[str, Any], table: FieldTable) -> list[Any]:
    """The query requirements the query states, as slot values in text order."""
    found = [a for r in task["rubrics"] if r["info_source"] == "query"
             for a in rubric_values(task["user_query"], r, table, unstated=False)]
    return sorted(found, key=lambda a: a.start)


def question_values(question: str, table: FieldTable, task: dict[str, Any] | None = None) -> list[Any]:
    """The slots an agent question asks about: one slot value per field or topic it names.

    The value is the question's word for it ("finish"), with its span when literal. A topic ("How old
    is the child?") stands for the first field of its group the task has a rubric on, else the
    group's first field. A question that names nothing gets none.
    """
    reading = read_question(question, table)
    phrases = {owner: phrase for phrase, owner in reading.matched}
    task_fields = {r["field"].removeprefix("details.") for r in (task or {}).get("rubrics", [])}
    named = [(f, phrases.get(f, f)) for f in reading.fields]
    topic_phrases = [p for p, owner in reading.matched if owner.startswith("topic ")]
    for i, group in enumerate(reading.topics):
        field = next((f for f in group if f in task_fields), group[0])
        named.append((field, topic_phrases[i] if i < len(topic_phrases) else field))
    out = []
    for field, phrase in named:
        span = find_phrase(question, phrase)
        out.append(slot_value(slot_name(field), question[span[0]:span[1]], *span) if span
                   else slot_value(slot_name(field), phrase))
    return out


def reply_values(task: dict[str, Any], slot_ids: list[str], text: str, table: FieldTable) -> list[Any]:
    """Slot values of the clarification slots a reply reveals: each linked rubric's value as the reply states it."""
    rubrics = {r["id"]: r for r in task["rubrics"]}
    return [a for slot in task["clarification_script"]["clarification_slots"] if slot["slot_id"] in slot_ids
            for rid in slot["linked_rubric_ids"] if rid in rubrics
            for a in rubric_values(text, rubrics[rid], table, unstated=True)]


def reveal_utterance(product: dict[str, Any], reasoning: str | None = None) -> tuple[str, list[Any]]:
    """The recommendation's text and its REVEAL slot values: the item by NAME (title) and by ASIN, with spans."""
    title, asin = product.get("title") or "", product["product_id"]
    text = f"I recommend {title} ({asin})." if title else f"I recommend {asin}."
    values = []
    if title:
        values.append(slot_value("NAME", title, 12, 12 + len(title)))
    start = text.index(asin)
    values.append(slot_value("ASIN", asin, start, start + len(asin)))
    if reasoning:
        text += f" {reasoning}"
    return text, values


def recommendation_outcome(record: dict[str, Any], task: dict[str, Any],
                           graded: dict[str, Any] | None = None) -> tuple[str | None, str | None]:
    """(accepted | rejected | None, where that came from) for the run's recommendation.

    From the run's grade when given ("grade": correct is accepted, incorrect rejected, unscored
    neither); else from the task ("answer_set": the target or a member of its answer set, every
    catalog product satisfying the code-checkable rubrics, is accepted). None when nothing was
    recommended.
    """
    pid = record.get("predicted_product_id")
    if pid is None:
        return None, None
    if graded is not None:
        return {"correct": "accepted", "incorrect": "rejected"}.get(graded["status"]), "grade"
    ok = pid == task["target_product"]["parent_asin"] or pid in (task.get("answer_set") or [])
    return ("accepted" if ok else "rejected"), "answer_set"


def outcome_utterance(outcome: str, task_id: str, source: str | None) -> Any:
    """The shopper's verdict on the recommendation: NOTE.ACCEPT or NOTE.DISLIKE, its wording picked by task id."""
    # deferred: an optional dependency (the crs extra)
    from dialoguekit.core.annotated_utterance import AnnotatedUtterance
    from dialoguekit.core.dialogue_act import DialogueAct
    from dialoguekit.core.intent import Intent
    from dialoguekit.participant import DialogueParticipant

    texts, intent = (ACCEPT_TEXTS, ACCEPT) if outcome == "accepted" else (REJECT_TEXTS, REJECT)
    text = texts[seed_int("dialogue-outcome", task_id) % len(texts)]
    return AnnotatedUtterance(text=text, participant=DialogueParticipant.USER,
                              dialogue_acts=[DialogueAct(Intent(intent))], metadata={"outcome_from": source})


def trajectory_dialogue(record: dict[str, Any], task: dict[str, Any], table: FieldTable,
                        graded: dict[str, Any] | None = None) -> Any:
    """One trajectory record as a `dialoguekit.core.dialogue.Dialogue` (see the module docstring).

    Args:
        record: a trajectory record (ecombench.sandbox.tools.Episode.record, plus the LLM shopper's `user`,
            `user_model` and `shopper_turns` when it answered).
        task: its task record (the opening query, the rubrics, the clarification slots).
        table: the field table (the slot matcher's vocabulary, value spellings).
        graded: the run's grade of this task (ecombench.sandbox.grader.grade_episode); None decides the
            shopper's verdict from the task's answer set.

    Returns:
        The Dialogue. Its metadata: task_id, intent, agent, model, user, finished, predicted_product_id,
        outcome, outcome_from, tool_calls, error, trailing_tool_calls (tool calls after the last agent
        utterance) and record (the trajectory record without its steps).

    Raises:
        SettingError: dialoguekit is not installed.
    """
    require_dialoguekit()
    # deferred: an optional dependency (the crs extra)
    from dialoguekit.core.annotated_utterance import AnnotatedUtterance
    from dialoguekit.core.dialogue import Dialogue
    from dialoguekit.core.dialogue_act import DialogueAct
    from dialoguekit.core.intent import Intent
    from dialoguekit.participant import DialogueParticipant

    dialogue = Dialogue(agent_id(record), USER_ID, conversation_id(record))
    dialogue.add_utterance(AnnotatedUtterance(text=task["user_query"], participant=DialogueParticipant.USER,
                                              dialogue_acts=[DialogueAct(Intent(DISCLOSE), query_values(task, table))],
                                              metadata={"source": "user_query"}))
    reveals: dict[int, list[str]] = {}
    for r in record.get("revealed_slots") or []:
        reveals.setdefault(r["turn"], []).append(r["slot_id"])
    answered_by = {t["turn"]: t["answered_by"] for t in record.get("shopper_turns") or []}
    default_user = record.get("user") or "scripted"
    outcome, outcome_from = recommendation_outcome(record, task, graded)
    pending: list[dict[str, Any]] = []
    turn = 0
    for step in record.get("steps") or []:
        result = step["result"] if isinstance(step["result"], dict) else {}
        args = step["arguments"] if isinstance(step["arguments"], dict) else {}
        if step["tool"] == "ask_user" and "user_response" in result and isinstance(args.get("question"), str):
            counted = "error" not in result and result["user_response"] != NO_MORE_TURNS
            turn += counted
            opened = reveals.get(turn, []) if counted else []
            question = args["question"]
            dialogue.add_utterance(AnnotatedUtterance(
                text=question, participant=DialogueParticipant.AGENT,
                dialogue_acts=[DialogueAct(Intent(ELICIT), question_values(question, table, task))],
                metadata={"step": step["step"], "tool_calls": [*pending, step]}))
            pending = []
            reply = str(result["user_response"])
            acts = ([DialogueAct(Intent(DISCLOSE), reply_values(task, opened, reply, table))] if opened
                    else [DialogueAct(Intent(NON_DISCLOSE))])
            dialogue.add_utterance(AnnotatedUtterance(
                text=reply, participant=DialogueParticipant.USER, dialogue_acts=acts,
                metadata={"step": step["step"], "turn": turn if counted else None, "revealed_slots": opened,
                          "answered_by": answered_by.get(turn, default_user) if counted else "sandbox"}))
        elif step["tool"] == "recommend_product" and "recommended_product" in result:
            text, values = reveal_utterance(result["recommended_product"], result.get("reasoning"))
            dialogue.add_utterance(AnnotatedUtterance(
                text=text, participant=DialogueParticipant.AGENT, dialogue_acts=[DialogueAct(Intent(REVEAL), values)],
                metadata={"step": step["step"], "tool_calls": [*pending, step]}))
            pending = []
            if outcome is not None and result["recommended_product"]["product_id"] == record.get(
                    "predicted_product_id"):
                dialogue.add_utterance(outcome_utterance(outcome, record["task_id"], outcome_from))
        else:
            pending.append(step)
    dialogue._metadata = {  # Dialogue has no metadata setter; its reader sets _metadata the same way
        "task_id": record["task_id"], "intent": record.get("intent"), "agent": record.get("agent"),
        "model": record.get("model"), "user": default_user, "finished": bool(record.get("finished")),
        "predicted_product_id": record.get("predicted_product_id"), "outcome": outcome,
        "outcome_from": outcome_from, "tool_calls": record.get("tool_calls", 0), "error": record.get("error"),
        "trailing_tool_calls": pending, "record": {k: v for k, v in record.items() if k != "steps"}}
    return dialogue


def dialogue_record(dialogue: Any) -> dict[str, Any]:
    """`Dialogue.to_dict()` in the form DialogueKit's reader reads.

    Agent and user as participant dicts (to_dict writes plain ids, on which the reader fails), plus
    `conversation_id` (to_dict writes "conversation ID"; the reader reads "conversation_id").
    """
    d = dialogue.to_dict()
    d["agent"] = {"id": dialogue.agent_id, "type": "AGENT"}
    d["user"] = {"id": dialogue.user_id, "type": "USER"}
    d["conversation_id"] = dialogue.conversation_id
    return d


def write_json(data: Any, path: Path) -> None:
    """Write JSON (indented, Unicode as is) whole or not at all (ecombench.io.write_atomic)."""
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


def write_dialogues(records: list[dict[str, Any]], tasks: list[dict[str, Any]], table: FieldTable, path: Path,
                    graded: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Write every trajectory as a DialogueKit dialogue into one JSON file (a list, sorted by task id).

    Args:
        records: trajectory records of one run.
        tasks: the split's tasks (each record's task must be among them).
        table: the field table.
        path: the output .json file (parent directories created; an existing file is replaced whole).
        graded: the run's grade by task id (`<run>.graded.jsonl`); None decides verdicts from answer sets.

    Returns:
        {"dialogues", "utterances", "tool_calls", "accepted", "rejected", "outcome_from", "path"}.

    Raises:
        InputError: a record names a task the split does not have.
        SettingError: dialoguekit is not installed.
    """
    require_dialoguekit()
    by_id = {t["id"]: t for t in tasks}
    out, utterances, calls, verdicts = [], 0, 0, {"accepted": 0, "rejected": 0}
    for rec in sorted(records, key=lambda r: r["task_id"]):
        if rec["task_id"] not in by_id:
            raise InputError(f"trajectory for task {rec['task_id']!r}, which the split does not have")
        d = trajectory_dialogue(rec, by_id[rec["task_id"]], table, (graded or {}).get(rec["task_id"]))
        utterances += len(d.utterances)
        calls += sum(len(u.metadata.get("tool_calls", [])) for u in d.utterances)
        calls += len(d.metadata["trailing_tool_calls"])
        if d.metadata["outcome"] in verdicts:
            verdicts[d.metadata["outcome"]] += 1
        out.append(dialogue_record(d))
    write_json(out, path)
    return {"dialogues": len(out), "utterances": utterances, "tool_calls": calls, **verdicts,
            "outcome_from": "grade" if graded is not None else "answer_set", "path": str(path)}
