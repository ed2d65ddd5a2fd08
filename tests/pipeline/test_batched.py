"""A build whose candidates ask partition passes instead of the index publishes the same bytes (issue #17).

Both builds run in this process over every shared file (all eight intents, 20 candidates each), once with
the whole-catalog index and once with `answer_sets="partitioned"` over partitions of 1,000 products (eight,
the last shorter), each batch's candidates on their own threads, every batch sharing the passes.
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
from pathlib import Path

import pytest

import ecombench.pipeline.build
from ecombench.answers.partitioned import PartitionedCatalog, support_question
from ecombench.pipeline.batched import QuestionBatcher, build_batched, shared_batcher
from ecombench.pipeline.build import build_split
from ecombench.pipeline.config import BuildConfig
from ecombench.tables.intents import load_intents
from ecombench.validation.catalog_stats import write_catalog_stats


@pytest.fixture(scope="module")
def both_builds(full_catalog, tmp_path_factory, artifacts):
    config = BuildConfig(catalog=str(full_catalog.path), intents=list(load_intents()), candidates_per_intent=20,
                         min_hidden_division=1, resume=False)
    root = tmp_path_factory.mktemp("splits")
    index = build_split(config, "index", root=root, artifacts=artifacts)
    # The partitioned build reads a copy of the snapshot with its statistics stored (as `ecombench ingest`
    # leaves it), so it plans from the products a slice of 1,000 rows at a time: it must never load them whole.
    copy = tmp_path_factory.mktemp("catalogs") / "all-with-stats"
    shutil.copytree(full_catalog.path, copy)
    write_catalog_stats(copy, full_catalog.table)

    def whole_table(path: Path) -> None:
        raise AssertionError(f"a partitioned build with stored statistics loaded all of {path}")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ecombench.pipeline.build, "load_snapshot", whole_table)
        partitioned = build_split(config.model_copy(update={"catalog": str(copy), "answer_sets": "partitioned",
                                                            "partition_rows": 1000}),
                                  "partitioned", root=root, artifacts=artifacts)
    return index, partitioned


def test_a_partitioned_build_writes_the_index_builds_tasks_and_rejections_byte_for_byte(both_builds):
    index, partitioned = both_builds
    for name in ("tasks.jsonl", "rejections.jsonl"):
        assert (partitioned.path / name).read_bytes() == (index.path / name).read_bytes(), name
    assert index.manifest["counts"]["tasks"] > 5
    assert index.manifest["config_hash"] == partitioned.manifest["config_hash"]  # where answers come from: runtime
    assert partitioned.manifest["config"]["answer_sets"] == "partitioned"


def test_the_batcher_answers_a_round_only_when_every_thread_waits(full_catalog):
    engine = PartitionedCatalog(full_catalog.path, full_catalog.table, partition_rows=3000)
    engine.facts_path = full_catalog.facts_path  # the facts the index reads
    batcher = QuestionBatcher(engine, threads=3)
    reported: list[tuple[int, int]] = []
    engine.on_pass = lambda passes, questions, seconds: reported.append((passes, questions))
    values = ["Black", "White", "Blue"]
    got: dict[str, int] = {}

    def ask(value: str) -> None:
        got[value] = batcher.ask(support_question({"type": "attribute_match", "field": "details.Color",
                                                   "expected_value": value}))
        batcher.finished()

    threads = [threading.Thread(target=ask, args=(v,)) for v in values]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert batcher.rounds == 1 and engine.stats["passes"] == 1 and engine.stats["questions"] == 3
    assert reported == [(1, 3)]  # the build's progress line: pass 1 answered three distinct questions
    assert got == {v: full_catalog.index.support({"type": "attribute_match", "field": "details.Color",
                                                  "expected_value": v}) for v in values}


@dataclasses.dataclass
class _Context:
    index: object
    table: object


def test_a_candidate_thread_that_cannot_start_leaves_no_batch_waiting(full_catalog, monkeypatch):
    # Three candidates join the shared batcher; the second thread fails to start. The first one's question is
    # still answered (the two that never ran count as finished), and the batcher is left with no live thread,
    # so the next batch's rounds are not held up.
    engine = PartitionedCatalog(full_catalog.path, full_catalog.table, partition_rows=3000)
    engine.facts_path = full_catalog.facts_path  # the facts the index reads
    black = {"type": "attribute_match", "field": "details.Color", "expected_value": "Black"}
    got: list[int] = []
    real_start, calls = threading.Thread.start, []

    def start(self: threading.Thread) -> None:
        calls.append(self.name)
        if len(calls) == 2:
            raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        build_batched([{}, {}, {}], "product_search", _Context(None, full_catalog.table), engine,  # type: ignore[arg-type]
                      lambda product, intent, ctx: got.append(ctx.index.support(black)))  # type: ignore[arg-type,func-returns-value]
    assert got == [full_catalog.index.support(black)]
    assert shared_batcher(engine).live == 0 and engine.stats["passes"] == 1
