"""The `ecombench` Typer app, the one place user errors become one line, and what the command groups share.

Errors a user can fix (ecombench.errors.EcombenchError) are caught in one place, `UserErrorsAsOneLine`:
one `error: ...` line naming the file, record or setting, exit 1; `--debug` shows the traceback
instead. Any other exception is a bug and crashes with its traceback. Nothing already written is
touched (snapshots and split versions are written whole or not at all).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from rich.console import Console
from typer.core import TyperGroup

from ecombench import __version__
from ecombench.errors import EcombenchError, InputError, OutputError, ServerError, SettingError
from ecombench.flows.settings import apply_prefect_defaults, artifacts_root
from ecombench.io import forget_published, published
from ecombench.llm import LLM_OPTION_HELP
from ecombench.timing import breakdown, phase

apply_prefect_defaults()

USER_ERRORS: tuple[type[Exception], ...] = (EcombenchError,)

# The signal that interrupted the command: SIGINT arrives as Python's KeyboardInterrupt, SIGTERM is made one.
LAST_SIGNAL = {"name": "SIGINT"}


def signal_exit_code(name: str) -> int:
    """The exit status shells expect after a signal: 128 + its number (130 for SIGINT, 143 for SIGTERM)."""
    try:
        return 128 + int(signal.Signals[name])
    except KeyError:
        return 130


def terminate_as_interrupt() -> None:
    """Make SIGTERM (`kill`, a container stop, a CI timeout) stop a command as Ctrl-C does: one line, cleanup run.

    Python's default for SIGTERM ends the process at once, without the `finally` blocks that remove
    temporary files; raised as KeyboardInterrupt, it unwinds like Ctrl-C. Main thread only.
    """
    def handler(signum: int, frame: Any) -> None:
        LAST_SIGNAL["name"] = signal.Signals(signum).name
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


@contextlib.contextmanager
def signals_end_the_command(target: Path) -> Iterator[None]:
    """SIGINT or SIGTERM during the block ends the command as an interruption, whatever instant it lands.

    A signal can land inside Prefect's task or flow engine or its HTTP client; recording the crash there can
    then fail with another exception (which would reach the user as a traceback and exit 1), and one landing
    once a run is final is swallowed by the engine. Here the first signal is remembered: any exception that
    leaves the block after it becomes the one-line interruption (exit 128 + its number), and a block that
    ends normally after it still stops the command. Either way nothing stays published (`_interruption`).
    Logged tracebacks are dropped from then on (the CLI prints one line). Main thread only.

    Args:
        target: what the block publishes (a snapshot directory); withdrawn if it was published before the stop.

    Raises:
        KeyboardInterrupt: a signal arrived during the block (its message is the command's one line).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[str] = []

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if not arrived:
            arrived.append(name)
            LAST_SIGNAL["name"] = name
            _hide_logged_tracebacks()
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except BaseException as exc:
        if not arrived and type(exc).__name__ == "TerminationSignal":  # Prefect's SIGTERM handler inside a run
            arrived.append("SIGTERM")
            LAST_SIGNAL["name"] = "SIGTERM"
        if not arrived or isinstance(exc, USER_ERRORS):
            raise
        raise _interruption(arrived[0], target) from None
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
    if arrived:  # the engine swallowed it after the run was final
        raise _interruption(arrived[0], target)


def _interruption(name: str, target: Path) -> KeyboardInterrupt:
    """The KeyboardInterrupt `UserErrorsAsOneLine` prints, once `target` is withdrawn if it was published already.

    A signal can land after the rename that published `target` but before the command reported it. The
    command stops as interrupted, so what it published goes too: renamed back to a hidden name (readers never
    see a half-removed folder) and removed, or by the next run of the same command if this process dies first
    (`ecombench.io.remove_stale_temps`). The same command then runs again as after any interruption.
    """
    target, note = Path(target), ""
    if target in published() and target.exists():
        hidden = target.with_name(f".{target.name}.staging-{os.getpid()}")
        try:
            os.rename(target, hidden)
        except OSError as exc:
            return _signal_exit(name, f"interrupted by {name} after {target} was published complete (it could not "
                                      f"be withdrawn: {exc.strerror})")
        forget_published(target)
        shutil.rmtree(hidden, ignore_errors=True)
        note = f" ({target}, complete just before the signal, was withdrawn)"
    return _signal_exit(name, f"interrupted by {name}; nothing was published{note} (what a command writes appears "
                              "whole or not at all: run it again)")


def _signal_exit(name: str, message: str) -> KeyboardInterrupt:
    exc = KeyboardInterrupt(message)
    exc.signal_name = name  # type: ignore[attr-defined]
    return exc


class _DropTracebacks(logging.Filter):
    """Drops every log record that carries a traceback (set once a signal is stopping the command)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.exc_info


def _hide_logged_tracebacks() -> None:
    # Prefect's console handlers hang on the "prefect" logger and the root; a filter on a handler sees every
    # record that reaches it, whichever logger made it.
    for logger in (logging.getLogger("prefect"), logging.getLogger()):
        for handler in logger.handlers:
            if not any(isinstance(f, _DropTracebacks) for f in handler.filters):
                handler.addFilter(_DropTracebacks())


class _HideUserErrorTracebacks(logging.Filter):
    """Drops Prefect's log records of user errors and interruptions (with traceback): the CLI prints one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], (*USER_ERRORS, KeyboardInterrupt)):
            return False
        # "Crash detected! Execution was aborted by an interrupt signal." and the state it ends in: a Ctrl-C.
        return "aborted by an interrupt signal" not in record.getMessage()


class UserErrorsAsOneLine(TyperGroup):
    """The command group that turns a user error raised by any command into one `error:` line and exit 1.

    The one place the CLI handles errors: commands raise ecombench.errors classes and never print
    errors themselves. With `--debug` the error propagates with its traceback.
    """

    def invoke(self, ctx: click.Context) -> Any:  # type: ignore[override]  # typer types it as its vendored click
        """Run the command; a USER_ERRORS exception becomes `error: <first line>` on stderr and exit 1."""
        try:
            return super().invoke(ctx)  # type: ignore[arg-type]  # the same Context at run time
        except USER_ERRORS as exc:
            if getattr(ctx.obj, "debug", False):
                raise
            message = (str(exc).splitlines() or [type(exc).__name__])[0]
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM (`terminate_as_interrupt`) outside a build's own handling
            if getattr(ctx.obj, "debug", False):
                raise
            name = getattr(exc, "signal_name", "") or LAST_SIGNAL["name"]
            message = (str(exc).splitlines() or [""])[0] or (
                f"interrupted by {name}; nothing was published (what a command writes appears whole or not at "
                "all: run it again)")
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(signal_exit_code(name)) from None
        except BrokenPipeError:  # `ecombench inspect ... | head -1`: the reader left, which is no error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more reaches the pipe
            raise typer.Exit(0) from None


@dataclass(frozen=True)
class CliState:
    """What every command shares, resolved once by the app's callback (`ctx.obj`).

    Attributes:
        artifacts: the artifacts root (catalogs, splits, caches): $ECOMBENCH_ARTIFACTS, else ./artifacts.
        debug: show tracebacks of user errors.
    """

    artifacts: Path
    debug: bool = False


app = typer.Typer(cls=UserErrorsAsOneLine,
                  help="Build validated benchmark splits for LLM shopping agents from Amazon Reviews 2023.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"ecombench {__version__}")
        raise typer.Exit()


@app.callback()
def cli_options(ctx: typer.Context,
                debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an error instead of "
                                                    "one line.")] = False,
                version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                                      help="Print ecombench's version and exit.")] = False,
                verify_content: Annotated[bool, typer.Option(
                    "--verify-content", help="Rehash every catalog snapshot file the command trusts, even when "
                    "a hash remembered for the unchanged file exists (split files are always rehashed).")
                ] = False) -> None:
    """Build validated benchmark splits for LLM shopping agents from Amazon Reviews 2023."""
    ctx.obj = CliState(artifacts=artifacts_root(), debug=debug)
    if verify_content:
        # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
        from ecombench.catalog.integrity import VERIFY_CONTENT_ENV

        os.environ[VERIFY_CONTENT_ENV] = "1"
    if not debug:
        for name in ("prefect.flow_runs", "prefect.task_runs"):
            logger = logging.getLogger(name)
            if not any(isinstance(f, _HideUserErrorTracebacks) for f in logger.filters):
                logger.addFilter(_HideUserErrorTracebacks())


_SERVER = None


def shared_server():
    """The Prefect server of this command (ecombench.flows.server): found or started once, before prefect loads."""
    global _SERVER
    if _SERVER is None:
        # deferred: the shared server's client (http, ssl: ~50 ms) loads only for commands that run a flow
        from ecombench.flows.server import start_or_reuse

        with phase("prefect server: find or start"):
            try:
                _SERVER = start_or_reuse(artifacts_root())
            except OSError as exc:  # the server's state lives under the artifacts folder (preflight's check too)
                raise OutputError(f"{exc.filename or artifacts_root()}: not writable ({exc.strerror}); the "
                                  "Prefect server's state and every output go under the artifacts folder (set "
                                  "ECOMBENCH_ARTIFACTS)") from exc
    return _SERVER


def wait_for_server(warm: tuple[str, ...] = ()) -> None:
    """Wait until this command's Prefect server answers, importing the `warm` modules meanwhile.

    Raises:
        ServerError: the server did not start (one line).
    """
    server = shared_server()
    with phase(f"prefect server: wait ({server.how})"):
        try:
            server.wait(warm=warm)
        except RuntimeError as exc:
            raise ServerError(str(exc).splitlines()[0]) from exc


def _exit_server_lost(reason: str) -> None:
    """`watch_server`'s answer to a lost Prefect server: one error line and exit 1 at once.

    The process ends here (os._exit) rather than unwinding: every later Prefect call (and its exit
    handlers) would wait minutes on the dead server. Nothing is lost by it: a version or snapshot is renamed
    into place only when complete, finished batches are kept, and what was being written is removed by the
    next run of the same command (ecombench.io.remove_stale_temps).
    """
    done = published()
    if done:  # renamed into place whole before the server went: complete, only its Prefect records may lack the end
        said = f"{', '.join(str(p) for p in done)} was published complete before that"
    else:
        said = ("nothing was published (finished batches are kept: run the same command again, which starts a new "
                "server)")
    typer.echo(f"error: {reason}; {said}", err=True)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(1)


@contextlib.contextmanager
def server_watched(url: str | None) -> Iterator[None]:
    """Run the block with its Prefect server (`url`, else PREFECT_API_URL) watched: a lost one ends the command.

    See ecombench.flows.server.watch_server: nothing listening for 3 s, or no answer for 5 minutes.
    """
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.flows.server import watch_server

    # Prefect's API log worker reports each failed upload on stderr ("--- Error logging to API ---" and the
    # exception, without a final newline) when logging.raiseExceptions is set; once the server is gone that is
    # the watcher's one line to say.
    raising, logging.raiseExceptions = logging.raiseExceptions, False
    try:
        with watch_server(url or os.environ.get("PREFECT_API_URL"), _exit_server_lost):
            yield
    finally:
        logging.raiseExceptions = raising


def check_name(value: str | None, option: str) -> None:
    """Refuse a split, version or snapshot name that is not one folder name (ecombench.io.name_problem).

    Raises:
        SettingError: `value` holds a path separator or `..`, is empty or hidden (one line naming `option`).
    """
    # deferred: commands import what they run only when run: `ecombench --help` stays fast
    from ecombench.io import name_problem

    problem = None if value is None else name_problem(value)
    if problem:
        raise SettingError(f"{option} {value!r}: {problem} (nothing was written)")


def print_timing(verbose: bool) -> None:
    """With --verbose, print where the command's time went to stderr (ecombench.timing)."""
    if verbose:
        typer.echo(breakdown(), err=True)


def resolve_version_dir(arg: Path, artifacts: Path) -> Path:
    """A version argument as given: a directory, or <split>[@<version>] under <artifacts>/splits (newest if no version).

    Raises:
        SplitReadError: no such split or version.
    """
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.splits.inspect import resolve_version

    if not arg.exists() and len(arg.parts) == 1:
        return resolve_version(str(arg), artifacts / "splits")
    return arg


def check_split_integrity(version_dir: Path, manifest: dict, catalog: Path | None, artifacts: Path,
                          allow_modified: bool) -> list[str]:
    """ecombench.splits.integrity.check_split, with each problem let through by --allow-modified printed as a warning.

    Raises:
        InputError: a file differs from the manifest or the catalog is not the split's, without --allow-modified.
    """
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.splits.integrity import check_split

    problems = check_split(version_dir, manifest, catalog, allow_modified, artifacts / "cache" / "verified")
    for problem in problems:
        typer.echo(f"warning: {problem} (--allow-modified)", err=True)
    return problems


class PipeConsole(Console):
    """A rich console whose reader may leave: a closed pipe ends the command with exit 0."""

    def on_broken_pipe(self) -> None:
        """A reader that left (`| head -1`) ends the command quietly with exit 0 (rich's default is 1)."""
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(0)


def rich_console() -> Console:
    """A rich console for tables and task views: lines unwrapped, and a closed pipe ends the command with exit 0."""
    # soft_wrap: long queries and ids stay on one line, so output can be searched and piped.
    return PipeConsole(soft_wrap=True, highlight=False)


def echo_json(data: object) -> None:
    """Print JSON data indented, Unicode as it is."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def open_split(spec: Path, catalog: Path | None, artifacts: Path, allow_modified: bool = False):
    """(SplitVersion, SandboxCatalog, integrity problems let through) for a version argument.

    The catalog defaults to the manifest's (its absolute path). The version's files and the catalog's
    fingerprint are checked first (`check_split_integrity`).

    Raises:
        InputError: the version or its catalog snapshot cannot be read, or they fail the integrity check
            without --allow-modified.
    """
    # deferred: commands import what they run (polars, prefect) only when run: `ecombench --help` stays fast
    from ecombench.sandbox.catalog import SandboxCatalog
    from ecombench.splits.inspect import load_version
    from ecombench.splits.integrity import split_catalog_path

    version = load_version(resolve_version_dir(spec, artifacts))
    path = catalog or split_catalog_path(version.manifest) or Path("")
    problems = check_split_integrity(version.path, version.manifest, path, artifacts, allow_modified)
    try:
        return version, SandboxCatalog.open(path, cache_dir=artifacts / "cache" / "sandbox"), problems
    except FileNotFoundError as exc:
        raise InputError(f"{exc} (give the split's catalog with --catalog)") from exc


def main() -> None:
    """Console entry point (`ecombench`): run the command, then leave without tearing down every module.

    A build imports prefect, great-expectations, pandas and matplotlib; the interpreter then spent
    seconds freeing their objects after the command had printed everything (measured 1.5-5 s on a
    busy 2-core machine). Threads are joined and atexit handlers run (Prefect flushes its events
    and logs there) exactly as on a normal exit; only the final teardown is skipped.
    """
    terminate_as_interrupt()
    try:
        app()
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    late = _shut_down()
    if late and code == 0:
        # The command had finished: what it printed and published is complete; the exit status says it was stopped.
        typer.echo(f"error: interrupted by {late} while exiting, after the command had finished (what it printed "
                   "and published is complete)", err=True)
        code = signal_exit_code(late)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _shut_down() -> str | None:
    """What a normal exit does first (join non-daemon threads, run atexit handlers), undisturbed by a signal.

    A SIGINT or SIGTERM arriving now would raise inside a thread join or an atexit handler (Prefect flushes its
    logs and events and stops its server there) and print their tracebacks; it is remembered instead.

    Returns:
        The name of the first signal that arrived meanwhile, or None.
    """
    arrived: list[str] = []

    def remember(signum: int, frame: Any) -> None:
        arrived.append(signal.Signals(signum).name)

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, remember)
    try:
        getattr(threading, "_shutdown")()  # noqa: B009 - private: what a normal exit does first: join non-daemon threads
    except AttributeError:
        pass
    atexit._run_exitfuncs()
    return arrived[0] if arrived else None


def _model_option(flag: str, who: str) -> Any:
    return Annotated[str | None, typer.Option(flag, help=f"{who}: {LLM_OPTION_HELP['model']}.")]


def _base_url_option(flag: str, who: str) -> Any:
    return Annotated[str | None, typer.Option(flag, help=f"{who}: {LLM_OPTION_HELP['base_url']}.")]


# The model options of run-agent and grade, one definition each (build's come from BuildConfig, same help).
ModelOption, BaseUrlOption = _model_option("--model", "llm"), _base_url_option("--base-url", "llm")
UserModelOption = _model_option("--user-model", "--user llm")
UserBaseUrlOption = _base_url_option("--user-base-url", "--user llm")
JudgeModelOption = _model_option("--judge-model", "the judge of review opinions code cannot decide (none: they stay "
                                                  "unscored)")
JudgeBaseUrlOption = _base_url_option("--judge-base-url", "the judge")
TemperatureOption = Annotated[float, typer.Option("--temperature", help=f"llm: {LLM_OPTION_HELP['temperature']}.")]
MaxTokensOption = Annotated[int, typer.Option("--max-tokens", help=f"llm: {LLM_OPTION_HELP['max_tokens']}.")]
TimeoutOption = Annotated[float, typer.Option("--timeout", help=f"llm: {LLM_OPTION_HELP['timeout']}.")]

# The --allow-modified option of every command that reads a split.
AllowModified = Annotated[bool, typer.Option(
    "--allow-modified", help="Go on when the split's files or its catalog differ from the manifest (recorded in "
                             "the output).")]

