"""What the product knowledge says of a published split's rubrics: the figures of the product-knowledge rules.

For one split version and the catalog snapshot it was built from (its stored product knowledge), prints:

- rubrics on a value carried by >= implied_share of the target type's products stating the field, and rubrics on
  a field the type's products state in < min_coverage of cases (the thresholds of the build's manifest);
- attribute rubrics whose value the target's own page contradicts (its product facts);
- device-accessory tasks (type head case, cover, band, strap, charger, protector, holder, mount, skin, sleeve,
  and a page that states a device it fits: a compatibility fact) and how many name that device (a rubric on a
  compatibility field); accessories whose page names no device are counted apart, and the share is also given
  for the pages whose compatibility facts name a device model (not only a kind, series or fragment: "SE");
- answer-set sizes, intents, and the share of tasks per type head.

Usage: benchmarks/task_quality.py SPLIT_VERSION_DIR CATALOG_DIR [--cache ARTIFACTS/cache/knowledge]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path

import polars as pl

from ecombench.catalog.devices import names_device
from ecombench.catalog.knowledge import ProductKnowledge, read_knowledge
from ecombench.catalog.type_stats import TypeStats, type_groups
from ecombench.pipeline.config import TypeRuleSettings
from ecombench.tables.fields import load_field_table

ACCESSORY_HEADS = frozenset("case cover band strap charger protector holder mount skin sleeve".split())


def rubric_findings(tasks: list[dict], knowledge: ProductKnowledge, stats: TypeStats) -> dict[str, list]:
    """What the product knowledge says of `tasks`' rubrics: lists of the findings, by kind.

    Keys: implied (rubrics on a value carried by >= implied_share of the type), rare (a field the type states in
    < min_coverage), contradicted (the target's page contradicts the value),
    accessories (device-accessory tasks whose page states a device), named (those of them naming it), no_device
    (accessory-type tasks whose page states none), by_model (accessory tasks whose page names a device model), heads
    (one type head per task).
    """
    table = load_field_table()
    compat = {s.name for s in table.detail_fields() if s.compatibility}
    types = dict(knowledge.product_types.select("parent_asin", "product_type").iter_rows())
    facts = knowledge.facts.facts
    polarity = {(a, f, v): p for a, f, v, p in facts.select("parent_asin", "field", "value", "polarity").iter_rows()}

    stated_compat = facts.filter(pl.col("field").is_in(list(compat)) & (pl.col("polarity") == "stated"))
    fits = set(stated_compat.get_column("parent_asin").to_list())
    fits_model = {a for a, v in stated_compat.select("parent_asin", "value").iter_rows() if names_device(v)}
    implied, rare, contradicted, accessories, named, no_device = [], [], [], [], [], []
    heads: Counter[str] = Counter()
    for t in tasks:
        asin = t["target_product"]["parent_asin"]
        ptype = types.get(asin)
        groups = type_groups(ptype)
        heads[groups[-1] if groups else "(none)"] += 1
        fields = set()
        for r in t["rubrics"]:
            if r["type"] not in ("attribute_match", "negative_attribute"):
                continue
            field = r["field"].removeprefix("details.")
            fields.add(field)
            if r["type"] != "attribute_match" or field in compat:
                continue
            value = str(r["expected_value"])
            row = stats.field_stats(ptype, field)
            if row is not None:
                if row["coverage"] < stats.rules.min_coverage:
                    rare.append((t["id"], ptype, field, value, round(row["coverage"], 3)))
                vrow = stats._values.get((stats.group_of(ptype), field, value))  # type: ignore[attr-defined]
                if vrow is not None and vrow["share"] >= stats.rules.implied_share:
                    implied.append((t["id"], ptype, field, value, round(vrow["share"], 3)))
            if polarity.get((asin, field, value)) == "contradicted":
                contradicted.append((t["id"], field, value))
        if groups and groups[-1] in ACCESSORY_HEADS and asin not in fits:
            no_device.append(t["id"])
        elif groups and groups[-1] in ACCESSORY_HEADS:
            accessories.append(t["id"])
            if fields & compat:
                named.append(t["id"])

    targets = {t["id"]: t["target_product"]["parent_asin"] for t in tasks}
    by_model = [tid for tid in accessories if targets[tid] in fits_model]
    return {"implied": implied, "rare": rare, "contradicted": contradicted, "accessories": accessories,
            "named": named, "no_device": no_device, "by_model": by_model, "heads": list(heads.elements())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("version", type=Path)
    ap.add_argument("catalog", type=Path)
    ap.add_argument("--show", type=int, default=5, help="examples printed per finding")
    args = ap.parse_args()
    tasks = [json.loads(line) for line in (args.version / "tasks.jsonl").read_text(encoding="utf-8").splitlines()]
    manifest = json.loads((args.version / "manifest.json").read_text(encoding="utf-8"))
    rules = manifest.get("config", {}).get("type_rules") or {}
    knowledge = read_knowledge(args.catalog / "stats")
    settings = TypeRuleSettings(**rules) if rules else TypeRuleSettings()
    stats = knowledge.type_stats.with_rules(settings.rules(catalog_products=knowledge.type_stats.catalog_products))
    found = rubric_findings(tasks, knowledge, stats)
    implied, rare, contradicted = found["implied"], found["rare"], found["contradicted"]
    accessories, named, no_device = found["accessories"], found["named"], found["no_device"]
    heads = Counter(found["heads"])
    sizes = [len(t["answer_set"]) for t in tasks]
    print(f"{len(tasks)} tasks; intents {dict(Counter(t['intent'] for t in tasks))}")
    print(f"answer-set size: median {statistics.median(sizes) if sizes else 0}, size 1: {sizes.count(1)}, "
          f">= 3: {sum(s >= 3 for s in sizes)}")
    print(f"type heads (top 10): {heads.most_common(10)}")
    print(f"rules: implied_share {stats.rules.implied_share}, min_coverage {stats.rules.min_coverage}, "
          f"min_products {stats.rules.min_products}")
    print(f"attribute rubrics on an implied value (share >= {stats.rules.implied_share}): {len(implied)}")
    for x in implied[:args.show]:
        print("   ", x)
    print(f"attribute rubrics on a field rare for the type (coverage < {stats.rules.min_coverage}): {len(rare)}")
    for x in rare[:args.show]:
        print("   ", x)
    print(f"attribute rubrics the target's page contradicts: {len(contradicted)}")
    for x in contradicted[:args.show]:
        print("   ", x)
    share = 100 * len(named) / len(accessories) if accessories else 100.0
    print(f"device-accessory tasks naming the device: {len(named)} of {len(accessories)} ({share:.1f} %)")
    print(f"accessory-type tasks whose page states no device: {len(no_device)}")
    by_model = found["by_model"]
    share = 100 * len(set(by_model) & set(named)) / len(by_model) if by_model else 100.0
    print(f"  of those whose page names a device model (ecombench.catalog.devices.names_device): "
          f"{len(set(by_model) & set(named))} of {len(by_model)} ({share:.1f} %)")
    for tid in sorted(set(accessories) - set(named))[:args.show]:
        t = next(t for t in tasks if t["id"] == tid)
        print("    unnamed:", tid, t["target_product"]["title"][:90])


if __name__ == "__main__":
    main()
