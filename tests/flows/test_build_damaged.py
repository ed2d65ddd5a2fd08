"""A build over a catalog ingested from damaged real records: bad fields are dropped at ingest, the
products are kept, and the build publishes (ingest and the catalog expectations share one rule set)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import polars as pl

from ecombench.catalog.ingest import write_catalog_snapshot
from ecombench.pipeline.build import build_split
from ecombench.pipeline.config import BuildConfig

SAMPLE = Path(__file__).resolve().parents[2] / "ecombench" / "data" / "sample"


def damaged_sample(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The bundled sample's real metadata with fields damaged in 40 products (4 kinds x 10) and a cut line.

    Returns the file and parent_asin -> the damaged field.
    """
    lines = gzip.open(SAMPLE / "meta.jsonl.gz", "rb").read().splitlines(keepends=True)
    damage = [("average_rating", 7.5), ("rating_number", -3), ("average_rating", "4.5 out of 5"),
              ("features", "Bluetooth 5.0, 20 h battery")]
    damaged: dict[str, str] = {}
    for k in range(40):
        obj = orjson.loads(lines[10 + 7 * k])
        field, value = damage[k % 4]
        obj[field] = value
        lines[10 + 7 * k] = orjson.dumps(obj) + b"\n"
        damaged[obj["parent_asin"]] = field
    lines.append(lines[5][: len(lines[5]) // 2])  # a truncated last line (a copy, so no product is lost)
    path = tmp_path / "meta_damaged.jsonl"
    path.write_bytes(b"".join(lines))
    return path, damaged


def test_a_build_over_damaged_records_keeps_their_products_and_publishes(tmp_path, artifacts):
    meta, damaged = damaged_sample(tmp_path)
    manifest = write_catalog_snapshot([meta], [SAMPLE / "reviews.jsonl.gz"], tmp_path / "catalog", workers=1)
    products = pl.read_parquet(tmp_path / "catalog" / "products.parquet")
    kept = set(products["parent_asin"])
    assert set(damaged) <= kept  # every product whose essential fields are intact
    bad = [json.loads(x) for x in (tmp_path / "catalog" / "bad_records.jsonl").read_text().splitlines()]
    assert sorted(b["reason"] for b in bad if not b.get("kept")) == ["truncated_line"]
    assert {b["field"] for b in bad if b.get("kept")} == {"average_rating", "rating_number", "features"}
    assert manifest["counts"]["bad_by_reason"] == {"out_of_range": 20, "truncated_line": 1, "wrong_type": 20}
    assert products.filter(pl.col("average_rating") > 5).height == 0
    assert products.filter(pl.col("rating_number") < 0).height == 0

    config = BuildConfig(min_hidden_division=1,
                         catalog=str(tmp_path / "catalog"), intents=["product_search", "rating_quality"],
                         candidates_per_intent=12, resume=False)
    result = build_split(config, "damaged", root=tmp_path / "splits", artifacts=artifacts)
    # publish_split refuses on a failed ERROR expectation, so a published version is the proof.
    assert (result.path / "tasks.jsonl").is_file() and result.path.name == "v1"
    catalog_suite = result.manifest["expectations"]["suites"]["catalog"]["expectations"]
    assert all(e["success"] for e in catalog_suite if e["severity"] == "error")
