"""A cue describes the target to the agent, so it rests on what the target's page says, on the real shared data.

Where a type's pages seldom put a labelled value in words, a details label alone carries no cue: a label "Modern" on
JAWO's cartoon undersea kids' shower curtain (B07Q3VDYM7) made "with clean lines and a sleek, up-to-date look", and
a reviewer read the query as misdescribing the product (three more such curtains and a massage gaming chair).
"""

from __future__ import annotations

import pytest

from ecombench.pipeline.config import TypeRuleSettings
from ecombench.validation.catalog_stats import catalog_knowledge


@pytest.fixture(scope="module")
def knowledge(full_catalog):
    known = catalog_knowledge(full_catalog.path, full_catalog.table)
    stats = known.type_stats.with_rules(TypeRuleSettings().rules(catalog_products=known.product_types.height))
    types = dict(known.product_types.select("parent_asin", "product_type").iter_rows())
    return stats, types


def test_curtain_pages_seldom_say_modern_but_say_polyester(knowledge):
    stats, _ = knowledge
    assert not stats.labels_borne_out("Curtains", "Style", "Modern")
    assert stats.labels_borne_out("Curtains", "Material", "Polyester")
    assert stats.labels_borne_out("Coffee Mugs", "Material", "Ceramic")


def test_the_cartoon_curtains_modern_label_is_its_only_evidence(full_catalog, knowledge):
    _, types = knowledge
    facts = [f for f in full_catalog.product("B07Q3VDYM7")["facts"] if f["field"] == "Style"]
    assert [(f["value"], f["sources"]) for f in facts] == [("Modern", ["details"])]
    assert types["B07Q3VDYM7"] == "Shower Curtain"


def test_every_cue_of_the_full_build_rests_on_the_targets_text_or_on_labels_its_type_bears_out(full_build,
                                                                                                 knowledge):
    stats, types = knowledge
    cued = 0
    for task in full_build.tasks:
        target = task["target_product"]
        for rubric in task["rubrics"]:
            if rubric["id"] not in task["implicit_rubric_ids"]:
                continue
            cued += 1
            name, value = rubric["field"].removeprefix("details."), rubric["expected_value"]
            text = {s for f in target["facts"].get(name, []) if f["value"] == value for s in f["sources"]}
            assert (text - {"details"}) or stats.labels_borne_out(types[target["parent_asin"]], name, value), (
                task["id"], name, value)
    assert cued >= 10
