"""The build's construction check: the oracle must solve every task that passed validation.

Runs the sandbox's scripted oracle (sandbox/agents.py) on each accepted candidate within the episode
budget (100 tool calls, 10 clarification turns); a task it cannot solve — its target unreachable by
search, a slot that never opens, a requirement the tools cannot show — becomes a rejection with reason
`oracle_failed` (stage 7) and the oracle's evidence. Then the null agent (first search hit for the
visible query) and the diligent agent (no rubric knowledge: natural questions, then search and judge;
the split's fairness figure) are graded on the tasks kept, and so are the ablated oracles:
`oracle_no_ask` (never asks) and `oracle_no_profile` (never reads the profile). The figures go into the split manifest
(`agent_checks`).
Peer benchmarks shipped targets their own tools could not find (reference §15.20); this proves each
task solvable. The oracle is deterministic, so the same config still gives a byte-identical tasks.jsonl.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from ecombench.pipeline.candidate import CandidateResult
from ecombench.pipeline.config import BuildConfig
from ecombench.sandbox.agents import ABLATED_ORACLES, run_ablated_oracle, run_diligent, run_null, run_oracle
from ecombench.sandbox.catalog import SandboxCatalog
from ecombench.sandbox.grader import grade_episode
from ecombench.sandbox.tools import Episode, EpisodeLimits
from ecombench.schemas.findings import Finding, rejection_record, rejection_stage
from ecombench.tables.fields import FieldTable


def _spread(values: list[int]) -> dict[str, Any]:
    return {"mean": round(sum(values) / len(values), 2) if values else None, "max": max(values, default=None)}


def oracle_rejection(task: dict[str, Any], record: dict[str, Any], graded: dict[str, Any],
                     limits: EpisodeLimits) -> dict[str, Any]:
    """The rejection record (schemas/rejection.schema.json) of a task the oracle did not solve."""
    intent, asin = task["intent"], task["target_product"]["parent_asin"]
    failing = [r for r in graded["rubric_results"] if r["status"] != "satisfied"]
    why = (f"recommended {record['predicted_product_id']}, which fails {len(failing)} rubric(s)"
           if record["predicted_product_id"] else "made no recommendation")
    if record.get("unrevealed"):
        why += f"; the tools never revealed {', '.join(record['unrevealed'])}"
    evidence = {"task_id": task["id"], "predicted_product_id": record["predicted_product_id"],
                "tool_calls": record["tool_calls"], "unrevealed": record.get("unrevealed", []),
                "failing": failing[:10],
                "calls_by_tool": dict(sorted(Counter(s["tool"] for s in record["steps"]).items()))}
    finding = Finding("oracle_failed", f"the oracle {why} within {record['tool_calls']} of {limits.max_tool_calls} "
                      "tool calls", evidence)
    return rejection_record(intent, asin, [finding], task["provenance"]["attempt"],
                            rejection_stage(finding.reason, 7))


def check_agents(config: BuildConfig, results: list[CandidateResult], table: FieldTable, *, artifacts: Path,
                 limits: EpisodeLimits = EpisodeLimits()) -> tuple[list[CandidateResult], dict[str, Any]]:
    """Run the oracle on every accepted candidate; reject what it cannot solve; grade the null agent.

    Args:
        config: the build config (`oracle_check` off returns the results unchanged and {}).
        results: candidate results of stages 2-7, in build order.
        table: the field table.
        artifacts: the artifacts root; the sandbox's search index is cached under cache/sandbox.
        limits: the episode budget.

    Returns:
        (results with unsolved tasks turned into `oracle_failed` rejections, the manifest's
        `agent_checks`: {budget, oracle: {candidates, solved, accuracy, rejected, tool_calls},
        null: {tasks, correct, accuracy}, diligent: {tasks, correct, accuracy, by_intent, slots,
        slots_opened, slot_open_rate, tool_calls}, oracle_no_ask / oracle_no_profile: {tasks, correct, accuracy},
        seconds}).

    Raises:
        FileNotFoundError: the catalog snapshot has no products.parquet.
    """
    if not config.oracle_check:
        return results, {}
    started = time.perf_counter()
    catalog = SandboxCatalog.open(config.catalog, table, cache_dir=Path(artifacts) / "cache" / "sandbox")
    opened = time.perf_counter() - started
    out, calls, solved = [], [], 0
    for r in results:
        if r.task is None:
            out.append(r)
            continue
        record = run_oracle(Episode(catalog, r.task, limits), table)
        calls.append(record["tool_calls"])
        graded = grade_episode(r.task, record, catalog)
        if graded["status"] == "correct":
            solved += 1
            out.append(r)
            continue
        stats = Counter(r.stats)
        stats.update({"accepted": -1, "rejected": 1, "oracle_failed": 1})
        out.append(CandidateResult(rejection=oracle_rejection(r.task, record, graded, limits), stats=stats,
                                   resumed=r.resumed))
    kept = [r.task for r in out if r.task is not None]
    null_correct = sum(grade_episode(t, run_null(Episode(catalog, t, limits)), catalog)["status"] == "correct"
                       for t in kept)
    diligent = diligent_check(kept, catalog, table, limits)
    # Ablated oracles on the published tasks: each should fail where its skipped source was needed.
    ablated = {}
    for name in ABLATED_ORACLES:
        correct = sum(grade_episode(t, run_ablated_oracle(Episode(catalog, t, limits), table, name), catalog)["status"]
                      == "correct" for t in kept)
        ablated[name] = {"tasks": len(kept), "correct": correct,
                         "accuracy": round(correct / len(kept), 4) if kept else None}
    n = len(calls)
    return out, {**ablated,
        "budget": {"max_tool_calls": limits.max_tool_calls, "max_clarification_turns": limits.max_clarification_turns},
        "oracle": {"candidates": n, "solved": solved, "accuracy": round(solved / n, 4) if n else None,
                   "rejected_oracle_failed": n - solved, "accuracy_on_published": 1.0 if kept else None,
                   "tool_calls": _spread(calls)},
        "null": {"tasks": len(kept), "correct": null_correct,
                 "accuracy": round(null_correct / len(kept), 4) if kept else None},
        "diligent": diligent,
        "seconds": {"open_catalog": round(opened, 2), "total": round(time.perf_counter() - started, 2)},
    }


def diligent_check(tasks: list[dict[str, Any]], catalog: SandboxCatalog, table: FieldTable,
                   limits: EpisodeLimits = EpisodeLimits()) -> dict[str, Any]:
    """The diligent agent (ecombench.sandbox.agents.run_diligent) graded on the published tasks: the fairness figure.

    Returns:
        {tasks, correct, accuracy, by_intent: {intent: {tasks, correct, accuracy}}, slots (clarification
        slots in the tasks), slots_opened (those its questions opened), slot_open_rate, tool_calls}.
    """
    by_intent: dict[str, Counter] = {}
    slots = opened = correct = 0
    calls = []
    for t in tasks:
        record = run_diligent(Episode(catalog, t, limits), table)
        ok = grade_episode(t, record, catalog)["status"] == "correct"
        c = by_intent.setdefault(t["intent"], Counter())
        c["tasks"] += 1
        c["correct"] += ok
        correct += ok
        slots += len(t["clarification_script"]["clarification_slots"])
        opened += len(record["revealed_slots"])
        calls.append(record["tool_calls"])
    return {"tasks": len(tasks), "correct": correct, "accuracy": round(correct / len(tasks), 4) if tasks else None,
            "by_intent": {i: {"tasks": c["tasks"], "correct": c["correct"],
                              "accuracy": round(c["correct"] / c["tasks"], 4)}
                          for i, c in sorted(by_intent.items())},
            "slots": slots, "slots_opened": opened, "slot_open_rate": round(opened / slots, 4) if slots else None,
            "tool_calls": _spread(calls)}
