"""Fixtures of the sandbox tests: the shared real snapshots opened for the agents' tools, and real tasks."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def sandbox_catalog(full_catalog, artifacts):
    """Every shared real file (~7,300 products, ~3,200 electronics reviews) opened for the sandbox.

    Its index is cached where the build's oracle check keeps it (the session's private artifacts), so
    the snapshot is tokenised once per session."""
    from ecombench.sandbox.catalog import SandboxCatalog

    return SandboxCatalog.open(full_catalog.path, full_catalog.table, cache_dir=artifacts / "cache" / "sandbox")


@pytest.fixture(scope="session")
def sample_sandbox(sample_catalog):
    """The bundled real sample (527 products) opened for the sandbox: small enough for brute-force comparisons."""
    from ecombench.sandbox.catalog import SandboxCatalog

    return SandboxCatalog.open(sample_catalog.path, sample_catalog.table)


@pytest.fixture(scope="session")
def built_tasks(full_build) -> list[dict[str, Any]]:
    """The published tasks of the full real build (the build's oracle check already ran on them), review_driven
    tasks among them (the tools and the grader need some with review opinions)."""
    tasks = full_build.tasks
    assert any(t["intent"] == "review_driven" for t in tasks), "the full build accepted no review_driven task"
    return tasks


def first_task(tasks: list[dict[str, Any]], predicate) -> dict[str, Any]:
    """The first task (by id) satisfying `predicate`; fails the test when the build has none."""
    found = next((t for t in sorted(tasks, key=lambda t: t["id"]) if predicate(t)), None)
    assert found is not None, "the real build has no task of the kind this test needs"
    return found
