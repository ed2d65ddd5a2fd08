"""Reference agents: the scripted oracle, the null agent and an LLM agent over the OpenAI client.

The oracle knows a task's rubrics but acts on a requirement only once a tool has revealed it to
an honest agent: query rubrics at once, persona rubrics when `get_user_profile` shows them, a
clarification rubric when its canonical question (validation/slots.py, the question validation asks)
opens its slot. It then finds a product with the tools only — search, attribute filters, review
stats, details and reviews — judging what it sees with the rubric checkers, and recommends the
first product that satisfies everything. A task it cannot solve within the episode budget was
never solvable with the tools (the build's `oracle_failed`). The null agent recommends the first
search hit for the visible query: the floor a split must stay far above.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from sandbox.catalog import search_terms
from sandbox.tools import TOOL_SCHEMAS, Episode, EpisodeOver
from rubric_types import as_rubrics, kind_of
from schemas.models import Rubric, RubricType
from stages.fields import FieldTable
from stages.verbalise import persona_entry
from stages.llm import LLMSettings
from validation.checkers import check
from validation.slots import canonical_question

if TYPE_CHECKING:
    from openai.types.chat import (ChatCompletionMessageFunctionToolCall, ChatCompletionMessageParam,
                                   ChatCompletionToolUnionParam)

AGENTS = ("oracle", "null", "llm")


def _observed(details: dict[str, Any] | None, stats: dict[str, Any] | None,
              reviews: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A product as tools showed it, in the shape the rubric checkers read."""
    p = (details or {}).get("product", {})
    return {"parent_asin": p.get("product_id"), "title": p.get("title") or "", "price": p.get("price"),
            "average_rating": (stats or {}).get("average_rating"), "rating_number": (stats or {}).get("rating_number"),
            "details": [{"key": k, "value": v} for k, vs in (p.get("details") or {}).items() for v in vs],
            "reviews": reviews}


def known_rubrics(episode: Episode, table: FieldTable) -> tuple[list[Rubric], list[Rubric]]:
    """Learn every hidden requirement the honest way.

    Read the profile, ask one canonical question per clarification rubric. Returns (rubrics the tools
    revealed, rubrics they did not).
    """
    task = episode.task
    profile = episode.call("get_user_profile", {}).get("profile", {}).get("product_requirements", {})
    slot_of = {rid: s["slot_id"] for s in task["clarification_script"]["clarification_slots"]
               for rid in s["linked_rubric_ids"]}
    known: list[Rubric] = []
    unknown: list[Rubric] = []
    for r in as_rubrics(task["rubrics"]):
        if r.info_source == "persona":
            key, value = persona_entry(r, table)
            (known if profile.get(key) == value else unknown).append(r)
        elif r.info_source == "clarification":
            if episode.done:
                unknown.append(r)
                continue
            if not any(s["slot_id"] == slot_of.get(r.id) for s in episode.revealed):
                episode.call("ask_user", {"question": canonical_question(table.by_rubric_field(r.field).label)})
            revealed = any(s["slot_id"] == slot_of.get(r.id) for s in episode.revealed)
            (known if revealed else unknown).append(r)
        else:
            known.append(r)
    return known, unknown


def run_oracle(episode: Episode, table: FieldTable) -> dict[str, Any]:
    """The scripted oracle (see the module docstring).

    Returns the trajectory record, with `unrevealed` listing requirement ids the tools never revealed.

    Search: the product type and every attribute value as one query (products holding every term
    come first; pages past those are skipped, since every term is a requirement), page by page; on
    each page the attribute filters (one call for the page), then rating stats (one call), then per
    product its review searches and its details narrow the candidates. Without a product type or an
    attribute value to search for, it pages through the hits of the visible query instead. Stops at
    the first product satisfying every revealed rubric, or when the budget is spent.
    """
    try:
        known, unknown = known_rubrics(episode, table)
        _oracle_search(episode, known)
    except EpisodeOver:
        pass
    record = episode.record("oracle")
    record["unrevealed"] = [r.id for r in unknown]
    return record


def _oracle_search(episode: Episode, rubrics: list[Rubric]) -> None:
    words = [str(r.expected_value) for r in rubrics if r.type in (RubricType.entity_match, RubricType.attribute_match)]
    from_rubrics = bool(search_terms(" ".join(words)))
    query = " ".join(words) if from_rubrics else episode.task["user_query"]
    attributes = [r for r in rubrics if r.type == RubricType.attribute_match]
    needs_stats = any(r.field in ("average_rating", "rating_number") for r in rubrics)
    opinions = [r for r in rubrics if kind_of(r).needs_reviews]
    table = episode.catalog.table
    page = 0
    while not episode.done:
        found = episode.call("search_products", {"query": query, "page": page})
        ids = [p["product_id"] for p in found.get("products", [])]
        if from_rubrics:  # every term is a requirement: past the products holding all of them, none qualifies
            ids = ids[:max(0, found.get("total_matching_all_terms", 0) - page * found.get("page_size", 0))]
        if not ids:
            return
        for r in attributes:
            if ids and not episode.done:
                ids = episode.call("filter_by_attribute", {"product_ids": ids, "attribute_name": r.field.removeprefix(
                    "details."), "attribute_value": r.expected_value}).get("product_ids", [])
        stats: dict[str, dict[str, Any]] = {}
        if ids and (needs_stats or opinions) and not episode.done:
            stats = {s["product_id"]: s for s in episode.call("get_product_review_stats",
                                                              {"product_ids": ids}).get("products", [])}
        for asin in ids:
            if episode.done:
                return
            plain = [r for r in rubrics if not kind_of(r).needs_reviews]
            if stats and not all(check(r, _observed(None, stats.get(asin), None), table).satisfied for r in plain
                                 if r.field in ("average_rating", "rating_number")):
                continue
            if opinions and stats and not stats.get(asin, {}).get("reviews_available"):
                continue  # no review to state an opinion
            # Reviews before details: the first opinion rules out most products for one call.
            ok, seen = True, []
            for r in opinions:
                if episode.done:
                    return
                hits = episode.call("get_review_content", {"product_id": asin, "query": r.expected_value})
                seen += hits.get("reviews", [])
                if not check(r, _observed(None, None, hits.get("reviews", [])), table).satisfied:
                    ok = False
                    break
            if not ok or episode.done:
                continue
            details = episode.call("get_product_details", {"product_id": asin})
            if not all(check(r, _observed(details, stats.get(asin), seen), table).satisfied for r in plain):
                continue
            if not episode.done:
                episode.call("recommend_product", {"product_id": asin, "reasoning": "satisfies every requirement "
                                                   "the query, the profile and the shopper's answers state"})
                return
        page += 1


def run_null(episode: Episode) -> dict[str, Any]:
    """The null agent: search the visible query and recommend the first hit (no hit: no recommendation)."""
    found = episode.call("search_products", {"query": episode.task["user_query"]})
    if found.get("products"):
        episode.call("recommend_product", {"product_id": found["products"][0]["product_id"],
                                           "reasoning": "first search hit for the query"})
    return episode.record("null")


SYSTEM_PROMPT = """You are a shopping assistant. Find the one catalog product that meets every requirement of the \
shopper.
Requirements come from three sources, and you must consult all three: the shopper's message, the saved profile
(get_user_profile) and the shopper's answers to short questions (ask_user, one topic per question, limited turns).
Use the tools; when you have found the product, call recommend_product with its product_id. Never answer in plain
text. You have at most {max_calls} tool calls; recommend your best candidate before they run out. Searches match
words, so try shorter or different wording when a search finds nothing useful."""

NUDGE = "Please continue with a tool call, or call recommend_product."


class LLMAgent:
    """An agent driven by a chat model with OpenAI tool calling, on any OpenAI-compatible server.

    Settings come from stages.llm.LLMSettings (base URL, model, key from OPENAI_API_KEY only, temperature,
    max_tokens, seed, timeout, retries). Every tool call of a reply is executed in order and answered
    (the reference dropped all but the first, §15.26). A reply without a tool call gets one reminder; a
    second one in a row ends the episode unfinished. Transport failures left after the client's
    retries end the episode with `error` set (graded as a failure to recommend, never a crash).
    """

    def __init__(self, settings: LLMSettings):
        from openai import OpenAI  # imported here: oracle and null runs never pay for it

        self.settings = settings
        self._client = OpenAI(base_url=settings.base_url, api_key=settings.api_key or "not-needed",
                              timeout=settings.timeout, max_retries=settings.max_retries)

    def run(self, episode: Episode) -> dict[str, Any]:
        """Run one episode to its end; returns the trajectory record (model set, error on failure)."""
        import openai

        s = self.settings
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": SYSTEM_PROMPT.format(max_calls=episode.limits.max_tool_calls)},
            {"role": "user", "content": episode.task["user_query"]}]
        idle, error = 0, None
        for _ in range(episode.limits.max_tool_calls * 2):  # bounded even if the model never calls a tool
            if episode.done:
                break
            try:
                response = self._client.chat.completions.create(
                    model=s.model, messages=messages, tools=cast("list[ChatCompletionToolUnionParam]", TOOL_SCHEMAS),
                    temperature=s.temperature, max_tokens=s.max_tokens, seed=s.seed)
            except openai.OpenAIError as exc:
                error = f"{type(exc).__name__}: {str(exc)[:300]}"
                break
            if not response.choices:
                error = "the server returned no choices"
                break
            msg = response.choices[0].message
            # Only function tools are offered (TOOL_SCHEMAS), so every call is a function call.
            calls = cast("list[ChatCompletionMessageFunctionToolCall]", msg.tool_calls or [])
            if not calls:
                messages.append({"role": "assistant", "content": msg.content or ""})
                idle += 1
                if idle >= 2:
                    break
                messages.append({"role": "user", "content": NUDGE})
                continue
            idle = 0
            messages.append({"role": "assistant", "content": msg.content or "", "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": c.function.name, "arguments": c.function.arguments}}
                for c in calls]})
            for c in calls:
                result = ({"error": "the episode has ended"} if episode.done
                          else episode.call(c.function.name, c.function.arguments))
                messages.append({"role": "tool", "tool_call_id": c.id,
                                 "content": json.dumps(result, ensure_ascii=False)})
        return episode.record("llm", model=s.model, error=error)
