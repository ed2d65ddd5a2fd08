"""Checks a build runs before any work, so a mistake costs seconds and one line instead of a traceback later.

`preflight_build` checks, in this order: the artifacts and splits folders are writable, the catalog
snapshot is readable, intact (ecombench.catalog.integrity) and non-empty, and every requested category is one
of the catalog's (listing the real names when not). PREFECT_API_URL is checked by
ecombench.flows.prefect_server.temporary_server, which the CLI enters next.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import polars as pl

from ecombench.catalog.integrity import verify_snapshot
from ecombench.catalog.snapshot import SnapshotError, check_snapshot
from ecombench.errors import InputError, OutputError, SettingError
from ecombench.pipeline.config import BuildConfig


def check_writable(folder: Path, what: str) -> None:
    """Check that `folder` can be written, creating nothing.

    A probe file goes into `folder`, or into its nearest existing ancestor when it does not exist yet,
    and is deleted.

    Raises:
        OutputError: the folder (or the ancestor it would be created in) cannot be written, or a file
            stands in its way (one line naming it and what needs it).
    """
    place = Path(folder).absolute()
    while not place.exists() and place != place.parent:
        place = place.parent
    probe = place / f".write-probe-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    try:
        if not place.is_dir():
            raise NotADirectoryError(20, "a file is in the way")
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OutputError(f"{folder}: not writable ({exc.strerror or exc}); {what} goes there "
                          "(set ECOMBENCH_ARTIFACTS or --out to a writable folder)") from None


def catalog_categories(catalog: Path) -> list[str]:
    """The distinct main_category values of a snapshot's products, sorted."""
    return sorted(v for v in pl.scan_parquet(catalog / "products.parquet").select("main_category").unique()
                  .collect().get_column("main_category").to_list() if v is not None)


def preflight_build(config: BuildConfig, artifacts: Path, splits_root: Path) -> None:
    """Everything a build can check before it starts a Prefect server or reads the catalog into memory.

    Raises:
        OutputError: the artifacts or splits folder is not writable.
        SnapshotError: the catalog is missing, unreadable, or a file differs from its manifest.
        InputError: the catalog has no products.
        SettingError: a requested category is not in the catalog (the message lists the real ones).
    """
    check_writable(Path(artifacts) / "cache", "the build's caches")
    check_writable(splits_root, "the split version")
    catalog = Path(config.catalog)
    check_snapshot(catalog)
    verify_snapshot(catalog, Path(artifacts) / "cache" / "verified")
    try:
        manifest = json.loads((catalog / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{catalog / 'manifest.json'}: unreadable ({exc})") from None
    if not (manifest.get("counts") or {}).get("products"):
        raise InputError(f"{catalog}: the catalog snapshot has no products (ingest a metadata file that has some)")
    if config.categories:
        known = catalog_categories(catalog)
        unknown = [c for c in config.categories if c not in known]
        if unknown:
            raise SettingError(f"--category {', '.join(unknown)}: not a main_category of {catalog}; its categories: "
                               + ", ".join(known))
