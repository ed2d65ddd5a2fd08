"""Leave one file out: what the catalog-learned knowledge gives on a metadata file it never saw.

For each shared metadata file F, the product knowledge a build learns from the catalog (the product-type
vocabulary, the fact vocabulary, the per-type statistics: ecombench.catalog.knowledge) is learned from the
other files only and applied to F's products: F's products are typed with the others' type vocabulary and
their facts read with the others' fact vocabulary, and the others' per-type statistics stand. That knowledge
replaces the knowledge `ecombench ingest` stored in a snapshot of F alone (a copy of it; the build reads the
stored knowledge when the snapshot's fingerprint and the statistics' digest match, and they do), and
`ecombench build --oracle-check` with default settings runs over it.

The comparison is the full build (one build over every shared file, from its own snapshot) restricted to the
tasks whose target comes from F. Printed per file: F's products, tasks full / leave-one-out, tasks per 1,000
of F's products and their ratio, the candidates drawn from F and the tasks per candidate (the defaults draw a
fixed number of candidates per intent, so a build over F alone draws all of them from F: tasks per 1,000
products are not on the same footing, tasks per candidate are), the attribute rubrics on a value implied by
the target's type and on a field rare for it (benchmarks/task_quality.py; both builds judged by the knowledge
the full build read, stored at ingest or in the cache of ECOMBENCH_ARTIFACTS), `no_product_type` rejections,
and F's products that the knowledge leaves untyped.

More ways to build over F alone, for comparison: `--own`, with the knowledge learned from F itself (what
`ecombench ingest` of a new file gives); `--base`, F ingested with the others' fact vocabulary beneath its
own (`ecombench ingest --vocabulary-from <snapshot of the others>`: how a new category is added to a catalog
one has, its types and per-type statistics learned from F, its pages read with the values both learned); and
`--tables`, every learned table from the others (F's products typed with their type vocabulary, F's facts read
with their fact vocabulary) and the per-type statistics counted over F's own products as so typed and read: the
statistics of the snapshot being built, from tables that never saw it.

    .venv/bin/python benchmarks/leave_one_out.py --full-catalog /work/bench/cat-shared \
        --full-build /work/bench/splits-device-5/sample/v1 --work /work/bench/loo [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl

from ecombench.catalog.facts import CatalogFacts, extract_facts, label_options
from ecombench.catalog.ingest import write_catalog_snapshot
from ecombench.catalog.knowledge import KNOWLEDGE_COLUMNS, ProductKnowledge, read_knowledge, write_knowledge
from ecombench.catalog.product_type import product_types
from ecombench.catalog.type_stats import learn_type_stats
from ecombench.pipeline.build import code_digest
from ecombench.pipeline.config import TypeRuleSettings
from ecombench.tables.fields import load_field_table
from ecombench.validation.catalog_stats import catalog_knowledge, snapshot_knowledge, write_catalog_stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from task_quality import rubric_findings  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "amazon-reviews-2023"
REVIEWS = SHARED / "with-reviews" / "reviews_electronics.jsonl"
FILES = [SHARED / "meta_electronics_beauty_office.jsonl", SHARED / "meta_home_toys_sports.jsonl",
         SHARED / "with-reviews" / "meta_electronics_with_reviews.jsonl"]
BIN = Path(sys.executable).parent


def reviews_for(files: list[Path]) -> list[Path]:
    """The review file goes with the metadata file it was collected for."""
    return [REVIEWS] if FILES[2] in files else []


def cli(*args: str, log: Path) -> None:
    """Run the ecombench CLI of this environment, its output appended to `log`.

    Raises:
        subprocess.CalledProcessError: it failed (the log says why).
    """
    with log.open("a", encoding="utf-8") as out:
        subprocess.run([str(BIN / "ecombench"), *args], check=True, stdout=out, stderr=subprocess.STDOUT)


def held_out_snapshot(held: Path, work: Path) -> Path:
    """F alone, ingested with its statistics (`ecombench ingest`; reused when it exists)."""
    out = work / f"only-{held.stem}"
    if not (out / "manifest.json").is_file():
        review_args = [a for r in reviews_for([held]) for a in ("--reviews", str(r))]
        cli("ingest", "--meta", str(held), *review_args, "--out", str(out), log=work / "ingest.log")
    return out


def others_snapshot(held: Path, work: Path, with_stats: bool = False) -> Path:
    """The snapshot of every shared file but `held` (its statistics written too when `with_stats`)."""
    others = [f for f in FILES if f != held]
    out = work / f"without-{held.stem}"
    if not (out / "manifest.json").is_file():
        write_catalog_snapshot(others, reviews_for(others), out)
    if with_stats and not (out / "stats" / "type_stats.json").is_file():
        write_catalog_stats(out, load_field_table(), with_suite=False)
    return out


def others_knowledge(held: Path, work: Path) -> ProductKnowledge:
    """The knowledge learned from every shared file but `held`."""
    return snapshot_knowledge(others_snapshot(held, work), load_field_table())


def base_snapshot(held: Path, work: Path) -> Path:
    """F alone, ingested with the others' fact vocabulary beneath its own (`ecombench ingest --vocabulary-from`)."""
    out = work / f"base-{held.stem}"
    if not (out / "manifest.json").is_file():
        review_args = [a for r in reviews_for([held]) for a in ("--reviews", str(r))]
        cli("ingest", "--meta", str(held), *review_args, "--vocabulary-from",
            str(others_snapshot(held, work, with_stats=True)), "--out", str(out), log=work / "ingest.log")
    return out


def applied_knowledge(products: pl.DataFrame, learned: ProductKnowledge) -> ProductKnowledge:
    """`learned` applied to `products`: their types and facts by its vocabularies, its per-type statistics."""
    table = load_field_table()
    not_entities = sorted(table.fields["title"].placeholders)
    typed = product_types(products, learned.type_vocabulary, not_entities)
    facts = extract_facts(products, table, learned.facts.vocabulary, labels=label_options(products, table))
    return ProductKnowledge(facts=CatalogFacts(facts, learned.facts.vocabulary),
                            type_vocabulary=learned.type_vocabulary, type_evidence=learned.type_evidence,
                            product_types=typed, type_stats=learned.type_stats)


def own_statistics(knowledge: ProductKnowledge) -> ProductKnowledge:
    """`knowledge` with its per-type statistics counted over its own facts and product types (same rules)."""
    stats = learn_type_stats(knowledge.facts.facts, knowledge.product_types, knowledge.type_stats.rules,
                             load_field_table().settled_by())
    return dataclasses.replace(knowledge, type_stats=stats)


def loo_snapshot(held: Path, work: Path, statistics: str = "others") -> Path:
    """A copy of F's snapshot whose stored knowledge is learned without F.

    statistics: "others" keeps the others' per-type statistics (`loo-` dir); "own" counts them over F's products as
    typed and read with the others' tables (`tables-` dir).
    """
    source = held_out_snapshot(held, work)
    out = work / f"{'loo' if statistics == 'others' else 'tables'}-{held.stem}"
    if (out / "stats" / "loo.json").is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(source, out)
    products = pl.read_parquet(out / "products.parquet", columns=list(KNOWLEDGE_COLUMNS))
    knowledge = applied_knowledge(products, others_knowledge(held, work))
    write_knowledge(own_statistics(knowledge) if statistics == "own" else knowledge, out / "stats")
    (out / "stats" / "loo.json").write_text(json.dumps({"learned_without": held.name, "statistics": statistics})
                                            + "\n", encoding="utf-8")
    return out


def tables_snapshot(held: Path, work: Path) -> Path:
    """`loo_snapshot` with the per-type statistics counted over F itself."""
    return loo_snapshot(held, work, statistics="own")


def split_version(build: Path) -> Path:
    """The split version directory of a build's --out (the one holding tasks.jsonl)."""
    return next(p.parent for p in sorted(build.rglob("tasks.jsonl")))


def build(catalog: Path, out: Path, work: Path) -> Path:
    """`ecombench build --catalog catalog --oracle-check --out out` with default settings (reused when done).

    With --allow-empty: a build that accepts nothing is a figure (0 tasks), not an error.
    """
    if not any(out.rglob("tasks.jsonl")):
        shutil.rmtree(out, ignore_errors=True)
        cli("build", "--catalog", str(catalog), "--oracle-check", "--allow-empty", "--out", str(out),
            log=work / f"{out.name}.log")
    return split_version(out)


def build_figures(version: Path, asins: set[str], judge: ProductKnowledge) -> dict[str, Any]:
    """Tasks, candidates and findings of a split version, over the targets in `asins`."""
    tasks = [json.loads(line) for line in (version / "tasks.jsonl").read_text(encoding="utf-8").splitlines()]
    tasks = [t for t in tasks if t["target_product"]["parent_asin"] in asins]
    rejections = pl.read_parquet(version / "rejections.parquet").filter(pl.col("parent_asin").is_in(list(asins)))
    manifest = json.loads((version / "manifest.json").read_text(encoding="utf-8"))
    rules = manifest.get("config", {}).get("type_rules") or {}
    settings = TypeRuleSettings(**rules) if rules else TypeRuleSettings()
    stats = judge.type_stats.with_rules(settings.rules(catalog_products=judge.type_stats.catalog_products))
    found = rubric_findings(tasks, judge, stats)
    return {"tasks": len(tasks), "candidates": len(tasks) + rejections.height,
            "no_product_type": rejections.filter(pl.col("reason") == "no_product_type").height,
            "implied": len(found["implied"]), "rare": len(found["rare"]),
            "contradicted": len(found["contradicted"]), "task_ids": sorted(t["id"] for t in tasks)}


def untyped(knowledge: ProductKnowledge, asins: set[str]) -> int:
    """F's products that `knowledge` leaves without a type."""
    return knowledge.product_types.filter(pl.col("parent_asin").is_in(list(asins))
                                          & pl.col("product_type").is_null()).height


def check_work_dir(work: Path) -> None:
    """Create `work`, or check that what it holds was made by this code (its snapshots and builds are reused).

    The code's digest (ecombench.pipeline.build.code_digest) is kept in `work`/code_digest.txt. A dir made by other
    code, or by a version of this script that kept no digest, is refused with a one-line message: a run that reused a
    dir left from an earlier session reported that session's snapshots.
    """
    stamp, digest = work / "code_digest.txt", code_digest()
    if work.exists() and any(work.iterdir()):
        found = stamp.read_text(encoding="utf-8").strip() if stamp.is_file() else "none"
        if found != digest:
            sys.exit(f"leave_one_out: --work {work} holds snapshots and builds of other code (digest {found[:12]}, "
                     f"this code {digest[:12]}); give a new --work or remove it")
        return
    work.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full-catalog", type=Path, required=True, help="snapshot of every shared file")
    parser.add_argument("--full-build", type=Path, required=True,
                        help="a build over it with --oracle-check and default settings (its --out or split version)")
    parser.add_argument("--work", type=Path, required=True,
                        help="where the snapshots and builds go (reused by a later run of the same code)")
    parser.add_argument("--only", default=None, help="one held-out file name (default: every shared file)")
    parser.add_argument("--own", action="store_true",
                        help="also build over F alone with the knowledge learned from F itself (what a build of a "
                             "new file learns from it), for comparison")
    parser.add_argument("--base", action="store_true",
                        help="also build over F alone, ingested with the others' fact vocabulary beneath its own "
                             "(`ecombench ingest --vocabulary-from`: how a new category is added to a catalog)")
    parser.add_argument("--tables", action="store_true",
                        help="also build over F alone with every learned table from the others and the per-type "
                             "statistics counted over F's products as typed and read with them")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    check_work_dir(args.work)
    os.environ.setdefault("ECOMBENCH_ARTIFACTS", str(args.work / "artifacts"))
    held_files = [f for f in FILES if not args.only or f.name == args.only]
    # Every leave-one-out build first: the full build may still be running meanwhile.
    versions = {held: build(loo_snapshot(held, args.work), args.work / f"splits-loo-{held.stem}", args.work)
                for held in held_files}
    extra = {"own": held_out_snapshot, "base": base_snapshot, "tables": tables_snapshot}
    modes = [m for m in extra if getattr(args, m)]
    builds = {(m, held): build(extra[m](held, args.work), args.work / f"splits-{m}-{held.stem}", args.work)
              for m in modes for held in held_files}
    # The knowledge the full build used: stored at ingest when current for this code, else its build cache.
    judge = catalog_knowledge(args.full_catalog, load_field_table(),
                              Path(os.environ["ECOMBENCH_ARTIFACTS"]) / "cache" / "knowledge")
    full_version = split_version(args.full_build)
    rows = {}
    for held, loo_version in versions.items():
        catalog = args.work / f"loo-{held.stem}"
        asins = set(pl.read_parquet(catalog / "products.parquet", columns=["parent_asin"])
                    .get_column("parent_asin").to_list())
        rows[held.name] = {"products": len(asins), "full": build_figures(full_version, asins, judge),
                           "loo": build_figures(loo_version, asins, judge),
                           "untyped_full": untyped(judge, asins),
                           "untyped_loo": untyped(read_knowledge(catalog / "stats"), asins)}
        for m in modes:
            rows[held.name][m] = build_figures(builds[m, held], asins, judge)
            rows[held.name][f"untyped_{m}"] = untyped(read_knowledge(extra[m](held, args.work) / "stats"), asins)
    print("| held-out file | products | tasks full / loo | per 1,000 products full / loo (ratio) | "
          "candidates from it full / loo | tasks per candidate full / loo (ratio) | implied-value rubrics "
          "full / loo | rare-field rubrics full / loo | no_product_type full / loo | untyped products full / loo |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        n, f, o = r["products"], r["full"], r["loo"]
        per_f, per_o = 1000 * f["tasks"] / n, 1000 * o["tasks"] / n
        rate_f = f["tasks"] / max(f["candidates"], 1)
        rate_o = o["tasks"] / max(o["candidates"], 1)
        print(f"| {name} | {n} | {f['tasks']} / {o['tasks']} | {per_f:.1f} / {per_o:.1f} "
              f"({per_o / per_f if per_f else float('nan'):.2f}) | {f['candidates']} / {o['candidates']} | "
              f"{rate_f:.3f} / {rate_o:.3f} ({rate_o / rate_f if rate_f else float('nan'):.2f}) | "
              f"{f['implied']} / {o['implied']} | {f['rare']} / {o['rare']} | "
              f"{f['no_product_type']} / {o['no_product_type']} | {r['untyped_full']} / {r['untyped_loo']} |")
    for m in modes:
        print()
        print(f"| held-out file | tasks {m} | per 1,000 products {m} (ratio to full) | candidates {m} | tasks per "
              f"candidate {m} | implied-value rubrics {m} | rare-field rubrics {m} | no_product_type {m} | untyped "
              f"products {m} |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, r in rows.items():
            n, w, f = r["products"], r[m], r["full"]
            ratio = w["tasks"] / f["tasks"] if f["tasks"] else float("nan")
            print(f"| {name} | {w['tasks']} | {1000 * w['tasks'] / n:.1f} ({ratio:.2f}) | {w['candidates']} | "
                  f"{w['tasks'] / max(w['candidates'], 1):.3f} | {w['implied']} | {w['rare']} | "
                  f"{w['no_product_type']} | {r[f'untyped_{m}']} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
