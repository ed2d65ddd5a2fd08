"""Writing a catalog snapshot: Amazon Reviews 2023 metadata and review files in, one snapshot directory out.

The file edge of ingestion. Files, plain or gzip (inflated by ISA-L), are read in blocks of
lines; a pool of worker processes parses and normalises the blocks (`ecombench.catalog.records`) while
this process decompresses, applies the cross-record rules in file and line order and writes
parquet, `bad_records.jsonl` and `manifest.json` under a temporary name renamed when complete.
The snapshot is the same whatever the worker count or block size.

Memory is bounded by the blocks in flight and one row group being written, plus the id tables of the
cross-record rules (`ecombench.catalog.id_tables`: about 12 bytes per ingested product, 16 per distinct review
content and 16 per reviewed parent_asin, counted while the reviews are spilled); for the full release (48M
products, 571M reviews) budget about 10 GB for those tables.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import shutil
import sys
import threading
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from isal import isal_zlib

from ecombench.catalog.id_tables import asin_codes, code_counts, counts_of
from ecombench.catalog.integrity import snapshot_files
from ecombench.catalog.native import convert_block_native
from ecombench.catalog.records import (
    DUPLICATE_PARENT_ASIN,
    Block,
    Converted,
    CrossRecordRules,
    RawBlock,
    RecordError,
    TruncatedInput,
    convert_block,
    parse_line,
)
from ecombench.catalog.schema import PRODUCT_SCHEMA, REVIEW_SCHEMA, SCHEMA_VERSION
from ecombench.errors import InputError
from ecombench.io import mark_published
from ecombench.tables.fields import FieldTable, load_field_table

# products.parquet without review_count: what a block's conversion gives (the count is added as it is written).
_PRODUCT_PART_SCHEMA = PRODUCT_SCHEMA.remove(PRODUCT_SCHEMA.get_field_index("review_count"))

# --------------------------------------------------------------------------------------------
# Reading lines


class _Truncated(Exception):
    """The gzip stream stops early or is corrupt (internal to the readers below)."""


# Compressed bytes read (and hashed) at a time, and the most one inflate step returns (the rest of its input waits
# in the inflater's unconsumed tail), so even a pathological 1000:1 stream holds at most this much. Few, large
# steps: each read, hash and inflate releases the GIL and must take it back from the worker threads, a wait of up
# to the interpreter's switch interval (5 ms) each, while the pool waits for the blocks this thread cuts.
_READ_BYTES = 4 * 1024 * 1024
_INFLATE_BYTES = 32 * 1024 * 1024
BLOCK_BYTES = 4 * 1024 * 1024  # decompressed bytes per block: one unit of work for a worker
# The native reader's blocks are larger: each costs a few DuckDB queries whose fixed cost 16 MB amortises.
NATIVE_BLOCK_BYTES = 16 * 1024 * 1024


class _Hashed:
    """A binary file read through `read`, every byte read also fed to `digest` (when given)."""

    def __init__(self, fh: Any, digest: Any | None):
        self.fh, self.digest = fh, digest

    def read(self, n: int) -> bytes:
        data = self.fh.read(n)
        if self.digest is not None:
            self.digest.update(data)
        return data

    def drain(self) -> None:
        """Feed the rest of the file to the digest (a truncated stream is not read to its end)."""
        if self.digest is not None:
            while self.read(1 << 20):
                pass


def _decompressed_chunks(path: Path, plain_bytes: int, digest: Any | None = None) -> Iterator[bytes]:
    # ISA-L's inflate (`isal`) is about 2x zlib's on this data (benchmarks/RESULTS.md). A stream
    # of concatenated gzip members is read whole, like gzip.open does. Raises _Truncated when the
    # stream stops early or is corrupt; every byte decoded before that has been yielded. `digest`
    # (a hashlib object) gets every byte of the file, so it is hashed in the same read.
    with open(path, "rb") as raw:
        fh = _Hashed(raw, digest)
        if raw.read(2) != b"\x1f\x8b":
            raw.seek(0)
            while chunk := fh.read(plain_bytes):
                yield chunk
            return
        raw.seek(0)
        inflater = isal_zlib.decompressobj(wbits=31)
        in_member = False
        while buf := fh.read(_READ_BYTES):
            pending = False  # the last step returned its most: more output may wait without more input
            while buf or pending:
                in_member = True
                try:
                    out = inflater.decompress(buf, _INFLATE_BYTES)
                except isal_zlib.error as exc:  # type: ignore[misc]  # isal's stub declares error an instance, not a class
                    fh.drain()
                    raise _Truncated(str(exc)) from None
                if out:
                    yield out
                buf, pending = inflater.unconsumed_tail, len(out) == _INFLATE_BYTES
                if inflater.eof:
                    rest = inflater.unused_data
                    inflater = isal_zlib.decompressobj(wbits=31)
                    in_member, pending = False, False
                    # gzip.open ignores zero padding after the last member; so do we.
                    buf = rest if rest.strip(b"\x00") else b""
        if in_member and not inflater.eof:
            raise _Truncated("Compressed file ended before the end-of-stream marker was reached")


def iter_blocks(path: str | os.PathLike, block_bytes: int = BLOCK_BYTES,
                split: bool = True, digest: Any | None = None) -> Iterator[Block | TruncatedInput]:
    """Lines of a plain or gzip JSONL file in blocks of about `block_bytes`, streamed.

    Blank lines are included (callers skip them) so line numbers match the file. A gzip file
    that stops early or is corrupt yields its complete lines, then one `TruncatedInput` whose
    `line` is the last complete line + 1, then ends: everything read before it stands. Gzip is
    recognised by its magic bytes, not by the file name.

    Args:
        path: the file.
        block_bytes: decompressed bytes after which a block is cut at the last line break; a
            block holds at least one whole line however long.
        split: False yields `RawBlock`s, whose lines are split only when read (the native reader
            parses the bytes whole); the blocks and line numbers are the same.
        digest: a hashlib object fed every byte of the file as it is read (a truncated stream's
            rest too), so ingest hashes its inputs without reading them twice.

    Yields:
        `Block`s in line order, then at most one `TruncatedInput`.

    Raises:
        OSError: the file cannot be opened or read.
    """
    line_no = 0
    parts: list[bytes] = []
    size = 0
    try:
        for chunk in _decompressed_chunks(Path(path), block_bytes, digest):
            parts.append(chunk)
            size += len(chunk)
            if size < block_bytes:
                continue
            data = b"".join(parts)
            cut = data.rfind(b"\n")
            if cut < 0:
                parts = [data]
                continue
            parts, size = [data[cut + 1:]], len(data) - cut - 1
            block = _block(line_no + 1, data, cut, split)
            yield block
            line_no += len(block.lines) if split else block.count  # type: ignore[attr-defined]
    except _Truncated as exc:
        data = b"".join(parts)
        cut = data.rfind(b"\n")
        if cut >= 0:
            block = _block(line_no + 1, data, cut, split)
            yield block
            line_no += len(block.lines) if split else block.count  # type: ignore[attr-defined]
        yield TruncatedInput(line_no + 1, f"gzip stream ends or is corrupt after line {line_no}: {exc}")
        return
    data = b"".join(parts)
    if data:
        ends = data.endswith(b"\n")
        yield _block(line_no + 1, data, len(data) - 1 if ends else len(data), split, last_has_newline=ends)


def _block(first_line: int, data: bytes, end: int, split: bool, last_has_newline: bool = True) -> Block:
    # The lines of data[:end] (no final line break) as a Block, or a RawBlock that splits them when read.
    if split:
        return Block(first_line, data[:end].split(b"\n"), last_has_newline=last_has_newline)
    # The line breaks' positions, found once here by numpy (which releases the GIL; a loop of bytes.find in the worker
    # held it for ~0.3 us a line): the block's line count, and where the native reader cuts its lines.
    breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8, count=end) == ord("\n"))
    return RawBlock(first_line, data, end, len(breaks) + 1, last_has_newline=last_has_newline, breaks=breaks)


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, bytes] | TruncatedInput]:
    """Lines of a plain or gzip JSONL file with their 1-based numbers, streamed.

    Args:
        path: the file.

    Yields:
        `(line_number, raw_bytes)` for every line (with its newline), blank ones included; a gzip
        file that stops early or is corrupt ends with one `TruncatedInput` (see `iter_blocks`).
    """
    for block in iter_blocks(path):
        if isinstance(block, TruncatedInput):
            yield block
            return
        for k in range(len(block.lines)):
            yield block.first_line + k, block.raw(block.first_line + k)


# --------------------------------------------------------------------------------------------
# Blocks to Arrow batches (runs in worker processes)


def rows_to_batch(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    """Rows as one pyarrow RecordBatch.

    Args:
        rows: dicts with the schema's keys (`normalize_product` / `normalize_review` rows).
        schema: the batch's schema.

    Returns:
        A batch of `len(rows)` rows.

    Raises:
        pyarrow.ArrowInvalid / ArrowTypeError: a value does not fit its column's type.
    """
    # Measured: from_pylist is ~3.5x faster than building flat value arrays and offsets in
    # Python for the list and struct columns (benchmarks/RESULTS.md).
    return pa.RecordBatch.from_pylist(rows, schema=schema)


READERS = ("python", "native")
"""`write_catalog_snapshot(reader=...)`: "native" (the default) parses blocks through DuckDB and Arrow kernels
(`catalog.native`), "python" per record with orjson (`catalog.records.convert_block`); the snapshot is the same."""


def _convert_native(kind: str, name: str, block: Block, table_path: str, table: FieldTable | None = None) -> Converted:
    # The native reader's unit of work (on a thread of this process: `table` is the writer's own); a block DuckDB or
    # pyarrow itself fails on (not a rule: its own error) is read by the Python rules instead, so the snapshot never
    # depends on it.
    # deferred: duckdb loads only for the native reader
    import duckdb

    try:
        if table is None and kind == "meta":  # reviews need no field table
            table = load_field_table(table_path, check_vocabulary=False)
        return convert_block_native(kind, name, block, table)
    except (duckdb.Error, pa.ArrowException):
        return _convert_to_batch(kind, name, block, table_path)


def _convert_to_batch(kind: str, name: str, block: Block, table_path: str) -> Converted:
    # The unit of work of a worker process: rows go back as one Arrow batch (cheap to pickle).
    conv = convert_block(kind, name, block, load_field_table(table_path, check_vocabulary=False))
    schema = _PRODUCT_PART_SCHEMA if kind == "meta" else REVIEW_SCHEMA
    conv.batch = rows_to_batch(conv.rows, schema)
    conv.rows = []
    return conv


# --------------------------------------------------------------------------------------------
# Snapshot writer


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, streamed.

    Raises:
        OSError: the file cannot be read.
    """
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def snapshot_fingerprint(input_digests: Sequence[tuple[str, str]], field_table_sha256: str) -> str:
    """sha256 over (schema version, (kind, sha256) of each input in order, field table sha256).

    The kind is included so the same files split differently between metadata and reviews
    give different fingerprints. No paths or times: the same bytes give the same fingerprint
    wherever and whenever they are ingested.

    Args:
        input_digests: (kind, hex sha256) of each input file, metadata first, in ingest order.
        field_table_sha256: hex sha256 of the field table file.

    Returns:
        64 hex characters (the manifest's `fingerprint`).
    """
    payload = {"schema_version": SCHEMA_VERSION, "inputs": [list(d) for d in input_digests],
               "field_table_sha256": field_table_sha256}
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


class _RowGroups:
    """Passes batches on to `write` as tables of exactly `size` rows (the last shorter).

    Row groups, and so the file's bytes, depend only on the rows and `size`, never on how the
    rows arrived (block sizes, worker count). Rows of consecutive input files share groups.
    """

    def __init__(self, write: Callable[[pa.Table], None], size: int):
        self.write, self.size = write, size
        self.pending: list = []
        self.rows = 0
        # Encoding a row group releases the GIL: one background thread overlaps it with reading
        # and claiming the next blocks. At most one group is in flight, so memory stays bounded.
        self._thread = ThreadPoolExecutor(1)
        self._writing: Future[None] | None = None

    def _write(self, table: pa.Table) -> None:
        if self._writing is not None:
            self._writing.result()
        # The group's chunks are combined on the writing thread too: a copy of every column, off the reading one.
        self._writing = self._thread.submit(lambda: self.write(table.combine_chunks()))

    def add(self, batch: pa.RecordBatch) -> None:
        """Queue `batch`; every `size` rows queued are handed to `write` as one table."""
        if batch.num_rows == 0:
            return
        self.pending.append(batch)
        self.rows += batch.num_rows
        while self.rows >= self.size:
            table = pa.Table.from_batches(self.pending)
            self._write(table.slice(0, self.size))
            rest = table.slice(self.size)
            self.pending, self.rows = rest.to_batches(), rest.num_rows

    def flush(self) -> None:
        """Hand the rows still queued to `write` and wait until every write is done."""
        if self.rows:
            self._write(pa.Table.from_batches(self.pending))
        if self._writing is not None:
            self._writing.result()
        self.pending, self.rows, self._writing = [], 0, None

    def close(self) -> None:
        """Wait for a write in flight (its error, if any, was or will be raised by `flush`)."""
        self._thread.shutdown(wait=True)


def _ordered(jobs: Iterator[tuple[int, Block | TruncatedInput]], runs: Sequence[Callable[[Block], Any]],
             executor: Executor | None, ahead: int) -> Iterator[tuple[int, Block | TruncatedInput, Any]]:
    # (input k, block, runs[k](block)) in job order, at most `ahead` jobs in flight; the truncation marker passes
    # through unrun (result None).
    pending: deque = deque()
    for k, job in jobs:
        if executor is None or not isinstance(job, Block):
            while pending:
                done_k, done_job, fut = pending.popleft()
                yield done_k, done_job, fut.result()
            yield k, job, (runs[k](job) if isinstance(job, Block) else None)
            continue
        pending.append((k, job, executor.submit(runs[k], job)))
        if len(pending) >= ahead:
            done_k, done_job, fut = pending.popleft()
            yield done_k, done_job, fut.result()
    while pending:
        done_k, done_job, fut = pending.popleft()
        yield done_k, done_job, fut.result()


class _Converted:
    """The converted blocks of every input as one ordered stream, handed out an input at a time.

    One stream, so the pool converts the next input's first blocks (the metadata's, after the reviews) while this
    one's last are still claimed or converted: no core waits at the seam between two files.
    """

    def __init__(self, stream: Iterator[tuple[int, Block | TruncatedInput, Any]]):
        self._stream = stream
        self._head: tuple[int, Block | TruncatedInput, Any] | None = None

    def of(self, k: int) -> Iterator[tuple[Block | TruncatedInput, Converted | None]]:
        """(block, converted) of input `k`, in line order; inputs are taken in the stream's order, each once."""
        while True:
            if self._head is None:
                self._head = next(self._stream, None)
                if self._head is None:
                    return
            if self._head[0] != k:  # the next input's (an empty file has no block at all)
                return
            _, block, conv = self._head
            self._head = None
            yield block, conv


# A review block as spilled by `_spill_reviews`: its rows plus each row's content key (for `review_id` copies).
_REVIEW_SPILL_SCHEMA = REVIEW_SCHEMA.append(pa.field("_content_key", pa.binary(), nullable=False))


class ReviewTotals:
    """Converted reviews per parent_asin, counted while the review files are spilled; a product's `review_count`.

    Amazon ids are counted as base-36 codes in numpy (`ecombench.catalog.id_tables`), other ids in a Counter:
    16 bytes per reviewed product instead of a dict entry's ~100.
    """

    def __init__(self) -> None:
        self._chunks: list[np.ndarray] = []
        self._other: Counter = Counter()
        self._distinct: np.ndarray | None = None
        self._counts = np.zeros(0, dtype=np.int64)

    def add(self, ids: pa.Array) -> None:
        """Count one block's review parent_asins (a string array, no nulls)."""
        codes, ok = asin_codes(ids)
        self._chunks.append(codes[ok])
        if not ok.all():
            self._other.update(ids.filter(pa.array(~ok)).to_pylist())

    def of(self, ids: pa.Array) -> pa.Array:
        """The review count of each product id (int64 array)."""
        if self._distinct is None:
            self._distinct, self._counts = code_counts(self._chunks)
            self._chunks = []
        codes, ok = asin_codes(ids)
        counts = counts_of(codes, self._distinct, self._counts)
        if not ok.all():
            names = ids.to_pylist()
            for i in np.flatnonzero(~ok).tolist():
                counts[i] = self._other.get(names[i], 0)
        return pa.array(counts, pa.int64())


def _spill_reviews(reviews: list[tuple[Path, Iterator[tuple[Block | TruncatedInput, Converted | None]]]],
                   spill: Any, progress: Callable[[str, int], None] | None
                   ) -> tuple[list[list[tuple[int, list[dict[str, Any]]] | TruncatedInput]], ReviewTotals]:
    """Every review file's converted blocks in order (`reviews`: each file and its blocks), written to `spill`.

    Returns:
        (per file, per block: (last line, bad records) or the file's `TruncatedInput`; converted reviews per
        parent_asin — a product's review_count, since a review is dropped later only when it has no product).
    """
    spilled: list[list[tuple[int, list[dict[str, Any]]] | TruncatedInput]] = []
    per_product = ReviewTotals()
    for path, converted in reviews:
        entries: list[tuple[int, list[dict[str, Any]]] | TruncatedInput] = []
        for block, conv in converted:
            if isinstance(block, TruncatedInput):
                entries.append(block)
                continue
            assert conv is not None and conv.batch is not None  # a Block is always converted
            per_product.add(conv.batch.column(REVIEW_SCHEMA.get_field_index("parent_asin")))
            spill.write_batch(pa.RecordBatch.from_arrays(
                [*conv.batch.columns, pa.array(conv.keys, pa.binary())], schema=_REVIEW_SPILL_SCHEMA))
            entries.append((conv.last_line, conv.bad))
            if progress is not None:
                progress(path.name, conv.last_line)
        spilled.append(entries)
    return spilled, per_product


def _claim_spilled_reviews(paths: list[Path], spilled: list[list[tuple[int, list[dict[str, Any]]] | TruncatedInput]],
                           spill_path: Path, rules: CrossRecordRules, groups: _RowGroups,
                           write_bad: Callable[[list[dict[str, Any]]], None]) -> None:
    """The cross-record rules on the spilled review blocks, in file and line order, after every metadata file."""
    # Plain reads, not a memory map: mapped pages would count in this process's RSS.
    with pa.OSFile(str(spill_path)) as source:
        part = pa.ipc.open_file(source)
        k = 0
        for path, entries in zip(paths, spilled, strict=True):
            stats = rules.start(path, "reviews")
            for entry in entries:
                if isinstance(entry, TruncatedInput):
                    write_bad([rules.truncated(entry, stats)])
                    continue
                last_line, bad = entry
                rb = part.get_batch(k)
                k += 1
                keys = rb.column(rb.num_columns - 1).to_pylist()
                batch = pa.RecordBatch.from_arrays(rb.columns[:-1], schema=REVIEW_SCHEMA)
                conv = Converted(rows=[], ids=batch.column("parent_asin"), lines=[], keys=keys, bad=bad,
                                 last_line=last_line)
                done = rules.claim(conv, None, stats)
                if done.new_ids:
                    ids = batch.column("review_id").to_pylist()
                    for i, rid in done.new_ids.items():
                        ids[i] = rid
                    batch = batch.set_column(0, batch.schema.field(0), pa.array(ids, pa.string()))
                if done.keep is not None:
                    batch = batch.take(pa.array(done.keep, pa.int64()))
                groups.add(batch)
                write_bad(done.bad)


def default_workers() -> int:
    """Worker processes used by `write_catalog_snapshot` when not told.

    Returns:
        The CPUs this process may run on (its affinity mask, not the machine's count), at least 1.
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def write_catalog_snapshot(meta_paths: Sequence[str | os.PathLike], review_paths: Sequence[str | os.PathLike],
                           out_dir: str | os.PathLike, *, batch_size: int = 20_000,
                           name: str | None = None, table: FieldTable | None = None,
                           progress: Callable[[str, int], None] | None = None,
                           workers: int | None = None, block_bytes: int | None = None,
                           reader: str = "native") -> dict[str, Any]:
    """Ingest metadata and review files into a catalog snapshot directory.

    Writes `out_dir/` with `products.parquet`, `reviews.parquet` (`ecombench.catalog.schema.PRODUCT_SCHEMA`
    and `REVIEW_SCHEMA`, row groups of `batch_size` rows), `bad_records.jsonl` and
    `manifest.json` (DESIGN.md "Artifacts").
    Everything goes to a temporary sibling directory renamed to `out_dir` only when complete,
    so a crash leaves no half snapshot. Products keep file and line order. The review files are
    converted first and spilled to a temporary Arrow file, so each product's `review_count` is known
    when its row is written; the cross-record rules then claim the spilled reviews after every
    metadata file, as if read in that order.

    Files are cut into blocks of lines (`iter_blocks`); with `workers` > 1 the blocks are parsed
    and normalised (`ecombench.catalog.native.convert_block_native` on a pool of threads, or with the python
    reader `ecombench.catalog.records.convert_block` on a pool of processes) while this process decompresses,
    applies the cross-record rules in order (`CrossRecordRules.claim`) and writes. The snapshot's
    bytes are the same for any worker count.

    Args:
        meta_paths: metadata files (raw or Hugging Face form, plain or gzip), read in order.
        review_paths: review files, read after all metadata.
        out_dir: the snapshot directory to create; it must not exist.
        batch_size: rows per parquet row group; bounds memory together with the id tables
            (about 12 bytes per product and 16 per review) and the blocks in flight
            (`block_bytes` x 3 per worker).
        name: snapshot name for the manifest; defaults to `out_dir`'s name.
        table: field table; None loads the bundled one. Workers reload it from its file.
        progress: called as `progress(file_name, lines_read)` after each block.
        workers: threads (native reader) or processes (python reader) parsing blocks; None uses
            `default_workers()`, 1 parses in this thread. Inputs smaller than two blocks are always
            parsed in this thread.
        block_bytes: decompressed bytes per block of lines, the unit of work of a worker; None uses
            `BLOCK_BYTES` (python reader) or `NATIVE_BLOCK_BYTES` (native); smaller blocks spread small
            inputs over the pool (as tests do). The snapshot is the same for any value.
        reader: "native" (DuckDB's JSON reader, `ecombench.catalog.native`; its blocks go to a pool of `workers`
            threads, not processes) or "python" (orjson per record); the snapshot's content is the same
            (tests/catalog/test_native.py), the manifest records which ran.

    Returns:
        The manifest dict (also written to `manifest.json`).

    Raises:
        FileNotFoundError: an input file is missing (nothing is written).
        FileExistsError: `out_dir` already exists (it is left untouched).
        ValueError: `batch_size`, `workers` or `block_bytes` is below 1, or `reader` is not one of `READERS`.
        InputError: a metadata file yields no product (empty, binary, every record bad); nothing is written.
    """
    out = Path(out_dir)
    inputs = [(Path(p), "meta") for p in meta_paths] + [(Path(p), "reviews") for p in review_paths]
    for path, _ in inputs:
        if not path.is_file():
            raise FileNotFoundError(f"input file not found: {path}")
    if out.exists():
        raise FileExistsError(f"catalog snapshot already exists, not overwriting: {out}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if block_bytes is None:
        block_bytes = NATIVE_BLOCK_BYTES if reader == "native" else BLOCK_BYTES
    if block_bytes < 1:
        raise ValueError(f"block_bytes must be at least 1, got {block_bytes}")
    if reader not in READERS:
        raise ValueError(f"reader must be one of {', '.join(READERS)}, got {reader!r}")
    workers = default_workers() if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    # Ingest reads detail keys alone: the question vocabulary is checked where questions are read (a build).
    table = table or load_field_table(check_vocabulary=False)
    table_path = table.source_path
    field_table_sha = file_sha256(table_path)
    # Each input is hashed as it is read (`iter_blocks`' digest), not in a pass of its own before.
    hashers = [hashlib.sha256() for _ in inputs]
    sizes = [path.stat().st_size for path, _ in inputs]
    if sum(sizes) < 2 * block_bytes:
        workers = 1  # a pool's start-up (~1 s) costs more than it saves

    out.parent.mkdir(parents=True, exist_ok=True)
    # os.mkdir (not mkdtemp, which makes 0700) so the renamed snapshot gets the usual umask.
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.mkdir(tmp)
    executor: Executor | None = None
    try:
        if workers > 1 and reader == "native":
            # The native reader's work is DuckDB and pyarrow kernels, which release the GIL: threads share the
            # blocks without pickling them to processes and the batches back.
            executor = ThreadPoolExecutor(workers)
        elif workers > 1:
            # fork is fast and needs no `if __name__ == "__main__"` guard in the caller's script,
            # but forking a process with other threads (a Prefect flow's) can deadlock the child:
            # then spawn, which re-imports the caller's main module (guarded, as Prefect's are).
            # DuckDB (the native reader) runs threads of its own that threading does not count: a process
            # that has imported it forks no more.
            alone = threading.active_count() == 1 and sys.platform == "linux" and "duckdb" not in sys.modules
            context = multiprocessing.get_context("fork" if alone else "spawn")
            executor = ProcessPoolExecutor(workers, mp_context=context)
        rules = CrossRecordRules()
        bad_total: Counter = Counter()

        if reader == "native":
            runs = [partial(_convert_native, kind, path.name, table_path=table_path, table=table)
                    for path, kind in inputs]
        else:
            runs = [partial(_convert_to_batch, kind, path.name, table_path=table_path) for path, kind in inputs]
        # Reviews first (see below), then metadata, in one stream of blocks; each input hashed as it is read.
        review_ks = [k for k, (_, kind) in enumerate(inputs) if kind == "reviews"]
        meta_ks = [k for k, (_, kind) in enumerate(inputs) if kind == "meta"]
        jobs = ((k, block) for k in review_ks + meta_ks
                for block in iter_blocks(inputs[k][0], block_bytes, split=reader != "native", digest=hashers[k]))
        converted = _Converted(_ordered(jobs, runs, executor, 3 * workers))

        def write_bad(records: list[dict[str, Any]]) -> None:
            for rec in records:
                bad_fh.write(orjson.dumps(rec) + b"\n")
                bad_total[rec["reason"]] += 1

        # Reviews are converted first and spilled (Arrow IPC, ~0.5 KB per review of temporary disk): the
        # reviews each product has are then known when its row is written, so products.parquet is written
        # in one pass. Before, the products went to a temporary file and were read back to add review_count:
        # a second, single-threaded pass over the largest file (29 s of 217 s at 3.7M products,
        # benchmarks/RESULTS.md). The cross-record rules still see every metadata file first, then the
        # reviews, in file and line order (`_claim_spilled_reviews`).
        review_paths_in = [inputs[k][0] for k in review_ks]
        with open(tmp / "bad_records.jsonl", "wb") as bad_fh:
            spill_path = tmp / "reviews.part.arrow"
            with pa.ipc.new_file(spill_path, _REVIEW_SPILL_SCHEMA) as spill:
                spilled, per_product = _spill_reviews(
                    [(inputs[k][0], converted.of(k)) for k in review_ks], spill, progress)
            with pq.ParquetWriter(tmp / "products.parquet", PRODUCT_SCHEMA) as products_w:
                groups = _RowGroups(lambda t: products_w.write_table(t, row_group_size=batch_size), batch_size)
                try:
                    for k in meta_ks:
                        path, kind = inputs[k]
                        stats = rules.start(path, kind)
                        for block, conv in converted.of(k):
                            if isinstance(block, TruncatedInput):
                                write_bad([rules.truncated(block, stats)])
                            else:
                                assert conv is not None and conv.batch is not None  # a Block is always converted
                                done = rules.claim(conv, block, stats)
                                batch = conv.batch
                                if done.keep is not None:
                                    batch = batch.take(pa.array(done.keep, pa.int64()))
                                counts = per_product.of(batch.column(0))
                                groups.add(pa.RecordBatch.from_arrays([*batch.columns, counts], schema=PRODUCT_SCHEMA))
                                write_bad(done.bad)
                            if progress is not None:
                                progress(path.name, stats.lines)
                        # A file of copies of products already ingested is fine; one with no product at all is not.
                        if stats.records_ok == 0 and not stats.bad_by_reason[DUPLICATE_PARENT_ASIN]:
                            raise InputError(_no_products(path, stats))
                    groups.flush()
                finally:
                    groups.close()
            # products.parquet, the largest file, is hashed for the manifest while the reviews are claimed and written
            # (a second read, from the page cache: a Python file object as the writer's sink to hash it as written
            # takes the GIL for every page and slowed the writer 1.4-1.8x).
            hasher = ThreadPoolExecutor(1, thread_name_prefix="snapshot-hash")
            products_sha = hasher.submit(file_sha256, tmp / "products.parquet")
            hasher.shutdown(wait=False)
            with pq.ParquetWriter(tmp / "reviews.parquet", REVIEW_SCHEMA) as reviews_w:
                groups = _RowGroups(lambda t: reviews_w.write_table(t, row_group_size=batch_size), batch_size)
                try:
                    _claim_spilled_reviews(review_paths_in, spilled, spill_path, rules, groups, write_bad)
                    groups.flush()
                finally:
                    groups.close()
            spill_path.unlink()
        if progress is not None:
            progress("products.parquet", rules.products.size)

        input_stats = rules.inputs
        digests = [(str(path), kind, hasher.hexdigest(), size)
                   for (path, kind), hasher, size in zip(inputs, hashers, sizes, strict=True)]
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "kind": "catalog_snapshot",
            "name": name or out.name,
            "inputs": [{"path": path, "kind": kind, "sha256": sha, "bytes": size, "lines": st.lines,
                        "records_ok": st.records_ok, "bad_by_reason": dict(sorted(st.bad_by_reason.items()))}
                       for (path, kind, sha, size), st in zip(digests, input_stats, strict=True)],
            "counts": {
                "products": rules.products.size,
                "reviews": sum(st.records_ok for st in input_stats if st.kind == "reviews"),
                "orphan_reviews": sum(st.orphan_reviews for st in input_stats),
                "bad_records": sum(bad_total.values()),
                "bad_by_reason": dict(sorted(bad_total.items())),
            },
            "field_table_sha256": field_table_sha,
            "reader": reader,
            # The snapshot's own files, checked by a build (ecombench.catalog.integrity.verify_snapshot).
            "files": snapshot_files(tmp, {"products.parquet": products_sha.result()}),
            "fingerprint": snapshot_fingerprint([(kind, sha) for _, kind, sha, _ in digests], field_table_sha),
        }
        (tmp / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
        if out.exists():
            raise FileExistsError(f"catalog snapshot already exists, not overwriting: {out}")
        try:
            os.rename(tmp, out)
        except OSError as exc:  # another run created out_dir meanwhile (rename onto a non-empty dir)
            raise FileExistsError(f"catalog snapshot already exists, not overwriting: {out}") from exc
        mark_published(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if executor is not None:
            executor.shutdown(cancel_futures=True)
    return manifest


def _no_products(path: Path, stats: Any) -> str:
    """The one-line reason a metadata file yielded no product (empty, binary, or every record bad)."""
    if not stats.lines:
        return f"{path}: no product records (the file is empty)"
    reasons = ", ".join(f"{n} {reason}" for reason, n in stats.bad_by_reason.most_common(3))
    return (f"{path}: no product records in {stats.lines} lines ({reasons or 'blank lines only'}); "
            "is it a metadata JSONL file?")


# Fields only metadata records have, and fields only reviews have ("title" is in both).
META_MARKERS = frozenset({"main_category", "average_rating", "rating_number", "details", "features", "store"})
REVIEW_MARKERS = frozenset({"rating", "text", "user_id", "helpful_vote", "verified_purchase"})


def sniff_kind(path: str | os.PathLike, lines: int = 20) -> str | None:
    """Guess whether a file holds product metadata or reviews from its first records.

    Used to refuse a review file given as metadata (or the reverse) before anything is written:
    each parseable record votes with the fields only metadata or only reviews have.

    Args:
        path: a plain or gzip JSONL file.
        lines: how many lines to look at.

    Returns:
        "meta", "reviews", or None when those lines hold no parseable record.

    Raises:
        OSError: the file cannot be read.
    """
    votes = {"meta": 0, "reviews": 0}
    for item in iter_lines(path):
        if isinstance(item, TruncatedInput):
            break
        line_no, raw = item
        if line_no > lines:
            break
        if not raw.strip():
            continue
        try:
            keys = set(parse_line(raw))
        except RecordError:
            continue
        votes["meta"] += len(keys & META_MARKERS)
        votes["reviews"] += len(keys & REVIEW_MARKERS)
    if not any(votes.values()):
        return None
    return max(votes, key=votes.__getitem__)
