"""Stage 2 drops values that say nothing of the product, on the real shared products a reviewer read them on.

"for the home" of a pillow cover filed under "Home & Kitchen" and "Durable" as a must-have are no requirements; a
section of the department ("Garden" of a garden flag) is. A value only the label states is drawn less often than
one the page's text states too.
"""

from __future__ import annotations

import pytest

from ecombench.hashing import rng
from ecombench.pipeline.candidate import ValueSupport
from ecombench.pipeline.config import TypeRuleSettings
from ecombench.stages.features import extract_features
from ecombench.stages.product_naming import names_department
from ecombench.stages.split import evidence_weight, select_features
from ecombench.tables.intents import load_intents
from ecombench.validation.catalog_stats import catalog_knowledge

USES, FEATURE = "details.Recommended Uses For Product", "details.Special Feature"


@pytest.fixture(scope="module")
def stats(full_catalog):
    knowledge = catalog_knowledge(full_catalog.path, full_catalog.table)
    return knowledge.type_stats.with_rules(TypeRuleSettings().rules(catalog_products=knowledge.product_types.height))


def _rejected(full_catalog, stats, asin):
    rejected: dict[str, dict[str, str]] = {}
    extract_features(full_catalog.product(asin), load_intents()["product_search"], full_catalog.table,
                     rng(0, "meaningless-test", asin), value_support=ValueSupport(full_catalog.index),
                     rejected_values=rejected, type_vocabulary=full_catalog.type_vocabulary, type_stats=stats)
    return rejected


def test_home_of_a_pillow_cover_under_home_and_kitchen_names_its_department(full_catalog, stats):
    # AEIOAE Spring Sage Green Pillow Covers: Recommended Uses "Home" (label), filed under "Home & Kitchen"
    product = full_catalog.product("B0BPNXH1BS")
    assert product["categories"][0] == "Home & Kitchen"
    assert _rejected(full_catalog, stats, "B0BPNXH1BS")[USES]["Home"] == "names_department"


def test_a_section_of_the_department_is_a_requirement():
    # Briarwood Lane "Butterfly Dance Burlap Spring Garden Flag" under "Patio, Lawn & Garden"
    path = ["Patio, Lawn & Garden", "Outdoor Décor", "Flags"]
    assert not names_department(USES, "Garden", path)
    assert names_department(USES, "Patio", path)
    assert not names_department("details.Color", "Home", ["Home & Kitchen"])  # not a form-or-use field


def test_durable_is_marketing(full_catalog, stats):
    # YXLJC Footstool Protector ... Ottoman Cover: Special Feature "Durable, Waterproof"
    rejected = _rejected(full_catalog, stats, "B09MBKBJ2G")
    assert rejected[FEATURE]["Durable"] == "marketing_value"
    assert "Waterproof" not in rejected.get(FEATURE, {})


def test_a_value_only_the_label_states_is_drawn_less_often(full_catalog, stats):
    # CafePress Black Lab Mug: Occasion values only in the label, "Microwave Safe" in the label, a bullet and the
    # description; with every field's salience alike, the label-only fields come later in the draw.
    asin = "B088PK1TR1"
    product = full_catalog.product(asin)
    stated = {}
    for fact in product["facts"]:
        if fact["polarity"] == "stated":
            stated.setdefault((fact["field"], fact["value"]), set()).update(fact["sources"])
    intent = load_intents()["product_search"]
    features, _ = extract_features(product, intent, full_catalog.table, rng(0, "weight-test", asin),
                                   value_support=ValueSupport(full_catalog.index),
                                   type_vocabulary=full_catalog.type_vocabulary, type_stats=stats)
    details = [f for f in features if f.field.startswith("details.")]
    label_only = {f.field for f in details if stated.get((f.field.removeprefix("details."), f.value)) == {"details"}}
    assert label_only and label_only != {f.field for f in details}

    def label_only_rank(weighted: bool) -> int:
        """The summed places of the label-only fields in the draw's order over 300 draws (later: larger)."""
        total = 0
        for seed in range(300):
            weights = {f.field: evidence_weight(stated.get((f.field.removeprefix("details."), f.value), ()))
                       if weighted else 1.0 for f in details}
            chosen = select_features(features, intent, rng(seed, "weight-draw"), weights)
            total += sum(i for i, f in enumerate(chosen) if f.field in label_only)
        return total

    assert label_only_rank(True) > label_only_rank(False)
