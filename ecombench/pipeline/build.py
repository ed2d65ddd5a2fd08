"""The plain build, without Prefect: plan, batches of candidates through stages 2-7, publish.

Planning loads the snapshot and samples candidates (stage 1); batches run stages 2-7; `assemble` writes the
manifest and publishes the split version.

`build_split` runs the whole build in this process (library use and tests); ecombench.flows.build runs the same
steps as a Prefect flow with batches as tasks and gives a byte-identical tasks.jsonl. A finished batch leaves a
completion file (datatrove's markers), so an interrupted build resumes; SIGINT and SIGTERM set `STOP`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ecombench.answers.index import CatalogIndex
from ecombench.answers.norms import CatalogNorms
from ecombench.answers.partitioned import PartitionedCatalog, PassInterrupted
from ecombench.catalog.details import field_vocabulary
from ecombench.catalog.facts import stated_rows, with_facts
from ecombench.catalog.integrity import verify_snapshot
from ecombench.catalog.snapshot import (
    load_manifest,
    load_page_texts,
    load_products_of,
    load_reviews,
    load_snapshot,
    products_in_slices,
)
from ecombench.errors import InputError, SettingError
from ecombench.hashing import PACKAGE_DIR, digest, source_digest
from ecombench.io import write_atomic
from ecombench.llm import LLMClient, LLMError
from ecombench.pipeline import expectations_job
from ecombench.pipeline.agent_check import check_agents
from ecombench.pipeline.batched import build_batched
from ecombench.pipeline.candidate import (
    REPHRASE,
    VERBALISER_V2_ID,
    BuildContext,
    CandidateResult,
    build_candidate,
    verbaliser_id,
)
from ecombench.pipeline.config import CODE_VERSION, BuildConfig
from ecombench.splits.publish import check_split_names, next_version, publish_split, reserve_version
from ecombench.stages.prompts import prompt_sha256
from ecombench.stages.reviews import learn_opinion_phrases
from ecombench.stages.sampling import (
    ELIGIBILITY_SOURCE_COLUMNS,
    eligibility_columns,
    eligibility_in_slices,
    eligibility_rule,
    sample_split,
)
from ecombench.tables import tables_sha256
from ecombench.tables.cues import load_cues
from ecombench.tables.fields import load_field_table
from ecombench.tables.intents import load_intents
from ecombench.timing import phase, record
from ecombench.validation.catalog_stats import catalog_knowledge, load_catalog_stats
from ecombench.validation.shopper_text import query_phrases
from ecombench.validation.slots import catalog_values


class NoCandidates(InputError):
    """Sampling found no eligible product for any intent; nothing is built or written."""


class EmptySplit(InputError):
    """Every candidate was rejected: a split of no task is not published unless the caller allows it.

    The batches are kept, so the same command with `--allow-empty` (or other settings over the same
    candidates) resumes them.
    """


@dataclass
class BuildOutcome:
    """Where the split went and what it holds (what the CLI prints)."""

    path: Path
    manifest: dict[str, Any]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(PACKAGE_DIR), *args], capture_output=True, text=True, timeout=5)
        return out.stdout.strip() if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def code_state() -> dict[str, Any]:
    """The commit of the code and whether the work tree differs from it.

    A dirty build is not reproducible from the commit alone.
    """
    commit = _git("rev-parse", "HEAD") or None
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"git_commit": commit, "git_dirty": bool(status) if status is not None else None}


# Set by SIGINT / SIGTERM during a CLI build (`stop_on_signals`): no new batch starts and a running one stops
# before its next candidate, without a completion marker (it is redone by the rerun).
STOP = threading.Event()


def stopping() -> bool:
    """Whether a signal asked the build to stop.

    The flow calls this instead of reading STOP: Dask pickles the flow's function by value with its
    globals, and an Event (holding a lock) does not pickle.
    """
    return STOP.is_set()


def stop_signal() -> str:
    """The name of the signal that set STOP ("SIGINT", "SIGTERM"), or "a signal"."""
    return getattr(STOP, "signal_name", "") or "a signal"


class BuildInterrupted(Exception):
    """A build stopped by SIGINT or SIGTERM: nothing published, finished batches kept for resume (exit 130).

    Not an EcombenchError: the user asked for it, and the CLI exits 130 as shells expect of Ctrl-C.

    Attributes:
        signal_name: "SIGINT" or "SIGTERM".
        done: batches finished (their completion markers are kept).
        total: batches of the build.
    """

    def __init__(self, signal_name: str, done: int = 0, total: int = 0, publishing: bool = False):
        if publishing:
            text = (f"interrupted by {signal_name} after the last batch: every batch is kept for resume; nothing was "
                    "published (run the same command again to publish)")
        else:
            text = (f"interrupted by {signal_name}: {done} of {total} batches finished and kept for resume; "
                    "nothing was published (run the same command again to resume)")
        super().__init__(text)
        self.signal_name, self.done, self.total = signal_name, done, total


def raise_if_stopping() -> None:
    """After the last batch (agent checks, expectations, publishing): a signal stops the build before publishing.

    Raises:
        BuildInterrupted: `STOP` is set; no version is renamed into place.
    """
    if STOP.is_set():
        raise BuildInterrupted(stop_signal(), publishing=True)


class StoppedAtOnce(KeyboardInterrupt):
    """A second SIGINT or SIGTERM during a build: it stops where it is, without waiting for the running batch.

    Attributes:
        signal_name: the second signal's name.
    """

    def __init__(self, signal_name: str):
        super().__init__(f"stopped at once by a second {signal_name}; nothing was published (finished batches are "
                         "kept: run the same command again to resume)")
        self.signal_name = signal_name


@contextlib.contextmanager
def stop_on_signals() -> Any:
    """SIGINT and SIGTERM set `STOP` instead of killing the process, for the block (main thread only).

    A second signal of either kind raises `StoppedAtOnce` (a KeyboardInterrupt) at once, for a user who will not
    wait.
    """
    if threading.current_thread() is not threading.main_thread() or getattr(STOP, "installed", False):
        yield  # not the main thread, or an outer block already handles the signals
        return
    STOP.clear()
    STOP.installed = True  # type: ignore[attr-defined]
    STOP.signal_name = ""  # type: ignore[attr-defined]

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if STOP.is_set():
            raise StoppedAtOnce(name)
        STOP.signal_name = name  # type: ignore[attr-defined]
        STOP.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    STOP.handler = handler  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        STOP.clear()
        STOP.installed = False  # type: ignore[attr-defined]


@contextlib.contextmanager
def sigterm_stops_the_build() -> Any:
    """Inside a Prefect flow run: SIGTERM back to `stop_on_signals`' handler for the block.

    Prefect's flow engine takes SIGTERM over for each flow run (it raises TerminationSignal, a crash with a
    traceback, where a build should stop as for Ctrl-C). Only when `stop_on_signals` is active (a CLI build)
    and on the main thread; Prefect's handler is put back at the end of the block.
    """
    handler = getattr(STOP, "handler", None)
    if (not getattr(STOP, "installed", False) or handler is None
            or threading.current_thread() is not threading.main_thread()):
        yield
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_batch(products: list[dict[str, Any]], intent: str, ctx: BuildContext) -> list[Any]:
    """Stages 2-7 for a batch of candidates of one intent (plain Python; the flow wraps it in a task).

    A finished batch leaves a completion file under artifacts/cache/batches/ (datatrove's
    completion markers), keyed by the config hash, the code's digest, the intent and the batch's
    products; a rerun of an interrupted build loads it instead of redoing the batch, so the rerun
    finishes with the same tasks.jsonl.

    Raises:
        BuildInterrupted: `STOP` was set (SIGINT / SIGTERM) before the batch finished; no marker is written.
    """
    marker = _batch_marker(products, intent, ctx)
    if ctx.config.resume and marker.is_file():
        return [CandidateResult(task=r["task"], rejection=r["rejection"], stats=Counter(r["stats"]), resumed=True)
                for r in json.loads(marker.read_text(encoding="utf-8"))]
    results: list[CandidateResult] = []
    if ctx.answer_engine is not None:
        # Every candidate of the batch on its own thread, their questions answered a round at a time by
        # partition passes (pipeline/batched.py); a signal stops the batch before it starts.
        if STOP.is_set():
            raise BuildInterrupted(getattr(STOP, "signal_name", "") or "a signal")
        try:
            results, _ = build_batched(products, intent, ctx, ctx.answer_engine, build_candidate)
        except PassInterrupted:  # a signal stopped a partition pass: the batch is redone by the rerun
            raise BuildInterrupted(getattr(STOP, "signal_name", "") or "a signal") from None
    else:
        for p in products:
            if STOP.is_set():
                raise BuildInterrupted(getattr(STOP, "signal_name", "") or "a signal")
            results.append(build_candidate(p, intent, ctx))
    write_atomic(marker, json.dumps([{"task": r.task, "rejection": r.rejection, "stats": dict(r.stats)}
                                     for r in results], ensure_ascii=False))  # a kill leaves no half marker
    return results


def _batch_marker(products: list[dict[str, Any]], intent: str, ctx: BuildContext) -> Path:
    key = digest(ctx.config_hash, code_digest(), intent,
                 [[p["parent_asin"], p[REPHRASE]] if p.get(REPHRASE) else p["parent_asin"] for p in products])
    return ctx.artifacts / "cache" / "batches" / ctx.config_hash[:16] / f"{key}.json"


def code_digest() -> str:
    """sha256 over the sources a build runs (this module and what it imports).

    A code change never reuses an old batch result.
    """
    return source_digest("ecombench.pipeline.build")


def load_context(config: BuildConfig, artifacts: Path, with_index: bool = True
                 ) -> tuple[BuildContext, pl.DataFrame | None, dict[str, Any]]:
    """Everything candidates share, read from the snapshot at `config.catalog` (see `_load_context`)."""
    ctx, products, catalog_manifest, _ = _load_context(config, artifacts, with_index)
    return ctx, products, catalog_manifest


def _load_context(config: BuildConfig, artifacts: Path, with_index: bool = True
                  ) -> tuple[BuildContext, pl.DataFrame | None, dict[str, Any], pl.DataFrame | None]:
    """Everything candidates share, read from the snapshot at `config.catalog`: tables, catalog index, vocabulary.

    The build's planning step and each worker process of a Dask cluster call this (a worker
    once per process, through `worker_context`), so no context ever travels between processes.

    Args:
        config: the build configuration.
        artifacts: the artifacts root; caches go under it (batch completion files, LLM replies, sandbox index).
        with_index: build the answer-set index (the planning process of a Dask build does not need it).

    Returns:
        (context without candidates' reviews, products frame, catalog manifest, the products'
        exploded field-table details `ecombench.catalog.details.detail_rows`). The frames are None for a partitioned
        build over a snapshot whose statistics were stored at ingest: it plans from the snapshot in slices.

    Raises:
        SnapshotError: the snapshot is missing or malformed, or one of its files differs from the sha256
            its manifest records (ecombench.catalog.integrity.verify_snapshot, cached by the files' identity).
        SettingError: an intent is unknown, or an llm build lacks its server URL or model.
    """
    table = load_field_table()
    intents = load_intents()
    unknown = [i for i in config.intents if i not in intents]
    if unknown:
        raise SettingError(f"unknown intent(s) {unknown}; known: {sorted(intents)} (tables/intents.toml)")
    artifacts = Path(artifacts)
    snapshot = Path(config.catalog)
    verify_snapshot(snapshot, cache_dir=artifacts / "cache" / "verified")
    catalog_manifest = load_manifest(snapshot)
    chosen = [intents[n] for n in config.intents]
    review_intents = any(i.review_opinions for i in chosen)
    negative_fields = sorted({f for i in chosen for f in i.negative_fields if f in table.fields})
    partitioned = with_index and config.answer_sets == "partitioned"
    # A partitioned build indexes no whole catalog, so it leaves the stored normalised text unread.
    stats = load_catalog_stats(snapshot, catalog_manifest["fingerprint"], table, with_norms=not partitioned)
    # answer_sets "partitioned": partition passes over the snapshot answer the catalog-wide questions
    # (ecombench.answers.partitioned); no process indexes the whole catalog, so its reviews are not read here.
    engine = None
    products: pl.DataFrame | None = None
    details: pl.DataFrame | None = None
    if partitioned:
        engine = PartitionedCatalog(snapshot, table, with_reviews=review_intents,
                                    partition_rows=config.partition_rows, keep=config.partitions_kept)
        engine.stop = stopping  # SIGINT / SIGTERM stop a running pass, not only the next batch
        with_index = False
    with phase("    product knowledge" + (": stored at ingest" if stats and stats.knowledge else "")):
        knowledge = catalog_knowledge(snapshot, table, artifacts / "cache" / "knowledge")
        catalog_facts = knowledge.facts
    if engine is not None:
        assert knowledge.folder is not None  # catalog_knowledge keeps what it learns in the cache folder
        engine.facts_path = knowledge.folder / "facts.parquet"
    if engine is None or stats is None or stats.catalog_suite is None or stats.vocabulary_for(negative_fields) is None:
        if engine is not None:
            print(f"warning: {snapshot / 'stats'} is missing, incomplete or made by other code or for other bytes: "
                  f"the partitioned build reads the whole products table to plan (write the statistics again: "
                  f"ecombench stats --catalog {snapshot})", file=sys.stderr, flush=True)
        products, _ = load_snapshot(snapshot)
        details = stated_rows(catalog_facts.facts)
    # else: a partitioned build with the statistics stored at ingest plans from the snapshot in slices
    # (plan_build) and never holds the whole products table.
    reviews = load_reviews(snapshot) if review_intents and with_index else None
    opinion_phrases = None
    if review_intents:
        with phase("    review opinion phrases"):
            rated = (reviews if reviews is not None else load_reviews(snapshot)).select(
                "parent_asin", "rating", "title", "text")
            opinion_phrases = learn_opinion_phrases(rated.iter_rows())
    norms = None
    index = None
    if with_index:
        assert products is not None  # loaded above whenever an index is built
        # Stored at ingest (validation.catalog_stats) for this snapshot's bytes and this code: read, not redone.
        with phase("    normalisation (titles, details, reviews)" + (": stored at ingest" if stats else "")):
            norms = stats.norms if stats and stats.norms else CatalogNorms.compute(products, table, reviews,
                                                                                      details=details)
        index = CatalogIndex.build(products, table, reviews, norms=norms, facts=catalog_facts.facts)
    with phase("    value vocabulary" + (": stored at ingest" if stats else "")):
        vocabulary = stats.vocabulary_for(negative_fields) if stats else None
        if vocabulary is None:
            assert products is not None  # loaded above when the stored vocabulary does not cover the fields
            vocabulary = field_vocabulary(products, table, negative_fields, details=details) if negative_fields else {}
    type_vocabulary = knowledge.type_vocabulary
    cues = load_cues(table) if any(i.implicit or i.max_implicit for i in chosen) else {}
    fingerprint = catalog_manifest["fingerprint"]
    # The question matcher of stage 6 knows the values the catalog's labels carry, as the sandbox's `ask_user` does.
    ctx = BuildContext(config=config, table=table.with_catalog_values(catalog_values(catalog_facts, table)),
                       intents=intents, index=index,
                       catalog_fingerprint=fingerprint, config_hash=config.config_hash(fingerprint),
                       vocabulary=vocabulary, type_vocabulary=type_vocabulary, cues=cues,
                       llm=llm_client(config, artifacts), artifacts=artifacts,
                       answer_engine=engine, facts=catalog_facts, product_types=knowledge.product_types,
                       type_stats=knowledge.type_stats.with_rules(
                           config.type_rules.rules(catalog_products=knowledge.type_stats.catalog_products)),
                       opinion_phrases=opinion_phrases,
                       catalog_suite=stats.catalog_suite if stats is not None and products is None else None)
    return ctx, products, catalog_manifest, details


def plan_build(config: BuildConfig, artifacts: Path, with_index: bool = True
               ) -> tuple[BuildContext, pl.DataFrame, dict[str, Any], dict[str, Any]]:
    """Load the catalog, index it and sample every intent's candidates (stage 1).

    The context is also kept as this process's worker context (`worker_context`), so batches
    run by the threads runner reuse it instead of loading the snapshot again.

    Args:
        config: the build configuration.
        artifacts: the artifacts root (caches).
        with_index: see `_load_context`.

    Returns:
        (context, products frame, sampling summary per intent, catalog manifest). A partitioned build over a
        snapshot with stored statistics reads the products a slice at a time for sampling, and its frame
        holds just the sampled candidates' rows.

    Raises:
        SnapshotError: the snapshot is missing or malformed.
        SettingError: an intent is unknown, or an llm build lacks its server URL or model.
        NoCandidates: no product is eligible for any intent.
    """
    ctx, products, catalog_manifest, details = _load_context(config, artifacts, with_index=with_index)
    intents = ctx.intents
    chosen = [intents[n] for n in config.intents]
    snapshot = Path(config.catalog)
    if products is None:  # a partitioned build: the products table a slice at a time
        eligibility = eligibility_in_slices(
            products_in_slices(snapshot, config.partition_rows, ELIGIBILITY_SOURCE_COLUMNS), ctx.table)
    else:
        eligibility = eligibility_columns(products, ctx.table, details=details)
    del details
    min_type_products = 0
    # Candidates come only from types whose statistics decide (ecombench.stages.sampling.eligibility_condition),
    # and their detail fields are those the type's statistics let stage 2 draw from (TypeStats.usable_fields).
    if ctx.type_stats is not None and ctx.product_types is not None:
        min_type_products = ctx.type_stats.rules.min_products
        eligibility = eligibility.join(ctx.type_stats.type_products(ctx.product_types), on="parent_asin", how="left",
                                       maintain_order="left").with_columns(pl.col("type_products").fill_null(0))
        if ctx.facts is not None:
            always = frozenset(s.name for s in ctx.table.detail_fields() if s.compatibility)
            usable = ctx.type_stats.usable_fields(ctx.facts.facts, ctx.product_types, always)
            eligibility = (eligibility.drop("detail_field_count")
                           .join(usable.rename({"usable_fields": "detail_field_count"}), on="parent_asin",
                                 how="left", maintain_order="left")
                           .with_columns(pl.col("detail_field_count").fill_null(0)))
    sampling: dict[str, Any] = {}
    for name, result in sample_split(eligibility, chosen, config.candidates_per_intent, config.seed,
                                     config.categories, min_type_products).items():
        sampling[name] = {"requested": result.requested, "eligible": result.eligible,
                          "sampled": len(result.candidates), "shortfall": result.shortfall,
                          "rule": eligibility_rule(intents[name], min_type_products),
                          "by_category": result.by_category, "candidates": result.candidates}
    if not any(s["sampled"] for s in sampling.values()):
        raise NoCandidates("no product of the catalog is eligible for any intent ("
                           + "; ".join(f"{n}: {s['rule']}" for n, s in sampling.items())
                           + (f"; categories {config.categories}" if config.categories else "") + ")")
    wanted = [a for s in sampling.values() for a in s["candidates"]]
    if products is None:
        products = load_products_of(snapshot, wanted)  # just the candidates' rows
    products = with_facts(products, ctx.facts.facts) if ctx.facts is not None else products
    # The candidates' whole text, for exclusions that must not describe the target (stages/features.py)
    products = products.join(load_page_texts(snapshot, wanted), on="parent_asin", how="left", maintain_order="left")
    by_product: dict[str, list[dict[str, Any]]] | None = None
    if any(i.review_opinions for i in chosen):
        by_product = {}
        for row in load_reviews(snapshot, of=wanted).sort("review_id").iter_rows(named=True):
            by_product.setdefault(row["parent_asin"], []).append(row)
    ctx = dataclasses.replace(ctx, reviews=by_product)
    if with_index or ctx.answer_engine is not None:
        _remember_context(WorkerSpec.of(ctx), ctx)
    return ctx, products, sampling, catalog_manifest


@dataclass(frozen=True)
class WorkerSpec:
    """What a batch task carries instead of the build context: enough for a worker to load the context itself.

    A context holds the catalog index (GBs for a big catalog) and maybe an LLM client (locks,
    threads): it is never pickled. Each process builds it once (`worker_context`).
    """

    config: BuildConfig
    config_hash: str
    artifacts: str

    @classmethod
    def of(cls, ctx: BuildContext) -> WorkerSpec:
        """The spec of a planned build's context (a few hundred bytes to pickle)."""
        return cls(config=ctx.config, config_hash=ctx.config_hash, artifacts=str(ctx.artifacts))

    @property
    def key(self) -> tuple[str, str]:
        """(config hash, artifacts root): which cached context in a process serves this spec."""
        return self.config_hash, self.artifacts


_CONTEXTS: dict[tuple[str, str], BuildContext] = {}
_CONTEXTS_LOCK = threading.Lock()


def _remember_context(spec: WorkerSpec, ctx: BuildContext) -> None:
    """Keep `ctx` as this process's context for `spec` (the threads runner's batches then reuse it)."""
    with _CONTEXTS_LOCK:
        _CONTEXTS.clear()  # one build's context per process: a big index is not kept twice
        _CONTEXTS[spec.key] = ctx


def worker_context(spec: WorkerSpec) -> BuildContext:
    """This process's build context for `spec`: loaded from the snapshot on first use, then reused.

    Raises:
        SnapshotError: the snapshot at spec.config.catalog is unreadable from this process.
        InputError: the snapshot there is not the one the build was planned on (its config hash
            differs), e.g. a worker on another machine sees another catalog at that path.
    """
    with _CONTEXTS_LOCK:
        ctx = _CONTEXTS.get(spec.key)
        if ctx is None:
            ctx, _, _ = load_context(spec.config, Path(spec.artifacts))
            if ctx.config_hash != spec.config_hash:
                raise InputError(f"catalog {spec.config.catalog}: the snapshot this worker reads differs from the one "
                                 "the build was planned on (config hash mismatch); give every worker the same snapshot")
            _CONTEXTS.clear()
            _CONTEXTS[spec.key] = ctx
        return ctx


def llm_client(config: BuildConfig, artifacts: Path) -> LLMClient | None:
    """The shared LLM client for an llm build (replies cached under <artifacts>/cache/llm), else None.

    Raises:
        SettingError: no server URL or model (one line, naming the option).
    """
    if config.verbaliser != "llm" and not config.judge:
        return None
    return LLMClient(config.llm_settings(artifacts))


def verbaliser_manifest(ctx: BuildContext) -> dict[str, Any]:
    """The verbaliser's entry in the manifest.

    Its id, model, prompt digests, the parts the LLM wrote, whether the judge ran, what the server
    reported about the model (`served_model`, part of every reply's cache key), and usage (calls,
    cache hits, retries, repairs, tokens; totals and `by_part`).
    """
    if ctx.llm is None:
        return {"id": verbaliser_id(ctx.config), "model": None, "prompt_sha256": None}
    return {"id": verbaliser_id(ctx.config), "model": ctx.llm.settings.model, "prompt_sha256": prompt_sha256(),
            "parts": sorted(ctx.config.llm_writes()), "judge": ctx.config.judge,
            "served_model": _served_model(ctx.llm),
            "settings": ctx.llm.settings.public(), "usage": ctx.llm.usage()}


def _served_model(client: LLMClient) -> dict[str, Any]:
    """What the server reported about the model, or why it never answered GET /models.

    In the second case no reply was cached under an unknown identity: every request asks first.
    """
    try:
        return client.served_model()
    except LLMError as exc:
        return {"alias": client.settings.model, "listed": False, "error": str(exc)}


def candidate_rows(products: pl.DataFrame, asins: list[str],
                   reviews: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, dict[str, Any]]:
    """{parent_asin: product dict} of the given products; they carry "reviews" when loaded."""
    rows = {r["parent_asin"]: r for r in products.filter(pl.col("parent_asin").is_in(asins)).to_dicts()}
    if reviews is not None:
        for asin, row in rows.items():
            row["reviews"] = reviews.get(asin, [])
    return rows


def batches_of(products: pl.DataFrame, sampling: dict[str, Any], size: int,
               reviews: dict[str, list[dict[str, Any]]] | None = None) -> list[tuple[str, list[dict[str, Any]]]]:
    """(intent, product dicts) batches in sampling order; products carry "reviews" when loaded."""
    rows = candidate_rows(products, [a for s in sampling.values() for a in s["candidates"]], reviews)
    out = []
    for intent, s in sampling.items():
        ids = s["candidates"]
        for i in range(0, len(ids), size):
            out.append((intent, [rows[a] for a in ids[i:i + size]]))
    return out


# A query repeating a run of five words of another is drawn again this many times a round, in this many rounds
# (`rephrase_repeats`); the first draw that repeats nothing is taken.
REPHRASE_ROUNDS = 4
REPHRASE_DRAWS = 6


def rephrase_batches(config: BuildConfig, ctx: BuildContext, products: pl.DataFrame, results: list[Any],
                     round_no: int) -> tuple[list[int], list[tuple[str, list[dict[str, Any]]]]]:
    """The accepted tasks whose query repeats a run of five words of an earlier one, and batches that draw them again.

    A query repeating a run of PHRASE_WORDS words (product type aside: ecombench.validation.shopper_text) of a task
    before it, in result order, is written again: the same product, intent and accepted attempt, its verbalisation
    drawn anew REPHRASE_DRAWS times (`REPHRASE` = [attempt, text draw]); rubrics and answer set stay. Template-v2
    builds only: an LLM's text is not drawn.

    Returns:
        (indices into `results` of the repeating tasks, one (intent, product rows) batch of REPHRASE_DRAWS rows for
        each, in that order).
    """
    if ctx.llm is not None or config.verbaliser != VERBALISER_V2_ID:
        return [], []
    seen: set[str] = set()
    repeats = []
    for i, r in enumerate(results):
        if r.task is not None:
            phrases = query_phrases(r.task)
            if phrases & seen:
                repeats.append(i)
            seen |= phrases
    if not repeats:
        return [], []
    rows = candidate_rows(products, [results[i].task["target_product"]["parent_asin"] for i in repeats], ctx.reviews)
    batches: list[tuple[str, list[dict[str, Any]]]] = []
    for i in repeats:
        task = results[i].task
        row = rows[task["target_product"]["parent_asin"]]
        draws = range((round_no - 1) * REPHRASE_DRAWS + 1, round_no * REPHRASE_DRAWS + 1)
        batches.append((task["intent"], [row | {REPHRASE: [task["provenance"]["attempt"], d]} for d in draws]))
    return repeats, batches


def take_rephrased(results: list[Any], repeats: list[int], rephrased: list[Any]) -> int:
    """Put in place of each repeating task its first new draw whose query shares no run with any other task's.

    Returns:
        How many tasks were replaced. The candidates' stage counters stay those of their first run.
    """
    replaced = 0
    for n, i in enumerate(repeats):
        others = set().union(*(query_phrases(r.task) for j, r in enumerate(results) if r.task is not None and j != i))
        for new in rephrased[n * REPHRASE_DRAWS:(n + 1) * REPHRASE_DRAWS]:
            if new.task is not None and not query_phrases(new.task) & others:
                results[i] = dataclasses.replace(results[i], task=new.task)
                replaced += 1
                break
    return replaced


def rephrase_repeats(config: BuildConfig, ctx: BuildContext, products: pl.DataFrame, results: list[Any],
                     run: Callable[[list[tuple[str, list[dict[str, Any]]]]], list[Any]] | None = None,
                     ) -> tuple[list[Any], list[dict[str, int]]]:
    """`results` with queries that repeat another's run of five words drawn again (REPHRASE_ROUNDS rounds).

    Each round's batches run as the build runs any: `run` takes (intent, product rows) batches and returns their
    results in order (None: `run_batch` here, one after the other; the flow submits them as tasks). The outcome
    depends only on `results`, so every task runner and answer-set engine publishes the same split.

    Returns:
        (results, [{"round", "repeats", "rephrased"} per round run]) for the manifest.

    Raises:
        BuildInterrupted: a signal stopped a round (from `run`).
    """
    if run is None:
        def run(batches: list[tuple[str, list[dict[str, Any]]]]) -> list[Any]:
            return [r for intent, batch in batches for r in run_batch(batch, intent, ctx)]

    results = list(results)
    rounds = []
    for round_no in range(1, REPHRASE_ROUNDS + 1):
        repeats, batches = rephrase_batches(config, ctx, products, results, round_no)
        if not repeats:
            break
        rounds.append({"round": round_no, "repeats": len(repeats),
                       "rephrased": take_rephrased(results, repeats, run(batches))})
    return results, rounds


def assemble(config: BuildConfig, ctx: BuildContext, products: pl.DataFrame, sampling: dict[str, Any],
             catalog_manifest: dict[str, Any], results: list[Any], split: str, version: str | None,
             root: Path, allow_empty: bool = False, rephrased: list[dict[str, int]] | None = None) -> BuildOutcome:
    """Merge batch results (stage counters included), run the data expectations and publish the split version.

    `rephrased` says what `rephrase_repeats` did, per round (the manifest's "rephrased").

    Raises:
        ExpectationsFailed: an ERROR expectation of ecombench.validation.expectations failed on the catalog
            snapshot (`products`) or the accepted tasks; nothing is written.
        VersionExists, SchemaError: from publish_split (nothing is written).
        BuildInterrupted: SIGINT or SIGTERM arrived after the last batch (nothing is written).
        EmptySplit: no candidate was accepted and `allow_empty` is False (nothing is written).
    """
    raise_if_stopping()
    with phase("  agent checks (oracle, null)"):
        results, agent_checks = check_agents(config, results, ctx.table, artifacts=ctx.artifacts)  # oracle_failed
    tasks = [r.task for r in results if r.task is not None]
    rejections = [r.rejection for r in results if r.rejection is not None]
    # Funnel: a candidate counts once for each stage it cleared on its final attempt.
    funnel = {intent: {str(s): 0 for s in range(1, 8)} for intent in config.intents}
    attempts: Counter = Counter()
    for r in results:
        rec = r.task or r.rejection
        assert rec is not None  # every result holds a task or a rejection
        cleared = 7 if r.task else rec["stage"] - 1
        for s in range(1, cleared + 1):
            funnel[rec["intent"]][str(s)] += 1
        attempts.update(r.stats)
    if not tasks and not allow_empty:
        reasons = Counter(r["reason"] for r in rejections).most_common(3)
        raise EmptySplit(f"no candidate was accepted ({len(rejections)} rejected: "
                         f"{', '.join(f'{k} {v}' for k, v in reasons) or 'none sampled'}); nothing was published "
                         "(more --candidates or another --catalog, or --allow-empty to publish an empty split)")
    version = version or next_version(root / split)
    raise_if_stopping()
    with phase("  data expectations (GX import + suites)"):
        # In the worker `ecombench build` started (ecombench/pipeline/expectations_job.py), else here.
        expectations = expectations_job.run(products, tasks, Path(config.catalog), config.partition, ctx.intents,
                                            artifacts=ctx.artifacts, stored_suite=ctx.catalog_suite)
    manifest = {
        "schema_version": 1,
        "kind": "split",
        "split": split,
        "version": version,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "code_version": CODE_VERSION,
        **code_state(),
        "tables_sha256": tables_sha256(),
        "config": config.model_dump(),
        "config_hash": ctx.config_hash,
        "catalog": {"path": str(Path(config.catalog).resolve()), "fingerprint": ctx.catalog_fingerprint,
                    "products": catalog_manifest.get("counts", {}).get("products"),
                    "field_table_current": catalog_manifest.get("field_table_sha256")
                    == tables_sha256()["fields.toml"]},
        "seed": config.seed,
        "verbaliser": verbaliser_manifest(ctx),
        "sampling": {k: {kk: vv for kk, vv in v.items() if kk != "candidates"} for k, v in sampling.items()},
        "funnel": funnel,
        "stage_passes_all_attempts": dict(sorted(attempts.items())),
        "resumed_candidates": sum(r.resumed for r in results),
        "rephrased": rephrased or [],
        "agent_checks": agent_checks,
        # publish_split refuses (ExpectationsFailed) when an ERROR expectation failed.
        "expectations": expectations,
    }
    with phase("  publish (card, reports, matplotlib)"):
        path = publish_split(root, split, version, tasks, rejections, manifest, before_rename=raise_if_stopping)
    return BuildOutcome(path=path, manifest=json.loads((path / "manifest.json").read_text(encoding="utf-8")))


def note_answer_engine(ctx: BuildContext) -> None:
    """Put a partitioned build's question counts in the timing breakdown (`--verbose`)."""
    engine = ctx.answer_engine
    if engine is not None:
        s = engine.stats
        record(f"  (answer sets: {s['questions']} questions in {s['passes']} passes over {engine.n_partitions} "
               f"partitions, {s['partition_loads']} partition loads, {s['exact_rounds']} exact-support rounds)", 0.0)


def build_split(config: BuildConfig, split: str, version: str | None = None, root: Path | None = None, *,
                artifacts: Path, allow_empty: bool = False) -> BuildOutcome:
    """Build and publish a split in this process, without Prefect (library use and tests).

    The Prefect flow `build_flow` runs the same steps with batches as mapped tasks and gives
    byte-identical tasks.jsonl.

    Args:
        config: the build configuration.
        split: split name (directory under the splits root).
        version: version name; None takes the next free "v<N>".
        root: splits root; None is <artifacts>/splits.
        artifacts: the artifacts root (caches; the default splits root).
        allow_empty: publish a split even when every candidate was rejected (else EmptySplit).

    Returns:
        Where the version was published and its manifest.

    Raises:
        What `build_flow` raises.
    """
    check_split_names(split, version)
    root = root or Path(artifacts) / "splits"
    ctx, products, sampling, catalog_manifest = plan_build(config, artifacts)
    results = [r for intent, batch in batches_of(products, sampling, config.batch_size, ctx.reviews)
               for r in run_batch(batch, intent, ctx)]
    results, rephrased = rephrase_repeats(config, ctx, products, results)
    note_answer_engine(ctx)
    with reserve_version(root / split, version) as version:
        return assemble(config, ctx, products, sampling, catalog_manifest, results, split, version, root,
                        allow_empty, rephrased)
