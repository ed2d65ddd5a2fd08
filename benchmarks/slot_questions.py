"""The natural clarification questions (tests/validation/data/slot_questions.toml) asked through `ask_user`.

For every task of a split and every clarification slot, each suite question about the slot's field is
asked in a fresh episode of the sandbox (sandbox/tools.py, whose `ask_user` is the matcher of
validation/slots.py). Prints, per field, the asks, the share that opened the intended slot (recall)
and the share that opened some other slot (false openings); then what the generic questions, the
keyword dumps and the value guesses did on every task. Run after a build over the shared data:

    .venv/bin/ecombench build --catalog /work/base/cat-all --split all --oracle-check
    .venv/bin/python benchmarks/slot_questions.py artifacts/splits/all/v1 --catalog /work/base/cat-all
"""

from __future__ import annotations

import argparse
import json
import tomllib
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "tests" / "validation" / "data" / "slot_questions.toml"


def load_suite(path: Path = SUITE) -> dict[str, Any]:
    """The suite as written: {"fields": {field: {"questions": [...]}}, "generic": ..., "dumps": ..., "guesses": ...}."""
    return tomllib.loads(path.read_text(encoding="utf-8"))


def measure(tasks: list[dict[str, Any]], suite: dict[str, Any],
            ask: Callable[[dict[str, Any], str], tuple[list[str], str]]) -> dict[str, Any]:
    """Ask the suite on every task.

    Args:
        tasks: task records (their clarification scripts are what matters).
        suite: `load_suite()`.
        ask: (task, question) -> (slot ids opened, reply), one fresh episode per call.

    Returns:
        {"fields": {field: {asks, intended, wrong, recall, false_rate, misses: [(question, opened fields)]}},
         "generic" | "dumps" | "guesses": {asks, opened, replies: {reply: count}}}.
    """
    fields: dict[str, dict[str, Any]] = defaultdict(lambda: {"asks": 0, "intended": 0, "wrong": 0, "misses": []})
    for task in tasks:
        slots = task["clarification_script"]["clarification_slots"]
        field_of = {s["slot_id"]: s["field"].removeprefix("details.") for s in slots}
        for slot in slots:
            name = field_of[slot["slot_id"]]
            for q in suite["fields"].get(name, {}).get("questions", []):
                opened, _ = ask(task, q)
                row = fields[name]
                row["asks"] += 1
                row["intended"] += slot["slot_id"] in opened
                wrong = [field_of[o] for o in opened if field_of[o] != name]
                row["wrong"] += bool(wrong)
                if slot["slot_id"] not in opened or wrong:
                    row["misses"].append((q, [field_of[o] for o in opened]))
    for row in fields.values():
        row["recall"] = row["intended"] / row["asks"]
        row["false_rate"] = row["wrong"] / row["asks"]
    out: dict[str, Any] = {"fields": dict(sorted(fields.items()))}
    for kind in ("generic", "dumps", "guesses"):
        block = {"asks": 0, "opened": 0, "replies": defaultdict(int)}
        for task in tasks:
            for q in suite[kind]["questions"]:
                opened, reply = ask(task, q)
                block["asks"] += 1
                block["opened"] += bool(opened)
                block["replies"][reply] += 1
        block["replies"] = dict(block["replies"])
        out[kind] = block
    return out


def totals(result: dict[str, Any]) -> dict[str, float]:
    """Overall recall and false-opening rate over every ask of the field questions."""
    asks = sum(r["asks"] for r in result["fields"].values())
    return {"asks": asks, "recall": sum(r["intended"] for r in result["fields"].values()) / asks,
            "false_rate": sum(r["wrong"] for r in result["fields"].values()) / asks}


def table_markdown(result: dict[str, Any]) -> str:
    """The per-field table and the generic / dump / guess lines as Markdown."""
    lines = ["| field | asks | recall | false openings |", "|---|---:|---:|---:|"]
    for name, r in result["fields"].items():
        lines.append(f"| {name} | {r['asks']} | {r['recall']:.1%} | {r['false_rate']:.1%} |")
    t = totals(result)
    lines.append(f"| **all** | {t['asks']} | {t['recall']:.1%} | {t['false_rate']:.1%} |")
    for kind in ("generic", "dumps", "guesses"):
        b = result[kind]
        lines.append(f"\n{kind}: {b['asks']} asks, {b['opened']} opened a slot; replies: "
                     + "; ".join(f"{n} x {reply!r}" for reply, n in sorted(b["replies"].items(), key=lambda x: -x[1])))
    return "\n".join(lines)


def main() -> None:
    from ecombench.sandbox.catalog import SandboxCatalog
    from ecombench.sandbox.tools import Episode

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("split", type=Path, help="a split version directory holding tasks.jsonl")
    parser.add_argument("--catalog", type=Path, required=True, help="the catalog snapshot the split was built on")
    parser.add_argument("--misses", action="store_true",
                        help="also list every question that missed or opened a wrong slot")
    args = parser.parse_args()
    tasks = [json.loads(line) for line in (args.split / "tasks.jsonl").open(encoding="utf-8")]
    catalog = SandboxCatalog.open(args.catalog)

    def ask(task: dict[str, Any], question: str) -> tuple[list[str], str]:
        episode = Episode(catalog, task)
        result = episode.call("ask_user", {"question": question})
        return [r["slot_id"] for r in episode.revealed], result["user_response"]

    result = measure(tasks, load_suite(), ask)
    print(f"{len(tasks)} tasks of {args.split}\n")
    print(table_markdown(result))
    if args.misses:
        for name, r in result["fields"].items():
            for q, opened in sorted(set((q, tuple(o)) for q, o in r["misses"])):
                print(f"miss {name}: {q!r} opened {list(opened)}")


if __name__ == "__main__":
    main()
