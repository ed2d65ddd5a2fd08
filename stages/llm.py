"""The LLM client: one OpenAI-compatible chat client, structured, cached and fault-tolerant.

Works with OpenAI, vLLM, Ollama or a llama.cpp server by base URL. Every reply must match a JSON
Schema (schemas/llm/*.schema.json): the schema goes in `response_format` (json_schema, or
json_object / plain text for servers without it) and is always checked on return with
jsonschema; an invalid reply gets one repair turn that shows the errors. Timeouts, connection
errors, 429 (Retry-After honoured) and 5xx are retried with exponential backoff and jitter.
Replies are cached by sha256 of (model, messages, parameters, schema), so a rerun makes no call
and yields the same text (DESIGN "LLM"). The API key is never logged or stored.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from stages.errors import SettingError
from stages.hashing import canonical_json, sha256_hex

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}


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
        values = {"base_url": os.environ.get("OPENAI_BASE_URL", ""), "api_key": os.environ.get("OPENAI_API_KEY", ""),
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


class LLMClient:
    """Chat-completions client with schema-checked JSON replies, a reply cache, retries and a concurrency bound.

    Thread-safe: one client serves every batch of a build. `stats` counts calls made, cache hits,
    retries, repairs and tokens (prompt/completion), per purpose, for the manifest.
    """

    def __init__(self, settings: LLMSettings, sleep=time.sleep):
        from openai import OpenAI  # imported here: template builds never pay for it

        self.settings = settings
        self._client = OpenAI(base_url=settings.base_url, api_key=settings.api_key or "not-needed",
                              timeout=settings.timeout, max_retries=0)
        self._gate = threading.BoundedSemaphore(settings.concurrency)
        self._lock = threading.Lock()
        self._sleep = sleep
        self.stats: Counter = Counter()

    def _count(self, purpose: str | None = None, **counts: int) -> None:
        """Add to the totals and, with a purpose, to "<purpose>.<counter>" (manifest usage per part)."""
        with self._lock:
            self.stats.update(counts)
            if purpose:
                self.stats.update({f"{purpose}.{k}": v for k, v in counts.items()})

    USAGE_KEYS = ("calls", "cache_hits", "requests", "retries", "repairs", "prompt_tokens", "completion_tokens")

    def usage(self) -> dict[str, Any]:
        """Totals of USAGE_KEYS (zeros included) and `by_part`: the same counters per purpose that made a
        request (query, persona, slots, opinions, judge), for the manifest."""
        with self._lock:
            stats = dict(self.stats)
        by_part: dict[str, dict[str, int]] = {}
        for k in stats:
            if "." in k:
                by_part.setdefault(k.split(".", 1)[0], {})
        return ({k: stats.get(k, 0) for k in self.USAGE_KEYS}
                | {"by_part": {p: {k: stats.get(f"{p}.{k}", 0) for k in self.USAGE_KEYS} for p in sorted(by_part)}})

    def _cache_path(self, key: str) -> Path | None:
        if not self.settings.cache_dir:
            return None
        return Path(self.settings.cache_dir) / key[:2] / f"{key}.json"

    def _request(self, messages: list[dict[str, str]], schema_name: str, schema: dict[str, Any],
                 purpose: str | None = None) -> dict[str, Any]:
        """One reply for `messages`, from the cache or the server (with retries). Returns {"text", "refusal", "usage"}."""
        s = self.settings
        params = {"model": s.model, "temperature": s.temperature, "max_tokens": s.max_tokens, "seed": s.seed,
                  "response_format": s.response_format}
        key = sha256_hex(canonical_json({"messages": messages, "params": params, "schema": schema}))
        path = self._cache_path(key)
        if path is not None and path.is_file():
            self._count(purpose, cache_hits=1)
            return json.loads(path.read_text(encoding="utf-8"))
        kwargs: dict[str, Any] = {"model": s.model, "messages": messages, "temperature": s.temperature,
                                  "max_tokens": s.max_tokens, "seed": s.seed}
        if s.response_format == "json_schema":
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": schema_name, "schema": schema, "strict": True}}
        elif s.response_format == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        elif s.response_format == "json_object_schema":  # llama-cpp-python's own form (json_schema gives HTTP 500)
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        reply = self._with_retries(kwargs, purpose)
        if path is not None and reply["refusal"] is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{threading.get_ident()}")
            tmp.write_text(json.dumps(reply, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)  # whole files only: an interrupted run leaves no half entry
        return reply

    def _with_retries(self, kwargs: dict[str, Any], purpose: str | None = None) -> dict[str, Any]:
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
                  purpose: str = "verbalise") -> dict[str, Any]:
        """A reply parsed as JSON and valid against `schema`.

        Args:
            messages: chat messages (instructions in the user message suit small base models).
            schema_name: a name for the schema (response_format).
            schema: a Draft 2020-12 JSON Schema the reply must match.
            purpose: label for the per-purpose counters.

        Returns:
            The parsed reply.

        Raises:
            LLMError: llm_error, llm_refusal, or llm_invalid_output (after one repair turn that
                showed the validation errors); evidence keeps the raw reply.
        """
        validator = _validator(canonical_json(schema))
        if self.settings.response_format == "text":
            messages = messages[:-1] + [{"role": messages[-1]["role"], "content": messages[-1]["content"]
                                         + "\nReply with JSON only, matching this schema: " + json.dumps(schema)}]
        self._count(purpose, requests=1)
        reply = self._request(messages, schema_name, schema, purpose)
        for repair in (False, True):
            if reply.get("refusal"):
                raise LLMError("llm_refusal", "the model refused to answer", {"refusal": reply["refusal"]})
            obj, errors = _parse(reply["text"], validator)
            if not errors:
                return obj
            if repair:
                break
            self._count(purpose, repairs=1)
            messages = messages + [{"role": "assistant", "content": reply["text"]},
                                   {"role": "user", "content": "That reply is not valid: " + "; ".join(errors[:5])
                                    + ". Reply again with JSON only, matching the schema."}]
            reply = self._request(messages, schema_name, schema, purpose)
        raise LLMError("llm_invalid_output", f"reply does not match schema {schema_name}: {errors[0]}",
                       {"raw": reply["text"][:2000], "errors": errors[:10]})


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
    errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(obj)]
    return (obj, []) if not errors else (None, errors)
