"""A Prefect server that stops answering is noticed within seconds (ecombench.flows.server.watch_server)."""

from __future__ import annotations

import socket
import threading
import time

from ecombench.flows.server import server_state, watch_server


def _closed_port_url() -> str:
    with socket.socket() as s:  # bound and closed: nothing listens there afterwards
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/api"


def test_nothing_listening_is_refused():
    assert server_state(_closed_port_url()) == "refused"


def test_a_gone_server_is_reported_once_within_seconds():
    lost: list[str] = []
    called = threading.Event()

    def on_lost(reason: str) -> None:
        lost.append(reason)
        called.set()

    url = _closed_port_url()
    started = time.monotonic()
    with watch_server(url, on_lost, interval=0.2):
        assert called.wait(10)
    assert time.monotonic() - started < 10
    assert len(lost) == 1 and url in lost[0] and "stopped" in lost[0]


def test_no_url_watches_nothing():
    with watch_server(None, lambda reason: (_ for _ in ()).throw(AssertionError(reason))):
        pass
