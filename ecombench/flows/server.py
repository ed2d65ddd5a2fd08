"""A Prefect server shared by the commands run on this machine for one artifacts folder.

Prefect 3 without PREFECT_API_URL starts a temporary server per process: every `ecombench ingest`
or `build` paid 5-10 s to import and start it, then threw it away. `start_or_reuse` instead looks
for the server an earlier command left running for this artifacts folder and Prefect home
(`<artifacts>/cache/prefect-server.json`); when there is none it starts one in the background
(`python -m ecombench.flows.server`, its own session, so it outlives the command) and the command goes on
with its imports while the server boots; `SharedServer.wait` blocks only when the flow is about to
run. The server stops itself after `ECOMBENCH_SERVER_IDLE_SECONDS` (default 600) without a request.

Nothing here imports prefect: PREFECT_API_URL must be set before prefect reads its settings.
Set PREFECT_API_URL to use your own server, or ECOMBENCH_PREFECT_SERVER=ephemeral for Prefect's
temporary one per command (what the test suite does).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ecombench.flows.settings import apply_prefect_defaults
from ecombench.io import write_atomic

IDLE_SECONDS = 600.0
STATE_NAME = "prefect-server.json"


def state_path(artifacts: Path) -> Path:
    """Where the shared server of an artifacts folder is recorded."""
    return Path(artifacts) / "cache" / STATE_NAME


def prefect_home() -> str:
    """The Prefect home (its database) this process would use."""
    return str(Path(os.environ.get("PREFECT_HOME", "~/.prefect")).expanduser().resolve())


def healthy(url: str, timeout: float = 1.0) -> bool:
    """Whether the Prefect API at `url` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def server_state(url: str, timeout: float = 2.0) -> str:
    """How the Prefect API at `url` answers its health check: "ok", "refused" or "slow".

    "refused": nothing listens (the server is gone); "slow": no answer within `timeout` seconds, or an
    error status (a busy server may still recover).
    """
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            return "ok" if response.status == 200 else "slow"
    except urllib.error.URLError as exc:
        return "refused" if isinstance(exc.reason, ConnectionRefusedError) else "slow"
    except ConnectionRefusedError:
        return "refused"
    except (OSError, ValueError):
        return "slow"


@contextlib.contextmanager
def watch_server(url: str | None, on_lost: Callable[[str], None], interval: float = 1.0, refused: int = 3,
                 slow_seconds: float = 300.0) -> Iterator[None]:
    """Watch the Prefect API at `url` during the block; call `on_lost(reason)` once when it is gone.

    Prefect's client retries a vanished server for minutes before failing with hundreds of log lines;
    this thread notices within seconds. Gone: `refused` health checks in a row found nothing listening
    (the server process died or was killed), or none answered for `slow_seconds` (a server too busy to
    answer /health for that long does not serve the run either).

    Args:
        url: the API URL (…/api); None watches nothing.
        on_lost: called from the watching thread with a one-line reason; it usually ends the process.
        interval: seconds between health checks.
        refused: refused checks in a row that mean the server is gone.
        slow_seconds: seconds without an answer that mean the server is gone.
    """
    if not url:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        misses, last_ok = 0, time.monotonic()
        while not done.wait(interval):
            state = server_state(url, timeout=min(5.0, slow_seconds))
            if state == "ok":
                misses, last_ok = 0, time.monotonic()
                continue
            misses = misses + 1 if state == "refused" else 0
            if misses >= refused:
                reason = f"the Prefect server at {url} stopped (nothing listens there any more)"
            elif time.monotonic() - last_ok > slow_seconds:
                reason = f"the Prefect server at {url} has not answered for {slow_seconds:.0f} s"
            else:
                continue
            if not done.is_set():
                on_lost(reason)
            return

    thread = threading.Thread(target=watch, name="prefect-server-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_state(path: Path) -> dict | None:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and {"pid", "url", "prefect_home"} <= set(state) else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class SharedServer:
    """The server a command uses: how it was found, and its API URL (None: Prefect's own choice)."""

    how: str  # "reused", "started", "configured" (PREFECT_API_URL was set) or "ephemeral"
    url: str | None = None
    pid: int | None = None
    log: Path | None = None

    def wait(self, timeout: float | None = None, warm: Iterable[str] = ()) -> None:
        """Block until the API answers; meanwhile import `warm` modules the command will need anyway.

        Raises:
            RuntimeError: the server did not answer within `timeout` seconds (default
                PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, else 120) or its process ended.
        """
        if self.how != "started" or self.url is None:
            return
        timeout = timeout or float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", 120))
        deadline = time.monotonic() + timeout
        pending = [m for m in warm if m not in sys.modules]
        while not healthy(self.url, timeout=0.5):
            if self.pid is not None and not _alive(self.pid):
                raise RuntimeError(f"the Prefect server (pid {self.pid}) ended while starting; see {self.log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Prefect server at {self.url} did not answer within {timeout:.0f} s; "
                                   f"see {self.log}")
            if pending:
                __import__(pending.pop(0))
            else:
                time.sleep(0.1)


def start_or_reuse(artifacts: Path, idle: float | None = None) -> SharedServer:
    """Point this process at the shared Prefect server of `artifacts`, starting one if none runs.

    Sets PREFECT_API_URL in os.environ (call before prefect is imported). Does not wait for a
    server it starts: call `SharedServer.wait` before the first flow runs.

    Args:
        artifacts: the artifacts folder (its cache/ holds the server's record and log).
        idle: seconds without a request before a started server stops; default
            ECOMBENCH_SERVER_IDLE_SECONDS, else 600.

    Returns:
        The server used.
    """
    if os.environ.get("PREFECT_API_URL"):
        return SharedServer("configured", os.environ["PREFECT_API_URL"])
    if os.environ.get("ECOMBENCH_PREFECT_SERVER", "shared") == "ephemeral":
        return SharedServer("ephemeral")
    path = state_path(artifacts)
    path.parent.mkdir(parents=True, exist_ok=True)
    home = prefect_home()
    with open(path.with_suffix(".lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two commands starting at once share one server
        state = _read_state(path)
        if state and state["prefect_home"] == home and _alive(state["pid"]) and healthy(state["url"]):
            os.environ["PREFECT_API_URL"] = state["url"]
            return SharedServer("reused", state["url"], state["pid"])
        if (state and state["prefect_home"] == home and _alive(state["pid"])
                and state.get("starting_until", 0) > time.time()):
            os.environ["PREFECT_API_URL"] = state["url"]  # another command is starting it right now
            return SharedServer("started", state["url"], state["pid"], path.with_suffix(".log"))
        port = _free_port()
        url = f"http://127.0.0.1:{port}/api"
        idle = idle if idle is not None else float(os.environ.get("ECOMBENCH_SERVER_IDLE_SECONDS", IDLE_SECONDS))
        log = path.with_suffix(".log")
        env = {**os.environ, "PREFECT_UI_ENABLED": "0"}
        env.pop("PREFECT_API_URL", None)
        with open(log, "ab") as out:
            proc = subprocess.Popen([sys.executable, "-m", "ecombench.flows.server", "--port", str(port),
                                     "--idle", str(idle), "--state", str(path)],
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
                                    start_new_session=True, cwd=str(Path(__file__).resolve().parents[2]))
        write_atomic(path, json.dumps({"pid": proc.pid, "url": url, "port": port, "prefect_home": home,
                                       "idle_seconds": idle, "started_at": time.time(),
                                       "starting_until": time.time() + 120}))
    os.environ["PREFECT_API_URL"] = url
    return SharedServer("started", url, proc.pid, log)


def stop(artifacts: Path, timeout: float = 10.0) -> bool:
    """Stop the shared server of `artifacts` if one runs (tests, `benchmarks/fast_commands.py --cold`).

    Returns:
        Whether a server was stopped.
    """
    path = state_path(artifacts)
    state = _read_state(path)
    if not state or not _alive(state["pid"]):
        with contextlib.suppress(OSError):
            path.unlink()
        return False
    os.kill(state["pid"], signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(state["pid"]) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(state["pid"], os.WNOHANG)
        time.sleep(0.1)
    with contextlib.suppress(OSError):
        path.unlink()
    return True


# ---- the server process ----------------------------------------------------------------------

class _Activity:
    """ASGI wrapper noting the time of the last request, so an idle server can stop itself."""

    def __init__(self, app):
        self.app = app
        self.last = time.monotonic()

    async def __call__(self, scope, receive, send):
        if scope.get("type") in ("http", "websocket"):
            self.last = time.monotonic()
        await self.app(scope, receive, send)


def serve(port: int, idle: float, state: Path) -> None:
    """Run the Prefect API on 127.0.0.1:`port` until `idle` seconds pass without a request."""
    # deferred: the server process alone needs uvicorn and prefect's server app
    import uvicorn
    from prefect.server.api.server import create_app

    app = _Activity(create_app())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on"))

    def watchdog() -> None:
        serving = False
        while not server.should_exit:
            time.sleep(min(5.0, idle / 4))
            if not server.started:  # still migrating the database: that is not idleness
                continue
            if not serving:
                serving, app.last = True, time.monotonic()
            mine = (_read_state(state) or {}).get("pid") == os.getpid()
            if time.monotonic() - app.last > idle or not mine:
                server.should_exit = True

    threading.Thread(target=watchdog, daemon=True).start()
    try:
        server.run()
    finally:
        if (_read_state(state) or {}).get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                state.unlink()


def main(argv: list[str] | None = None) -> None:
    """`python -m ecombench.flows.server --port P --idle S --state FILE` (what `start_or_reuse` runs)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--idle", type=float, default=IDLE_SECONDS)
    parser.add_argument("--state", type=Path, required=True)
    args = parser.parse_args(argv)

    apply_prefect_defaults()
    serve(args.port, args.idle, args.state)


if __name__ == "__main__":
    main()
