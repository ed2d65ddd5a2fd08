"""Make a big catalog snapshot by resampling a real one (for build benchmarks, not for publishing splits).

Replica 0 is the real snapshot unchanged. Replica k >= 1 copies every real product under a new
parent_asin ("Z" + the row number in base 36, 10 characters like a real ASIN) and gives it the
details of another real product of the same main_category (rotated by k within the category), so
replicas are not exact duplicates: a task's answer set stays small as in a real catalog instead of
holding every copy of its target.
Reviews are copied with their product (review_id `<id>-R<k>`). Written replica by replica with
pyarrow (bounded memory), in the layout `ecombench.catalog.snapshot.load_snapshot` reads; the manifest's
fingerprint is derived from the source's fingerprint and the size.

    .venv/bin/python benchmarks/scale_catalog.py /work/scale-data/base /work/scale-data/p1m --products 1000000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq


def scale_catalog(source: Path, out: Path, products: int) -> dict:
    """Write a snapshot of exactly `products` rows to `out` (must not exist). Returns its manifest."""
    if out.exists():
        raise FileExistsError(f"{out} exists, not overwriting")
    out.mkdir(parents=True)
    base = pl.read_parquet(source / "products.parquet")
    reviews = pl.read_parquet(source / "reviews.parquet") if (source / "reviews.parquet").is_file() else None
    manifest = json.loads((source / "manifest.json").read_text())
    n = base.height
    base = base.with_columns(pl.col("main_category").fill_null("").alias("_cat"))
    base = base.with_columns(pl.int_range(pl.len()).over("_cat").alias("_i"), pl.len().over("_cat").alias("_n"))
    details = base.select("_cat", "_i", "details")
    pschema = pq.read_schema(source / "products.parquet")
    rschema = pq.read_schema(source / "reviews.parquet") if reviews is not None else None
    replicas = math.ceil(products / n)
    written = n_reviews = 0
    with pq.ParquetWriter(out / "products.parquet", pschema) as pw, \
            (pq.ParquetWriter(out / "reviews.parquet", rschema) if rschema else _Null()) as rw:
        for k in range(replicas):
            take = min(n, products - written)
            if k == 0:
                part = base.head(take)
            else:
                part = (base.head(take).drop("details")
                        .with_columns(((pl.col("_i") + k) % pl.col("_n")).alias("_src"))
                        .join(details.rename({"_i": "_src"}), on=["_cat", "_src"], how="left",
                              maintain_order="left")
                        .with_columns(pl.Series("parent_asin", [_asin(written + i) for i in range(take)])))
            pw.write_table(part.select(pschema.names).to_arrow().cast(pschema), row_group_size=200_000)
            if reviews is not None:
                ids = base.head(take).select(pl.col("parent_asin").alias("_orig"),
                                             part.get_column("parent_asin").alias("_new"))
                rpart = reviews.join(ids, left_on="parent_asin", right_on="_orig", how="inner", maintain_order="left")
                rpart = rpart.drop("parent_asin").rename({"_new": "parent_asin"})
                if k:
                    rpart = rpart.with_columns(pl.col("review_id") + f"-R{k}")
                rw.write_table(rpart.select(rschema.names).to_arrow().cast(rschema))
                n_reviews += rpart.height
            written += take
    fingerprint = hashlib.sha256(f"{manifest['fingerprint']}:scaled:{products}".encode()).hexdigest()
    manifest.update(name=out.name, fingerprint=fingerprint,
                    scaled_from={"path": str(source), "fingerprint": manifest["fingerprint"], "replicas": replicas},
                    counts={**manifest.get("counts", {}), "products": written, "reviews": n_reviews})
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return manifest


_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _asin(row: int) -> str:
    """A unique 10-character id for row `row`: "Z" + 9 base-36 digits (real ASINs start with B or a digit)."""
    out = []
    for _ in range(9):
        row, d = divmod(row, 36)
        out.append(_DIGITS[d])
    return "Z" + "".join(reversed(out))


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--products", type=int, required=True)
    a = ap.parse_args()
    t = time.perf_counter()
    m = scale_catalog(a.source, a.out, a.products)
    print(f"{a.out}: {m['counts']['products']} products, {m['counts']['reviews']} reviews "
          f"in {time.perf_counter() - t:.1f} s")
