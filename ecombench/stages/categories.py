"""Category report: what a catalog snapshot offers per `main_category`, and what the field table misses.

Extending ecombench to a new product category is a data change (rows in tables/fields.toml).
This report says where to start: per category, how many products each intent could sample, and
which frequent detail keys the field table does not use yet. Plain polars over the snapshot; the
details column is exploded once, never looped over in Python.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ecombench.stages.sampling import NO_CATEGORY, eligibility_columns, eligibility_condition
from ecombench.tables.fields import FieldTable, _key_form
from ecombench.tables.intents import IntentSpec

DEFAULT_TOP = 20
DEFAULT_MIN_COVERAGE = 0.10

# Status of a detail key against the current field table.
FIELD = "field"  # a detail field of the table: tasks can use it
ALIAS = "alias"  # the current table maps it to a field, but the snapshot predates that alias: re-ingest
IGNORED = "ignored"  # listed in [defaults] other_keys: recognised, deliberately unused
MISSING = "missing"  # not in the table at all: a candidate for a new row


def eligible_mask(eligibility: pl.DataFrame, intent: IntentSpec) -> pl.Series:
    """Which rows of `eligibility` `sample_candidates` may draw for `intent` (no exclusions, all categories).

    The conditions are a copy of those in `ecombench.stages.sampling.sample_candidates` (kept here so the
    sampler's module stays untouched); tests/stages/test_categories.py checks on real snapshots,
    for every intent of intents.toml, that the two agree, so a condition added there fails the test.
    Nulls (no rating, no price) count as not eligible, as they do in the sampler's filter.

    Args:
        eligibility: output of `ecombench.stages.sampling.eligibility_columns`.
        intent: the intent whose thresholds apply.

    Returns:
        A boolean Series named after the intent, aligned with `eligibility`'s rows.
    """
    return eligibility.select(eligibility_condition(intent).fill_null(False).alias(intent.name)).to_series()


def key_status(key: str, table: FieldTable) -> tuple[str, str | None]:
    """(status, canonical field or None) of a snapshot detail key; status is one of FIELD, ALIAS, IGNORED, MISSING."""
    spec = table.fields.get(key)
    if spec is not None and spec.kind == "detail":
        return FIELD, key
    owner = table.alias_index.get(_key_form(key))
    if owner is None:
        return MISSING, None
    if owner in table.fields:
        return ALIAS, owner
    return IGNORED, None


def category_report(
    products: pl.DataFrame,
    table: FieldTable,
    intents: dict[str, IntentSpec],
    top: int = DEFAULT_TOP,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
) -> dict[str, Any]:
    """Per-category product counts, eligibility per intent and detail-key coverage.

    Coverage of a key is the share of the category's products holding a non-empty value under
    that canonical key (`details[].key`, as the build sees it).

    Args:
        products: a snapshot's products (ecombench.catalog.snapshot.load_snapshot).
        table: the field table.
        intents: intents to count eligibility for (ecombench.tables.intents.load_intents()).
        top: how many of the most frequent keys to list per category.
        min_coverage: keys at least this frequent that are not in the table are listed under
            `not_in_table` (all of them, not only the top ones).

    Returns:
        {"products": int, "top": int, "min_coverage": float, "intents": [names],
         "categories": [{"main_category", "products", "eligible": {intent: int},
                         "keys": [{"key", "products", "coverage", "status", "field"}],
                         "not_in_table": [{"key", "products", "coverage"}]}]}
        with categories by descending product count and keys by descending coverage
        (ties by name). Products without a main_category are under "(none)".
    """
    eligibility = eligibility_columns(products, table)
    flags = eligibility.select("main_category").with_columns(
        [eligible_mask(eligibility, spec) for spec in intents.values()])
    eligible = {row["main_category"]: row for row in flags.group_by("main_category").agg(
        [pl.col(name).sum() for name in intents]).to_dicts()}
    sizes = (products.select(pl.col("main_category").fill_null(NO_CATEGORY)).group_by("main_category").len()
             .sort(["len", "main_category"], descending=[True, False]))

    coverage = (
        products.select("parent_asin", pl.col("main_category").fill_null(NO_CATEGORY), "details")
        .explode("details").drop_nulls("details").unnest("details")
        .filter((pl.col("value").str.strip_chars() != "") & (pl.col("key").str.strip_chars() != ""))
        .group_by("main_category", "key").agg(pl.col("parent_asin").n_unique().alias("products"))
        .join(sizes.rename({"len": "size"}), on="main_category")
        .with_columns((pl.col("products") / pl.col("size")).alias("coverage"))
        .sort(["main_category", "products", "key"], descending=[False, True, False])
    )
    status = {k: key_status(k, table) for k in coverage.get_column("key").unique().to_list()}
    keys_by_category = {c: rows for (c,), rows in coverage.partition_by("main_category", as_dict=True).items()}

    categories = []
    for category, size in sizes.iter_rows():
        frame = keys_by_category.get(category)
        rows = frame.to_dicts() if frame is not None else []
        keys = [{"key": r["key"], "products": r["products"], "coverage": round(r["coverage"], 4),
                 "status": status[r["key"]][0], "field": status[r["key"]][1]} for r in rows]
        categories.append({
            "main_category": category,
            "products": size,
            "eligible": {name: int(eligible[category][name]) for name in intents},
            "keys": keys[:top],
            "not_in_table": [{k: r[k] for k in ("key", "products", "coverage")} for r in keys
                             if r["status"] == MISSING and r["coverage"] >= min_coverage],
        })
    return {"products": products.height, "top": top, "min_coverage": min_coverage, "intents": list(intents),
            "categories": categories}


def format_report(report: dict[str, Any]) -> str:
    """The report as plain text: one block per category (what `ecombench categories` prints)."""
    lines = [f"{report['products']} products in {len(report['categories'])} categories; "
             f"key status: field = usable, alias = re-ingest to use, ignored = [defaults] other_keys, "
             f"missing = not in tables/fields.toml"]
    for c in report["categories"]:
        lines += ["", f"== {c['main_category']}: {c['products']} products",
                  "   eligible: " + ", ".join(f"{k} {v}" for k, v in c["eligible"].items()),
                  f"   {'detail key':<40} {'products':>8} {'coverage':>8}  status"]
        for k in c["keys"]:
            note = f" -> {k['field']}" if k["status"] == ALIAS else ""
            lines.append(f"   {k['key'][:40]:<40} {k['products']:>8} {k['coverage']:>8.1%}  {k['status']}{note}")
        missing = ", ".join(f"{k['key']} ({k['coverage']:.0%})" for k in c["not_in_table"]) or "none"
        lines.append(f"   not in the field table (coverage >= {report['min_coverage']:.0%}): {missing}")
    return "\n".join(lines)
