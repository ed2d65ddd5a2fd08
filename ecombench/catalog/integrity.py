"""The snapshot's own files against the sha256 its manifest records: a changed byte is found before it is read.

`ecombench ingest` records `files` (sha256 and bytes of products.parquet, reviews.parquet and
bad_records.jsonl) in manifest.json. A build calls `verify_snapshot` with a cache of each file's hash
and identity (`file_identity`: inode, size, mtime and ctime), so a rebuild over an unchanged snapshot
does not rehash it while any write to a file does; `ecombench verify` and `--verify-content` rehash.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ecombench.io import write_atomic

SNAPSHOT_FILES = ("products.parquet", "reviews.parquet", "bad_records.jsonl")
# Set (to any value) by `ecombench --verify-content`: no remembered hash is trusted, every file is rehashed.
VERIFY_CONTENT_ENV = "ECOMBENCH_VERIFY_CONTENT"


def file_digest(path: Path) -> str:
    """sha256 hex of a file, read in 1 MiB chunks.

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def snapshot_files(directory: Path, hashed: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """The manifest's `files` entry of a snapshot directory: name -> {"sha256", "bytes"} of each file present.

    Args:
        directory: the snapshot directory.
        hashed: sha256 hex of files already hashed (by name), not read again.
    """
    hashed = hashed or {}
    return {name: {"sha256": hashed.get(name) or file_digest(directory / name),
                   "bytes": (directory / name).stat().st_size}
            for name in SNAPSHOT_FILES if (directory / name).is_file()}


def file_identity(st: os.stat_result) -> list[int]:
    """What must be unchanged for a remembered hash to stand for a file: [device, inode, size, mtime_ns, ctime_ns].

    Size and mtime alone are not enough: a write that keeps the size and then sets the old mtime back
    (`touch -d`, `os.utime`, a restore keeping times) leaves both as they were. The ctime cannot be set by
    a user: every write or utime moves it to now, and a copy or rename-in is another inode. Damage below
    the file system (bit rot) changes none of these; `--verify-content` rehashes regardless.
    """
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _cache_path(cache_dir: Path, snapshot: Path) -> Path:
    key = hashlib.sha256(str(snapshot.resolve()).encode()).hexdigest()[:16]
    return cache_dir / f"{key}.json"


def verify_snapshot(path: Path, cache_dir: Path | None = None) -> dict[str, str]:
    """Check every file the snapshot's manifest lists against its recorded size and sha256.

    Args:
        path: the snapshot directory.
        cache_dir: where verified hashes are remembered with the file's identity (`file_identity`); a file
            whose identity matches a remembered one with the manifest's sha256 is not rehashed. None (or
            $ECOMBENCH_VERIFY_CONTENT set) rehashes all.

    Returns:
        file name -> "hashed", "cached", or "not recorded" (a snapshot from before `files` existed:
        nothing to check against).

    Raises:
        SnapshotError: the manifest is missing or unreadable, or a file is missing, has another size or
            another sha256 than recorded (the message names the file).
    """
    # deferred: ecombench.catalog.snapshot imports polars (~0.2 s), which writing a snapshot never needs
    from ecombench.catalog.snapshot import SnapshotError

    manifest_path = path / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SnapshotError(f"{manifest_path} not found: is {path} a catalog snapshot? "
                            "(create one with `ecombench ingest`)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{manifest_path}: unreadable ({exc})") from None
    recorded = manifest.get("files")
    if not recorded:
        return {name: "not recorded" for name in SNAPSHOT_FILES}
    if os.environ.get(VERIFY_CONTENT_ENV):
        cache_dir = None  # `ecombench --verify-content`: every file is hashed
    cache_file = _cache_path(cache_dir, path) if cache_dir else None
    cache: dict[str, list] = {}
    if cache_file and cache_file.is_file():
        try:
            cache = json.loads(cache_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            cache = {}
    outcome: dict[str, str] = {}
    for name, want in sorted(recorded.items()):
        file = path / name
        try:
            st = file.stat()
        except FileNotFoundError:
            raise SnapshotError(f"{file} is missing (the snapshot's manifest lists it)") from None
        if st.st_size != want["bytes"]:
            raise SnapshotError(f"{file}: {st.st_size} bytes, the manifest records {want['bytes']} "
                                "(changed or truncated after ingest; ingest it again)")
        identity = file_identity(st)
        if cache.get(name) == [*identity, want["sha256"]]:
            outcome[name] = "cached"
            continue
        got = file_digest(file)
        if got != want["sha256"]:
            raise SnapshotError(f"{file}: sha256 {got[:12]}… differs from the manifest's {want['sha256'][:12]}… "
                                "(the file changed after ingest; ingest it again)")
        cache[name] = [*identity, got]
        outcome[name] = "hashed"
    if cache_file and "hashed" in outcome.values():
        try:
            write_atomic(cache_file, json.dumps(cache))
        except OSError:
            pass  # a cache that cannot be written only costs a rehash next time
    return outcome
