"""The snapshot schema is defined once: ingest writes it, the build and the sandbox read selections of it."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from ecombench.catalog.schema import (
    BUILD_PRODUCT_COLUMNS,
    PRODUCT_SCHEMA,
    REVIEW_SCHEMA,
    REVIEW_TEXT_COLUMNS,
    SANDBOX_PRODUCT_COLUMNS,
    _columns,
)
from ecombench.catalog.snapshot import load_reviews, load_snapshot
from ecombench.sandbox.catalog import SandboxCatalog


def test_ingest_writes_exactly_the_schema(sample_catalog):
    assert pq.read_schema(sample_catalog.path / "products.parquet") == PRODUCT_SCHEMA
    assert pq.read_schema(sample_catalog.path / "reviews.parquet") == REVIEW_SCHEMA


def test_the_build_reads_its_selection_of_the_schema(sample_catalog):
    products, _ = load_snapshot(sample_catalog.path)
    assert tuple(products.columns) == BUILD_PRODUCT_COLUMNS
    assert tuple(load_reviews(sample_catalog.path).columns) == REVIEW_TEXT_COLUMNS


def test_the_sandbox_reads_its_selection_of_the_schema(sample_catalog):
    cat = SandboxCatalog.open(sample_catalog.path)
    row = next(iter(cat.rows.values()))
    review = next(iter(cat.reviews.values()))[0]
    # Each row also carries the product's facts (what its whole page states), computed beside the schema.
    assert tuple(row) == (*SANDBOX_PRODUCT_COLUMNS, "facts") and tuple(review) == REVIEW_TEXT_COLUMNS


def test_a_selection_must_name_schema_columns_in_schema_order():
    with pytest.raises(AssertionError, match="colour"):
        _columns(PRODUCT_SCHEMA, "parent_asin", "colour")
    with pytest.raises(AssertionError):
        _columns(PRODUCT_SCHEMA, "title", "parent_asin")
