"""The `ingest` Prefect flow: raw Amazon Reviews 2023 files in, one catalog snapshot out.

All the work is `ecombench.catalog.ingest.write_catalog_snapshot`, run as one coarse Prefect task: the
files are streamed in blocks of lines parsed by a process pool of its own, and a Prefect task
per block would cost more in orchestration (~20 ms each) than the parsing itself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from ecombench.catalog.ingest import write_catalog_snapshot
from ecombench.errors import OutputError
from ecombench.flows.prefect_server import progress_logger
from ecombench.io import forget_published, mark_published, remove_stale_temps
from ecombench.tables.fields import load_field_table
from ecombench.validation.catalog_stats import copy_base_vocabulary, write_catalog_stats

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "data" / "sample"


def sample_inputs() -> tuple[list[Path], list[Path]]:
    """The bundled real sample (ecombench/data/sample/SOURCES.md): ([metadata files], [review files])."""
    return [SAMPLE_DIR / "meta.jsonl.gz"], [SAMPLE_DIR / "reviews.jsonl.gz"]


@contextlib.contextmanager
def disk_errors_as_output_errors(out_dir: str | os.PathLike) -> Iterator[None]:
    """An OSError while writing (a full disk, a quota, a read-only folder) as one OutputError line.

    Raised inside the Prefect task, so Prefect logs a user error (which the CLI keeps to one line) rather
    than a traceback. A missing input or an existing snapshot keep their own errors.

    Raises:
        OutputError: naming the file (or `out_dir`) and the system's reason.
    """
    try:
        yield
    except (FileNotFoundError, FileExistsError):
        raise
    except OSError as exc:
        reason = exc.strerror or str(exc).splitlines()[0]
        where = f"{exc.filename}: " if exc.filename else ""
        raise OutputError(f"{where}{reason} while ingesting into {out_dir}; nothing was published") from exc


# NO_CACHE: the snapshot directory itself is the completion marker; a cached manifest must never
# stand in for a directory that was since deleted.
@task(name="write-catalog-snapshot", cache_policy=NO_CACHE)
def write_snapshot_task(meta_paths: Sequence[str], review_paths: Sequence[str], out_dir: str,
                        batch_size: int, workers: int | None = None, reader: str = "native",
                        name: str | None = None) -> dict[str, Any]:
    """Stream every input into the snapshot directory (its manifest names it `name`); returns the manifest."""
    logger = progress_logger("ecombench.ingest")
    seen: dict[str, int] = {}

    def progress(file_name: str, lines: int) -> None:
        # Log roughly every million lines per file, not every batch.
        if lines // 1_000_000 > seen.get(file_name, -1):
            seen[file_name] = lines // 1_000_000
            logger.info("%s: %s lines read", file_name, f"{lines:,}")

    with disk_errors_as_output_errors(Path(out_dir).with_name(name) if name else out_dir):
        return write_catalog_snapshot(meta_paths, review_paths, out_dir, batch_size=batch_size, progress=progress,
                                      workers=workers, reader=reader, name=name)


@task(name="write-catalog-stats", cache_policy=NO_CACHE)
def write_stats_task(out_dir: str, name: str | None = None) -> dict[str, Any]:
    """The snapshot's statistics, once (validation.catalog_stats): what every build over it would recompute.

    `name` is the snapshot's final name when `out_dir` is a temporary one (for error messages).
    """
    with disk_errors_as_output_errors(Path(out_dir).with_name(name) if name else out_dir):
        record = write_catalog_stats(Path(out_dir), load_field_table())
    progress_logger("ecombench.ingest").info("catalog statistics written (%s)", ", ".join(
        f"{k} {v:.1f} s" for k, v in record["seconds"].items()))
    return record


@flow(name="ingest")
def ingest_flow(meta_paths: Sequence[str | os.PathLike], review_paths: Sequence[str | os.PathLike],
                out_dir: str | os.PathLike, batch_size: int = 20_000, workers: int | None = None,
                reader: str = "native", with_stats: bool = True,
                vocabulary_from: str | os.PathLike | None = None) -> dict[str, Any]:
    """Ingest metadata and review files into the catalog snapshot `out_dir`.

    Args:
        meta_paths: metadata JSONL files (raw or Hugging Face form, plain or gzip), in order;
            the first occurrence of a parent_asin wins.
        review_paths: review JSONL files.
        out_dir: snapshot directory to create (e.g. artifacts/catalogs/<name>); must not exist.
        batch_size: rows per parquet row group (and per streamed batch).
        workers: threads (native reader) or processes (python reader) parsing blocks of lines; None uses
            every CPU this process may use, 1 parses in the flow's own thread. The snapshot is the same
            for any count.
        reader: "native" (the default: DuckDB's JSON reader, ecombench.catalog.native) or "python" (orjson per
            record); the snapshot's content is the same.
        with_stats: also write the snapshot's statistics (`ecombench.validation.catalog_stats`: normalised text,
            value vocabulary, the catalog suite), which builds then read instead of recomputing. The snapshot
            appears at `out_dir` only with them.
        vocabulary_from: another snapshot whose stored fact vocabulary is copied into this one and read beneath
            its own (`ecombench.validation.catalog_stats.copy_base_vocabulary`): a new category whose pages carry
            few labels is read with the values the other catalog learned.

    Returns:
        The snapshot manifest (see `ecombench.catalog.ingest.write_catalog_snapshot`).

    Raises:
        FileNotFoundError: an input is missing. FileExistsError: `out_dir` exists.
    """
    out = Path(out_dir)
    if out.exists():
        raise FileExistsError(f"catalog snapshot already exists, not overwriting: {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out.parent, out.name)  # what a killed ingest of this snapshot left
    # The snapshot and its statistics are written under a hidden name and renamed together: an ingest stopped
    # while the statistics run (Ctrl-C, SIGTERM, a crash) publishes no snapshot, and the same command runs again.
    staging = out.parent / f".{out.name}.staging-{os.getpid()}" if with_stats else out
    try:
        manifest = write_snapshot_task([str(p) for p in meta_paths], [str(p) for p in review_paths],
                                       str(staging), batch_size, workers, reader, out.name)
        if vocabulary_from is not None:
            copy_base_vocabulary(Path(vocabulary_from), staging)
        if with_stats:
            write_stats_task(str(staging), out.name)
            try:
                os.rename(staging, out)
            except OSError as exc:  # another ingest published this snapshot meanwhile
                raise FileExistsError(f"catalog snapshot already exists, not overwriting: {out}") from exc
            # What this process published is the snapshot, not its staging name (a stop line names it).
            mark_published(out)
            forget_published(staging)
    except BaseException:
        if staging != out:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    counts = manifest["counts"]
    progress_logger("ecombench.ingest").info("snapshot %s: %s products, %s reviews, %s bad records (fingerprint %s)",
                          out_dir, counts["products"], counts["reviews"], counts["bad_records"],
                          manifest["fingerprint"][:12])
    return manifest
