"""Product facts against the hand-labelled gold sample: precision and recall, with the labels alone as baseline.

The gold sample (benchmarks/data/facts_gold.jsonl: 166 (product, field) pairs of the shared data, labelled by
reading each record before the extractor was written; benchmarks/data/facts_gold_README.md) lists per pair the
values the page states and those it contradicts. This script builds the facts of every shared product (as ingest
does) and scores, over the gold pairs:

- precision: stated facts that the gold lists as stated, over all stated facts of those pairs. "strict" follows
  the gold's own rule (a label value the rest of the page neither confirms nor denies is not stated); "details as
  page" also counts such a label value (the gold's `uncheckable` verdict) as right, since Amazon shows the
  details table on the page;
- recall: gold stated values found among the stated facts;
- contradictions found.

Usage: benchmarks/facts_gold.py [--shared ../shared/data/amazon-reviews-2023] [--show N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import polars as pl

from ecombench.catalog.facts import CONTRADICTED, STATED, build_catalog_facts, label_options
from ecombench.catalog.ingest import write_catalog_snapshot
from ecombench.tables.fields import load_field_table
from ecombench.text import normalize

HERE = Path(__file__).resolve().parent
GOLD = HERE / "data" / "facts_gold.jsonl"
FILES = ("meta_electronics_beauty_office.jsonl", "meta_home_toys_sports.jsonl",
         "with-reviews/meta_electronics_with_reviews.jsonl")
MAKERS = ("samsung", "apple", "google", "motorola", "lg", "huawei", "xiaomi", "oneplus")


def key(value: str, table) -> frozenset[str]:
    """Comparable forms of a value: each alias spelling normalised (singular words), maker names dropped."""
    out = set()
    for spelling in table.spellings(value):
        s = normalize(spelling)
        for maker in MAKERS:
            s = s.removeprefix(maker + " ")
        out.add(s)
    return frozenset(out)


def same(a: str, b: str, table) -> bool:
    """Equal forms, or a device model named without its series ("A30s" for "Samsung Galaxy A30s")."""
    ka, kb = key(a, table), key(b, table)
    if ka & kb:
        return True
    def suffix(long: str, short: str) -> bool:
        return long.endswith(" " + short) and any(c.isdigit() for c in short)

    return any(suffix(x, y) or suffix(y, x) for x in ka for y in kb)


def load_products(shared: Path) -> pl.DataFrame:
    """The shared metadata files as a snapshot's products table (ingested into a temporary folder)."""
    with tempfile.TemporaryDirectory() as tmp:
        write_catalog_snapshot([shared / name for name in FILES], [], Path(tmp) / "snap")
        return pl.read_parquet(Path(tmp) / "snap" / "products.parquet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "data" / "amazon-reviews-2023")
    ap.add_argument("--show", type=int, default=0, help="print this many wrong and missed values")
    args = ap.parse_args()
    table = load_field_table()
    gold = [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines()]
    products = load_products(args.shared)
    facts = build_catalog_facts(products, table).facts
    raw_labels: dict[tuple[int, str], list[str]] = {}
    for rec in label_options(products, table).iter_rows(named=True):
        raw_labels.setdefault((rec["row"], rec["field"]), []).append(rec["value"])
    rows = dict(zip(products.get_column("parent_asin").to_list(), range(products.height)))
    by_pair: dict[tuple[int, str], list[dict]] = {}
    for rec in facts.filter(pl.col("row").is_in([rows[g["parent_asin"]] for g in gold])).to_dicts():
        by_pair.setdefault((rec["row"], rec["field"]), []).append(rec)
    tally = {"facts": 0, "strict": 0, "page": 0, "gold": 0, "found": 0, "base": 0, "base_strict": 0,
             "base_page": 0, "base_found": 0, "contra_gold": 0, "contra_found": 0, "contra_facts": 0}
    wrong, missed = [], []
    tiers: dict[str, list[int]] = {}
    for g in gold:
        facts_here = by_pair.get((rows[g["parent_asin"]], g["field"]), [])
        ours = [f["value"] for f in facts_here if f["polarity"] == STATED]
        denied = [f["value"] for f in facts_here if f["polarity"] == CONTRADICTED]
        label_values = raw_labels.get((rows[g["parent_asin"]], g["field"]), [])
        uncheckable = g["label_verdict"] == "uncheckable"
        for v in ours:
            tally["facts"] += 1
            right = any(same(v, s, table) for s in g["stated"])
            tally["strict"] += right
            tally["page"] += right or (uncheckable and v in label_values)
            fact = next(f for f in facts_here if f["value"] == v and f["polarity"] == STATED)
            tier = "+".join(sorted(fact["sources"]))
            tiers.setdefault(tier, [0, 0])
            tiers[tier][0] += 1
            tiers[tier][1] += right
            if not right and not (uncheckable and v in label_values):
                ev = next(f for f in facts_here if f["value"] == v and f["polarity"] == STATED)
                wrong.append((g["parent_asin"], g["field"], v, g["stated"], tier, ev["evidence"][:100]))
        for s in g["stated"]:
            tally["gold"] += 1
            hit = any(same(v, s, table) for v in ours)
            tally["found"] += hit
            if not hit:
                missed.append((g["parent_asin"], g["field"], s, ours))
        for v in label_values:
            tally["base"] += 1
            right = any(same(v, s, table) for s in g["stated"])
            tally["base_strict"] += right
            tally["base_page"] += right or uncheckable
        tally["base_found"] += sum(any(same(v, s, table) for v in label_values) for s in g["stated"])
        tally["contra_gold"] += len(g["contradicted"])
        tally["contra_found"] += sum(any(same(v, c, table) for v in denied) for c in g["contradicted"])
        tally["contra_facts"] += len(denied)
    pct = lambda a, b: f"{100 * a / b:.1f} %" if b else "n/a"  # noqa: E731
    print(f"gold pairs {len(gold)}, gold stated values {tally['gold']}, contradicted {tally['contra_gold']}")
    print(f"facts:  {tally['facts']} stated; precision strict {pct(tally['strict'], tally['facts'])}, "
          f"details as page {pct(tally['page'], tally['facts'])}; recall {pct(tally['found'], tally['gold'])}; "
          f"contradictions found {tally['contra_found']} of {tally['contra_gold']} ({tally['contra_facts']} given)")
    print(f"labels: {tally['base']} values; precision strict {pct(tally['base_strict'], tally['base'])}, "
          f"details as page {pct(tally['base_page'], tally['base'])}; recall {pct(tally['base_found'], tally['gold'])}")
    for tier, (n, right) in sorted(tiers.items(), key=lambda kv: -kv[1][0]):
        print(f"  stated by {tier}: {n} facts, strict precision {pct(right, n)}")
    for what, items in (("wrong", wrong), ("missed", missed)):
        for item in items[:args.show]:
            print(what, *item, sep=" | ")


if __name__ == "__main__":
    sys.exit(main())
