"""The opt-in LLM shopper against the scripted local chat-completions server (tests/llm_server.py, 127.0.0.1)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ecombench.errors import ServerError
from ecombench.flows.cli import app
from ecombench.llm import LLMClient, LLMSettings
from ecombench.sandbox.agents import run_oracle
from ecombench.sandbox.grader import grade
from ecombench.sandbox.llm_user import LLMShopper, ShopperEpisode
from ecombench.sandbox.trajectory import run_episodes
from tests.llm_server import Reply, ScriptedLLM


def _prompt_parts(body):
    prompt = body["messages"][0]["content"]
    question = re.search(r"The assistant asks: <<<(.*)>>>", prompt).group(1)
    slots = re.findall(r'- (s\d+): topic "(.*?)"; you would say: "(.*)"', prompt)
    return question, slots


def _good(body):
    """Reveal exactly the slots whose topic the question names, in the slot's own words."""
    question, slots = _prompt_parts(body)
    asked = [(sid, say) for sid, topic, say in slots if topic.lower() in question.lower()]
    reply = " ".join(say for _, say in asked) or "No strong preference there; ask me about something specific."
    return {"content": json.dumps({"reply": reply, "revealed_slot_ids": [sid for sid, _ in asked]})}


def _leak(body):
    """Answer the question, then blurt out another slot's value without claiming it."""
    question, slots = _prompt_parts(body)
    asked = [(sid, say) for sid, topic, say in slots if topic.lower() in question.lower()]
    other = next(say for sid, _, say in slots if sid not in {a for a, _ in asked})
    return {"content": json.dumps({"reply": " ".join(s for _, s in asked) + " Also, " + other,
                                   "revealed_slot_ids": [sid for sid, _ in asked]})}


def _shopper(server, tmp_path, table):
    settings = LLMSettings(base_url=server.base_url, model="shopper-test", max_retries=0, backoff=0.0,
                           cache_dir=str(tmp_path / "cache"))
    return LLMShopper(LLMClient(settings), table)


def _two_slot_tasks(built_tasks):
    tasks = [t for t in sorted(built_tasks, key=lambda t: t["id"])
             if len(t["clarification_script"]["clarification_slots"]) == 2]
    assert len(tasks) >= 2, "the real build has fewer than two tasks with two clarification slots"
    return tasks[:2]


def test_good_leaking_and_failing_replies(sandbox_catalog, built_tasks, tmp_path):
    tasks = _two_slot_tasks(built_tasks)
    # The oracle asks one question per slot: task 1 gets a good and a leaking reply, task 2 an invalid reply
    # (broken JSON, and again after the repair turn) and a good reply.
    with ScriptedLLM([Reply(_good), Reply(_leak), "invalid_json", "invalid_json", Reply(_good)]) as server:
        shopper = _shopper(server, tmp_path, sandbox_catalog.table)
        records = run_episodes(tasks, sandbox_catalog, lambda ep: run_oracle(ep, sandbox_catalog.table),
                               episode=lambda c, t, lim: ShopperEpisode(c, t, lim, shopper))
    turns = [t for r in records for t in r["shopper_turns"]]
    assert all(r["user"] == "llm" and r["user_model"] == "shopper-test" for r in records)
    assert [(t["answered_by"], t["fallback"]) for t in turns] == [("llm", None), ("scripted", "leak"),
                                                                  ("scripted", "call_failed"), ("llm", None)]
    # The leaking reply never reached the agent: it got the scripted reply, which opens only the asked slot.
    leak = turns[1]
    assert leak["leaked_slots"] and leak["reply"] != leak["llm_reply"] and leak["revealed"] == leak["scripted_slots"]
    replies = [s["result"]["user_response"] for s in records[0]["steps"] if s["tool"] == "ask_user"]
    assert leak["llm_reply"] not in replies and replies[1] == leak["reply"]
    assert turns[2]["error"].startswith("llm_invalid_output")
    # Good replies and fallbacks reveal what the oracle asked for, so it still solves both tasks.
    graded, metrics = grade(tasks, records, sandbox_catalog)
    assert [g["status"] for g in graded] == ["correct", "correct"]
    s = metrics["shopper"]
    assert s["turns"] == 4 and s["fallbacks"] == {"leak": 1, "call_failed": 1}
    assert s["answered_by_llm"] == 2 and s["agreement"] == 1.0


def test_replies_are_cached_so_a_rerun_is_identical(sandbox_catalog, built_tasks, tmp_path):
    tasks = sorted(built_tasks, key=lambda t: t["id"])[:5]
    runs = []
    with ScriptedLLM([Reply(_good)]) as server:
        for _ in range(2):
            shopper = _shopper(server, tmp_path, sandbox_catalog.table)
            runs.append(run_episodes(tasks, sandbox_catalog, lambda ep: run_oracle(ep, sandbox_catalog.table),
                                     episode=lambda c, t, lim, shopper=shopper: ShopperEpisode(c, t, lim, shopper)))
            if len(runs) == 1:
                calls = len(server.requests)
        assert len(server.requests) == calls > 0  # the second run made no call
    assert runs[0] == runs[1]


def test_run_agent_with_the_llm_user_then_grade_reports_agreement(full_build, tmp_path):
    runner = CliRunner()
    out = tmp_path / "oracle-llmuser.trajectories.jsonl"
    with ScriptedLLM([Reply(_good)]) as server:
        res = runner.invoke(app, ["run-agent", str(full_build.path), "--agent", "oracle", "--limit", "6", "--out",
                                  str(out), "--user", "llm", "--user-model", "shopper-test", "--user-base-url",
                                  server.base_url])
        assert res.exit_code == 0, res.output
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(r["user"] == "llm" for r in records)
    graded = runner.invoke(app, ["grade", str(out), "--split", str(full_build.path)])
    assert graded.exit_code == 0, graded.output
    metrics = json.loads((tmp_path / "oracle-llmuser.metrics.json").read_text(encoding="utf-8"))
    assert metrics["shopper"]["turns"] == sum(len(r["shopper_turns"]) for r in records) > 0
    assert metrics["shopper"]["agreement"] is not None and "LLM shopper" in graded.output
    bad = runner.invoke(app, ["run-agent", str(full_build.path), "--user", "llm"],
                        env={"OPENAI_BASE_URL": "", "ECOMBENCH_LLM_MODEL": ""})
    assert bad.exit_code == 1 and "--user-base-url" in bad.output


def test_a_server_that_stops_answering_stops_the_run_naming_its_url(sandbox_catalog, built_tasks, tmp_path):
    tasks = _two_slot_tasks(built_tasks)
    with ScriptedLLM(["server_error"]) as server:  # lists its models, then fails every chat call
        shopper = _shopper(server, tmp_path, sandbox_catalog.table)
        shopper.check_server()
        with pytest.raises(ServerError, match=re.escape(f"server at {server.base_url} did not answer a chat request")):
            run_episodes(tasks, sandbox_catalog, lambda ep: run_oracle(ep, sandbox_catalog.table),
                         episode=lambda c, t, lim: ShopperEpisode(c, t, lim, shopper))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_run_agent_with_an_unreachable_shopper_server_fails_in_one_line(full_build, tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    out = tmp_path / "oracle.trajectories.jsonl"
    res = CliRunner().invoke(app, ["run-agent", str(full_build.path), "--limit", "3", "--out", str(out),
                                   "--user", "llm", "--user-model", "m", "--user-base-url", url])
    assert res.exit_code == 1 and not out.exists()
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"the shopper's server at {url} does not answer" in errors[0]


def test_the_documented_recipe_runs_the_llm_shopper_on_the_bundled_test_server(full_build, tmp_path):
    # docs/crs-formats.md: `python -m tests.llm_server --port 8088` from the repository root, then run-agent.
    repo = Path(__file__).resolve().parents[2]
    server = subprocess.Popen([sys.executable, "-m", "tests.llm_server", "--port", "0"], cwd=repo,
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        out = tmp_path / "oracle-llm.trajectories.jsonl"
        res = CliRunner().invoke(app, ["run-agent", str(full_build.path), "--limit", "4", "--out", str(out),
                                       "--user", "llm", "--user-model", "scripted", "--user-base-url", url])
        assert res.exit_code == 0, res.output
        turns = [t for line in out.read_text(encoding="utf-8").splitlines() for t in json.loads(line)["shopper_turns"]]
        assert turns and all(t["answered_by"] == "llm" for t in turns)
        assert f"LLM shopper: {len(turns)} of {len(turns)} turns answered by the model" in res.output
    finally:
        server.terminate()
        server.wait(timeout=10)
