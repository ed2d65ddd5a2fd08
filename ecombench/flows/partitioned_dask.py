"""Partition passes as Dask tasks: each partition of the snapshot is indexed and kept on one worker.

With `--answer-sets partitioned --task-runner dask` the candidates run in the flow's process (their batches on
threads, as with the threads runner) and every round of their questions becomes one Dask task per partition.
Partition i goes to worker i mod n (loosely: the scheduler may move it when that worker is gone), which loads
it once and keeps it (`ecombench.answers.partitioned.answer_on_partition`), so a worker holds about 1/n of the
catalog's index and nothing else of the catalog; with `--partitions-kept K` a worker keeps at most K partitions
and indexes the others again on each pass, so its memory stays bounded however large the catalog.
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
from collections.abc import Iterator, Sequence
from typing import Any

from ecombench.answers.partitioned import PartitionedCatalog, Question, answer_on_partition
from ecombench.pipeline.build import code_digest
from ecombench.pipeline.config import BuildConfig


class DaskPasses:
    """A `ecombench.answers.partitioned.PassRunner` that maps a round over the partitions as Dask tasks.

    Args:
        client: a dask.distributed Client.
        engine: the engine whose partitions (snapshot, bounds, reviews) the tasks load.
        fingerprint: the snapshot's fingerprint (workers key their kept partitions by it, the field table and the
            code's digest).
    """

    def __init__(self, client: Any, engine: PartitionedCatalog, fingerprint: str):
        # What a worker's kept partitions are keyed by beside their rows: the snapshot's bytes, the field table
        # that indexed them and the code, so a long-lived cluster never answers a build from another's index.
        key = hashlib.sha256(fingerprint.encode())
        key.update(pickle.dumps(engine.table, protocol=pickle.HIGHEST_PROTOCOL))
        key.update(code_digest().encode())
        self.client, self.engine, self.fingerprint = client, engine, key.hexdigest()
        self.workers = sorted(client.scheduler_info()["workers"])
        if not self.workers:
            raise RuntimeError("the Dask cluster has no workers")
        [self.table] = client.scatter([engine.table], broadcast=True)  # sent to each worker once
        self.tasks = 0

    def __call__(self, parts: Sequence[int], questions: Sequence[Question], exact_within: int) -> list[list[Any]]:
        """Partial answers of partitions `parts` to `questions`, one Dask task each, in `parts` order."""
        futures = []
        # The round's questions travel to each worker once, not once per partition task.
        [questions] = self.client.scatter([list(questions)], broadcast=True)
        for i in parts:
            start, stop = self.engine.bounds[i]
            futures.append(self.client.submit(
                answer_on_partition, str(self.engine.snapshot), self.fingerprint, self.table, start, stop,
                self.engine.with_reviews, questions, exact_within, self.engine.keep,
                str(self.engine.facts_path) if self.engine.facts_path else None, pure=False,
                workers=[self.workers[i % len(self.workers)]], allow_other_workers=True))
        self.tasks += len(futures)
        return self.client.gather(futures)


def _peak_memory(dask_worker: Any) -> dict[str, float]:
    """Run on a worker: its process memory now and the most its system monitor recorded, and its limit (bytes)."""
    samples = list(dask_worker.monitor.quantities["memory"])
    return {"memory_now": float(samples[-1]) if samples else 0.0, "memory_peak": float(max(samples, default=0)),
            "memory_limit": float(dask_worker.memory_manager.memory_limit or 0)}


def worker_memory(client: Any) -> dict[str, dict[str, float]]:
    """Dask's own memory figures of every worker: {address: {memory_now, memory_peak, memory_limit}} in bytes.

    `memory_peak` is the largest process memory the worker's SystemMonitor sampled (every 0.5 s by default,
    the last hour kept).
    """
    return dict(sorted(client.run(_peak_memory).items()))


@contextlib.contextmanager
def partition_client(config: BuildConfig) -> Iterator[Any]:
    """A dask.distributed Client for partition passes: on `config.dask_address`, else on a temporary LocalCluster.

    The local cluster has `config.dask_workers` single-threaded worker processes, each limited to
    `config.dask_memory_limit` (Dask's own limit: it spills, pauses and at last restarts a worker above it).
    """
    # deferred: an optional dependency (the dask extra)
    from distributed import Client, LocalCluster

    if config.dask_address:
        with Client(config.dask_address) as client:
            yield client
        return
    with LocalCluster(n_workers=config.dask_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit=config.dask_memory_limit or "auto") as cluster, Client(cluster) as client:
        yield client
