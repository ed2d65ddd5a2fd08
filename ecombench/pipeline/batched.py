"""A batch's candidates built side by side, their catalog-wide questions answered together by partition passes.

With `BuildConfig.answer_sets = "partitioned"` no candidate holds the catalog index. Each candidate of a batch
runs stages 2-7 on its own thread against a `BatchingCatalog`: every question it asks (answer set, support,
product rows) is queued and the thread waits; once every live candidate waits or has finished, one pass of
`ecombench.answers.partitioned.PartitionedCatalog` answers all queued questions and wakes them. Every answer is exactly
what the whole-catalog `CatalogIndex` gives, so each candidate's outcome, and the batch's results in candidate
order, are those of the index build however the threads interleave.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ecombench.answers.partitioned import (
    PartitionedCatalog,
    Question,
    answer_set_question,
    first_products_question,
    products_question,
    support_question,
    within_question,
)
from ecombench.pipeline.candidate import BuildContext, CandidateResult
from ecombench.rubrics import RubricLike
from ecombench.tables.fields import FieldTable


class _Slot:
    """Where a waiting thread's answers land."""

    __slots__ = ("answers", "done")

    def __init__(self) -> None:
        self.answers: list[Any] = []
        self.done = False


class QuestionBatcher:
    """Collects the questions of candidate threads; answers them in one pass once every live thread waits.

    The thread whose question (or whose end) completes the round runs the pass itself, holding the lock while
    every other live thread waits, so no extra thread and no timeout is involved. Threads join in groups
    (`join`: a batch's candidates), so the batches a build runs side by side share rounds: a build's passes
    are about the longest chain of questions one candidate asks, not that times its batches.

    Args:
        engine: the partition engine that answers a round's questions.
        threads: candidate threads that will ask (each must call `finished` once at its end); more may `join`.
    """

    def __init__(self, engine: PartitionedCatalog, threads: int = 0):
        self.engine, self.live = engine, threads
        self._cond = threading.Condition()
        self._pending: list[tuple[list[Question], _Slot]] = []
        self.rounds = 0
        self.asked = 0

    def join(self, threads: int) -> None:
        """`threads` more candidate threads will ask (and call `finished`)."""
        with self._cond:
            self.live += threads

    def ask(self, question: Question) -> Any:
        """Wait for the answer to `question` (answered with every other waiting thread's questions).

        Returns:
            The answer, or the exception to raise in the asking thread (the ValueError the whole-catalog
            index would raise, or what made the pass fail).
        """
        return self.ask_many([question])[0]

    def ask_many(self, questions: Sequence[Question]) -> list[Any]:
        """Wait for the answers to several questions at once (one round for all of them); see `ask`."""
        known = [self.engine.cached_support(q) for q in questions]
        if all(k is not None for k in known):  # support counts some round already merged: no need to wait
            return known
        slot = _Slot()
        with self._cond:
            self.asked += len(questions)
            self._pending.append((list(questions), slot))
            self._answer_if_all_wait()
            while not slot.done:
                self._cond.wait()
        return slot.answers

    def finished(self) -> None:
        """A candidate thread ended: it asks no more; the others may now all be waiting."""
        with self._cond:
            self.live -= 1
            self._answer_if_all_wait()

    def _answer_if_all_wait(self) -> None:
        if not self._pending or len(self._pending) < self.live:
            return
        pending, self._pending = self._pending, []
        flat = [q for questions, _ in pending for q in questions]
        try:
            answers = self.engine.answer(flat)
        except BaseException as exc:  # noqa: BLE001 - a failed pass fails every waiting question, never hangs them
            answers = [exc] * len(flat)
        self.rounds += 1
        at = 0
        for questions, slot in pending:
            slot.answers, slot.done = answers[at:at + len(questions)], True
            at += len(questions)
        self._cond.notify_all()


_SHARED_LOCK = threading.Lock()


def shared_batcher(engine: PartitionedCatalog) -> QuestionBatcher:
    """The one QuestionBatcher of `engine` that every batch of a build joins (made on first use, kept on the engine).

    Kept as `engine.batcher`, so it lives exactly as long as the build's engine.
    """
    with _SHARED_LOCK:
        batcher = engine.batcher
        if not isinstance(batcher, QuestionBatcher):
            batcher = engine.batcher = QuestionBatcher(engine)
        return batcher


class BatchingCatalog:
    """The catalog as one candidate thread sees it (`ecombench.answers.index.AnswerSets`): each call waits its round.

    Args:
        batcher: the batch's question batcher.
        table: the field table.
    """

    def __init__(self, batcher: QuestionBatcher, table: FieldTable):
        self.batcher, self.table = batcher, table

    def _ask(self, question: Question) -> Any:
        return self._ask_many([question])[0]

    def _ask_many(self, questions: Sequence[Question]) -> list[Any]:
        answers = self.batcher.ask_many(questions)
        failed = next((a for a in answers if isinstance(a, BaseException)), None)
        if failed is not None:
            raise failed
        return answers

    def answer_set(self, rubrics: Sequence[RubricLike] | Sequence[dict[str, Any]],
                   limit: int | None = None) -> list[str]:
        """`CatalogIndex.answer_set`, answered by the next partition pass."""
        return self._ask(answer_set_question(rubrics, limit))

    def support(self, rubric: RubricLike | dict[str, Any]) -> int:
        """`CatalogIndex.support`, answered by the next partition pass (or at once when already counted)."""
        return self._ask(support_question(rubric))

    def products_of(self, asins: Iterable[str]) -> list[dict[str, Any]]:
        """`CatalogIndex.products_of`, answered by the next partition pass."""
        return self._ask(products_question(asins))

    def first_products(self, n: int) -> list[str]:
        """`CatalogIndex.first_products`, answered by the next partition pass."""
        return self._ask(first_products_question(n))

    def answer_sets_within(self, rubric_sets: Sequence[Sequence[RubricLike] | Sequence[dict[str, Any]]],
                           asins: Iterable[str]) -> list[list[str]]:
        """`CatalogIndex.answer_sets_within`, answered by the next partition pass."""
        return self._ask(within_question(rubric_sets, asins))

    def supports(self, rubrics: Sequence[RubricLike] | Sequence[dict[str, Any]]) -> list[int]:
        """`CatalogIndex.supports`: every count answered by the same (next) partition pass."""
        return self._ask_many([support_question(r) for r in rubrics])

    def answer_sets(self, rubric_sets: Sequence[Sequence[RubricLike] | Sequence[dict[str, Any]]],
                    limit: int | None = None) -> list[list[str]]:
        """`CatalogIndex.answer_sets`: every answer set by the same (next) partition pass."""
        return self._ask_many([answer_set_question(rs, limit) for rs in rubric_sets])


def build_batched(products: list[dict[str, Any]], intent: str, ctx: BuildContext, engine: PartitionedCatalog,
                  build: Callable[[dict[str, Any], str, BuildContext], CandidateResult],
                  stop: Callable[[], bool] = lambda: False) -> tuple[list[CandidateResult], dict[str, int]]:
    """`build(product, intent, ctx)` for every product of a batch, each on its own thread, answers by `engine`.

    Args:
        products: the batch's candidates (product dicts, with reviews when loaded).
        intent: their intent.
        ctx: the build context (its `index` is replaced by each thread's `BatchingCatalog`).
        engine: the partition engine.
        build: `ecombench.pipeline.candidate.build_candidate` (or a stand-in with its signature).
        stop: checked before the threads start; True builds nothing and returns no results.

    Returns:
        (results in the products' order, {"rounds": partition passes, "questions": questions asked}; both
        counted while the batch ran, so they include the rounds and questions of batches beside it).

    Raises:
        The first exception a candidate raised (in candidate order), after every thread has ended; or what
        starting a thread raised, after the started ones have ended (the others count as finished, so no
        other batch waits for them).
    """
    if stop() or not products:
        return [], {"rounds": 0, "questions": 0}
    batcher = shared_batcher(engine)  # batches running side by side share its rounds
    rounds, asked = batcher.rounds, batcher.asked
    local = dataclasses.replace(ctx, index=BatchingCatalog(batcher, ctx.table))
    results: list[CandidateResult | None] = [None] * len(products)
    errors: list[BaseException | None] = [None] * len(products)

    def run(i: int) -> None:
        try:
            results[i] = build(products[i], intent, local)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread below
            errors[i] = exc
        finally:
            batcher.finished()

    threads = [threading.Thread(target=run, args=(i,), name=f"candidate-{i}", daemon=True)
               for i in range(len(products))]
    batcher.join(len(threads))
    started = 0
    try:
        for t in threads:
            t.start()
            started += 1
    except BaseException:
        for _ in range(len(threads) - started):  # a thread that could not start asks nothing: never wait for it
            batcher.finished()
        for t in threads[:started]:
            t.join()
        raise
    for t in threads:
        t.join()
    failed = next((e for e in errors if e is not None), None)
    if failed is not None:
        raise failed
    counts = {"rounds": batcher.rounds - rounds, "questions": batcher.asked - asked}
    return [r for r in results if r is not None], counts
