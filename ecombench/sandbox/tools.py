"""One episode of the shopping environment: the paper's ten tools over a catalog snapshot (reference §11.1).

An `Episode` holds one task's hidden state (persona, clarification slots, turn counter) and records
every call as a trajectory step. Differences from the reference, each fixing a §15 bug:
full-text search over title, features and details with true totals (§15.7, §15.25); alias-aware
attribute filtering with the checkers' own matching (§15.8, §15.25); `ask_user` through the slot
matcher validation uses (validation/slots.py), a too-long question costs no turn, revealed slots
are logged (§15.23), a question about more than three fields gets "one thing at a time", one about
a requirement the profile holds (or about a field that falls back to it, as slots fall back) gets the
script's profile reply (it points to the profile or states the value, never denies it), one about a
field the shopper keeps nothing hidden on says so for that field only (a guess at one of its values
gets the inviting reply), and anything else gets the
default reply inviting a more specific question (stages/replies.py); `calculate` evaluates arithmetic
through `ast`, never `exec` (§15.24); limits
are stated in the schemas and enforced with an error, never by silent truncation (§15.25); an
unknown recommended id is an error the agent can correct, not the end of the episode (§15.26).
"""

from __future__ import annotations

import ast
import json
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from ecombench.catalog.facts import page_values
from ecombench.sandbox.catalog import SandboxCatalog
from ecombench.stages.replies import DEFAULT_RESPONSE, ONE_AT_A_TIME, no_preference_reply
from ecombench.stages.reply_forms import POINTS, profile_name
from ecombench.text import contains_phrase
from ecombench.validation.slots import answer_question

PAGE_SIZE = 20
MAX_IDS = 20
REVIEW_HITS = 5
MAX_REVIEW_CHARS = 4000
MAX_DESCRIPTION_CHARS = 3000
MAX_EXPRESSION_CHARS = 300
TOO_LONG = "Sorry, that question is too long; please ask one short question."
NO_MORE_TURNS = "I've answered enough questions; please choose a product now."


@dataclass(frozen=True)
class EpisodeLimits:
    """Budgets of one episode (reference §11.3 and §11.2; the paper's prompt states 100 steps and 10 turns).

    Attributes:
        max_tool_calls: calls of any tool, counted whether they succeed or not; at the cap the
            episode ends unfinished.
        max_clarification_turns: `ask_user` turns answered (also bounded by the task's own
            `max_clarification_turns`).
        max_question_chars: longer questions are refused without using a turn.
    """

    max_tool_calls: int = 100
    max_clarification_turns: int = 10
    max_question_chars: int = 150


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}


_IDS = {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_IDS,
        "description": f"parent_asin values, at most {MAX_IDS}."}
_PAGE = {"type": "integer", "minimum": 0, "description": f"0-based page of {PAGE_SIZE} results."}

# The ten tools in the reference's order (§11.1), python_execute replaced by `calculate`.
TOOL_SCHEMAS: list[dict[str, Any]] = [
    _fn("search_products", "Full-text search of the catalog over titles, features and details. Products holding "
        f"every term come first, then products holding some, ranked by BM25. {PAGE_SIZE} per page; totals are exact.",
        {"query": {"type": "string", "minLength": 1}, "page": _PAGE}, ["query"]),
    _fn("filter_by_attribute", "Keep the given products whose detail attribute (any name for it: 'OS' = "
        "'Operating System', 'colour' = 'Color') contains the value (any spelling of it).",
        {"product_ids": _IDS, "attribute_name": {"type": "string", "minLength": 1},
         "attribute_value": {"type": "string", "minLength": 1}}, ["product_ids", "attribute_name", "attribute_value"]),
    _fn("get_product_details", "Title, category, store, price, features, description and details of one product, "
        "and what its page states (and denies) field by field.",
        {"product_id": {"type": "string"}}, ["product_id"]),
    _fn("get_review_content", f"Search one product's reviews; the {REVIEW_HITS} best matches (all terms first, "
        "then BM25). An empty query gives the most helpful reviews.",
        {"product_id": {"type": "string"}, "query": {"type": "string"}}, ["product_id", "query"]),
    _fn("get_product_review_stats", "Average star rating and number of ratings of up to "
        f"{MAX_IDS} products.", {"product_ids": _IDS}, ["product_ids"]),
    _fn("get_store_products", f"Products of one store (name case-insensitive), {PAGE_SIZE} per page, with the total.",
        {"store_name": {"type": "string", "minLength": 1}, "page": _PAGE}, ["store_name"]),
    _fn("get_user_profile", "The shopper's saved profile, including saved product requirements.", {}, []),
    _fn("ask_user", "Ask the shopper one short clarifying question (one topic). Limited turns.",
        {"question": {"type": "string", "minLength": 1}}, ["question"]),
    _fn("calculate", "Evaluate an arithmetic expression: numbers, + - * / // % **, parentheses, and "
        "min, max, abs, round, sum, floor, ceil, e.g. 'max(0, 59.99 - 10) * 0.9'.",
        {"expression": {"type": "string", "minLength": 1, "maxLength": MAX_EXPRESSION_CHARS}}, ["expression"]),
    _fn("recommend_product", "Recommend one product and end the episode.",
        {"product_id": {"type": "string"}, "reasoning": {"type": "string"}}, ["product_id", "reasoning"]),
]
TOOL_NAMES = [t["function"]["name"] for t in TOOL_SCHEMAS]
_VALIDATORS = {t["function"]["name"]: Draft202012Validator(t["function"]["parameters"]) for t in TOOL_SCHEMAS}


class EpisodeOver(RuntimeError):
    """A tool was called after the episode ended (recommendation made or tool-call budget used up)."""


class Episode:
    """One task's run in the sandbox: call tools by name, read the trajectory record at the end.

    Args:
        catalog: the catalog snapshot.
        task: a task record (schemas/task.schema.json); its persona and clarification script are
            the hidden state; rubrics and target are never shown by any tool.
        limits: budgets (EpisodeLimits).

    Attributes:
        done: True after a valid recommendation or when the tool-call budget is used up.
        finished: True only after a valid recommendation.
        predicted_product_id, reasoning: the recommendation.
        steps: [{step, tool, arguments, result}] in call order.
    """

    def __init__(self, catalog: SandboxCatalog, task: dict[str, Any], limits: EpisodeLimits = EpisodeLimits()):
        self.catalog, self.task, self.limits = catalog, task, limits
        script = task["clarification_script"]
        self.max_turns = min(script["max_clarification_turns"], limits.max_clarification_turns)
        self.turns = 0
        self.revealed: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []
        self.done = self.finished = False
        self.predicted_product_id: str | None = None
        self.reasoning = ""
        self.counts = {"ask_user": 0, "get_user_profile": 0}
        self._tools: dict[str, Callable[..., dict[str, Any]]] = {n: getattr(self, f"_{n}") for n in TOOL_NAMES}

    @property
    def tool_calls(self) -> int:
        """Tool calls made so far (one step each)."""
        return len(self.steps)

    def call(self, name: str, arguments: dict[str, Any] | str | None) -> dict[str, Any]:
        """Run one tool call and record it. Bad JSON, an unknown tool or bad arguments give {"error": ...}.

        Every call counts toward `max_tool_calls`; the call that reaches the cap still runs, then
        the episode is over.

        Raises:
            EpisodeOver: the episode had already ended.
        """
        if self.done:
            raise EpisodeOver("the episode has ended")
        args: Any = arguments if arguments is not None else {}
        result: dict[str, Any] | None = None
        if isinstance(args, str):
            try:
                args = json.loads(args or "{}")
            except json.JSONDecodeError as exc:
                result = {"error": f"arguments are not JSON ({exc.msg})"}
        if result is None:
            if name not in self._tools:
                result = {"error": f"unknown tool {name!r}; tools: {', '.join(TOOL_NAMES)}"}
            elif not isinstance(args, dict):
                result = {"error": "arguments must be a JSON object"}
            else:
                errors = sorted(_VALIDATORS[name].iter_errors(args), key=lambda e: list(e.path))
                result = ({"error": f"bad arguments for {name}: {errors[0].message}"} if errors
                          else self._tools[name](**args))
        self.steps.append({"step": len(self.steps) + 1, "tool": name, "arguments": args, "result": result})
        if name in self.counts:
            self.counts[name] += 1
        if self.tool_calls >= self.limits.max_tool_calls:
            self.done = True
        return result

    def record(self, agent: str, model: str | None = None, error: str | None = None) -> dict[str, Any]:
        """The trajectory record of this episode (one JSONL line; see sandbox/trajectory.py)."""
        return {"task_id": self.task["id"], "intent": self.task["intent"], "agent": agent, "model": model,
                "predicted_product_id": self.predicted_product_id, "reasoning": self.reasoning,
                "finished": self.finished, "tool_calls": self.tool_calls,
                "ask_user_calls": self.counts["ask_user"], "get_profile_calls": self.counts["get_user_profile"],
                "clarification_turns": self.turns, "revealed_slots": self.revealed,
                "clarification_slots": len(self.task["clarification_script"]["clarification_slots"]),
                "error": error, "steps": self.steps}

    # ---- the tools (called through `call`) ----------------------------------------------------

    def _brief(self, asin: str) -> dict[str, Any]:
        return {"product_id": asin, "title": self.catalog.rows[asin]["title"]}

    def _unknown(self, ids: list[str]) -> list[str]:
        return [i for i in ids if i not in self.catalog.rows]

    def _search_products(self, query: str, page: int = 0) -> dict[str, Any]:
        ids, total, total_all = self.catalog.search(query, page * PAGE_SIZE, PAGE_SIZE)
        return {"products": [self._brief(a) for a in ids], "page": page, "page_size": PAGE_SIZE,
                "total_found": total, "total_matching_all_terms": total_all}

    def _filter_by_attribute(self, product_ids: list[str], attribute_name: str, attribute_value: str) -> dict[str, Any]:
        table = self.catalog.table
        key = table.canonical_key(attribute_name)
        labels = {f.label.casefold(): f.name for f in table.detail_fields()}
        key = labels.get(attribute_name.strip().casefold(), key)
        spec = table.fields.get(key)
        spellings = table.spellings(attribute_value)
        keep = []
        for asin in product_ids:
            row = self.catalog.rows.get(asin)
            if row is None:
                continue
            if spec is not None and spec.kind == "detail":
                options = page_values(row, spec)
            else:  # a key the field table does not know: its raw values, unsplit
                options = [d["value"] for d in row.get("details") or [] if d["key"] == key and d["value"]]
            if any(contains_phrase(o, s) for o in options for s in spellings):
                keep.append(asin)
        out: dict[str, Any] = {"attribute": key, "value": attribute_value, "product_ids": keep}
        unknown = self._unknown(product_ids)
        if unknown:
            out["unknown_ids"] = unknown
        return out

    def _get_product_details(self, product_id: str) -> dict[str, Any]:
        row = self.catalog.rows.get(product_id)
        if row is None:
            return {"error": f"no product {product_id!r} in the catalog"}
        details: dict[str, list[str]] = {}
        for d in row.get("details") or []:
            details.setdefault(d["key"], []).append(d["value"])
        description = " ".join(row.get("description") or [])
        # What the whole page states, field by field (its product facts), and what it denies: the spec sheet an
        # attentive reader would draw from the title, bullets, description and details.
        states: dict[str, list[str]] = {}
        denies: dict[str, list[str]] = {}
        for f in row.get("facts") or []:
            (states if f["polarity"] == "stated" else denies).setdefault(f["field"], []).append(f["value"])
        return {"product": {"product_id": product_id, "title": row["title"], "main_category": row["main_category"],
                            "store": row["store"], "price": row["price"], "categories": row.get("categories") or [],
                            "features": row.get("features") or [], "description": description[:MAX_DESCRIPTION_CHARS],
                            "details": details, "page_states": states, "page_denies": denies}}

    def _get_review_content(self, product_id: str, query: str) -> dict[str, Any]:
        if product_id not in self.catalog.rows:
            return {"error": f"no product {product_id!r} in the catalog"}
        hits = self.catalog.search_reviews(product_id, query, REVIEW_HITS)
        if not hits:
            return {"reviews": [],
                    "message": "no review of this product matches" if self.catalog.reviews.get(product_id)
                    else "this product has no reviews in the catalog"}
        return {"reviews": [{"review_id": r["review_id"], "rating": r["rating"], "title": r["title"],
                             "text": r["text"][:MAX_REVIEW_CHARS]} for r in hits]}

    def _get_product_review_stats(self, product_ids: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"products": [{"product_id": a, "average_rating": self.catalog.rows[a]["average_rating"],
                             "rating_number": self.catalog.rows[a]["rating_number"],
                             "reviews_available": len(self.catalog.reviews.get(a, []))}
                            for a in product_ids if a in self.catalog.rows]}
        unknown = self._unknown(product_ids)
        if unknown:
            out["unknown_ids"] = unknown
        return out

    def _get_store_products(self, store_name: str, page: int = 0) -> dict[str, Any]:
        ids, total = self.catalog.store_products(store_name, page * PAGE_SIZE, PAGE_SIZE)
        return {"store": store_name, "products": [self._brief(a) for a in ids], "page": page,
                "page_size": PAGE_SIZE, "total_count": total}

    def _get_user_profile(self) -> dict[str, Any]:
        return {"profile": self.task["user_persona"]}

    def _ask_user(self, question: str) -> dict[str, Any]:
        if len(question) > self.limits.max_question_chars:
            return {"user_response": TOO_LONG, "turns_remaining": self.max_turns - self.turns,
                    "error": f"question longer than {self.limits.max_question_chars} characters (no turn used)"}
        if self.turns >= self.max_turns:
            return {"user_response": NO_MORE_TURNS, "turns_remaining": 0}
        self.turns += 1
        script = self.task["clarification_script"]
        slots = script["clarification_slots"]
        table = self.catalog.table
        answer = answer_question(question, slots, table)
        profile = self._profile_replies()
        opened_fields = {_field_name(s) for s in slots if s["slot_id"] in answer.opened}
        asked = []
        for name in answer.reading.fields:  # a field, else its first fallback the profile holds, as slots fall back
            spec = table.fields.get(name)
            related = (name, *(spec.fallback if spec else ()))
            hit = name if name in profile else None if set(related) & opened_fields else next(
                (f for f in related if f in profile), None)
            if hit is not None and hit not in asked:
                asked.append(hit)
        for group in (*answer.reading.topics, answer.reading.choices):
            # a topic, or a guess several fields' values share, is about its first field the profile holds, if no
            # slot answered
            hit = next((f for f in group if f in profile), None)
            if hit is not None and not set(group) & opened_fields and hit not in asked:
                asked.append(hit)
        if answer.opened:
            seen = {r["slot_id"] for r in self.revealed}
            self.revealed += [{"slot_id": s, "turn": self.turns} for s in answer.opened if s not in seen]
        if answer.opened or (asked and not answer.too_many):
            # slot replies, then the profile's: a question about a profile requirement is never denied
            reply = " ".join([s["user_response"] for s in slots if s["slot_id"] in answer.opened]
                             + [profile[f] for f in asked])
        elif answer.too_many:  # a list of field names gains nothing (validation/slots.py)
            reply = ONE_AT_A_TIME
        elif answer.reading.fields and not answer.reading.guess:  # no hidden requirement there: say so for those only
            reply = no_preference_reply([table.fields[f].label for f in answer.reading.fields])
        else:
            reply = script.get("default_response") or DEFAULT_RESPONSE
        return {"user_response": reply, "turns_remaining": self.max_turns - self.turns}

    def _profile_replies(self) -> dict[str, str]:
        """{canonical field: reply} for every requirement the profile holds.

        The script's `profile_replies`; for a task written without them, a reply pointing to the profile.
        """
        table = self.catalog.table
        script = self.task["clarification_script"]
        out = {_field_name(p): p["user_response"] for p in script.get("profile_replies") or []}
        by_key = {spec.persona_key: spec for spec in table.fields.values() if spec.persona_key}
        for key in (self.task.get("user_persona") or {}).get("product_requirements") or {}:
            spec = by_key.get(key.removeprefix("avoid_"))
            if spec is not None and spec.name not in out:
                out[spec.name] = POINTS[0].format(mine=profile_name(spec.name, spec.label))
        return out

    def _calculate(self, expression: str) -> dict[str, Any]:
        try:
            value = safe_eval(expression)
        except (ValueError, ZeroDivisionError, OverflowError) as exc:
            return {"error": f"cannot evaluate {expression!r}: {exc}"}
        return {"expression": expression, "result": value}

    def _recommend_product(self, product_id: str, reasoning: str) -> dict[str, Any]:
        if product_id not in self.catalog.rows:
            return {"error": f"no product {product_id!r} in the catalog; recommend a product_id a tool returned"}
        self.predicted_product_id, self.reasoning = product_id, reasoning
        self.done = self.finished = True
        return {"recommended_product": self._brief(product_id), "reasoning": reasoning}


def _field_name(item: dict[str, Any]) -> str:
    """The canonical field name of a slot or profile reply ("details.Material" -> "Material")."""
    return str(item.get("field") or "").removeprefix("details.")


# ---- safe arithmetic ----------------------------------------------------------------------------

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCS: dict[str, Callable[..., Any]] = {"min": min, "max": max, "abs": abs, "round": round, "sum": sum,
                                         "floor": math.floor, "ceil": math.ceil}
MAX_EXPONENT = 64
MAX_MAGNITUDE = 1e15


def safe_eval(expression: str) -> float | int:
    """Evaluate arithmetic only.

    Numbers, + - * / // % **, unary signs, parentheses, lists for sum/min/max, and the functions of
    _FUNCS. No names, attributes, subscripts or other calls.

    Raises:
        ValueError: anything else, an expression over MAX_EXPRESSION_CHARS, an exponent over
            MAX_EXPONENT or a result beyond MAX_MAGNITUDE (nothing can run for long).
        ZeroDivisionError: division by zero.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an expression ({exc.msg})") from None

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
                raise ValueError(f"exponent over {MAX_EXPONENT}")
            value = _BINOPS[type(node.op)](left, right)
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            value = _UNARY[type(node.op)](ev(node.operand))
        elif isinstance(node, (ast.List, ast.Tuple)):
            return [ev(e) for e in node.elts]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
              and not node.keywords):
            value = _FUNCS[node.func.id](*[ev(a) for a in node.args])
        else:
            raise ValueError(f"{type(node).__name__} is not allowed")
        if isinstance(value, complex) or (isinstance(value, (int, float)) and abs(value) > MAX_MAGNITUDE):
            raise ValueError("result out of range")
        return value

    result = ev(tree)
    if isinstance(result, list):
        raise ValueError("the result is a list, not a number")
    return round(result, 6) if isinstance(result, float) else result
