"""The background expectations worker (ecombench/pipeline/expectations_job.py) gives what an in-process run gives."""

from __future__ import annotations

import pytest

from ecombench.pipeline import expectations_job as job
from ecombench.schemas.config import SplitConfig
from ecombench.tables.intents import load_intents
from ecombench.validation.expectations import run_suites


@pytest.fixture
def worker(tmp_path, monkeypatch):
    monkeypatch.setenv("ECOMBENCH_EXPECTATIONS", "worker")
    monkeypatch.setenv("ECOMBENCH_SERVER_IDLE_SECONDS", "60")
    yield tmp_path
    job.stop(tmp_path)


def test_the_workers_summary_equals_an_in_process_run_and_it_is_reused(worker, sample_catalog):
    assert job.prestart(worker, sample_catalog.path) == "started"
    intents = load_intents()
    got = job.run(sample_catalog.products, [], sample_catalog.path, SplitConfig(), intents, artifacts=worker)
    assert got == run_suites(sample_catalog.products, [], SplitConfig(), intents)
    assert job.prestart(worker, sample_catalog.path) == "reused"


def test_inline_mode_or_no_worker_validates_in_this_process(tmp_path, monkeypatch, sample_catalog):
    monkeypatch.setenv("ECOMBENCH_EXPECTATIONS", "inline")
    assert job.prestart(tmp_path, sample_catalog.path) == "off"
    monkeypatch.setenv("ECOMBENCH_EXPECTATIONS", "worker")
    intents = load_intents()
    got = job.run(sample_catalog.products, [], sample_catalog.path, SplitConfig(), intents, artifacts=tmp_path)
    assert got["suites"]["catalog"]["rows"] == sample_catalog.products.height
    assert not job.socket_path(tmp_path).exists()
