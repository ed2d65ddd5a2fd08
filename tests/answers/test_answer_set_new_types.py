"""Answer sets with negative_attribute, budget_match and review_opinion rubrics equal a brute-force
loop of the code checkers over every catalog product (validation/answer_set.py vs validation/checkers.py).

The rubric sets are the real ones of the full build's accepted tasks; each set is checked whole and
each of its new-type rubrics alone (a lone rubric matches many products, so differences show).
"""

from __future__ import annotations

import pytest

from ecombench.rubrics.checkers import check

NEW_TYPES = ("negative_attribute", "budget_match", "review_opinion")
TASKS_PER_INTENT = 10


def brute_force(rubrics, products, table) -> list[str]:
    return sorted(p["parent_asin"] for p in products if all(check(r, p, table).satisfied for r in rubrics))


@pytest.fixture(scope="module")
def products(full_catalog):
    return full_catalog.all_reviewed_products()


@pytest.fixture(scope="module")
def full_build(full_catalog, tmp_path_factory, artifacts):
    """The three intents of the new rubric types over the full snapshot, issue #12's quality rules off.

    The answer-set machinery is under test here, not task quality: with every hidden source needed no
    review_driven task is accepted (its opinions single out the target), and few coupon_budget ones.
    """
    from ecombench.pipeline.build import build_split
    from ecombench.pipeline.config import BuildConfig
    from ecombench.splits.inspect import load_version
    from tests.conftest import FullBuild

    config = BuildConfig(catalog=str(full_catalog.path), intents=["negative_constraint", "coupon_budget",
                                                                  "review_driven"],
                         candidates_per_intent=60, min_hidden_answer_set=1, min_hidden_division=1, min_value_support=1)
    version = load_version(build_split(config, "types", root=tmp_path_factory.mktemp("splits"),
                                       artifacts=artifacts).path)
    return FullBuild(path=version.path, manifest=version.manifest, tasks=version.tasks, rejections=version.rejections)


def _tasks(full_build, intent):
    tasks = full_build.of(intent)
    assert len(tasks) >= TASKS_PER_INTENT, f"only {len(tasks)} accepted {intent} tasks"
    return tasks[:TASKS_PER_INTENT]


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
