"""`ecombench validate` on records written as the EComAgentBench release writes them (reference §7.2, §8.2, §14).

Four records over real products of the bundled sample (a round spandex tablecloth and a pair of linen
throw pillow covers), with the release's own shapes: `intent_category`, `target_product.product_id` and raw detail
keys, query rubrics with `query_surface`, hidden rubrics with `implicit_eligible` / `must_hide_value` /
`query_hint`, persona keys from the release's mapping (`color_preference`), its noise fields and user
ids, slots with `hidden_info` and `revealed`, and no rubric_lock, answer set or provenance. Two are
sound and must pass; two carry defects, each of which must come back under its reason, and nothing else.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from ecombench.flows.cli import app
from ecombench.flows.ingest import sample_inputs

runner = CliRunner()
TABLECLOTH, PILLOW_COVERS = "B0C27MKXK8", "B09CDXDJZD"  # real products of data/sample (meta.jsonl.gz)


@pytest.fixture(scope="module")
def products() -> dict[str, dict[str, Any]]:
    meta, _ = sample_inputs()
    with gzip.open(meta[0], "rt", encoding="utf-8") as fh:
        return {p["parent_asin"]: p for p in map(json.loads, fh)}


def target(p: dict[str, Any]) -> dict[str, Any]:
    """The release's cleaned copy of a product: product_id, raw Amazon detail keys."""
    keys = ("title", "main_category", "store", "average_rating", "rating_number", "price", "features", "description",
            "details")
    return {"product_id": p["parent_asin"], **{k: p.get(k) for k in keys}}


def query_rubric(rid: str, kind: str, field: str, value: Any, surface: str, **extra: Any) -> dict[str, Any]:
    return {"id": rid, "type": kind, "field": field, "expected_value": value, "description": surface,
            "query_surface": surface, "info_source": "query", **extra}


def hidden_rubric(rid: str, kind: str, field: str, value: Any, source: str, description: str) -> dict[str, Any]:
    return {"id": rid, "description": description, "type": kind, "field": field, "expected_value": value,
            "info_source": source, "implicit_eligible": False, "must_hide_value": None, "query_hint": description}


def record(rid: str, intent: str, query: str, requirements: dict[str, Any], slot: dict[str, Any],
           product: dict[str, Any], rubrics: list[dict[str, Any]], user: str) -> dict[str, Any]:
    return {
        "id": rid, "intent_category": intent, "user_query": query,
        "user_persona": {"user_id": user, "demographics": {"age_range": "30-39", "occupation": "nurse"},
                         "lifestyle": {"hobbies": ["yoga", "baking"]},
                         "shopping_habits": {"shopping_frequency": "monthly"},
                         "product_requirements": requirements},
        "clarification_script": {"clarification_slots": [{**slot, "revealed": False}],
                                 "default_response": "Could you ask about more specific features or specs you'd "
                                                     "like to know?", "max_clarification_turns": 10},
        "target_product": target(product), "rubrics": rubrics, "implicit_rubric_ids": [],
        "difficulty_metrics": {"implicit_count": 0},
        "generation_artifacts": {"sample_retry_count": 0, "judge_issues": []},
        "extracted_features": [{"field": r["field"], "value": r["expected_value"], "type": r["type"]}
                               for r in rubrics if r["type"] != "entity_match"],
        "voucher": None, "validation_passed": True, "validation_issues": [], "judge_passed": True,
        "judge_issues": [], "sample_status": "ok",
    }


def tablecloth_record(products: dict[str, dict[str, Any]], rid: str) -> dict[str, Any]:
    """A sound product_search record: the query's shape and type, the persona's colour, the material asked."""
    return record(
        rid, "product_search", "I'm looking for a round tablecloth.",
        {"color_preference": "Black"},
        {"slot_id": "s1", "linked_rubric_ids": ["r4"], "hidden_info": "Polyester Blend",
         "trigger_keywords": ["material", "made of", "made from", "polyester", "fabric", "cloth", "construction",
                              "what is it made"],
         "user_response": "I'd like it to be a polyester blend."},
        products[TABLECLOTH],
        [query_rubric("r2", "attribute_match", "details.Shape", "Round", "round"),
         hidden_rubric("r3", "attribute_match", "details.Color", "Black", "persona", "The color should be Black."),
         hidden_rubric("r4", "attribute_match", "details.Material", "Polyester Blend", "clarification",
                       "The material should be Polyester Blend."),
         query_rubric("r5", "entity_match", "title", "tablecloth", "tablecloth",
                      canonical_entity="tablecloth", title_span="Tablecloth")],
        "U_48213")


def pillow_covers_record(products: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A sound rating_quality record: rating floors in the query, colour in the persona, material asked."""
    return record(
        "v3_sample_0004", "rating_quality",
        "I need throw pillow covers rated at least 4.5 stars, with at least 20 ratings.",
        {"color_preference": "Red"},
        {"slot_id": "s1", "linked_rubric_ids": ["r5"], "hidden_info": "Linen",
         "trigger_keywords": ["material", "made of", "made from", "linen", "fabric", "cloth", "construction"],
         "user_response": "I want them made of linen."},
        products[PILLOW_COVERS],
        [query_rubric("r2", "numeric_range", "average_rating", {"min": 4.5}, "at least 4.5 stars"),
         query_rubric("r3", "numeric_range", "rating_number", {"min": 20}, "at least 20 ratings"),
         hidden_rubric("r4", "attribute_match", "details.Color", "Red", "persona", "The color should be Red."),
         hidden_rubric("r5", "attribute_match", "details.Material", "Linen", "clarification",
                       "The material should be Linen."),
         query_rubric("r6", "entity_match", "title", "throw pillow covers", "throw pillow covers",
                      canonical_entity="throw pillow covers", title_span="Throw Pillow Covers")],
        "U_51546")


@pytest.fixture(scope="module")
def findings(products, sample_catalog, tmp_path_factory) -> dict[str, list[dict[str, Any]]]:
    """validate's error findings per record id, over the four records in one release file."""
    sound = tablecloth_record(products, "v3_sample_0001")
    # Defects: the clarification's material stated in the query; a query colour the target does not have.
    leaky = tablecloth_record(products, "v3_sample_0002")
    leaky["user_query"] = "I'm looking for a pink polyester blend tablecloth that is round."
    leaky["rubrics"].insert(1, query_rubric("r6", "attribute_match", "details.Color", "Pink", "pink"))
    # Defects: the reference's persona negative that keeps `expected_value: []` for good (§7.1), a slot linked to
    # no rubric, and a noise field outside the release's own sixteen.
    broken = tablecloth_record(products, "v3_sample_0003")
    broken["rubrics"][1] = hidden_rubric("r3", "negative_attribute", "details.Color", [], "persona",
                                         "Avoid other colors than the product's own.")
    broken["user_persona"]["product_requirements"] = {"avoid_preferences": []}
    broken["user_persona"]["shopping_habits"] = {"budget_sensitivity": "medium"}
    broken["clarification_script"]["clarification_slots"][0]["linked_rubric_ids"] = ["r9"]
    folder = tmp_path_factory.mktemp("release")
    path = folder / "benchmark.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (sound, leaky, broken, pillow_covers_record(products))))
    out = folder / "findings.jsonl"
    result = runner.invoke(app, ["validate", str(path), "--catalog", str(sample_catalog.path), "--out", str(out)])
    assert result.exit_code == 1, result.output  # two records have defects
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    by_id: dict[str, list[dict[str, Any]]] = {f"v3_sample_000{k}": [] for k in range(1, 5)}
    for row in rows:
        if row["severity"] == "error":
            by_id[row["task_id"]].append(row)
    return by_id


def test_sound_release_records_pass(findings):
    assert findings["v3_sample_0001"] == []
    assert findings["v3_sample_0004"] == []


def test_a_hidden_value_in_the_query_and_a_rubric_the_target_fails_are_each_reported(findings):
    reasons = sorted((f["reason"], json.dumps(f["evidence"])) for f in findings["v3_sample_0002"])
    assert [r for r, _ in reasons] == ["hidden_value_in_query", "target_fails_rubric"]
    assert '"rubric_id": "r4"' in reasons[0][1] and '"rubric_id": "r6"' in reasons[1][1]


def test_an_empty_negative_a_dangling_slot_and_off_list_noise_are_reported(findings):
    messages = [f"{f['reason']}: {f['message']}" for f in findings["v3_sample_0003"]]
    assert any(m.startswith("schema_invalid") and "rubrics[1].expected_value" in m for m in messages), messages
    assert any(m.startswith("task_invariant_broken") and "r9" in m for m in messages), messages
    assert any(m.startswith("persona_noise_not_whitelisted") and "budget_sensitivity" in m for m in messages)


def test_no_finding_comes_from_the_conversion_itself(findings):
    # What the release lacks (answer set, rubric lock) is computed, never reported as the record's defect.
    rows = [f for rows in findings.values() for f in rows]
    assert not [f for f in rows if f["reason"] in ("answer_set_missing_target", "rubric_lock_mismatch")]
    assert not [f for f in rows if "answer_set" in f["message"] or "user_id" in f["message"]]
    assert not [f for f in rows if f["reason"] == "persona_missing_requirement"]


def test_release_persona_keys_follow_the_reference_mapping():
    from ecombench.validation.validate import release_persona_key

    assert release_persona_key("details.Power Source", "attribute_match") == "power_source_preference"
    assert release_persona_key("details.Ink Color", "attribute_match") == "ink_color"
    assert release_persona_key("details.Color", "negative_attribute") == "avoid_preferences"
