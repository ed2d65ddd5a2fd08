"""Reading a catalog snapshot (artifacts/catalogs/<name>/) written by `ecombench ingest`.

What the build, inspect and validate load of it; the columns are `ecombench.catalog.schema`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ecombench.catalog.schema import BUILD_PRODUCT_COLUMNS, REVIEW_TEXT_COLUMNS
from ecombench.errors import InputError
from ecombench.text import normalize


class SnapshotError(InputError, ValueError):
    """A catalog snapshot is missing or unreadable; the message names the path."""


def check_snapshot(path: Path) -> None:
    """Check that `path` looks like a catalog snapshot, without reading it.

    Args:
        path: the snapshot directory.

    Raises:
        SnapshotError: manifest.json or products.parquet is missing (the message names it).
    """
    for p in (path / "manifest.json", path / "products.parquet"):
        if not p.is_file():
            raise SnapshotError(f"{p} not found: is {path} a catalog snapshot? (create one with `ecombench ingest`)")


def load_snapshot(path: Path) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Products of a snapshot and its manifest.

    Args:
        path: snapshot directory holding products.parquet and manifest.json.

    Returns:
        (frame of every product with the columns `ecombench.catalog.schema.BUILD_PRODUCT_COLUMNS`, one chunk per
        column; manifest dict).

    Raises:
        SnapshotError: the directory, a file or a column is missing, manifest.json is not JSON, or
            products.parquet cannot be read.
    """
    manifest = load_manifest(path)
    products_path = path / "products.parquet"
    # One chunk per column: gathering rows from a many-chunk frame (one per row group) costs ~100x more, and the
    # answer-set index shares these buffers instead of copying them.
    try:
        return pl.read_parquet(products_path, columns=list(BUILD_PRODUCT_COLUMNS)).rechunk(), manifest
    except (OSError, pl.exceptions.PolarsError) as exc:  # a damaged file (truncated, bytes changed)
        raise SnapshotError(f"{products_path}: unreadable parquet ({str(exc).splitlines()[0][:160]})") from None


def load_manifest(path: Path) -> dict[str, Any]:
    """A snapshot's manifest, once its products.parquet is known to carry `catalog.schema.BUILD_PRODUCT_COLUMNS`.

    Raises:
        SnapshotError: the directory, a file or a column is missing, manifest.json is not JSON, or
            products.parquet's schema cannot be read.
    """
    check_snapshot(path)
    manifest_path, products_path = path / "manifest.json", path / "products.parquet"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{manifest_path}: invalid JSON ({exc})") from None
    try:
        present = pl.read_parquet_schema(products_path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise SnapshotError(f"{products_path}: unreadable parquet ({str(exc).splitlines()[0][:160]})") from None
    missing = [c for c in BUILD_PRODUCT_COLUMNS if c not in present]
    if missing:
        raise SnapshotError(f"{products_path} lacks columns {missing}")
    return manifest


def products_in_slices(path: Path, rows: int, columns: Sequence[str] = BUILD_PRODUCT_COLUMNS) -> Iterator[pl.DataFrame]:
    """The snapshot's products as consecutive frames of at most `rows` rows, in file order (one chunk each).

    An empty products.parquet gives one empty frame.

    What a build over a catalog bigger than memory plans from (ecombench.pipeline.build: answer_sets "partitioned").

    Raises:
        SnapshotError: products.parquet cannot be read.
    """
    products_path = path / "products.parquet"
    try:
        total = pl.scan_parquet(products_path).select(pl.len()).collect().item()
        for start in range(0, max(total, 1), rows):  # an empty catalog: one empty frame
            yield pl.scan_parquet(products_path).select(list(columns)).slice(start, rows).collect().rechunk()
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise SnapshotError(f"{products_path}: unreadable parquet ({str(exc).splitlines()[0][:160]})") from None


def load_products_of(path: Path, asins: Iterable[str]) -> pl.DataFrame:
    """The rows (columns `BUILD_PRODUCT_COLUMNS`, file order) of these parent_asins, read by a filtered scan.

    Raises:
        SnapshotError: products.parquet cannot be read.
    """
    products_path = path / "products.parquet"
    wanted = pl.Series(sorted(set(asins)), dtype=pl.String)
    try:
        return (pl.scan_parquet(products_path).select(list(BUILD_PRODUCT_COLUMNS))
                .filter(pl.col("parent_asin").is_in(wanted.implode())).collect().rechunk())
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise SnapshotError(f"{products_path}: unreadable parquet ({str(exc).splitlines()[0][:160]})") from None


def load_page_texts(path: Path, asins: Iterable[str]) -> pl.DataFrame:
    """(parent_asin, page_text) of these parent_asins: title, bullets and description as one normalised text.

    `page_text` has a space at each end (ecombench.text.normalize of the parts joined), so a value is looked up as
    `f" {normalize(value)} " in page_text`. Read by a filtered scan: the build keeps features and description on
    disk and reads them for its candidates only.

    Raises:
        SnapshotError: products.parquet cannot be read.
    """
    products_path = path / "products.parquet"
    wanted = pl.Series(sorted(set(asins)), dtype=pl.String)
    try:
        rows = (pl.scan_parquet(products_path).select("parent_asin", "title", "features", "description")
                .filter(pl.col("parent_asin").is_in(wanted.implode())).collect())
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise SnapshotError(f"{products_path}: unreadable parquet ({str(exc).splitlines()[0][:160]})") from None
    texts = [f" {normalize(' '.join([title or '', *(features or []), *(description or [])]))} "
             for title, features, description in rows.select("title", "features", "description").iter_rows()]
    return pl.DataFrame({"parent_asin": rows.get_column("parent_asin"), "page_text": texts},
                        schema={"parent_asin": pl.String, "page_text": pl.String})


def load_reviews(path: Path, of: Iterable[str] | None = None) -> pl.DataFrame:
    """The reviews of a snapshot, as review opinions and the answer-set index read them.

    Args:
        path: snapshot directory holding reviews.parquet.
        of: only the reviews of these parent_asins (a filtered scan); None: all.

    Returns:
        Every review with the columns `catalog.schema.REVIEW_TEXT_COLUMNS` (review_id, parent_asin, rating, title,
        text, helpful_vote), in file order.

    Raises:
        SnapshotError: the file is missing.
    """
    reviews_path = path / "reviews.parquet"
    if not reviews_path.is_file():
        raise SnapshotError(f"{reviews_path} not found: review-driven intents need a snapshot with reviews")
    try:
        if of is None:
            return pl.read_parquet(reviews_path, columns=list(REVIEW_TEXT_COLUMNS))
        wanted = pl.Series(sorted(set(of)), dtype=pl.String)
        return (pl.scan_parquet(reviews_path).select(list(REVIEW_TEXT_COLUMNS))
                .filter(pl.col("parent_asin").is_in(wanted.implode())).collect())
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise SnapshotError(f"{reviews_path}: unreadable parquet ({str(exc).splitlines()[0][:160]})") from None
