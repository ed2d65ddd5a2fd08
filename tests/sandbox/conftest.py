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
def built_tasks(full_build, full_catalog, tmp_path_factory, artifacts) -> list[dict[str, Any]]:
    """The published tasks of the full real build (the build's oracle check already ran on them), plus
    review_driven tasks of a build with issue #12's hidden-source rule off: with it on, the two review opinions
    single out the target and no review_driven task is accepted, but the tools and grader still need some."""
    from ecombench.pipeline.build import build_split
    from ecombench.pipeline.config import BuildConfig
    from ecombench.splits.inspect import load_version

    config = BuildConfig(catalog=str(full_catalog.path), intents=["review_driven"], candidates_per_intent=40,
                         oracle_check=True, min_hidden_answer_set=1, min_hidden_division=1)
    reviews = load_version(build_split(config, "reviews", root=tmp_path_factory.mktemp("splits"),
                                       artifacts=artifacts).path).tasks
    return full_build.tasks + reviews


def first_task(tasks: list[dict[str, Any]], predicate) -> dict[str, Any]:
    """The first task (by id) satisfying `predicate`; fails the test when the build has none."""
    found = next((t for t in sorted(tasks, key=lambda t: t["id"]) if predicate(t)), None)
    assert found is not None, "the real build has no task of the kind this test needs"
    return found
