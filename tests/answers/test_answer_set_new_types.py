"""Answer sets with negative_attribute, budget_match and review_opinion rubrics equal a brute-force
loop of the code checkers over every catalog product (validation/answer_set.py vs validation/checkers.py).

The rubric sets are the real ones of the full build's accepted tasks (tests/conftest.py: every intent, 100
candidates each, with the oracle check); each set is checked whole and each of its new-type rubrics alone (a lone
rubric matches many products, so differences show).
"""

from __future__ import annotations

import pytest

from ecombench.rubrics.checkers import check

NEW_TYPES = ("negative_attribute", "budget_match", "review_opinion")
MIN_TASKS = 4  # accepted tasks of each intent the full build must have; every one is checked


def brute_force(rubrics, products, table) -> list[str]:
    return sorted(p["parent_asin"] for p in products if all(check(r, p, table).satisfied for r in rubrics))


@pytest.fixture(scope="module")
def products(full_catalog):
    return full_catalog.all_reviewed_products()


def _tasks(full_build, intent):
    tasks = full_build.of(intent)
    assert len(tasks) >= MIN_TASKS, f"only {len(tasks)} accepted {intent} tasks"
    return tasks


@pytest.mark.parametrize("intent", ["negative_constraint", "coupon_budget", "review_driven"])
def test_answer_set_of_each_task_equals_brute_force(full_build, full_catalog, products, intent):
    diffs = []
    for task in _tasks(full_build, intent):
        fast = full_catalog.index.answer_set(task["rubrics"])
        slow = brute_force(task["rubrics"], products, full_catalog.table)
        if fast != slow:
            diffs.append((task["id"], sorted(set(fast) ^ set(slow))[:5]))
    assert diffs == []


@pytest.mark.parametrize("intent", ["negative_constraint", "coupon_budget", "review_driven"])
def test_answer_set_of_each_new_type_rubric_alone_equals_brute_force(full_build, full_catalog, products, intent):
    diffs, sizes = [], []
    for task in _tasks(full_build, intent):
        for r in (r for r in task["rubrics"] if r["type"] in NEW_TYPES):
            fast = full_catalog.index.answer_set([r])
            slow = brute_force([r], products, full_catalog.table)
            sizes.append(len(slow))
            if fast != slow:
                diffs.append((task["id"], r["id"], r["type"], len(fast), len(slow), sorted(set(fast) ^ set(slow))[:5]))
    assert sizes and max(sizes) > 1, "every lone rubric matched at most one product: the comparison proves little"
    assert diffs == []


def test_the_target_is_in_the_answer_set_of_its_review_rubrics(full_build, full_catalog):
    for task in _tasks(full_build, "review_driven"):
        rubrics = [r for r in task["rubrics"] if r["type"] == "review_opinion"]
        assert task["target_product"]["parent_asin"] in full_catalog.index.answer_set(rubrics), task["id"]
