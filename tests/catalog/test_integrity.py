"""A snapshot file changed in place is found even when its size and mtime are put back (integrity by content)."""

from __future__ import annotations

import os
import shutil

import pytest

from ecombench.catalog.integrity import VERIFY_CONTENT_ENV, verify_snapshot
from ecombench.catalog.snapshot import SnapshotError


def _change_one_byte_keep_stat(path):
    st = path.stat()
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle] = (data[middle] + 1) % 256
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_a_same_size_same_mtime_change_is_found_after_a_cached_check(sample_catalog, tmp_path):
    snapshot = tmp_path / "snap"
    shutil.copytree(sample_catalog.path, snapshot)
    cache = tmp_path / "verified"
    assert set(verify_snapshot(snapshot, cache).values()) == {"hashed"}
    assert set(verify_snapshot(snapshot, cache).values()) == {"cached"}  # unchanged: not rehashed

    _change_one_byte_keep_stat(snapshot / "products.parquet")

    with pytest.raises(SnapshotError, match="products.parquet: sha256"):
        verify_snapshot(snapshot, cache)


def test_verify_content_rehashes_what_the_cache_would_trust(sample_catalog, tmp_path, monkeypatch):
    snapshot = tmp_path / "snap"
    shutil.copytree(sample_catalog.path, snapshot)
    cache = tmp_path / "verified"
    verify_snapshot(snapshot, cache)
    monkeypatch.setenv(VERIFY_CONTENT_ENV, "1")

    assert set(verify_snapshot(snapshot, cache).values()) == {"hashed"}
