"""Reference agents and the build's construction check on real tasks: the oracle solves every published
task within the budget, the null agent is recorded, the LLM agent runs end to end on a local server."""

from __future__ import annotations

import json

import ecombench.sandbox.tools
import ecombench.validation.slots
from ecombench.sandbox.agents import LLMAgent, numeric_bounds, run_diligent, run_null, run_oracle, voucher_budget
from ecombench.sandbox.grader import grade_episode
from ecombench.sandbox.tools import Episode, EpisodeLimits
from ecombench.validation.slots import canonical_question, opened_slots
from tests.llm_server import Reply, ScriptedLLM, tool_call
from tests.sandbox.conftest import first_task


def test_ask_user_uses_the_slot_matcher_validation_uses(sandbox_catalog, built_tasks):
    assert ecombench.sandbox.tools.answer_question is ecombench.validation.slots.answer_question
    table = sandbox_catalog.table
    asked = 0
    for task in built_tasks:
        slots = task["clarification_script"]["clarification_slots"]
        for slot in slots:
            question = canonical_question(table.by_rubric_field(slot["field"]).label)
            ep = Episode(sandbox_catalog, task)
            ep.call("ask_user", {"question": question})
            assert [r["slot_id"] for r in ep.revealed] == opened_slots(question, slots, table) == [slot["slot_id"]]
            asked += 1
    assert asked > 100


def test_the_manifest_records_oracle_and_null_accuracy(full_build):
    checks = full_build.manifest["agent_checks"]
    oracle, null = checks["oracle"], checks["null"]
    published = len(full_build.tasks)
    assert oracle["solved"] == published and null["tasks"] == published
    assert oracle["candidates"] == published + oracle["rejected_oracle_failed"]
    assert oracle["tool_calls"]["max"] <= checks["budget"]["max_tool_calls"] == 100
    assert null["accuracy"] < oracle["accuracy"]
    failed = [r for r in full_build.rejections if r["reason"] == "oracle_failed"]
    assert len(failed) == oracle["rejected_oracle_failed"]
    for r in failed:
        assert r["stage"] == 7 and r["evidence"]["task_id"] and r["evidence"]["tool_calls"] <= 100
    report = (full_build.path / "report.md").read_text(encoding="utf-8")
    assert (f"oracle solved {oracle['solved']} of {oracle['candidates']} validated tasks" in report
            and f"got {null['correct']} of {published} published tasks right" in report)


def test_the_oracle_solves_published_tasks_of_every_intent_within_the_budget(sandbox_catalog, built_tasks):
    for intent in sorted({t["intent"] for t in built_tasks}):
        for task in [t for t in built_tasks if t["intent"] == intent][:3]:
            record = run_oracle(Episode(sandbox_catalog, task), sandbox_catalog.table)
            assert record["finished"] and record["tool_calls"] <= 100 and record["unrevealed"] == []
            assert grade_episode(task, record, sandbox_catalog)["status"] == "correct", task["id"]
            assert record["get_profile_calls"] == 1
            assert len(record["revealed_slots"]) == len(task["clarification_script"]["clarification_slots"])


def test_the_oracle_fails_when_a_slot_never_opens(sandbox_catalog, built_tasks):
    task = first_task(built_tasks, lambda t: any(
        r["info_source"] == "clarification" and r["type"] == "attribute_match" for r in t["rubrics"]))
    # The same task with its slots moved to a field the table does not know and keywords no question
    # holds: the matcher reads them by those keywords alone, so no canonical question can open them.
    script = task["clarification_script"]
    broken = dict(task, clarification_script=dict(script, clarification_slots=[
        dict(s, field="details.Zqxj", trigger_keywords=["zqxj"] * 7) for s in script["clarification_slots"]]))
    record = run_oracle(Episode(sandbox_catalog, broken), sandbox_catalog.table)
    hidden = [r["id"] for r in task["rubrics"] if r["info_source"] == "clarification"]
    assert record["unrevealed"] == hidden and record["revealed_slots"] == []


def test_the_null_agent_recommends_the_first_search_hit(sandbox_catalog, built_tasks):
    task = built_tasks[0]
    ep = Episode(sandbox_catalog, task)
    record = run_null(ep)
    first = ep.steps[0]["result"]["products"][0]["product_id"]
    assert [s["tool"] for s in record["steps"]] == ["search_products", "recommend_product"]
    assert record["predicted_product_id"] == first


def test_llm_agent_runs_end_to_end_with_tool_calls_on_a_local_server(sandbox_catalog, built_tasks):
    from ecombench.llm import LLMSettings

    task = first_task(built_tasks, lambda t: t["clarification_script"]["clarification_slots"])
    slot = task["clarification_script"]["clarification_slots"][0]
    label = sandbox_catalog.table.by_rubric_field(slot["field"]).label
    target = task["target_product"]["parent_asin"]
    turns = iter([
        {"content": "Let me read the profile.", "tool_calls": [tool_call("c1", "get_user_profile", {})]},
        # two calls in one reply: both run and both are answered
        {"tool_calls": [tool_call("c2", "ask_user", {"question": canonical_question(label)}),
                        tool_call("c3", "search_products", {"query": task["target_product"]["title"]})]},
        {"tool_calls": [tool_call("c4", "get_product_details", "{broken json")]},
        {"content": "Thinking without a tool."},
        {"tool_calls": [tool_call("c5", "recommend_product", {"product_id": target, "reasoning": "fits"})]},
    ])
    with ScriptedLLM([Reply(lambda body: next(turns))]) as server:
        agent = LLMAgent(LLMSettings(base_url=server.base_url, model="scripted-agent", max_retries=0))
        record = agent.run(Episode(sandbox_catalog, task))
        requests = server.requests
    assert record["finished"] and record["predicted_product_id"] == target and record["error"] is None
    assert [s["tool"] for s in record["steps"]] == ["get_user_profile", "ask_user", "search_products",
                                                    "get_product_details", "recommend_product"]
    assert "error" in record["steps"][3]["result"]
    assert record["revealed_slots"][0]["slot_id"] == slot["slot_id"]
    assert requests[0]["tools"] and len(requests[0]["tools"]) == 10
    tool_msgs = [m for m in requests[2]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c1", "c2", "c3"]
    assert json.loads(tool_msgs[0]["content"])["profile"] == task["user_persona"]
    assert requests[4]["messages"][-1]["role"] == "user"  # the reminder after a reply without a tool call
    assert grade_episode(task, record, sandbox_catalog)["status"] == "correct"


def test_llm_agent_sends_tool_choice_and_returns_tool_results_as_the_setting_says(sandbox_catalog, built_tasks):
    # llama-cpp-python's chatml-function-calling renders the tools only when tool_choice is "auto" (or names a
    # function) and renders no role: tool message, so results go back as a user message (issue #14).
    from ecombench.llm import LLMSettings

    task = built_tasks[0]
    target = task["target_product"]["parent_asin"]
    turns = iter([
        {"tool_calls": [tool_call("call_0", "get_user_profile", {}),
                        tool_call("call_1", "search_products", {"query": task["target_product"]["title"]})]},
        {"tool_calls": [tool_call("call_2", "recommend_product", {"product_id": target, "reasoning": "fits"})]},
    ])
    with ScriptedLLM([Reply(lambda body: next(turns))]) as server:
        settings = LLMSettings(base_url=server.base_url, model="local", max_retries=0, tool_result_role="user")
        record = LLMAgent(settings).run(Episode(sandbox_catalog, task))
        requests = server.requests
    assert record["finished"] and record["predicted_product_id"] == target
    assert all(r["tool_choice"] == "auto" for r in requests)
    second = requests[1]["messages"]
    assert not any(m["role"] == "tool" for m in second)
    assert second[-2]["role"] == "assistant" and [c["id"] for c in second[-2]["tool_calls"]] == ["call_0", "call_1"]
    results = second[-1]
    assert results["role"] == "user"
    assert results["content"].startswith("Result of get_user_profile (call_0): {")
    assert "Result of search_products (call_1): {" in results["content"]
    assert json.dumps(task["user_persona"]["user_id"]) in results["content"]


def test_llm_agent_can_send_no_tool_choice_and_openai_tool_messages(sandbox_catalog, built_tasks):
    from ecombench.llm import LLMSettings

    task = built_tasks[0]
    turns = iter([{"tool_calls": [tool_call("c1", "get_user_profile", {})]}, {"content": "done"}, {"content": "x"}])
    with ScriptedLLM([Reply(lambda body: next(turns))]) as server:
        LLMAgent(LLMSettings(base_url=server.base_url, model="m", max_retries=0, tool_choice=None)).run(
            Episode(sandbox_catalog, task))
        requests = server.requests
    assert "tool_choice" not in requests[0]
    assert [m["tool_call_id"] for m in requests[1]["messages"] if m["role"] == "tool"] == ["c1"]


def test_an_unknown_tool_result_role_is_one_setting_error():
    import pytest

    from ecombench.errors import SettingError
    from ecombench.llm import LLMSettings

    with pytest.raises(SettingError, match="tool_result_role 'function'"):
        LLMSettings(base_url="http://x", model="m", tool_result_role="function")


def test_llm_agent_that_never_calls_a_tool_ends_unfinished(sandbox_catalog, built_tasks):
    from ecombench.llm import LLMSettings

    with ScriptedLLM([Reply(lambda body: {"content": "I think the first one."})]) as server:
        agent = LLMAgent(LLMSettings(base_url=server.base_url, model="chatty", max_retries=0))
        record = agent.run(Episode(sandbox_catalog, built_tasks[0], EpisodeLimits()))
        assert len(server.requests) == 2
    assert not record["finished"] and record["tool_calls"] == 0 and record["predicted_product_id"] is None


def test_llm_agent_server_failure_is_recorded_not_raised(sandbox_catalog, built_tasks):
    from ecombench.llm import LLMSettings

    with ScriptedLLM(["server_error"]) as server:
        agent = LLMAgent(LLMSettings(base_url=server.base_url, model="down", max_retries=0))
        record = agent.run(Episode(sandbox_catalog, built_tasks[0]))
    assert record["error"] and "500" in record["error"] and not record["finished"]


def test_the_null_agent_stays_near_zero_when_hidden_information_matters(full_build):
    # Issue #7: with the query pinning the target in 87% of tasks the null agent scored 56% (308/550) on
    # every shared real file. The split now hides the most selective requirements and the query must
    # leave at least min_query_answer_set (3) products, so the first search hit is rarely a right answer.
    null = full_build.manifest["agent_checks"]["null"]
    assert null["accuracy"] <= 0.1, null
    assert full_build.manifest["config"]["min_query_answer_set"] == 3


def test_the_manifest_and_report_record_the_diligent_agent(full_build):
    d = full_build.manifest["agent_checks"]["diligent"]
    assert d["tasks"] == len(full_build.tasks) and d["accuracy"] >= 0.6
    assert sum(v["tasks"] for v in d["by_intent"].values()) == d["tasks"]
    assert 0 < d["slots_opened"] <= d["slots"] and d["tool_calls"]["max"] <= 100
    assert full_build.manifest["agent_checks"]["null"]["accuracy"] <= 0.05
    report = (full_build.path / "report.md").read_text(encoding="utf-8")
    assert f"solved {d['correct']} of {d['tasks']} published tasks" in report
    page = (full_build.path / "report.html").read_text(encoding="utf-8")
    assert 'id="agent-checks"' in page and 'id="diligent-by-intent"' in page


def test_the_diligent_agent_never_reads_rubrics_targets_or_slots(sandbox_catalog, built_tasks):
    task = first_task(built_tasks, lambda t: len(t["clarification_script"]["clarification_slots"]) >= 2)
    seen = []

    class Guarded(dict):
        def __getitem__(self, key):
            seen.append(key)
            return super().__getitem__(key)

    ep = Episode(sandbox_catalog, task)
    ep.task = Guarded(task)  # the tools read the persona and script through here; the agent only the query
    record = run_diligent(ep, sandbox_catalog.table)
    agent_keys = set(seen) - {"user_persona", "clarification_script", "id", "intent"}
    assert agent_keys == {"user_query"} and record["agent"] == "diligent" and record["finished"]


def test_the_diligent_agent_asks_natural_questions_and_opens_hidden_slots(sandbox_catalog, built_tasks):
    tasks = [t for t in sorted(built_tasks, key=lambda t: t["id"])
             if t["clarification_script"]["clarification_slots"]][:20]
    opened = slots = correct = 0
    for task in tasks:
        record = run_diligent(Episode(sandbox_catalog, task), sandbox_catalog.table)
        asks = [s["arguments"]["question"] for s in record["steps"] if s["tool"] == "ask_user"]
        assert 0 < len(asks) <= 10 and all(len(q) <= 80 and q.endswith("?") for q in asks)
        opened += len(record["revealed_slots"])
        slots += len(task["clarification_script"]["clarification_slots"])
        correct += grade_episode(task, record, sandbox_catalog)["status"] == "correct"
    assert opened >= 0.6 * slots and correct >= 0.6 * len(tasks)


def test_the_diligent_agent_reads_bounds_and_coupons_from_the_words():
    assert numeric_bounds("It must cost no more than $1,200, be rated at least 4.5 stars and have at least "
                          "20 ratings.") == {"price": {"max": 1200.0, "max_inclusive": True},
                                             "average_rating": {"min": 4.5, "min_inclusive": True},
                                             "rating_number": {"min": 20.0, "min_inclusive": True}}
    budget = voucher_budget("I have a tiered brand coupon: $1 off orders of $4 or more, or $2 off orders of $11 or "
                            "more, and I can pay at most $7 after the coupons.")
    assert budget["max_total"] == 7.0 and budget["voucher"]["scenario"] == "tiered"
    assert [c["face_value"] for c in budget["voucher"]["coupons"]] == [1.0, 2.0]


def test_the_manifest_records_the_ablated_oracles(full_build):
    # Issue #12: an oracle that never asks and one that never reads the profile, with the same tools.
    checks = full_build.manifest["agent_checks"]
    for name in ("oracle_no_ask", "oracle_no_profile"):
        a = checks[name]
        assert a["tasks"] == len(full_build.tasks) and 0 <= a["correct"] <= a["tasks"]
        assert a["accuracy"] == round(a["correct"] / a["tasks"], 4)
        assert a["accuracy"] < checks["oracle"]["accuracy_on_published"]
    report = (full_build.path / "report.md").read_text(encoding="utf-8")
    assert "`oracle_no_ask`" in report and "`oracle_no_profile`" in report


def test_the_oracle_that_never_asks_never_calls_ask_user(sandbox_catalog, built_tasks):
    from ecombench.sandbox.agents import run_ablated_oracle

    task = first_task(built_tasks, lambda t: any(r["info_source"] == "clarification" for r in t["rubrics"]))
    record = run_ablated_oracle(Episode(sandbox_catalog, task), sandbox_catalog.table, "oracle_no_ask")
    assert record["ask_user_calls"] == 0 and record["get_profile_calls"] == 1
    assert set(record["unrevealed"]) == {r["id"] for r in task["rubrics"] if r["info_source"] == "clarification"}


def test_the_oracle_that_never_reads_the_profile_never_calls_get_user_profile(sandbox_catalog, built_tasks):
    from ecombench.sandbox.agents import run_ablated_oracle

    task = first_task(built_tasks, lambda t: any(r["info_source"] == "persona" for r in t["rubrics"]))
    record = run_ablated_oracle(Episode(sandbox_catalog, task), sandbox_catalog.table, "oracle_no_profile")
    assert record["get_profile_calls"] == 0
    assert set(record["unrevealed"]) == {r["id"] for r in task["rubrics"] if r["info_source"] == "persona"}


def test_the_diligent_agent_reads_template_v2_bounds():
    text = ("It should be well rated (4 stars or more) with plenty of reviews (at least 100). "
            "I'd like to keep it to $25 or under.")
    assert numeric_bounds(text) == {"average_rating": {"min": 4.0, "min_inclusive": True},
                                    "rating_number": {"min": 100.0, "min_inclusive": True},
                                    "price": {"max": 25.0, "max_inclusive": True}}
    assert numeric_bounds("popular, with 50 or more ratings; my budget is up to $15") == {
        "rating_number": {"min": 50.0, "min_inclusive": True}, "price": {"max": 15.0, "max_inclusive": True}}


def test_a_coupon_threshold_is_no_price_floor_for_the_diligent_agent():
    assert numeric_bounds("a shop coupon for $2 off orders of $16 or more") == {}


def test_a_long_tool_result_is_compacted_to_the_limit_keeping_ids(sandbox_catalog, built_tasks):
    # A real product's details and a real search page (shared data): with a 4,096-token server the Qwen
    # 1.5B agent overflowed its context on the first get_product_details of every episode (issue #14).
    import json as _json

    from ecombench.sandbox.agents import compact_result

    task = built_tasks[0]
    ep = Episode(sandbox_catalog, task, EpisodeLimits())
    asin = task["target_product"]["parent_asin"]
    details = ep.call("get_product_details", {"product_id": asin})
    page = ep.call("search_products", {"query": task["user_query"]})
    full = _json.dumps(details, ensure_ascii=False)
    assert len(full) > 1500
    text = compact_result(details, 1500)
    assert len(text) <= 1500 and text.startswith("{")
    short = _json.loads(text)
    assert short["product"]["product_id"] == asin and set(short["product"]) - {"…"} <= set(details["product"])
    ids = [p["product_id"] for p in page["products"]]
    assert [p["product_id"] for p in _json.loads(compact_result(page, 4000))["products"]][:len(ids)] == ids
    assert compact_result(details, 0) == full


def test_llm_agent_is_told_how_many_calls_are_left_near_the_cap(sandbox_catalog, built_tasks):
    # Qwen2.5-Coder-1.5B searched and filtered until its budget or context ran out in 8 of 10 episodes; from
    # LAST_CALLS calls left each turn ends with how many are left and a request to recommend (issue #14).
    from ecombench.llm import LLMSettings
    from ecombench.sandbox.agents import LAST_CALLS

    task = built_tasks[0]
    title = task["target_product"]["title"]
    with ScriptedLLM([Reply(lambda body: {"tool_calls": [tool_call(f"c{len(body['messages'])}", "search_products",
                                                                   {"query": title})]})]) as server:
        settings = LLMSettings(base_url=server.base_url, model="local", max_retries=0, tool_result_role="user")
        record = LLMAgent(settings).run(Episode(sandbox_catalog, task, EpisodeLimits(max_tool_calls=6)))
        requests = server.requests
    assert not record["finished"] and record["tool_calls"] == 6
    notes = [r["messages"][-1]["content"] for r in requests if "tool call(s) left" in r["messages"][-1]["content"]]
    assert notes == [f"You have {n} tool call(s) left. Call recommend_product now with the product_id of your best "
                     "candidate so far." for n in range(LAST_CALLS, 0, -1)]
    assert "tool call(s) left" not in requests[1]["messages"][-1]["content"]  # 4 left: not yet
