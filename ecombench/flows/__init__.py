"""Orchestration: the Prefect flows of a build, batching and the `ecombench` CLI."""
