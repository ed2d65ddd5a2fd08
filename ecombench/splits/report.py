"""The split report: counts, acceptance, rejection reasons and quality figures of a version, as report.md."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ecombench.schemas.findings import STAGE_NAMES
from ecombench.tables.fields import load_field_table
from ecombench.validation.shopper_text import shopper_text_figures


def count_tasks(tasks: list[dict[str, Any]], rejections: list[dict[str, Any]],
                intents: list[str] | None = None) -> dict[str, Any]:
    """Counts for the manifest: per intent (in `intents` order), rubric type, source, type x source, and reason."""
    per_intent: dict[str, Counter] = {name: Counter() for name in intents or []}
    for t in tasks:
        per_intent.setdefault(t["intent"], Counter())["accepted"] += 1
    for r in rejections:
        per_intent.setdefault(r["intent"], Counter())["rejected"] += 1
    rubric_types = Counter(r["type"] for t in tasks for r in t["rubrics"])
    sources = Counter(r["info_source"] for t in tasks for r in t["rubrics"])
    type_source = Counter(f"{r['type']}/{r['info_source']}" for t in tasks for r in t["rubrics"])
    reasons = Counter(r["reason"] for r in rejections)
    by_stage = Counter(f"{r['stage']}:{r['stage_name']}" for r in rejections)
    pinned = [t["difficulty"]["query_answer_set_size"] for t in tasks
              if "query_answer_set_size" in t.get("difficulty", {})]
    return {
        "tasks": len(tasks),
        "rejections": len(rejections),
        "per_intent": {k: {"accepted": v["accepted"], "rejected": v["rejected"]}
                       for k, v in (per_intent.items() if intents else sorted(per_intent.items()))},
        "rubric_types": dict(sorted(rubric_types.items())),
        "sources": dict(sorted(sources.items())),
        "rubric_type_by_source": dict(sorted(type_source.items())),
        "rejection_reasons": dict(reasons.most_common()),
        "rejections_by_stage": dict(sorted(by_stage.items())),
        "answer_set_sizes": dict(sorted(Counter(str(len(t["answer_set"])) for t in tasks).items(),
                                        key=lambda kv: int(kv[0]))),
        "hidden_source_answer_sets": _hidden_source_sizes(tasks),
        # implicit requirements per task (the paper's 0 / 1 / 2 / 3+), persona fields, product types
        "implicit_per_task": _implicit_distribution(tasks),
        "persona_fields": dict(Counter(r["field"] for t in tasks for r in t["rubrics"]
                                       if r["info_source"] == "persona").most_common()),
        "queries_with_product_type": sum(any(r["type"] == "entity_match" and r["info_source"] == "query"
                                             for r in t["rubrics"]) for t in tasks),
        "top_reason_by_intent": _top_reasons(rejections),
        # None when the tasks predate the field (a split built by older code), never a KeyError.
        "query_alone_pins_target": (sum(size == 1 for size in pinned) if len(pinned) == len(tasks) else None),
        # how the shopper talks and what it keeps hidden (ecombench.validation.shopper_text)
        "shopper_text": shopper_text_figures(tasks, load_field_table()),
    }


def _implicit_distribution(tasks: list[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(min(len(t.get("implicit_rubric_ids") or []), 3) for t in tasks)
    return {"0": counts[0], "1": counts[1], "2": counts[2], "3+": counts[3]}


def _top_reasons(rejections: list[dict[str, Any]]) -> dict[str, list[list[Any]]]:
    """Per intent, its three most frequent rejection reasons with counts (what limits its yield)."""
    by: dict[str, Counter] = {}
    for r in rejections:
        by.setdefault(r["intent"], Counter())[r["reason"]] += 1
    return {k: [[reason, n] for reason, n in v.most_common(3)] for k, v in sorted(by.items())}


SIZE_BUCKETS = ((1, "1"), (2, "2"), (3, "3-4"), (5, "5-9"), (10, "10-99"), (100, "100+"))


def _size_bucket(n: int) -> str:
    return [label for low, label in SIZE_BUCKETS if n >= low][-1]


def _hidden_source_sizes(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """Per ablation (without_persona, without_clarification): tasks by answer-set size bucket."""
    out: dict[str, Any] = {}
    for key in ("without_persona", "without_clarification"):
        sizes = [t["difficulty"].get(f"{key}_answer_set_size") for t in tasks]
        known = [s for s in sizes if s is not None]
        counts = Counter(_size_bucket(s) for s in known)
        out[key] = {label: counts[label] for _, label in SIZE_BUCKETS} | {"tasks": len(known)}
    both = [t for t in tasks if t["difficulty"].get("without_persona_answer_set_size") is not None]
    out["both_at_least_2"] = sum(min(t["difficulty"]["without_persona_answer_set_size"],
                                     t["difficulty"]["without_clarification_answer_set_size"]) >= 2 for t in both)
    # The ablated oracles' expected accuracy per task (answer_set_size / each ablation's).
    out["ablation_ratios"] = {}
    for source in ("persona", "clarification"):
        ratios = [t["difficulty"][f"{source}_ablation_ratio"] for t in tasks
                  if t["difficulty"].get(f"{source}_ablation_ratio") is not None]
        counts = Counter(_ratio_bucket(r) for r in ratios)
        out["ablation_ratios"][source] = {label: counts[label] for _, label in RATIO_BUCKETS} | {
            "tasks": len(ratios), "mean": round(sum(ratios) / len(ratios), 4) if ratios else None,
            "max": max(ratios, default=None)}
    return out


# Buckets of difficulty.<source>_ablation_ratio (|answer set| / |answer set without the source|), upper bounds.
RATIO_BUCKETS = ((1.0, "> 1/2"), (0.5, "(1/5, 1/2]"), (0.2, "(1/7, 1/5]"), (1 / 7, "(1/10, 1/7]"),
                 (0.1, "(1/20, 1/10]"), (0.05, "<= 1/20"))


def _ratio_bucket(ratio: float) -> str:
    """The label of the smallest RATIO_BUCKETS bound at or above `ratio` (a fraction in (0, 1])."""
    return [label for bound, label in RATIO_BUCKETS if ratio <= bound + 1e-4][-1]  # ratios are rounded to 4 places


def _evidence(rejection: dict[str, Any]) -> dict[str, Any]:
    """A rejection's evidence as a dict (published records hold it as JSON text)."""
    evidence = rejection.get("evidence") or {}
    return json.loads(evidence) if isinstance(evidence, str) else evidence


def _limiting_rules(manifest: dict[str, Any], rejections: list[dict[str, Any]], floor: int = 20) -> list[str]:
    """report.md lines naming, for each intent under `floor` accepted tasks, the rule that limits it with counts.

    The report's promise: every intent gets at least 20 tasks, and where the data cannot give that, report.md
    names the limiting rule with its counts. Every rejection reason of the intent's candidates (its last attempt),
    the most frequent one past stage 2 named as the limiting rule with the stage it reached, and for the
    hidden-source rules the answer-set sizes their evidence recorded.
    """
    lines: list[str] = []
    for intent, v in manifest["counts"]["per_intent"].items():
        if v["accepted"] >= floor:
            continue
        mine = [r for r in rejections if r["intent"] == intent]
        reasons = Counter(r["reason"] for r in mine)
        later = Counter(r["reason"] for r in mine if r["stage"] > 2)
        reached = sum(1 for r in mine if r["stage"] > 2) + v["accepted"]
        listed = ", ".join(f"`{k}` {n}" for k, n in reasons.most_common())
        line = (f"- **{intent}**: {v['accepted']} accepted of {v['accepted'] + v['rejected']} candidates; "
                f"rejected: {listed}.")
        if later:
            rule, n = later.most_common(1)[0]
            line += (f" The limiting rule is `{rule}`: it rejected {n} of the {reached} candidates that got past "
                     "feature extraction.")
            evidence = [_evidence(r) for r in mine if r["reason"] == rule]
            sizes = Counter(str(e[f"without_{s}_answer_set_size"]) for e in evidence
                            for s in ("persona", "clarification")
                            if rule.startswith(s) and e.get(f"without_{s}_answer_set_size") is not None)
            if sizes:
                line += (" Products the other sources' rubrics left: "
                         + ", ".join(f"{k}: {n}" for k, n in sorted(sizes.items(), key=lambda kv: int(kv[0])))
                         + " (candidates).")
        lines.append(line)
    if lines:
        lines = ["", f"Intents under {floor} accepted tasks, and the rule that limits each:", "", *lines]
    return lines


def render_report(manifest: dict[str, Any], rejections: list[dict[str, Any]]) -> str:
    """report.md: acceptance funnel by stage and intent, then top rejection reasons with one example each."""
    c = manifest["counts"]
    lines = [f"# Split `{manifest['split']}` {manifest['version']}", "",
             f"- catalog: `{manifest['catalog']['path']}` (fingerprint `{manifest['catalog']['fingerprint'][:16]}…`)",
             f"- config hash `{manifest['config_hash'][:16]}…`, seed {manifest['seed']}, "
             f"verbaliser `{manifest['verbaliser']['id']}`",
             f"- **{c['tasks']} tasks accepted, {c['rejections']} candidates rejected**", "",
             "## Acceptance by intent", "", "| intent | candidates | accepted | rejected | acceptance |",
             "|---|---:|---:|---:|---:|"]
    for intent, v in c["per_intent"].items():
        n = v["accepted"] + v["rejected"]
        lines.append(f"| {intent} | {n} | {v['accepted']} | {v['rejected']} | {v['accepted'] / n:.0%} |" if n else
                     f"| {intent} | 0 | 0 | 0 | – |")
    lines += ["", "## Funnel by stage", "",
              "Candidates still in the running after each stage (last attempt of each candidate).", "",
              "| intent | " + " | ".join(f"{s}. {STAGE_NAMES[s]}" for s in range(1, 8)) + " |",
              "|---|" + "---:|" * 7]
    for intent, funnel in manifest["funnel"].items():
        lines.append(f"| {intent} | " + " | ".join(str(funnel.get(str(s), 0)) for s in range(1, 8)) + " |")
    shortfalls = {k: v for k, v in manifest["sampling"].items() if v["shortfall"]}
    if shortfalls:
        lines += ["", "## Sampling shortfalls (`not_enough_eligible_products`)", ""]
        lines += [f"- {k}: {v['sampled']} of {v['requested']} candidates; {v['eligible']} products have {v['rule']}, "
                  "and each product serves one intent" for k, v in shortfalls.items()]
    lines += ["", "## Top rejection reasons", "",
              f"`ecombench inspect {manifest['split']}@{manifest['version']} --reason <reason>` lists a reason's "
              "candidates.", "", "| reason | stage | count | example |", "|---|---|---:|---|"]
    examples: dict[str, dict[str, Any]] = {}
    for r in rejections:
        examples.setdefault(r["reason"], r)
    for reason, n in c["rejection_reasons"].items():
        ex = examples[reason]
        msg = ex["message"].replace("|", "\\|")
        lines.append(f"| `{reason}` | {ex['stage']}. {ex['stage_name']} | {n} | `{ex['candidate_id']}`: {msg} |")
    lines += ["", "## Rubrics", "", "| type / source | count |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in c["rubric_type_by_source"].items()]
    lines += ["", "## Answer-set sizes", "", "| size | tasks |", "|---:|---:|"]
    lines += [f"| {k} | {v} |" for k, v in c["answer_set_sizes"].items()]
    if c["tasks"]:
        floor = manifest.get("config", {}).get("min_query_answer_set")
        lines += ["", f"In {c['query_alone_pins_target']} of {c['tasks']} tasks the query's own rubrics already leave "
                      "a single product: there the persona and clarification confirm rather than narrow "
                      "(`difficulty.query_answer_set_size`)."
                      + (f" The build required at least {floor} (`min_query_answer_set`); only intents that "
                         "override it in `tables/intents.toml` (review_driven) can still pin the target."
                         if floor and floor > 1 else "")]
    lines += _quality_sections(manifest, rejections)
    hidden = c.get("hidden_source_answer_sets") or {}
    if hidden.get("without_persona", {}).get("tasks"):
        n = hidden["without_persona"]["tasks"]
        lines += ["", "## Every hidden source needed", "",
                  "Catalog products left by every rubric except the persona's (an agent that never reads the "
                  "profile) and except the clarification's (one that never asks), counted up to 100. The build "
                  f"requires at least {manifest.get('config', {}).get('min_hidden_answer_set', '–')} "
                  "(`min_hidden_answer_set`; `persona_not_needed` / `clarification_not_needed`). "
                  f"Both at least 2 in {hidden['both_at_least_2']} of {n} tasks "
                  f"({100 * hidden['both_at_least_2'] / n:.0f} %).", "",
                  "| products left | " + " | ".join(label for _, label in SIZE_BUCKETS) + " |",
                  "|---|" + "---:|" * len(SIZE_BUCKETS)]
        for key in ("without_persona", "without_clarification"):
            lines.append(f"| {key.replace('_', ' ')} | "
                         + " | ".join(str(hidden[key][label]) for _, label in SIZE_BUCKETS)
                         + " |")
        ratios = hidden.get("ablation_ratios") or {}
        if ratios.get("persona", {}).get("tasks"):
            k = manifest.get("config", {}).get("min_hidden_division", "–")
            checks = manifest.get("agent_checks") or {}
            lines += ["", "An ablated oracle recommends the first product that fits what it can learn, so on a task "
                          "it is right about `answer_set_size / without_<source>_answer_set_size` of the time "
                          "(`difficulty.<source>_ablation_ratio`). The build requires each hidden source to divide "
                          f"the answer set at least {k} times (`min_hidden_division`; `hidden_source_too_weak`), "
                          f"so each ratio is at most 1/{k}.", "",
                      "| ratio | " + " | ".join(label for _, label in RATIO_BUCKETS) + " | mean (expected accuracy) "
                      "| measured accuracy |", "|---|" + "---:|" * (len(RATIO_BUCKETS) + 2)]
            for source, oracle in (("persona", "oracle_no_profile"), ("clarification", "oracle_no_ask")):
                r = ratios[source]
                measured = (checks.get(oracle) or {}).get("accuracy")
                lines.append(f"| without {source} | " + " | ".join(str(r[label]) for _, label in RATIO_BUCKETS)
                             + f" | {r['mean']} | " + (f"{measured} (`{oracle}`)" if measured is not None else "–")
                             + " |")
    checks = manifest.get("agent_checks") or {}
    if checks.get("oracle"):
        o, n = checks["oracle"], checks.get("null") or {}
        lines += ["", "## Agent checks", "",
                  f"The sandbox's oracle solved {o['solved']} of {o['candidates']} validated tasks within the "
                  f"episode budget ({o.get('rejected_oracle_failed', 0)} rejected as `oracle_failed`; mean "
                  f"{o['tool_calls']['mean']} tool calls). The null agent (first search hit for the query) got "
                  f"{n.get('correct', 0)} of {n.get('tasks', 0)} published tasks right "
                  f"({100 * (n.get('accuracy') or 0):.1f} %)."]
        d = checks.get("diligent")
        if d and d.get("tasks"):
            lines += ["", f"The diligent agent, which knows no rubric (it reads the query and profile, asks natural "
                          f"questions about the fields products of the query's type carry, then searches and judges), "
                          f"solved {d['correct']} of {d['tasks']} published tasks ({100 * d['accuracy']:.1f} %): the "
                          f"split's fairness figure. Its questions opened {d['slots_opened']} of {d['slots']} "
                          f"clarification slots.", "",
                      "| intent | tasks | diligent correct | accuracy |", "|---|---:|---:|---:|"]
            lines += [f"| {i} | {v['tasks']} | {v['correct']} | {100 * v['accuracy']:.1f} % |"
                      for i, v in d["by_intent"].items()]
        for name, what in (("oracle_no_ask", "never asks (query and profile only)"),
                           ("oracle_no_profile", "never reads the profile (query and answers only)")):
            a = checks.get(name)
            if a and a.get("tasks"):
                lines.append(f"- `{name}`, the oracle that {what}: {a['correct']} of {a['tasks']} "
                             f"({100 * (a['accuracy'] or 0):.1f} %).")
    expectations = manifest.get("expectations")
    if expectations:
        lines += ["", "## Data expectations", "",
                  f"great-expectations {expectations.get('great_expectations', '')} suites over the catalog snapshot "
                  "and the task table; a failed `error` blocks publishing, a failed `warn` is reported here.", "",
                  "| suite | expectation | severity | result | unexpected |", "|---|---|---|---|---:|"]
        for suite, summary in expectations["suites"].items():
            for e in summary["expectations"]:
                result = "pass" if e["success"] else ("**FAIL**" if e["severity"] == "error" else "warn")
                count, pct = e.get("unexpected_count"), e.get("unexpected_percent")
                unexpected = "–" if count is None else f"{count} ({pct:.1f} %)" if pct else str(count)
                lines.append(f"| {suite} | `{e['name']}` ({e['type']}) | {e['severity']} | {result} | {unexpected} |")
    return "\n".join(lines) + "\n"


def _catalog_manifest(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The catalog snapshot's manifest.json (for the card's source files), or None when unreadable."""
    try:
        return json.loads((Path(manifest["catalog"]["path"]) / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def _shopper_text_section(f: dict[str, Any] | None) -> list[str]:
    """report.md's section on what the shopper says and keeps (ecombench.validation.shopper_text).

    Empty for a split built before the figures existed.
    """
    if not f:
        return []
    lines = ["", "## What the shopper says and keeps", "",
             "| figure | value |", "|---|---:|",
             f"| replies (clarification slots and profile replies) | {f['replies']} |",
             f"| distinct reply forms (value and field label masked) | {f['reply_forms']} |",
             f"| largest share of one reply form | {_pct(f['max_reply_form_share'])} |",
             f"| largest share of queries holding one five-word phrase (product type aside) | "
             f"{_pct(f['max_phrase_share'])} |",
             f"| thresholds (price, rating, rating count) among hidden requirements | {f['hidden_thresholds']} of "
             f"{f['hidden_requirements']} ({_pct(f['threshold_share'])}) |",
             f"| most thresholds in one hidden source of a task | {f['max_thresholds_in_a_source']} |",
             f"| personas failing the coherence check | {f['incoherent_personas']} |",
             f"| personas sharing their whole background with another | {f['shared_backgrounds']} |",
             "| profile replies by mode | " + (", ".join(f"{k} {v}" for k, v in f["profile_replies_by_mode"].items())
                                              or "–") + " |"]
    if f["top_reply_forms"]:
        lines += ["", "Most used reply forms:", ""] + [f"- {n} × ({_pct(share)}) `{form}`"
                                                       for form, n, share in f["top_reply_forms"]]
    if f["top_phrases"]:
        lines += ["", "Most repeated five-word phrases in queries:", ""] + [
            f"- {n} queries ({_pct(share)}) `{phrase}`" for phrase, n, share in f["top_phrases"]]
    return lines


def _quality_sections(manifest: dict[str, Any], rejections: list[dict[str, Any]] | None = None) -> list[str]:
    """report.md sections on hidden-source necessity and the limiting rules.

    Intent mix, product types, implicit requirements, persona fields, rejected values.
    """
    c = manifest["counts"]
    lines: list[str] = []
    if "implicit_per_task" not in c:
        return lines  # a split built by older code
    requested = manifest.get("config", {}).get("candidates_per_intent")
    top = c.get("top_reason_by_intent", {})
    n_tasks = c["tasks"] or 1
    lines += ["", "## Intent mix", "",
              f"Every intent was asked for {requested} candidates (an equal mix). What limits an intent is its most "
              "frequent rejection reasons.", "",
              "| intent | accepted | share | top rejection reasons |", "|---|---:|---:|---|"]
    for intent, v in c["per_intent"].items():
        reasons = ", ".join(f"`{r}` {n}" for r, n in top.get(intent, []))
        lines.append(f"| {intent} | {v['accepted']} | {100 * v['accepted'] / n_tasks:.0f} % | {reasons or '–'} |")
    lines += _limiting_rules(manifest, rejections or [])
    lines += ["", f"Queries naming a product type: {c['queries_with_product_type']} of {c['tasks']} "
                  "(a target whose title names none is rejected as `no_product_type`)."]
    dist = c["implicit_per_task"]
    lines += ["", "## Implicit requirements per task", "", "| 0 | 1 | 2 | 3+ |", "|---:|---:|---:|---:|",
              f"| {dist['0']} | {dist['1']} | {dist['2']} | {dist['3+']} |", "",
              f"{dist['2'] + dist['3+']} of {c['tasks']} tasks ({100 * (dist['2'] + dist['3+']) / n_tasks:.0f} %) have "
              "two or more (the paper: agent accuracy falls from 51.8 % at 0-1 to 27.2 % at 3+)."]
    if c.get("persona_fields"):
        total = sum(c["persona_fields"].values())
        lines += ["", "## Persona fields", "", "| field | persona rubrics | share |", "|---|---:|---:|"]
        lines += [f"| {k.removeprefix('details.')} | {v} | {100 * v / total:.0f} % |"
                  for k, v in c["persona_fields"].items()]
    lines += _shopper_text_section(c.get("shopper_text"))
    rejected: dict[str, Counter] = {}
    for key, n in (manifest.get("stage_passes_all_attempts") or {}).items():
        if key.startswith("value_rejected|"):
            _, field_name, reason = key.split("|", 2)
            rejected.setdefault(field_name.removeprefix("details."), Counter())[reason] += n
    if rejected:
        reason_keys = sorted({r for v in rejected.values() for r in v})
        lines += ["", "## Values rejected as requirements", "",
                  "Detail values a shopper would not state, dropped in stage 2 (stages/vocabulary.py), "
                  "counted once per candidate; `rare_value`: carried by fewer than "
                  f"{manifest.get('config', {}).get('min_value_support')} "
                  "catalog products in its field (`min_value_support`).", "",
                  "| field | " + " | ".join(f"`{r}`" for r in reason_keys) + " |", "|---|" + "---:|" * len(reason_keys)]
        for field_name, v in sorted(rejected.items(), key=lambda kv: -sum(kv[1].values())):
            lines.append(f"| {field_name} | " + " | ".join(str(v[r]) for r in reason_keys) + " |")
    return lines
