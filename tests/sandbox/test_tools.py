"""The ten tools of the sandbox over real snapshots (reference §11.1, with the §15 fixes)."""

from __future__ import annotations

import pytest

from ecombench.catalog.facts import page_values
from ecombench.sandbox.catalog import search_terms
from ecombench.sandbox.tools import (
    MAX_IDS,
    NO_MORE_TURNS,
    PAGE_SIZE,
    TOO_LONG,
    TOOL_NAMES,
    TOOL_SCHEMAS,
    Episode,
    EpisodeLimits,
    EpisodeOver,
    safe_eval,
)
from ecombench.text import normalize, tokens
from tests.sandbox.conftest import first_task


def _episode(catalog, task, **limits):
    return Episode(catalog, task, EpisodeLimits(**limits))


def _text(row):
    return " ".join([row["title"] or "", *(row["features"] or []),
                     *(f"{d['key']} {d['value']}" for d in row["details"])])


def test_ten_tools_each_with_an_openai_function_schema():
    assert len(TOOL_NAMES) == 10 and len(set(TOOL_NAMES)) == 10
    for tool in TOOL_SCHEMAS:
        assert tool["type"] == "function"
        assert tool["function"]["parameters"]["type"] == "object"
        assert tool["function"]["description"]


def test_search_reports_the_true_total_and_pages_through_every_hit(sample_sandbox, built_tasks):
    task = built_tasks[0]
    query = "wireless bluetooth mouse"
    terms = set(search_terms(query))
    rows = sample_sandbox.rows.values()
    holding = {r["parent_asin"] for r in rows if terms & set(tokens(_text(r)))}
    holding_all = {r["parent_asin"] for r in rows if terms <= set(tokens(_text(r)))}
    ep = _episode(sample_sandbox, task)
    first = ep.call("search_products", {"query": query})
    assert first["total_found"] == len(holding) > PAGE_SIZE
    assert first["total_matching_all_terms"] == len(holding_all) > 0
    seen = []
    for page in range(first["total_found"] // PAGE_SIZE + 1):
        seen += [p["product_id"] for p in ep.call("search_products", {"query": query, "page": page})["products"]]
    assert len(seen) == len(set(seen)) == len(holding)
    assert set(seen) == holding
    assert set(seen[:len(holding_all)]) == holding_all  # products holding every term come first


def test_search_finds_a_real_product_by_words_of_its_details_not_only_its_title(sandbox_catalog, built_tasks):
    task = first_task(built_tasks, lambda t: any(r["type"] == "attribute_match" and not any(
        w in tokens(t["target_product"]["title"]) for w in tokens(r["expected_value"])) for r in t["rubrics"]))
    attr = next(r for r in task["rubrics"] if r["type"] == "attribute_match"
                and not any(w in tokens(task["target_product"]["title"]) for w in tokens(r["expected_value"])))
    query = f"{task['target_product']['title']} {attr['expected_value']}"
    found = _episode(sandbox_catalog, task).call("search_products", {"query": query})
    assert found["products"][0]["product_id"] == task["target_product"]["parent_asin"]


def test_filter_by_attribute_accepts_a_raw_alias_key_and_the_field_label(sandbox_catalog, built_tasks):
    table = sandbox_catalog.table
    def aliased(r, d):  # a label under a raw alias key whose value the page states (the filter reads the facts)
        return (d["raw_key"] != d["key"] and d["key"] in table.fields and table.fields[d["key"]].kind == "detail"
                and d["value"].strip() and d["value"] in page_values(r, table.fields[d["key"]]))
    row = next(r for _, r in sorted(sandbox_catalog.rows.items()) if any(aliased(r, d) for d in r["details"]))
    d = next(d for d in row["details"] if aliased(row, d))
    ep = _episode(sandbox_catalog, built_tasks[0])
    ids = [row["parent_asin"]]
    for name in (d["raw_key"], d["key"], table.fields[d["key"]].label):
        kept = ep.call("filter_by_attribute", {"product_ids": ids, "attribute_name": name,
                                                "attribute_value": d["value"]})
        assert kept["product_ids"] == ids and kept["attribute"] == d["key"], name
    wrong = ep.call("filter_by_attribute", {"product_ids": ids, "attribute_name": d["raw_key"],
                                             "attribute_value": "zzzz not a value"})
    assert wrong["product_ids"] == []


def test_filter_by_attribute_matches_another_spelling_from_the_value_alias_groups(sandbox_catalog, built_tasks):
    table = sandbox_catalog.table
    hit = None
    for asin, row in sorted(sandbox_catalog.rows.items()):
        for d in row["details"]:
            spec = table.fields.get(d["key"])
            if spec is None or spec.kind != "detail" or d["value"] not in page_values(row, spec):
                continue
            for spelling, group in table.value_aliases.items():
                others = [g for g in group if normalize(g) != spelling]
                if f" {spelling} " in f" {normalize(d['value'])} " and others and not any(
                        f" {normalize(o)} " in f" {normalize(d['value'])} " for o in others):
                    hit = (asin, d["key"], others[0])
                    break
            if hit:
                break
        if hit:
            break
    assert hit is not None, "no real product with a value from an alias group"
    asin, key, other_spelling = hit
    kept = _episode(sandbox_catalog, built_tasks[0]).call("filter_by_attribute", {
        "product_ids": [asin], "attribute_name": key, "attribute_value": other_spelling})
    assert kept["product_ids"] == [asin]


def test_product_details_show_canonical_details_and_unknown_ids_are_errors(sandbox_catalog, built_tasks):
    task = built_tasks[0]
    asin = task["target_product"]["parent_asin"]
    ep = _episode(sandbox_catalog, task)
    product = ep.call("get_product_details", {"product_id": asin})["product"]
    assert product["title"] == task["target_product"]["title"] and product["price"] == task["target_product"]["price"]
    for key, values in task["target_product"]["details"].items():
        # A rubric's field the page states in text only has no label: the task records [] for it.
        assert product["details"].get(key, []) == values
    for key, facts in task["target_product"]["facts"].items():
        assert all(f["value"] in product["page_states"].get(key, []) for f in facts), key
    assert "average_rating" not in product  # ratings come from get_product_review_stats, as in the paper
    assert "error" in ep.call("get_product_details", {"product_id": "NOT-AN-ASIN"})


def test_review_stats_are_the_snapshot_values_and_too_many_ids_is_an_error_not_a_truncation(
        sandbox_catalog, built_tasks):
    ids = sorted(sandbox_catalog.rows)[:MAX_IDS + 1]
    ep = _episode(sandbox_catalog, built_tasks[0])
    stats = ep.call("get_product_review_stats", {"product_ids": ids[:3]})["products"]
    assert [(s["average_rating"], s["rating_number"]) for s in stats] == [
        (sandbox_catalog.rows[a]["average_rating"], sandbox_catalog.rows[a]["rating_number"]) for a in ids[:3]]
    assert "error" in ep.call("get_product_review_stats", {"product_ids": ids})


def test_review_content_finds_the_review_an_opinion_came_from(sandbox_catalog, built_tasks):
    task = first_task(built_tasks, lambda t: any(r["type"] == "review_opinion" for r in t["rubrics"]))
    asin = task["target_product"]["parent_asin"]
    ep = _episode(sandbox_catalog, task)
    for r in (r for r in task["rubrics"] if r["type"] == "review_opinion"):
        hits = ep.call("get_review_content", {"product_id": asin, "query": r["expected_value"]})["reviews"]
        assert set(r["source_review_ids"]) & {h["review_id"] for h in hits}
        own = {rv["review_id"] for rv in sandbox_catalog.reviews[asin]}
        assert {h["review_id"] for h in hits} <= own  # only this product's reviews


def test_store_products_match_the_store_case_insensitively_with_the_true_total(sandbox_catalog, built_tasks):
    from collections import Counter

    store, n = Counter(r["store"] for r in sandbox_catalog.rows.values() if r["store"]).most_common(1)[0]
    assert n > PAGE_SIZE
    ep = _episode(sandbox_catalog, built_tasks[0])
    first = ep.call("get_store_products", {"store_name": store.upper()})
    second = ep.call("get_store_products", {"store_name": store, "page": 1})
    assert first["total_count"] == n
    ids = [p["product_id"] for p in first["products"] + second["products"]]
    assert len(set(ids)) == min(n, 2 * PAGE_SIZE)
    assert all(sandbox_catalog.rows[a]["store"] == store for a in ids)


def test_user_profile_is_the_tasks_hidden_persona(sandbox_catalog, built_tasks):
    task = built_tasks[0]
    assert _episode(sandbox_catalog, task).call("get_user_profile", {}) == {"profile": task["user_persona"]}


def test_ask_user_reveals_a_slot_on_its_canonical_question_and_logs_it(sandbox_catalog, built_tasks):
    from ecombench.validation.slots import canonical_question

    task = first_task(built_tasks, lambda t: t["clarification_script"]["clarification_slots"])
    slot = task["clarification_script"]["clarification_slots"][0]
    label = sandbox_catalog.table.by_rubric_field(slot["field"]).label
    ep = _episode(sandbox_catalog, task)
    reply = ep.call("ask_user", {"question": canonical_question(label)})
    assert slot["user_response"] in reply["user_response"]
    assert ep.revealed[0] == {"slot_id": slot["slot_id"], "turn": 1}
    other = ep.call("ask_user", {"question": "Is there anything else I should know?"})
    assert other["user_response"] == task["clarification_script"]["default_response"]


def test_ask_user_too_long_question_costs_no_turn_and_turns_run_out(sandbox_catalog, built_tasks):
    task = built_tasks[0]
    ep = _episode(sandbox_catalog, task, max_clarification_turns=2, max_question_chars=40)
    long = ep.call("ask_user", {"question": "x" * 41})
    assert long["user_response"] == TOO_LONG and long["turns_remaining"] == 2 and ep.turns == 0
    ep.call("ask_user", {"question": "Any colour?"})
    ep.call("ask_user", {"question": "Any size?"})
    assert ep.call("ask_user", {"question": "Any brand?"}) == {"user_response": NO_MORE_TURNS, "turns_remaining": 0}
    assert ep.turns == 2 and ep.counts["ask_user"] == 4


@pytest.mark.parametrize("expression, expected", [("59.99 - 10", 49.99), ("max(0, 100 - 15) * 0.9", 76.5),
                                                  ("round(19.999, 2)", 20.0), ("2 ** 10 // 3", 341),
                                                  ("sum([1, 2, 3.5])", 6.5)])
def test_calculate_does_arithmetic(expression, expected):
    assert safe_eval(expression) == expected


@pytest.mark.parametrize("expression", ["__import__('os').system('true')", "open('/etc/passwd')", "(1).__class__",
                                        "9 ** 9 ** 9", "[x for x in range(10)]", "lambda: 1", "a + 1"])
def test_calculate_refuses_anything_but_arithmetic(sandbox_catalog, built_tasks, expression):
    with pytest.raises(ValueError):
        safe_eval(expression)
    assert "error" in _episode(sandbox_catalog, built_tasks[0]).call("calculate", {"expression": expression})


def test_recommending_an_unknown_id_is_an_error_and_a_real_one_ends_the_episode(sandbox_catalog, built_tasks):
    task = built_tasks[0]
    ep = _episode(sandbox_catalog, task)
    assert "error" in ep.call("recommend_product", {"product_id": "B000NOTREAL", "reasoning": "x"})
    assert not ep.done
    ep.call("recommend_product", {"product_id": task["target_product"]["parent_asin"], "reasoning": "fits"})
    assert ep.done and ep.finished and ep.predicted_product_id == task["target_product"]["parent_asin"]
    with pytest.raises(EpisodeOver):
        ep.call("get_user_profile", {})


def test_the_tool_call_budget_ends_an_episode_unfinished_and_bad_calls_count(sandbox_catalog, built_tasks):
    ep = _episode(sandbox_catalog, built_tasks[0], max_tool_calls=4)
    assert "error" in ep.call("search_products", "{not json")
    assert "error" in ep.call("no_such_tool", {})
    assert "error" in ep.call("get_product_details", {})  # missing required argument
    ep.call("get_user_profile", {})
    assert ep.done and not ep.finished and ep.tool_calls == 4
    record = ep.record("test")
    assert record["predicted_product_id"] is None and [s["step"] for s in record["steps"]] == [1, 2, 3, 4]
