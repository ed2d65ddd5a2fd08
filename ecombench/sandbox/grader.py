"""The grader: every rubric by its code checker, an LLM judge only where code says unscorable.

Correct = the recommended product is the exact target, or it satisfies every rubric (reference
§12). Unlike the reference, which sent every rubric to one LLM call and counted a malformed judge
reply as the agent's failure (§15.27), rubrics are graded by ecombench.rubrics.checkers; only an
`unscorable` verdict (a review opinion code cannot decide) goes to the judge, and a judge that fails
or cannot parse leaves the rubric *unscored*: a task is then scored only if another rubric already
fails it (inspect_ai's rule). Every denominator is the whole split: a task with no trajectory counts
as an unfinished episode with no recommendation (fixes §15.28).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any, Protocol

from ecombench.errors import InputError
from ecombench.rubrics import as_rubrics
from ecombench.rubrics.checkers import Verdict, check
from ecombench.sandbox.catalog import SandboxCatalog
from ecombench.sandbox.llm_user import shopper_agreement
from ecombench.schemas.models import Rubric
from ecombench.validation.judge import OPINION_REVIEWS, judge_opinion


class Judge(Protocol):
    """Decides one rubric code could not: returns satisfied / not_satisfied, or unscorable when it fails."""

    def __call__(self, rubric: Rubric, product: dict[str, Any]) -> Verdict:
        """The verdict on one rubric code could not decide, for one product."""
        ...


class LLMJudge:
    """The grader's Judge on an OpenAI-compatible server.

    It runs ecombench.validation.judge.judge_opinion (the versioned, hashed prompt
    stages/prompts/review_judge.md), counting calls and failures. A failed call is Unscorable — a judge
    failure never grades the agent.

    Args:
        client: an LLMClient (schema-checked JSON, retries, cache).
        max_reviews: reviews shown (see ecombench.validation.judge.opinion_prompt).
    """

    def __init__(self, client: Any, max_reviews: int = OPINION_REVIEWS):
        self.client, self.max_reviews = client, max_reviews
        self.calls = self.failures = 0

    def __call__(self, rubric: Rubric, product: dict[str, Any]) -> Verdict:
        """Judge one review_opinion rubric `rubric` on the recommended `product` (with its reviews)."""
        self.calls += 1
        verdict = judge_opinion(self.client, rubric.record(), product, self.max_reviews)
        self.failures += verdict.status == "unscorable"
        return verdict


def graded_product(catalog: SandboxCatalog, parent_asin: str | None) -> dict[str, Any] | None:
    """The catalog row of a recommended product with all its reviews attached, or None."""
    if parent_asin is None or parent_asin not in catalog.rows:
        return None
    return {**catalog.rows[parent_asin], "reviews": catalog.reviews.get(parent_asin, [])}


def grade_episode(task: dict[str, Any], record: dict[str, Any] | None, catalog: SandboxCatalog,
                  judge: Judge | None = None) -> dict[str, Any]:
    """Grade one trajectory record against its task.

    Args:
        task: the task record.
        record: its trajectory record (ecombench.sandbox.tools.Episode.record), or None when the agent left no
            trajectory (graded as no recommendation).
        catalog: the snapshot the split was built on.
        judge: decides rubrics code returns unscorable for; None leaves them unscored.

    Returns:
        {task_id, intent, status: correct | incorrect | unscored, exact_match, all_satisfied,
        predicted_product_id, target_product_id, rubric_results: [{rubric_id, type, info_source,
        status, why, by: code | judge}], finished, tool_calls, ask_user_calls, get_profile_calls,
        revealed_slots, clarification_slots, error}.
    """
    pid = (record or {}).get("predicted_product_id")
    product = graded_product(catalog, pid)
    results = []
    for r in as_rubrics(task["rubrics"]):
        if product is None:
            v, by = Verdict("not_satisfied", "no product recommended"), "code"
        else:
            v, by = check(r, product, catalog.table), "code"
            if v.status == "unscorable" and judge is not None:
                v, by = judge(r, product), "judge"
        results.append({"rubric_id": r.id, "type": r.type, "info_source": r.info_source,
                        "status": v.status, "why": v.why, "by": by})
    exact = pid is not None and pid == task["target_product"]["parent_asin"]
    all_ok = all(x["status"] == "satisfied" for x in results)
    if exact or all_ok:
        status = "correct"
    elif any(x["status"] == "not_satisfied" for x in results):
        status = "incorrect"
    else:
        status = "unscored"
    rec = record or {}
    return {"task_id": task["id"], "intent": task["intent"], "status": status, "exact_match": exact,
            "all_satisfied": all_ok, "predicted_product_id": pid,
            "target_product_id": task["target_product"]["parent_asin"],
            "rubric_results": results, "finished": bool(rec.get("finished")), "tool_calls": rec.get("tool_calls", 0),
            "ask_user_calls": rec.get("ask_user_calls", 0), "get_profile_calls": rec.get("get_profile_calls", 0),
            "revealed_slots": len(rec.get("revealed_slots") or []),
            "clarification_slots": len(task["clarification_script"]["clarification_slots"]),
            "error": rec.get("error") if record is not None else "no trajectory for this task"}


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def _rubric_block(rows: list[dict[str, Any]]) -> dict[str, Any]:
    c = Counter(r["status"] for r in rows)
    return {"count": len(rows), "satisfied": c["satisfied"], "not_satisfied": c["not_satisfied"],
            "unscored": c["unscorable"], "satisfaction": _rate(c["satisfied"], c["satisfied"] + c["not_satisfied"])}


def _spread(values: list[int]) -> dict[str, Any]:
    if not values:
        return {"mean": None, "median": None, "max": None}
    return {"mean": round(statistics.fmean(values), 2), "median": statistics.median(values), "max": max(values)}


def metrics(graded: list[dict[str, Any]]) -> dict[str, Any]:
    """Summary metrics over graded tasks (every task of the split, one entry each).

    accuracy = correct / scored (scored = correct + incorrect); unscored tasks (a judge failure left
    them undecided) are counted apart, never as failures. Rubric satisfaction leaves unscored
    rubrics out of its denominator. Finish rate, tool calls and clarification figures are over all
    tasks. Returns a JSON-ready dict: overall, by_source, by_rubric_type, by_intent, episodes.
    """
    c = Counter(g["status"] for g in graded)
    scored = c["correct"] + c["incorrect"]
    rubrics = [r for g in graded for r in g["rubric_results"]]
    by_intent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for g in graded:
        by_intent[g["intent"]].append(g)
    exact = sum(g["exact_match"] for g in graded)
    judged = [r for r in rubrics if r["by"] == "judge"]
    slots = sum(g["clarification_slots"] for g in graded)
    return {
        "overall": {"tasks": len(graded), "scored": scored, "correct": c["correct"], "incorrect": c["incorrect"],
                    "unscored": c["unscored"], "accuracy": _rate(c["correct"], scored),
                    "exact_match": exact, "exact_match_rate": _rate(exact, len(graded)),
                    "non_exact_but_correct": c["correct"] - sum(g["exact_match"] and g["status"] == "correct"
                                                                for g in graded),
                    "rubrics": _rubric_block(rubrics),
                    "judge": {"rubrics_sent": len(judged),
                              "failed": sum(r["status"] == "unscorable" for r in judged)}},
        "by_source": {s: _rubric_block([r for r in rubrics if r["info_source"] == s])
                      for s in sorted({r["info_source"] for r in rubrics})},
        "by_rubric_type": {t: _rubric_block([r for r in rubrics if r["type"] == t])
                           for t in sorted({r["type"] for r in rubrics})},
        "by_intent": {i: {"tasks": len(gs), "correct": sum(g["status"] == "correct" for g in gs),
                          "incorrect": sum(g["status"] == "incorrect" for g in gs),
                          "unscored": sum(g["status"] == "unscored" for g in gs),
                          "accuracy": _rate(sum(g["status"] == "correct" for g in gs),
                                            sum(g["status"] != "unscored" for g in gs))}
                      for i, gs in sorted(by_intent.items())},
        "episodes": {"finish_rate": _rate(sum(g["finished"] for g in graded), len(graded)),
                     "missing_trajectories": sum(g["error"] == "no trajectory for this task" for g in graded),
                     "errors": sum(bool(g["error"]) for g in graded),
                     "tool_calls": _spread([g["tool_calls"] for g in graded]),
                     "ask_user_calls": _spread([g["ask_user_calls"] for g in graded]),
                     "profile_called_rate": _rate(sum(g["get_profile_calls"] > 0 for g in graded), len(graded)),
                     "clarification_slots": slots,
                     "slot_reveal_rate": _rate(sum(g["revealed_slots"] for g in graded), slots)},
    }


def grade(tasks: list[dict[str, Any]], records: list[dict[str, Any]], catalog: SandboxCatalog,
          judge: Judge | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Grade a split's trajectories: (per-task results sorted by task id, metrics).

    Raises:
        InputError: a trajectory names a task the split does not have, or a task has two
            trajectories (the message names the task id).
    """
    by_id: dict[str, dict[str, Any]] = {}
    known = {t["id"] for t in tasks}
    for rec in records:
        if rec["task_id"] not in known:
            raise InputError(f"trajectory for task {rec['task_id']!r}, which the split does not have")
        if rec["task_id"] in by_id:
            raise InputError(f"two trajectories for task {rec['task_id']!r}")
        by_id[rec["task_id"]] = rec
    graded = [grade_episode(t, by_id.get(t["id"]), catalog, judge) for t in sorted(tasks, key=lambda t: t["id"])]
    m = metrics(graded)

    shopper = shopper_agreement(records)  # only runs answered by the opt-in LLM shopper have one
    if shopper is not None:
        m["shopper"] = shopper
    return graded, m


def summary_markdown(m: dict[str, Any], title: str = "Agent evaluation") -> str:
    """A readable summary of `metrics` output: overall figures and tables by source, rubric type and intent."""
    o, e = m["overall"], m["episodes"]

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"

    lines = [f"# {title}", "",
             f"- accuracy: **{pct(o['accuracy'])}** ({o['correct']} correct of {o['scored']} scored tasks; "
             f"{o['unscored']} unscored, never counted as failures; {o['tasks']} tasks)",
             f"- exact target: {o['exact_match']} ({pct(o['exact_match_rate'])}); correct without the exact target: "
             f"{o['non_exact_but_correct']}",
             f"- rubric satisfaction: {pct(o['rubrics']['satisfaction'])} ({o['rubrics']['satisfied']} of "
             f"{o['rubrics']['satisfied'] + o['rubrics']['not_satisfied']} scored rubrics; "
             f"{o['rubrics']['unscored']} unscored)",
             f"- judge: {o['judge']['rubrics_sent']} rubrics sent, {o['judge']['failed']} judge failures (unscored)",
             f"- finish rate: {pct(e['finish_rate'])}; tool calls mean {e['tool_calls']['mean']}, median "
             f"{e['tool_calls']['median']}, max {e['tool_calls']['max']}; ask_user mean {e['ask_user_calls']['mean']}; "
             f"profile read in {pct(e['profile_called_rate'])}; "
             f"clarification slots revealed {pct(e['slot_reveal_rate'])}",
             f"- episodes with errors: {e['errors']} (missing trajectories: {e['missing_trajectories']})", ""]
    if m.get("shopper"):
        s = m["shopper"]
        lines[-1:-1] = [f"- LLM shopper ({', '.join(s['user_models'])}): {s['answered_by_llm']} of {s['turns']} turns "
                        f"answered by the model ({s['fallbacks']['leak']} replaced for leaking an unasked value, "
                        f"{s['fallbacks']['call_failed']} invalid model replies); agreement with the scripted matcher "
                        f"{pct(s['agreement'])} of model-answered turns"]
    for name, key in (("source", "by_source"), ("rubric type", "by_rubric_type")):
        lines += [f"| {name} | rubrics | satisfied | not satisfied | unscored | satisfaction |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {k} | {v['count']} | {v['satisfied']} | {v['not_satisfied']} | {v['unscored']} | "
                  f"{pct(v['satisfaction'])} |" for k, v in m[key].items()]
        lines.append("")
    lines += ["| intent | tasks | correct | incorrect | unscored | accuracy |", "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {k} | {v['tasks']} | {v['correct']} | {v['incorrect']} | {v['unscored']} | {pct(v['accuracy'])} |"
              for k, v in m["by_intent"].items()]
    return "\n".join(lines) + "\n"


