"""The temporary Prefect server of a CLI run: its database under the artifacts folder, out of reach of Ctrl-C.

Without `PREFECT_API_URL` Prefect starts a temporary server subprocess (stack-notes §2). Two things
of its default go wrong for a user: it keeps its database in ~/.prefect (the user's UI fills with
every test run), and it sits in the terminal's process group, so the Ctrl-C meant for the build
kills it first and the build then spends minutes retrying a dead server. `temporary_server` starts
it in its own session with its database in <artifacts>/prefect/, and stops it after the build has
cleaned up (at exit, after Prefect's log workers flushed).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

from ecombench.errors import OutputError, ServerError


def check_api_url(url: str, timeout: float = 5.0) -> None:
    """Check that a Prefect API at `url` (PREFECT_API_URL) answers its health check.

    Raises:
        ServerError: no answer within `timeout` seconds (one line naming PREFECT_API_URL).
    """
    # deferred: prefect and httpx load only when a server is started or used
    import httpx

    try:
        response = httpx.get(f"{url.rstrip('/')}/health", timeout=timeout)
        response.raise_for_status()
    except (httpx.HTTPError, OSError) as exc:
        raise ServerError(f"PREFECT_API_URL={url}: the Prefect server does not answer ({type(exc).__name__}: "
                          f"{str(exc)[:120]}); start it (`.venv/bin/prefect server start`) or unset "
                          "PREFECT_API_URL for a temporary one") from None


def database_url(artifacts: Path) -> str:
    """The temporary server's SQLite database under `artifacts`/prefect/ (created when missing).

    Raises:
        OutputError: the folder cannot be created.
    """
    folder = Path(artifacts).resolve() / "prefect"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{folder}: cannot create the Prefect database folder ({exc.strerror or exc})") from None
    return f"sqlite+aiosqlite:///{folder / 'prefect.db'}"


@contextlib.contextmanager
def temporary_server(artifacts: Path) -> Iterator[str | None]:
    """Run the block against a temporary Prefect server of our own, or the user's (PREFECT_API_URL).

    Yields:
        The API URL of the temporary server, or None when PREFECT_API_URL is set (checked reachable).

    Raises:
        ServerError: PREFECT_API_URL is set but its server does not answer, or the temporary one did not start.
        OutputError: see `database_url`.
    """
    if os.environ.get("PREFECT_API_URL"):
        check_api_url(os.environ["PREFECT_API_URL"])
        yield None
        return
    os.environ.setdefault("PREFECT_API_DATABASE_CONNECTION_URL", database_url(artifacts))
    # deferred: prefect and httpx load only when a server is started or used
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import get_current_settings

    server = SubprocessASGIServer()  # the singleton Prefect's clients use for the temporary server

    def run_detached(self: SubprocessASGIServer) -> subprocess.Popen:
        # Prefect's own command (prefect/server/api/server.py), in a new session: the terminal's Ctrl-C
        # reaches the build, which cleans up, and not the server it still needs to do so.
        # deferred: prefect and httpx load only when a server is started or used
        import prefect

        env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
               "PREFECT__SERVER_FINAL": "1", **get_current_settings().to_environment_variables(exclude_unset=True)}
        env["PREFECT_API_DATABASE_CONNECTION_URL"] = os.environ["PREFECT_API_DATABASE_CONNECTION_URL"]
        # Its own output (and Prefect's known shutdown tracebacks, stack-notes §2) goes to a log file.
        log = open(Path(artifacts).resolve() / "prefect" / "server.log", "ab")  # noqa: SIM115 (the child keeps it)
        return subprocess.Popen([sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent),
                                 "--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1",
                                 "--port", str(self.port), "--log-level", "error", "--lifespan", "on"],
                                env=env, start_new_session=True, stdout=log, stderr=log)

    server._run_uvicorn_command = types.MethodType(run_detached, server)  # type: ignore[method-assign]
    try:
        # The startup limit explicitly: Prefect's settings may have been read before ecombench.flows.settings set it.
        server.start(timeout=int(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS") or 120))
    except RuntimeError as exc:
        raise ServerError(f"the temporary Prefect server did not start ({str(exc).splitlines()[0][:160]})") from None
    # No stop here: Prefect stops the server at exit (atexit, registered by start), after its log and event
    # workers (registered later, so run first) have sent the run's last lines.
    yield server.api_url


def progress_logger(name: str) -> logging.Logger:
    """A flow's progress logger (`name`, e.g. "ecombench.build") whose lines reach the API.

    Its lines go to the flow run's logs in the UI whatever PREFECT_LOGGING_LEVEL keeps on the console
    (WARNING by default, so Prefect's per-task lines stay quiet); the CLI prints progress to stderr
    itself. Call it inside a run.
    """
    # deferred: prefect and httpx load only when a server is started or used
    from prefect.logging.handlers import APILogHandler

    logger = logging.getLogger(name)
    if not any(isinstance(h, APILogHandler) for h in logger.handlers):
        logger.addHandler(APILogHandler())
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger
