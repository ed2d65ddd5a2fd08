"""The catalog snapshot's schema: the columns of products.parquet and reviews.parquet and their types, defined once.

Ingestion writes exactly these Arrow schemas; the build (`ecombench.catalog.snapshot`) and the sandbox
(`ecombench.sandbox.catalog`) read named selections of their columns, listed here too so that a column
renamed or dropped fails at import, not in the middle of a build. Polars reads the types from the
parquet files (Arrow `string` as `String`, `list<string>` as `List(String)`, `details` as
`List(Struct(key, raw_key, value))`).
"""

from __future__ import annotations

import pyarrow as pa

# Goes into every manifest and fingerprint; bump it when a column or its meaning changes.
SCHEMA_VERSION = 1

_STRINGS = pa.list_(pa.field("item", pa.string(), nullable=False))
_DETAIL = pa.struct([pa.field("key", pa.string(), nullable=False),
                     pa.field("raw_key", pa.string(), nullable=False),
                     pa.field("value", pa.string(), nullable=False)])

PRODUCT_SCHEMA = pa.schema([
    pa.field("parent_asin", pa.string(), nullable=False),
    pa.field("title", pa.string(), nullable=False),
    pa.field("main_category", pa.string()),
    pa.field("store", pa.string()),
    pa.field("average_rating", pa.float64()),
    pa.field("rating_number", pa.int64()),
    pa.field("price", pa.float64()),
    pa.field("price_raw", pa.string()),
    pa.field("features", _STRINGS, nullable=False),
    pa.field("description", _STRINGS, nullable=False),
    pa.field("categories", _STRINGS, nullable=False),
    pa.field("details", pa.list_(pa.field("item", _DETAIL, nullable=False)), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
    pa.field("review_count", pa.int64(), nullable=False),
])
"""products.parquet: one row per ingested parent_asin, in file and line order of the metadata inputs.

`price` is the first number of the source's price text (`price_raw`); `details` are
{key (canonical, ecombench.tables.fields), raw_key (as written), value (text)} in source order;
`review_count` counts the ingested reviews of the product.
"""

REVIEW_SCHEMA = pa.schema([
    pa.field("review_id", pa.string(), nullable=False),
    pa.field("parent_asin", pa.string(), nullable=False),
    pa.field("asin", pa.string()),
    pa.field("rating", pa.float64()),
    pa.field("title", pa.string(), nullable=False),
    pa.field("text", pa.string(), nullable=False),
    pa.field("helpful_vote", pa.int64(), nullable=False),
    pa.field("verified_purchase", pa.bool_(), nullable=False),
    pa.field("timestamp", pa.int64()),
    pa.field("user_id", pa.string()),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])
"""reviews.parquet: one row per ingested review of an ingested product, in file and line order.

`review_id` is content-derived (16 hex characters, `ecombench.catalog.records.review_id`); `timestamp` is
the source's (Amazon Reviews 2023: milliseconds since the epoch; null throughout the shared files)
and `helpful_vote` counts other shoppers' votes (0 when missing).
"""


def _columns(schema: pa.Schema, *names: str) -> tuple[str, ...]:
    # A selection must name columns of the schema, in the schema's order (readers rely on both).
    missing = [n for n in names if n not in schema.names]
    if missing or sorted(names, key=schema.names.index) != list(names):
        raise AssertionError(f"columns {names} are not a selection of {schema.names} in its order")
    return names


BUILD_PRODUCT_COLUMNS = _columns(
    PRODUCT_SCHEMA, "parent_asin", "title", "main_category", "store", "average_rating", "rating_number", "price",
    "categories", "details", "review_count")
"""What the build reads of products.parquet (`ecombench.catalog.snapshot.load_snapshot`).

features and description, most of the file's bytes, stay on disk: no stage reads them.
"""

SANDBOX_PRODUCT_COLUMNS = _columns(
    PRODUCT_SCHEMA, "parent_asin", "title", "main_category", "store", "average_rating", "rating_number", "price",
    "features", "description", "categories", "details", "review_count")
"""What the sandbox's tools read of products.parquet: the build's columns plus features and description,
which an agent searches and is shown."""

REVIEW_TEXT_COLUMNS = _columns(
    REVIEW_SCHEMA, "review_id", "parent_asin", "rating", "title", "text", "helpful_vote")
"""What the build (review opinions) and the sandbox (review search) read of reviews.parquet."""
