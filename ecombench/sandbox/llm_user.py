"""The opt-in LLM shopper: `ask_user` answered by a chat model instead of the scripted slot matcher.

The paper keeps the user scripted for reproducibility and names the cost: the deterministic
matcher does not capture every natural paraphrase. This shopper knows only the task's persona and
its clarification slots (each slot's topic and the reply that states its value) and must reveal a
slot only when the question is about its field. Every reply is checked with the leakage rules
(validation/leakage.py `leak_forms`, token-aware through ecombench.text): a reply that states the value
of a slot it does not claim the question asked about is replaced by the scripted reply, and so is
a reply the model gets wrong (no schema-valid JSON after the client's repair turn, or a refusal);
both are counted per turn. A server that does not answer (connection refused, a timeout or HTTP
errors after the client's retries) is an error, never a silent fallback: `check_server` probes it
once before a run, and a call that fails that way mid-run stops the run, each with one line naming
the URL, so a run labelled `llm` was answered by the model. A claimed
slot whose value the reply does not state is not revealed. Replies are cached by ecombench.llm.LLMClient
(a rerun makes no call and yields the same trajectory). Each turn's log records who answered, what
the LLM claimed and which slots the scripted matcher (validation/slots.py) would have opened, so
`grade` can report their agreement. The scripted shopper stays the default and the only one used at
construction time (flows never import this module).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ecombench.errors import ServerError
from ecombench.llm import LLMClient, LLMError
from ecombench.rubrics.base import as_spec
from ecombench.sandbox.catalog import SandboxCatalog
from ecombench.sandbox.tools import DEFAULT_RESPONSE, Episode, EpisodeLimits
from ecombench.tables.fields import FieldTable
from ecombench.text import contains_phrase
from ecombench.validation.leakage import leak_forms, reply_reveals
from ecombench.validation.slots import opened_slots

SHOPPER_PROMPT = """You are role-playing an online shopper who is chatting with a shopping assistant. Stay in character.
Your saved profile: {persona}
Preferences you have not told the assistant yet. Each has an id, the topic it is about, and what you would say about it:
{slots}
Rules:
1. Reveal a preference only when the assistant's question asks about its topic. Never mention a preference, or its \
value, that the question does not ask about.
2. If the question is vague or about a topic not listed, say you have no strong preference on that and invite the \
assistant to ask about something specific. Never say you have no other requirements.
3. Answer in one or two short, natural sentences, as a person would; when you reveal a preference, keep its value \
words exactly.
4. In revealed_slot_ids list the ids of the preferences your reply states (none when it states none).
The assistant asks: <<<{question}>>>
Reply with JSON only: {{"reply": "...", "revealed_slot_ids": [...]}}"""


def shopper_schema(slot_ids: list[str]) -> dict[str, Any]:
    """The reply schema: the shopper's words and the ids of the slots they state (only this task's ids)."""
    ids: dict[str, Any] = {"type": "string", "enum": slot_ids} if slot_ids else {"type": "string"}
    return {"type": "object", "additionalProperties": False, "required": ["reply", "revealed_slot_ids"],
            "properties": {"reply": {"type": "string", "minLength": 1, "maxLength": 600},
                           "revealed_slot_ids": {"type": "array", "items": ids, "maxItems": len(slot_ids)}}}


def shopper_messages(task: dict[str, Any], question: str, table: FieldTable) -> list[dict[str, str]]:
    """The one user message the shopper model gets: persona, each slot's topic and reply, the question."""
    lines = []
    for s in task["clarification_script"]["clarification_slots"]:
        try:
            topic = table.by_rubric_field(s["field"]).label
        except KeyError:  # a field the table lost since the build: its own name still says the topic
            topic = s["field"].removeprefix("details.")
        lines.append(f"- {s['slot_id']}: topic \"{topic}\"; you would say: \"{s['user_response']}\"")
    persona = json.dumps(task["user_persona"], ensure_ascii=False, sort_keys=True)
    return [{"role": "user", "content": SHOPPER_PROMPT.format(persona=persona, slots="\n".join(lines) or "(none)",
                                                              question=question)}]


def stated_slots(reply: str, task: dict[str, Any], table: FieldTable) -> list[str]:
    """Ids of the clarification slots whose value `reply` states, in any spelling the leakage rules know.

    A value is stated when any of its leak forms is in the reply, or when stage 6 would count the reply as
    revealing it (`reply_reveals`: a bound in any wording, "20 or more reviews" for 20 ratings).
    """
    rubrics = {r["id"]: r for r in task["rubrics"]}
    out = []
    for s in task["clarification_script"]["clarification_slots"]:
        linked = [rubrics[rid] for rid in s["linked_rubric_ids"] if rid in rubrics]
        if any(reply_reveals(reply, as_spec(r), table) or any(contains_phrase(reply, f) for f in leak_forms(r, table))
               for r in linked):
            out.append(s["slot_id"])
    return out


@dataclass
class ShopperTurn:
    """One answered `ask_user` turn of the LLM shopper.

    Attributes:
        turn: the clarification turn (1-based, as in `revealed_slots`).
        question: the agent's question.
        answered_by: "llm", or "scripted" when the LLM's reply was replaced.
        fallback: None, "leak" (the reply stated an unclaimed slot's value) or "call_failed" (no valid reply
            from the model: invalid JSON after the repair turn, or a refusal).
        reply: the reply the agent got.
        revealed: slot ids revealed this turn (the LLM's claimed and stated slots, or the scripted ones).
        scripted_slots: slot ids the scripted matcher opens on this question.
        llm_reply, llm_slots: what the model answered and claimed (None when the call failed).
        leaked_slots: slots whose value the reply stated without claiming them.
        unstated_slots: slots claimed but whose value the reply does not state (not revealed).
        error: the LLMError reason and message of a failed call.
    """

    turn: int
    question: str
    answered_by: str
    fallback: str | None
    reply: str
    revealed: list[str]
    scripted_slots: list[str]
    llm_reply: str | None = None
    llm_slots: list[str] | None = None
    leaked_slots: list[str] = field(default_factory=list)
    unstated_slots: list[str] = field(default_factory=list)
    error: str | None = None


class LLMShopper:
    """Answers `ask_user` with a chat model, checked by the leakage rules.

    The model is reached through ecombench.llm.LLMClient: any OpenAI-compatible server, schema-checked
    JSON, retries, reply cache.

    Args:
        client: an LLMClient; its settings' model is recorded in trajectories.
        table: the field table (slot topics, value spellings).
    """

    def __init__(self, client: Any, table: FieldTable):
        self.client, self.table = client, table

    @property
    def model(self) -> str:
        """The chat model's name, as trajectories record it."""
        return self.client.settings.model

    def _server_error(self, exc: LLMError, when: str) -> ServerError:
        return ServerError(f"--user llm: the shopper's server at {self.client.settings.base_url} {when} "
                           f"({str(exc).splitlines()[0]}); check --user-base-url, or run without --user llm")

    def check_server(self) -> None:
        """Ask the server for its models once, without retries, before a run.

        Raises:
            ServerError: nothing answers at the base URL (one line naming it). A server without a
                model list (HTTP 404) answers, and passes.
        """
        try:
            LLMClient(replace(self.client.settings, max_retries=0, cache_dir=None)).served_model()
        except LLMError as exc:
            raise self._server_error(exc, "does not answer") from None

    def answer(self, task: dict[str, Any], question: str, turn: int) -> ShopperTurn:
        """The reply to one question, with the scripted reply as the fallback for a reply the model got wrong.

        Raises:
            ServerError: the server did not answer (transport or HTTP errors after the client's retries).
        """
        script = task["clarification_script"]
        slots = script["clarification_slots"]
        scripted = opened_slots(question, slots, self.table)
        scripted_reply = (" ".join(s["user_response"] for s in slots if s["slot_id"] in scripted) if scripted
                          else script.get("default_response") or DEFAULT_RESPONSE)
        ids = [s["slot_id"] for s in slots]
        try:
            out = self.client.call_json(shopper_messages(task, question, self.table), "shopper_reply",
                                        shopper_schema(ids), purpose="shopper")
        except LLMError as exc:
            if exc.reason == "llm_error":  # the server, not the model: no run is labelled llm without it
                raise self._server_error(exc, "did not answer a chat request") from None
            return ShopperTurn(turn, question, "scripted", "call_failed", scripted_reply, scripted, scripted,
                               error=f"{exc.reason}: {str(exc)[:200]}")
        reply, claimed = out["reply"].strip(), [i for i in ids if i in out["revealed_slot_ids"]]
        stated = stated_slots(reply, task, self.table)
        leaked = [i for i in stated if i not in claimed]
        unstated = [i for i in claimed if i not in stated]
        if leaked:
            return ShopperTurn(turn, question, "scripted", "leak", scripted_reply, scripted, scripted, reply, claimed,
                               leaked, unstated)
        return ShopperTurn(turn, question, "llm", None, reply, [i for i in claimed if i in stated], scripted, reply,
                           claimed, [], unstated)


class ShopperEpisode(Episode):
    """An Episode whose `ask_user` replies come from an LLMShopper; the other nine tools are unchanged.

    The question-length refusal and the turn budget work as in the scripted episode (no model call
    for them). The record gains `user` ("llm"), `user_model` and `shopper_turns` (ShopperTurn dicts).
    """

    def __init__(self, catalog: SandboxCatalog, task: dict[str, Any], limits: EpisodeLimits = EpisodeLimits(),
                 shopper: LLMShopper | None = None):
        if shopper is None:
            raise ValueError("ShopperEpisode needs an LLMShopper")
        super().__init__(catalog, task, limits)
        self.shopper = shopper
        self.shopper_turns: list[ShopperTurn] = []

    def _ask_user(self, question: str) -> dict[str, Any]:
        turns, revealed = self.turns, len(self.revealed)
        scripted = super()._ask_user(question)  # guards, turn count, the scripted reveals
        if self.turns == turns:  # refused (too long) or out of turns: nobody was asked
            return scripted
        del self.revealed[revealed:]  # the shopper decides what this turn reveals
        t = self.shopper.answer(self.task, question, self.turns)
        self.shopper_turns.append(t)
        seen = {r["slot_id"] for r in self.revealed}
        self.revealed += [{"slot_id": s, "turn": self.turns} for s in t.revealed if s not in seen]
        return {"user_response": t.reply, "turns_remaining": scripted["turns_remaining"]}

    def record(self, agent: str, model: str | None = None, error: str | None = None) -> dict[str, Any]:
        """The trajectory record, plus the LLM user's model and every shopper turn."""
        rec = super().record(agent, model, error)
        rec.update({"user": "llm", "user_model": self.shopper.model,
                    "shopper_turns": [asdict(t) for t in self.shopper_turns]})
        return rec


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def shopper_agreement(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How the LLM shopper's answers compare with the scripted matcher's, over a run's trajectories.

    Returns None when no record was answered by the LLM shopper. Otherwise (JSON-ready): episodes, turns,
    answered_by_llm, fallbacks {leak, call_failed}, agreement (share of LLM-answered turns revealing
    exactly the slots the scripted matcher opens), agreement_all_turns (fallback turns count as
    agreeing, since they are the scripted reply), slots {both, llm_only, scripted_only}, slot precision
    and recall of the LLM's reveals against the matcher's, claimed_not_stated (slots claimed without
    their value in the reply, never revealed), and user_models.
    """
    llm = [r for r in records if r.get("user") == "llm"]
    if not llm:
        return None
    turns = [t for r in llm for t in r.get("shopper_turns") or []]
    by_llm = [t for t in turns if t["answered_by"] == "llm"]
    agree = sum(set(t["revealed"]) == set(t["scripted_slots"]) for t in by_llm)
    both = sum(len(set(t["revealed"]) & set(t["scripted_slots"])) for t in by_llm)
    llm_only = sum(len(set(t["revealed"]) - set(t["scripted_slots"])) for t in by_llm)
    scripted_only = sum(len(set(t["scripted_slots"]) - set(t["revealed"])) for t in by_llm)
    return {"episodes": len(llm), "turns": len(turns), "answered_by_llm": len(by_llm),
            "fallbacks": {"leak": sum(t["fallback"] == "leak" for t in turns),
                          "call_failed": sum(t["fallback"] == "call_failed" for t in turns)},
            "agreement": _rate(agree, len(by_llm)),
            "agreement_all_turns": _rate(agree + len(turns) - len(by_llm), len(turns)),
            "slots": {"both": both, "llm_only": llm_only, "scripted_only": scripted_only},
            "slot_precision": _rate(both, both + llm_only), "slot_recall": _rate(both, both + scripted_only),
            "claimed_not_stated": sum(len(t["unstated_slots"]) for t in turns),
            "user_models": sorted({r.get("user_model") or "?" for r in llm})}
