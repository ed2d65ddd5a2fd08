"""Answer sets: the vectorised CatalogIndex equals a brute-force loop with the checkers (validation/answer_set.py).

Rubric sets are the real ones of tasks built from sampled real products.
"""

from __future__ import annotations

import pytest

from ecombench.rubrics.checkers import check

N_TASKS = 19


@pytest.fixture(scope="module")
def tasks(accepted_tasks):
    return accepted_tasks[:N_TASKS]


def brute_force(rubrics, catalog):
    return sorted(p["parent_asin"] for p in catalog.all_products()
                  if all(check(r, p, catalog.table).satisfied for r in rubrics))


def test_answer_set_equals_brute_force_for_real_rubric_sets(tasks, rich_catalog):
    assert len(tasks) == N_TASKS
    mismatches = [(t["id"], rich_catalog.index.answer_set(t["rubrics"]), brute_force(t["rubrics"], rich_catalog))
                  for t in tasks]
    assert [m for m in mismatches if m[1] != m[2]] == []


def test_answer_set_equals_brute_force_for_the_query_rubrics_alone(tasks, rich_catalog):
    # Query rubrics alone match many more products, so this exercises the filters on large sets.
    sizes, mismatches = [], []
    for t in tasks:
        q = [r for r in t["rubrics"] if r["info_source"] == "query"]
        fast, slow = rich_catalog.index.answer_set(q), brute_force(q, rich_catalog)
        sizes.append(len(slow))
        if fast != slow:
            mismatches.append((t["id"], sorted(set(fast) ^ set(slow))[:5]))
    assert mismatches == []
    assert max(sizes) > 1


def test_answer_set_equals_brute_force_for_each_single_rubric(tasks, rich_catalog):
    mismatches = []
    for t in tasks[:10]:
        for r in t["rubrics"]:
            fast, slow = rich_catalog.index.answer_set([r]), brute_force([r], rich_catalog)
            if fast != slow:
                mismatches.append((t["id"], r["id"], r["field"], sorted(set(fast) ^ set(slow))[:5]))
    assert mismatches == []


def test_answer_set_always_contains_the_target(accepted_tasks, rich_catalog):
    missing = [t["id"] for t in accepted_tasks
               if t["target_product"]["parent_asin"] not in rich_catalog.index.answer_set(t["rubrics"])]
    assert missing == []


def test_task_answer_set_is_the_index_answer_set(accepted_tasks, rich_catalog):
    assert all(t["answer_set"] == rich_catalog.index.answer_set(t["rubrics"]) for t in accepted_tasks)


def test_review_opinions_need_an_index_built_with_reviews(tasks, rich_catalog):
    t = tasks[0]
    extra = {"id": "r99", "type": "review_opinion", "field": "review", "expected_value": "sturdy",
             "info_source": "query", "description": "", "source_review_ids": []}
    with pytest.raises(ValueError, match="built with reviews"):
        rich_catalog.index.answer_set(t["rubrics"] + [extra])


def test_answer_set_is_sorted(tasks, rich_catalog):
    q = [r for r in tasks[0]["rubrics"] if r["type"] == "numeric_range"]
    answers = rich_catalog.index.answer_set(q)
    assert answers == sorted(answers) and len(answers) > 1


def test_the_postings_path_and_the_vectorised_path_agree(accepted_tasks, rich_catalog):
    for t in accepted_tasks:
        assert rich_catalog.index.answer_set(t["rubrics"]) == rich_catalog.index.answer_set_vectorised(t["rubrics"])
        query = [r for r in t["rubrics"] if r["info_source"] == "query"]
        assert rich_catalog.index.answer_set(query) == rich_catalog.index.answer_set_vectorised(query), t["id"]


def test_a_limited_answer_set_stops_at_the_limit_and_is_whole_below_it(tasks, rich_catalog):
    # Query rubrics alone and single rubrics leave sets of every size; a limit returns `limit` of the
    # true members when more pass, and the whole set when fewer do.
    rubric_sets = [[r for r in t["rubrics"] if r["info_source"] == "query"] for t in tasks]
    rubric_sets += [[r] for t in tasks for r in t["rubrics"]]
    seen_cut = seen_whole = 0
    for rubrics in rubric_sets:
        full = rich_catalog.index.answer_set(rubrics)
        for limit in (1, 3, 40):
            part = rich_catalog.index.answer_set(rubrics, limit=limit)
            assert part == sorted(part) and set(part) <= set(full)
            assert len(part) == min(limit, len(full))
            seen_cut += len(full) > limit
            seen_whole += len(full) <= limit
    assert seen_cut and seen_whole


def test_support_counts_a_numeric_bound_like_the_answer_set(tasks, rich_catalog):
    bounds = [r for t in tasks for r in t["rubrics"]
              if r["type"] == "numeric_range" and r["field"] in rich_catalog.index.numeric]
    assert bounds
    for r in bounds:
        assert rich_catalog.index.support(r) == len(rich_catalog.index.answer_set([r]))
