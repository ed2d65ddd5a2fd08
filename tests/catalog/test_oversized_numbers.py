"""Counts past a 64-bit integer in real records: the field is dropped and logged as out_of_range, never a crash.

Real sample lines with `rating_number` (metadata) or `helpful_vote` (reviews) set to integers or integral
floats that no Int64 column holds; both readers keep every record and log each field once.
"""

from __future__ import annotations

import gzip
import re

import orjson
import pyarrow.parquet as pq
import pytest

from ecombench.catalog.ingest import write_catalog_snapshot
from tests.catalog.conftest import SAMPLE_META

SAMPLE_REVIEWS = SAMPLE_META.with_name("reviews.jsonl.gz")


def with_number(line: bytes, field: str, literal: bytes) -> bytes:
    """The raw line with `field`'s number replaced by `literal` as written (no JSON round trip)."""
    new, n = re.subn(rb'"%s": *-?[0-9.eE+]+' % field.encode(), b'"%s": %s' % (field.encode(), literal), line, count=1)
    assert n == 1, field
    return new


@pytest.mark.parametrize("reader", ["native", "python"])
def test_oversized_counts_are_logged_and_the_records_kept(sample_lines, tmp_path, reader):
    meta = [line.rstrip(b"\n") for line in sample_lines]
    meta[3] = with_number(meta[3], "rating_number", b"99999999999999999999999999")
    meta[5] = with_number(meta[5], "rating_number", b"1e20")
    with gzip.open(SAMPLE_REVIEWS, "rb") as fh:
        reviews = fh.read().splitlines()
    reviews[0] = with_number(reviews[0], "helpful_vote", b"1e23")
    (tmp_path / "meta.jsonl").write_bytes(b"\n".join(meta) + b"\n")
    (tmp_path / "reviews.jsonl").write_bytes(b"\n".join(reviews) + b"\n")

    manifest = write_catalog_snapshot([tmp_path / "meta.jsonl"], [tmp_path / "reviews.jsonl"], tmp_path / "snap",
                                      workers=1, reader=reader)

    assert manifest["counts"]["products"] == len(meta) and manifest["counts"]["reviews"] == len(reviews)
    bad = [orjson.loads(b) for b in (tmp_path / "snap" / "bad_records.jsonl").read_bytes().splitlines()]
    assert [(b["file"], b["line"], b["reason"]) for b in bad] == [
        ("meta.jsonl", 4, "out_of_range"), ("meta.jsonl", 6, "out_of_range"), ("reviews.jsonl", 1, "out_of_range")]
    products = pq.read_table(tmp_path / "snap" / "products.parquet").to_pylist()
    by_asin = {p["parent_asin"]: p for p in products}
    for k in (3, 5):
        assert by_asin[orjson.loads(sample_lines[k])["parent_asin"]]["rating_number"] is None
