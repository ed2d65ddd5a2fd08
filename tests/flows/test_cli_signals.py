"""A signal ends a command with one line and exit 128 + its number, whatever instant it lands.

Each test provokes the instant itself (the signal is raised in this process at a chosen point), so the
outcome does not depend on timing: a signal whose KeyboardInterrupt an engine turns into another error,
one an engine swallows after the run was final, and one arriving while the process exits.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ecombench.flows.cli.app import signals_end_the_command
from ecombench.io import forget_published, mark_published

REPO = Path(__file__).resolve().parents[2]


def test_a_signal_turned_into_another_error_still_ends_as_the_interruption(tmp_path):
    # What Prefect's engine does when the signal lands in its HTTP client mid-request: recording the crash fails.
    with pytest.raises(KeyboardInterrupt) as info, signals_end_the_command(tmp_path / "snap"):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise RuntimeError("recording the crashed state failed") from None
    assert str(info.value).startswith("interrupted by SIGINT; nothing was published")
    assert info.value.signal_name == "SIGINT"  # type: ignore[attr-defined]


def test_a_signal_after_the_snapshot_was_renamed_into_place_withdraws_it(tmp_path):
    # The rename published the snapshot, then the signal landed (in the flow's last lines, or in Prefect's flow
    # engine, which drops a BaseException once the run is final): the command stops and leaves nothing published.
    target = tmp_path / "snap"
    target.mkdir()
    (target / "manifest.json").write_text("{}")
    mark_published(target)
    try:
        with pytest.raises(KeyboardInterrupt) as info, signals_end_the_command(target):
            try:
                signal.raise_signal(signal.SIGTERM)
            except KeyboardInterrupt:
                pass
    finally:
        forget_published(target)
    assert str(info.value).startswith(f"interrupted by SIGTERM; nothing was published ({target}, complete just "
                                      "before the signal, was withdrawn)")
    assert list(tmp_path.iterdir()) == []


def test_a_user_error_after_a_signal_keeps_its_own_line(tmp_path):
    from ecombench.errors import OutputError

    with pytest.raises(OutputError), signals_end_the_command(tmp_path / "snap"):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise OutputError("disk full") from None


def test_the_handlers_of_before_are_back_after_the_block(tmp_path):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with signals_end_the_command(tmp_path / "snap"):
        assert signal.getsignal(signal.SIGINT) is not before[0]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_signal_during_the_exit_handlers_gives_one_line_and_130_without_traceback():
    # Prefect flushes its logs and stops its server in atexit handlers; a Ctrl-C landing there used to raise
    # inside them (a traceback per handler) after the command had printed its result.
    script = textwrap.dedent("""
        import atexit, signal, sys, time
        from ecombench.flows.cli.app import main

        def flush():
            signal.raise_signal(signal.SIGINT)
            time.sleep(0.05)
            print("flushed", file=sys.stderr)

        atexit.register(flush)
        sys.argv = ["ecombench", "--version"]
        main()
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 130, out.stderr
    assert "Traceback" not in out.stderr
    assert "flushed" in out.stderr  # the handler ran to its end
    errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert errors == ["error: interrupted by SIGINT while exiting, after the command had finished (what it printed "
                      "and published is complete)"]
    assert out.stdout.startswith("ecombench ")
