"""The LLM judges, each with a versioned, hashed prompt in stages/prompts/ and a reply schema in schemas/llm/.

`judge_task` is stage 7's optional judge: does each source support its rubrics (reference §9.2, made
accountable). Each rubric is shown with the text of its own source (the query, its persona entry,
or its clarification slot's reply), because a judge shown the whole task faulted persona and
clarification rubrics for "the query does not state the requirement". `judge_opinion`
is the grader's: does a recommended product's reviews state a review opinion that code could not
decide (sandbox/grader.py).

The deterministic checks run first and decide alone when the judge is off. With the judge on, a
task that passed them is shown to the model as delimited data (the query, the persona, the slots,
the locked rubrics and, for review opinions, the cited reviews); the verdict must match
schemas/llm/judge_verdict.schema.json narrowed to the task (rubric ids as an enum, one entry per id)
and name every rubric id once, within a token budget that grows with the rubric count. A call that fails,
is refused, or returns an invalid verdict leaves the task *unscored by the judge*
(`judge_unscored`), never passed (inspect_ai's rule, STYLE.md); a verdict that fails the task or
any rubric is `judge_rejected` with the judge's issues and reasons as evidence. The reference
kept only a boolean and lost the per-rubric results (§15.21); here they are the evidence.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ecombench.catalog.reviews import opinion_overlap, review_text
from ecombench.llm import LLMClient, LLMError
from ecombench.rubrics import RubricLike, as_rubrics, as_spec, kind_of
from ecombench.rubrics.checkers import Unscorable, Verdict
from ecombench.schemas.findings import Finding
from ecombench.stages.prompts import prompt_template, reply_schema
from ecombench.stages.verbalise import persona_entry
from ecombench.stages.verbalise_llm import _with_ids, id_problems
from ecombench.tables.fields import load_field_table

JUDGE_REVIEWS = 5  # cited reviews shown per review_opinion rubric
JUDGE_REVIEW_CHARS = 800
# The judge's max_tokens: the verdict schema bounds every string (reason and issue <= 160 characters, at
# most 3 issues), so a whole verdict of n rubrics fits JUDGE_TOKENS_BASE + n * JUDGE_TOKENS_PER_RUBRIC
# tokens at 3 characters a token (English runs near 4): ~25 for the braces and `passed`, ~175 for three
# issues, and per rubric ~13 of keys and punctuation plus ~54 of reason. With the 256 default, 8 of 8
# verdicts of 6-9 rubrics were cut off or incomplete.
JUDGE_TOKENS_BASE = 200
JUDGE_TOKENS_PER_RUBRIC = 68


def source_text(rubric: dict[str, Any], task: dict[str, Any]) -> str:
    """The text of a rubric's own source, the only text the judge weighs it against.

    query: the user query; persona: its `product_requirements` entry as "key: value"; clarification:
    the reply of the slot(s) linked to it ("" when none is, which the judge then cannot support).
    """
    if rubric["info_source"] == "query":
        return task["user_query"]
    if rubric["info_source"] == "persona":

        key, _ = persona_entry(rubric, load_field_table())
        value = task["user_persona"].get("product_requirements", {}).get(key)
        return f"{key}: {value if not isinstance(value, list) else ', '.join(map(str, value))}" if value else ""
    return " ".join(s["user_response"] for s in task["clarification_script"]["clarification_slots"]
                    if rubric["id"] in s["linked_rubric_ids"])


def judge_payload(task: dict[str, Any], reviews: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the judge sees of a task: each rubric with its own source's text (`source_text`).

    Per rubric: id, source, description, expected value, whether it is implicit, source_text; no
    answer set, no target, no other product; the reviews each review_opinion rubric cites, cut to
    JUDGE_REVIEW_CHARS.
    """
    implicit = set(task["implicit_rubric_ids"])
    payload: dict[str, Any] = {
        "rubrics": [{"id": r["id"], "source": r["info_source"], "description": r["description"],
                     "expected_value": r["expected_value"], "implicit": r["id"] in implicit,
                     "source_text": source_text(r, task)} for r in task["rubrics"]],
    }
    cited = {rid for r in as_rubrics(task["rubrics"]) if kind_of(r).needs_reviews
             for rid in (r.source_review_ids or [])}
    if cited and reviews:
        payload["reviews"] = [{"review_id": r["review_id"], "rating": r.get("rating"),
                               "text": review_text(r)[:JUDGE_REVIEW_CHARS]}
                              for r in reviews if r["review_id"] in cited][:JUDGE_REVIEWS * 2]
    return payload


def judge_reply_schema(ids: list[str]) -> dict[str, Any]:
    """schemas/llm/judge_verdict.schema.json with rubric_id an enum of `ids` and exactly one entry per id."""
    return _with_ids(reply_schema("judge"), ("rubric_results", "rubric_id"), ids)


def judge_max_tokens(n_rubrics: int, floor: int = 0) -> int:
    """Tokens a whole verdict on `n_rubrics` rubrics can take (see JUDGE_TOKENS_BASE), at least `floor`."""
    return max(floor, JUDGE_TOKENS_BASE + JUDGE_TOKENS_PER_RUBRIC * n_rubrics)


def _named_ids(raw: str) -> list[str] | None:
    """The rubric ids a reply that failed its schema names, when it is JSON with rubric_results; else None."""
    try:
        obj = json.loads(raw)
        return [str(x["rubric_id"]) for x in obj["rubric_results"] if isinstance(x, dict) and "rubric_id" in x]
    except (ValueError, TypeError, KeyError):
        return None


def _id_findings(named: list[str], ids: list[str], extra: dict[str, Any] | None = None) -> list[Finding]:
    missing = [i for i in ids if i not in named]
    unknown = sorted(set(named) - set(ids))
    twice = sorted({i for i in named if named.count(i) > 1})
    if not (missing or unknown or twice):
        return []
    return [Finding("judge_unscored", "unscored by the judge: its verdict does not name each rubric once "
                    f"(missing {missing}, unknown {unknown}, twice {twice})",
                    {"missing": missing, "unknown": unknown, "twice": twice, "named": named, **(extra or {})})]


def judge_task(client: LLMClient, task: dict[str, Any], reviews: list[dict[str, Any]] | None = None) -> list[Finding]:
    """The judge's findings for one task: [] when it supports every rubric, else one finding.

    Args:
        client: the build's LLM client (replies cached like every other call).
        task: a task that passed the deterministic stage-7 checks.
        reviews: the target's reviews (shown for review_opinion rubrics).

    Returns:
        [] (passed), [Finding("judge_unscored")] (call failed after retries, refusal, a reply that
        never matched the schema, or a verdict missing, repeating or inventing rubric ids after the
        repair turn that named them; evidence says which ids), or [Finding("judge_rejected")]
        (evidence: issues and the unsupported rubrics with reasons). Never raises for the model's
        behaviour: the build goes on.
    """
    ids = [r["id"] for r in task["rubrics"]]
    data = json.dumps(judge_payload(task, reviews), ensure_ascii=False, sort_keys=True)
    data = data.replace("<<<", "«").replace(">>>", "»")  # the task text cannot close the delimiters
    text = re.sub(r"\{(task|rubric_ids)\}", lambda m: {"task": data, "rubric_ids": ", ".join(ids)}[m.group(1)],
                  prompt_template("judge"))
    try:
        verdict = client.call_json([{"role": "user", "content": text}], "judge_verdict", judge_reply_schema(ids),
                                   purpose="judge", max_tokens=judge_max_tokens(len(ids), client.settings.max_tokens),
                                   check=lambda v: id_problems([x["rubric_id"] for x in v["rubric_results"]], ids,
                                                               "rubric_results"))
    except LLMError as exc:
        named = _named_ids(str(exc.evidence.get("raw", ""))) if exc.reason == "llm_invalid_output" else None
        if named is not None:
            found = _id_findings(named, ids, {"llm_reason": exc.reason, **exc.evidence})
            if found:
                return found
        return [Finding("judge_unscored", f"unscored by the judge: {exc}", {"llm_reason": exc.reason, **exc.evidence})]
    named = [r["rubric_id"] for r in verdict["rubric_results"]]
    found = _id_findings(named, ids)
    if found:
        return found
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


def opinion_prompt(rubric: RubricLike | dict[str, Any], product: dict[str, Any],
                   max_reviews: int = OPINION_REVIEWS) -> str:
    """The grader judge's prompt (stages/prompts/review_judge.md) for one review_opinion rubric and product.

    Args:
        rubric: a review_opinion rubric (its expected_value is the opinion).
        product: the recommended product's row with "reviews".
        max_reviews: reviews shown, those sharing most words with the opinion first, each cut to
            OPINION_REVIEW_CHARS (the reference showed 20 reviews of 500 characters in arbitrary order, §15.17).
    """
    opinion = str(as_spec(rubric).expected_value)
    reviews = sorted(product.get("reviews") or [],
                     key=lambda r: (-opinion_overlap(opinion, review_text(r)), r["review_id"]))
    values = {"opinion": opinion, "title": product.get("title") or "",
              "reviews": "\n".join(f"- {review_text(r)[:OPINION_REVIEW_CHARS]}" for r in reviews[:max_reviews])}
    # One pass, so a value that happens to contain "{title}" is never substituted again.
    return re.sub(r"\{(opinion|title|reviews)\}", lambda m: values[m.group(1)], prompt_template("review_judge"))


def judge_opinion(client: LLMClient, rubric: RubricLike | dict[str, Any], product: dict[str, Any],
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
