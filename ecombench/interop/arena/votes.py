"""Pairwise votes between systems (CRS Arena's vote tables), their ratings and how well the votes connect them.

A vote table is a CSV with at least the columns `crs1`, `crs2` and `vote` (iai-group/crsarena-dial
README: `session_id, user_id, crs1, crs2, vote, feedback`): `vote` names the preferred system (equal to
`crs1` or `crs2`) or is `tie`. Several tables are read in the order given, each in file order, which is
the order CRS Arena's Elo plays them (its analysis concatenates the open votes and then the closed).

Bradley–Terry has a finite fit only when every system both beats and loses to (or ties with) the rest
through some chain of votes: in the graph with an edge winner -> loser for each vote (both ways for a
tie) every system reaches every other. When it does not, the ratings between the groups come from the
fit's regularisation, not from the votes, so `graph_warnings` says so, as it says when the systems
fall into groups that never met, when a single pair of systems is the only link between two groups, and
when a system met fewer than two opponents.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecombench.errors import InputError
from ecombench.interop.arena.battles import LOSS, TIE, WIN
from ecombench.interop.arena.ratings import bootstrap

COLUMNS = ("crs1", "crs2", "vote")
TIE_VOTE = "tie"
# A link between two groups of systems resting on this many votes or fewer is reported.
FEW_VOTES = 2
# The columns that make two rows one voter's same vote (crsarena-dial tool/merge.py drops such rows).
DUPLICATE_KEY = ("user_id", "crs1", "crs2", "vote")


@dataclass(frozen=True)
class Vote:
    """One row of a vote table.

    Attributes:
        file, line: where it is (line 2 is the first row after the header).
        a, b: the two systems (crs1, crs2).
        outcome: for `a`: 1 (a preferred), 0 (b preferred) or 0.5 (tie).
        key: the row's DUPLICATE_KEY values (None when the table has no user_id column).
    """

    file: str
    line: int
    a: str
    b: str
    outcome: float
    key: tuple[str, ...] | None


def read_votes(paths: list[Path]) -> list[Vote]:
    """Every vote of the tables, in argument order and file order.

    Raises:
        InputError: a file is missing, lacks a column of COLUMNS, or a row names an empty system, the
            same system twice, or a vote that is neither of its systems nor `tie` (names file and line).
    """
    votes: list[Vote] = []
    for path in paths:
        try:
            with Path(path).open(encoding="utf-8", newline="") as f:
                reader = csv.DictReader(f)
                missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
                if missing:
                    raise InputError(f"{path}: not a vote table: no column {', '.join(missing)} (needs "
                                     f"{', '.join(COLUMNS)}, as CRS Arena's votes_*.csv)")
                for row in reader:
                    line = reader.line_num
                    a, b, vote = (str(row.get(c) or "").strip() for c in COLUMNS)
                    if not a or not b or a == b:
                        raise InputError(f"{path}:{line}: crs1 and crs2 must name two different systems "
                                         f"({a!r}, {b!r})")
                    if vote == a:
                        outcome = WIN
                    elif vote == b:
                        outcome = LOSS
                    elif vote.casefold() == TIE_VOTE:
                        outcome = TIE
                    else:
                        raise InputError(f"{path}:{line}: vote {vote!r} is neither crs1 ({a}), crs2 ({b}) nor tie")
                    key = tuple(str(row.get(c) or "") for c in DUPLICATE_KEY) if "user_id" in row else None
                    votes.append(Vote(str(path), line, a, b, outcome, key))
        except FileNotFoundError:
            raise InputError(f"vote table not found: {path}") from None
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not a UTF-8 CSV ({exc.reason})") from None
    if not votes:
        raise InputError(f"no votes in {', '.join(map(str, paths))}")
    return votes


def duplicates(votes: list[Vote]) -> list[Vote]:
    """The votes that repeat an earlier row's user_id, crs1, crs2 and vote (the later ones)."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for v in votes:
        if v.key is None:
            continue
        if v.key in seen:
            out.append(v)
        seen.add(v.key)
    return out


def _reach(start: str, edges: dict[str, set[str]]) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _groups(names: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Connected components of an undirected graph, each in `names` order, ordered by their first system."""
    out: list[list[str]] = []
    for name in names:
        if not any(name in g for g in out):
            reached = _reach(name, edges)
            out.append([n for n in names if n in reached])
    return out


def _fmt(group: list[str]) -> str:
    return "{" + ", ".join(group) + "}"


def graph_warnings(names: list[str], votes: list[Vote], few: int = FEW_VOTES) -> list[str]:
    """What makes the comparison graph barely connected (see the module docstring), one sentence each."""
    pairs: Counter[frozenset[str]] = Counter(frozenset((v.a, v.b)) for v in votes)
    undirected: dict[str, set[str]] = {n: set() for n in names}
    beats: dict[str, set[str]] = {n: set() for n in names}
    for v in votes:
        undirected[v.a].add(v.b)
        undirected[v.b].add(v.a)
        if v.outcome != LOSS:
            beats[v.a].add(v.b)
        if v.outcome != WIN:
            beats[v.b].add(v.a)
    out = []
    groups = _groups(names, undirected)
    if len(groups) > 1:
        out.append(f"the systems fall into {len(groups)} groups that never met ({' | '.join(map(_fmt, groups))}): "
                   "ratings across groups mean nothing; rank each group on its own")
    reach = {n: _reach(n, beats) for n in names}
    strong = _groups(names, {n: {m for m in names if m in reach[n] and n in reach[m]} for n in names})
    if len(strong) > 1 and len(groups) == 1:
        out.append(f"Bradley–Terry has no finite fit: the systems form {len(strong)} groups "
                   f"({' | '.join(map(_fmt, strong))}) where one group never loses to or never beats another, so "
                   "the ratings between the groups come from the fit's regularisation, not from the votes")
    for pair, count in sorted(pairs.items(), key=lambda p: sorted(p[0])):
        if count > few:
            continue
        u, w = sorted(pair)
        cut = {n: {m for m in undirected[n] if frozenset((n, m)) != pair} for n in names}
        side = _reach(u, cut)
        if w not in side:
            parts = sorted(([n for n in names if n in side], [n for n in names if n not in side]),
                           key=lambda g: names.index(g[0]))
            out.append(f"{count} vote{'s' if count > 1 else ''} of {u} vs {w} {'are' if count > 1 else 'is'} the only "
                       f"link between {_fmt(parts[0])} and {_fmt(parts[1])}")
    for n in names:
        if len(undirected[n]) < 2:
            met = sorted(undirected[n])
            count = sum(n in (v.a, v.b) for v in votes)
            out.append(f"{n} met only {met[0] if met else 'nobody'} ({count} vote{'s' if count != 1 else ''})")
    return out


def vote_tables(names: list[str], votes: list[Vote]) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Per system (votes, opponents, win, tie, loss) and per pair (A vs B in first-seen order: votes, wins, ties)."""
    counts: dict[str, Counter[str]] = {n: Counter() for n in names}
    opponents: dict[str, set[str]] = {n: set() for n in names}
    order = {n: i for i, n in enumerate(names)}
    pairs: dict[str, dict[str, Any]] = {}
    for v in votes:
        for me, other, o in ((v.a, v.b, v.outcome), (v.b, v.a, 1.0 - v.outcome)):
            counts[me].update(["votes", "win" if o == WIN else "tie" if o == TIE else "loss"])
            opponents[me].add(other)
        a, b, o = (v.a, v.b, v.outcome) if order[v.a] < order[v.b] else (v.b, v.a, 1.0 - v.outcome)
        p = pairs.setdefault(f"{a} vs {b}", {"a": a, "b": b, "votes": 0, "a_wins": 0, "ties": 0, "b_wins": 0})
        p["votes"] += 1
        p["a_wins" if o == WIN else "ties" if o == TIE else "b_wins"] += 1
    table = [{"name": n, "votes": counts[n]["votes"], "opponents": len(opponents[n]), "win": counts[n]["win"],
              "tie": counts[n]["tie"], "loss": counts[n]["loss"]} for n in names]
    return table, dict(sorted(pairs.items(), key=lambda kv: (order[kv[1]["a"]], order[kv[1]["b"]])))


def compare_votes(paths: list[Path], replicates: int = 1000, seed: int = 0, k: float = 16.0,
                  dedupe: bool = False) -> dict[str, Any]:
    """Everything `ecombench compare --votes` reports (JSON-ready).

    Args:
        paths: the vote tables.
        replicates: bootstrap replicates over votes.
        seed: the bootstrap's seed (a named part of sha256 seeds).
        k: Elo K-factor.
        dedupe: drop votes repeating an earlier row's user_id, crs1, crs2 and vote (kept by default, as the
            published CRS Arena Elo keeps them).

    Returns:
        {"source": "votes", "files", "votes", "runs": [{"name"}] (systems, first-seen order), "systems": per
        system counts, "pairs": per pair counts, "ratings": ecombench.interop.arena.ratings.bootstrap output
        (Elo one pass in table order), "warnings": [...], "rule"}.

    Raises:
        InputError: see `read_votes`.
    """
    votes = read_votes(paths)
    repeated = duplicates(votes)
    warnings = []
    if repeated and dedupe:
        drop = {(v.file, v.line) for v in repeated}
        votes = [v for v in votes if (v.file, v.line) not in drop]
        warnings.append(f"{len(repeated)} duplicate vote(s) dropped (same user_id, crs1, crs2 and vote)")
    elif repeated:
        warnings.append(f"{len(repeated)} duplicate vote(s) (same user_id, crs1, crs2 and vote, e.g. "
                        f"{repeated[0].file}:{repeated[0].line}) kept, as CRS Arena's published Elo keeps them; "
                        "--dedupe-votes drops them")
    names = list(dict.fromkeys(n for v in votes for n in (v.a, v.b)))
    index = {n: i for i, n in enumerate(names)}
    units = [f"{v.file}:{v.line}" for v in votes]
    fights = [(u, index[v.a], index[v.b], v.outcome) for u, v in zip(units, votes)]
    label = "votes:" + ",".join(Path(p).name for p in paths)
    ratings = bootstrap(names, units, fights, None, replicates, seed, k, label=label, elo_order="given")
    systems, pairs = vote_tables(names, votes)
    return {"source": "votes", "files": [str(p) for p in paths], "votes": len(votes),
            "runs": [{"name": n} for n in names], "systems": systems, "pairs": pairs, "ratings": ratings,
            "warnings": warnings + graph_warnings(names, votes),
            "rule": "each vote is one battle: the chosen system wins, `tie` is half a win each"}
