"""Reference agents: the scripted oracle, the null agent and an LLM agent over the OpenAI client.

The oracle knows a task's rubrics but acts on a requirement only once a tool has revealed it to
an honest agent: query rubrics at once, persona rubrics when `get_user_profile` shows them, a
clarification rubric when its canonical question (validation/slots.py, the question validation asks)
opens its slot. It then finds a product with the tools only — search, attribute filters, review
stats, details and reviews — judging what it sees with the rubric checkers, and recommends the
first product that satisfies everything. A task it cannot solve within the episode budget was
never solvable with the tools (the build's `oracle_failed`). The null agent recommends the first
search hit for the visible query: the floor a split must stay far above. The diligent agent
(`run_diligent`) knows no rubric: it reads the query and profile, asks natural questions about the
fields products of the query's type commonly carry, and judges candidates by what it was told; its
accuracy is the split's fairness figure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ecombench.catalog.facts import page_values
from ecombench.llm import LLMSettings
from ecombench.rubrics import as_rubrics, kind_of
from ecombench.rubrics.checkers import check, in_bound
from ecombench.rubrics.vouchers import apply_voucher
from ecombench.sandbox.catalog import search_terms
from ecombench.sandbox.tools import TOOL_SCHEMAS, Episode, EpisodeOver
from ecombench.schemas.models import Rubric, RubricType
from ecombench.stages.replies import reply_states
from ecombench.stages.verbalise import persona_entry
from ecombench.tables.fields import FieldTable
from ecombench.text import contains_phrase, tokens
from ecombench.validation.slots import canonical_question, read_question

if TYPE_CHECKING:  # annotations only: openai loads only for the LLM agent (LLMAgent)
    from openai.types.chat import (
        ChatCompletionMessageFunctionToolCall,
        ChatCompletionMessageParam,
        ChatCompletionToolUnionParam,
    )

AGENTS = ("oracle", "null", "llm", "diligent")


def _observed(details: dict[str, Any] | None, stats: dict[str, Any] | None,
              reviews: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A product as tools showed it, in the shape the rubric checkers read."""
    p = (details or {}).get("product", {})
    observed = {"parent_asin": p.get("product_id"), "title": p.get("title") or "", "price": p.get("price"),
                "average_rating": (stats or {}).get("average_rating"),
                "rating_number": (stats or {}).get("rating_number"),
                "details": [{"key": k, "value": v} for k, vs in (p.get("details") or {}).items() for v in vs],
                "reviews": reviews}
    if "page_states" in p:  # the page's facts, as get_product_details showed them
        observed["facts"] = [{"field": f, "value": v, "polarity": polarity}
                             for key, polarity in (("page_states", "stated"), ("page_denies", "contradicted"))
                             for f, vs in (p.get(key) or {}).items() for v in vs]
    return observed


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
# Added to a turn's results when this many tool calls or fewer are left: a small model does not count its
# calls, and an episode that runs out ends without a recommendation.
LAST_CALLS = 3
LAST_CALLS_NOTE = ("You have {left} tool call(s) left. Call recommend_product now with the product_id of your best "
                   "candidate so far.")


class LLMAgent:
    """An agent driven by a chat model with OpenAI tool calling, on any OpenAI-compatible server.

    Settings come from ecombench.llm.LLMSettings (base URL, model, key from OPENAI_API_KEY only, temperature,
    max_tokens, seed, timeout, retries, tool_choice, tool_result_role). Every tool call of a reply is
    executed in order and answered (the reference dropped all but the first, §15.26).

    Against llama-cpp-python's server (`--chat_format chatml-function-calling`, read in its
    llama_chat_format.chatml_function_calling): the tools are rendered into the system message only
    when the request's tool_choice is "auto" or names a function (so tool_choice is sent, "auto" by
    default; "required" fails its assertion), and the template renders only system, user and
    assistant messages, so a `role: tool` result never reaches the model. With
    tool_result_role="user" each turn's results go back as one user message naming each tool and
    call id ("Result of search_products (call_1): {...}"); "tool" keeps OpenAI's form.

    A reply without a tool call gets one reminder; a second one in a row ends the episode unfinished.
    When LAST_CALLS or fewer tool calls are left, a user message says how many and asks for the
    recommendation (a small model does not count its calls).
    Transport failures left after the client's retries end the episode with `error` set (graded as a
    failure to recommend, never a crash).
    """

    def __init__(self, settings: LLMSettings):
        # deferred: openai loads only for the LLM agent
        from openai import OpenAI  # imported here: oracle and null runs never pay for it

        self.settings = settings
        self._client = OpenAI(base_url=settings.base_url, api_key=settings.api_key or "not-needed",
                              timeout=settings.timeout, max_retries=settings.max_retries)

    def run(self, episode: Episode) -> dict[str, Any]:
        """Run one episode to its end; returns the trajectory record (model set, error on failure)."""
        # deferred: openai loads only for the LLM agent
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
                extra: dict[str, Any] = {"tool_choice": s.tool_choice} if s.tool_choice else {}
                response = self._client.chat.completions.create(
                    model=s.model, messages=messages, tools=cast("list[ChatCompletionToolUnionParam]", TOOL_SCHEMAS),
                    temperature=s.temperature, max_tokens=s.max_tokens, seed=s.seed, **extra)
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
            results = []
            for c in calls:
                result = ({"error": "the episode has ended"} if episode.done
                          else episode.call(c.function.name, c.function.arguments))
                results.append((c, compact_result(result, s.tool_result_chars)))
            messages.extend(tool_result_messages(results, s.tool_result_role))
            left = episode.limits.max_tool_calls - episode.tool_calls
            if not episode.done and 0 < left <= LAST_CALLS:
                messages.append({"role": "user", "content": LAST_CALLS_NOTE.format(left=left)})
        return episode.record("llm", model=s.model, error=error)


def compact_result(result: Any, limit: int = 0) -> str:
    """A tool result as JSON text of at most `limit` characters (0: the whole result), keeping its shape.

    Long strings (a product's description, review texts) are cut first, to 400, 160 and then 60
    characters with "…", then lists to their first 10, 5 and 3 items and, last, an object's fields to its
    first 12 (a note says how many were left out); what is still too long is cut at `limit` with a
    closing note. Ids, numbers and field names are never shortened, so the model can still name any
    product it was shown.

    >>> text = compact_result({"description": "x" * 1000, "product_id": "B0TEST"}, 300)
    >>> len(text) <= 300, json.loads(text)["product_id"], json.loads(text)["description"][-3:]
    (True, 'B0TEST', 'xx…')
    """
    text = json.dumps(result, ensure_ascii=False)
    if not limit or len(text) <= limit:
        return text
    for chars, items in ((400, None), (160, None), (60, None), (60, 10), (60, 5), (40, 3)):
        text = json.dumps(_shortened(result, chars, items), ensure_ascii=False)
        if len(text) <= limit:
            return text
    note = f" … (cut: {len(text)} characters in all)"
    return text[:max(0, limit - len(note))] + note


def _shortened(value: Any, chars: int, items: int | None) -> Any:
    if isinstance(value, str):
        return value if len(value) <= chars else value[:chars] + "…"
    if isinstance(value, dict):
        keys = list(value)
        if items is not None and items <= 3 and len(keys) > 4 * items:  # the last step: a product's many details
            keys = keys[:4 * items]
        out = {k: value[k] if k in ("product_id", "parent_asin") else _shortened(value[k], chars, items) for k in keys}
        if len(keys) < len(value):
            out["…"] = f"{len(value) - len(keys)} more fields left out"
        return out
    if isinstance(value, list):
        kept = value if items is None or len(value) <= items else value[:items]
        shown = [_shortened(v, chars, items) for v in kept]
        return shown + [f"({len(value) - len(kept)} more left out)"] if len(kept) < len(value) else shown
    return value


def tool_result_messages(results: list[tuple[Any, str]], role: str) -> list[ChatCompletionMessageParam]:
    """The messages returning one turn's tool results, in the shape `role` names.

    Args:
        results: (tool call with .id and .function.name, result as JSON text) in call order.
        role: "tool" (one OpenAI `role: tool` message per call, with its call id) or "user" (one user
            message holding every result, each named by tool and call id: for servers whose chat
            template drops `role: tool`, such as llama-cpp-python's chatml-function-calling).
    """
    if role == "tool":
        return [{"role": "tool", "tool_call_id": c.id, "content": text} for c, text in results]
    body = "\n".join(f"Result of {c.function.name} ({c.id}): {text}" for c, text in results)
    return [{"role": "user", "content": body + "\n" + NUDGE}]


# ---- the diligent reference agent -----------------------------------------------------------------

DILIGENT_MAX_QUESTIONS = 10
DILIGENT_MIN_SHARE = 0.05  # ask about a detail field carried by at least this share of the query's top hits
_BOUND = re.compile(r"(at least|no fewer than|no more than|more than|less than|under|at most|up to)\s+"
                    r"(\$?)([\d,]+(?:\.\d+)?)\s*"
                    r"(stars?|ratings?|reviews?)?")
# template-v2's wordings (stages/verbalise_v2.py): "4 stars or higher", "$25 or under", "reviews (at least 100)"
_BOUND_AFTER = re.compile(r"(?<!orders of )(?<!order of )(?<![\d$.,])(\$?)([\d,]+(?:\.\d+)?)\s*"
                          r"(stars?|ratings?|reviews?)?\s+or "
                          r"(more|higher|better|above|under|less|lower)\b(?:\s+(stars?|ratings?|reviews?))?")
_COUNT_BEFORE = re.compile(r"(?:reviews|ratings) \(at least ([\d,]+)\)")
# "4 stars minimum", "4 stars at minimum"
_MINIMUM = re.compile(r"(?<![\d$.,])([\d,]+(?:\.\d+)?)\s*(stars?|ratings?|reviews?)\s+(?:at )?minimum\b")
_AND_UP = re.compile(r"(?<![\d$.,])([\d,]+(?:\.\d+)?)\s*(stars?|ratings?|reviews?)\s+and up\b")  # "4.5 stars and up"
_NEGATIVE = re.compile(r"\b[Ii]ts ([a-z][a-z /()-]*?) must not be (.+?)(?:\.(?:\s|$)|$)")
_NEGATIVE_V2 = (re.compile(r"\b[Aa]ny ([a-z][a-z /()-]*?) but (.+?)(?: is fine)?\.(?:\s|$)"),
                re.compile(r"\bI don't want (.+?) as the ([a-z][a-z /()-]*?)\.(?:\s|$)"))
_COLOURS_V2 = re.compile(r"\b(?:[Nn]othing|[Nn]ot have it|[Nn]ot|anything) in (.+?) colours\b")
_EXCEPT = re.compile(r"^Any (.+?) is fine except (.+?)\.$")
# template-v2's opinion sentences name who says it (reviews, buyers, owners, people) and quote what they say
_OPINIONS = re.compile(r'\b(?:[Rr]eviews?|[Rr]eviewers|[Bb]uyers|[Oo]wners|[Pp]eople)\b[^"]*?'
                       r'((?:"[^"]+"(?:,? and |, )?)+)')
_COUPON = re.compile(r"(?:\$([\d,]+(?:\.\d+)?) off|([\d.]+)% off(?: \((?:at most|up to|capped at) "
                     r"\$([\d,]+(?:\.\d+)?)\))?) (?:orders of|any order of|an order of) \$([\d,]+(?:\.\d+)?) or more")
_PAY = re.compile(r"at most \$([\d,]+(?:\.\d+)?) (?:after|once|with) the coupons")


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def numeric_bounds(text: str, field_hint: str | None = None) -> dict[str, dict[str, Any]]:
    """Price, rating and rating-count bounds a shopper's sentence states.

    "It must cost no more than $20 and be rated at least 4 stars" -> {"price": {"max": 20.0, ...},
    "average_rating": {"min": 4.0, ...}}.

    The field is told by the unit ($, stars, ratings); a bare number takes `field_hint`.
    """
    out: dict[str, dict[str, Any]] = {}

    def field_of(dollar: str, unit: str) -> str | None:
        return ("price" if dollar else "average_rating" if unit.startswith("star")
                else "rating_number" if unit.startswith(("rating", "review")) else field_hint)

    for word, dollar, number, unit in _BOUND.findall(text):
        field = field_of(dollar, unit)
        if field is None:
            continue
        bound = out.setdefault(field, {})
        if word in ("at least", "no fewer than", "more than"):
            bound.update(min=_number(number), min_inclusive=word != "more than")
        else:
            bound.update(max=_number(number), max_inclusive=word in ("no more than", "at most", "up to"))
    for dollar, number, unit, word, unit_after in _BOUND_AFTER.findall(text):
        field = field_of(dollar, unit or unit_after)
        if field is None:
            continue
        if word in ("more", "higher", "better", "above"):
            out.setdefault(field, {}).update(min=_number(number), min_inclusive=True)
        else:
            out.setdefault(field, {}).update(max=_number(number), max_inclusive=True)
    for number in _COUNT_BEFORE.findall(text):
        out.setdefault("rating_number", {}).update(min=_number(number), min_inclusive=True)
    for number, unit in _AND_UP.findall(text) + _MINIMUM.findall(text):
        field = field_of("", unit)
        if field is not None:
            out.setdefault(field, {}).update(min=_number(number), min_inclusive=True)
    return out


def voucher_budget(text: str) -> dict[str, Any] | None:
    """The coupon budget a query states, as {"max_total", "voucher"} for ecombench.rubrics.vouchers.apply_voucher.

    For example "I have a tiered shop coupon: $1 off orders of $4 or more, ... and I can pay at most $7
    after the coupons."
    """
    pay = _PAY.search(text)
    if not pay:
        return None
    coupons = [{"discount_type": "fixed" if fixed else "percentage", "face_value": _number(fixed) if fixed else None,
                "percent": float(pct) if pct else None, "cap": _number(cap) if cap else None,
                "threshold": _number(threshold)} for fixed, pct, cap, threshold in _COUPON.findall(text)]
    scenario = "tiered" if "tiered" in text else "stacked" if "what is left" in text else "simple"
    return {"max_total": _number(pay.group(1)), "voucher": {"scenario": scenario, "coupons": coupons}}


def _split_values(text: str) -> list[str]:
    return [v.strip(" .") for v in re.split(r",\s*|\s+or\s+", text) if v.strip(" .")]


@dataclass
class _Learned:
    """What the diligent agent knows of the shopper's wishes, from the query, the profile and the answers."""

    bounds: dict[str, dict[str, Any]] = field(default_factory=dict)
    budget: dict[str, Any] | None = None
    excluded: list[tuple[str, list[str]]] = field(default_factory=list)  # (field name, values)
    wanted: list[tuple[str, str]] = field(default_factory=list)  # (field name, value) from the profile
    answers: list[tuple[tuple[str, ...], str]] = field(default_factory=list)  # (fields it may be about, reply)
    opinions: list[str] = field(default_factory=list)


def _field_by_label(table: FieldTable) -> dict[str, str]:
    return {spec.label.casefold(): spec.name for spec in table.fields.values()}


def _read_query(query: str, table: FieldTable, learned: _Learned) -> None:
    learned.bounds.update(numeric_bounds(query))
    learned.budget = voucher_budget(query)
    if learned.budget:
        learned.bounds.pop("price", None)  # "pay at most $7 after the coupons" is the budget, not a price bound
    labels = _field_by_label(table)
    found = _NEGATIVE.findall(query) + _NEGATIVE_V2[0].findall(query)
    found += [(label, values) for values, label in _NEGATIVE_V2[1].findall(query)]
    found += [("colour", values) for values in _COLOURS_V2.findall(query)]
    for label, values in found:
        if label.casefold() in labels:
            learned.excluded.append((labels[label.casefold()], _split_values(values)))
    m = _OPINIONS.search(query)
    if m:
        learned.opinions = re.findall(r'"([^"]+)"', m.group(1))


def _read_profile(requirements: dict[str, Any], table: FieldTable, learned: _Learned) -> None:
    by_key = {spec.persona_key: spec for spec in table.fields.values()}
    for key, value in requirements.items():
        negative = key.startswith("avoid_")
        spec = by_key.get(key.removeprefix("avoid_"))
        if spec is None:
            continue
        if spec.kind == "numeric":
            learned.bounds.update(numeric_bounds(str(value), spec.name))
        elif negative:
            learned.excluded.append((spec.name, [str(v) for v in (value if isinstance(value, list) else [value])]))
        else:
            learned.wanted.append((spec.name, str(value)))


def _read_answer(reply: str, fields: tuple[str, ...], table: FieldTable, learned: _Learned) -> None:
    for sentence in re.split(r"(?<=[.!?])\s+", reply):
        m = _EXCEPT.match(sentence)
        if m and m.group(1).casefold() in _field_by_label(table):
            learned.excluded.append((_field_by_label(table)[m.group(1).casefold()], _split_values(m.group(2))))
            continue
        bounds = numeric_bounds(sentence, next((f for f in fields if table.fields[f].kind == "numeric"), None))
        if bounds:
            learned.bounds.update(bounds)
        else:
            learned.answers.append((fields, sentence))


def _questions_to_ask(episode: Episode, table: FieldTable, hits: list[str], learned: _Learned) -> list[str]:
    """Fields worth a question.

    The clarification-capable fields the query's top search hits commonly carry (catalog statistics),
    most common first, after the price and rating questions; fields the query or profile already speaks
    of are skipped.
    """
    task = episode.task
    spoken = set(read_question(task["user_query"], table).fields) | {f for f, _ in learned.wanted}
    spoken |= {f for f, _ in learned.excluded} | set(learned.bounds)
    counts: dict[str, int] = {}
    for asin in hits:
        for name in {d["key"] for d in episode.catalog.rows[asin].get("details") or []}:
            counts[name] = counts.get(name, 0) + 1
    order = [f for f in ("rating_number", "price", "average_rating") if not (f == "price" and learned.budget)]
    details = sorted((n for n, c in counts.items() if c >= DILIGENT_MIN_SHARE * len(hits) and n in table.fields
                      and "clarification" in table.fields[n].sources), key=lambda n: (-counts[n], n))
    return [f for f in order + details if f not in spoken][:DILIGENT_MAX_QUESTIONS]


def _options(product: dict[str, Any], name: str, table: FieldTable) -> list[str]:

    spec = table.fields[name]
    options = page_values(product, spec) if spec.kind == "detail" else []
    if name == "Brand" and product.get("store"):
        options.append(product["store"])
    return options


def _judge(product: dict[str, Any], stats: dict[str, Any], learned: _Learned, query: str,
           table: FieldTable) -> tuple[bool, tuple[int, ...]]:
    """(passes the hard limits, score).

    Limits are the numeric bounds, the budget and the excluded values; the score counts answers whose
    words state one of the product's values, profile wishes it meets, and words of the query its values
    repeat.
    """
    values: dict[str, Any] = {"price": product.get("price"), "average_rating": stats.get("average_rating"),
              "rating_number": stats.get("rating_number")}
    for name, bound in learned.bounds.items():
        if values.get(name) is None or not in_bound(float(values[name]), bound):
            return False, ()
    if learned.budget:
        price = product.get("price")
        if price is None or apply_voucher(learned.budget["voucher"], price) > learned.budget["max_total"]:
            return False, ()
    for name, excluded in learned.excluded:
        if any(contains_phrase(o, x) for o in _options(product, name, table) for x in excluded):
            return False, ()
    answered, answer_words = 0, 0
    for fields, reply in learned.answers:
        best = max((len(tokens(o)) for f in fields if table.fields[f].kind == "detail"
                    for o in _options(product, f, table) if reply_states(reply, o, table.fields[f].rubric_field)),
                   default=0)
        answered += best > 0
        answer_words += best
    wanted = sum(any(contains_phrase(o, v) for o in _options(product, name, table)) for name, v in learned.wanted)
    stated = sum(len(tokens(d["value"])) for d in product.get("details") or []
                 if d["value"] and len(d["value"]) <= 40 and contains_phrase(query, d["value"]))
    return True, (answered, wanted, answer_words, stated)


def run_diligent(episode: Episode, table: FieldTable) -> dict[str, Any]:
    """The diligent reference agent: scripted, with no knowledge of rubrics, targets or slots.

    It reads the query (bounds, excluded values, coupon budget and quoted review opinions, parsed from
    the words) and the profile; searches the query and, from the catalog rows of the top hits, takes
    which fields products of this type commonly carry; asks one natural question per such field (the
    field table's own question, at most DILIGENT_MAX_QUESTIONS turns; price and ratings first), keeping
    each answer's words; then searches again with what it learned, filters by review statistics, reads
    product details to judge each candidate against every limit and wish, checks the reviews of the best
    candidates when the query cites opinions, and recommends the best. Its accuracy is the split's
    fairness figure: what an agent that asks ordinary questions can reach.

    Returns:
        The trajectory record (agent "diligent").
    """
    task, learned = episode.task, _Learned()
    try:
        _read_query(task["user_query"], table, learned)
        profile = episode.call("get_user_profile", {}).get("profile", {})
        _read_profile(profile.get("product_requirements") or {}, table, learned)
        first = episode.call("search_products", {"query": task["user_query"]})
        hits = [p["product_id"] for p in first.get("products", [])]
        for name in _questions_to_ask(episode, table, hits, learned):
            spec = table.fields[name]
            reply = episode.call("ask_user", {"question": spec.questions[0] if spec.questions
                                              else canonical_question(spec.label)}).get("user_response", "")
            if reply and "?" not in reply:  # a reply asking back (default, one at a time, no preference) says nothing
                _read_answer(reply, (name, *spec.fallback), table, learned)
        # Search again with the answers' and the profile's words, then page the plain query.
        words = " ".join([task["user_query"]] + [r for _, r in learned.answers] + [v for _, v in learned.wanted])
        ranked: dict[str, int] = {}
        for query, pages in ((words, 3), (task["user_query"], 2)):
            for page in range(pages):
                found = episode.call("search_products", {"query": query, "page": page}).get("products", [])
                for p in found:
                    ranked.setdefault(p["product_id"], len(ranked))
        pool = sorted(ranked, key=ranked.__getitem__)
        stats: dict[str, dict[str, Any]] = {}
        for i in range(0, len(pool), 20):
            for s in episode.call("get_product_review_stats", {"product_ids": pool[i:i + 20]}).get("products", []):
                stats[s["product_id"]] = s
        scored: list[tuple[tuple[int, ...], int, str]] = []
        for asin in pool:
            if episode.limits.max_tool_calls - episode.tool_calls <= 1 + len(learned.opinions):
                break
            s = stats.get(asin, {})
            if any(f in learned.bounds and (s.get(f) is None or not _in(s[f], learned.bounds[f]))
                   for f in ("average_rating", "rating_number")):
                continue
            if learned.opinions and not s.get("reviews_available"):
                continue
            # Reviews before details when the query cites opinions: one search rules most products out.
            if learned.opinions and not all(
                    any(contains_phrase(f"{r['title']} . {r['text']}", o) for r in episode.call(
                        "get_review_content", {"product_id": asin, "query": o}).get("reviews", []))
                    for o in learned.opinions):
                continue
            if episode.done:
                break
            details = episode.call("get_product_details", {"product_id": asin}).get("product")
            if not details:
                continue
            # What the whole page states and denies, field by field (the tool's page_states / page_denies), not
            # only the details table: a colour or a feature said in the title or bullets counts as the grader counts it.
            facts = ([{"field": k, "value": v, "polarity": "stated"} for k, vs in details.get("page_states", {}).items()
                      for v in vs]
                     + [{"field": k, "value": v, "polarity": "contradicted"}
                        for k, vs in details.get("page_denies", {}).items() for v in vs])
            product = {**details, "parent_asin": asin, "facts": facts,
                       "details": [{"key": k, "value": v} for k, vs in details["details"].items() for v in vs]}
            ok, score = _judge(product, s, learned, task["user_query"], table)
            if ok:
                scored.append((score, -ranked[asin], asin))
        scored.sort(reverse=True)
        choice = scored[0][2] if scored else (pool[0] if pool else None)
        if choice is not None and not episode.done:
            episode.call("recommend_product", {"product_id": choice, "reasoning": "meets the limits of the query, "
                                               "profile and answers, and matches the most of what was asked for"})
    except EpisodeOver:
        pass
    record = episode.record("diligent")
    record["learned_answers"] = [r for _, r in learned.answers]
    return record


def _in(value: Any, bound: dict[str, Any]) -> bool:

    return in_bound(float(value), bound)


# Ablated oracles: the oracle with one hidden source taken away. Each measures, with the agents'
# own tools, that the source matters: one that never asks should fail a task whose clarification narrows
# the choice, one that never reads the profile a task whose persona does.
ABLATED_ORACLES = ("oracle_no_ask", "oracle_no_profile")


def ablated_known_rubrics(episode: Episode, table: FieldTable, skip: str) -> tuple[list[dict[str, Any]],
                                                                                 list[dict[str, Any]]]:
    """`known_rubrics` without one source.

    skip="clarification" never calls ask_user, skip="persona" never calls get_user_profile. The skipped
    source's rubrics are returned as unknown.
    """
    task = episode.task
    profile = ({} if skip == "persona" else
               episode.call("get_user_profile", {}).get("profile", {}).get("product_requirements", {}))
    slot_of = {rid: s["slot_id"] for s in task["clarification_script"]["clarification_slots"]
               for rid in s["linked_rubric_ids"]}
    known: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = []
    for r in task["rubrics"]:
        if r["info_source"] == skip:
            unknown.append(r)
        elif r["info_source"] == "persona":
            key, value = persona_entry(r, table)
            (known if profile.get(key) == value else unknown).append(r)
        elif r["info_source"] == "clarification":
            if episode.done:
                unknown.append(r)
                continue
            if not any(s["slot_id"] == slot_of.get(r["id"]) for s in episode.revealed):
                episode.call("ask_user", {"question": canonical_question(table.by_rubric_field(r["field"]).label)})
            revealed = any(s["slot_id"] == slot_of.get(r["id"]) for s in episode.revealed)
            (known if revealed else unknown).append(r)
        else:
            known.append(r)
    return known, unknown


def run_ablated_oracle(episode: Episode, table: FieldTable, name: str) -> dict[str, Any]:
    """The oracle that never asks (name "oracle_no_ask") or never reads the profile ("oracle_no_profile").

    Same search as `run_oracle` over the rubrics it can learn; it recommends the first product satisfying
    those, so it is right only when the skipped source was not needed to single out the target (or by luck
    of the search order). Returns the trajectory record, `unrevealed` listing what it never learnt.
    """
    skip = {"oracle_no_ask": "clarification", "oracle_no_profile": "persona"}[name]
    try:
        known, unknown = ablated_known_rubrics(episode, table, skip)
        _oracle_search(episode, as_rubrics(known))
    except EpisodeOver:
        unknown = [r for r in episode.task["rubrics"] if r["info_source"] == skip]
    record = episode.record(name)
    record["unrevealed"] = [r["id"] for r in unknown]
    return record
