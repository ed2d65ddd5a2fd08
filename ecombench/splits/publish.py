"""Writing a split version: schema-checked records, counts, report, written whole or not at all.

A version directory is written under a temporary name beside its final place and renamed when
complete (reference §15.4 wrote once at the end and overwrote earlier output); an existing
version is never touched.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ecombench.errors import OutputError, SettingError
from ecombench.hashing import sha256_hex
from ecombench.io import mark_published, name_problem, remove_stale_temps
from ecombench.schemas import SchemaError, schema_errors
from ecombench.schemas.evidence import REASON_FIELDS, flat_rejection, rejections_parquet, shape_rejection
from ecombench.splits.card import render_card
from ecombench.splits.report import (
    _catalog_manifest,
    count_tasks,
    render_report,
)
from ecombench.tables.fields import load_field_table
from ecombench.validation.expectations import raise_if_blocking
from ecombench.validation.semantic import task_problems


class VersionExists(OutputError):
    """The split version directory already exists; nothing was written."""


def check_split_names(split: str, version: str | None = None) -> None:
    """Refuse a split or version name that is not one folder name, before anything is created.

    Raises:
        SettingError: `--split ../../x` and the like (ecombench.io.name_problem), naming the option.
    """
    for option, value in (("--split", split), ("--version", version)):
        problem = None if value is None else name_problem(value)
        if problem:
            raise SettingError(f"{option} {value!r}: {problem} (nothing was written)")


def next_version(split_dir: Path) -> str:
    """The next free version name "v<N>" under a split directory.

    Past every published one and every one a running build has reserved (`reserve_version`).
    """
    used = [int(p.name[1:]) for p in split_dir.glob("v*") if p.is_dir() and p.name[1:].isdigit()]
    used += [int(m.group(1)) for p in split_dir.glob(".v*.reserved")
             if (m := re.fullmatch(r"\.v(\d+)\.reserved", p.name)) and not _stale(p)]
    return f"v{max(used, default=0) + 1}"


def _stale(reservation: Path) -> bool:
    """A reservation whose build process is gone (killed): its version may be taken again."""
    try:
        pid = int((reservation / "pid").read_text())
    except (OSError, ValueError):
        return False  # being created right now, or unreadable: treat as held
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


@contextmanager
def reserve_version(split_dir: Path, version: str | None = None) -> Iterator[str]:
    """Hold a version of a split for one build, so concurrent builds of the same split get v1, v2, ...

    The reservation is the hidden directory `.<version>.reserved` (made with `os.mkdir`, which is atomic:
    of two builds trying the same version one succeeds, the other takes the next). It holds the build's
    pid, so a reservation left by a killed build is stale and is taken over. Nothing appears under the
    split's visible versions until `publish_split` renames the finished version into place.

    Args:
        split_dir: <splits root>/<split>.
        version: a version the user named; None allocates the next free "v<N>".

    Yields:
        The version name.

    Raises:
        VersionExists: `version` is published already or reserved by a running build.
        OutputError: the split directory cannot be created or written.
    """
    try:
        split_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{split_dir}: cannot create the split directory ({exc.strerror or exc})") from None
    remove_stale_temps(split_dir)  # version folders a killed build was writing
    while True:
        name = version or next_version(split_dir)
        held = split_dir / f".{name}.reserved"
        if (split_dir / name).exists():
            raise VersionExists(f"split version {split_dir / name} already exists; choose another --version "
                                "(nothing was written)")
        try:
            os.mkdir(held)
        except FileNotFoundError:  # another build's release removed the empty split directory meanwhile
            split_dir.mkdir(parents=True, exist_ok=True)
            continue
        except FileExistsError:
            if _stale(held):
                shutil.rmtree(held, ignore_errors=True)
                continue
            if version:
                raise VersionExists(f"split version {split_dir / name} is being built by another process; "
                                    "choose another --version") from None
            continue
        except OSError as exc:
            raise OutputError(f"{split_dir}: cannot reserve a version ({exc.strerror or exc})") from None
        break
    try:
        try:
            (held / "pid").write_text(str(os.getpid()))
        except OSError as exc:  # disk full, quota: the reservation is removed below
            raise OutputError(f"{split_dir}: cannot reserve a version ({exc.strerror or exc})") from None
        yield name
    finally:
        shutil.rmtree(held, ignore_errors=True)
        try:
            split_dir.rmdir()  # only when empty: a build that published nothing leaves no trace
        except OSError:
            pass


def jsonl_bytes(records: list[dict[str, Any]]) -> bytes:
    """One JSON object per line, keys in record order, real Unicode, trailing newline."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")


def publish_split(root: Path, split: str, version: str, tasks: list[dict[str, Any]],
                  rejections: list[dict[str, Any]], manifest: dict[str, Any],
                  before_rename: Callable[[], None] | None = None) -> Path:
    """Validate and write `root/<split>/<version>/` atomically.

    Args:
        root: the splits directory (artifacts/splits).
        split: name of the split.
        version: name of the version (e.g. "v1").
        tasks: task records (sorted here by id).
        rejections: rejection records (sorted here by candidate id).
        manifest: manifest fields except `files` and `counts`, which are filled here.
        before_rename: called when every file is written, just before the version is renamed into place; an
            exception it raises (a build's interruption) removes the written files and propagates.

    Returns:
        The final version directory.

    Raises:
        ExpectationsFailed: `manifest["expectations"]` (ecombench.validation.expectations.run_suites) holds a
            failed ERROR expectation (nothing written).
        VersionExists: the version directory already exists (nothing written).
        SchemaError: a record or the manifest breaks its schema, a task breaks an invariant of
            ecombench.validation.semantic.task_problems, or two tasks share an id (nothing written).
    """
    check_split_names(split, version)
    raise_if_blocking(manifest.get("expectations") or {})
    final = root / split / version
    if final.exists():
        raise VersionExists(f"split version {final} already exists; choose another --version (nothing was written)")
    tasks = sorted(tasks, key=lambda t: t["id"])
    # One evidence struct for every reason (schemas/evidence.py), so table readers load the file as is.
    rejections = [shape_rejection(r) for r in sorted(rejections, key=lambda r: r["candidate_id"])]
    for name, records in (("task", tasks), ("rejection", rejections)):
        for rec in records:
            errors = schema_errors(name, rec)
            if errors:
                key = rec.get("id") or rec.get("candidate_id")
                raise SchemaError(f"{name} {key} breaks schemas/{name}.schema.json: {errors[0]}")
    for rec in rejections:
        if rec["reason"] in REASON_FIELDS:
            errors = schema_errors(f"evidence/{rec['reason']}", rec["evidence"])
            if errors:
                raise SchemaError(f"rejection {rec['candidate_id']} breaks schemas/evidence/{rec['reason']}"
                                  f".schema.json: {errors[0]}")
    table = load_field_table()
    for task in tasks:
        problems = task_problems(task, table)
        if problems:
            raise SchemaError(f"task {task['id']} is unsound: {problems[0]}")
    ids = [t["id"] for t in tasks]
    if len(set(ids)) != len(ids):
        raise SchemaError("two tasks share an id")
    # rejections.jsonl: evidence as JSON text (any reader, no options); rejections.parquet: the same rows typed.
    files = {"tasks.jsonl": jsonl_bytes(tasks),
             "rejections.jsonl": jsonl_bytes([flat_rejection(r) for r in rejections]),
             "rejections.parquet": rejections_parquet(rejections)}
    manifest = dict(manifest, counts=count_tasks(tasks, rejections, manifest.get("config", {}).get("intents")))
    manifest["files"] = {n: {"sha256": sha256_hex(b), "bytes": len(b), "rows": b.count(b"\n")}
                         for n, b in files.items()}
    manifest["files"]["rejections.parquet"]["rows"] = len(rejections)  # records, as for the JSONL files
    errors = schema_errors("split_manifest", manifest)
    if errors:
        raise SchemaError(f"manifest breaks schemas/split_manifest.schema.json: {errors[0]}")
    files["report.md"] = render_report(manifest, rejections).encode("utf-8")
    manifest["files"]["report.md"] = {"sha256": sha256_hex(files["report.md"]), "bytes": len(files["report.md"]),
                                      "rows": files["report.md"].count(b"\n")}
    # deferred: matplotlib loads only when a report is rendered, not for validate and grade (they use jsonl_bytes)
    from ecombench.splits.report_html import render_html

    files["report.html"] = render_html(manifest, tasks, rejections).encode("utf-8")
    manifest["files"]["report.html"] = {"sha256": sha256_hex(files["report.html"]), "bytes": len(files["report.html"]),
                                        "rows": files["report.html"].count(b"\n")}

    files["README.md"] = render_card(manifest, _catalog_manifest(manifest)).encode("utf-8")
    manifest["files"]["README.md"] = {"sha256": sha256_hex(files["README.md"]), "bytes": len(files["README.md"]),
                                      "rows": files["README.md"].count(b"\n")}
    files["manifest.json"] = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{version}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        if before_rename is not None:
            before_rename()
        os.rename(tmp, final)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if not isinstance(exc, OSError):
            raise
        if final.exists():  # another process published this version meanwhile (rename onto a non-empty dir)
            raise VersionExists(f"split version {final} was published by another process meanwhile; "
                                "choose another --version (nothing was written)") from None
        raise OutputError(f"{final.parent}: cannot write the split version ({exc.strerror or exc})") from None
    mark_published(final)
    return final
