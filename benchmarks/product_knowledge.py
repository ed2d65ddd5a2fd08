"""The product knowledge of a snapshot alone (most of what `ecombench ingest` spends on statistics): time, memory.

Runs `snapshot_knowledge` (type vocabulary, product types, facts, per-type statistics; products.parquet in
KNOWLEDGE_SLICE_ROWS slices) once and prints wall seconds, CPU seconds (user+sys of this process), peak RSS
(ru_maxrss) and the row counts; with `--out` it also writes the knowledge files there (`write_knowledge`), so two
versions of the code can be compared file by file (sha256).

    nice -n 10 .venv/bin/python benchmarks/product_knowledge.py /work/scale-data/snap100k --out /tmp/k100
    PYTHONPATH=/other/worktree nice -n 10 .venv/bin/python benchmarks/product_knowledge.py SNAPSHOT --out /tmp/k-old
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

from ecombench.catalog.knowledge import write_knowledge
from ecombench.tables.fields import load_field_table
from ecombench.validation.catalog_stats import snapshot_knowledge


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="write the knowledge files here")
    args = parser.parse_args()
    table = load_field_table()
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    knowledge = snapshot_knowledge(args.snapshot, table)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"product knowledge: {wall:.1f} s wall, {cpu:.1f} CPU-s, peak RSS {peak_mb} MB; "
          f"{knowledge.facts.facts.height:,} facts, {knowledge.product_types.height:,} products; "
          f"1-min load {load:.1f} -> {os.getloadavg()[0]:.1f}")
    if args.out is not None:
        write_knowledge(knowledge, args.out)


if __name__ == "__main__":
    main()
