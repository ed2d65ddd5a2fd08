"""The comparison as data, markdown and one self-contained HTML page (inline SVG, no scripts, no network)."""

from __future__ import annotations

from html import escape
from typing import Any

from ecombench.interop.arena.battles import Run, battles, check_same_split, win_tie_loss
from ecombench.interop.arena.ratings import bootstrap


def compare_runs(runs: list[Run], replicates: int = 1000, seed: int = 0, k: float = 16.0) -> dict[str, Any]:
    """Everything `ecombench compare` reports for graded runs of one split (JSON-ready).

    Returns:
        {"split", "tasks", "runs": [{name, agents, models, path}], "ratings": ecombench.interop.arena.ratings.bootstrap
        output, "win_tie_loss": ecombench.interop.arena.battles.win_tie_loss output, "rule"}.

    Raises:
        InputError: see ecombench.interop.arena.battles.check_same_split.
    """
    task_ids = check_same_split(runs)
    names = [r.name for r in runs]
    split = next((r.split for r in runs if r.split), None)
    fights = battles(runs, task_ids)
    correct = {r.name: [r.graded[t]["status"] == "correct" for t in task_ids] for r in runs}
    ratings = bootstrap(names, task_ids, fights, correct, replicates, seed, k, label=str(split))
    return {"split": split, "tasks": len(task_ids),
            "runs": [{"name": r.name, "agents": r.agents, "models": r.models, "path": str(r.path)} for r in runs],
            "ratings": ratings, "win_tie_loss": win_tie_loss(runs, task_ids),
            "rule": "correct beats incorrect; otherwise the share of scored rubrics satisfied decides; equal is a tie"}


def _ci(x: float, ci: list[float], digits: int = 1, scale: float = 1.0, unit: str = "") -> str:
    return f"{x * scale:.{digits}f}{unit} [{ci[0] * scale:.{digits}f}, {ci[1] * scale:.{digits}f}]"


def _ranked(c: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(c["runs"], key=lambda r: c["ratings"]["runs"][r["name"]]["rank"])


BETTER_CAPTION = ("'more likely better' names the system whose Bradley–Terry rating is above the other's in more "
                  "bootstrap replicates, with that share (equal ratings count half; 0.500 names neither)")


def more_likely_better(pair: dict[str, Any]) -> str:
    """A pair's direction in words: "oracle (P 0.998)", or "neither (P 0.500)"."""
    return f"{pair['better'] or 'neither'} (P {pair['p_better']:.3f})"


def _tables(c: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(caption, header, rows) of every table, shared by markdown and HTML."""
    rt = c["ratings"]
    runs = [[str(rt["runs"][r["name"]]["rank"]), r["name"], "/".join(r["agents"]) or "?", ", ".join(r["models"]) or "-",
             _ci(rt["runs"][r["name"]]["accuracy"], rt["runs"][r["name"]]["accuracy_ci"], 1, 100, "%"),
             _ci(rt["runs"][r["name"]]["bt"], rt["runs"][r["name"]]["bt_ci"], 0),
             _ci(rt["runs"][r["name"]]["elo"], rt["runs"][r["name"]]["elo_ci"], 0)] for r in _ranked(c)]
    tables = [("Runs, ranked by Bradley–Terry rating (95% bootstrap intervals over tasks)",
               ["rank", "run", "agent", "model", "accuracy", "Bradley–Terry (Elo scale)", "online Elo"], runs)]
    pairs = []
    for key, w in c["win_tie_loss"].items():
        o, p = w["overall"], rt["pairs"][key]
        pairs.append([w["a"], w["b"], str(o["win"]), str(o["tie"]), str(o["loss"]), more_likely_better(p),
                      "no" if not p["bt_intervals_overlap"] else "yes"])
    tables.append((f"Pairwise battles (from A's side); {BETTER_CAPTION}",
                   ["A", "B", "win", "tie", "loss", "more likely better", "intervals overlap"], pairs))
    for part, title in (("by_intent", "intent"), ("by_source", "info source (that source's rubrics only)")):
        rows = [[w["a"], w["b"], k, str(v["win"]), str(v["tie"]), str(v["loss"])]
                for w in c["win_tie_loss"].values() for k, v in w[part].items()]
        tables.append((f"Win / tie / loss by {title}", ["A", "B", title.split(" (")[0], "win", "tie", "loss"], rows))
    return tables


def _vote_tables(c: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(caption, header, rows) of a vote comparison's tables."""
    rt = c["ratings"]["runs"]
    counts = {s["name"]: s for s in c["systems"]}
    rows = [[str(rt[r["name"]]["rank"]), r["name"], str(counts[r["name"]]["votes"]),
             str(counts[r["name"]]["opponents"]),
             f"{counts[r['name']]['win']} / {counts[r['name']]['tie']} / {counts[r['name']]['loss']}",
             _ci(rt[r["name"]]["bt"], rt[r["name"]]["bt_ci"], 0), _ci(rt[r["name"]]["elo"], rt[r["name"]]["elo_ci"], 0),
             str(rt[r["name"]]["elo_rank"])] for r in _ranked(c)]
    pairs = [[p["a"], p["b"], str(p["votes"]), str(p["a_wins"]), str(p["ties"]), str(p["b_wins"]),
              more_likely_better(c["ratings"]["pairs"][key])]
             for key, p in c["pairs"].items()]
    return [("Systems, ranked by Bradley–Terry rating (95% bootstrap intervals over votes)",
             ["rank", "system", "votes", "opponents", "win / tie / loss", "Bradley–Terry (Elo scale)",
              "Elo (one pass in table order)", "Elo rank"], rows),
            (f"Pairs that met; {BETTER_CAPTION}",
             ["A", "B", "votes", "A preferred", "tie", "B preferred", "more likely better"], pairs)]


def _header(c: dict[str, Any]) -> tuple[str, str]:
    """(title, the sentence under it) of a comparison of runs or of votes."""
    r = c["ratings"]
    if c.get("source") == "votes":
        return (f"Comparison of {len(c['runs'])} systems from {c['votes']} votes",
                f"{c['votes']} votes from {', '.join(c['files'])}; rule: {c['rule']}. {r['replicates']} bootstrap "
                f"replicates over votes (seed {r['seed']}); Elo K = {r['elo_k']:g}, one pass in table order as CRS "
                "Arena publishes it.")
    return (f"Comparison on {c['split'] or 'one split'}",
            f"{c['tasks']} tasks, {len(c['runs'])} runs; battle rule: {c['rule']}. {r['replicates']} bootstrap "
            f"replicates over tasks (seed {r['seed']}); online Elo K = {r['elo_k']:g}.")


def markdown(c: dict[str, Any]) -> str:
    """compare.md: ratings, pairwise outcomes and (runs) win/tie/loss tables by intent and source; warnings."""
    title, intro = _header(c)
    lines = [f"# {title}", "", intro, ""]
    if c.get("warnings"):
        lines += ["## Warnings", "", *[f"- {w}" for w in c["warnings"]], ""]
    for caption, header, rows in (_vote_tables(c) if c.get("source") == "votes" else _tables(c)):
        lines += [f"## {caption}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


def forest_svg(c: dict[str, Any], key: str, title: str, scale: float = 1.0, unit: str = "") -> str:
    """An inline SVG forest plot: one row per run (ranked), its interval as a line and its estimate as a dot."""
    rows = _ranked(c)
    rt = c["ratings"]["runs"]
    lo = min(rt[r["name"]][f"{key}_ci"][0] for r in rows) * scale
    hi = max(rt[r["name"]][f"{key}_ci"][1] for r in rows) * scale
    pad = (hi - lo) * 0.08 or 1.0
    lo, hi = lo - pad, hi + pad
    width, left, right, row_h, top = 640, 150, 30, 34, 36
    height = top + row_h * len(rows) + 40

    def x(v: float) -> float:
        return left + (v * scale - lo) / (hi - lo) * (width - left - right)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
             f'<text x="{width / 2:.0f}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>']
    for i in range(5):
        v = lo + (hi - lo) * i / 4
        px = left + (width - left - right) * i / 4
        parts.append(f'<line x1="{px:.1f}" y1="{top - 6}" x2="{px:.1f}" y2="{height - 34}" stroke="#ddd"/>')
        parts.append(f'<text x="{px:.1f}" y="{height - 18}" text-anchor="middle" font-size="11">{v:.0f}{unit}</text>')
    for n, r in enumerate(rows):
        v = rt[r["name"]]
        y = top + row_h * n + row_h / 2
        a, b = v[f"{key}_ci"]
        parts += [f'<text x="{left - 10}" y="{y + 4:.1f}" text-anchor="end" font-size="12">{escape(r["name"])}</text>',
                  f'<line x1="{x(a):.1f}" y1="{y:.1f}" x2="{x(b):.1f}" y2="{y:.1f}" stroke="#336" stroke-width="3"/>',
                  f'<circle cx="{x(v[key]):.1f}" cy="{y:.1f}" r="5" fill="#c33"/>']
    parts.append("</svg>")
    return "".join(parts)


def html(c: dict[str, Any]) -> str:
    """compare.html: one self-contained page (inline CSS and SVG; no scripts, no external resources)."""
    title, intro = _header(c)
    votes = c.get("source") == "votes"
    out = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8"/>', f"<title>{escape(title)}</title>",
           "<style>body{font-family:sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse;margin:1em 0}"
           "td,th{border:1px solid #bbb;padding:.25em .6em;text-align:left}th{background:#eee}</style>",
           "</head><body>", f"<h1>{escape(title)}</h1>", f"<p>{escape(intro)}</p>"]
    if c.get("warnings"):
        out += ["<h2>Warnings</h2>", "<ul>", *[f"<li>{escape(w)}</li>" for w in c["warnings"]], "</ul>"]
    unit = "votes" if votes else "tasks"
    out += ['<figure id="bt-ratings">', forest_svg(c, "bt", "Bradley–Terry rating (Elo scale), 95% intervals"),
            f"<figcaption>Bradley–Terry ratings with 95% bootstrap intervals over {unit}</figcaption></figure>"]
    if votes:
        out += ['<figure id="elo">', forest_svg(c, "elo", "Elo, one pass in table order, 95% intervals"),
                "<figcaption>Elo ratings (one pass in table order) with 95% bootstrap intervals over votes"
                "</figcaption></figure>"]
    else:
        out += ['<figure id="accuracy">', forest_svg(c, "accuracy", "Accuracy (%), 95% intervals", 100, "%"),
                "<figcaption>Accuracy with 95% bootstrap intervals over tasks</figcaption></figure>"]
    for caption, header, rows in (_vote_tables(c) if votes else _tables(c)):
        out += [f"<h2>{escape(caption)}</h2>", "<table><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in header)
                + "</tr></thead><tbody>"]
        out += ["<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>" for row in rows]
        out.append("</tbody></table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
