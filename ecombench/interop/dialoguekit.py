"""Agent trajectories as DialogueKit dialogues, built and serialised with `dialoguekit`'s own classes.

A trajectory (sandbox/trajectory.py) becomes one `dialoguekit.core.dialogue.Dialogue`: the shopper's
query opens it, each `ask_user` call is an AGENT utterance (the question) answered by a USER
utterance (the shopper's reply), and a valid `recommend_product` call is the AGENT's closing
utterance. Every other tool call is kept, in order, as an `Annotation("tool_call", {...})` on the
next agent utterance (those after the last one go to the dialogue's metadata). Dialogue acts use
the CIR6 / crs_v1 intent labels UserSimCRS's interaction models use: DISCLOSE (query, a reply that
reveals a slot, with slot-value annotations), DISCLOSE.NON-DISCLOSE (a reply revealing nothing),
INQUIRE.ELICIT (a question) and REVEAL (the recommendation). The file is a JSON list of
`Dialogue.to_dict()` records with `agent` and `user` as participant dicts, as DialogueKit's
`DialogueConnector` exports them, so `dialoguekit.utils.dialogue_reader.json_to_dialogues` reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ecombench.errors import InputError
from ecombench.interop.usersimcrs import constraint_slot, constraint_value
from ecombench.io import write_atomic
from ecombench.sandbox.tools import NO_MORE_TURNS
from ecombench.text import find_phrase

ELICIT, DISCLOSE, NON_DISCLOSE, REVEAL = "INQUIRE.ELICIT", "DISCLOSE", "DISCLOSE.NON-DISCLOSE", "REVEAL"


def _require_dialoguekit():
    try:
        # deferred: an optional dependency (the crs extra)
        import dialoguekit.core.dialogue  # noqa: F401
    except ImportError as exc:  # the crs extra is missing
        raise RuntimeError("the dialoguekit export needs the `dialoguekit` package: install ecombench[crs] "
                           f"(uv pip install -e '.[crs]'); import failed: {exc}") from None


def agent_id(record: dict[str, Any]) -> str:
    """The DialogueKit agent id of a run: the agent name, with its model after a colon when there is one."""
    return f"{record.get('agent') or 'agent'}" + (f":{record['model']}" if record.get("model") else "")


def user_id(record: dict[str, Any]) -> str:
    """The DialogueKit user id: which shopper answered (records without a `user` field used the scripted one)."""
    return f"ecombench-shopper-{record.get('user') or 'scripted'}"


def conversation_id(record: dict[str, Any]) -> str:
    """One id per (task, agent, model): '<task_id>/<agent id>'."""
    return f"{record['task_id']}/{agent_id(record)}"


def _slot_values(task: dict[str, Any], slot_ids: list[str], text: str) -> list[Any]:
    """SlotValueAnnotations of revealed clarification slots.

    The constraint slot and value of each linked rubric, with the value's character span in `text`
    when the reply states it literally.
    """
    # deferred: an optional dependency (the crs extra)
    from dialoguekit.core.slot_value_annotation import SlotValueAnnotation

    rubrics = {r["id"]: r for r in task["rubrics"]}
    out = []
    for slot in task["clarification_script"]["clarification_slots"]:
        if slot["slot_id"] not in slot_ids:
            continue
        for rid in slot["linked_rubric_ids"]:
            r = rubrics.get(rid)
            if r is None:
                continue
            value = constraint_value(r)
            value = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            span = find_phrase(text, value)
            out.append(SlotValueAnnotation(constraint_slot(r), value, *(span or (None, None))))
    return out


def trajectory_dialogue(record: dict[str, Any], task: dict[str, Any]) -> Any:
    """One trajectory record as a `dialoguekit.core.dialogue.Dialogue`.

    Args:
        record: a trajectory record (ecombench.sandbox.tools.Episode.record, plus the LLM shopper's `user` and
            `shopper_turns` when it answered).
        task: its task record (the opening query and the clarification slots' fields and values).

    Returns:
        The Dialogue; its metadata holds task_id, intent, agent, model, user, finished, predicted_product_id,
        tool_calls, error and `trailing_tool_calls` (tool calls after the last agent utterance).

    Raises:
        RuntimeError: dialoguekit is not installed.
    """
    _require_dialoguekit()
    # deferred: an optional dependency (the crs extra)
    from dialoguekit.core.annotated_utterance import AnnotatedUtterance
    from dialoguekit.core.annotation import Annotation
    from dialoguekit.core.dialogue import Dialogue
    from dialoguekit.core.dialogue_act import DialogueAct
    from dialoguekit.core.intent import Intent
    from dialoguekit.core.slot_value_annotation import SlotValueAnnotation
    from dialoguekit.participant import DialogueParticipant

    dialogue = Dialogue(agent_id(record), user_id(record), conversation_id(record))
    dialogue.add_utterance(AnnotatedUtterance(text=task["user_query"], participant=DialogueParticipant.USER,
                                              dialogue_acts=[DialogueAct(Intent(DISCLOSE))],
                                              metadata={"source": "user_query"}))
    reveals: dict[int, list[str]] = {}
    for r in record.get("revealed_slots") or []:
        reveals.setdefault(r["turn"], []).append(r["slot_id"])
    answered_by = {t["turn"]: t["answered_by"] for t in record.get("shopper_turns") or []}
    default_user = record.get("user") or "scripted"
    pending: list[Any] = []
    turn = 0
    for step in record.get("steps") or []:
        call = {"step": step["step"], "tool": step["tool"], "arguments": step["arguments"], "result": step["result"]}
        result = step["result"] or {}
        args = step["arguments"] if isinstance(step["arguments"], dict) else {}
        if step["tool"] == "ask_user" and "user_response" in result and "question" in args:
            counted = "error" not in result and result["user_response"] != NO_MORE_TURNS
            turn += counted
            opened = reveals.get(turn, []) if counted else []
            dialogue.add_utterance(AnnotatedUtterance(
                text=args["question"], participant=DialogueParticipant.AGENT,
                dialogue_acts=[DialogueAct(Intent(ELICIT))],
                annotations=[*pending, Annotation("tool_call", call)], metadata={"step": step["step"]}))
            pending = []
            reply = result["user_response"]
            acts = ([DialogueAct(Intent(DISCLOSE), _slot_values(task, opened, reply))] if opened
                    else [DialogueAct(Intent(NON_DISCLOSE))])
            dialogue.add_utterance(AnnotatedUtterance(
                text=reply, participant=DialogueParticipant.USER, dialogue_acts=acts,
                annotations=[Annotation("revealed_slots", opened)],
                metadata={"step": step["step"], "turn": turn if counted else None,
                          "answered_by": answered_by.get(turn, default_user) if counted else "sandbox"}))
        elif step["tool"] == "recommend_product" and "recommended_product" in result:
            product = result["recommended_product"]
            text = f"I recommend {product['title']} ({product['product_id']})."
            if result.get("reasoning"):
                text += f" {result['reasoning']}"
            dialogue.add_utterance(AnnotatedUtterance(
                text=text, participant=DialogueParticipant.AGENT,
                dialogue_acts=[DialogueAct(Intent(REVEAL), [SlotValueAnnotation("ID", product["product_id"])])],
                annotations=[*pending, Annotation("tool_call", call)], metadata={"step": step["step"]}))
            pending = []
        else:
            pending.append(Annotation("tool_call", call))
    dialogue._metadata = {  # Dialogue has no metadata setter; its reader sets _metadata the same way
        "task_id": record["task_id"], "intent": record.get("intent"), "agent": record.get("agent"),
        "model": record.get("model"), "user": default_user, "finished": bool(record.get("finished")),
        "predicted_product_id": record.get("predicted_product_id"), "tool_calls": record.get("tool_calls", 0),
        "error": record.get("error"), "trailing_tool_calls": [a.value for a in pending]}
    return dialogue


def dialogue_record(dialogue: Any) -> dict[str, Any]:
    """`Dialogue.to_dict()` as DialogueKit's DialogueConnector exports it.

    Agent and user as participant dicts, plus `conversation_id`: to_dict writes "conversation ID"
    but json_to_dialogues reads "conversation_id".
    """
    d = dialogue.to_dict()
    d["agent"] = {"id": dialogue.agent_id, "type": "AGENT"}
    d["user"] = {"id": dialogue.user_id, "type": "USER"}
    d["conversation_id"] = dialogue.conversation_id
    return d


def write_dialogues(records: list[dict[str, Any]], tasks: list[dict[str, Any]], path: Path) -> dict[str, Any]:
    """Write every trajectory as a DialogueKit dialogue into one JSON file (a list, sorted by task id).

    Args:
        records: trajectory records of one run.
        tasks: the split's tasks (each record's task must be among them).
        path: the output .json file (parent directories created; an existing file is replaced whole).

    Returns:
        {"dialogues", "utterances", "tool_call_annotations", "path"}.

    Raises:
        InputError: a record names a task the split does not have.
        RuntimeError: dialoguekit is not installed.
    """
    _require_dialoguekit()
    by_id = {t["id"]: t for t in tasks}
    out, utterances, calls = [], 0, 0
    for rec in sorted(records, key=lambda r: r["task_id"]):
        if rec["task_id"] not in by_id:
            raise InputError(f"trajectory for task {rec['task_id']!r}, which the split does not have")
        d = trajectory_dialogue(rec, by_id[rec["task_id"]])
        utterances += len(d.utterances)
        calls += sum(len(u.annotations) for u in d.utterances if u.participant.name == "AGENT")
        calls += len(d.metadata["trailing_tool_calls"])
        out.append(dialogue_record(d))
    write_atomic(path, json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    return {"dialogues": len(out), "utterances": utterances, "tool_call_annotations": calls, "path": str(path)}
