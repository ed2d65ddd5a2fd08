"""Fixtures of the catalog tests: real Amazon Reviews 2023 lines (bundled sample, shared files)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "amazon-reviews-2023"
SAMPLE_META = REPO / "ecombench" / "data" / "sample" / "meta.jsonl.gz"


@pytest.fixture(scope="module")
def shared() -> Path:
    """The shared real files (skips the test when they are not cloned beside the repository)."""
    if not SHARED.is_dir():
        pytest.skip(f"shared real data not found at {SHARED} (clone shared/ beside the repository)")
    return SHARED


@pytest.fixture(scope="module")
def sample_lines() -> list[bytes]:
    """Raw lines of the bundled sample metadata (real records)."""
    with gzip.open(SAMPLE_META, "rb") as fh:
        return fh.read().splitlines(keepends=True)


@pytest.fixture(scope="module")
def catalog_lines(full_catalog):
    """The device lines of the snapshot of every shared file (ecombench.catalog.device_lines), as its facts read."""
    import polars as pl

    from ecombench.catalog.device_lines import learn_device_lines

    products = pl.read_parquet(full_catalog.path / "products.parquet", columns=["title", "features", "description"])
    return learn_device_lines(products)
