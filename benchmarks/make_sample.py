"""Build the bundled real sample in ecombench/data/sample/ from the shared Amazon Reviews 2023 files.

The sample is chosen by product type, the type the pipeline itself assigns: the shared files are ingested
into a temporary snapshot and typed, their facts read and the per-type statistics learned exactly as a build
does (ecombench.catalog.knowledge), so that the types taken are ones the sample's own statistics can decide
for and its products carry the fields a task is built from. Few types with many products each, rather than a
few products of many types: answer sets, "each source is needed" and review opinion phrases all compare a
target with other products of its type.

Deterministic: products are chosen in order of sha256(parent_asin), never at random, and the
gzip files are written with mtime=0, so rerunning gives byte-identical files. Raw lines are
copied byte for byte (real records are never edited; a missing final newline is the only
thing added).

    .venv/bin/python benchmarks/make_sample.py [SOURCE_DIR]

SOURCE_DIR defaults to ../shared/data/amazon-reviews-2023 relative to the repository.

What is taken (a type group is the head noun of the product type, `type_groups(type)[-1]`: "Phone Cases" and
"Leather Wallet Cases" are both "case"):
  * catalog products (meta_electronics_beauty_office.jsonl, meta_home_toys_sports.jsonl): the products whose
    page states at least `MIN_USABLE` field-table detail fields that their type's statistics let through
    (what stage 1 samples on); the `N_TYPES` type groups with most such products (ties by name), up to
    `PER_TYPE` products of each;
  * reviewed products (with-reviews/meta_electronics_with_reviews.jsonl, first occurrence of each parent_asin,
    at least one review): the `N_REVIEWED_TYPES` type groups with most products of at least `MIN_REVIEWS`
    reviews, up to `PER_REVIEWED_TYPE` products of each, those first (review opinions are phrases the reviews
    of several products of a type share: "comfortable to wear", "easy to clean"). Their source dropped
    `main_category` and `details`, so they stay under a fifth of the sample: the catalog suite
    (ecombench.validation.expectations) warns when fewer than 80 % of products have either;
  * every review of the reviewed products, in source order.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import tempfile
from collections import Counter
from pathlib import Path

import orjson
import polars as pl

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "amazon-reviews-2023"
SAMPLE_DIR = REPO / "ecombench" / "data" / "sample"

CATALOG_FILES = ("meta_electronics_beauty_office.jsonl", "meta_home_toys_sports.jsonl")
REVIEWED_META_FILE = "with-reviews/meta_electronics_with_reviews.jsonl"
REVIEWS_FILE = "with-reviews/reviews_electronics.jsonl"

MIN_USABLE = 5  # the fewest usable detail fields any intent asks for (ecombench/tables/intents)
N_TYPES = 7
PER_TYPE = 90
MIN_REVIEWS = 3
N_REVIEWED_TYPES = 2
PER_REVIEWED_TYPE = 45


def _order(asin: str) -> str:
    return hashlib.sha256(asin.encode("utf-8")).hexdigest()


def _first_lines(paths: list[Path]) -> dict[str, bytes]:
    """parent_asin -> its first raw line across `paths` (read in order), newline-terminated."""
    first: dict[str, bytes] = {}
    for path in paths:
        with open(path, "rb") as fh:
            for raw in fh:
                if raw.strip():
                    first.setdefault(orjson.loads(raw)["parent_asin"], raw if raw.endswith(b"\n") else raw + b"\n")
    return first


def typed_products(meta: list[Path], reviews: list[Path]) -> pl.DataFrame:
    """(parent_asin, review_count, group, usable_fields) of every product, as a build over these files sees them.

    The files are ingested into a temporary snapshot; types, facts and the per-type statistics are learned from
    it with the thresholds a build over it uses.
    """
    from ecombench.catalog.ingest import write_catalog_snapshot
    from ecombench.catalog.knowledge import frame_knowledge
    from ecombench.catalog.snapshot import load_snapshot
    from ecombench.catalog.type_stats import type_groups
    from ecombench.pipeline.config import TypeRuleSettings
    from ecombench.tables.fields import load_field_table

    table = load_field_table()
    with tempfile.TemporaryDirectory(prefix="make-sample-") as tmp:
        snapshot = Path(tmp) / "catalog"
        write_catalog_snapshot(meta, reviews, snapshot, table=table)
        products, _ = load_snapshot(snapshot)
    knowledge = frame_knowledge(products, table)
    types = knowledge.product_types.select("parent_asin", "product_type")
    stats = knowledge.type_stats.with_rules(TypeRuleSettings().rules(catalog_products=types.height))
    always = frozenset(s.name for s in table.detail_fields() if s.compatibility)
    usable = stats.usable_fields(knowledge.facts.facts, types, always)
    heads = {t: type_groups(t)[-1] for t in types.get_column("product_type").drop_nulls().unique().to_list()}
    return (products.select("parent_asin", "review_count")
            .join(types, on="parent_asin", how="left").join(usable, on="parent_asin", how="left")
            .with_columns(pl.col("product_type").replace_strict(heads, default=None, return_dtype=pl.String)
                          .alias("group"))
            .drop_nulls("group").select("parent_asin", "review_count", "group", "usable_fields"))


def pick_by_type(rows: pl.DataFrame, n_types: int, per_type: int) -> list[str]:
    """Up to `per_type` products of each of the `n_types` type groups with most `ranked` products.

    Args:
        rows: parent_asin, group, ranked (the product counts towards its group's rank) and first (taken before
            the group's other products).
        n_types: how many groups are taken.
        per_type: the most products taken of one group: those `first`, then the others, each in
            sha256(parent_asin) order.
    """
    counts = Counter(g for g, ranked in rows.select("group", "ranked").iter_rows() if ranked)
    chosen = {g for g, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n_types]}
    taken: Counter = Counter()
    out = []
    keyed = sorted(rows.select("parent_asin", "group", "first").iter_rows(),
                   key=lambda row: (not row[2], _order(row[0])))
    for asin, group, _ in keyed:
        if group in chosen and taken[group] < per_type:
            taken[group] += 1
            out.append(asin)
    return sorted(out, key=_order)


def write_gzip(path: Path, lines: list[bytes]) -> None:
    """Gzip with mtime=0 and no file name in the header, so the bytes depend on content only."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.writelines(lines)
    path.write_bytes(buf.getvalue())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="?", default=str(DEFAULT_SOURCE), help="amazon-reviews-2023 folder")
    parser.add_argument("--out", default=str(SAMPLE_DIR), help="output folder (default ecombench/data/sample)")
    args = parser.parse_args(argv)
    src, out = Path(args.source), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    catalog_paths = [src / name for name in CATALOG_FILES]
    catalog_lines = _first_lines(catalog_paths)
    reviewed_lines = {a: raw for a, raw in _first_lines([src / REVIEWED_META_FILE]).items() if a not in catalog_lines}
    typed = typed_products([*catalog_paths, src / REVIEWED_META_FILE], [src / REVIEWS_FILE])

    rich = pl.col("usable_fields") >= MIN_USABLE
    catalog = pick_by_type(typed.filter(pl.col("parent_asin").is_in(list(catalog_lines)))
                           .with_columns(rich.alias("ranked"), rich.alias("first")), N_TYPES, PER_TYPE)
    reviewed_enough = pl.col("review_count") >= MIN_REVIEWS
    reviewed = pick_by_type(typed.filter(pl.col("parent_asin").is_in(list(reviewed_lines))
                                         & (pl.col("review_count") > 0))
                            .with_columns(reviewed_enough.alias("ranked"), reviewed_enough.alias("first")),
                            N_REVIEWED_TYPES, PER_REVIEWED_TYPE)

    keep = set(reviewed)
    reviews = []
    with open(src / REVIEWS_FILE, "rb") as fh:
        for raw in fh:
            if raw.strip() and orjson.loads(raw)["parent_asin"] in keep:
                reviews.append(raw if raw.endswith(b"\n") else raw + b"\n")
    write_gzip(out / "meta.jsonl.gz", [catalog_lines[a] for a in catalog] + [reviewed_lines[a] for a in reviewed])
    write_gzip(out / "reviews.jsonl.gz", reviews)
    groups = dict(typed.select("parent_asin", "group").iter_rows())
    for name, asins in (("catalog", catalog), ("reviewed", reviewed)):
        per = sorted(Counter(groups[a] for a in asins).items(), key=lambda item: (-item[1], item[0]))
        print(f"{name}: {len(asins)} products: " + ", ".join(f"{g} {n}" for g, n in per))
    print(f"{out}: {len(catalog)} + {len(reviewed)} products, {len(reviews)} reviews")


if __name__ == "__main__":
    main()
