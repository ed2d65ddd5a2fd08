"""report.html: one self-contained page with plots of a split version, beside report.md.

The page needs nothing from the network: plots are matplotlib figures saved as SVG and written
inline, styles sit in one <style> element, and there is no script. Rendering is deterministic
(fixed SVG hash salt, no dates in SVG metadata), so the same split always gives the same bytes.
"""

from __future__ import annotations

import html
import io
import re
from collections import Counter
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.typing import RcKeyType

from ecombench.schemas.findings import STAGE_NAMES
from ecombench.splits.report import RATIO_BUCKETS

SOURCES = ("query", "persona", "clarification")

# Only the figure API is used (never pyplot), so no global backend is chosen and rendering is safe
# from the threads a Prefect task runner uses; figures are saved straight to SVG.
_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",   # text stays <text>: smaller, searchable, no glyph defs repeated per plot
    "text.parse_math": False,  # a "$" in a label is text, never mathtext
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
# Removing every default key leaves out the <metadata> block (its date, matplotlib version and URIs).
_NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}
_SVG_PROLOG = re.compile(r"\A\s*<\?xml[^>]*\?>\s*(<!DOCTYPE[^>]*>\s*)?")

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 68rem;
       padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; word-break: break-all; }
figure { margin: 1rem 0 2rem; } figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.9rem; color: #444; max-width: 56rem; }
""".strip()


def _svg(fig: Figure, plot_id: str) -> str:
    """The figure as SVG text for inlining: no XML prolog or DOCTYPE, ids unique to this plot."""
    buf = io.StringIO()
    # A salt per plot keeps clip-path ids distinct between the SVGs sharing one HTML document.
    with matplotlib.rc_context({**_RC, "svg.hashsalt": f"ecombench:{plot_id}", "svg.id": f"svg-{plot_id}"}):
        fig.savefig(buf, format="svg", metadata=_NO_METADATA, bbox_inches="tight")
    return _SVG_PROLOG.sub("", buf.getvalue())


def _figure(width: float, height: float) -> Figure:
    """A new figure; call inside `rc_context(_RC)` so its axes and text take the report's style."""
    return Figure(figsize=(width, height))


def _empty(ax: Any, what: str) -> None:
    ax.text(0.5, 0.5, what, ha="center", va="center", transform=ax.transAxes, color="#666")
    ax.set_axis_off()


def _colours(n: int) -> list[Any]:
    cmap = matplotlib.colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


# ---- plots: each returns (svg, caption) -------------------------------------------------------

def plot_funnel(manifest: dict[str, Any]) -> tuple[str, str]:
    """Candidates still in the running after each stage, one line per intent."""
    funnel = manifest["funnel"]
    with matplotlib.rc_context(_RC):
        fig = _figure(8.5, 4.0)
        ax = fig.subplots()
        stages = list(range(1, 8))
        if not funnel:
            _empty(ax, "no intents")
        for (intent, counts), colour in zip(funnel.items(), _colours(len(funnel))):
            ys = [counts.get(str(s), 0) for s in stages]
            ax.plot(stages, ys, marker="o", markersize=3.5, color=colour, label=f"{intent} ({ys[-1]})")
        ax.set_xticks(stages, [f"{s}. {STAGE_NAMES[s]}" for s in stages], rotation=25, ha="right")
        ax.set_ylabel("candidates still in the running")
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(axis="y", color="#e5e5e5")
        if funnel:
            ax.legend(title="intent (accepted)", fontsize=8, title_fontsize=8, loc="center left",
                      bbox_to_anchor=(1.01, 0.5), frameon=False)
    caption = ("Acceptance funnel by stage: for each intent, how many sampled candidates cleared each stage on "
               "their last attempt. Stage 1 is the number sampled; stage 7 is the number accepted (in the legend). "
               "A drop between two points is the candidates that stage rejected.")
    return _svg(fig, "funnel"), caption


def plot_rejection_reasons(manifest: dict[str, Any], rejections: list[dict[str, Any]]) -> tuple[str, str]:
    """Rejected candidates per intent, stacked by reason code."""
    intents = list(manifest["counts"]["per_intent"]) or sorted({r["intent"] for r in rejections})
    by_reason = Counter(r["reason"] for r in rejections)
    reasons = sorted(by_reason, key=lambda k: (-by_reason[k], k))
    stage_of = {r["reason"]: r["stage"] for r in rejections}
    cells = Counter((r["intent"], r["reason"]) for r in rejections)
    with matplotlib.rc_context(_RC):
        fig = _figure(8.5, 0.35 * max(len(intents), 3) + 1.2)
        ax = fig.subplots()
        if not rejections:
            _empty(ax, "no candidates were rejected")
        else:
            ys = list(range(len(intents)))
            left = [0] * len(intents)
            for reason, colour in zip(reasons, _colours(len(reasons))):
                widths = [cells[(i, reason)] for i in intents]
                ax.barh(ys, widths, left=left, color=colour,
                        label=f"{stage_of[reason]}. {reason} ({by_reason[reason]})",
                        height=0.7)
                left = [a + b for a, b in zip(left, widths)]
            for y, total in zip(ys, left):
                if total:
                    ax.text(total, y, f" {total}", va="center", fontsize=8)
            ax.set_yticks(ys, intents)
            ax.invert_yaxis()
            ax.set_xlabel("rejected candidates")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.legend(title="stage. reason (total)", fontsize=8, title_fontsize=8, loc="center left",
                      bbox_to_anchor=(1.01, 0.5), frameon=False)
    caption = ("Rejection reasons by intent: every rejected candidate of each intent, split by its stable reason "
               "code, shown with the stage that rejected it (rejections.jsonl). The table below gives one example of "
               "each reason and the command that lists its candidates.")
    return _svg(fig, "rejection-reasons"), caption


def plot_rubric_type_source(tasks: list[dict[str, Any]]) -> tuple[str, str]:
    """Rubrics of accepted tasks per rubric type, stacked by information source."""
    cells = Counter((r["type"], r["info_source"]) for t in tasks for r in t["rubrics"])
    types = sorted({k for k, _ in cells})
    sources = [s for s in SOURCES if any(cells[(t, s)] for t in types)]
    sources += sorted({s for _, s in cells} - set(sources))
    with matplotlib.rc_context(_RC):
        fig = _figure(8.5, 0.35 * max(len(types), 3) + 1.2)
        ax = fig.subplots()
        if not cells:
            _empty(ax, "no accepted tasks")
        else:
            ys = list(range(len(types)))
            left = [0] * len(types)
            # Numbers only inside segments wide enough to hold them; the totals sit at the bar ends.
            room = 0.04 * max(sum(cells[(t, s)] for s in sources) for t in types)
            for source, colour in zip(sources, _colours(len(sources))):
                widths = [cells[(t, source)] for t in types]
                bars = ax.barh(ys, widths, left=left, color=colour, label=source, height=0.7)
                ax.bar_label(bars, labels=[str(w) if w >= room else "" for w in widths], label_type="center",
                             fontsize=7, color="white")
                left = [a + b for a, b in zip(left, widths)]
            for y, total in zip(ys, left):
                ax.text(total, y, f" {total}", va="center", fontsize=8)
            ax.set_yticks(ys, types)
            ax.invert_yaxis()
            ax.set_xlabel("rubrics in accepted tasks")
            ax.legend(title="info_source", fontsize=8, title_fontsize=8, loc="center left",
                      bbox_to_anchor=(1.01, 0.5), frameon=False)
    n = sum(cells.values())
    caption = (f"Rubric type × source: the {n} rubrics of the accepted tasks by type, split by where the "
               "simulated user reveals them (query, persona, or clarification reply).")
    return _svg(fig, "rubric-type-source"), caption


def plot_answer_set_sizes(tasks: list[dict[str, Any]]) -> tuple[str, str]:
    """Tasks per answer-set size, beside tasks per query-alone answer-set size when recorded."""
    full = Counter(len(t["answer_set"]) for t in tasks)
    query_only = Counter(t["difficulty"]["query_answer_set_size"] for t in tasks
                         if t.get("difficulty", {}).get("query_answer_set_size") is not None)
    series = [("all rubrics (answer_set)", full)]
    if query_only:
        series.append(("query rubrics alone (difficulty.query_answer_set_size)", query_only))
    # every rubric but the persona's / the clarification's (each hidden source needed when >= 2).
    ablated = {key: Counter(t["difficulty"][f"{key}_answer_set_size"] for t in tasks
                            if t.get("difficulty", {}).get(f"{key}_answer_set_size") is not None)
               for key in ("without_persona", "without_clarification")}
    for key, counts in ablated.items():
        if counts:
            series.append((f"{key.replace('_', ' ')} (difficulty.{key}_answer_set_size)", counts))
    sizes = sorted(set(full) | set(query_only) | set().union(*ablated.values()))
    with matplotlib.rc_context(_RC):
        fig = _figure(8.5, 3.2)
        ax = fig.subplots()
        if not tasks:
            _empty(ax, "no accepted tasks")
        else:
            xs = list(range(len(sizes)))
            width = 0.8 / len(series)
            for k, ((label, counts), colour) in enumerate(zip(series, _colours(len(series)))):
                offset = (k - (len(series) - 1) / 2) * width
                bars = ax.bar([x + offset for x in xs], [counts[s] for s in sizes], width=width, color=colour,
                              label=label)
                ax.bar_label(bars, labels=[str(counts[s]) if counts[s] else "" for s in sizes], fontsize=7)
            ax.set_xticks(xs, [str(s) for s in sizes])
            ax.set_xlabel("products in the catalog that satisfy the rubrics")
            ax.set_ylabel("tasks")
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            ax.legend(fontsize=8, frameon=False)
    caption = ("Answer-set sizes: how many catalog products satisfy all code-checkable rubrics of a task "
               "(1 means only the target)")
    if query_only:
        pinned = query_only.get(1, 0)
        caption += (f", beside how many satisfy the query's rubrics alone. In {pinned} of {len(tasks)} tasks the "
                    "query alone already leaves a single product.")
    else:
        caption += "."
    if ablated["without_persona"]:
        needed = sum(1 for t in tasks if min(t["difficulty"].get("without_persona_answer_set_size") or 0,
                                             t["difficulty"].get("without_clarification_answer_set_size") or 0) >= 2)
        caption += (f" Without the persona's rubrics, and without the clarification's, at least two products are "
                    f"left in {needed} of {len(tasks)} tasks (each hidden source needed).")
    return _svg(fig, "answer-set-sizes"), caption


def plot_implicit_requirements(manifest: dict[str, Any], tasks: list[dict[str, Any]]) -> tuple[str, str]:
    """Accepted tasks per intent, stacked by how many implicit requirements they carry."""
    intents = list(manifest["counts"]["per_intent"]) or sorted({t["intent"] for t in tasks})
    cells = Counter((t["intent"], len(t["implicit_rubric_ids"])) for t in tasks)
    counts = sorted({k for _, k in cells})
    with matplotlib.rc_context(_RC):
        fig = _figure(8.5, 0.35 * max(len(intents), 3) + 1.2)
        ax = fig.subplots()
        if not tasks:
            _empty(ax, "no accepted tasks")
        else:
            ys = list(range(len(intents)))
            left = [0] * len(intents)
            colours = matplotlib.colormaps["Blues"]
            for k in counts:
                widths = [cells[(i, k)] for i in intents]
                # Light to mid blue only, so the black counts stay readable on every shade.
                shade = colours(0.2 + 0.4 * (k / max(counts))) if max(counts) else colours(0.2)
                bars = ax.barh(ys, widths, left=left, color=shade, height=0.7, label=str(k))
                ax.bar_label(bars, labels=[str(w) if w else "" for w in widths], label_type="center", fontsize=7)
                left = [a + b for a, b in zip(left, widths)]
            ax.set_yticks(ys, intents)
            ax.invert_yaxis()
            ax.set_xlabel("accepted tasks")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.legend(title="implicit requirements", fontsize=8, title_fontsize=8, loc="center left",
                      bbox_to_anchor=(1.01, 0.5), frameon=False)
    with_implicit = sum(1 for t in tasks if t["implicit_rubric_ids"])
    caption = (f"Implicit-requirement counts: accepted tasks of each intent by the number of rubrics the query "
               f"states only through a cue (implicit_rubric_ids). {with_implicit} of {len(tasks)} tasks have at "
               "least one.")
    return _svg(fig, "implicit-requirements"), caption


# ---- page ----------------------------------------------------------------------------------------

def _acceptance_table(manifest: dict[str, Any]) -> list[str]:
    rows = ['<table id="acceptance">', "<thead><tr><th>intent</th><th class=n>candidates</th>"
            "<th class=n>accepted</th><th class=n>rejected</th><th class=n>acceptance</th></tr></thead>", "<tbody>"]
    for intent, v in manifest["counts"]["per_intent"].items():
        n = v["accepted"] + v["rejected"]
        rate = f"{v['accepted'] / n:.0%}" if n else "–"
        rows.append(f'<tr data-intent="{html.escape(intent)}"><td><code>{html.escape(intent)}</code></td>'
                    f'<td class=n>{n}</td><td class="n accepted">{v["accepted"]}</td>'
                    f'<td class="n rejected">{v["rejected"]}</td><td class=n>{rate}</td></tr>')
    return rows + ["</tbody></table>"]


def _reasons_table(manifest: dict[str, Any], rejections: list[dict[str, Any]]) -> list[str]:
    if not rejections:
        return ["<p>No candidate was rejected.</p>"]
    examples: dict[str, dict[str, Any]] = {}
    for r in rejections:
        examples.setdefault(r["reason"], r)
    rows = ['<table id="top-reasons">', "<thead><tr><th>reason</th><th>stage</th><th class=n>count</th>"
            "<th>example candidate</th><th>message</th><th>list its candidates</th></tr></thead>", "<tbody>"]
    for reason, n in manifest["counts"]["rejection_reasons"].items():
        ex = examples[reason]
        rows.append(f'<tr data-reason="{html.escape(reason)}" data-stage="{ex["stage"]}">'
                    f"<td><code>{html.escape(reason)}</code></td>"
                    f"<td>{ex['stage']}. {html.escape(str(ex['stage_name']))}</td><td class=n>{n}</td>"
                    f"<td><code>{html.escape(ex['candidate_id'])}</code></td><td>{html.escape(ex['message'])}</td>"
                    f'<td><code class="inspect">{html.escape(inspect_command(manifest, reason))}</code></td></tr>')
    return rows + ["</tbody></table>"]


def inspect_command(manifest: dict[str, Any], reason: str) -> str:
    """The `ecombench inspect` command that lists the candidates rejected with `reason` in this version."""
    return f"ecombench inspect {manifest['split']}@{manifest['version']} --reason {reason}"


def _shortfalls(manifest: dict[str, Any]) -> list[str]:
    shortfalls = {k: v for k, v in manifest.get("sampling", {}).items() if v.get("shortfall")}
    if not shortfalls:
        return ["<p>Every intent got the candidates it asked for.</p>"]
    rows = ['<table id="shortfalls">', "<thead><tr><th>intent</th><th class=n>sampled</th><th class=n>requested</th>"
            "<th class=n>eligible</th><th>eligibility rule</th></tr></thead>", "<tbody>"]
    for intent, v in shortfalls.items():
        rows.append(f'<tr data-intent="{html.escape(intent)}"><td><code>{html.escape(intent)}</code></td>'
                    f'<td class=n>{v["sampled"]}</td><td class=n>{v["requested"]}</td><td class=n>{v["eligible"]}</td>'
                    f"<td>{html.escape(str(v['rule']))}</td></tr>")
    return rows + ["</tbody></table>", "<p>Each product serves one intent, so an intent can get fewer candidates "
                   "than the products eligible for it (<code>not_enough_eligible_products</code>).</p>"]


def _expectations(manifest: dict[str, Any]) -> list[str]:
    expectations = manifest.get("expectations")
    if not expectations:
        return []
    out = ["<h2>Data expectations</h2>",
           f"<p>great-expectations {html.escape(str(expectations.get('great_expectations', '')))} suites over the "
           "catalog snapshot and the task table; a failed <code>error</code> blocks publishing, a failed "
           "<code>warn</code> is reported here.</p>",
           '<table id="expectations">', "<thead><tr><th>suite</th><th>expectation</th><th>severity</th><th>result</th>"
           "<th class=n>unexpected</th></tr></thead>", "<tbody>"]
    for suite, summary in expectations["suites"].items():
        for e in summary["expectations"]:
            result = "pass" if e["success"] else ("FAIL" if e["severity"] == "error" else "warn")
            count, pct = e.get("unexpected_count"), e.get("unexpected_percent")
            unexpected = "–" if count is None else f"{count} ({pct:.1f} %)" if pct else str(count)
            out.append(f'<tr data-result="{result}"><td>{html.escape(suite)}</td><td><code>{html.escape(e["name"])}'
                       f"</code> ({html.escape(e['type'])})</td><td>{html.escape(e['severity'])}</td><td>{result}</td>"
                       f"<td class=n>{unexpected}</td></tr>")
    return out + ["</tbody></table>"]


def _share(value: float | None) -> str:
    """A share as a percentage, "–" when there is none (an oracle check of no validated candidate)."""
    return "–" if value is None else f"{value:.1%}"


def _agent_checks(manifest: dict[str, Any]) -> list[str]:
    """The oracle, null and diligent agents' figures (manifest `agent_checks`), or nothing without a check."""
    checks = manifest.get("agent_checks") or {}
    if not checks.get("oracle"):
        return []
    e = html.escape
    o, n, d = checks["oracle"], checks.get("null") or {}, checks.get("diligent") or {}
    rows = ["<h2>Agent checks</h2>", '<table id="agent-checks">',
            "<thead><tr><th>agent</th><th class=n>tasks</th><th class=n>correct</th>"
            "<th class=n>accuracy</th></tr></thead>",
            "<tbody>", f"<tr><td>oracle (validated candidates)</td><td class=n>{o['candidates']}</td>"
                       f"<td class=n>{o['solved']}</td><td class=n>{_share(o['accuracy'])}</td></tr>"]
    for name, v in (("null", n), ("diligent", d), ("oracle_no_ask", checks.get("oracle_no_ask") or {}),
                    ("oracle_no_profile", checks.get("oracle_no_profile") or {})):
        if v.get("tasks"):
            rows.append(f"<tr><td>{name}</td><td class=n>{v['tasks']}</td><td class=n>{v['correct']}</td>"
                        f"<td class=n>{v['accuracy']:.1%}</td></tr>")
    rows.append("</tbody></table>")
    rows += _ablation_ratios(manifest)
    if d.get("by_intent"):
        rows += [f"<p>The diligent agent knows no rubric; its questions opened {d['slots_opened']} of {d['slots']} "
                 "clarification slots.</p>", '<table id="diligent-by-intent">',
                 "<thead><tr><th>intent</th><th class=n>tasks</th><th class=n>diligent correct</th>"
                 "<th class=n>accuracy</th></tr></thead>", "<tbody>"]
        rows += [f"<tr><td><code>{e(i)}</code></td><td class=n>{v['tasks']}</td><td class=n>{v['correct']}</td>"
                 f"<td class=n>{v['accuracy']:.1%}</td></tr>" for i, v in d["by_intent"].items()]
        rows.append("</tbody></table>")
    return rows


def _ablation_ratios(manifest: dict[str, Any]) -> list[str]:
    """Tasks by ablation ratio (difficulty.<source>_ablation_ratio); its mean is the ablated oracle's expected accuracy.

    An oracle that skips a source recommends the first product fitting what it knows, so it is right
    about answer_set_size / without_<source>_answer_set_size of the time; the build bounds that by
    1 / min_hidden_division. Empty for a split without the figures.
    """
    ratios = ((manifest["counts"].get("hidden_source_answer_sets") or {}).get("ablation_ratios") or {})
    if not (ratios.get("persona") or {}).get("tasks"):
        return []
    checks = manifest.get("agent_checks") or {}
    k = manifest.get("config", {}).get("min_hidden_division", "–")
    rows = [f"<p>Ablation ratio per task: answer_set_size / the answer set without the source (the build requires "
            f"at most 1/{k}, <code>min_hidden_division</code>); its mean is the ablated oracle's expected "
            "accuracy.</p>", '<table id="ablation-ratios">',
            "<thead><tr><th>without</th>" + "".join(f"<th class=n>{html.escape(label)}</th>"
                                                    for _, label in RATIO_BUCKETS)
            + "<th class=n>mean (expected)</th><th class=n>measured</th></tr></thead>", "<tbody>"]
    for source, oracle in (("persona", "oracle_no_profile"), ("clarification", "oracle_no_ask")):
        r = ratios[source]
        measured = (checks.get(oracle) or {}).get("accuracy")
        rows.append(f"<tr><td>{source}</td>" + "".join(f"<td class=n>{r[label]}</td>" for _, label in RATIO_BUCKETS)
                    + f"<td class=n>{r['mean']:.1%}</td><td class=n>"
                    + (f"{measured:.1%}" if measured is not None else "–") + "</td></tr>")
    rows.append("</tbody></table>")
    return rows


def render_html(manifest: dict[str, Any], tasks: list[dict[str, Any]], rejections: list[dict[str, Any]]) -> str:
    """report.html of a split version, with five plots.

    What report.md says: header, acceptance, sampling shortfalls, rejection reasons with their stage and
    `inspect` command, agent checks, data expectations.

    Args:
        manifest: the split manifest with `counts` filled (as publish_split writes it).
        tasks: the accepted task records.
        rejections: the rejection records, in rejections.jsonl order (the first of each reason is its example).

    Returns:
        One HTML document with every plot inline as SVG; no scripts and no external references.
        Equal inputs give equal text.
    """
    e = html.escape
    c = manifest["counts"]
    title = f"Split {manifest['split']} {manifest['version']}"
    plots = [
        ("funnel", "Acceptance funnel by stage", plot_funnel(manifest)),
        ("rejection-reasons", "Rejection reasons by intent", plot_rejection_reasons(manifest, rejections)),
        ("rubric-type-source", "Rubric type × source", plot_rubric_type_source(tasks)),
        ("answer-set-sizes", "Answer-set sizes", plot_answer_set_sizes(tasks)),
        ("implicit-requirements", "Implicit requirements", plot_implicit_requirements(manifest, tasks)),
    ]
    meta = [("split", manifest["split"]), ("version", manifest["version"]),
            ("catalog", manifest["catalog"]["path"]), ("catalog fingerprint", manifest["catalog"]["fingerprint"]),
            ("config hash", manifest["config_hash"]), ("seed", str(manifest["seed"])),
            ("verbaliser", manifest["verbaliser"]["id"]), ("code", f"{manifest.get('code_version', '')} "
                                                                   f"{manifest.get('git_commit') or ''}".strip()),
            ("created", manifest.get("created_at", ""))]
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{e(title)}</title>", f"<style>\n{_CSS}\n</style>", "</head>", "<body>",
           f"<h1>Split <code>{e(manifest['split'])}</code> {e(manifest['version'])}</h1>",
           '<dl class="meta">', *[f"<dt>{e(k)}</dt><dd><code>{e(str(v))}</code></dd>" for k, v in meta], "</dl>",
           f'<p id="totals"><strong>{c["tasks"]} tasks accepted, {c["rejections"]} candidates rejected.</strong></p>',
           "<h2>Acceptance by intent</h2>", *_acceptance_table(manifest)]
    for plot_id, heading, (svg, caption) in plots:
        out += [f"<h2>{e(heading)}</h2>", f'<figure id="{plot_id}">', svg.strip(),
                f"<figcaption>{e(caption)}</figcaption>", "</figure>"]
    out += ["<h2>Sampling shortfalls</h2>", *_shortfalls(manifest),
            "<h2>Top rejection reasons</h2>", *_reasons_table(manifest, rejections),
            *_agent_checks(manifest), *_expectations(manifest), "</body>", "</html>"]
    return "\n".join(out) + "\n"
