"""Fixtures of the arena tests: the sandbox's real snapshot and published split (tests/sandbox/conftest.py)."""

from tests.sandbox.conftest import built_tasks, sandbox_catalog  # noqa: F401 - pytest fixtures
