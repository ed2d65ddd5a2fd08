"""A deterministic sample of typed products, for a hand check of the product types.

Draws the typed products of a snapshot's stored knowledge (stats/product_types.parquet) in the order of the
sha256 of their parent_asin and prints the first N as a markdown table (asin, title, type, a blank "right?"
column to fill in by hand), with the share of the snapshot's products left untyped.

    .venv/bin/python benchmarks/type_sample.py /work/bench/cat-shared [--n 30]
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import polars as pl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("catalog", type=Path)
    parser.add_argument("--n", type=int, default=30)
    args = parser.parse_args()
    types = pl.read_parquet(args.catalog / "stats" / "product_types.parquet")
    titles = pl.read_parquet(args.catalog / "products.parquet", columns=["parent_asin", "title"])
    typed = types.filter(pl.col("product_type").is_not_null()).join(titles, on="parent_asin")
    typed = typed.with_columns(pl.col("parent_asin").map_elements(
        lambda a: hashlib.sha256(a.encode()).hexdigest(), return_dtype=pl.String).alias("key")).sort("key")
    print(f"{types.height} products, {typed.height} typed, {types.height - typed.height} untyped "
          f"({(types.height - typed.height) / types.height:.1%})")
    print("| # | asin | title | type | right? |")
    print("|---:|---|---|---|---|")
    for i, (asin, title, ptype) in enumerate(typed.head(args.n).select("parent_asin", "title", "product_type")
                                             .iter_rows(), 1):
        print(f"| {i} | {asin} | {title.replace('|', '/')} | {ptype} | |")


if __name__ == "__main__":
    main()
