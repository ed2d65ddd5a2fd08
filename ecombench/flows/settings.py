"""Run settings of the edges (the CLI, deployments): where artifacts go and Prefect's local defaults."""

from __future__ import annotations

import os
from pathlib import Path

# Keep Prefect local, quiet and patient on a busy 2-core machine (stack-notes §2).
PREFECT_DEFAULTS = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
}


def artifacts_root() -> Path:
    """The artifacts root (catalogs, splits, caches): $ECOMBENCH_ARTIFACTS, else ./artifacts of the current directory.

    Read once at an edge (the CLI, a deployment entrypoint, a script) and passed down as an argument;
    nothing below the edge reads the environment for it.
    """
    return Path(os.environ.get("ECOMBENCH_ARTIFACTS") or Path.cwd() / "artifacts")


def apply_prefect_defaults() -> None:
    """Set Prefect's environment defaults unless the user set them; call before importing prefect."""
    for key, value in PREFECT_DEFAULTS.items():
        os.environ.setdefault(key, value)
