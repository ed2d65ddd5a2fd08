"""A scripted chat-completions server on 127.0.0.1 for the LLM fault tests.

It speaks the OpenAI chat-completions protocol. Each request takes the next behaviour from a
script (the last one repeats). A "good" reply writes a query from the requirement lines of the
prompt (stages/prompts/query.md), so it states every requirement exactly; other behaviours
return broken JSON, schema-violating JSON, 429 with Retry-After, 500, a hang past the client
timeout, a refusal, or a good query edited by a function (to leak or drop a requirement). A `Reply`
behaviour writes the whole assistant message from the request (tool calls for the sandbox's LLM agent).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any



class Reply:
    """A behaviour that writes the whole assistant message from the request body: `Reply(fn)` with
    fn(body) -> {"content": ..., "tool_calls": [...]} (tool-calling agents; see tests/sandbox)."""

    def __init__(self, fn: Callable[[dict[str, Any]], dict[str, Any]]):
        self.fn = fn


def tool_call(call_id: str, name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    """One OpenAI tool call of an assistant message (arguments as JSON text, or raw text to send as is)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


Behaviour = str | Callable[[str], str] | Reply


def good_query(prompt: str) -> str:
    """A query stating each REQUIREMENTS line of the prompt (cues as given), for the real product type."""
    real = prompt.split("Now the real one.", 1)[1]
    product = re.search(r"PRODUCT TYPE: <<<(.*?)>>>", real).group(1)
    lines = [line[2:] for line in real.splitlines() if line.startswith("- ")]
    reqs = [line.removeprefix("CUE: ") for line in lines if not line.startswith("it is ")]
    return f"I'm looking for {product} " + ", ".join(reqs) + "."


class ScriptedLLM:
    """Start with `with ScriptedLLM(["good"]) as server:`; `server.base_url` goes to the client."""

    def __init__(self, script: list[Behaviour], hang_seconds: float = 3.0):
        self.script = list(script)
        self.hang_seconds = hang_seconds
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer._lock:
                    outer.requests.append(body)
                    behaviour = outer.script.pop(0) if len(outer.script) > 1 else outer.script[0]
                outer._respond(self, body, behaviour)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _respond(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], behaviour: Behaviour) -> None:
        prompt = body["messages"][0]["content"]
        if behaviour == "rate_limited":
            return self._send(handler, 429, {"error": {"message": "slow down", "type": "rate_limit"}},
                              {"Retry-After": "0"})
        if behaviour == "server_error":
            return self._send(handler, 500, {"error": {"message": "boom", "type": "server_error"}})
        if behaviour == "hang":
            time.sleep(self.hang_seconds)
            return self._send(handler, 500, {"error": {"message": "too late"}})
        refusal = None
        if isinstance(behaviour, Reply):
            message = {"role": "assistant", "content": None, "refusal": None, **behaviour.fn(body)}
            return self._send(handler, 200, {
                "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        if behaviour == "good":
            content = json.dumps({"user_query": good_query(prompt)})
        elif behaviour == "invalid_json":
            content = '{"user_query": "I need a case'
        elif behaviour == "schema_violation":
            content = json.dumps({"query": good_query(prompt)})
        elif behaviour == "refusal":
            content, refusal = None, "I can't help with that."
        elif callable(behaviour):
            content = json.dumps({"user_query": behaviour(good_query(prompt))})
        else:
            raise ValueError(f"unknown behaviour {behaviour!r}")
        message = {"role": "assistant", "content": content, "refusal": refusal}
        self._send(handler, 200, {
            "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 20, "total_tokens": 0},
        })

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any],
              headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                handler.send_header(k, v)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass
