"""Files written whole or not at all: the one temp-file-then-rename of the package.

A reader (another process, a resumed build) never sees half a file: the content goes to a temporary file beside
the target, unique per process and thread, which then replaces the target in one rename; on any error the
temporary file is removed and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import os
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
