"""The `ecombench` command line (Typer), one module per command group.

`app` is the Typer application (ecombench.flows.cli.app); importing this package registers every command on it:
catalog (ingest, stats, verify, categories), build, splits (report, inspect, diff, validate), agents (run-agent,
grade) and interop (export, compare). `main` is the console script.
"""

from ecombench.flows.cli import agents, build, catalog, interop, splits
from ecombench.flows.cli.app import app, main

__all__ = ["agents", "app", "build", "catalog", "interop", "main", "splits"]
