"""The data expectations of a build in a background worker that keeps great-expectations imported.

Importing great-expectations costs 6-12 s on this machine kind, more than a small build's whole
work. Like the Prefect server (flows/server.py), one worker per artifacts folder is started in the
background on first use (`prestart`, called by `ecombench build` before anything heavy, so GX
loads on the other core while the build imports prefect and runs its batches), listens on
`<artifacts>/cache/expectations.sock`, and stops itself after ECOMBENCH_SERVER_IDLE_SECONDS
(default 600) without a request. `run` sends a request (catalog path, the accepted tasks, the
partition) and reads the summary back.

The worker runs the same function (`ecombench.validation.expectations.run_suites`) over the same snapshot,
so its summary equals an in-process run; a request carries the digest of the project's sources
(`source_digest`, data tables included) and a worker started from other code refuses it and exits. Whenever
no worker answers, or ECOMBENCH_EXPECTATIONS=inline, or the snapshot is large (a worker would
read it a second time), `run` validates in this process.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ecombench.hashing import PACKAGE_DIR
from ecombench.hashing import source_digest as package_source_digest
from ecombench.schemas.config import SplitConfig
from ecombench.tables.intents import load_intents
from ecombench.timing import phase

MAX_PRODUCTS = 500_000
IDLE_SECONDS = 600.0
SOCKET_NAME = "expectations.sock"


def source_digest() -> str:
    """sha256 over this module's sources and what it imports: a worker serves only the code it was started from."""
    return package_source_digest("ecombench.pipeline.expectations_job")


def socket_path(artifacts: Path) -> Path:
    """The worker's socket for an artifacts folder."""
    return Path(artifacts) / "cache" / SOCKET_NAME


def _small(catalog: Path) -> bool:
    try:
        products = json.loads((Path(catalog) / "manifest.json").read_text(encoding="utf-8"))["counts"]["products"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return products <= MAX_PRODUCTS


def _enabled() -> bool:
    return os.environ.get("ECOMBENCH_EXPECTATIONS", "worker") != "inline"


def _starting_pid(path: Path) -> int | None:
    """The pid of a worker being started for `path` (it has not bound the socket yet), if it still runs."""
    try:
        pid = int(path.with_suffix(".starting").read_text(encoding="utf-8"))
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def _connect(path: Path, timeout: float) -> socket.socket | None:
    """A connection to the worker; waits up to `timeout` s while a worker is still starting."""
    deadline = time.monotonic() + timeout
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
            return sock
        except OSError:
            sock.close()
            if time.monotonic() >= deadline or _starting_pid(path) is None:
                return None
            time.sleep(0.1)


def prestart(artifacts: Path, catalog: Path) -> str:
    """Make sure a worker runs for `artifacts` (start one in the background if none answers).

    Returns:
        "reused", "started", or "off" (inline mode, a large snapshot, or a socket path too long).
    """
    path = socket_path(artifacts)
    if not _enabled() or not _small(catalog) or len(str(path)) > 100:
        return "off"
    sock = _connect(path, timeout=0)
    if sock is not None:
        with sock:
            sock.sendall(b'{"ping": true}\n')
            alive = _read_line(sock)
        if alive:
            return "reused"
    if _starting_pid(path) is not None:
        return "started"  # another command is starting one
    path.parent.mkdir(parents=True, exist_ok=True)
    idle = os.environ.get("ECOMBENCH_SERVER_IDLE_SECONDS", str(IDLE_SECONDS))
    with open(path.with_suffix(".log"), "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "ecombench.pipeline.expectations_job", str(path), idle],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                cwd=str(PACKAGE_DIR.parent))
    path.with_suffix(".starting").write_text(str(proc.pid), encoding="utf-8")
    return "started"


def stop(artifacts: Path) -> bool:
    """Ask the worker of `artifacts` to exit (tests, benchmarks/fast_commands.py). Returns whether one answered."""
    sock = _connect(socket_path(artifacts), timeout=0)
    if sock is None:
        return False
    with sock:
        sock.sendall(b'{"stop": true}\n')
        sock.recv(16)
    return True


def run(products: Any, tasks: list[dict[str, Any]], catalog: Path, partition: Any, intents: dict[str, Any],
        artifacts: Path | None = None, timeout: float = 180.0,
        stored_suite: dict[str, Any] | None = None) -> dict[str, Any]:
    """`validation.expectations.run_suites` over the snapshot at `catalog` and `tasks`, in the worker when one runs.

    Args:
        products: the snapshot's products frame (used when validating in this process).
        tasks: the accepted task records.
        catalog: the snapshot directory `products` was read from.
        partition: the build's SplitConfig.
        intents: the intent specs (tables/intents.toml; the worker loads the same file).
        artifacts: the artifacts folder whose worker to ask; None validates in this process.
        timeout: seconds to wait for a worker still importing GX.
        stored_suite: the catalog suite's summary the build read with the snapshot's statistics; None reads
            it again (or runs the suite on `products` when none is stored). A build that planned in slices
            passes it, since its `products` holds only the candidates.

    Returns:
        The run_suites summary.
    """
    # deferred: polars (catalog statistics and suites) loads when a build validates, not when the CLI starts the worker
    from ecombench.validation.catalog_stats import stored_catalog_suite

    # The catalog suite depends only on the snapshot: `ecombench ingest` ran it once (validation.catalog_stats).
    stored = stored_suite if stored_suite is not None else stored_catalog_suite(Path(catalog))
    if artifacts is not None and _enabled() and _small(catalog):
        sock = _connect(socket_path(artifacts), timeout=timeout)
        if sock is not None:
            with sock:
                request = {"catalog": str(catalog), "tasks": tasks, "partition": partition.model_dump(),
                           "intents": sorted(intents), "digest": source_digest(), "catalog_suite": stored}
                sock.sendall(json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n")
                reply = _read_line(sock)
            try:
                answer = json.loads(reply)
            except ValueError:
                answer = {"error": "no reply"}
            if "summary" in answer:
                return answer["summary"]
            print(f"warning: the expectations worker did not validate ({answer.get('error')}); validating here",
                  file=sys.stderr)
    # deferred: polars (catalog statistics and suites) loads when a build validates, not when the CLI starts the worker
    from ecombench.validation.expectations import catalog_suite, run_suites

    with phase("    catalog suite" + (": stored at ingest" if stored else "")):
        if stored is None:
            stored = catalog_suite(products)
    return run_suites(products, tasks, partition, intents, catalog_summary=stored)


def _read_line(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks)


# ---- the worker process --------------------------------------------------------------------------

def serve(path: Path, idle: float) -> None:
    """Import GX and the suites, then answer requests on the socket `path` until idle or stopped."""
    # deferred: great-expectations and polars load in the worker process, not in the CLI that starts it
    import great_expectations  # noqa: F401  (the point of this process)

    # deferred: great-expectations and polars load in the worker process, not in the CLI that starts it
    from ecombench.catalog.snapshot import load_snapshot
    from ecombench.validation.expectations import run_suites

    digest = source_digest()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    server.settimeout(min(5.0, idle))
    with contextlib.suppress(FileNotFoundError):
        path.with_suffix(".starting").unlink()
    last = time.monotonic()
    try:
        while time.monotonic() - last < idle:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            last = time.monotonic()
            with conn:
                conn.settimeout(60)
                try:
                    request = json.loads(_read_line(conn) or b"{}")
                except (OSError, ValueError):
                    continue
                if request.get("ping") or not request:
                    with contextlib.suppress(OSError):
                        conn.sendall(b"{}\n")
                    continue
                if request.get("stop"):
                    conn.sendall(b"{}\n")
                    return
                if request.get("digest") != digest:
                    with contextlib.suppress(OSError):
                        conn.sendall(b'{"error": "the worker runs other code; it exits"}\n')
                    return
                try:
                    intents = load_intents()
                    if sorted(intents) != request["intents"]:
                        raise ValueError("tables/intents.toml differs from the build's")
                    products, _ = load_snapshot(Path(request["catalog"]))
                    summary = run_suites(products, request["tasks"], SplitConfig(**request["partition"]), intents,
                                         catalog_summary=request.get("catalog_suite"))
                    reply: dict[str, Any] = {"summary": summary}
                except Exception as exc:  # the client then validates in its own process and shows the error
                    reply = {"error": f"{type(exc).__name__}: {exc}"}
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps(reply, ensure_ascii=False).encode("utf-8") + b"\n")
                last = time.monotonic()
    finally:
        server.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


if __name__ == "__main__":
    serve(Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else IDLE_SECONDS)
