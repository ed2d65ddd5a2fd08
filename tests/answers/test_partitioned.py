"""Partition passes answer every question a real build asks exactly as the whole-catalog index does (issue #17).

The questions are recorded from stages 2-7 of a real build over every shared file (all eight intents, so
review opinions, exclusions and budgets are among them), by wrapping the build's `CatalogIndex`; the
partitioned engine then answers them all in one batch, as one partition and as seven uneven ones.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ecombench.answers.index import CatalogIndex
from ecombench.answers.partitioned import (
    PartitionedCatalog,
    Question,
    answer_set_question,
    first_products_question,
    partition_bounds,
    products_question,
    support_question,
    within_question,
)
from ecombench.rubrics import as_spec


class RecordingIndex:
    """A CatalogIndex that records every catalog-wide question asked of it, with its answer."""

    def __init__(self, index: CatalogIndex):
        self.index, self.table = index, index.table
        self.asked: list[tuple[Question, Any]] = []

    def answer_set(self, rubrics: Any, limit: int | None = None) -> list[str]:
        answer = self.index.answer_set(rubrics, limit)
        self.asked.append((answer_set_question(rubrics, limit), answer))
        return answer

    def support(self, rubric: Any) -> int:
        answer = self.index.support(rubric)
        self.asked.append((support_question(rubric), answer))
        return answer

    def products_of(self, asins: Any) -> list[dict[str, Any]]:
        asins = list(asins)
        answer = self.index.products_of(asins)
        self.asked.append((products_question(asins), answer))
        return answer

    def first_products(self, n: int) -> list[str]:
        answer = self.index.first_products(n)
        self.asked.append((first_products_question(n), answer))
        return answer

    def answer_sets_within(self, rubric_sets: Any, asins: Any) -> list[list[str]]:
        rubric_sets, asins = [list(s) for s in rubric_sets], list(asins)
        answer = self.index.answer_sets_within(rubric_sets, asins)
        self.asked.append((within_question(rubric_sets, asins), answer))
        return answer

    def supports(self, rubrics: Any) -> list[int]:
        return [self.support(r) for r in rubrics]

    def answer_sets(self, rubric_sets: Any, limit: int | None = None) -> list[list[str]]:
        return [self.answer_set(rs, limit) for rs in rubric_sets]


@pytest.fixture(scope="module")
def recorded(full_catalog, artifacts) -> list[tuple[Question, Any]]:
    """Every question stages 2-7 asked for 10 candidates of each intent over the full snapshot, with the answers."""
    from ecombench.pipeline.build import batches_of, plan_build
    from ecombench.pipeline.candidate import build_candidate
    from ecombench.pipeline.config import BuildConfig
    from ecombench.tables.intents import load_intents

    config = BuildConfig(catalog=str(full_catalog.path), intents=list(load_intents()), candidates_per_intent=10,
                         min_hidden_division=1)
    ctx, products, sampling, _ = plan_build(config, artifacts)
    recorder = RecordingIndex(full_catalog.index)  # the same products in the same order as the build's own
    ctx = dataclasses.replace(ctx, index=recorder)  # type: ignore[arg-type]
    for intent, batch in batches_of(products, sampling, 50, ctx.reviews):
        for product in batch:
            build_candidate(product, intent, ctx)
    return recorder.asked


def _uneven(n: int) -> list[tuple[int, int]]:
    """Seven partitions of very different sizes (one of a single row) covering n rows."""
    cuts = [0, 1, n // 40, n // 5, n // 2 - 3, n // 2 + 250, (9 * n) // 10, n]
    return list(zip(cuts, cuts[1:]))


def test_a_real_build_asks_every_kind_of_question(recorded):
    kinds = {q.kind for q, _ in recorded}
    assert {"answer_set", "support", "products_of", "within"} <= kinds
    assert any(q.limit is not None for q, _ in recorded if q.kind == "answer_set")
    assert any(r.type == "review_opinion" for q, _ in recorded for r in q.rubrics)
    assert len(recorded) > 1000


@pytest.mark.parametrize("layout", ["one", "seven_uneven"])
def test_partition_passes_answer_every_recorded_question_as_the_index_does(recorded, full_catalog, layout):
    n = full_catalog.products.height
    bounds = [(0, n)] if layout == "one" else _uneven(n)
    engine = PartitionedCatalog(full_catalog.path, full_catalog.table, with_reviews=True, bounds=bounds)
    engine.facts_path = full_catalog.facts_path
    questions = [q for q, _ in recorded]
    answers = engine.answer(questions)
    wrong = [(q.kind, q.key[:200]) for (q, expected), got in zip(recorded, answers) if got != expected]
    assert not wrong, f"{len(wrong)} of {len(recorded)} answers differ, e.g. {wrong[:3]}"
    assert engine.stats["passes"] == 1 and engine.stats["partition_loads"] == len(bounds)


def test_partitions_dropped_between_passes_give_the_same_answers(recorded, full_catalog):
    # --partitions-kept 1: only the last partition used stays in memory; the others are spilled to disk once
    # indexed and read back on each later pass, never indexed again.
    engine = PartitionedCatalog(full_catalog.path, full_catalog.table, with_reviews=True,
                                bounds=_uneven(full_catalog.products.height), keep=1)
    engine.facts_path = full_catalog.facts_path
    thirds = [recorded[k::3] for k in range(3)]
    for part in thirds:
        answers = engine.answer([q for q, _ in part])
        assert answers == [expected for _, expected in part]
    n = engine.n_partitions
    assert engine.stats["passes"] == 3 and engine.stats["partition_loads"] == n
    assert engine.stats["partition_reads"] == 2 * n
    assert len(engine._parts) == 1
    assert len(list(engine._parts.spill_dir.iterdir())) == n  # type: ignore[union-attr]


def test_support_counts_equal_the_index_where_it_approximates_a_common_value(full_catalog, recorded, monkeypatch):
    # On 7,300 products no value passes 5,000 rows; with the bound at 40 many do, in some partitions only partly.
    supports = [q for q, _ in recorded if q.kind == "support"]
    saved = dict(full_catalog.index.support_cache)
    monkeypatch.setattr(CatalogIndex, "SUPPORT_EXACT_ROWS", 40)
    full_catalog.index.support_cache.clear()
    try:
        expected = [full_catalog.index.support(q.rubrics[0]) for q in supports]
    finally:
        full_catalog.index.support_cache.clear()
        full_catalog.index.support_cache.update(saved)
    engine = PartitionedCatalog(full_catalog.path, full_catalog.table, with_reviews=True,
                                bounds=_uneven(full_catalog.products.height))
    engine.facts_path = full_catalog.facts_path
    assert engine.answer(supports) == expected
    counted = [e for q, e in zip(supports, expected) if e > 40]
    assert counted and engine.stats["exact_rounds"] == 1  # some totals within 40 needed every partition's count


def test_a_limit_applies_after_the_merge(full_catalog):
    rubric = {"type": "entity_match", "field": "title", "expected_value": "case"}
    engine = PartitionedCatalog(full_catalog.path, full_catalog.table, partition_rows=500)
    everything = full_catalog.index.answer_set([rubric])
    engine.facts_path = full_catalog.facts_path
    assert len(everything) > 20 and engine.n_partitions == len(partition_bounds(full_catalog.products.height, 500))
    assert engine.answer_set([rubric]) == everything
    assert engine.answer_set([rubric], limit=7) == full_catalog.index.answer_set([rubric], limit=7)
    budget = {"type": "budget_match", "field": "price",
              "expected_value": {"max_total": 12, "voucher": {"scenario": "simple", "coupons": [
                  {"voucher_type": "shop", "threshold": 10, "discount_type": "fixed", "face_value": 2}]}}}
    assert engine.answer_set([budget], limit=5) == full_catalog.index.answer_set([as_spec(budget)], limit=5)


def test_review_questions_without_reviews_raise_as_the_index_does(full_catalog):
    engine = PartitionedCatalog(full_catalog.path, full_catalog.table, partition_rows=4000)
    engine.facts_path = full_catalog.facts_path
    opinion = {"type": "review_opinion", "field": "review", "expected_value": "easy to use"}
    with pytest.raises(ValueError, match="need a CatalogIndex built with reviews"):
        engine.answer_set([opinion])


def test_the_first_products_run_across_partitions_in_row_order(full_catalog):
    engine = PartitionedCatalog(full_catalog.path, full_catalog.table, bounds=_uneven(full_catalog.products.height))
    engine.facts_path = full_catalog.facts_path
    assert engine.first_products(5) == full_catalog.index.first_products(5)  # the first partition holds one row
    assert len(engine.first_products(10**6)) == full_catalog.products.height


def test_answer_sets_within_a_universe_are_the_whole_answer_sets_cut_to_it(recorded, full_catalog):
    # Stage 3's masks (ecombench.validation.semantic.answer_set_masks) ask each feature's answer set only within the
    # universe; on every such question of the real build that equals the whole-catalog answer set cut to it.
    within = [(q, got) for q, got in recorded if q.kind == "within"]
    assert len(within) > 50 and any(len(q.asins) > 100 for q, _ in within)
    for q, got in within:
        universe = set(q.asins)
        assert got == [sorted(universe.intersection(full_catalog.index.answer_set(list(s)))) for s in q.rubric_sets]
    assert any(0 < len(a) < len(q.asins) for q, got in within for a in got)  # the cut is not trivial


def test_a_bounded_process_outside_dask_spills_to_a_temporary_directory(recorded, full_catalog, monkeypatch):
    # What a Dask task runs (answer_on_partition), here in a plain process with keep=1: the partition it drops is
    # pickled to a temporary directory and read back, and the answers stay the index's.
    import ecombench.answers.partitioned as partitioned

    monkeypatch.setattr(partitioned, "_PROCESS_CACHE", None)
    n = full_catalog.products.height
    bounds = [(0, n // 2), (n // 2, n)]
    questions = [q for q, _ in recorded if q.kind == "answer_set"][:40]
    engine = PartitionedCatalog(full_catalog.path, full_catalog.table, with_reviews=True, bounds=bounds)
    expected = engine.answer(questions)
    for _ in range(2):
        partials = [partitioned.answer_on_partition(str(full_catalog.path), "fp", full_catalog.table, a, b, True,
                                                    questions, 0, keep=1) for a, b in bounds]
        assert [partitioned.merge_answer(q, [p[j] for p in partials]) for j, q in enumerate(questions)] == expected
    cache = partitioned._PROCESS_CACHE
    assert cache is not None and cache.loads == 2 and cache.reads == 2 and len(cache) == 1
    assert cache.spill_dir is not None and len(list(cache.spill_dir.glob("*.pickle"))) == 2


@pytest.mark.parametrize("writable", [True, False])
def test_a_dropped_partition_is_read_back_or_else_indexed_again(tmp_path, writable):
    # keep=1: asking a, b, a drops a once. Spilled, it is read back; when the spill directory cannot be made (a
    # full disk, a file in the way) it is just indexed again: the pass never fails, and no partial file stays.
    from ecombench.answers.partitioned import PartitionCache

    blocker = tmp_path / "in-the-way"
    blocker.write_text("")
    cache = PartitionCache(keep=1, spill_dir=(tmp_path / "spill") if writable else blocker / "spill")
    made: list[str] = []

    def load(key: str) -> Any:
        return lambda: made.append(key) or {"partition": key}

    for key in ("a", "b", "a"):
        assert cache.get(key, load(key)) == {"partition": key}
    assert made == (["a", "b"] if writable else ["a", "b", "a"])
    assert (cache.loads, cache.reads) == ((2, 1) if writable else (3, 0))
    assert not list(tmp_path.rglob("*.tmp"))
