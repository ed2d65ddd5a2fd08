"""Product facts read once per distinct text equal the facts read product by product (ecombench.catalog.facts).

The frame is the shared electronics, beauty and office file (real pages with labels, device accessories among
them); a catalog that repeats its pages (a generated one, a reseller's copies) is that frame twice.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from ecombench.catalog.facts import (
    SegmentReader,
    _with_evidence,
    distinct_segments,
    extract_facts,
    facts_in_slices,
    find_mentions,
    label_options,
    product_segments,
    read_mentions,
    segment_facts,
    stated_rows,
)
from ecombench.catalog.ingest import write_catalog_snapshot
from ecombench.catalog.knowledge import KNOWLEDGE_COLUMNS
from ecombench.tables.fields import load_field_table

ORDER = ["row", "source", "segment", "field", "value", "start", "end", "polarity"]


@pytest.fixture(scope="module")
def real(shared: Path, tmp_path_factory) -> tuple[pl.DataFrame, object, object]:
    """(products, field table, fact vocabulary) of the shared electronics, beauty and office file."""
    out = tmp_path_factory.mktemp("per-text") / "snap"
    write_catalog_snapshot([shared / "meta_electronics_beauty_office.jsonl"], [], out)
    products = pl.read_parquet(out / "products.parquet", columns=list(KNOWLEDGE_COLUMNS))
    table = load_field_table()
    vocabulary = facts_in_slices(lambda columns: iter([products]), table).vocabulary
    return products, table, vocabulary


def test_text_facts_per_distinct_text_equal_those_per_product(real):
    products, table, vocabulary = real
    segments = product_segments(products)
    per_product = _with_evidence(read_mentions(find_mentions(segments, vocabulary), segments, vocabulary, table),
                                 segments)
    per_text = segment_facts(segments, vocabulary, table)
    assert per_product.height > 10_000  # a real page's worth of text facts, not an empty frame
    assert per_text.sort(ORDER).equals(per_product.sort(ORDER))


def test_a_text_two_products_share_is_read_once():
    segments = product_segments(pl.DataFrame({
        "title": ["Case for iPhone 14, Black", "Case for iPhone 14, Black", "Leather Wallet"],
        "features": [["MATERIAL: silicone"], ["MATERIAL: silicone", "Shockproof"], None],
        "description": [None, None, ["MATERIAL: silicone"]], "store": ["Acme", "Acme", "Acme"]}))
    keyed, texts = distinct_segments(segments)
    # Two titles, two bullets (one repeated), one paragraph that repeats a bullet's words (another source), a store.
    assert texts.height == 6
    assert keyed.height == segments.height
    assert keyed.filter(pl.col("source") == "title").get_column("text_row").to_list()[:2] == [0, 0]


def test_a_catalog_of_repeated_pages_gets_each_page_its_facts(real):
    products, table, vocabulary = real
    twice = pl.concat([products, products.with_columns(pl.lit("X").alias("parent_asin"))])
    facts = extract_facts(twice, table, vocabulary)
    first = facts.filter(pl.col("row") < products.height)
    second = facts.filter(pl.col("row") >= products.height).with_columns(pl.col("row") - products.height,
                                                                        pl.col("parent_asin").alias("x"))
    assert first.height > 10_000
    assert second.get_column("x").unique().to_list() == ["X"]
    assert second.drop("x").with_columns(first.get_column("parent_asin")).equals(first)


def test_extract_facts_per_text_equal_facts_from_per_product_mentions(real):
    products, table, vocabulary = real
    segments = product_segments(products)
    labels = label_options(products, table)
    per_text = extract_facts(products, table, vocabulary, labels=labels, segments=segments)
    per_product = extract_facts(products, table, vocabulary, labels=labels, segments=segments,
                                mentions=find_mentions(segments, vocabulary))
    assert per_text.height > 10_000
    assert per_text.equals(per_product)


@pytest.mark.parametrize("max_texts", [500_000, 500])
def test_a_reader_over_slices_gives_each_slice_the_facts_it_would_read_afresh(real, max_texts):
    # max_texts 500: the reader forgets what it kept several times over the file and reads those texts again.
    products, table, vocabulary = real
    reader = SegmentReader(table, max_texts=max_texts)
    for start in range(0, products.height, 1_000):
        segments = product_segments(products.slice(start, 1_000))
        assert reader.text_facts(segments, vocabulary).sort(ORDER).equals(
            segment_facts(segments, vocabulary, table).sort(ORDER))
    assert reader._texts.height <= max_texts + 5_000  # at most one slice's texts past the bound


def test_a_reader_finds_the_mentions_each_segment_holds(real):
    products, table, vocabulary = real
    segments = product_segments(products)
    found = SegmentReader(table).mentions(segments, vocabulary)
    expected = find_mentions(segments, vocabulary).select("row", "source", "field", "norm").unique()
    assert expected.height > 10_000
    assert found.unique().sort(found.columns).equals(expected.sort(found.columns))


def test_facts_written_slice_by_slice_are_the_bytes_of_those_held_in_memory(real, tmp_path):
    """The real electronics, beauty and office pages in slices of 700: facts written to a file as each slice is read
    (no more than a slice's in memory) are the facts held in memory, and the file the bytes `write_parquet` gives."""
    products, table, _ = real

    def slices(columns):
        return iter([products.slice(start, 700) for start in range(0, products.height, 700)])

    held = facts_in_slices(slices, table)
    written = facts_in_slices(slices, table, file=tmp_path / "facts.parquet")
    assert held.facts.height > 10_000 and products.height > 2 * 700
    assert written.frame is None and not (tmp_path / ".facts.parquet.parts").exists()
    assert written.facts.equals(held.facts) and written.vocabulary.values.equals(held.vocabulary.values)
    held.facts.write_parquet(tmp_path / "held.parquet")
    assert (tmp_path / "facts.parquet").read_bytes() == (tmp_path / "held.parquet").read_bytes()
    window = pl.col("row").is_between(700, 1399)
    assert (stated_rows(written.scan()).filter(window).collect()
            .equals(stated_rows(held.facts).filter(window)))

