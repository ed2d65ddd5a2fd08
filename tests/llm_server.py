"""A scripted chat-completions server on 127.0.0.1 for the LLM fault tests.

It speaks the OpenAI chat-completions protocol. Each request takes the next behaviour from a
script (the last one repeats): one list for every request, or {part: list} per part (query,
persona, slots, opinions, judge, shopper; a part not named answers "good"). The part is read from the
reply schema's name in response_format, else from the prompt. A "good" reply does what the
prompt asks from the prompt alone: a query stating each requirement line with its surfaces,
the first listed option of each persona field, slots from the suggested words with the value
in the reply, opinions that are real clauses of the shown reviews, a judge passing every
rubric, a shopper (the opt-in LLM user) revealing the slots whose topic the question names.
Other behaviours return broken JSON, schema-violating JSON, 429 with Retry-After, 500, a hang
past the client timeout, a refusal, or a good reply edited by a function (for the query the
function edits the query text; for other parts it gets and returns the reply object).
A `Reply` behaviour writes the whole assistant message from the request (tool calls for the
sandbox's LLM agent). GET /v1/models lists `server.models` (one llama-cpp-python-like entry unless a
test sets others, e.g. to swap the weights behind an alias; `models_status` other than 200 answers
that status instead).

Run as a program (`python -m tests.llm_server --port 8088` from the repository root) it serves "good"
replies until interrupted and prints its base URL first: docs/crs-formats.md tries the LLM shopper on it.
"""

from __future__ import annotations

import argparse
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


def _requirements(prompt: str) -> tuple[str, list[tuple[str, str]]]:
    real = prompt.split("Now the real one.", 1)[1]
    product = re.search(r"PRODUCT TYPE: <<<(.*?)>>>", real).group(1)
    lines = [re.match(r"- (r\d+): (.*?)(?: \[must contain: .*\])?$", line).groups()
             for line in real.splitlines() if line.startswith("- ")]
    return product, lines


def good_query(prompt: str) -> str:
    """A query stating each REQUIREMENTS line of the prompt (cues as given), for the real product type."""
    product, lines = _requirements(prompt)
    reqs = [text.removeprefix("CUE: ") for _, text in lines if not text.startswith("it is ")]
    return f"I'm looking for {product} " + ", ".join(reqs) + "."


def good_surfaces(prompt: str) -> list[dict[str, str]]:
    """The query_surfaces of good_query: the product type for the entity line, each requirement's own text."""
    product, lines = _requirements(prompt)
    return [{"rubric_id": rid, "query_surface": product if text.startswith("it is ") else text.removeprefix("CUE: ")}
            for rid, text in lines]


def good_persona(prompt: str) -> dict[str, Any]:
    """The first listed option of each field (the first two hobbies); household and occupation from the lines
    of the chosen age range."""
    real = prompt.split("Now the real one.", 1)[1]
    reply: dict[str, Any] = {}
    age = None
    for line in real.splitlines():
        m = re.match(r"- (\w+)\.(\w+)(?: for (\S+))?: (.*)", line)
        if not m or (m.group(3) is not None and m.group(3) != age):
            continue
        options = m.group(4).split(" | ")
        reply.setdefault(m.group(1), {})[m.group(2)] = options[:2] if m.group(2) == "hobbies" else options[0]
        age = reply["demographics"].get("age_range") if "demographics" in reply else age
    return reply


def good_slots(prompt: str) -> dict[str, Any]:
    """One slot per requirement line: the suggested words as keywords, the value in the reply."""
    real = prompt.split("Now the real one.", 1)[1]
    slots = []
    for rid, value, words in re.findall(r"- (r\d+): field .*?; value <<<(.*?)>>>; suggested words: (.*?)"
                                        r"(?:; a way to say it: <<<.*>>>)?$", real, re.MULTILINE):
        slots.append({"rubric_id": rid, "trigger_keywords": words.split(", ")[:10],
                      "user_response": f"It should be {value}."})
    return {"slots": slots}


def good_opinions(prompt: str) -> dict[str, Any]:
    """Opinion clauses (stages.reviews.opinion_clauses) of the shown reviews, one per review, as many as asked."""
    from ecombench.stages.reviews import opinion_clauses
    from ecombench.text import keywords

    n = int(re.search(r"Find (\d+) different opinions", prompt).group(1))
    real = prompt.split("Now the real one.", 1)[1]
    out: list[dict[str, Any]] = []
    reviews = re.findall(r"<<<REVIEW id=(\S+) rating=\S+\n(.*?)>>>", real, re.DOTALL)
    for per_review in (1, 3):  # one per review first, as ecombench.stages.reviews does; more when reviews are few
        for rid, body in reviews:
            taken = sum(rid in o["review_ids"] for o in out)
            for clause in opinion_clauses(body):
                if len(out) == n or taken >= per_review:
                    break
                if not any(keywords(clause) <= keywords(o["phrase"]) or keywords(o["phrase"]) <= keywords(clause)
                           for o in out):
                    out.append({"phrase": clause, "review_ids": [rid]})
                    taken += 1
    return {"opinions": out or [{"phrase": "no opinion found", "review_ids": ["none"]}]}


def good_verdict(prompt: str) -> dict[str, Any]:
    """A pass with every rubric of the task supported."""
    task = json.loads(prompt.rsplit("<<<TASK\n", 1)[1].split("\nTASK>>>", 1)[0])
    return {"passed": True, "issues": [],
            "rubric_results": [{"rubric_id": r["id"], "supported": True, "reason": "stated"} for r in task["rubrics"]]}


def good_shopper(prompt: str) -> dict[str, Any]:
    """The LLM shopper's reply: the "you would say" words of every slot whose topic the question names."""
    question = re.search(r"The assistant asks: <<<(.*)>>>", prompt, re.DOTALL).group(1)
    slots = re.findall(r'- (\S+): topic "(.*?)"; you would say: "(.*)"', prompt)
    asked = [(sid, say) for sid, topic, say in slots if topic.lower() in question.lower()]
    reply = " ".join(say for _, say in asked) or "No strong preference there; ask me about something specific."
    return {"reply": reply, "revealed_slot_ids": [sid for sid, _ in asked]}


def whole_reply(fn: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Mark a query behaviour that edits the whole good reply (query and query_surfaces), not only the query text."""
    fn.whole_reply = True
    return fn


GOOD = {"persona": good_persona, "slots": good_slots, "opinions": good_opinions, "judge": good_verdict,
        "shopper": good_shopper}
SCHEMA_PART = {"query_plan": "query", "persona_background": "persona", "clarification_slots": "slots",
               "review_opinions": "opinions", "judge_verdict": "judge", "QueryPlan": "query",
               "PersonaBackground": "persona", "ClarificationSlots": "slots", "ReviewOpinions": "opinions",
               "JudgeVerdict": "judge", "shopper_reply": "shopper"}


def part_of(body: dict[str, Any]) -> str:
    """Which part a request is for: the reply schema's name (or title), else the prompt's wording."""
    fmt = body.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name") or (fmt.get("schema") or {}).get("title")
    if name in SCHEMA_PART:
        return SCHEMA_PART[name]
    prompt = body["messages"][0]["content"]
    for marker, part in (("role-playing an online shopper", "shopper"),
                         ("<<<TASK", "judge"), ("<<<REVIEW", "opinions"), ("clarification slot", "slots"),
                         ("background of one online shopper", "persona")):
        if marker in prompt:
            return part
    return "query"


class ScriptedLLM:
    """Start with `with ScriptedLLM(["good"]) as server:`; `server.base_url` goes to the client."""

    def __init__(self, script: list[Behaviour] | dict[str, list[Behaviour]], hang_seconds: float = 3.0,
                 port: int = 0):
        self.scripts = ({part: list(b) for part, b in script.items()} if isinstance(script, dict)
                        else {None: list(script)})
        self.hang_seconds = hang_seconds
        self.requests: list[dict[str, Any]] = []
        self.models: list[dict[str, Any]] = [{"id": "scripted", "object": "model", "owned_by": "me",
                                              "permissions": []}]
        self.models_status = 200
        self.model_queries = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):  # noqa: N802 - http.server's name
                with outer._lock:
                    outer.model_queries += 1
                if self.path.rstrip("/").endswith("/models") and outer.models_status == 200:
                    return outer._send(self, 200, {"object": "list", "data": outer.models})
                outer._send(self, outer.models_status if outer.models_status != 200 else 404,
                            {"error": {"message": "not found"}})

            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer._lock:
                    outer.requests.append(body)
                    queue = outer.scripts.get(None) or outer.scripts.get(part_of(body)) or ["good"]
                    behaviour = queue.pop(0) if len(queue) > 1 else queue[0]
                outer._respond(self, body, behaviour)

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
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
        part = part_of(body)
        if part == "shopper":
            good = good_shopper(prompt)
        elif "Now the real one." not in prompt and "<<<TASK" not in prompt:
            good = {}  # a plain prompt (client tests): only a function behaviour answers it
        elif part == "query":
            good = {"user_query": good_query(prompt), "query_surfaces": good_surfaces(prompt)}
        else:
            good = GOOD[part](prompt)
        if behaviour == "good":
            content = json.dumps(good)
        elif behaviour == "invalid_json":
            content = '{"user_query": "I need a case'
        elif behaviour == "schema_violation":
            content = json.dumps({"query": good_query(prompt)} if part == "query" else {"unexpected": True})
        elif behaviour == "refusal":
            content, refusal = None, "I can't help with that."
        elif callable(behaviour) and part == "query" and good and not getattr(behaviour, "whole_reply", False):
            edited = behaviour(good["user_query"])
            content = json.dumps(edited if isinstance(edited, dict) else good | {"user_query": edited})
        elif callable(behaviour):
            content = json.dumps(behaviour(good))
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


def main(argv: list[str] | None = None) -> None:
    """Serve "good" replies on 127.0.0.1 until interrupted; the first line printed is the base URL."""
    parser = argparse.ArgumentParser(description="A scripted OpenAI-compatible chat server for trying ecombench "
                                                 "without a model (answers every part 'good').")
    parser.add_argument("--port", type=int, default=8088, help="port on 127.0.0.1 (0: any free one)")
    args = parser.parse_args(argv)
    server = ScriptedLLM(["good"], port=args.port)
    print(server.base_url, flush=True)
    try:
        server._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._server.server_close()


if __name__ == "__main__":
    main()
