"""Answer-set timing on the largest real catalog snapshot (issue 5): seconds per 100 tasks.

Builds a snapshot of every real file in ../shared/data/amazon-reviews-2023 (7,270 products with
3,175 reviews), builds a split of all intents, then times `CatalogIndex.answer_set` over every
accepted task's rubrics (repeated to 100+ calls) and prints the figures. Run:

    .venv/bin/python benchmarks/answer_sets.py [--candidates 60]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "amazon-reviews-2023"


def main() -> None:
    from ecombench.answers.index import CatalogIndex
    from ecombench.catalog.ingest import write_catalog_snapshot
    from ecombench.catalog.snapshot import load_reviews, load_snapshot
    from ecombench.pipeline.build import build_split
    from ecombench.pipeline.config import BuildConfig
    from ecombench.tables.fields import load_field_table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        snap = Path(tmp) / "catalog"
        t0 = time.perf_counter()
        write_catalog_snapshot([DATA / "meta_electronics_beauty_office.jsonl", DATA / "meta_home_toys_sports.jsonl",
                                DATA / "with-reviews" / "meta_electronics_with_reviews.jsonl"],
                               [DATA / "with-reviews" / "reviews_electronics.jsonl"], snap)
        t_ingest = time.perf_counter() - t0
        products, _ = load_snapshot(snap)
        t0 = time.perf_counter()
        index = CatalogIndex.build(products, load_field_table(), load_reviews(snap))
        t_index = time.perf_counter() - t0
        out = build_split(BuildConfig(catalog=str(snap), candidates_per_intent=args.candidates), "bench",
                          root=Path(tmp) / "splits", artifacts=Path(tmp) / "artifacts")
        tasks = [json.loads(line) for line in (out.path / "tasks.jsonl").read_text().splitlines()]
        rounds = max(1, -(-100 // len(tasks)))
        t0 = time.perf_counter()
        for _ in range(rounds):
            for t in tasks:
                index.answer_set(t["rubrics"])
        per_task = (time.perf_counter() - t0) / (rounds * len(tasks))
    print(f"machine: {platform.machine()}, {platform.python_version()}, {platform.platform()}")
    print(f"catalog: {products.height} products; ingest {t_ingest:.2f} s; index build {t_index:.2f} s")
    print(f"tasks timed: {len(tasks)} x {rounds} rounds")
    print(f"answer set: {per_task * 1000:.1f} ms per task, {per_task * 100:.2f} s per 100 tasks")


if __name__ == "__main__":
    main()
