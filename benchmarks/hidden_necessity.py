"""How much each hidden source divides a split's answer set, and the ablated oracles' expected accuracy.

The ablated oracles (sandbox/agents.py `run_ablated_oracle`) recommend the first product, in search
order, that satisfies every rubric they can learn. One that skips a source therefore picks among the
products the task's rubrics without that source leave, and is right when its pick is in the full answer
set: its expected accuracy over a split is mean(|full answer set| / |answer set without the source|)
(issue #12). This prints, for both sources, the distribution of that ratio, its mean (the expected
accuracy), and how many tasks a k-fold division rule (|without| >= k x |full|) would keep, for k 2..10.
With --catalog, the sizes are recounted exactly (no cap) on the catalog snapshot; without it they are
read from each task's `difficulty` (counted up to 100). Run:

    .venv/bin/python benchmarks/hidden_necessity.py artifacts/splits/all/v1 --catalog /work/base/cat-all
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

SOURCES = ("persona", "clarification")
BUCKETS = ((1.0, "1"), (0.5, "(1/3, 1/2]"), (1 / 3, "(1/5, 1/3]"), (0.2, "(1/8, 1/5]"), (0.125, "(1/12, 1/8]"),
           (1 / 12, "<= 1/12"))


def bucket(ratio: float) -> str:
    """The label of the ratio's bucket: the smallest bucket bound at or above it ("1" ... "<= 1/12")."""
    label = BUCKETS[0][1]
    for bound, name in BUCKETS:
        if ratio <= bound + 1e-12:
            label = name
    return label


def sizes(task: dict[str, Any], index: Any | None) -> dict[str, int]:
    """{"full", "without_persona", "without_clarification"}: answer-set sizes of one task."""
    if index is None:
        d = task["difficulty"]
        return {"full": d["answer_set_size"], **{f"without_{s}": d[f"without_{s}_answer_set_size"] for s in SOURCES}}
    rubrics = task["rubrics"]
    return {"full": len(index.answer_set(rubrics)),
            **{f"without_{s}": len(index.answer_set([r for r in rubrics if r["info_source"] != s])) for s in SOURCES}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("split", type=Path, help="a split version directory (holding tasks.jsonl)")
    parser.add_argument("--catalog", type=Path, help="catalog snapshot: recount the sizes exactly")
    parser.add_argument("--agent-checks", action="store_true", help="also print the manifest's measured accuracies")
    args = parser.parse_args()
    tasks = [json.loads(line) for line in (args.split / "tasks.jsonl").read_text().splitlines() if line.strip()]
    index = None
    if args.catalog:
        from ecombench.answers.index import CatalogIndex
        from ecombench.catalog.snapshot import load_reviews, load_snapshot
        from ecombench.tables.fields import load_field_table

        products, _ = load_snapshot(args.catalog)
        index = CatalogIndex.build(products, load_field_table(), load_reviews(args.catalog))
    rows = [sizes(t, index) for t in tasks]
    how = f"recounted on {args.catalog}" if index else "from difficulty"
    print(f"{len(tasks)} tasks of {args.split} (sizes {how})")
    for s in SOURCES:
        ratios = [r["full"] / r[f"without_{s}"] for r in rows]
        by = Counter(bucket(x) for x in ratios)
        print(f"\nwithout {s}: ratio |full| / |without {s}|")
        print("  " + "  ".join(f"{name}: {by[name]}" for _, name in BUCKETS))
        print(f"  mean ratio (expected ablated accuracy): {sum(ratios) / len(ratios):.4f}")
        print(f"  without-{s} size: {dict(sorted(Counter(r[f'without_{s}'] for r in rows).items())[:12])} ...")
    print("\nk-fold rule |without| >= max(2, k x |full|) for both sources:")
    for k in range(2, 11):
        kept = [r for r in rows if all(r[f"without_{s}"] >= max(2, k * r["full"]) for s in SOURCES)]
        means = [sum(r["full"] / r[f"without_{s}"] for r in kept) / len(kept) if kept else float("nan")
                 for s in SOURCES]
        print(f"  k={k:2d}: {len(kept):4d} of {len(rows)} tasks pass; their expected accuracy "
              f"no_profile {means[0]:.3f}, no_ask {means[1]:.3f}")
    if args.agent_checks:
        checks = json.loads((args.split / "manifest.json").read_text()).get("agent_checks", {})
        for name, s in (("oracle_no_profile", "persona"), ("oracle_no_ask", "clarification")):
            expected = sum(r["full"] / r[f"without_{s}"] for r in rows) / len(rows)
            print(f"measured {name}: {checks.get(name, {}).get('accuracy')} (expected {expected:.4f})")


if __name__ == "__main__":
    main()
