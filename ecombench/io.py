"""Files written whole or not at all: the one temp-file-then-rename of the package, and the names it writes under.

A reader (another process, a resumed build) never sees half a file: the content goes to a temporary file beside
the target, unique per process and thread, which then replaces the target in one rename; on any error the
temporary file is removed and the target is left as it was. What a killed process left behind is removed by
the next run of the same target (`remove_stale_temps`); names given by a user are one folder name (`name_problem`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` to write to; when the block ends without error it replaces `path`.

    The parent folder is created. On an error (or KeyboardInterrupt) the temporary file is removed and the
    error propagates.

    Example:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "a.txt"
        >>> with atomic_path(target) as tmp:
        ...     _ = tmp.write_text("whole")
        >>> target.read_text()
        'whole'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.{threading.get_ident()}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_atomic(path: Path, data: bytes | str) -> Path:
    """Write `data` (str as UTF-8) to `path` whole or not at all (`atomic_path`). Returns the path.

    Raises:
        OSError: the folder or file cannot be written (the target is left as it was).
    """
    with atomic_path(path) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


def name_problem(name: str) -> str | None:
    r"""Why `name` cannot be a split, version or snapshot name (one folder under its root), or None when it can.

    A name is one path component: not empty, no `/` or `\`, not `.` or `..`, not hidden (a leading dot is
    how temporary folders are told apart), no NUL or control character. So `--split ../../x` cannot
    write outside the artifacts folder.

    Example:
        >>> name_problem("sample"), name_problem("../../x")
        (None, 'a name is one folder name, without / or \\ or ..')
    """
    if not name or not name.strip():
        return "a name cannot be empty"
    if "/" in name or "\\" in name or name in (".", ".."):
        return "a name is one folder name, without / or \\ or .."
    if name.startswith("."):
        return "a name cannot start with '.' (hidden folders are temporary ones)"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "a name cannot hold control characters"
    return None


# Temporary names beside a target, each holding the pid of the process writing it: `.<target>.<kind>-<pid>...`
# (folders of a snapshot being ingested or a version being published) and `atomic_path`'s `.<file>.tmp<pid>.<tid>`.
# A temporary of a temporary (`..<name>.staging-<pid>.partial-…`: the snapshot being written inside an ingest's
# staging name) counts as the target's.
_TEMP_NAME = re.compile(r"\.+(?P<target>.+?)\.(?:partial-|staging-|tmp-|tmp)(?P<pid>\d+)(?:[-.].*)?")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or not a pid: leave its files alone
    return True


def remove_stale_temps(folder: Path, target: str | None = None) -> list[Path]:
    """Remove the temporary files and folders a killed process (kill -9, power loss) left in `folder`.

    Only names of the form this package writes (`.<target>.partial-<pid>-…`, `.<target>.staging-<pid>`,
    `.<target>.tmp-<pid>`, `.<file>.tmp<pid>.<thread>`) whose process no longer runs are removed; a running
    writer's files are left alone. Errors while removing are ignored (the next run tries again).

    Args:
        folder: the folder holding the targets (a catalogs root, a split's folder, a cache folder).
        target: only the temporaries of this target name; None: of every target.

    Returns:
        The paths removed.
    """
    removed: list[Path] = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = _TEMP_NAME.fullmatch(entry.name)
        if not m or (target is not None and m.group("target") != target) or _pid_alive(int(m.group("pid"))):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                entry.unlink()
        if not entry.exists():
            removed.append(entry)
    return removed


# What this process renamed into place, whole (split versions, catalog snapshots), oldest first: a command that
# must stop at once (a lost Prefect server) says what is already complete instead of "nothing was published".
_PUBLISHED: list[Path] = []
_PUBLISHED_LOCK = threading.Lock()


def mark_published(path: Path) -> None:
    """Record that this process renamed `path` into place, complete (see `published`)."""
    with _PUBLISHED_LOCK:
        _PUBLISHED.append(path)


def forget_published(path: Path) -> None:
    """Withdraw `path` from what this process published (a staging folder renamed on to its final name)."""
    with _PUBLISHED_LOCK:
        while path in _PUBLISHED:
            _PUBLISHED.remove(path)


def published() -> list[Path]:
    """The folders this process renamed into place so far (`mark_published`), oldest first."""
    with _PUBLISHED_LOCK:
        return list(_PUBLISHED)
