"""The LLM client: one OpenAI-compatible chat client, structured, cached and fault-tolerant.

Works with OpenAI, vLLM, Ollama or a llama.cpp server by base URL. Every reply must match a JSON
Schema (schemas/llm/*.schema.json): the schema goes in `response_format` (json_schema, or
json_object / plain text for servers without it) and is always checked on return with
jsonschema; an invalid reply gets one repair turn that shows the errors. Timeouts, connection
errors, 429 (Retry-After honoured) and 5xx are retried with exponential backoff and jitter.
Replies are cached by sha256 of (model, messages, parameters, schema), so a rerun makes no call
and yields the same text (DESIGN "LLM"). "Model" there is what the server reports about the model
behind the alias (GET /models: its id and, where offered, its file, owner or metadata) plus an
optional fingerprint the user sets (the GGUF's sha256), queried once per client: swapping the
weights behind one alias is a cache miss, not a silent reuse of the old model's replies.
The API key is never logged or stored.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from ecombench.errors import SettingError
from ecombench.hashing import canonical_json, sha256_hex
from ecombench.io import write_atomic

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
# Fields of a GET /models entry that name the weights behind an alias: llama.cpp's llama-server reports
# `meta` (parameter count, size, vocabulary), vLLM `root` (the model path) and `max_model_len`, OpenAI and
# Ollama `owned_by`. Timestamps (`created`: llama-server sets it to the time of the request) and
# permission lists are left out, so the identity of an unchanged server is the same on every run.
MODEL_IDENTITY_KEYS = ("id", "owned_by", "root", "parent", "max_model_len", "meta", "path", "model_path", "file",
                       "filename", "digest")
# A check run on a schema-valid reply: it returns the problems to quote in the repair turn ([] when none).
ReplyCheck = Callable[[Any], list[str]]


LLM_OPTION_HELP = {
    "model": "model id sent to the server (else ECOMBENCH_LLM_MODEL)",
    "base_url": "OpenAI-compatible server URL (else OPENAI_BASE_URL); the key comes only from OPENAI_API_KEY",
    "temperature": "sampling temperature",
    "max_tokens": "tokens per reply",
    "timeout": "seconds per request",
}


class LLMError(Exception):
    """A call that did not yield a valid reply.

    Attributes:
        reason: stable reason code: llm_error (transport or server kept failing),
            llm_invalid_output (no valid JSON matching the schema after one repair), llm_refusal.
        evidence: what happened (status codes, raw reply, validation errors) — never the key.
    """

    def __init__(self, reason: str, message: str, evidence: dict[str, Any] | None = None):
        super().__init__(message)
        self.reason = reason
        self.evidence = evidence or {}


@dataclass(frozen=True)
class LLMSettings:
    """Where and how to call the model. From the CLI, a config, or OPENAI_BASE_URL / OPENAI_API_KEY.

    Attributes:
        base_url: OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1.
        model: model id sent with every request.
        api_key: the key; kept out of repr, logs, manifests and the cache key.
        temperature, max_tokens, seed: generation parameters (part of the cache key).
        timeout: seconds per request.
        max_retries: retries after the first try for retryable failures.
        backoff: base seconds of the exponential backoff (doubled per retry, plus up to 50% jitter).
        concurrency: requests in flight at once.
        response_format: "json_schema" (OpenAI, vLLM, Ollama), "json_object_schema" (llama.cpp server:
            json_object with its own `schema` key), "json_object", or "text" (schema in the prompt).
        cache_dir: reply cache folder (content-addressed files); None disables caching.
        model_fingerprint: what identifies the weights when the server cannot say (llama-cpp-python's
            GET /models reports only the alias): e.g. the GGUF file's sha256. Part of the cache key.
        tool_choice: the LLM agent's `tool_choice` ("auto"; None sends none). llama-cpp-python's
            chatml-function-calling handler renders the tools into the prompt only when it is "auto" or
            names a function, and rejects "required".
        tool_result_role: how the LLM agent returns a tool's result: "tool" (OpenAI: a `role: tool`
            message with the call id) or "user" (a user message naming the tool and call id; for
            llama-cpp-python's chatml-function-calling, whose template renders only system, user and
            assistant messages and so drops `role: tool` ones).
        tool_result_chars: the most characters of one tool result the LLM agent sends back (0: all);
            longer ones are compacted by ecombench.sandbox.agents.compact_result, so a small context window (a
            4,096-token llama.cpp server) holds a whole episode.
    """

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int = 0
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0
    concurrency: int = 2
    response_format: str = "json_schema"
    cache_dir: str | None = None
    model_fingerprint: str | None = None
    tool_choice: str | None = "auto"
    tool_result_role: str = "tool"
    tool_result_chars: int = 0

    def __post_init__(self) -> None:
        """Reject an unknown tool_result_role (one line naming the setting)."""
        if self.tool_result_role not in ("tool", "user"):
            raise SettingError(f"tool_result_role {self.tool_result_role!r}: use tool or user")

    @classmethod
    def from_env(cls, needed_by: str = "the LLM verbaliser and the judge",
                 options: tuple[str, str] = ("--base-url", "--model"), **overrides: Any) -> LLMSettings:
        """Settings from OPENAI_BASE_URL, OPENAI_API_KEY and ECOMBENCH_LLM_MODEL, then `overrides` (None ignored).

        Args:
            needed_by: what needs the server, as the error names it ("the LLM agent").
            options: the command's options for the base URL and the model, as the error names them.
            **overrides: LLMSettings fields; None leaves the environment's value or the default.

        Raises:
            SettingError: no base URL or model given (one line naming the options and variables).
        """
        values: dict[str, Any] = {"base_url": os.environ.get("OPENAI_BASE_URL", ""),
                                  "api_key": os.environ.get("OPENAI_API_KEY", ""),
                                  "model": os.environ.get("ECOMBENCH_LLM_MODEL", "")}
        values.update({k: v for k, v in overrides.items() if v is not None})
        if not values["base_url"] or not values["model"]:
            need = "need" if " and " in needed_by else "needs"
            raise SettingError(f"{needed_by} {need} {options[0]} (or OPENAI_BASE_URL) and {options[1]} "
                               "(or ECOMBENCH_LLM_MODEL)")
        return cls(**values)

    def public(self) -> dict[str, Any]:
        """The settings for a manifest: everything but the key."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("api_key", "cache_dir")}


# What each use of a model asks for: the verbaliser and the judges take LLMSettings' defaults, an agent writes tool
# calls over whole episodes, the simulated shopper short replies. The CLI's options and BuildConfig's fields read
# their defaults here and their help from LLM_OPTION_HELP, so one setting means one thing everywhere.
_DEFAULTS = {"temperature": LLMSettings.temperature, "max_tokens": LLMSettings.max_tokens,
             "timeout": LLMSettings.timeout}
ROLE_DEFAULTS: dict[str, dict[str, Any]] = {
    "verbaliser": _DEFAULTS,
    "judge": _DEFAULTS,
    "agent": {**_DEFAULTS, "max_tokens": 1024, "timeout": 120.0},
    "shopper": {**_DEFAULTS, "max_tokens": 300, "timeout": 120.0},
}


class LLMClient:
    """Chat-completions client with schema-checked JSON replies, a reply cache, retries and a concurrency bound.

    Thread-safe: one client serves every batch of a build. `stats` counts calls made, cache hits,
    retries, repairs and tokens (prompt/completion), per purpose, for the manifest.
    """

    def __init__(self, settings: LLMSettings, sleep=time.sleep):
        # deferred: openai and httpx load only when a model is called (template builds never do)
        from openai import OpenAI  # imported here: template builds never pay for it

        self.settings = settings
        self._client = OpenAI(base_url=settings.base_url, api_key=settings.api_key or "not-needed",
                              timeout=settings.timeout, max_retries=0)
        self._gate = threading.BoundedSemaphore(settings.concurrency)
        self._lock = threading.Lock()
        self._sleep = sleep
        self.stats: Counter = Counter()
        self._served: dict[str, Any] | None = None

    def _count(self, purpose: str | None = None, **counts: int) -> None:
        """Add to the totals and, with a purpose, to "<purpose>.<counter>" (manifest usage per part)."""
        with self._lock:
            self.stats.update(counts)
            if purpose:
                self.stats.update({f"{purpose}.{k}": v for k, v in counts.items()})

    USAGE_KEYS = ("calls", "cache_hits", "requests", "retries", "repairs", "prompt_tokens", "completion_tokens")

    def served_model(self) -> dict[str, Any]:
        """What identifies the model behind `settings.model`: asked of the server once, then remembered.

        GET <base_url>/models; the entry whose id is the alias (or the only entry: llama-cpp-python
        serves its one model under any name) gives MODEL_IDENTITY_KEYS. Connection errors and 5xx are
        retried like chat calls; a server without the endpoint (404, 405, 501) or without a matching
        entry gives {"alias", "listed": False}. `settings.model_fingerprint`, when set, is added.

        Returns:
            {"alias": ..., "listed": bool, <identity keys the server offered>, ["fingerprint"]}: part of
            every reply's cache key and of the split manifest.
        """
        with self._lock:
            if self._served is not None:
                return self._served
        identity = {"alias": self.settings.model, **self._models_entry()}
        if self.settings.model_fingerprint:
            identity["fingerprint"] = self.settings.model_fingerprint
        with self._lock:
            self._served = self._served or identity
            return self._served

    def _models_entry(self) -> dict[str, Any]:
        # deferred: openai and httpx load only when a model is called (template builds never do)
        import httpx

        s = self.settings
        url = s.base_url.rstrip("/") + "/models"
        headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
        failures: list[str] = []
        for attempt in range(s.max_retries + 1):
            try:
                response = httpx.get(url, headers=headers, timeout=s.timeout)
            except httpx.HTTPError as exc:
                failures.append(type(exc).__name__)
            else:
                self._count(model_queries=1)
                if response.status_code == 200:
                    try:
                        data = response.json().get("data") or []
                    except (ValueError, AttributeError):
                        return {"listed": False, "error": "GET /models: not a model list"}
                    entries = [m for m in data if isinstance(m, dict)]
                    entry = next((m for m in entries if m.get("id") == s.model), None)
                    if entry is None and len(entries) == 1:
                        entry = entries[0]
                    if entry is None:
                        return {"listed": False, "models": sorted(str(m.get("id")) for m in entries)[:20]}
                    return {"listed": True} | {k: entry[k] for k in MODEL_IDENTITY_KEYS if k in entry}
                if response.status_code not in RETRYABLE_STATUS:
                    return {"listed": False, "error": f"GET /models: HTTP {response.status_code}"}
                failures.append(f"HTTP {response.status_code}")
            if attempt < s.max_retries:
                self._sleep(s.backoff * (2 ** attempt))
        raise LLMError("llm_error", f"GET /models: no reply after {len(failures)} tries ({', '.join(failures)})",
                       {"failures": failures})

    def usage(self) -> dict[str, Any]:
        """Totals of USAGE_KEYS (zeros included), GET /models queries (`model_queries`) and `by_part`, for the manifest.

        `by_part` holds the same counters per purpose that made a request (query, persona, slots,
        opinions, judge).
        """
        with self._lock:
            stats = dict(self.stats)
        by_part: dict[str, dict[str, int]] = {}
        for k in stats:
            if "." in k:
                by_part.setdefault(k.split(".", 1)[0], {})
        return ({k: stats.get(k, 0) for k in self.USAGE_KEYS} | {"model_queries": stats.get("model_queries", 0)}
                | {"by_part": {p: {k: stats.get(f"{p}.{k}", 0) for k in self.USAGE_KEYS} for p in sorted(by_part)}})

    def _cache_path(self, key: str) -> Path | None:
        if not self.settings.cache_dir:
            return None
        return Path(self.settings.cache_dir) / key[:2] / f"{key}.json"

    def _request(self, messages: list[dict[str, str]], schema_name: str, schema: dict[str, Any],
                 purpose: str | None = None, max_tokens: int | None = None) -> dict[str, Any]:
        """One reply for `messages`, from the cache or the server (with retries).

        Args:
            messages: the chat messages.
            schema_name: the schema's name (response_format).
            schema: the reply schema (response_format and the cache key).
            purpose: label for the per-purpose counters.
            max_tokens: this call's budget; None is `settings.max_tokens`.

        Returns:
            {"text", "refusal", "finish_reason"}.
        """
        s = self.settings
        budget = max_tokens or s.max_tokens
        params = {"model": self.served_model(), "temperature": s.temperature, "max_tokens": budget, "seed": s.seed,
                  "response_format": s.response_format}
        key = sha256_hex(canonical_json({"messages": messages, "params": params, "schema": schema}))
        path = self._cache_path(key)
        if path is not None and path.is_file():
            self._count(purpose, cache_hits=1)
            return json.loads(path.read_text(encoding="utf-8"))
        kwargs: dict[str, Any] = {"model": s.model, "messages": messages, "temperature": s.temperature,
                                  "max_tokens": budget, "seed": s.seed}
        if s.response_format == "json_schema":
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": schema_name, "schema": schema, "strict": True}}
        elif s.response_format == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        elif s.response_format == "json_object_schema":  # llama-cpp-python's own form (json_schema gives HTTP 500)
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        reply = self._with_retries(kwargs, purpose)
        if path is not None and reply["refusal"] is None:
            write_atomic(path, json.dumps(reply, ensure_ascii=False))  # an interrupted run leaves no half entry
        return reply

    def _with_retries(self, kwargs: dict[str, Any], purpose: str | None = None) -> dict[str, Any]:
        # deferred: openai and httpx load only when a model is called (template builds never do)
        import openai

        failures: list[str] = []
        for attempt in range(self.settings.max_retries + 1):
            wait = self.settings.backoff * (2 ** attempt) * (1 + random.random() / 2)
            try:
                with self._gate:
                    self._count(purpose, calls=1)
                    response = self._client.chat.completions.create(**kwargs)
                if not response.choices:
                    raise LLMError("llm_error", "the server returned no choices")
                message = response.choices[0].message
                usage = response.usage
                self._count(purpose, prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                            completion_tokens=getattr(usage, "completion_tokens", 0) or 0)
                return {"text": message.content or "", "refusal": getattr(message, "refusal", None),
                        "finish_reason": response.choices[0].finish_reason}
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                failures.append(type(exc).__name__)
            except openai.APIStatusError as exc:
                failures.append(f"HTTP {exc.status_code}")
                if exc.status_code not in RETRYABLE_STATUS:
                    raise LLMError("llm_error", f"the server refused the request (HTTP {exc.status_code})",
                                   {"failures": failures}) from None
                retry_after = exc.response.headers.get("retry-after") if exc.response is not None else None
                if retry_after and re.fullmatch(r"\d+(\.\d+)?", retry_after.strip()):
                    wait = max(wait, float(retry_after))
            if attempt < self.settings.max_retries:
                self._count(purpose, retries=1)
                self._sleep(wait)
        raise LLMError("llm_error", f"no reply after {len(failures)} tries ({', '.join(failures)})",
                       {"failures": failures})

    def call_json(self, messages: list[dict[str, str]], schema_name: str, schema: dict[str, Any],
                  purpose: str = "verbalise", check: ReplyCheck | None = None,
                  max_tokens: int | None = None) -> dict[str, Any]:
        """A reply parsed as JSON and valid against `schema`, with one repair turn that quotes what failed.

        Args:
            messages: chat messages (instructions in the user message suit small base models).
            schema_name: a name for the schema (response_format).
            schema: a Draft 2020-12 JSON Schema the reply must match (a llama.cpp server turns it into a
                grammar, so enums there are options the model cannot leave).
            purpose: label for the per-purpose counters.
            check: problems of a schema-valid reply (e.g. a required phrase missing from the text); they
                get the repair turn too, but a reply that still has them after it is returned: the
                stage checks decide with their own reason codes.
            max_tokens: this call's budget (the judge's grows with its rubrics); None is the setting.

        Returns:
            The parsed reply (the repaired one when the repair fixed it).

        Raises:
            LLMError: llm_error, llm_refusal, or llm_invalid_output (no schema-valid reply after the
                repair turn, which quoted each failed check and said when the reply was cut off at
                max_tokens); evidence keeps the raw reply and the errors.
        """
        validator = _validator(canonical_json(schema))
        if self.settings.response_format == "text":
            messages = messages[:-1] + [{"role": messages[-1]["role"], "content": messages[-1]["content"]
                                         + "\nReply with JSON only, matching this schema: " + json.dumps(schema)}]
        self._count(purpose, requests=1)
        reply = self._request(messages, schema_name, schema, purpose, max_tokens)
        usable: Any = None  # a schema-valid reply whose only faults are `check`'s
        errors: list[str] = []
        for repair in (False, True):
            if reply.get("refusal"):
                raise LLMError("llm_refusal", "the model refused to answer", {"refusal": reply["refusal"]})
            obj, errors = _parse(reply["text"], validator)
            problems = check(obj) if not errors and check is not None else []
            if not errors and not problems:
                return obj
            if not errors:
                usable = obj
            if repair:
                break
            self._count(purpose, repairs=1)
            messages = messages + [{"role": "assistant", "content": reply["text"]},
                                   {"role": "user", "content": repair_message(errors or problems,
                                                                              reply.get("finish_reason"),
                                                                              max_tokens or self.settings.max_tokens)}]
            reply = self._request(messages, schema_name, schema, purpose, max_tokens)
        if usable is not None:
            return usable
        raise LLMError("llm_invalid_output", f"reply does not match schema {schema_name}: {errors[0]}",
                       {"raw": reply["text"][:2000], "errors": errors[:10],
                        "finish_reason": reply.get("finish_reason")})


def repair_message(failures: list[str], finish_reason: str | None, max_tokens: int) -> str:
    """The repair turn: each failed check quoted, a cut-off reply named, what to do.

    Small models repeat a reply they are only told is "invalid"; quoting the check ("$.demographics.household:
    'family with teenagers | lives alone' is not one of [...]") tells them what to change.
    """
    lines = ["Your reply failed these checks:"] + [f"- {f}" for f in failures[:5]]
    if finish_reason == "length":
        lines.append(f"- it was cut off after {max_tokens} tokens: write shorter values so the JSON closes")
    lines.append("Reply again with the whole JSON only, matching the schema; change what the checks name.")
    return "\n".join(lines)


_VALIDATORS: dict[str, Draft202012Validator] = {}


def _validator(schema_json: str) -> Draft202012Validator:
    """One validator per schema (building one per call is ~25x slower, stack-notes §4)."""
    if schema_json not in _VALIDATORS:
        _VALIDATORS[schema_json] = Draft202012Validator(json.loads(schema_json))
    return _VALIDATORS[schema_json]


def _parse(text: str, validator: Draft202012Validator) -> tuple[Any, list[str]]:
    """(object, []) for a valid reply, else (None, errors). Accepts a JSON object wrapped in a code fence."""
    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1)
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        return None, [f"not JSON ({exc.msg} at character {exc.pos})"]
    errors = [_error_text(e) for e in validator.iter_errors(obj)]
    return (obj, []) if not errors else (None, errors)


def _error_text(error: Any) -> str:
    """One validation error as "<path>: <message>".

    Under anyOf/oneOf (the persona's per-age options) the branch error that went deepest, so the text
    names the field and its options, not "is not valid under any of the given schemas".
    """
    while error.validator in ("anyOf", "oneOf") and error.context:
        branches: dict[Any, list[Any]] = {}
        for e in error.context:
            branches.setdefault(e.relative_schema_path[0], []).append(e)
        error = min(branches.values(), key=len)[0]  # the branch the reply came closest to
    return f"{error.json_path}: {error.message}"
