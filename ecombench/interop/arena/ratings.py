"""Ratings from battles: Bradley–Terry strengths (choix) and online Elo, with bootstrap intervals over tasks.

Both are reported on the Elo scale CRS Arena and Chatbot Arena use (1000 + 400·log10 of the odds):
a Bradley–Terry strength θ becomes 1000 + 400·θ/ln 10, centred so the mean run is 1000. A tie counts
as half a win: every battle enters the Bradley–Terry fit as two comparisons (a win twice, a tie once
each way). Online Elo depends on the order of battles, so every bootstrap replicate plays them in its
own shuffled order and the reported Elo is the replicates' median (Chatbot Arena's practice; one
fixed order can fall outside its own interval). Replicates resample tasks (all of a
task's battles together) with generators seeded by sha256 of named parts (ecombench.hashing.seed_int),
never Python's hash() or the global random state. For a vote table (ecombench.interop.arena.votes) the unit is
a vote and Elo is one pass in the table's order, as CRS Arena publishes it.
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


# Ratings closer than this are equal: two runs with identical battles get ratings that differ by rounding only.
EQUAL_RATING = 1e-6


def direction(a: str, b: str, samples_a: np.ndarray, samples_b: np.ndarray) -> dict[str, Any]:
    """How sure the replicates are of which of two systems rates higher, named by direction.

    Returns:
        {"p_a_better": share of replicates with A above B, equal ratings counting half; "better": the name
        more likely better (None at exactly 0.5); "p_better": that one's probability (at least 0.5)}. Two
        identical runs read "p_better 0.5, better None", never "B better with 97.8 %".
    """
    diff = samples_a - samples_b
    p = float(np.mean(diff > EQUAL_RATING) + 0.5 * np.mean(np.abs(diff) <= EQUAL_RATING))
    better = a if p > 0.5 else b if p < 0.5 else None
    return {"p_a_better": round(p, 4), "better": better, "p_better": round(max(p, 1 - p), 4)}


def bootstrap(names: list[str], task_ids: list[str], battles: list[tuple[str, int, int, float]],
              correct: dict[str, list[bool]] | None = None, replicates: int = 1000, seed: int = 0, k: float = 16.0,
              label: str = "", elo_order: str = "shuffled") -> dict[str, Any]:
    """Point estimates and 95% bootstrap intervals (percentiles 2.5 and 97.5) over resampling units.

    Args:
        names: system names (index order of the battles).
        task_ids: every resampling unit (a task of graded runs; a vote of a vote table).
        battles: (unit, a, b, outcome for a), in the order they were played.
        correct: per run name, correct or not for each task in `task_ids` order (accuracy intervals);
            None for votes, which have no accuracy.
        replicates: bootstrap replicates.
        seed: a named part of every replicate's seed (with "arena-bootstrap", `label` and the replicate index).
        label: a named part of every replicate's seed, next to `seed`.
        k: Elo K-factor.
        elo_order: "shuffled" (each replicate plays its battles in its own order; the reported Elo is the
            replicates' median) or "given" (one pass in the battles' order, as CRS Arena publishes it; each
            replicate keeps that order).

    Returns:
        {"runs": {name: {"bt": x, "bt_ci": [lo, hi], "elo": x, "elo_ci": [...], ["accuracy": x,
        "accuracy_ci": [...]], "rank": r (by Bradley–Terry), "elo_rank": r}}, "pairs": {"A vs B": `direction`
        of the Bradley–Terry replicates, "bt_intervals_overlap": bool[, "accuracy_intervals_overlap"]},
        "replicates", "seed", "elo_k", "elo_order"}.
    """
    n = len(names)
    index = {t: i for i, t in enumerate(task_ids)}
    by_task: list[list[tuple[int, int, float]]] = [[] for _ in task_ids]
    for t, a, b, o in battles:
        by_task[index[t]].append((a, b, o))
    flat = [x for per in by_task for x in per]
    given = [(a, b, o) for _, a, b, o in battles]
    acc_matrix = np.array([correct[m] for m in names], dtype=float) if correct is not None else None
    bt0 = bradley_terry(n, flat)
    bts, elos = np.empty((replicates, n)), np.empty((replicates, n))
    accs = np.empty((replicates, n))
    for rep in range(replicates):
        gen = np.random.default_rng(seed_int("arena-bootstrap", seed, label, rep))
        pick = gen.integers(0, len(task_ids), len(task_ids))
        if elo_order == "given":
            pick.sort()
        sample = [x for i in pick for x in by_task[i]]
        bts[rep] = bradley_terry(n, sample)
        if elo_order == "given":
            elos[rep] = elo(n, sample, k)
        else:
            order = gen.permutation(len(sample))
            elos[rep] = elo(n, [sample[i] for i in order], k)
        if acc_matrix is not None:
            accs[rep] = acc_matrix[:, pick].mean(axis=1)
    elo0 = elo(n, given, k) if elo_order == "given" else np.median(elos, axis=0)
    ranks = {names[i]: r for r, i in enumerate(sorted(range(n), key=lambda i: (-bt0[i], names[i])), 1)}
    elo_ranks = {names[i]: r for r, i in enumerate(sorted(range(n), key=lambda i: (-elo0[i], names[i])), 1)}
    runs: dict[str, dict[str, Any]] = {}
    for i in range(n):
        runs[names[i]] = {"bt": round(float(bt0[i]), 2), "bt_ci": _interval(bts[:, i]),
                          "elo": round(float(elo0[i]), 2), "elo_ci": _interval(elos[:, i]),
                          "rank": ranks[names[i]], "elo_rank": elo_ranks[names[i]]}
        if acc_matrix is not None:
            runs[names[i]].update(accuracy=round(float(acc_matrix[i].mean()), 4), accuracy_ci=_interval(accs[:, i]))
    pairs = {}
    for i in range(n):
        for j in range(i + 1, n):
            a, b = runs[names[i]]["bt_ci"], runs[names[j]]["bt_ci"]
            pair = {**direction(names[i], names[j], bts[:, i], bts[:, j]),
                    "bt_intervals_overlap": not (a[1] < b[0] or b[1] < a[0])}
            if acc_matrix is not None:
                pair["accuracy_intervals_overlap"] = not (
                    runs[names[i]]["accuracy_ci"][1] < runs[names[j]]["accuracy_ci"][0]
                    or runs[names[j]]["accuracy_ci"][1] < runs[names[i]]["accuracy_ci"][0])
            pairs[f"{names[i]} vs {names[j]}"] = pair
    return {"runs": runs, "pairs": pairs, "replicates": replicates, "seed": seed, "elo_k": k, "elo_order": elo_order}
