#!/usr/bin/env python3
"""Deterministic sample of (product, field) pairs for the hand-labelled product-facts gold set.

Run:  python3 /work/labels/sample_facts_gold.py  > /work/labels/facts_gold_sample.jsonl

Every product of the three files is ranked by sha256("facts-gold:" + parent_asin) (ascending hex);
the script walks down that ranking separately for each file (stratified, so that each file gets
its quota) and gives each product at most 2 pairs, of three kinds:

  labelled     the product's `details` has a key for the field (its NAME or an alias, compared
               case- and space-insensitively)
  plausible    no key for the field, but the field is one that products of that kind usually carry:
               for the two files with details, >= 25% of the products with details in the product's
               reference category carry a key for it; the reference category is the deepest entry of
               `categories` shared by >= 15 products with details (else main_category).  For the
               with-reviews file (details always empty) a fixed, hand-written map per category is used
               (WR_PLAUSIBLE below).
  irrelevant   no key, and < 2% of the reference category carries it (the field must be a common
               one, carried by >= 200 products overall, so that pages may mention its values in
               passing); for with-reviews, WR_IRRELEVANT below.

Within a kind, the field chosen is the one used least so far in the sample (the use count of the
CORE fields is halved; ties broken by sha256("facts-gold:" + asin + ":" + field)), which spreads
the sample over many fields.
Brand is excluded from the plausible/irrelevant kinds (the store name makes it trivially stated).
"""
import hashlib
import json
import os
import sys
import tomllib
from collections import Counter, defaultdict

DATA = "/work/shared/data/amazon-reviews-2023"
FILES = {
    "meta_electronics_beauty_office.jsonl": f"{DATA}/meta_electronics_beauty_office.jsonl",
    "meta_home_toys_sports.jsonl": f"{DATA}/meta_home_toys_sports.jsonl",
    "meta_electronics_with_reviews.jsonl": f"{DATA}/with-reviews/meta_electronics_with_reviews.jsonl",
}
# the field table as it was when the sample was drawn (copy of main's stages/fields.toml, since
# moved to ecombench/tables/fields.toml with the same content); kept here so the draw is reproducible
FIELDS_TOML = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fields_snapshot.toml")
SKIP = {"average_rating", "rating_number", "price", "title", "budget", "review"}

# quotas per file: (labelled, plausible, irrelevant)
QUOTA = {
    "meta_electronics_beauty_office.jsonl": {"labelled": 46, "plausible": 12, "irrelevant": 12},
    "meta_home_toys_sports.jsonl": {"labelled": 44, "plausible": 12, "irrelevant": 8},
    "meta_electronics_with_reviews.jsonl": {"labelled": 0, "plausible": 26, "irrelevant": 6},
}

WR_PLAUSIBLE = {
    "Smartwatches": ["Connectivity Technology", "Compatible Devices", "Operating System", "Screen Size",
                     "Color", "Special Feature"],
    "Toothbrushes": ["Power Source", "Color", "Special Feature", "Age Range (Description)",
                     "Battery Cell Composition"],
    "Running Shoes": ["Color", "Material", "Closure", "Department", "Sport Type", "Size"],
    "Wireless Headphones": ["Connectivity Technology", "Form Factor", "Color", "Special Feature",
                            "Compatible Devices"],
    "Gaming Mice": ["Connectivity Technology", "Color", "Special Feature", "Hand Orientation",
                    "Compatible Devices", "Power Source"],
    "Mechanical Keyboards": ["Connectivity Technology", "Color", "Special Feature", "Compatible Devices",
                             "Connector Type"],
}
WR_IRRELEVANT = {
    "Smartwatches": ["Occasion", "Scent", "Room Type", "Fill Material"],
    "Toothbrushes": ["Room Type", "Occasion", "Screen Size", "Sport Type"],
    "Running Shoes": ["Room Type", "Connectivity Technology", "Scent", "Screen Size"],
    "Wireless Headphones": ["Scent", "Room Type", "Sport Type", "Closure"],
    "Gaming Mice": ["Scent", "Room Type", "Occasion", "Closure"],
    "Mechanical Keyboards": ["Scent", "Occasion", "Room Type", "Fill Material"],
}


# fields the extractor matters most for: their use count is halved when choosing, so they
# come up about twice as often as the others
CORE = {"Color", "Material", "Special Feature", "Compatible Phone Models", "Compatible Devices",
        "Connectivity Technology", "Closure", "Occasion", "Style", "Pattern"}


def norm(s):
    return "".join(s.lower().split())


def h(s):
    return hashlib.sha256(s.encode()).hexdigest()


def main():
    cfg = tomllib.load(open(FIELDS_TOML, "rb"))
    fields = [f for f in cfg["fields"] if f not in SKIP]
    key2field = {}
    for f in fields:
        key2field[norm(f)] = f
        for a in cfg["fields"][f].get("aliases", []) or []:
            key2field[norm(a)] = f

    recs = {}
    for fb, path in FILES.items():
        recs[fb] = [json.loads(l) for l in open(path)]

    def fields_of(r):
        out = {}
        for k, v in (r.get("details") or {}).items():
            f = key2field.get(norm(k))
            if f and f not in out:
                out[f] = (k, v)
        return out

    # category statistics over products with details (the two detail files)
    cat_n = Counter()
    cat_f = defaultdict(Counter)
    field_total = Counter()
    for fb in ("meta_electronics_beauty_office.jsonl", "meta_home_toys_sports.jsonl"):
        for r in recs[fb]:
            if not r.get("details"):
                continue
            fs = fields_of(r)
            cats = list(r.get("categories") or []) + ["MAIN:" + str(r.get("main_category"))]
            for c in set(cats):
                cat_n[c] += 1
                for f in fs:
                    cat_f[c][f] += 1
            for f in fs:
                field_total[f] += 1

    def ref_cat(r):
        for c in reversed(r.get("categories") or []):
            if cat_n[c] >= 15:
                return c
        return "MAIN:" + str(r.get("main_category"))

    used = Counter()
    out = []
    for fb in FILES:
        q = dict(QUOTA[fb])
        ranked = sorted(recs[fb], key=lambda r: h("facts-gold:" + r["parent_asin"]))
        seen = set()
        for r in ranked:
            if sum(q.values()) == 0:
                break
            asin = r["parent_asin"]
            if asin in seen:
                continue
            seen.add(asin)
            have = fields_of(r)
            if fb == "meta_electronics_with_reviews.jsonl":
                cat = (r.get("categories") or ["?"])[-1]
                plaus = [f for f in WR_PLAUSIBLE.get(cat, []) if f not in have]
                irrel = [f for f in WR_IRRELEVANT.get(cat, []) if f not in have]
                refc = cat
            else:
                refc = ref_cat(r)
                n = cat_n[refc] or 1
                share = {f: cat_f[refc][f] / n for f in fields}
                plaus = [f for f in fields if f not in have and f != "Brand" and share[f] >= 0.25]
                irrel = [f for f in fields if f not in have and f != "Brand" and share[f] < 0.02
                         and field_total[f] >= 200]
            cands = {"labelled": list(have), "plausible": plaus, "irrelevant": irrel}
            picked = []
            for slot in range(2):
                # kind order: the kind with the largest remaining share of its quota first
                kinds = sorted((k for k in q if q[k] > 0 and cands[k]),
                               key=lambda k: (-q[k] / max(1, QUOTA[fb][k]), k))
                if slot == 0 and q["labelled"] > 0 and cands["labelled"]:
                    kinds = ["labelled"] + [k for k in kinds if k != "labelled"]
                done = False
                for k in kinds:
                    opts = [f for f in cands[k] if f not in [p[1] for p in picked]]
                    if not opts:
                        continue
                    f = min(opts, key=lambda f: (used[f] / (2 if f in CORE else 1),
                                                 h(f"facts-gold:{asin}:{f}")))
                    picked.append((k, f))
                    used[f] += 1
                    q[k] -= 1
                    done = True
                    break
                if not done:
                    break
            for k, f in picked:
                lab = have.get(f)
                out.append({"parent_asin": asin, "file": fb, "field": f, "kind": k,
                            "ref_category": refc,
                            "label_key": lab[0] if lab else None,
                            "label": lab[1] if lab else None,
                            "rank_hash": h("facts-gold:" + asin)})
    for o in out:
        print(json.dumps(o, ensure_ascii=False))
    c = Counter((o["file"], o["kind"]) for o in out)
    print(dict(c), file=sys.stderr)
    print(len(out), "pairs;", len({o["field"] for o in out}), "fields;",
          len({o["parent_asin"] for o in out}), "products", file=sys.stderr)


if __name__ == "__main__":
    main()
