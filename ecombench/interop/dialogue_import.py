"""Dialogue files of other systems read as trajectory records, so `ecombench grade` scores them on our tasks.

Reads the raw JSON (no dialoguekit needed) of the three forms the CRS tools write:

- DialogueKit's reader form (`conversation_id`, `agent` / `user` as {"id", "type"}, utterances with
  `dialogue_acts`), which our own export and UserSimCRS's runs write;
- DialogueKit's `Dialogue.to_dict` form (`conversation ID`, agent and user as plain ids);
- CRSArena-Dial's (iai-group/crsarena-dial README: `conversation ID`, participant dicts, utterances
  with only `participant`, `utterance` and `utterance ID`: no dialogue acts).

A dialogue must name its task: `metadata.task_id`, else the id or task id of `metadata.information_need`
(UserSimCRS's own place for a need), else the conversation id before its first "/". A dialogue our
export wrote carries its trajectory record (`metadata.record`, steps from the utterances' tool calls),
which is read back exactly. Any other is read from what it says: the recommendation is the last agent
recommendation act's item (REVEAL, REVEAL.SIMILAR, REC-S, REC-E) by ASIN, catalog id or name; in a
dialogue without acts, the last agent utterance that names a catalog ASIN or a catalog title; else
`metadata.predicted_product_id`. Questions are the agent's INQUIRE acts (without acts: agent utterances
with a question mark). What only our sandbox records (tool calls, profile reads, revealed slots) is 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ecombench.errors import InputError

RECOMMEND_INTENTS = ("REVEAL", "REVEAL.SIMILAR", "REC-S", "REC-E")
ITEM_SLOTS = ("ASIN", "ID", "ITEM_ID", "PARENT_ASIN")
NAME_SLOTS = ("NAME", "TITLE")
# Amazon's ASINs: "B0" and eight letters or digits, or an ISBN-10.
ASIN = re.compile(r"\b(?:B0[0-9A-Z]{8}|[0-9]{9}[0-9X])\b")


def looks_like_dialogues(path: Path) -> bool:
    """True when the file is a JSON list (a dialogue file), not trajectory JSONL (one object per line)."""
    try:
        with Path(path).open(encoding="utf-8") as f:
            head = f.read(4096).lstrip("\ufeff \t\r\n")
    except OSError:
        return False
    return head.startswith("[")


def _participant_id(value: Any, default: str) -> str:
    if isinstance(value, dict):
        return str(value.get("id") or default)
    return str(value) if value else default


def _task_id(d: dict[str, Any], cid: str | None) -> str | None:
    meta = d.get("metadata") or {}
    need = meta.get("information_need")
    need = need if isinstance(need, dict) else {}
    for value in (meta.get("task_id"), need.get("id"), (need.get("metadata") or {}).get("task_id")):
        if value:
            return str(value)
    if cid and "/" in cid:
        return cid.split("/", 1)[0]
    return None


def _acts(utterance: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for a in utterance.get("dialogue_acts") or [] if isinstance(a, dict)]


def _item_of_act(act: dict[str, Any], items: Mapping[str, str] | None, by_title: dict[str, str]) -> str | None:
    for slot, value, *_ in act.get("slot_values") or []:
        if not isinstance(value, str):
            continue
        if str(slot).upper() in ITEM_SLOTS and (items is None or value in items):
            return value
        if str(slot).upper() in NAME_SLOTS and value.casefold().strip() in by_title:
            return by_title[value.casefold().strip()]
    return None


def _item_in_text(text: str, items: Mapping[str, str] | None, by_title: dict[str, str]) -> str | None:
    found = [m.group(0) for m in ASIN.finditer(text) if items is None or m.group(0) in items]
    if found:
        return found[-1]
    folded = text.casefold()
    named = [(len(t), asin) for t, asin in by_title.items() if len(t) >= 12 and t in folded]
    return max(named)[1] if named else None


def recommended_item(conversation: list[dict[str, Any]], items: Mapping[str, str] | None = None
                     ) -> tuple[str | None, str | None]:
    """(the item the agent recommended last, "act" | "text") of a conversation, or (None, None).

    Args:
        conversation: the dialogue's utterances.
        items: catalog ASIN -> title; None accepts any ASIN-shaped id and no names.
    """
    by_title: dict[str, str] = {}
    for asin, title in (items or {}).items():
        key = (title or "").casefold().strip()
        if key:
            by_title[key] = asin if key not in by_title else ""  # a title two products share names neither
    by_title = {t: a for t, a in by_title.items() if a}
    agent_turns = [u for u in conversation if u.get("participant") == "AGENT"]
    has_acts = any(_acts(u) for u in conversation)
    for u in reversed(agent_turns):
        for act in _acts(u):
            if act.get("intent") in RECOMMEND_INTENTS:
                item = _item_of_act(act, items, by_title)
                if item is not None:
                    return item, "act"
        if not has_acts:
            item = _item_in_text(str(u.get("utterance") or ""), items, by_title)
            if item is not None:
                return item, "text"
    return None, None


def dialogue_trajectory(d: dict[str, Any], where: str, items: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One dialogue as a trajectory record (see the module docstring).

    Args:
        d: the dialogue (a JSON object of one of the three forms).
        where: how errors name it ("file.json: dialogue 3").
        items: catalog ASIN -> title.

    Raises:
        InputError: the dialogue names no task, or has no conversation list.
    """
    conversation = d.get("conversation")
    if not isinstance(conversation, list):
        raise InputError(f"{where}: no conversation list")
    cid = d.get("conversation_id") or d.get("conversation ID")
    task_id = _task_id(d, cid)
    if task_id is None:
        raise InputError(f"{where} ({cid or 'no conversation id'}) names no task: put its task id in "
                         "metadata.task_id or start conversation_id with '<task_id>/'")
    meta = d.get("metadata") or {}
    if isinstance(meta.get("record"), dict):  # our own export: the record, and its steps from the tool calls
        steps = [c for u in conversation for c in u.get("tool_calls") or []] + list(meta.get("trailing_tool_calls")
                                                                                     or [])
        return {**meta["record"], "task_id": task_id, "steps": steps}
    agent = _participant_id(d.get("agent"), "Agent")
    pid, found_in = recommended_item(conversation, items)
    if pid is None and meta.get("predicted_product_id"):
        pid, found_in = str(meta["predicted_product_id"]), "metadata"
    has_acts = any(_acts(u) for u in conversation)
    questions = sum(1 for u in conversation if u.get("participant") == "AGENT" and (
        any(str(a.get("intent") or "").startswith("INQUIRE") for a in _acts(u)) if has_acts
        else "?" in str(u.get("utterance") or "")))
    return {"task_id": task_id, "intent": meta.get("intent"), "agent": agent, "model": meta.get("model"),
            "user": meta.get("user") or _participant_id(d.get("user"), "User"),
            "predicted_product_id": pid, "reasoning": None, "finished": pid is not None,
            "tool_calls": int(meta.get("tool_calls") or 0), "ask_user_calls": questions, "get_profile_calls": 0,
            "clarification_turns": questions, "revealed_slots": [], "error": meta.get("error"), "steps": [],
            "imported_from": {"conversation_id": cid, "recommendation_from": found_in}}


def read_dialogue_file(path: Path, items: Mapping[str, str] | None = None,
                       agent: str | None = None) -> list[dict[str, Any]]:
    """Trajectory records of every dialogue in a dialogue file (of one agent).

    Args:
        path: the JSON file (a list of dialogues).
        items: catalog ASIN -> title, to recognise recommended items by id or name.
        agent: keep only this agent's dialogues; needed when the file holds several agents'.

    Raises:
        InputError: the file is missing or not a JSON list of dialogues, it holds several agents and
            `agent` is not given (or names none of them), or a dialogue names no task (one line naming it).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"dialogue file not found: {path}") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a JSON dialogue file ({exc})") from None
    if not isinstance(data, list) or not all(isinstance(d, dict) and "conversation" in d for d in data):
        raise InputError(f"{path}: not a dialogue file (a JSON list of dialogues, each with a conversation)")
    agents = sorted({_participant_id(d.get("agent"), "Agent") for d in data})
    if agent is None and len(agents) > 1:
        raise InputError(f"{path} holds dialogues of {len(agents)} agents ({', '.join(agents[:6])}"
                         f"{', ...' if len(agents) > 6 else ''}): choose one with --agent")
    if agent is not None and agent not in agents:
        raise InputError(f"{path} has no dialogue of agent {agent!r} (it has {', '.join(agents[:6])})")
    return [dialogue_trajectory(d, f"{path}: dialogue {i}", items) for i, d in enumerate(data)
            if agent is None or _participant_id(d.get("agent"), "Agent") == agent]
