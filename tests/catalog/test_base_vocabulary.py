"""A snapshot read with another catalog's fact vocabulary beneath its own (`ecombench ingest --vocabulary-from`)."""

from __future__ import annotations

import shutil

import polars as pl
import pytest

from ecombench.catalog.facts import FactVocabulary
from ecombench.catalog.ingest import write_catalog_snapshot
from ecombench.catalog.snapshot import SnapshotError
from ecombench.catalog.type_stats import type_groups
from ecombench.pipeline.config import TypeRuleSettings
from ecombench.tables.fields import load_field_table
from ecombench.validation.catalog_stats import (
    base_vocabulary,
    catalog_knowledge,
    copy_base_vocabulary,
    snapshot_facts,
    snapshot_knowledge,
    write_catalog_stats,
)


def _stated(facts, snapshot, asin: str, field: str) -> list[str]:
    rows = pl.read_parquet(snapshot / "products.parquet", columns=["parent_asin"]).with_row_index("row")
    row = rows.filter(pl.col("parent_asin") == asin).get_column("row")[0]
    return facts.facts.filter((pl.col("row") == row) & (pl.col("field") == field)
                              & (pl.col("polarity") == "stated")).get_column("value").to_list()


@pytest.fixture(scope="module")
def snapshots(shared, tmp_path_factory):
    """The shared electronics file with reviews (880 products, every `details` empty) and the
    electronics/beauty/office file with its statistics."""
    work = tmp_path_factory.mktemp("base")
    write_catalog_snapshot([shared / "meta_electronics_beauty_office.jsonl"], [], work / "labelled")
    write_catalog_snapshot([shared / "with-reviews" / "meta_electronics_with_reviews.jsonl"], [], work / "bare")
    write_catalog_stats(work / "labelled", load_field_table(), with_suite=False)
    return work / "labelled", work / "bare"


def test_a_catalog_without_labels_is_read_with_the_base_vocabulary(snapshots, tmp_path):
    labelled, bare = snapshots
    table = load_field_table()
    own = snapshot_facts(bare, table)
    assert base_vocabulary(bare) == (None, "")
    copy = tmp_path / "bare"


    shutil.copytree(bare, copy)
    record = copy_base_vocabulary(labelled, copy)
    assert record["sha256"] == base_vocabulary(copy)[1] and record["fingerprint"]
    based = snapshot_facts(copy, table)

    def rich(facts) -> int:  # products with at least three stated fields
        st = facts.facts.filter(pl.col("polarity") == "stated")
        return st.group_by("row").agg(pl.col("field").n_unique().alias("n")).filter(pl.col("n") >= 3).height

    assert rich(own) < 10 < 300 < rich(based)
    # "SIMOLIO Wireless Headphones for TV Watching ..., 2.4G Wireless Earbuds ...": its own labels say nothing
    assert _stated(own, bare, "B0B8CY1MJ4", "Connectivity Technology") == []
    assert "2.4 GHz Radio Frequency" in _stated(based, copy, "B0B8CY1MJ4", "Connectivity Technology")
    # the build's knowledge is cached apart from the bare snapshot's
    cache = tmp_path / "cache"
    assert catalog_knowledge(copy, table, cache).folder != catalog_knowledge(bare, table, cache).folder


def test_a_base_without_stored_statistics_is_refused(snapshots, tmp_path):
    _, bare = snapshots
    with pytest.raises(SnapshotError, match="ecombench stats --catalog"):
        copy_base_vocabulary(bare, tmp_path / "other")


@pytest.fixture(scope="module")
def pooled(snapshots, tmp_path_factory):
    """The knowledge of the file with reviews ingested with the electronics file as its base."""
    labelled, bare = snapshots
    copy = tmp_path_factory.mktemp("pooled") / "bare"
    shutil.copytree(bare, copy)
    copy_base_vocabulary(labelled, copy)
    return snapshot_knowledge(copy, load_field_table())


def test_the_base_type_statistics_are_pooled_with_the_snapshot_s_own(snapshots, pooled):
    labelled, _ = snapshots
    base = snapshot_knowledge(labelled, load_field_table())
    own = pooled.product_types.height
    assert pooled.type_stats.catalog_products == own + base.product_types.height
    sizes = {k: dict(s.type_stats.fields.select("type", "products").unique().iter_rows()) for k, s in
             (("pooled", pooled), ("base", base))}
    own_sizes = (pooled.product_types.drop_nulls("product_type")
                 .with_columns(pl.col("product_type").map_elements(lambda t: type_groups(t)[-1], pl.String)))
    mice = own_sizes.filter(pl.col("product_type") == "mouse").height
    assert mice > 50 and sizes["pooled"]["mouse"] == mice + sizes["base"]["mouse"]
    # 877 products alone scale the thresholds down to groups of 5 products; pooled, as for a catalog of both
    settings = TypeRuleSettings()
    stats = pooled.type_stats.with_rules(settings.rules(catalog_products=pooled.type_stats.catalog_products))
    assert stats.rules.min_products == settings.rules(catalog_products=own + base.product_types.height).min_products
    # The file's mice state their connection with the base's values beneath their own; with both catalogs' mice,
    # "Wireless" is what nearly every mouse states (implied), "Bluetooth" still divides them.
    assert stats.problem("Mice", "Connectivity Technology", "Wireless") == "value_implied_by_type"
    assert stats.problem("Mice", "Connectivity Technology", "Bluetooth") is None


def test_the_base_type_evidence_types_titles_the_snapshot_alone_cannot(snapshots, pooled):
    _, bare = snapshots
    alone = dict(snapshot_knowledge(bare, load_field_table()).product_types.select("parent_asin", "product_type")
                 .iter_rows())
    with_base = dict(pooled.product_types.select("parent_asin", "product_type").iter_rows())
    # "USB C Hub, Baseus 6-in-1 Portable USB C Adapter for iPad Pro": one hub among the file's 877 products, many in
    # the base's titles; "Rechargeable CD Player Portable, ...": the same with players
    assert (alone["B0881FD9JN"], with_base["B0881FD9JN"]) == (None, "Hub")
    assert (alone["B0BZHYH5TM"], with_base["B0BZHYH5TM"]) == (None, "Player")
    untyped = [sum(t is None for t in types.values()) for types in (alone, with_base)]
    assert untyped[1] < untyped[0] // 2, untyped


def test_title_rates_and_common_words_are_learned_from_both_catalogs_counts(shared, snapshots, tmp_path):
    labelled, bare = snapshots
    table = load_field_table()
    copy = tmp_path / "bare"
    shutil.copytree(bare, copy)
    copy_base_vocabulary(labelled, copy)
    base, based = snapshot_facts(labelled, table).vocabulary, snapshot_facts(copy, table).vocabulary
    sizes = [pl.scan_parquet(s / "products.parquet").select(pl.len()).collect().item() for s in (labelled, bare)]
    assert (base.products, based.products) == (sizes[0], sum(sizes))
    # Mentioned by 2 % of the electronics/beauty/office file's pages (its phone cases), a common word there, read
    # only with a cue; over both files it is not common, as in one catalog of both.
    assert {" sony ", " matte "} <= base.common and not {" sony ", " matte "} & based.common
    # "Sony Extra Bass Bluetooth Headphones, ...": a brand in the title; a mouse's "nice matte coating"
    assert "Sony" in _stated(snapshot_facts(copy, table), copy, "B0845ML6WD", "Brand")
    assert "Matte" in _stated(snapshot_facts(copy, table), copy, "B086MNX5Y5", "Finish Type")
    # The fields whose title mentions are facts are those of one snapshot of both files.
    both = tmp_path / "both"
    write_catalog_snapshot([shared / "meta_electronics_beauty_office.jsonl",
                            shared / "with-reviews" / "meta_electronics_with_reviews.jsonl"], [], both)
    assert based.title_fields() == snapshot_facts(both, table).vocabulary.title_fields()
    # Every title rate is the agreement of both catalogs' title mentions together.
    for name, (n, agree) in based.title_counts.items():
        own = base.title_counts.get(name, (0, 0))
        assert n >= own[0] and agree >= own[1]
        assert based.title_rates.get(name) == (round(agree / n, 4) if n >= 30 else None)


def test_a_title_rate_near_the_threshold_is_judged_by_its_bound():
    # Style's title mentions in the shared catalog (122 of 424 agree with a label) and in the home file read with
    # the other two beneath it (121 of 400): one rate either side of 0.3, neither sure of 0.3; Theme's 516 of 1066 is.
    counts = {"Style": (400, 121), "Theme": (1066, 516)}
    vocabulary = FactVocabulary(values=pl.DataFrame(), title_rates={"Style": 0.3025, "Theme": 0.4841},
                                title_counts=counts)
    assert vocabulary.title_fields() == {"Theme"}
    # a vocabulary stored without counts keeps judging by the rate
    assert FactVocabulary(values=pl.DataFrame(), title_rates={"Style": 0.3025}).title_fields() == {"Style"}
