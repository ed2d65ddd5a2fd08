"""Stage 1, catalog sampling: a catalog snapshot + an intent -> candidate target products.

Eligibility is a vectorised polars filter over the snapshot (reference §15.5 scanned millions
of rows in Python per filter). Order is a seeded permutation — each product ranked by
sha256(seed, "sample", intent, parent_asin) — interleaved round-robin across `main_category`,
so every category gets an equal share while it has eligible products (stratified, reference §3),
and the same seed always yields the same candidates.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

from ecombench.catalog.details import detail_rows
from ecombench.hashing import canonical_json, digest
from ecombench.tables.fields import FieldTable
from ecombench.tables.intents import IntentSpec

NO_CATEGORY = "(none)"


@dataclass
class SamplingResult:
    """Candidates of one intent, in build order, with the counts a report needs."""

    intent: str
    candidates: list[str]
    requested: int
    eligible: int
    by_category: dict[str, int] = field(default_factory=dict)

    @property
    def shortfall(self) -> int:
        """Candidates requested but not found (0 when enough were eligible)."""
        return max(0, self.requested - len(self.candidates))


def eligibility_columns(products: pl.DataFrame, table: FieldTable, details: pl.DataFrame | None = None) -> pl.DataFrame:
    """The columns sampling eligibility is decided on, one row per product.

    Returns parent_asin, main_category, detail_field_count (distinct field-table detail keys with a
    value), numerics, review_count.

    Args:
        products: a products.parquet frame.
        table: the field table (which detail keys count).
        details: `ecombench.catalog.details.detail_rows(products, table)` when the caller has it already.
    """
    if details is None:
        details = detail_rows(products, table)
    counts = (
        details.filter(pl.col("value").str.strip_chars() != "")
        .group_by("row").agg(pl.col("key").n_unique().alias("detail_field_count"))
    )
    return (
        products.select(pl.int_range(pl.len(), dtype=pl.Int32).alias("row"), "parent_asin", "main_category",
                        "average_rating", "rating_number", "price", "review_count")
        .join(counts, on="row", how="left", maintain_order="left").drop("row")
        .with_columns(pl.col("detail_field_count").fill_null(0), pl.col("main_category").fill_null(NO_CATEGORY))
    )


ELIGIBILITY_SOURCE_COLUMNS = ("parent_asin", "main_category", "average_rating", "rating_number", "price",
                              "review_count", "details")
"""The products.parquet columns `eligibility_columns` reads."""


def eligibility_in_slices(slices: Iterable[pl.DataFrame], table: FieldTable) -> pl.DataFrame:
    """`eligibility_columns` of a catalog read as consecutive slices (in order): the same frame, never the whole table.

    Args:
        slices: frames of consecutive products with at least `ELIGIBILITY_SOURCE_COLUMNS`
            (`ecombench.catalog.snapshot.products_in_slices`).
        table: the field table.

    Raises:
        ValueError: no slice at all.
    """
    parts = [eligibility_columns(s, table) for s in slices]
    if not parts:
        raise ValueError("eligibility_in_slices needs at least one slice (an empty frame for an empty catalog)")
    return pl.concat(parts)


def eligibility_condition(intent: IntentSpec, min_type_products: int = 0) -> pl.Expr:
    """The intent's sampling conditions as one polars expression over `eligibility_columns`.

    The one place they are written; `eligibility_rule` says them in words. With `min_type_products`, the frame
    also holds "type_products" (ecombench.catalog.type_stats.TypeStats.type_products: products of the type
    group whose statistics decide for the product, 0 when none does) and a candidate needs at least that many:
    a product the catalog cannot type, or whose type it holds too few of to learn what matters for it, makes no
    task (its query would name a type of one or two products).
    """
    cond = pl.col("detail_field_count") >= intent.min_detail_fields
    if min_type_products:
        cond &= pl.col("type_products") >= min_type_products
    if intent.min_average_rating is not None:
        cond &= pl.col("average_rating") >= intent.min_average_rating
    if intent.min_rating_number is not None:
        cond &= pl.col("rating_number") >= intent.min_rating_number
    if intent.require_price:
        cond &= pl.col("price").is_not_null() & (pl.col("price") > 0)
    if intent.min_reviews:
        cond &= pl.col("review_count") >= intent.min_reviews
    return cond


def eligibility_rule(intent: IntentSpec, min_type_products: int = 0) -> str:
    """The intent's sampling conditions in words, for reports and warnings."""
    fields = "field-table detail fields" + (" that its page states and its type's statistics let through"
                                             if min_type_products else "")
    parts = [f"at least {intent.min_detail_fields} {fields}"] if intent.min_detail_fields else []
    if min_type_products:
        parts.append(f"a product type of at least {min_type_products} catalog products")
    if intent.min_average_rating is not None:
        parts.append(f"average_rating >= {intent.min_average_rating:g}")
    if intent.min_rating_number is not None:
        parts.append(f"rating_number >= {intent.min_rating_number}")
    if intent.require_price:
        parts.append("a price")
    if intent.min_reviews:
        parts.append(f"at least {intent.min_reviews} reviews")
    return ", ".join(parts) or "any product"


def sample_candidates(
    eligibility: pl.DataFrame,
    intent: IntentSpec,
    n: int,
    seed: int,
    exclude: set[str] | frozenset[str] = frozenset(),
    categories: list[str] | None = None,
    min_type_products: int = 0,
) -> SamplingResult:
    """Draw up to `n` candidates for `intent`.

    Args:
        eligibility: output of `eligibility_columns`.
        intent: eligibility thresholds come from it.
        n: candidates wanted.
        seed: the run seed.
        exclude: parent_asins already used in this split (a product targets one task only).
        categories: restrict to these main_category values (None: all).
        min_type_products: see `eligibility_condition`.

    Returns:
        A SamplingResult; `shortfall` > 0 means fewer eligible products than requested
        (reported as not_enough_eligible_products).
    """
    cond = eligibility_condition(intent, min_type_products)
    if categories:
        cond &= pl.col("main_category").is_in(categories)
    pool = eligibility.filter(cond & ~pl.col("parent_asin").is_in(sorted(exclude)))
    ranked = pool.select("parent_asin", "main_category").with_columns(
        rank_keys(seed, intent.name, pool.get_column("parent_asin"))
    ).sort("key").with_columns(pl.int_range(pl.len()).over("main_category").alias("round"))
    chosen = ranked.sort(["round", "main_category"]).head(n)
    return SamplingResult(
        intent=intent.name,
        candidates=chosen.get_column("parent_asin").to_list(),
        requested=n,
        eligible=pool.height,
        by_category=dict(sorted(chosen.group_by("main_category").len().iter_rows())),
    )


_NEEDS_ESCAPE = r'["\\\x00-\x1f]'  # characters canonical JSON escapes inside a string


def rank_keys(seed: int, intent: str, ids: pl.Series) -> pl.Series:
    """Sampling keys: `digest(seed, "sample", intent, id)` for every id, as a String series named "key".

    The canonical JSON of each id's parts is assembled by polars and only sha256 runs per id
    (about 8x faster than `digest`, which ranks millions of products per intent at 3.7M); ids
    that JSON would escape go through `digest` itself, so every key is exactly `digest`'s.
    """
    prefix = canonical_json([seed, "sample", intent])[:-1] + ',"'
    frame = pl.DataFrame({"id": ids}).with_columns(
        (pl.lit(prefix) + pl.col("id") + pl.lit('"]')).cast(pl.Binary).alias("json"),
        pl.col("id").str.contains(_NEEDS_ESCAPE).alias("escape"))
    sha = hashlib.sha256
    keys = [sha(j).hexdigest() if not esc else digest(seed, "sample", intent, i)
            for i, j, esc in frame.iter_rows()]
    return pl.Series("key", keys, dtype=pl.String)


def sample_split(
    eligibility: pl.DataFrame,
    intents: list[IntentSpec],
    n: int,
    seed: int,
    categories: list[str] | None = None,
    min_type_products: int = 0,
) -> dict[str, SamplingResult]:
    """Candidates for several intents, each product used by at most one intent.

    Each intent ranks all its eligible products (`sample_candidates`); the intents then take
    turns, in the given order, each taking its best product not yet taken, until each has `n`
    or runs out. Turn-taking keeps a small catalog from going entirely to the first intents.
    `min_type_products`: see `eligibility_condition`.

    Returns:
        {intent name: SamplingResult}, in the order of `intents`.
    """
    # An intent skips at most the n * (k - 1) products the other k - 1 intents take, so its first
    # n * k ranked products always hold its picks: ranking deeper would change nothing.
    depth = n * len(intents)
    ranked = {i.name: sample_candidates(eligibility, i, depth, seed, categories=categories,
                                        min_type_products=min_type_products) for i in intents}
    taken: set[str] = set()
    chosen: dict[str, list[str]] = {i.name: [] for i in intents}
    cursor = {i.name: 0 for i in intents}
    active = [i.name for i in intents]
    while active:
        for name in list(active):
            order = ranked[name].candidates
            while cursor[name] < len(order) and order[cursor[name]] in taken:
                cursor[name] += 1
            if cursor[name] == len(order) or len(chosen[name]) == n:
                active.remove(name)
                continue
            chosen[name].append(order[cursor[name]])
            taken.add(order[cursor[name]])
    picked = [a for ids in chosen.values() for a in ids]
    category = dict(eligibility.filter(pl.col("parent_asin").is_in(picked))
                    .select("parent_asin", "main_category").iter_rows())
    out = {}
    for name, ids in chosen.items():
        counts: dict[str, int] = {}
        for a in ids:
            counts[category[a]] = counts.get(category[a], 0) + 1
        out[name] = SamplingResult(intent=name, candidates=ids, requested=n, eligible=ranked[name].eligible,
                                   by_category=dict(sorted(counts.items())))
    return out
