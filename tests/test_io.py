"""ecombench.io: names that stay one folder, and the temporaries a killed process leaves, removed by the next run."""

from __future__ import annotations

import os
import subprocess

import pytest

from ecombench.io import name_problem, remove_stale_temps


@pytest.mark.parametrize("name", ["sample", "all-v2", "electronics_2023", "v10"])
def test_a_folder_name_is_accepted(name):
    assert name_problem(name) is None


@pytest.mark.parametrize("name", ["", " ", "..", ".", "../../x", "a/b", "a\\b", ".hidden", "x\x00y", "tab\tname"])
def test_a_path_or_a_hidden_or_empty_name_is_refused(name):
    assert name_problem(name)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_temporaries_of_a_dead_process_are_removed_and_a_running_ones_kept(tmp_path):
    dead, alive = _dead_pid(), os.getpid()
    for name in (f".sample.partial-{dead}-ab12cd34", f"..sample.staging-{dead}.partial-{dead}-ef56ab78",
                 f".v3.tmp-{dead}"):
        (tmp_path / name).mkdir()
    (tmp_path / f".manifest.json.tmp{dead}.140").write_text("{}")
    kept = [tmp_path / f".sample.partial-{alive}-00000000", tmp_path / "sample", tmp_path / ".v3.reserved"]
    for path in kept:
        path.mkdir()

    removed = remove_stale_temps(tmp_path)

    assert len(removed) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in kept)


def test_only_the_named_targets_temporaries_are_removed(tmp_path):
    dead = _dead_pid()
    (tmp_path / f".sample.partial-{dead}-ab12cd34").mkdir()
    (tmp_path / f".other.partial-{dead}-ab12cd34").mkdir()

    remove_stale_temps(tmp_path, "sample")

    assert [p.name for p in tmp_path.iterdir()] == [f".other.partial-{dead}-ab12cd34"]


def test_a_lost_server_after_publishing_says_what_was_published(tmp_path):
    # The lost-server exit (os._exit) runs in a process of its own: before anything is published it says
    # nothing was; after a split version was renamed into place it names that version as complete.
    import sys

    code = ("import sys; from pathlib import Path; from ecombench.io import mark_published; "
            "from ecombench.flows.cli.app import _exit_server_lost; "
            "[mark_published(Path(p)) for p in sys.argv[1:]]; _exit_server_lost('the Prefect server at X stopped')")
    before = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    version = tmp_path / "splits" / "s" / "v1"
    after = subprocess.run([sys.executable, "-c", code, str(version)], capture_output=True, text=True, timeout=120)
    assert before.returncode == after.returncode == 1
    assert before.stderr.strip().startswith("error: the Prefect server at X stopped; nothing was published")
    said = f"error: the Prefect server at X stopped; {version} was published complete before that"
    assert after.stderr.strip() == said
