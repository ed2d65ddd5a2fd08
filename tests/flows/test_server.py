"""The shared Prefect server (flows/server.py): started once in the background, reused, stopped when idle."""

from __future__ import annotations

import json
import os
import time

import pytest

from ecombench.flows import server as shared


@pytest.fixture(autouse=True)
def api_url_restored():
    """Put PREFECT_API_URL back as it was: `start_or_reuse` sets it in os.environ itself, and
    monkeypatch.delenv(raising=False) of an unset variable records nothing to undo, so a test's URL
    leaked into every later test of the worker (the CI failure of the fault drill's ingest cases)."""
    saved = os.environ.get("PREFECT_API_URL")
    yield
    os.environ.pop("PREFECT_API_URL", None)
    if saved is not None:
        os.environ["PREFECT_API_URL"] = saved


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A private artifacts folder and Prefect home; no PREFECT_API_URL; the shared mode (not the tests' default)."""
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect"))
    monkeypatch.setenv("ECOMBENCH_PREFECT_SERVER", "shared")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    yield tmp_path / "artifacts"
    shared.stop(tmp_path / "artifacts")


@pytest.mark.prefect
def test_a_started_server_is_reused_then_stops_itself_when_idle(isolated, monkeypatch):
    first = shared.start_or_reuse(isolated, idle=8)
    assert first.how == "started" and os.environ["PREFECT_API_URL"] == first.url
    first.wait(timeout=180)
    assert shared.healthy(first.url)
    monkeypatch.delenv("PREFECT_API_URL")
    again = shared.start_or_reuse(isolated)
    assert (again.how, again.url, again.pid) == ("reused", first.url, first.pid)
    deadline = time.monotonic() + 90
    while shared._alive(first.pid) and time.monotonic() < deadline:
        try:
            os.waitpid(first.pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(1)
    assert not shared._alive(first.pid), "the server did not stop after its idle time"
    assert not shared.state_path(isolated).exists()


def test_a_set_api_url_or_the_ephemeral_mode_starts_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api")
    assert shared.start_or_reuse(tmp_path).how == "configured"
    monkeypatch.delenv("PREFECT_API_URL")
    monkeypatch.setenv("ECOMBENCH_PREFECT_SERVER", "ephemeral")
    assert shared.start_or_reuse(tmp_path).how == "ephemeral" and "PREFECT_API_URL" not in os.environ
    assert not shared.state_path(tmp_path).exists()


def test_a_record_of_a_dead_server_is_not_reused(tmp_path, monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("ECOMBENCH_PREFECT_SERVER", "shared")
    path = shared.state_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"pid": 999999999, "url": "http://127.0.0.1:9/api",
                                "prefect_home": str(shared.prefect_home())}), encoding="utf-8")
    monkeypatch.setattr(shared.subprocess, "Popen", _FakePopen)
    started = shared.start_or_reuse(tmp_path)
    assert started.how == "started" and started.url != "http://127.0.0.1:9/api"


class _FakePopen:
    pid = 424242

    def __init__(self, *args, **kwargs):
        pass
