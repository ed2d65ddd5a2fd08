"""Catalog-wide questions answered by scanning the snapshot in partitions (DESIGN "Orchestration and scale").

A build asks the catalog a few kinds of question: answer sets (with or without a limit), support counts, and
product rows by parent_asin. `CatalogIndex` answers them over the whole products table; here the table is read
in partitions of consecutive rows, each partition is indexed on its own with `CatalogIndex.build` (the same
matching code), a batch of questions is answered on every partition, and the partial answers are merged into
exactly what the whole-catalog index returns. A process (or a Dask worker) then holds one partition's index
and the questions, never the whole catalog.

Merge rules (each mirrors `CatalogIndex`; tests/validation/test_partitioned.py replays a real build's questions):

- answer_set without narrowing (no rubric narrows through the postings): the index returns the smallest
  `limit` parent_asins of all passing products; each partition returns its own smallest `limit`, the merge
  sorts their union and cuts at `limit`.
- answer_set with narrowing: the index grades the narrowed rows in row order and keeps the first `limit`
  that pass (then sorts them); each partition returns its first `limit` passing products in row order, the
  merge concatenates them in partition (= row) order, cuts at `limit` and sorts.
- support: a count that the index makes exactly is summed. Where the rubric narrows through the postings the
  index counts the narrowed rows instead once more than `CatalogIndex.SUPPORT_EXACT_ROWS` hold the value's
  tokens, so partitions report their narrowed counts, and only when the total is within that bound are the
  exact counts summed (computed at once on small partitions, else in a second round): the same number.
- products_of / first_products: partitions return their rows, the merge orders them by global row.

A pass can be stopped: `PartitionedCatalog.stop` is asked before each partition and between the questions on a
partition, and when it says so the pass raises `PassInterrupted` (a build's Ctrl-C; nothing of the pass is kept).
"""

from __future__ import annotations

import atexit
import hashlib
import pickle
import shutil
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ecombench.answers.filters import filter_of
from ecombench.answers.index import CatalogIndex
from ecombench.catalog.schema import BUILD_PRODUCT_COLUMNS, REVIEW_TEXT_COLUMNS
from ecombench.hashing import canonical_json
from ecombench.io import atomic_path
from ecombench.rubrics import RubricLike, as_spec, kind_of, plain_value
from ecombench.tables.fields import FieldTable

# Rows per partition when the caller gives none: a 3.7M catalog in 15 partitions, each index a few hundred MB.
DEFAULT_PARTITION_ROWS = 250_000


@dataclass(frozen=True)
class Question:
    """One catalog-wide question, as plain picklable data.

    Attributes:
        kind: "answer_set" (rubrics, limit), "support" (rubrics holds the one rubric), "products_of" (asins),
            "first_products" (limit: how many) or "within" (rubric_sets, asins: each set's answer set among
            those products, `CatalogIndex.answer_sets_within`).
        rubrics: rubric specs (`ecombench.rubrics.as_spec`), for answer_set and support.
        limit: answer_set's limit (None: all), or first_products' count.
        asins: parent_asins, for products_of and within.
        rubric_sets: rubric specs per set, for within.
    """

    kind: str
    rubrics: tuple[RubricLike, ...] = ()
    limit: int | None = None
    asins: tuple[str, ...] = ()
    rubric_sets: tuple[tuple[RubricLike, ...], ...] = ()

    @cached_property
    def key(self) -> str:
        """Canonical JSON of what decides the answer (rubric type, field and value; limit; asins)."""
        def specs(rubrics: Iterable[RubricLike]) -> list[list[Any]]:
            return [[r.type, r.field, plain_value(r)] for r in rubrics]

        return canonical_json([self.kind, specs(self.rubrics), self.limit, list(self.asins),
                               [specs(s) for s in self.rubric_sets]])


def answer_set_question(rubrics: Iterable[RubricLike | dict[str, Any]], limit: int | None = None) -> Question:
    """The question `CatalogIndex.answer_set(rubrics, limit)` answers (rubrics parsed as the index parses them).

    Raises:
        pydantic.ValidationError: a rubric's value does not fit its type (as `as_spec` raises it).
    """
    return Question("answer_set", tuple(as_spec(r) for r in rubrics), limit)


def support_question(rubric: RubricLike | dict[str, Any]) -> Question:
    """The question `CatalogIndex.support(rubric)` answers."""
    return Question("support", (as_spec(rubric),))


def products_question(asins: Iterable[str]) -> Question:
    """The checker-ready rows of these parent_asins, in catalog row order (`CatalogIndex.products_of`)."""
    return Question("products_of", asins=tuple(asins))


def first_products_question(n: int) -> Question:
    """The first `n` parent_asins in catalog row order (`CatalogIndex.first_products`)."""
    return Question("first_products", limit=n)


def within_question(rubric_sets: Iterable[Iterable[RubricLike | dict[str, Any]]], asins: Iterable[str]) -> Question:
    """The question `CatalogIndex.answer_sets_within(rubric_sets, asins)` answers."""
    return Question("within", asins=tuple(asins), rubric_sets=tuple(tuple(as_spec(r) for r in s) for s in rubric_sets))


def needs_reviews(question: Question) -> bool:
    """Whether answering needs the review index (a review_opinion rubric)."""
    return any(kind_of(r).needs_reviews for r in (*question.rubrics, *(r for s in question.rubric_sets for r in s)))


class PassInterrupted(Exception):
    """A partition pass stopped because its `stop` check said so (a build asked to stop by SIGINT / SIGTERM)."""


# ---- one partition -----------------------------------------------------------------------------


@dataclass
class Partition:
    """The index of one slice of the products table (rows `start` to `stop` - 1 of the snapshot).

    Attributes:
        start: global row of its first product.
        stop: one past the global row of its last product.
        index: `CatalogIndex.build` over just these rows (row numbers local: global = start + local).
        rows_of: parent_asin -> local row.
    """

    start: int
    stop: int
    index: CatalogIndex
    rows_of: dict[str, int]

    @classmethod
    def load(cls, snapshot: Path, table: FieldTable, start: int, stop: int, with_reviews: bool,
             facts_path: Path | None = None) -> Partition:
        """Read rows [start, stop) of products.parquet (and their reviews, in file order) and index them.

        Args:
            snapshot: the snapshot directory.
            table: the field table.
            start: first row.
            stop: one past the last row.
            with_reviews: index the products' reviews too.
            facts_path: the catalog's product facts (a facts parquet: the snapshot's stats or the build's cache);
                None reads the partition's facts from its labels alone.

        Raises:
            polars.exceptions.PolarsError, OSError: the snapshot's files are unreadable.
        """
        products = (pl.scan_parquet(Path(snapshot) / "products.parquet").select(list(BUILD_PRODUCT_COLUMNS))
                    .slice(start, stop - start).collect().rechunk())
        reviews = None
        if with_reviews:
            asins = products.get_column("parent_asin")
            reviews = (pl.scan_parquet(Path(snapshot) / "reviews.parquet").select(list(REVIEW_TEXT_COLUMNS))
                       .filter(pl.col("parent_asin").is_in(asins.implode())).collect())
        facts = None
        if facts_path is not None:
            facts = (pl.scan_parquet(facts_path).filter(pl.col("row").is_between(start, stop - 1))
                     .with_columns((pl.col("row") - start).cast(pl.Int32)).collect())
        index = CatalogIndex.build(products, table, reviews, facts=facts)
        rows_of = dict(zip(products.get_column("parent_asin").to_list(), range(products.height)))
        return cls(start=start, stop=stop, index=index, rows_of=rows_of)

    def exact_support(self, rubric: RubricLike) -> int:
        """How many of this partition's products satisfy `rubric` by the checkers' rule (no approximation)."""
        return len(self.index.answer_set([rubric]))

    def answer(self, question: Question, exact_within: int) -> Any:
        """This partition's partial answer to one question (the merge rules of the module docstring).

        Args:
            question: the question.
            exact_within: a narrowing support question also gets its exact count when at most this many of
                the partition's rows hold the value's tokens (0: never).

        Returns:
            answer_set: (narrows, parent_asins) - narrows: in row order, else sorted; at most `limit` of them.
            support: ("count", n) exact, or ("narrowed", rows holding the tokens, exact count or None).
            products_of: [(global row, checker-ready product dict)].
            first_products: [parent_asin] of its first `limit` rows.
            within: per rubric set, the sorted parent_asins among its own products of `asins` satisfying it.

        Raises:
            ValueError: a review_opinion rubric but the partition was loaded without reviews.
        """
        index = self.index
        if question.kind == "answer_set":
            rubrics = list(question.rubrics)
            narrows = any(filter_of(r).narrow(index, r) is not None for r in rubrics)
            asins = index.answer_set(rubrics, limit=question.limit)
            if narrows:
                asins = sorted(asins, key=self.rows_of.__getitem__)
            return narrows, asins
        if question.kind == "support":
            rubric = question.rubrics[0]
            narrowed = filter_of(rubric).narrow(index, rubric)
            if narrowed is None:
                return "count", index.support(rubric)  # numeric, vectorised or checker count: exact
            exact = self.exact_support(rubric) if len(narrowed) <= exact_within else None
            return "narrowed", len(narrowed), exact
        if question.kind == "products_of":
            local = sorted(self.rows_of[a] for a in set(question.asins) if a in self.rows_of)
            found = index.rows(np.asarray(local, dtype=np.int64))
            return [(self.start + row, product) for row, product in zip(local, found)]
        if question.kind == "first_products":
            return index.first_products(question.limit or 0)
        if question.kind == "within":
            return index.answer_sets_within(question.rubric_sets, [a for a in question.asins if a in self.rows_of])
        raise ValueError(f"unknown question kind {question.kind!r}")


def partition_answers(partition: Partition, questions: Sequence[Question], exact_within: int,
                      stop: Callable[[], bool] | None = None) -> list[Any]:
    """Partial answers of one partition to a batch of questions (an exception in place of a failed answer).

    What a Dask task returns for its partition, and what the in-process pass computes per partition.

    Raises:
        PassInterrupted: `stop()` returned True before a question (checked between questions, so a pass stops
            within one question's time on one partition).
    """
    out: list[Any] = []
    for q in questions:
        if stop is not None and stop():
            raise PassInterrupted("the partition pass was asked to stop")
        try:
            out.append(partition.answer(q, exact_within))
        except ValueError as exc:
            out.append(exc)
    return out


class PartitionCache:
    """The partition indexes one process holds: at most `keep` in memory, least recently used dropped first.

    A dropped partition is written to `spill_dir` (a pickle of this process's own index: reading it back costs
    about a third of indexing the rows again, 0.41 s against 1.25 s for 250,000 generated products), so a
    bounded process pays for each partition's index once and for a read on each later pass. Without
    `spill_dir` a dropped partition is indexed again.

    Args:
        keep: partitions kept in memory (None: all; nothing is then ever dropped or written).
        spill_dir: where dropped partitions are written (created when needed); None: not written.
    """

    def __init__(self, keep: int | None = None, spill_dir: Path | None = None):
        self.keep, self.spill_dir = keep, spill_dir
        self._parts: OrderedDict[Any, Partition] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[Any, threading.Lock] = {}
        self.loads = 0  # partitions indexed from the snapshot
        self.reads = 0  # partitions read back from spill_dir

    def __len__(self) -> int:
        return len(self._parts)

    def _spill_path(self, key: Any) -> Path | None:
        if self.spill_dir is None:
            return None
        return self.spill_dir / (hashlib.sha256(repr(key).encode()).hexdigest()[:24] + ".pickle")

    def get(self, key: Any, load: Callable[[], Partition]) -> Partition:
        """The partition under `key` (plain values naming snapshot, rows and reviews): kept, spilled or loaded.

        Threads asking for the same key share one load; a partition that cannot be written to `spill_dir`
        (a full disk) is just dropped, and indexed again when next needed.

        Raises:
            What `load` raises (an unreadable snapshot).
        """
        with self._lock:
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:
            with self._lock:
                part = self._parts.get(key)
                if part is not None:
                    self._parts.move_to_end(key)
                    return part
            spilled = self._spill_path(key)
            part = None
            if spilled is not None and spilled.is_file():
                try:
                    with spilled.open("rb") as fh:
                        part = pickle.load(fh)
                except (OSError, pickle.UnpicklingError, EOFError):
                    part = None  # unreadable: index it again
            read = part is not None
            if part is None:
                part = load()
            with self._lock:
                self.reads += read
                self.loads += not read
                self._parts[key] = part
                dropped = []
                while self.keep is not None and len(self._parts) > self.keep:
                    dropped.append(self._parts.popitem(last=False))
        for old_key, old in dropped:
            self._spill(old_key, old)
        return part

    def _spill(self, key: Any, part: Partition) -> None:
        path = self._spill_path(key)
        if path is None or path.is_file():
            return
        try:
            with atomic_path(path) as tmp, tmp.open("wb") as fh:
                pickle.dump(part, fh, protocol=pickle.HIGHEST_PROTOCOL)
        except (OSError, pickle.PicklingError):
            pass  # not written: the partition is indexed again when next needed


# This process's partitions when passes run elsewhere (a Dask worker), keyed by (snapshot, fingerprint, bounds,
# reviews); made on the first task, with the task's `keep`.
_PROCESS_CACHE: PartitionCache | None = None
_PROCESS_LOCK = threading.Lock()


def _process_cache(keep: int | None) -> PartitionCache:
    global _PROCESS_CACHE
    with _PROCESS_LOCK:
        if _PROCESS_CACHE is None or _PROCESS_CACHE.keep != keep:
            spill = None
            if keep is not None:
                try:  # a Dask worker's own scratch directory, removed with the worker
                    # deferred: an optional dependency (the dask extra)
                    from distributed import get_worker

                    spill = Path(get_worker().local_directory) / f"ecombench-partitions-{uuid.uuid4().hex[:12]}"
                except (ImportError, ValueError):  # not on a Dask worker: a temporary directory, removed at exit
                    spill = Path(tempfile.mkdtemp(prefix="ecombench-partitions-"))
                    atexit.register(shutil.rmtree, spill, ignore_errors=True)
            _PROCESS_CACHE = PartitionCache(keep, spill)
        return _PROCESS_CACHE


def answer_on_partition(snapshot: str, fingerprint: str, table: FieldTable, start: int, stop: int,
                        with_reviews: bool, questions: Sequence[Question], exact_within: int,
                        keep: int | None = None, facts_path: str | None = None) -> list[Any]:
    """A Dask task: partition [start, stop)'s partial answers (`partition_answers`), the partition kept in this process.

    A worker process loads each partition it is given once and keeps it (at most `keep` in memory, the least
    recently used spilled to the worker's scratch directory: `PartitionCache`), so it holds its share of the
    partitions, never the whole catalog.

    Args:
        snapshot: the snapshot directory (the same path on every worker).
        fingerprint: the snapshot's fingerprint (its manifest): a kept partition of another snapshot is not reused.
        table: the field table.
        start: global row of the partition's first product.
        stop: one past its last.
        with_reviews: index the partition's reviews too.
        questions: the round's questions.
        exact_within: see `Partition.answer`.
        keep: partitions this process keeps (None: all it is given).
        facts_path: the catalog's product facts parquet (the same path on every worker), or None.
    """
    part = _process_cache(keep).get((str(snapshot), fingerprint, start, stop, with_reviews, facts_path),
                                    lambda: Partition.load(Path(snapshot), table, start, stop, with_reviews,
                                                           Path(facts_path) if facts_path else None))
    return partition_answers(part, questions, exact_within)


# ---- merging -----------------------------------------------------------------------------------


def merge_answer(question: Question, partials: Sequence[Any]) -> Any:
    """Merge the partitions' partial answers (in partition order) into the whole-catalog answer.

    For support, partials whose exact count is still needed must have been completed first (see
    `support_needs_exact`).

    Returns:
        What `CatalogIndex` returns for the question: sorted parent_asins, a count, or product dicts.

    Raises:
        ValueError: a partition raised it (e.g. review_opinion without reviews).
    """
    for p in partials:
        if isinstance(p, ValueError):
            raise p
    if question.kind == "answer_set":
        narrows = {n for n, _ in partials}
        if len(narrows) > 1:
            raise AssertionError("partitions disagree on whether the rubrics narrow (narrow() must not depend on data)")
        picked = [a for _, asins in partials for a in asins]
        if narrows == {True}:
            return sorted(picked[:question.limit])
        return sorted(picked)[:question.limit]
    if question.kind == "support":
        if all(p[0] == "count" for p in partials):
            return sum(p[1] for p in partials)
        narrowed = sum(p[1] for p in partials)
        if narrowed > CatalogIndex.SUPPORT_EXACT_ROWS:
            return narrowed  # the index's own upper bound for a common value
        if any(p[2] is None for p in partials):
            raise AssertionError("support merge needs every partition's exact count (support_needs_exact)")
        return sum(p[2] for p in partials)
    if question.kind == "products_of":
        return [product for _, product in sorted((pair for part in partials for pair in part), key=lambda x: x[0])]
    if question.kind == "first_products":
        return [a for part in partials for a in part][:question.limit]
    if question.kind == "within":
        return [sorted(a for part in partials for a in part[j]) for j in range(len(question.rubric_sets))]
    raise ValueError(f"unknown question kind {question.kind!r}")


def support_needs_exact(partials: Sequence[Any]) -> list[int]:
    """Partitions (positions) whose exact support count the merge still needs; empty when it has what it needs.

    Needed only when the rubric narrows, the partitions' narrowed rows total at most SUPPORT_EXACT_ROWS (so
    the index would count exactly) and some partition skipped its exact count.
    """
    if any(isinstance(p, ValueError) for p in partials) or all(p[0] == "count" for p in partials):
        return []
    if sum(p[1] for p in partials) > CatalogIndex.SUPPORT_EXACT_ROWS:
        return []
    return [i for i, p in enumerate(partials) if p[2] is None]


# ---- the engine ---------------------------------------------------------------------------------


def partition_bounds(n_rows: int, partition_rows: int) -> list[tuple[int, int]]:
    """[start, stop) of consecutive partitions of at most `partition_rows` rows covering `n_rows` rows."""
    if partition_rows < 1:
        raise ValueError(f"partition_rows must be at least 1, got {partition_rows}")
    return [(s, min(s + partition_rows, n_rows)) for s in range(0, n_rows, partition_rows)] or [(0, 0)]


def snapshot_rows(snapshot: Path) -> int:
    """Number of products in a snapshot's products.parquet (from the parquet metadata)."""
    return int(pl.scan_parquet(Path(snapshot) / "products.parquet").select(pl.len()).collect().item())


# A pass maps a function over every partition: (partition number, questions, exact_within) -> partial answers.
PassRunner = Callable[[Sequence[int], Sequence[Question], int], list[list[Any]]]


class PartitionedCatalog:
    """Answers batches of catalog-wide questions by passes over the snapshot's partitions.

    In one process the partitions' indexes are kept (up to `keep` of them, least recently used dropped), so a
    build's many passes index each partition once; `runner` replaces the in-process pass (a Dask pass whose
    workers keep the partitions instead, flows/partitioned_dask.py).

    Args:
        snapshot: the catalog snapshot directory (products.parquet, reviews.parquet).
        table: the field table.
        with_reviews: index reviews too (review_opinion questions need them).
        partition_rows: rows per partition (ignored when `bounds` is given).
        bounds: explicit [start, stop) row ranges, consecutive from 0 to the table's end (uneven allowed).
        keep: partition indexes kept in memory by the in-process pass, and by each Dask worker (None: all).
        runner: how a pass runs; None: in this process.

    Attributes:
        on_pass: called after each pass with (pass number, distinct questions it answered, seconds), e.g. to
            report a long build's progress; None by default.
        stop: asked before each partition and between questions of a pass; True raises `PassInterrupted` (a
            build sets it to its signal check); None never stops.

    Raises:
        ValueError: `bounds` do not cover the table's rows consecutively.
    """

    def __init__(self, snapshot: Path, table: FieldTable, with_reviews: bool = False,
                 partition_rows: int = DEFAULT_PARTITION_ROWS, bounds: Sequence[tuple[int, int]] | None = None,
                 keep: int | None = None, runner: PassRunner | None = None):
        self.snapshot, self.table, self.with_reviews = Path(snapshot), table, with_reviews
        n_rows = snapshot_rows(self.snapshot)
        self.bounds = list(bounds) if bounds is not None else partition_bounds(n_rows, partition_rows)
        if (self.bounds[0][0] != 0 or self.bounds[-1][1] != n_rows
                or any(a[1] != b[0] for a, b in zip(self.bounds, self.bounds[1:]))
                or any(s > e for s, e in self.bounds)):
            raise ValueError(f"partition bounds {self.bounds[:3]}... do not cover rows 0..{n_rows} consecutively")
        self.keep, self.runner = keep, runner
        self.facts_path: Path | None = None  # the catalog's facts parquet, set by the build that plans them
        self.on_pass: Callable[[int, int, float], None] | None = None  # (pass number, questions, seconds)
        self.batcher: Any = None  # the build's question batcher (pipeline.batched.shared_batcher), made on first use
        self.stop: Callable[[], bool] | None = None  # asked before each partition and question of a pass
        self._spill = tempfile.TemporaryDirectory(prefix="ecombench-partitions-") if keep is not None else None
        self._parts = PartitionCache(keep, Path(self._spill.name) if self._spill else None)
        self._lock = threading.Lock()
        self._loading = [threading.Lock() for _ in self.bounds]
        self._support: dict[str, int] = {}
        self.stats = {"passes": 0, "questions": 0, "partition_loads": 0, "partition_reads": 0, "exact_rounds": 0}

    @property
    def n_partitions(self) -> int:
        """Number of partitions."""
        return len(self.bounds)

    def partition(self, i: int) -> Partition:
        """Partition `i`'s index, loaded on first use and kept; threads share one load.

        At most `keep` stay in memory, the rest spilled to a temporary directory this engine removes
        (`PartitionCache`).
        """
        start, stop = self.bounds[i]
        with self._loading[i]:
            part = self._parts.get(i, lambda: Partition.load(self.snapshot, self.table, start, stop,
                                                             self.with_reviews, self.facts_path))
        with self._lock:
            self.stats["partition_loads"] = self._parts.loads
            self.stats["partition_reads"] = self._parts.reads
        return part

    def cached_support(self, question: Question) -> int | None:
        """The merged answer to a support question some pass already answered, else None."""
        if question.kind != "support":
            return None
        with self._lock:
            return self._support.get(question.key)

    def _check_stop(self) -> None:
        if self.stop is not None and self.stop():
            raise PassInterrupted("the partition pass was asked to stop")

    def _local_pass(self, parts: Sequence[int], questions: Sequence[Question], exact_within: int) -> list[list[Any]]:
        out = []
        for i in parts:
            self._check_stop()
            out.append(partition_answers(self.partition(i), questions, exact_within, self.stop))
        return out

    def answer(self, questions: Sequence[Question]) -> list[Any]:
        """Answers to a batch of questions, each exactly what `CatalogIndex` over the whole snapshot returns.

        One pass over every partition answers them all (identical questions once; support counts are also
        remembered across batches); a support question whose exact count some partitions skipped costs a
        second pass over just those partitions.

        Returns:
            One answer per question, in order, or the ValueError the index would raise for it.

        Raises:
            PassInterrupted: `stop` said so before or during the pass (checked before each partition and between
                questions, so a pass stops within one question's time on one partition).
        """
        self._check_stop()
        with self._lock:
            self.stats["questions"] += len(questions)
            known = {q.key: self._support[q.key] for q in questions if q.kind == "support" and q.key in self._support}
        unique: dict[str, Question] = {}
        for q in questions:
            if q.key not in known:
                unique.setdefault(q.key, q)
        todo = list(unique.values())
        merged: dict[str, Any] = dict(known)
        if todo:
            if any(needs_reviews(q) for q in todo) and not self.with_reviews:
                bad = [q for q in todo if needs_reviews(q)]
                for q in bad:
                    merged[q.key] = ValueError("review_opinion rubrics need a CatalogIndex built with reviews")
                todo = [q for q in todo if not needs_reviews(q)]
            run = self.runner or self._local_pass
            parts = list(range(self.n_partitions))
            exact_within = CatalogIndex.SUPPORT_EXACT_ROWS // self.n_partitions
            started = time.perf_counter()
            partials = run(parts, todo, exact_within)  # [partition][question]
            with self._lock:
                self.stats["passes"] += 1
                passes = self.stats["passes"]
            if self.on_pass is not None:
                try:
                    self.on_pass(passes, len(todo), time.perf_counter() - started)
                except Exception:  # noqa: BLE001 - a progress report never fails the pass it reports
                    pass
            by_question = [[partials[p][j] for p in range(len(parts))] for j in range(len(todo))]
            again = {j: support_needs_exact(by_question[j]) for j, q in enumerate(todo) if q.kind == "support"}
            again = {j: need for j, need in again.items() if need}
            if again:
                with self._lock:
                    self.stats["exact_rounds"] += 1
                wanted = sorted({p for need in again.values() for p in need})
                extra = run(wanted, [todo[j] for j in again], CatalogIndex.SUPPORT_EXACT_ROWS)
                for row, p in enumerate(wanted):
                    for col, j in enumerate(again):
                        if p in again[j]:
                            by_question[j][p] = extra[row][col]
            for q, parts_of_q in zip(todo, by_question):
                try:
                    merged[q.key] = merge_answer(q, parts_of_q)
                except ValueError as exc:
                    merged[q.key] = exc
            with self._lock:
                self._support.update({q.key: merged[q.key] for q in todo
                                      if q.kind == "support" and isinstance(merged[q.key], int)})
        return [merged[q.key] for q in questions]

    # Whole-index conveniences: one question per call (tests; a caller without batching).

    def answer_set(self, rubrics: Sequence[RubricLike] | Sequence[dict[str, Any]],
                   limit: int | None = None) -> list[str]:
        """`CatalogIndex.answer_set` over the whole snapshot, by one pass."""
        return _raise_or(self.answer([answer_set_question(rubrics, limit)])[0])

    def support(self, rubric: RubricLike | dict[str, Any]) -> int:
        """`CatalogIndex.support` over the whole snapshot, by one pass (remembered)."""
        return _raise_or(self.answer([support_question(rubric)])[0])

    def products_of(self, asins: Iterable[str]) -> list[dict[str, Any]]:
        """`CatalogIndex.products_of` over the whole snapshot, by one pass."""
        return _raise_or(self.answer([products_question(asins)])[0])

    def first_products(self, n: int) -> list[str]:
        """`CatalogIndex.first_products` over the whole snapshot, by one pass."""
        return _raise_or(self.answer([first_products_question(n)])[0])

    def answer_sets_within(self, rubric_sets: Sequence[Sequence[RubricLike] | Sequence[dict[str, Any]]],
                           asins: Iterable[str]) -> list[list[str]]:
        """`CatalogIndex.answer_sets_within` over the whole snapshot, by one pass."""
        return _raise_or(self.answer([within_question(rubric_sets, asins)])[0])

    def supports(self, rubrics: Sequence[RubricLike] | Sequence[dict[str, Any]]) -> list[int]:
        """`CatalogIndex.supports` over the whole snapshot, by one pass (remembered)."""
        return [_raise_or(a) for a in self.answer([support_question(r) for r in rubrics])]

    def answer_sets(self, rubric_sets: Sequence[Sequence[RubricLike] | Sequence[dict[str, Any]]],
                    limit: int | None = None) -> list[list[str]]:
        """`CatalogIndex.answer_sets` over the whole snapshot, by one pass."""
        return [_raise_or(a) for a in self.answer([answer_set_question(rs, limit) for rs in rubric_sets])]


def _raise_or(answer: Any) -> Any:
    if isinstance(answer, ValueError):
        raise answer
    return answer
