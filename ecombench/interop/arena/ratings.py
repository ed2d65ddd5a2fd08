"""Ratings from battles: Bradley–Terry strengths (choix) and online Elo, with bootstrap intervals over tasks.

Both are reported on the Elo scale CRS Arena and Chatbot Arena use (1000 + 400·log10 of the odds):
a Bradley–Terry strength θ becomes 1000 + 400·θ/ln 10, centred so the mean run is 1000. A tie counts
as half a win: every battle enters the Bradley–Terry fit as two comparisons (a win twice, a tie once
each way). Online Elo depends on the order of battles, so every bootstrap replicate plays them in its
own shuffled order and the reported Elo is the replicates' median (Chatbot Arena's practice; one
fixed order can fall outside its own interval). Replicates resample tasks (all of a
task's battles together) with generators seeded by sha256 of named parts (ecombench.hashing.seed_int),
never Python's hash() or the global random state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ecombench.hashing import seed_int

ELO_BASE, ELO_SCALE = 1000.0, 400.0


def bradley_terry(n: int, battles: Sequence[tuple[int, int, float]], alpha: float = 0.01) -> np.ndarray:
    """Bradley–Terry ratings (Elo scale) of `n` runs from (a, b, outcome for a) battles.

    Args:
        n: number of runs.
        battles: (index a, index b, 1 | 0.5 | 0) triples.
        alpha: choix's regularisation (pseudo-comparisons), which keeps the fit finite when a run wins
            every battle (the oracle against the null agent).

    Returns:
        float array of shape (n,), mean 1000.
    """
    # deferred: an optional dependency (the crs extra)
    import choix

    data: list[tuple[int, int]] = []
    for a, b, o in battles:
        data += [(a, b), (a, b)] if o == 1.0 else [(b, a), (b, a)] if o == 0.0 else [(a, b), (b, a)]
    if not data:
        return np.full(n, ELO_BASE)
    try:
        theta = choix.ilsr_pairwise(n, data, alpha=alpha, max_iter=1000)
    except RuntimeError:  # ILSR did not converge: the slower optimiser always returns
        theta = choix.opt_pairwise(n, data, alpha=alpha)
    theta = np.asarray(theta, dtype=float)
    return ELO_BASE + ELO_SCALE * (theta - theta.mean()) / math.log(10)


def elo(n: int, battles: Sequence[tuple[int, int, float]], k: float = 16.0) -> np.ndarray:
    """Online Elo ratings of `n` runs after playing `battles` in the given order (all start at 1000).

    Returns:
        float array of shape (n,).
    """
    r = np.full(n, ELO_BASE)
    for a, b, o in battles:
        expected = 1.0 / (1.0 + 10 ** ((r[b] - r[a]) / ELO_SCALE))
        r[a] += k * (o - expected)
        r[b] -= k * (o - expected)
    return r


def _interval(samples: np.ndarray) -> list[float]:
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return [round(float(lo), 4), round(float(hi), 4)]


def bootstrap(names: list[str], task_ids: list[str], battles: list[tuple[str, int, int, float]],
              correct: dict[str, list[bool]], replicates: int = 1000, seed: int = 0, k: float = 16.0,
              label: str = "") -> dict[str, Any]:
    """Point estimates and 95% bootstrap intervals (percentiles 2.5 and 97.5) over tasks.

    Args:
        names: run names (index order of the battles).
        task_ids: every task (the resampling unit).
        battles: (task_id, a, b, outcome for a).
        correct: per run name, correct or not for each task in `task_ids` order (accuracy intervals).
        replicates: bootstrap replicates.
        seed: a named part of every replicate's seed (with "arena-bootstrap", `label` and the replicate index).
        label: a named part of every replicate's seed, next to `seed`.
        k: Elo K-factor.

    Returns:
        {"runs": {name: {"bt": x, "bt_ci": [lo, hi], "elo": median over replicates, "elo_ci": [...], "accuracy": x,
        "accuracy_ci": [...], "rank": r}}, "pairs": {"A vs B": {"p_a_better": share of replicates with A's
        BT rating above B's, "bt_intervals_overlap": bool}}, "replicates", "seed", "elo_k"}.
    """
    n = len(names)
    index = {t: i for i, t in enumerate(task_ids)}
    by_task: list[list[tuple[int, int, float]]] = [[] for _ in task_ids]
    for t, a, b, o in battles:
        by_task[index[t]].append((a, b, o))
    flat = [x for per in by_task for x in per]
    acc_matrix = np.array([correct[m] for m in names], dtype=float)  # (runs, tasks)
    bt0, acc0 = bradley_terry(n, flat), acc_matrix.mean(axis=1)
    bts, elos, accs = np.empty((replicates, n)), np.empty((replicates, n)), np.empty((replicates, n))
    for rep in range(replicates):
        gen = np.random.default_rng(seed_int("arena-bootstrap", seed, label, rep))
        pick = gen.integers(0, len(task_ids), len(task_ids))
        sample = [x for i in pick for x in by_task[i]]
        order = gen.permutation(len(sample))
        bts[rep] = bradley_terry(n, sample)
        elos[rep] = elo(n, [sample[i] for i in order], k)
        accs[rep] = acc_matrix[:, pick].mean(axis=1)
    elo0 = np.median(elos, axis=0)
    ranks = {names[i]: r for r, i in enumerate(sorted(range(n), key=lambda i: (-bt0[i], names[i])), 1)}
    runs: dict[str, dict[str, Any]] = {names[i]: {"bt": round(float(bt0[i]), 2), "bt_ci": _interval(bts[:, i]),
                       "elo": round(float(elo0[i]), 2), "elo_ci": _interval(elos[:, i]),
                       "accuracy": round(float(acc0[i]), 4), "accuracy_ci": _interval(accs[:, i]),
                       "rank": ranks[names[i]]} for i in range(n)}
    pairs = {}
    for i in range(n):
        for j in range(i + 1, n):
            a, b = runs[names[i]]["bt_ci"], runs[names[j]]["bt_ci"]
            pairs[f"{names[i]} vs {names[j]}"] = {
                "p_a_better": round(float(np.mean(bts[:, i] > bts[:, j])), 4),
                "bt_intervals_overlap": not (a[1] < b[0] or b[1] < a[0]),
                "accuracy_intervals_overlap": not (
                    runs[names[i]]["accuracy_ci"][1] < runs[names[j]]["accuracy_ci"][0]
                    or runs[names[j]]["accuracy_ci"][1] < runs[names[i]]["accuracy_ci"][0])}
    return {"runs": runs, "pairs": pairs, "replicates": replicates, "seed": seed, "elo_k": k}
