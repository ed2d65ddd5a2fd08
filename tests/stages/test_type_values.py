"""The type-dependent values table (stages/type_values.py): rows read, rules applied, bad rows named."""

from __future__ import annotations

import pytest

from ecombench.errors import SettingError
from ecombench.stages.type_values import load_type_values, type_value_problem


def test_the_bundled_rules_read_and_apply():
    rules = load_type_values()
    assert rules[("Shape", "round")][0] == "implied_by"
    assert type_value_problem("details.Shape", "Round", "Coffee Mugs") == "implied_by_product_type"
    assert type_value_problem("details.Shape", "Round", "Wall Clocks") is None
    assert type_value_problem("Age Range (Description)", "Adult", "Chairs") == "not_said_of_product_type"
    assert type_value_problem("Age Range (Description)", "Adult", "Costumes") is None
    assert type_value_problem("details.Form Factor", "Case", "Cases") == "names_product_type"
    assert type_value_problem("details.Color", "Black", "Chairs") is None


def test_a_microphone_is_no_feature_of_a_case_that_leaves_it_open(full_catalog):
    # product_search-5c2ba5ebab52's target: a phone case whose bullet gives "Full access to user interface, camera
    # lens, headphone jack, speakerphone and microphone"; the shopper said "One thing it really must have: a
    # microphone."
    from ecombench.catalog.product_type import product_type

    kind = product_type(full_catalog.product("B07XMP8GX2"), full_catalog.type_vocabulary,
                        full_catalog.table.fields["title"].placeholders)
    assert type_value_problem("details.Special Feature", "Microphone", kind) == "not_said_of_product_type"
    assert type_value_problem("details.Special Feature", "Microphone", "Wireless Headphones") is None
    assert type_value_problem("details.Special Feature", "Microphone", "Smart Watch") is None


def test_a_row_without_its_list_is_named(tmp_path):
    bad = tmp_path / "type_values.toml"
    bad.write_text('[[value]]\nfield = "Shape"\nvalue = "Round"\n')
    with pytest.raises(SettingError, match=r"type_values.toml: value 1 \('Shape' = 'Round'\)"):
        load_type_values(str(bad))


def test_every_row_names_a_field_of_the_field_table():
    from ecombench.tables.fields import load_field_table

    fields = load_field_table().fields
    assert {field for field, _ in load_type_values()} <= set(fields)
