"""Held-out natural questions (benchmarks/data/heldout_questions*.jsonl) asked through `ask_user` on a split.

Each list was written before the matcher or the replies it measures changed. The first list
(heldout_questions.jsonl) has since been read while improving the matcher, so it serves as a development
list; the second (heldout_questions_2.jsonl, `--questions 2`) was written before those changes; its misses
have since informed the matcher too. The third (heldout_questions_3.jsonl, `--questions 3`) was written by
someone who had not read the field table or the matcher; its miss categories informed the value-guess rule
(benchmarks/RESULTS.md). The fourth and fifth (`--questions 4`, `--questions 5`) were written the same way, by two
writers, before the values learned from the catalog (ecombench.validation.slots.catalog_values): the fourth's misses
informed that change, the fifth was not read until it was measured. The sixth (`--questions 6`) was written the
same way, before the readings of several fields' values, adjectives, kind words and idioms; lists 3 to 5 informed
those, the sixth was not read until it was measured. The seventh (`--questions 7`) was written the same way (the
field names and labels only) after the sixth was read, and is not read yet: it measures the next matcher change. For
every task, every hidden requirement and every held-out question about its field, one fresh sandbox episode asks
the question once:

- clarification requirements: recall is the share of asks that open the requirement's slot, false
  openings the share that open a slot of another field;
- persona requirements: a reply *denies* the profile when it says the shopper has no preference on the
  field ("I don't have a particular ... in mind"); it *answers* when it states the profile's value or
  points to the profile. A persona question that opens a slot of another field counts as a false opening.

Run after a build:

    .venv/bin/python benchmarks/heldout_questions.py /work/bench/splits-shopper-after/all/v1 \
        --catalog /work/bench/cat-shopper
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HELDOUT = REPO / "benchmarks" / "data" / "heldout_questions.jsonl"
LISTS = {"1": HELDOUT, "2": REPO / "benchmarks" / "data" / "heldout_questions_2.jsonl",
         "3": REPO / "benchmarks" / "data" / "heldout_questions_3.jsonl",
         "4": REPO / "benchmarks" / "data" / "heldout_questions_4.jsonl",
         "5": REPO / "benchmarks" / "data" / "heldout_questions_5.jsonl",
         "6": REPO / "benchmarks" / "data" / "heldout_questions_6.jsonl",
         "7": REPO / "benchmarks" / "data" / "heldout_questions_7.jsonl"}
DENIAL = "don't have a particular"


def load_heldout(path: Path = HELDOUT) -> dict[str, list[str]]:
    """{canonical field name: [questions]} in file order."""
    out: dict[str, list[str]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[row["field"]].append(row["question"])
    return dict(out)


def measure(tasks: list[dict[str, Any]], heldout: dict[str, list[str]],
            ask: Callable[[dict[str, Any], str], tuple[list[str], str]],
            persona_field: Callable[[dict[str, Any]], str]) -> dict[str, Any]:
    """Ask every held-out question of every hidden requirement's field.

    Args:
        tasks: task records.
        heldout: `load_heldout()`.
        ask: (task, question) -> (slot ids opened, reply), one fresh episode per call.
        persona_field: persona rubric record -> canonical field name.

    Returns:
        {"clarification": {asks, intended, wrong, recall, false_rate, misses: [(field, question, opened)]},
         "persona": {asks, denied, wrong, denial_rate, denials: [(task id, field, question, reply)],
                     openings: [(task id, field, question, slot fields opened)]}}.
    """
    clar = {"asks": 0, "intended": 0, "wrong": 0, "misses": []}
    pers = {"asks": 0, "denied": 0, "wrong": 0, "denials": [], "openings": []}
    for task in tasks:
        slots = task["clarification_script"]["clarification_slots"]
        field_of = {s["slot_id"]: s["field"].removeprefix("details.") for s in slots}
        for slot in slots:
            name = field_of[slot["slot_id"]]
            for q in heldout.get(name, []):
                opened, _ = ask(task, q)
                clar["asks"] += 1
                clar["intended"] += slot["slot_id"] in opened
                wrong = [field_of[o] for o in opened if field_of[o] != name]
                clar["wrong"] += bool(wrong)
                if slot["slot_id"] not in opened or wrong:
                    clar["misses"].append((name, q, [field_of[o] for o in opened]))
        for rubric in task["rubrics"]:
            if rubric["info_source"] != "persona":
                continue
            name = persona_field(rubric)
            for q in heldout.get(name, []):
                opened, reply = ask(task, q)
                pers["asks"] += 1
                pers["wrong"] += bool(opened)
                if opened:
                    pers["openings"].append((task["id"], name, q, [field_of[o] for o in opened]))
                if DENIAL in reply:
                    pers["denied"] += 1
                    pers["denials"].append((task["id"], name, q, reply))
    clar["recall"] = clar["intended"] / clar["asks"] if clar["asks"] else None
    clar["false_rate"] = clar["wrong"] / clar["asks"] if clar["asks"] else None
    pers["denial_rate"] = pers["denied"] / pers["asks"] if pers["asks"] else None
    return {"clarification": clar, "persona": pers}


def main() -> None:
    from ecombench.sandbox.catalog import SandboxCatalog
    from ecombench.sandbox.tools import Episode

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("split", type=Path, help="a split version directory holding tasks.jsonl")
    parser.add_argument("--catalog", type=Path, required=True, help="the catalog snapshot the split was built on")
    parser.add_argument("--misses", action="store_true", help="list every miss and every denial")
    parser.add_argument("--questions", default="1",
                        help="which question list: 1 to 5 (benchmarks/data/heldout_questions*.jsonl) or a path")
    args = parser.parse_args()
    tasks = [json.loads(line) for line in (args.split / "tasks.jsonl").open(encoding="utf-8")]
    catalog = SandboxCatalog.open(args.catalog)
    table = catalog.table

    def ask(task: dict[str, Any], question: str) -> tuple[list[str], str]:
        episode = Episode(catalog, task)
        result = episode.call("ask_user", {"question": question})
        return [r["slot_id"] for r in episode.revealed], result["user_response"]

    questions = LISTS.get(args.questions, Path(args.questions))
    result = measure(tasks, load_heldout(questions), ask, lambda r: table.by_rubric_field(r["field"]).name)
    c, p = result["clarification"], result["persona"]
    print(f"{len(tasks)} tasks of {args.split}, questions {questions.name}")
    print(f"clarification: {c['asks']} asks, recall {c['recall']:.1%}, false openings {c['false_rate']:.1%}")
    print(f"persona: {p['asks']} asks, {p['denied']} denials ({p['denial_rate']:.1%}), "
          f"{p['wrong']} opened a clarification slot")
    if args.misses:
        for name, q, opened in c["misses"]:
            print(f"miss {name}: {q!r} opened {opened}")
        for tid, name, q, reply in p["denials"][:40]:
            print(f"denial {tid} {name}: {q!r} -> {reply!r}")
        for tid, name, q, opened in p["openings"]:
            print(f"persona opening {tid} {name}: {q!r} opened {opened}")


if __name__ == "__main__":
    main()
