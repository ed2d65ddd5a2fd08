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
    # "Carson Dellosa Snowmen Dazzle Stickers": Shape "Irregular", a label no sticker's text says.
    ("B00D5T6I7M", "Shape", "Irregular", "value_not_in_pages"),
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
    # "GUM Crayola Twistables Kids Toothbrush with Fun Twisting Head": few toothbrushes state a theme.
    ("B083VW4MGZ", "Theme", "Fun", "field_rare_for_type"),
    # Flags B01LZPZJ9L: few flags state a shape, and "Rectangular" is what a flag is.
    ("B01LZPZJ9L", "Shape", "Rectangular", "field_rare_for_type"),
])
def test_a_share_at_the_threshold_is_judged_by_its_bound(knowledge, stats, asin, field, value, problem):
    product_type = knowledge.type_of(asin)
    assert stats.problem(product_type, field, value) == problem
    # the share itself passes: only the margin for a share estimated from a few dozen products decides
    assert stats.with_rules(replace(stats.rules, margin_z=0.0)).problem(product_type, field, value) is None
