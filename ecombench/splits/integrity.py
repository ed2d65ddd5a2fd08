"""A split version against its manifest, and its catalog against the split's fingerprint, before it is used.

`run-agent`, `grade`, `validate`, `report` and `diff` call `check_split` first: a file of the
version whose sha256 differs from the manifest's (edited after publishing), or a catalog (given,
or recorded in the manifest) whose fingerprint is not the split's, refuses the command with one
line naming the file, unless the user passes `--allow-modified`; then the problems are returned
so the command records them in its output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ecombench.catalog.integrity import file_digest, verify_snapshot
from ecombench.catalog.snapshot import SnapshotError
from ecombench.errors import InputError

ALLOW_HINT = "pass --allow-modified to go on anyway"


def split_catalog_path(manifest: dict[str, Any]) -> Path | None:
    """The catalog a split was built from: the manifest's absolute `catalog.path`, else its config's (older splits)."""
    path = (manifest.get("catalog") or {}).get("path") or (manifest.get("config") or {}).get("catalog")
    return Path(path) if path else None


def split_problems(version_dir: Path, manifest: dict[str, Any], catalog: Path | None,
                   cache_dir: Path | None = None) -> list[str]:
    """Everything that breaks the chain from the split's catalog to its files, one line each.

    Args:
        version_dir: the split version directory.
        manifest: its manifest.json.
        catalog: the catalog snapshot to use; None is the manifest's.
        cache_dir: the snapshot verification cache (ecombench.catalog.integrity.verify_snapshot).

    Returns:
        Problems, each naming its file: a file missing or with another sha256 than the manifest's; the
        catalog missing, damaged, or with another fingerprint than the split's.
    """
    problems = []
    for name, want in sorted((manifest.get("files") or {}).items()):
        file = version_dir / name
        if not file.is_file():
            problems.append(f"{file} is missing (the split's manifest lists it)")
        elif file_digest(file) != want.get("sha256"):
            problems.append(f"{file}: sha256 differs from the split manifest's (the file was changed after publishing)")
    catalog = catalog or split_catalog_path(manifest)
    want_fp = (manifest.get("catalog") or {}).get("fingerprint")
    if catalog is None or not want_fp:
        return problems
    try:
        verify_snapshot(catalog, cache_dir)
        got_fp = json.loads((catalog / "manifest.json").read_text(encoding="utf-8")).get("fingerprint")
    except (SnapshotError, OSError, json.JSONDecodeError) as exc:
        problems.append(str(exc).splitlines()[0])
        return problems
    if got_fp != want_fp:
        problems.append(f"{catalog}: catalog fingerprint {str(got_fp)[:12]}… is not the split's {want_fp[:12]}… "
                        "(another catalog than the split was built from)")
    return problems


def check_split(version_dir: Path, manifest: dict[str, Any], catalog: Path | None, allow_modified: bool,
                cache_dir: Path | None = None) -> list[str]:
    """`split_problems`, refused unless `allow_modified`.

    Returns:
        The problems (empty when the chain holds); with `allow_modified` the caller records them in its output.

    Raises:
        InputError: a problem was found and `allow_modified` is False (the first problem, and how many more).
    """
    problems = split_problems(version_dir, manifest, catalog, cache_dir)
    if problems and not allow_modified:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(f"{problems[0]}{more}; {ALLOW_HINT}")
    return problems


def read_split_manifest(version_dir: Path) -> dict[str, Any]:
    """A split version's manifest.json ({} when the directory has none).

    Raises:
        InputError: the directory is missing, or manifest.json is not JSON (names the file).
    """
    if not version_dir.is_dir():
        raise InputError(f"split version {version_dir} not found")
    path = version_dir / "manifest.json"
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: unreadable manifest ({exc})") from None
