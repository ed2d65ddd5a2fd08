"""Reading published split versions.

One task or a reason's rejections readably, two versions' differences, and `validate` over a
tasks.jsonl (the file-reading edge around validation/validate.py).

Nothing here writes into a split version: versions are immutable once published.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ecombench.answers.index import CatalogIndex
from ecombench.catalog.facts import with_facts
from ecombench.catalog.snapshot import SnapshotError, load_reviews, load_snapshot
from ecombench.errors import InputError
from ecombench.schemas.evidence import unflatten_rejection
from ecombench.schemas.findings import STAGE_NAMES
from ecombench.splits.report import count_tasks
from ecombench.tables.fields import load_field_table
from ecombench.validation.catalog_stats import catalog_knowledge
from ecombench.validation.validate import parse_task_lines, validate_tasks


class SplitReadError(InputError):
    """A split version or one of its files is missing or unreadable; the message names the path."""


@dataclass
class SplitVersion:
    """A published split version as read from disk."""

    path: Path
    manifest: dict[str, Any]
    tasks: list[dict[str, Any]]
    rejections: list[dict[str, Any]]

    @property
    def name(self) -> str:
        """`<split>@<version>`, from the manifest or else the directory names."""
        return f"{self.manifest.get('split', self.path.parent.name)}@{self.manifest.get('version', self.path.name)}"

    def counts(self) -> dict[str, Any]:
        """publish.count_tasks over the records as they are on disk."""
        return count_tasks(self.tasks, self.rejections, self.manifest.get("config", {}).get("intents"))


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise SplitReadError(f"{path} not found: is {path.parent} a split version directory?")
    records, _, bad = parse_task_lines(path.read_text(encoding="utf-8"))
    if bad:
        raise SplitReadError(f"{path}: {bad[0]['message']} (run `ecombench validate` for every problem)")
    return records


def load_version(path: Path) -> SplitVersion:
    """Read tasks.jsonl, rejections.jsonl and manifest.json of a version directory.

    Raises:
        SplitReadError: the directory or a file is missing, or a line is not a JSON object.
    """
    if not path.is_dir():
        raise SplitReadError(f"split version {path} not found")
    manifest_path = path / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.is_file() else {}
    except json.JSONDecodeError as exc:
        raise SplitReadError(f"{manifest_path}: invalid JSON ({exc})") from None
    return SplitVersion(path=path, manifest=manifest, tasks=_jsonl(path / "tasks.jsonl"),
                        rejections=[unflatten_rejection(r) for r in _jsonl(path / "rejections.jsonl")])


def resolve_version(spec: str, root: Path) -> Path:
    """`<split>@<version>` -> root/<split>/<version>; `<split>` or `<split>@latest` -> its newest vN.

    Raises:
        SplitReadError: the split or the version directory does not exist, or the spec is empty.
    """
    split, _, version = spec.partition("@")
    if not split:
        raise SplitReadError(f"{spec!r}: name a version as <split>@<version>, e.g. sample@v1, or a split alone")
    split_dir = root / split
    numbered = sorted((int(p.name[1:]), p.name) for p in split_dir.glob("v*")
                      if p.is_dir() and p.name[1:].isdigit()) if split_dir.is_dir() else []
    if version in ("", "latest"):
        if not numbered:
            raise SplitReadError(f"split {split_dir} not found or has no versions")
        return split_dir / numbered[-1][1]
    path = split_dir / version
    if not path.is_dir():
        have = [name for _, name in numbered]
        raise SplitReadError(f"split version {path} not found" + (f" (versions of {split}: {have})" if have else ""))
    return path


# ---- inspect ------------------------------------------------------------------------------------

def summary(version: SplitVersion) -> dict[str, Any]:
    """Counts per intent (accepted / rejected) and per rejection reason, with the stage of each reason."""
    c = version.counts()
    stage_of = {r["reason"]: f"{r['stage']}. {r['stage_name']}" for r in version.rejections}
    return {"version": version.name, "path": str(version.path), "tasks": c["tasks"], "rejections": c["rejections"],
            "per_intent": c["per_intent"],
            "rejection_reasons": {k: {"count": v, "stage": stage_of[k]} for k, v in c["rejection_reasons"].items()}}


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def render_summary(s: dict[str, Any], console: Console) -> None:
    """Print a `summary` (counts per intent, rejections by reason) as rich tables."""
    console.print(Text(f"{s['version']}  ({s['path']})", style="bold"))
    console.print(f"{s['tasks']} tasks accepted, {s['rejections']} candidates rejected")
    table = Table("intent", "accepted", "rejected", title="per intent", title_justify="left")
    for intent, v in s["per_intent"].items():
        table.add_row(intent, str(v["accepted"]), str(v["rejected"]))
    console.print(table)
    if s["rejection_reasons"]:
        table = Table("reason", "stage", "count", title="rejections by reason", title_justify="left")
        for reason, v in s["rejection_reasons"].items():
            table.add_row(reason, v["stage"], str(v["count"]))
        console.print(table)


def render_task(task: dict[str, Any], console: Console) -> None:
    """One task, readably: query, persona, clarification slots, rubrics, answer set, difficulty."""
    tp = task["target_product"]
    implicit = set(task.get("implicit_rubric_ids") or [])
    console.print(Text(f"{task['id']}  [{task['intent']}]", style="bold"))
    console.print(Text(f"target {tp['parent_asin']}: {tp.get('title')}  (${tp.get('price')}, "
                       f"{tp.get('average_rating')} stars, {tp.get('rating_number')} ratings)"))
    console.print(Text("\nquery", style="bold"))
    console.print(Text(task["user_query"]))
    persona = task["user_persona"]
    console.print(Text("\npersona requirements", style="bold"))
    for key, value in persona["product_requirements"].items():
        console.print(Text(f"  {key}: {_value(value)}"))
    console.print(Text(f"persona noise ({persona.get('user_id')})", style="bold"))
    for group in ("demographics", "lifestyle", "shopping_habits"):
        for key, value in (persona.get(group) or {}).items():
            console.print(Text(f"  {group}.{key}: {', '.join(value) if isinstance(value, list) else value}"))
    script = task["clarification_script"]
    console.print(Text(f"\nclarification slots (at most {script['max_clarification_turns']} turns)", style="bold"))
    for slot in script["clarification_slots"]:
        console.print(Text(f"  {slot['slot_id']} {slot['field']} -> {', '.join(slot['linked_rubric_ids'])}"))
        console.print(Text(f"    keywords: {', '.join(slot['trigger_keywords'])}"))
        console.print(Text(f"    reply: {slot['user_response']}"))
    console.print(Text(f"  default reply: {script['default_response']}"))
    console.print(Text("\nrubrics", style="bold"))
    for r in task["rubrics"]:
        mark = " (implicit)" if r["id"] in implicit else ""
        console.print(Text(f"  {r['id']} [{r['info_source']}{mark}] {r['type']} {r['field']} = "
                           f"{_value(r['expected_value'])}"))
    console.print(Text(f"rubric lock {task['rubric_lock']}"))
    console.print(Text(f"\nanswer set ({len(task['answer_set'])}): {', '.join(task['answer_set'])}", style="bold"))
    console.print(Text("difficulty: " + ", ".join(f"{k} {v}" for k, v in task["difficulty"].items())))


def render_rejections(rejections: list[dict[str, Any]], title: str, console: Console) -> None:
    """Rejected candidates with their stage, reason, message and evidence."""
    console.print(Text(f"{title}: {len(rejections)} rejected candidate(s)", style="bold"))
    for r in rejections:
        console.print(Text(f"\n{r['candidate_id']}  stage {r['stage']}. {r['stage_name']}  {r['reason']}  "
                           f"(attempt {r['attempt']})", style="bold"))
        console.print(Text(f"  {r['message']}"))
        evidence = {k: v for k, v in r["evidence"].items() if v not in ([], {}, None)}
        for key, value in evidence.items():
            console.print(Text(f"  {key}: {_value(value)}"))


# ---- diff ---------------------------------------------------------------------------------------

def diff_versions(old: SplitVersion, new: SplitVersion) -> dict[str, Any]:
    """What changed from `old` to `new`: counts per intent and reason, tasks added, removed and changed.

    Task ids derive from (intent, target, rubric lock), so one id never changes content; a
    task "changed" when the same target serves the same intent under another id (its rubrics
    and so its lock differ). Those pairs are not also listed as added or removed.
    """
    a, b = old.counts(), new.counts()
    intents = list(dict.fromkeys([*a["per_intent"], *b["per_intent"]]))
    zero = {"accepted": 0, "rejected": 0}
    per_intent = {i: {k: {"old": a["per_intent"].get(i, zero)[k], "new": b["per_intent"].get(i, zero)[k]}
                      for k in ("accepted", "rejected")} for i in intents}
    reasons = sorted(set(a["rejection_reasons"]) | set(b["rejection_reasons"]))
    per_reason = {r: {"old": a["rejection_reasons"].get(r, 0), "new": b["rejection_reasons"].get(r, 0)}
                  for r in reasons}
    old_ids, new_ids = {t["id"]: t for t in old.tasks}, {t["id"]: t for t in new.tasks}

    def key(t: dict[str, Any]) -> tuple[str, str]:
        return t["intent"], t["target_product"]["parent_asin"]

    old_only = [t for i, t in old_ids.items() if i not in new_ids]
    new_only = [t for i, t in new_ids.items() if i not in old_ids]
    old_by_key = {key(t): t for t in old_only}
    changed = [{"intent": t["intent"], "parent_asin": t["target_product"]["parent_asin"],
                "old_id": old_by_key[key(t)]["id"], "new_id": t["id"],
                "old_rubric_lock": old_by_key[key(t)]["rubric_lock"], "new_rubric_lock": t["rubric_lock"]}
               for t in new_only if key(t) in old_by_key]
    paired = {(c["intent"], c["parent_asin"]) for c in changed}

    def brief(t: dict[str, Any]) -> dict[str, str]:
        return {"id": t["id"], "intent": t["intent"], "parent_asin": t["target_product"]["parent_asin"]}

    return {"old": old.name, "new": new.name,
            "tasks": {"old": a["tasks"], "new": b["tasks"]},
            "rejections": {"old": a["rejections"], "new": b["rejections"]},
            "per_intent": per_intent, "per_reason": per_reason,
            "added": [brief(t) for t in new_only if key(t) not in paired],
            "removed": [brief(t) for t in old_only if key(t) not in paired],
            "changed": changed, "unchanged": len(set(old_ids) & set(new_ids))}


def _delta(v: dict[str, int]) -> str:
    d = v["new"] - v["old"]
    return f"{v['old']} -> {v['new']}" + (f" ({d:+d})" if d else "")


def render_diff(d: dict[str, Any], console: Console) -> None:
    """Print a `diff_versions` result (count deltas per intent and reason, tasks added and removed)."""
    console.print(Text(f"{d['old']} -> {d['new']}", style="bold"))
    console.print(f"tasks {_delta(d['tasks'])}, rejections {_delta(d['rejections'])}; {d['unchanged']} tasks in both")
    table = Table("intent", "accepted", "rejected", title="per intent", title_justify="left")
    for intent, v in d["per_intent"].items():
        table.add_row(intent, _delta(v["accepted"]), _delta(v["rejected"]))
    console.print(table)
    if d["per_reason"]:
        table = Table("reason", "rejected", title="per reason", title_justify="left")
        for reason, v in d["per_reason"].items():
            table.add_row(reason, _delta(v))
        console.print(table)
    for what in ("added", "removed"):
        console.print(Text(f"{what} ({len(d[what])})", style="bold"))
        for t in d[what]:
            console.print(Text(f"  {t['id']}  {t['parent_asin']}"))
    console.print(Text(f"changed ({len(d['changed'])}): same target and intent, other rubrics", style="bold"))
    for c in d["changed"]:
        console.print(Text(f"  {c['intent']} {c['parent_asin']}: {c['old_id']} -> {c['new_id']}"))


# ---- validate -----------------------------------------------------------------------------------

DEFAULT_MAX_ANSWER_SET = 5  # BuildConfig's default, when the split's manifest does not say


@dataclass
class ValidationRun:
    """What `validate_file` found: findings rows, records read, and notes for the user (one line each)."""

    findings: list[dict[str, Any]]
    records: int
    notes: list[str]


def validate_file(tasks_path: Path, catalog: Path, record_format: str = "auto",
                  max_answer_set: int | None = None, cache_dir: Path | None = None) -> ValidationRun:
    """Read a tasks.jsonl and a catalog snapshot and run ecombench.validation.validate over every line.

    The catalog is indexed as plan_build does (products, their facts, plus reviews when the snapshot has
    them); only the targets' rows are kept as dicts. The answer-set bound comes from the
    manifest.json beside the file, else `max_answer_set`, else the build default. `cache_dir` keeps
    product knowledge learned for a snapshot stored without it (`catalog_knowledge`).

    Raises:
        SplitReadError / SnapshotError: the file or the snapshot is missing or unreadable.
    """
    if not tasks_path.is_file():
        raise SplitReadError(f"{tasks_path} not found")
    text = tasks_path.read_text(encoding="utf-8", errors="replace")
    records, lines, malformed = parse_task_lines(text)
    notes = []
    manifest_path = tasks_path.parent / "manifest.json"
    manifest: dict[str, Any] = {}
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            notes.append(f"{manifest_path} is not JSON; its settings were not used")
    if max_answer_set is None:
        max_answer_set = manifest.get("config", {}).get("max_answer_set", DEFAULT_MAX_ANSWER_SET)
    products, catalog_manifest = load_snapshot(catalog)
    reviews = load_reviews(catalog) if (catalog / "reviews.parquet").is_file() else None
    if reviews is None:
        notes.append(f"{catalog} has no reviews.parquet: review_opinion rubrics cannot be checked")
    table = load_field_table()
    knowledge = catalog_knowledge(catalog, table, cache_dir)
    index = CatalogIndex.build(products, table, reviews, facts=knowledge.facts.facts)
    targets = sorted(t for t in {_target_id(r) for r in records} if t is not None)
    target_rows = with_facts(products.filter(pl.col("parent_asin").is_in(targets)), knowledge.facts.facts)
    rows = {p["parent_asin"]: p for p in target_rows.to_dicts()}
    if reviews is not None:
        for row in rows.values():
            row["reviews"] = []
        for review in reviews.filter(pl.col("parent_asin").is_in(targets)).sort("review_id").iter_rows(named=True):
            rows[review["parent_asin"]]["reviews"].append(review)
    fingerprints = {r.get("provenance", {}).get("catalog_fingerprint") for r in records
                    if isinstance(r.get("provenance"), dict)} - {None}
    if fingerprints and fingerprints != {catalog_manifest.get("fingerprint")}:
        notes.append(f"the tasks were built from another catalog (fingerprint {sorted(fingerprints)[0][:16]}…, "
                     f"{catalog} is {str(catalog_manifest.get('fingerprint'))[:16]}…): answer sets may differ")
    findings = validate_tasks(records, table, index, rows, max_answer_set, record_format=record_format,
                              line_numbers=lines, type_vocabulary=knowledge.type_vocabulary)
    findings = sorted(malformed + findings, key=lambda f: f["line"])  # stable: each record's order kept
    return ValidationRun(findings=findings, records=len(records) + len(malformed), notes=notes)


def _target_id(record: dict[str, Any]) -> str | None:
    tp = record.get("target_product")
    if not isinstance(tp, dict):
        return None
    asin = tp.get("parent_asin", tp.get("product_id"))
    return asin if isinstance(asin, str) else None


def validation_summary(run: ValidationRun) -> dict[str, Any]:
    """Counts by severity and by (reason, severity), and how many tasks have an error."""
    by_reason = Counter((f["reason"], f["severity"], f["stage"]) for f in run.findings)
    return {"records": run.records,
            "errors": sum(f["severity"] == "error" for f in run.findings),
            "warnings": sum(f["severity"] == "warn" for f in run.findings),
            "records_with_errors": len({f["line"] for f in run.findings if f["severity"] == "error"}),
            "by_reason": [{"reason": r, "severity": s, "stage": f"{st}. {STAGE_NAMES[st]}", "count": n}
                          for (r, s, st), n in by_reason.most_common()]}


def render_validation(s: dict[str, Any], console: Console) -> None:
    """Print a `validation_summary` (finding counts, then findings by reason) as rich tables."""
    console.print(f"{s['records']} records: {s['errors']} error finding(s) in {s['records_with_errors']} record(s), "
                  f"{s['warnings']} warning(s)")
    if s["by_reason"]:
        table = Table("reason", "severity", "stage", "count", title="findings by reason", title_justify="left")
        for row in s["by_reason"]:
            table.add_row(row["reason"], row["severity"], row["stage"], str(row["count"]))
        console.print(table)


__all__ = ["SnapshotError", "SplitReadError", "SplitVersion", "ValidationRun", "diff_versions", "load_version",
           "render_diff", "render_rejections", "render_summary", "render_task", "render_validation",
           "resolve_version", "summary", "validate_file", "validation_summary"]
