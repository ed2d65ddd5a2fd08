"""Grading (reference §12 with §15.27-28 fixed): code checkers per rubric type, a judge only for what code
cannot decide, judge failures unscored and counted apart, every task in every denominator."""

from __future__ import annotations

import pytest

from ecombench.errors import InputError
from ecombench.rubrics.checkers import check
from ecombench.sandbox.grader import LLMJudge, grade, grade_episode, graded_product, metrics
from ecombench.sandbox.tools import Episode
from ecombench.text import tokens
from tests.sandbox.conftest import first_task

RUBRIC_TYPES = ["attribute_match", "numeric_range", "entity_match", "negative_attribute", "budget_match",
                "review_opinion"]


def _recommend(catalog, task, asin):
    ep = Episode(catalog, task)
    ep.call("recommend_product", {"product_id": asin, "reasoning": "test"})
    return ep.record("test")


@pytest.mark.parametrize("rubric_type", RUBRIC_TYPES)
def test_each_rubric_type_is_graded_by_code(sandbox_catalog, built_tasks, rubric_type):
    task = first_task(built_tasks, lambda t: any(r["type"] == rubric_type for r in t["rubrics"]))
    rubric = next(r for r in task["rubrics"] if r["type"] == rubric_type)
    target = grade_episode(task, _recommend(sandbox_catalog, task, task["target_product"]["parent_asin"]),
                           sandbox_catalog)
    assert target["status"] == "correct" and target["exact_match"] and target["all_satisfied"]
    assert all(r["by"] == "code" and r["status"] == "satisfied" for r in target["rubric_results"])
    # A real product of the catalog that fails this rubric by code fails the task on it.
    other = next(a for a in sorted(sandbox_catalog.rows) if a not in task["answer_set"]
                 and check(rubric, graded_product(sandbox_catalog, a), sandbox_catalog.table).status == "not_satisfied")
    result = grade_episode(task, _recommend(sandbox_catalog, task, other), sandbox_catalog)
    assert result["status"] == "incorrect" and not result["exact_match"]
    assert next(r for r in result["rubric_results"] if r["rubric_id"] == rubric["id"])["status"] == "not_satisfied"


def test_another_product_satisfying_every_rubric_is_correct(sandbox_catalog, built_tasks):
    task = first_task(built_tasks, lambda t: len(t["answer_set"]) > 1)
    other = next(a for a in task["answer_set"] if a != task["target_product"]["parent_asin"])
    result = grade_episode(task, _recommend(sandbox_catalog, task, other), sandbox_catalog)
    assert result["status"] == "correct" and not result["exact_match"] and result["all_satisfied"]


def _unscorable_opinion(catalog, task):
    """The task's own review-opinion rubric reworded (two words swapped) so code finds most words but not the phrase."""
    rubric = next(r for r in task["rubrics"] if r["type"] == "review_opinion" and len(tokens(r["expected_value"])) >= 3)
    words = rubric["expected_value"].split()
    reworded = " ".join(words[1:2] + words[:1] + words[2:])
    product = graded_product(catalog, task["target_product"]["parent_asin"])
    assert check(dict(rubric, expected_value=reworded), product, catalog.table).status == "unscorable"
    return {**task, "rubrics": [dict(r, expected_value=reworded) if r is rubric else r for r in task["rubrics"]]}


def test_a_failed_judge_leaves_the_task_unscored_never_failed(sandbox_catalog, built_tasks):
    from ecombench.llm import LLMClient, LLMSettings
    from tests.llm_server import ScriptedLLM

    task = first_task(built_tasks, lambda t: any(r["type"] == "review_opinion" and len(tokens(r["expected_value"])) >= 3
                                                 for r in t["rubrics"]))
    task = _unscorable_opinion(sandbox_catalog, task)
    record = _recommend(sandbox_catalog, task, task["target_product"]["parent_asin"])
    with ScriptedLLM(["invalid_json"]) as server:
        judge = LLMJudge(LLMClient(LLMSettings(base_url=server.base_url, model="judge", max_retries=0)))
        # Graded as a product that is not the exact target (which would be correct whatever the judge says).
        graded = grade_episode(dict(task, target_product=dict(task["target_product"], parent_asin="B000OTHER")),
                               record, sandbox_catalog, judge)
    assert judge.calls == 1 and judge.failures == 1
    judged = [r for r in graded["rubric_results"] if r["by"] == "judge"]
    assert [r["status"] for r in judged] == ["unscorable"] and "judge failed" in judged[0]["why"]
    assert graded["status"] == "unscored"
    m = metrics([graded])
    assert m["overall"]["unscored"] == 1 and m["overall"]["incorrect"] == 0 and m["overall"]["accuracy"] is None
    assert m["overall"]["judge"] == {"rubrics_sent": 1, "failed": 1}


def test_a_working_judge_decides_what_code_could_not(sandbox_catalog, built_tasks):
    import json

    from ecombench.llm import LLMClient, LLMSettings
    from tests.llm_server import Reply, ScriptedLLM

    task = first_task(built_tasks, lambda t: any(r["type"] == "review_opinion" and len(tokens(r["expected_value"])) >= 3
                                                 for r in t["rubrics"]))
    task = _unscorable_opinion(sandbox_catalog, task)
    record = _recommend(sandbox_catalog, task, task["target_product"]["parent_asin"])
    verdict = Reply(lambda body: {"content": json.dumps({"satisfied": False, "reasoning": "not said"})})
    with ScriptedLLM([verdict]) as server:
        judge = LLMJudge(LLMClient(LLMSettings(base_url=server.base_url, model="judge", max_retries=0)))
        graded = grade_episode(dict(task, target_product=dict(task["target_product"], parent_asin="B000OTHER")),
                               record, sandbox_catalog, judge)
        prompt = server.requests[0]["messages"][0]["content"]
        sent_schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert graded["status"] == "incorrect"
    # The grader's judge speaks through the versioned, hashed prompt file and reply schema (validation/judge.py).
    from ecombench.stages.prompts import prompt_sha256, reply_schema
    from ecombench.validation.judge import opinion_prompt

    rubric = next(r for r in task["rubrics"] if r["type"] == "review_opinion"
                  and f'the reviews say "{r["expected_value"]}"' in prompt)
    assert prompt == opinion_prompt(rubric, graded_product(sandbox_catalog, record["predicted_product_id"]))
    assert sent_schema == reply_schema("review_judge") and "review_judge.md" in prompt_sha256()
    assert [r["status"] for r in graded["rubric_results"] if r["by"] == "judge"] == ["not_satisfied"]
    assert next(r["expected_value"] for r in task["rubrics"] if r["type"] == "review_opinion"
                and r["expected_value"] in prompt)


def test_tasks_without_trajectory_count_as_failures_in_every_denominator(sandbox_catalog, built_tasks):
    tasks = sorted(built_tasks, key=lambda t: t["id"])[:4]
    records = [_recommend(sandbox_catalog, t, t["target_product"]["parent_asin"]) for t in tasks[:3]]
    graded, m = grade(tasks, records, sandbox_catalog)
    assert [g["status"] for g in graded] == ["correct"] * 3 + ["incorrect"]
    assert m["overall"]["tasks"] == 4 and m["overall"]["accuracy"] == 0.75
    assert m["episodes"]["finish_rate"] == 0.75 and m["episodes"]["missing_trajectories"] == 1
    assert sum(v["tasks"] for v in m["by_intent"].values()) == 4
    assert set(m["by_source"]) <= {"query", "persona", "clarification"}
    with pytest.raises(InputError, match="two trajectories"):
        grade(tasks, records + records[:1], sandbox_catalog)
