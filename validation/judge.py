"""The LLM judges, each with a versioned, hashed prompt in stages/prompts/ and a reply schema in schemas/llm/.

`judge_task` is stage 7's optional judge: does each source support its rubrics (reference §9.2, made
accountable). `judge_opinion` is the grader's: does a recommended product's reviews state a review
opinion that code could not decide (sandbox/grader.py).

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
import re
from typing import Any

from rubric_types import as_rubrics, kind_of
from stages.llm import LLMClient, LLMError
from stages.reviews import review_text
from stages.verbalise_llm import prompt_template, reply_schema
from validation.checkers import Unscorable, Verdict
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


OPINION_REVIEWS = 20  # reviews shown to the grader's judge, those sharing most words with the opinion first
OPINION_REVIEW_CHARS = 1000


def opinion_prompt(rubric: dict[str, Any], product: dict[str, Any], max_reviews: int = OPINION_REVIEWS) -> str:
    """The grader judge's prompt (stages/prompts/review_judge.md) for one review_opinion rubric and product.

    Args:
        rubric: a review_opinion rubric (its expected_value is the opinion).
        product: the recommended product's row with "reviews".
        max_reviews: reviews shown, those sharing most words with the opinion first, each cut to
            OPINION_REVIEW_CHARS (the reference showed 20 reviews of 500 characters in arbitrary order, §15.17).
    """
    from stages.reviews import opinion_overlap

    reviews = sorted(product.get("reviews") or [],
                     key=lambda r: (-opinion_overlap(rubric["expected_value"], review_text(r)), r["review_id"]))
    values = {"opinion": str(rubric["expected_value"]), "title": product.get("title") or "",
              "reviews": "\n".join(f"- {review_text(r)[:OPINION_REVIEW_CHARS]}" for r in reviews[:max_reviews])}
    # One pass, so a value that happens to contain "{title}" is never substituted again.
    return re.sub(r"\{(opinion|title|reviews)\}", lambda m: values[m.group(1)], prompt_template("review_judge"))


def judge_opinion(client: LLMClient, rubric: dict[str, Any], product: dict[str, Any],
                  max_reviews: int = OPINION_REVIEWS) -> Verdict:
    """The grader's judge: does some review of `product` state the opinion of `rubric`?

    Args:
        client: an LLMClient (schema-checked JSON, retries, reply cache).
        rubric: a review_opinion rubric the code checker returned unscorable for.
        product: the recommended product's row with "reviews".
        max_reviews: see `opinion_prompt`.

    Returns:
        satisfied / not_satisfied with the judge's reasoning, or Unscorable when the call fails (any
        LLMError): a judge failure never grades the agent. Never raises for the model's behaviour.
    """
    try:
        reply = client.call_json([{"role": "user", "content": opinion_prompt(rubric, product, max_reviews)}],
                                 "review_judgement", reply_schema("review_judge"), purpose="judge")
    except LLMError as exc:
        return Unscorable(f"judge failed ({exc.reason}): {str(exc)[:200]}")
    return Verdict("satisfied" if reply["satisfied"] else "not_satisfied", f"judge: {reply['reasoning']}")
