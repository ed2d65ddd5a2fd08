"""Build timing at scale (issue 6): plan, candidates, answer sets, publishing and peak RSS on a big snapshot.

Runs the build's steps in this process (no Prefect, offline template verbaliser, resume off) on a
snapshot, e.g. one made by benchmarks/scale_catalog.py, and prints one line per phase:

    .venv/bin/python benchmarks/build_scale.py /work/scale-data/p1m --candidates 125 [--profile out.prof]

`--candidates` is per intent (125 x 8 intents = 1,000 candidates).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import resource
import tempfile
import time
from pathlib import Path


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident set size of this process in MB."""
    with open("/proc/self/statm") as fh:
        current = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(fn, name, phases):
    def wrapper(*a, **kw):
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            phases[name] = phases.get(name, 0.0) + time.perf_counter() - t
    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("catalog", type=Path)
    parser.add_argument("--candidates", type=int, default=125)
    parser.add_argument("--profile", type=Path, default=None, help="write a cProfile of plan + candidates here")
    parser.add_argument("--no-publish", action="store_true", help="skip expectations and publishing")
    args = parser.parse_args()
    os.environ.setdefault("ECOMBENCH_ARTIFACTS", tempfile.mkdtemp(prefix="ecombench-bench-"))
    t_import = time.perf_counter()
    from ecombench.flows.settings import artifacts_root
    from ecombench.pipeline.build import assemble, batches_of, plan_build, run_batch
    from ecombench.pipeline.config import BuildConfig
    print(f"import: {time.perf_counter() - t_import:.1f} s; load {os.getloadavg()[0]:.2f}", flush=True)

    import ecombench.pipeline.build as fb

    phases: dict[str, float] = {}
    for name in ("load_snapshot", "load_reviews", "detail_rows", "field_vocabulary", "eligibility_columns",
                 "sample_split"):
        setattr(fb, name, _timed(getattr(fb, name), name, phases))
    fb.CatalogIndex.build = classmethod(_timed(fb.CatalogIndex.build.__func__, "CatalogIndex.build", phases))
    config = BuildConfig(catalog=str(args.catalog), candidates_per_intent=args.candidates, resume=False)
    prof = cProfile.Profile() if args.profile else None
    if prof:
        prof.enable()
    t0 = time.perf_counter()
    ctx, products, sampling, manifest = plan_build(config, artifacts_root())
    t_plan = time.perf_counter() - t0
    print(f"plan_build: {t_plan:.1f} s over {manifest['counts']['products']} products; rss now/peak "
          "%.0f/%.0f MB" % rss_mb(), flush=True)
    print("  " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()), flush=True)
    t0 = time.perf_counter()
    batches = batches_of(products, sampling, config.batch_size, ctx.reviews)
    results = []
    for intent, batch in batches:
        results.extend(run_batch(batch, intent, ctx))
    t_cand = time.perf_counter() - t0
    if prof:
        prof.disable()
        prof.dump_stats(args.profile)
    tasks = [r.task for r in results if r.task is not None]
    print(f"candidates: {len(results)} in {t_cand:.1f} s = {len(results) / t_cand:.1f}/s, {len(tasks)} accepted; "
          "rss now/peak %.0f/%.0f MB" % rss_mb(), flush=True)
    t0 = time.perf_counter()
    for t in tasks:
        ctx.index.answer_set(t["rubrics"])
    per = (time.perf_counter() - t0) / max(1, len(tasks))
    print(f"answer set: {per * 1000:.2f} ms per accepted task ({len(tasks)} tasks)", flush=True)
    if not args.no_publish:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            out = assemble(config, ctx, products, sampling, manifest, results, "bench", None, Path(tmp))
            sha = json.loads((out.path / "manifest.json").read_text())["files"]["tasks.jsonl"]["sha256"][:16]
        print(f"assemble (expectations + publish): {time.perf_counter() - t0:.1f} s; tasks.jsonl {sha}", flush=True)
    print(f"total: {t_plan + t_cand:.1f} s plan+candidates; peak rss {rss_mb()[1]:.0f} MB; "
          f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
