"""What matters for a product type, learned from the catalog: implied values, rare fields, labels no page bears out.

Each rule is checked on the real shared products that showed the defect (full_catalog): the thresholds are the
build's defaults for a catalog of this size (TypeRuleSettings.rules).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from ecombench.catalog.type_stats import type_groups
from ecombench.pipeline.config import TypeRuleSettings
from ecombench.rubrics.builtin import value_holds
from ecombench.validation.catalog_stats import catalog_knowledge


@pytest.fixture(scope="module")
def knowledge(full_catalog):
    return catalog_knowledge(full_catalog.path, full_catalog.table)


@pytest.fixture(scope="module")
def stats(knowledge):
    return knowledge.type_stats.with_rules(TypeRuleSettings().rules(catalog_products=knowledge.product_types.height))


@pytest.mark.parametrize(("asin", "field", "value", "problem"), [
    # "Creative Teaching Press Poster A Bad Attitude is...": every poster that states a mounting says Wall Mount.
    ("B00FI9KXQE", "Mounting Type", "Wall Mount", "value_implied_by_type"),
    # "Skeleton Hand Peace Sign Sticker for Car Vinyl Decal ...": Finish "Powder Coated", in no sticker's page text.
    ("B0B2JR63F9", "Finish Type", "Powder Coated", "value_not_in_pages"),
    # "... Benjamin Franklin Magnetic Bumper Sticker / Decal Magnet (3" X 10.5")": Shape "Rectangular", a label no
    # sticker's text says (the stickers' Shape "Irregular" names no shape at all: fields.toml placeholders).
    ("B00LI9IJ5A", "Shape", "Rectangular", "value_not_in_pages"),
])
def test_a_value_that_means_nothing_for_the_type_is_no_requirement(full_catalog, knowledge, stats, asin, field, value,
                                                                     problem):
    spec = full_catalog.table.by_rubric_field(f"details.{field}")
    stated = [f["value"] for f in full_catalog.product(asin)["facts"] if f["polarity"] == "stated"
              and f["field"] == field and value_holds(f["value"], value, spec, full_catalog.table)]
    assert stated, "the page states it: without the type's statistics it would be a requirement"
    assert {stats.problem(knowledge.type_of(asin), field, v) for v in stated} == {problem}


def test_the_thresholds_scale_down_for_a_small_catalog_only():
    settings = TypeRuleSettings()
    assert settings.rules(catalog_products=7270).min_products == 30
    assert settings.rules(catalog_products=3_700_000).min_products == 30
    assert settings.rules(catalog_products=527).min_products == 5
    assert settings.rules().min_products == 30


def test_a_small_type_is_decided_by_its_head_noun(stats):
    assert type_groups("Wall Stickers") == ("wall sticker", "sticker")
    assert stats.group_of("Wall Stickers") == "sticker"  # five products of its own; the stickers decide
    assert stats.group_of("Sign Sticker") == "sticker"  # one product


def test_usable_fields_leave_out_what_the_type_does_not_take(full_catalog, knowledge, stats):
    usable = dict(stats.usable_fields(knowledge.facts.facts, knowledge.product_types).iter_rows())
    for asin, field in (("B00FI9KXQE", "Mounting Type"), ("B0B2JR63F9", "Finish Type")):
        stated = {f["field"] for f in full_catalog.product(asin)["facts"] if f["polarity"] == "stated"}
        assert field in stated and usable[asin] < len(stated), (asin, usable[asin], sorted(stated))


@pytest.mark.parametrize(("asin", "field", "value", "problem"), [
    # "Outdoor Quad Camping Chair ... by GigaTent": nearly every chair stating where it is used says outdoor.
    ("B00D6B1IVK", "Indoor/Outdoor Usage", "Outdoor", "value_implied_by_type"),
    # Marc Anthony Argan Oil Volume Hair Spray, label Hair Type "Frizzy": few hair sprays state a hair type.
    ("B01DUXS848", "Hair Type", "Frizzy", "field_rare_for_type"),
    # Flags B01LZPZJ9L: few flags state a shape, and "Rectangular" is what a flag is.
    ("B01LZPZJ9L", "Shape", "Rectangular", "field_rare_for_type"),
])
def test_a_share_at_the_threshold_is_judged_by_its_bound(knowledge, stats, asin, field, value, problem):
    product_type = knowledge.type_of(asin)
    assert stats.problem(product_type, field, value) == problem
    # the share itself passes: only the margin for a share estimated from a few dozen products decides
    assert stats.with_rules(replace(stats.rules, margin_z=0.0)).problem(product_type, field, value) is None


def _stats_over_all_facts(facts, types, rules, settled_by):
    """The per-type statistics computed over all facts at once, with means; a value another field's value settles
    (`settled_by`) counts as stated by the products stating that, in text where any of those is."""
    import polars as pl

    from ecombench.catalog import type_stats as ts

    named = types.drop_nulls("product_type")
    rows = [(t, g) for t in named.get_column("product_type").unique().sort().to_list() for g in ts.type_groups(t)]
    groups = (named.join(pl.DataFrame(rows, schema={"product_type": pl.String, "type": pl.String}, orient="row"),
                         on="product_type").drop("product_type").unique())
    sizes = groups.group_by("type").agg(pl.len().cast(pl.Int64).alias("products"))
    from ecombench.text import normalize

    stated = (facts.filter(pl.col("polarity") == "stated")
              .select("parent_asin", "field", "value",
                      pl.col("sources").list.eval(pl.element() != "details").list.any().alias("text")))
    own = {(a, f, v) for a, f, v in stated.select("parent_asin", "field", "value").iter_rows()}
    settled: dict[tuple[str, str, str], bool] = {}
    for field, by in settled_by.items():
        for a, f, v, text in stated.iter_rows():
            if f in by and (value := by[f].get(normalize(v))) and (a, field, value) not in own:
                settled[(a, field, value)] = settled.get((a, field, value), False) or text
    stated = (pl.concat([stated, pl.DataFrame([(*k, t) for k, t in settled.items()], schema=stated.schema,
                                              orient="row")])
              .unique(["parent_asin", "field", "value"]).join(groups, on="parent_asin"))
    per_value = stated.group_by("type", "field", "value").agg(pl.len().cast(pl.Int64).alias("products"),
                                                             pl.col("text").mean().alias("in_text"))
    stating = stated.group_by("type", "field").agg(pl.col("parent_asin").n_unique().cast(pl.Int64).alias("stating"),
                                                   pl.col("text").mean().alias("in_text"))
    return ts._summarise(per_value, stating, sizes, rules, types.height)


def test_statistics_summed_per_slice_equal_those_over_all_facts(knowledge):
    """On the shared catalog's facts: counted in slices of 500 products (folded every 8), the statistics are the
    ones computed over all facts at once with means, to the last bit."""
    from ecombench.catalog.type_stats import TypeStatSums
    from ecombench.schemas.config import TypeRules

    facts = knowledge.facts.facts
    types = knowledge.product_types.select("parent_asin", "product_type")
    from ecombench.tables.fields import load_field_table

    rules = TypeRules()
    settled_by = load_field_table().settled_by()
    whole = _stats_over_all_facts(facts, types, rules, settled_by)
    assert whole.values.height > 1000 and whole.fields.height > 100
    sums = TypeStatSums(types, settled_by)
    for start in range(0, types.height, 500):
        sums.add(facts.filter((facts["row"] >= start) & (facts["row"] < start + 500)))
    sliced = sums.stats(rules)
    assert sliced.fields.equals(whole.fields) and sliced.values.equals(whole.values)
    for a, b in ((sliced.fields, whole.fields), (sliced.values, whole.values)):
        assert _parquet_bytes(a) == _parquet_bytes(b)  # as write_knowledge stores them
    assert knowledge.type_stats.fields.equals(whole.fields) and knowledge.type_stats.values.equals(whole.values)


def _parquet_bytes(frame):
    import io

    out = io.BytesIO()
    frame.write_parquet(out)
    return out.getvalue()
