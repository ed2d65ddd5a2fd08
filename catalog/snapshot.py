"""Reading a catalog snapshot (artifacts/catalogs/<name>/) written by `ecombench ingest`.

What the build, inspect and validate load of it; the columns are `catalog.schema`'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from catalog.schema import BUILD_PRODUCT_COLUMNS, REVIEW_TEXT_COLUMNS
from stages.errors import InputError


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
        (frame of every product with the columns `catalog.schema.BUILD_PRODUCT_COLUMNS`, one chunk per
        column; manifest dict).

    Raises:
        SnapshotError: the directory, a file or a column is missing, manifest.json is not JSON, or
            products.parquet cannot be read.
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
    # One chunk per column: gathering rows from a many-chunk frame (one per row group) costs ~100x more, and the
    # answer-set index shares these buffers instead of copying them.
    try:
        return pl.read_parquet(products_path, columns=list(BUILD_PRODUCT_COLUMNS)).rechunk(), manifest
    except (OSError, pl.exceptions.PolarsError) as exc:  # a damaged file (truncated, bytes changed)
        raise SnapshotError(f"{products_path}: unreadable parquet ({str(exc).splitlines()[0][:160]})") from None


def load_reviews(path: Path) -> pl.DataFrame:
    """The reviews of a snapshot, as review opinions and the answer-set index read them.

    Args:
        path: snapshot directory holding reviews.parquet.

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
        return pl.read_parquet(reviews_path, columns=list(REVIEW_TEXT_COLUMNS))
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise SnapshotError(f"{reviews_path}: unreadable parquet ({str(exc).splitlines()[0][:160]})") from None
