"""How min_hidden_division trades accepted tasks against the ablated oracles' expected accuracy.

Plans one build over a catalog snapshot (stage 1 once), then runs stages 2-7 (`build_candidate`, no oracle
check) over the first N candidates of each intent once per value of k, and prints per k: tasks accepted,
the top rejection reasons, and the accepted tasks' mean ablation ratios (difficulty.<source>_ablation_ratio,
the expected accuracy of the oracle that skips that source; issue #12). Run:

    .venv/bin/python benchmarks/division_sweep.py --catalog /work/base/cat-all --per-intent 60 --k 1 3 5 7
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from collections import Counter
from pathlib import Path


def main() -> None:
    from ecombench.pipeline.build import batches_of, plan_build
    from ecombench.pipeline.candidate import build_candidate
    from ecombench.pipeline.config import BuildConfig

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, required=True)
    parser.add_argument("--per-intent", type=int, default=60)
    parser.add_argument("--candidates", type=int, default=450, help="candidates_per_intent of the plan (stage 1)")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 7])
    parser.add_argument("--intent", nargs="*", help="only these intents")
    parser.add_argument("--partition", default="{}", help="JSON of SplitConfig settings (ratios, minimums)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = BuildConfig(catalog=str(args.catalog), candidates_per_intent=args.candidates,
                             partition=json.loads(args.partition))
        if args.intent:
            config = config.model_copy(update={"intents": args.intent})
        ctx, products, sampling, _ = plan_build(config, Path(tmp))
        for s in sampling.values():
            s["candidates"] = s["candidates"][:args.per_intent]
        batches = batches_of(products, sampling, args.per_intent, ctx.reviews)
        for k in args.k:
            kctx = dataclasses.replace(ctx, config=ctx.config.model_copy(update={"min_hidden_division": k}))
            started = time.perf_counter()
            tasks, reasons, per_intent, weak = [], Counter(), Counter(), Counter()
            for intent, rows in batches:
                for row in rows:
                    result = build_candidate(row, intent, kctx)
                    if result.task is not None:
                        tasks.append(result.task)
                        per_intent[intent] += 1
                    else:
                        assert result.rejection is not None
                        reasons[result.rejection["reason"]] += 1
                        if result.rejection["reason"] == "hidden_source_too_weak":
                            e = result.rejection["evidence"]
                            worst = max(e.get(f"{s}_ablation_ratio") or 0 for s in ("persona", "clarification"))
                            weak[int(1 / worst) if worst else 0] += 1
            means = {s: (sum(t["difficulty"][f"{s}_ablation_ratio"] for t in tasks) / len(tasks) if tasks else None)
                     for s in ("persona", "clarification")}
            print(f"k={k}: {len(tasks)} accepted of {sum(len(r) for _, r in batches)} "
                  f"({time.perf_counter() - started:.0f} s); expected no_profile {means['persona']}, "
                  f"no_ask {means['clarification']}")
            print("   per intent: " + ", ".join(f"{i} {n}" for i, n in sorted(per_intent.items())))
            print("   reasons: " + ", ".join(f"{r} {n}" for r, n in reasons.most_common(8)), flush=True)
            if weak:  # how many times the weaker source divided the answer set, where it fell short of k
                print("   hidden_source_too_weak by division reached: " + ", ".join(
                    f"{d}x {n}" for d, n in sorted(weak.items())), flush=True)


if __name__ == "__main__":
    main()
