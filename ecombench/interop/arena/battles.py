"""Graded runs and the pairwise battles between them, one per task and pair of runs.

A battle on a task: a correct run beats an incorrect one; otherwise (both correct, both incorrect,
or one unscored) the share of scored rubrics the recommendation satisfies decides; equal shares are
a tie. Runs are read from the files `ecombench grade` writes (`<name>.graded.jsonl` beside
`<name>.metrics.json`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecombench.errors import InputError

WIN, TIE, LOSS = 1.0, 0.5, 0.0


@dataclass
class Run:
    """One graded run.

    Attributes:
        name: how tables name it (the file stem: "oracle", "null", "oracle-15calls").
        path: its graded.jsonl.
        split: the split it was graded on (metrics.json "split"; None when no metrics file).
        agents, models: from metrics.json.
        graded: per-task results (ecombench.sandbox.grader.grade_episode dicts) by task id.
    """

    name: str
    path: Path
    split: str | None
    agents: list[str]
    models: list[str]
    graded: dict[str, dict[str, Any]]
    split_sha256: str | None = None  # the tasks.jsonl the run was graded against (`ecombench grade` records it)

    @property
    def accuracy(self) -> float | None:
        """Share of scored tasks graded correct (unscored ones left out); None when none is scored."""
        scored = [g for g in self.graded.values() if g["status"] != "unscored"]
        return sum(g["status"] == "correct" for g in scored) / len(scored) if scored else None


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".graded.jsonl", ".metrics.json", ".trajectories.jsonl", ".jsonl", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def load_run(path: Path) -> Run:
    """A graded run from its metrics.json, graded.jsonl or trajectories file (the others are found beside it).

    Raises:
        FileNotFoundError: no graded.jsonl beside `path` (run `ecombench grade` first).
        InputError: a graded line is not a JSON object with task_id and status (names file and line).
    """
    stem = _stem(path)
    graded_path = path.with_name(f"{stem}.graded.jsonl")
    metrics_path = path.with_name(f"{stem}.metrics.json")
    if not graded_path.is_file():
        raise FileNotFoundError(f"{graded_path} not found: grade the run first (ecombench grade {path} --split ...)")
    graded: dict[str, dict[str, Any]] = {}
    with graded_path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{graded_path}:{n}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict) or "task_id" not in row or "status" not in row:
                raise InputError(f"{graded_path}:{n}: not a graded task (needs task_id and status)")
            graded[row["task_id"]] = row
    metrics = json.loads(metrics_path.read_text(encoding="utf-8")) if metrics_path.is_file() else {}
    return Run(stem, graded_path, metrics.get("split"), metrics.get("agents", []), metrics.get("models", []), graded,
               metrics.get("split_sha256"))


def check_same_split(runs: list[Run]) -> list[str]:
    """The task ids every run was graded on (sorted).

    Raises:
        InputError: fewer than two runs, two runs with one name, runs of different splits (or of different
            contents of one split), or runs graded on different task sets (names the runs and a task id).
    """
    if len(runs) < 2:
        raise InputError("compare needs at least two graded runs")
    names = [r.name for r in runs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"two runs are named {dup[0]!r}; give trajectory files distinct names")
    splits = {r.split for r in runs if r.split is not None}
    if len(splits) > 1:
        raise InputError(f"runs were graded on different splits: {sorted(splits)}")
    contents = {r.split_sha256 for r in runs if r.split_sha256 is not None}
    if len(contents) > 1:  # one split name, different tasks.jsonl (a copy, an edited version)
        raise InputError(f"runs were graded on different contents of split {next(iter(splits), '?')}: tasks.jsonl "
                         f"sha256 {', '.join(sorted(c[:12] + '…' for c in contents))}")
    ids = sorted(runs[0].graded)
    for r in runs[1:]:
        if set(r.graded) != set(ids):
            odd = sorted(set(r.graded) ^ set(ids))[0]
            raise InputError(f"{r.name} and {runs[0].name} were graded on different tasks (e.g. {odd})")
    return ids


def satisfaction(graded: dict[str, Any], source: str | None = None) -> float:
    """Share of scored rubrics (of one info source, or all) the recommendation satisfies; 0 when none is scored."""
    rows = [r for r in graded["rubric_results"] if source is None or r["info_source"] == source]
    sat = sum(r["status"] == "satisfied" for r in rows)
    scored = sat + sum(r["status"] == "not_satisfied" for r in rows)
    return sat / scored if scored else 0.0


def outcome(a: dict[str, Any], b: dict[str, Any]) -> float:
    """1 when run A wins the task, 0 when B wins, 0.5 for a tie (see the module docstring)."""
    if a["status"] == "correct" and b["status"] == "incorrect":
        return WIN
    if b["status"] == "correct" and a["status"] == "incorrect":
        return LOSS
    sa, sb = satisfaction(a), satisfaction(b)
    return WIN if sa > sb else LOSS if sa < sb else TIE


def source_outcome(a: dict[str, Any], b: dict[str, Any], source: str) -> float | None:
    """The battle on one info source's rubrics only (satisfaction decides); None when the task has none."""
    if not any(r["info_source"] == source for r in a["rubric_results"]):
        return None
    sa, sb = satisfaction(a, source), satisfaction(b, source)
    return WIN if sa > sb else LOSS if sa < sb else TIE


def battles(runs: list[Run], task_ids: list[str]) -> list[tuple[str, int, int, float]]:
    """Every battle: (task_id, index of run A, index of run B, outcome for A), A before B in `runs` order."""
    return [(t, i, j, outcome(runs[i].graded[t], runs[j].graded[t]))
            for t in task_ids for i in range(len(runs)) for j in range(i + 1, len(runs))]


def _wtl(values: list[float]) -> dict[str, int]:
    return {"win": sum(v == WIN for v in values), "tie": sum(v == TIE for v in values),
            "loss": sum(v == LOSS for v in values)}


def win_tie_loss(runs: list[Run], task_ids: list[str]) -> dict[str, Any]:
    """Win/tie/loss counts of each pair (A vs B, from A's side): overall, by intent and by info source.

    Returns:
        {"A vs B": {"overall": {win, tie, loss}, "by_intent": {intent: {...}}, "by_source": {source: {...}}}}.
    """
    out: dict[str, Any] = {}
    sources = sorted({r["info_source"] for run in runs for g in run.graded.values() for r in g["rubric_results"]})
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            a, b = runs[i].graded, runs[j].graded
            by_intent: dict[str, list[float]] = {}
            for t in task_ids:
                by_intent.setdefault(a[t]["intent"], []).append(outcome(a[t], b[t]))
            by_source = {s: [o for t in task_ids if (o := source_outcome(a[t], b[t], s)) is not None] for s in sources}
            out[f"{runs[i].name} vs {runs[j].name}"] = {
                "a": runs[i].name, "b": runs[j].name,
                "overall": _wtl([outcome(a[t], b[t]) for t in task_ids]),
                "by_intent": {k: _wtl(v) for k, v in sorted(by_intent.items())},
                "by_source": {k: _wtl(v) for k, v in by_source.items()}}
    return out
