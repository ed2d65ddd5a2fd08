"""The `build` flow: catalog snapshot -> sampled candidates -> stages 2-7 in batches -> a published split version.

The steps are plain functions of ecombench.pipeline.build (`build_split` runs them without Prefect); this
module runs them as a Prefect flow with batches as tasks, on threads or a Dask cluster. Prefect costs ~20 ms
per task run (stack-notes §2), so candidates travel in batches of `config.batch_size`, one task each. Batch
results are awaited with `.result()` so a failing batch fails the flow instead of silently dropping candidates
(stack-notes pitfall 4).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from prefect import flow, task
from prefect import tags as prefect_tags
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import get_run_context
from prefect.task_runners import ThreadPoolTaskRunner

from ecombench.errors import ServerError, SettingError
from ecombench.flows.partitioned_dask import DaskPasses, partition_client, worker_memory
from ecombench.flows.prefect_server import progress_logger
from ecombench.flows.settings import artifacts_root
from ecombench.pipeline.build import (
    BuildInterrupted,
    WorkerSpec,
    assemble,
    batches_of,
    note_answer_engine,
    plan_build,
    rephrase_repeats,
    run_batch,
    sigterm_stops_the_build,
    stop_on_signals,
    stop_signal,
    stopping,
    worker_context,
)
from ecombench.pipeline.candidate import BuildContext
from ecombench.pipeline.config import BuildConfig
from ecombench.splits.publish import check_split_names, reserve_version
from ecombench.timing import phase, record


@contextlib.contextmanager
def _dask_partition_passes(config: BuildConfig, ctx: BuildContext) -> Any:
    """With answer_sets "partitioned" and the dask runner: the engine's passes run as Dask tasks for the block.

    Afterwards Dask's own memory figures of each worker go into the timing breakdown.
    """
    engine = ctx.answer_engine
    if engine is None or config.task_runner != "dask":
        yield
        return

    with partition_client(config) as client:
        passes = DaskPasses(client, engine, ctx.catalog_fingerprint)
        engine.runner = passes
        try:
            yield
        finally:
            engine.runner = None
        for address, m in worker_memory(client).items():
            record(f"  (dask worker {address}: peak {m['memory_peak'] / 2**30:.2f} GiB, now "
                   f"{m['memory_now'] / 2**30:.2f} GiB, limit {m['memory_limit'] / 2**30:.2f} GiB; "
                   f"{passes.tasks} partition tasks in all)", 0.0)


def _pass_reporter(log: logging.Logger, show_progress: bool) -> Callable[[int, int, float], None]:
    """A partitioned build's pass report: every pass to the flow run's log, every tenth also to stderr.

    Call it in the flow run: a pass runs on whichever candidate thread completes the round, outside any Prefect
    run context, so the report names the flow run itself.
    """
    flow_run = getattr(get_run_context(), "flow_run", None)
    extra = {"flow_run_id": str(flow_run.id)} if flow_run is not None else None

    def report(passes: int, questions: int, seconds: float) -> None:
        if extra is not None:
            log.info("answer-set pass %d: %d questions in %.1f s", passes, questions, seconds, extra=extra)
        if show_progress and passes % 10 == 0:
            print(f"  answer-set pass {passes}: {questions} question{'s' * (questions != 1)} in {seconds:.1f} s",
                  file=sys.stderr, flush=True)
    return report


@task(name="build-batch", cache_policy=NO_CACHE)
def build_batch_task(products: list[dict[str, Any]], intent: str, spec: WorkerSpec
                     ) -> tuple[list[Any] | None, int, dict[str, int]]:
    """Prefect task: stages 2-7 for one batch of candidates, in whatever process the task runner chose.

    Returns:
        (results, this process's id, its LLM client's cumulative counters): the flow keeps the
        largest counters per process, so LLM usage on Dask workers reaches the manifest. Results are
        None when a signal stopped the batch (`STOP`).
    """
    ctx = worker_context(spec)
    try:
        return run_batch(products, intent, ctx), os.getpid(), dict(ctx.llm.stats) if ctx.llm else {}
    except BuildInterrupted:
        return None, os.getpid(), {}  # stopped by a signal: not a failure of the batch (no error log)


def _rephrase_rounds(config: BuildConfig, ctx: BuildContext, products: Any, results: list[Any],
                     spec: WorkerSpec) -> tuple[list[Any], list[dict[str, int]]]:
    """`ecombench.pipeline.build.rephrase_repeats` with each round's batches run as build-batch tasks.

    Raises:
        BuildInterrupted: a signal stopped a round.
    """
    def run(batches: list[tuple[str, list[dict[str, Any]]]]) -> list[Any]:
        futures = [build_batch_task.submit(batch, intent, spec) for intent, batch in batches]
        out = []
        for fut in futures:
            batch_results, _, _ = fut.result()
            if batch_results is None or stopping():
                raise BuildInterrupted(stop_signal(), 0, len(futures))
            out.extend(batch_results)
        return out

    return rephrase_repeats(config, ctx, products, results, run)


def partitioned_batches(config: BuildConfig) -> int:
    """The most batches a build of `config` can have (each intent's candidates in batches of `batch_size`)."""
    return len(config.intents) * -(-config.candidates_per_intent // config.batch_size)


def task_runner_for(config: BuildConfig) -> Any:
    """The Prefect task runner `config.task_runner` names.

    threads, or answer_sets "partitioned" (whose partition passes, not its batches, go to Dask:
    `_dask_partition_passes`): Prefect's ThreadPoolTaskRunner (one process). dask: prefect-dask's DaskTaskRunner on
    the scheduler at `config.dask_address`, else on a temporary LocalCluster of
    `config.dask_workers` single-threaded worker processes.

    Raises:
        SettingError, ServerError: see `check_dask_address`.
    """
    if config.task_runner == "threads" or config.answer_sets == "partitioned":
        # partitioned: the batches run in the flow's process; on Dask their partition passes are the tasks
        if config.answer_sets == "partitioned":
            # Every batch at once, so their candidates share each partition pass (pipeline.batched.shared_batcher);
            # the batches' threads mostly wait for passes.
            return ThreadPoolTaskRunner(max_workers=max(1, partitioned_batches(config)))
        return ThreadPoolTaskRunner()
    # deferred: prefect-dask is the dask extra, loaded only for the dask runner
    from prefect_dask import DaskTaskRunner

    if config.dask_address:
        check_dask_address(config.dask_address)
        return DaskTaskRunner(address=config.dask_address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": config.dask_workers, "threads_per_worker": 1,
                                          "processes": True, "dashboard_address": None,
                                          "memory_limit": config.dask_memory_limit or "auto"})


def check_dask_address(address: str, timeout: float = 5.0) -> None:
    """Check that a TCP connection to the Dask scheduler at `address` opens.

    Dask itself would wait about 30 s and end in a long traceback; this says at once what is wrong.

    Raises:
        SettingError: `address` is not tcp://host:port (one line naming --dask-address).
        ServerError: no connection opens within `timeout` seconds (one line naming --dask-address).
    """
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme not in ("tcp", "tls") or not parts.hostname:
        raise SettingError(f"--dask-address {address}: expected tcp://host:port (the address `dask scheduler` prints)")
    try:
        with socket.create_connection((parts.hostname, parts.port or 8786), timeout=timeout):
            pass
    except OSError as exc:
        raise ServerError(f"--dask-address {address}: cannot reach the Dask scheduler "
                          f"({exc.strerror or exc})") from None


class _DropInterruptionTracebacks(logging.Filter):
    """Prefect logs a flow's exception with its traceback; an interruption the user asked for needs neither."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], (BuildInterrupted, KeyboardInterrupt)):
            return False
        # A second Ctrl-C crashes the flow run on purpose: the CLI says so in one line.
        return "aborted by an interrupt signal" not in record.getMessage()


@contextlib.contextmanager
def _quiet_interruption() -> Any:
    logger, quiet = logging.getLogger("prefect.flow_runs"), _DropInterruptionTracebacks()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def run_build(config: BuildConfig, split: str, artifacts: str, version: str | None = None, root: str | None = None,
              show_progress: bool = False, allow_empty: bool = False) -> dict[str, Any]:
    """`build_flow` on the task runner `config.task_runner` names (what the CLI calls).

    Raises:
        SettingError, ServerError: the split or version name is not one folder name; the Dask scheduler
            address is malformed or unreachable.
        EcombenchError, SnapshotError: what `build_flow` raises.
        BuildInterrupted: SIGINT or SIGTERM arrived (handled by `stop_on_signals` while the build runs).
    """
    check_split_names(split, version)
    runner = task_runner_for(config)
    splits = Path(root) if root else Path(artifacts) / "splits"
    with stop_on_signals(), _quiet_interruption(), reserve_version(splits / split, version) as version:
        tags = [f"split:{split}", f"version:{version}", f"verbaliser:{config.verbaliser}",
                *(f"intent:{i}" for i in config.intents)]
        with prefect_tags(*tags):
            return build_flow.with_options(task_runner=runner, flow_run_name=f"{split}-{version}")(
                config, split, artifacts, version, root, show_progress, allow_empty)


@flow(name="build")
def build_flow(config: BuildConfig, split: str, artifacts: str, version: str | None = None, root: str | None = None,
               show_progress: bool = False, allow_empty: bool = False) -> dict[str, Any]:
    """Prefect flow: plan (stage 1), map batches over stages 2-7, publish the split version.

    Batch tasks carry a `WorkerSpec`, never the context: each process that runs them (this one
    for threads, each Dask worker) loads the context once. Results come back in submission
    order, so any runner gives the same tasks.jsonl.

    Args:
        config: the build configuration.
        split: split name (directory under the splits root).
        artifacts: the artifacts root (caches; the default splits root).
        version: version name; None takes the next free "v<N>".
        root: splits root; None is <artifacts>/splits.
        show_progress: print "batch i/n" lines to stderr as batches finish.
        allow_empty: publish a split even when every candidate was rejected (else EmptySplit).

    Returns:
        {"path": str, "manifest": dict} of the published version.

    Raises:
        SnapshotError: the snapshot is missing or malformed.
        SettingError: an intent is unknown, or an llm build lacks its server URL or model.
        NoCandidates: no product is eligible for any intent.
        EmptySplit: every candidate was rejected and `allow_empty` is False.
        ExpectationsFailed: an ERROR data expectation failed.
        VersionExists: the version already exists.
        In every case nothing is written.
    """
    with sigterm_stops_the_build():
        return _build_flow_body(config, split, artifacts, version, root, show_progress, allow_empty)


def _build_flow_body(config: BuildConfig, split: str, artifacts: str, version: str | None, root: str | None,
                     show_progress: bool, allow_empty: bool) -> dict[str, Any]:
    """What `build_flow` runs (see there), with SIGTERM stopping the build as Ctrl-C does."""
    # Under Dask the workers hold the index (or, partitioned, the partitions); this process samples and publishes.
    with phase("  plan (snapshot, index, sampling)"):
        ctx, products, sampling, catalog_manifest = plan_build(
            config, Path(artifacts), with_index=config.task_runner == "threads" or config.answer_sets == "partitioned")
    batches = batches_of(products, sampling, config.batch_size, ctx.reviews)
    spec = WorkerSpec.of(ctx)
    # answer_sets "partitioned" on Dask: the batches run here, their partition passes are the cluster's tasks.
    with _dask_partition_passes(config, ctx):
        batches_started = time.perf_counter()
        log = progress_logger("ecombench.build")
        if ctx.answer_engine is not None:
            ctx.answer_engine.on_pass = _pass_reporter(log, show_progress)
        log.info("building split %s from %s: %d batches over %d intents", split, config.catalog, len(batches),
                 len(config.intents))
        # Batches are submitted a window at a time, so a signal leaves few to cancel; results are taken in
        # submission order, so any runner and window give the same tasks.jsonl.
        window = 2 * (config.dask_workers if config.task_runner != "threads" else (os.cpu_count() or 2))
        if config.answer_sets == "partitioned":
            window = len(batches)  # all of them side by side: they share partition passes (task_runner_for)
        futures: list[Any] = []
        results = []
        usage: dict[int, Counter] = {}
        cached = 0
        for done in range(1, len(batches) + 1):
            while len(futures) < min(done - 1 + window, len(batches)) and not stopping():
                intent, batch = batches[len(futures)]
                futures.append(build_batch_task.submit(batch, intent, spec))
            if stopping() and len(futures) < done:
                break
            batch_results, pid, llm_stats = futures[done - 1].result()  # raises if the batch failed
            if batch_results is None:  # stopped by a signal
                break
            results.extend(batch_results)
            cached += bool(batch_results) and all(r.resumed for r in batch_results)
            seen = usage.setdefault(pid, Counter())
            for k, v in llm_stats.items():
                seen[k] = max(seen[k], v)  # cumulative per process: the largest is the latest
            accepted = sum(r.task is not None for r in results)
            log.info("batch %d/%d done: %d candidates, %d accepted", done, len(batches), len(results), accepted)
            if show_progress:
                print(f"  batch {done}/{len(batches)} done: {len(results)} candidates, {accepted} accepted",
                      file=sys.stderr, flush=True)
        if stopping():
            for fut in futures:
                with contextlib.suppress(BaseException):
                    fut.wait()  # a running batch stops before its next candidate
            finished = sum(1 for f in futures if f.state.is_completed() and f.result()[0] is not None)
            err = BuildInterrupted(stop_signal(), finished, len(batches))
            log.warning("%s", err)
            raise err
        if cached:
            note = f"resumed {cached} of {len(batches)} batches from the cache (artifacts/cache/batches)"
            log.info("%s", note)
            if show_progress:
                print(f"  {note}", file=sys.stderr, flush=True)
        results, rephrased = _rephrase_rounds(config, ctx, products, results, spec)
        record("  stages 2-7 (batches)", time.perf_counter() - batches_started)
        note_answer_engine(ctx)
    if ctx.llm is not None and config.task_runner != "threads":
        ctx.llm.stats.clear()
        for counts in usage.values():
            ctx.llm.stats.update(counts)
    outcome = assemble(config, ctx, products, sampling, catalog_manifest, results, split, version,
                       Path(root) if root else Path(artifacts) / "splits", allow_empty, rephrased)
    # The report shows up in the Prefect UI beside the run (artifact keys: lowercase, digits, dashes).
    key = re.sub(r"[^a-z0-9-]+", "-", f"split-{split}-report".lower()).strip("-")
    create_markdown_artifact((outcome.path / "report.md").read_text(encoding="utf-8"), key=key,
                             description=f"Rejection report of {outcome.path}")
    return {"path": str(outcome.path), "manifest": outcome.manifest}


@flow(name="build-split")
def deployed_build(config: BuildConfig, split: str, version: str | None = None, root: str | None = None,
                   artifacts: str | None = None) -> dict[str, Any]:
    """Deployment entrypoint (`prefect deploy flows/build.py:deployed_build`).

    Runs `build_flow` as a subflow on the task runner `config.task_runner` names.

    A deployment runs its flow with the runner fixed in the decorator; this parent flow lets a
    deployment run's parameters choose threads or a Dask cluster like `ecombench build` does.
    It is an edge like the CLI: `artifacts` None is `flows.settings.artifacts_root()` of the process running it.

    Returns:
        What `build_flow` returns.

    Raises:
        What `run_build` raises (the run fails with that one line).
    """
    return run_build(config, split, str(artifacts or artifacts_root()), version, root)
