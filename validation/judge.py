"""Stage 7's optional LLM judge: does each source support its rubrics (reference §9.2, made accountable).

The deterministic checks run first and decide alone when the judge is off. With the judge on, a
task that passed them is shown to the model as delimited data (the query, the persona, the slots,
the locked rubrics, the target record and, for review opinions, the cited reviews); the verdict
must match schemas/llm/judge_verdict.schema.json and name every rubric id once. A call that fails,
is refused, or returns an invalid verdict leaves the task *unscored by the judge*
(`judge_unscored`), never passed (inspect_ai's rule, STYLE.md); a verdict that fails the task or
any rubric is `judge_rejected` with the judge's issues and reasons as evidence. The reference
kept only a boolean and lost the per-rubric results (§15.21); here they are the evidence.
"""

from __future__ import annotations

import json
from typing import Any

from rubric_types import as_rubrics, kind_of
from stages.llm import LLMClient, LLMError
from stages.reviews import review_text
from stages.verbalise_llm import prompt_template, reply_schema
from validation.findings import Finding

JUDGE_REVIEWS = 5  # cited reviews shown per review_opinion rubric
JUDGE_REVIEW_CHARS = 800


def judge_payload(task: dict[str, Any], reviews: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the judge sees of a task: every source, the rubrics and the target (no answer set, no ids of
    other products); the reviews each review_opinion rubric cites, cut to JUDGE_REVIEW_CHARS."""
    persona = {k: v for k, v in task["user_persona"].items() if k != "user_id"}
    payload: dict[str, Any] = {
        "user_query": task["user_query"],
        "implicit_rubric_ids": task["implicit_rubric_ids"],
        "user_persona": persona,
        "clarification_slots": task["clarification_script"]["clarification_slots"],
        "rubrics": [{k: r[k] for k in ("id", "type", "field", "expected_value", "info_source", "description")}
                    for r in task["rubrics"]],
        "target_product": task["target_product"],
    }
    cited = {rid for r in as_rubrics(task["rubrics"]) if kind_of(r).needs_reviews for rid in (r.source_review_ids or [])}
    if cited and reviews:
        payload["reviews"] = [{"review_id": r["review_id"], "rating": r.get("rating"),
                               "text": review_text(r)[:JUDGE_REVIEW_CHARS]}
                              for r in reviews if r["review_id"] in cited][:JUDGE_REVIEWS * 2]
    return payload


def judge_task(client: LLMClient, task: dict[str, Any], reviews: list[dict[str, Any]] | None = None) -> list[Finding]:
    """The judge's findings for one task: [] when it supports every rubric, else one finding.

    Args:
        client: the build's LLM client (replies cached like every other call).
        task: a task that passed the deterministic stage-7 checks.
        reviews: the target's reviews (shown for review_opinion rubrics).

    Returns:
        [] (passed), [Finding("judge_unscored")] (call failed after retries, refusal, a reply that
        never matched the schema, or a verdict missing or inventing rubric ids; evidence says which),
        or [Finding("judge_rejected")] (evidence: issues and the unsupported rubrics with reasons).
        Never raises for the model's behaviour: the build goes on.
    """
    data = json.dumps(judge_payload(task, reviews), ensure_ascii=False, sort_keys=True)
    data = data.replace("<<<", "«").replace(">>>", "»")  # the task text cannot close the delimiters
    text = prompt_template("judge").replace("{task}", data)
    try:
        verdict = client.call_json([{"role": "user", "content": text}], "judge_verdict", reply_schema("judge"),
                                   purpose="judge")
    except LLMError as exc:
        return [Finding("judge_unscored", f"unscored by the judge: {exc}", {"llm_reason": exc.reason, **exc.evidence})]
    ids = [r["id"] for r in task["rubrics"]]
    named = [r["rubric_id"] for r in verdict["rubric_results"]]
    missing = [i for i in ids if i not in named]
    unknown = sorted(set(named) - set(ids))
    if missing or unknown or len(named) != len(set(named)):
        return [Finding("judge_unscored", "unscored by the judge: its verdict does not name each rubric once "
                        f"(missing {missing}, unknown {unknown})",
                        {"missing": missing, "unknown": unknown, "named": named})]
    unsupported = [{"rubric_id": r["rubric_id"], "reason": r["reason"]}
                   for r in verdict["rubric_results"] if not r["supported"]]
    if verdict["passed"] and not unsupported:
        return []
    why = unsupported[0]["reason"] if unsupported else (verdict["issues"] or ["no reason given"])[0]
    where = f"rubric {unsupported[0]['rubric_id']}: " if unsupported else ""
    return [Finding("judge_rejected", f"the judge rejects the task: {where}{why}",
                    {"issues": verdict["issues"], "unsupported": unsupported, "passed": verdict["passed"]})]
