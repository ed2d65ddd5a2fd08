"""Fixed cost of small commands: a 1-file ingest and a 2-candidate build, from cold and with the server left running.

    .venv/bin/python benchmarks/fast_commands.py [--repeat N] [--keep-server]

Each command runs as a user runs it (`ecombench ... --verbose` in a fresh process) in a temporary
artifacts folder; the script prints each run's wall time, the load average before it, and the
`--verbose` breakdown (start-up, Prefect server, imports, flow steps). "cold" means no Prefect
server runs for that artifacts folder (the command starts one in the background); "warm" means
the previous command left it running. The Prefect home (its database) is PREFECT_HOME, else
/tmp/ecombench-bench-prefect; a database that does not exist yet adds its migrations to the
first cold run, which is reported. Targets (issue 18): under 10 s warm, under 15 s cold.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ECOMBENCH = [sys.executable, "-c", "from ecombench.flows.cli import main; main()"]
SAMPLE_META = REPO / "ecombench" / "data" / "sample" / "meta.jsonl.gz"


def run(args: list[str], env: dict[str, str]) -> tuple[float, float, str, int]:
    """(wall seconds, 1-minute load before, the --verbose breakdown, exit code) of one command."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run([*ECOMBENCH, *args, "--verbose"], cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    match = re.search(r"^timing:\n(?:  .*\n?)+", proc.stderr, re.M)
    detail = match.group(0) if match else proc.stderr[-2000:]
    return wall, load, detail, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="Runs of each warm command.")
    parser.add_argument("--keep-server", action="store_true", help="Leave the shared server running at the end.")
    args = parser.parse_args()
    from ecombench.pipeline import expectations_job, server

    home = os.environ.get("PREFECT_HOME", "/tmp/ecombench-bench-prefect")
    fresh_db = not (Path(home) / "prefect.db").exists()
    with tempfile.TemporaryDirectory(prefix="ecombench-bench-") as tmp:
        artifacts = Path(tmp) / "artifacts"
        env = {**os.environ, "ECOMBENCH_ARTIFACTS": str(artifacts), "PREFECT_HOME": home,
               "ECOMBENCH_PREFECT_SERVER": "shared", "ECOMBENCH_EXPECTATIONS": "worker"}
        env.pop("PREFECT_API_URL", None)
        rows = []

        def measure(label: str, command: list[str]) -> None:
            wall, load, detail, code = run(command, env)
            rows.append((label, wall, load, code))
            print(f"== {label}: {wall:.2f} s wall (load {load:.2f} before), exit {code}\n{detail}", flush=True)

        os.environ["ECOMBENCH_ARTIFACTS"] = str(artifacts)
        catalog = artifacts / "catalogs" / "one"
        try:
            measure("ingest 1 file, cold" + (" (new Prefect database)" if fresh_db else ""),
                    ["ingest", "--meta", str(SAMPLE_META), "--out", str(catalog)])
            for i in range(args.repeat):
                measure("ingest 1 file, warm", ["ingest", "--meta", str(SAMPLE_META), "--out", str(catalog) + f"-{i}"])
            for i in range(args.repeat):
                measure("build 2 candidates, warm", ["build", "--catalog", str(catalog), "--candidates", "2",
                                                     "--split", f"warm{i}"])
            server.stop(artifacts)
            expectations_job.stop(artifacts)
            measure("build 2 candidates, cold", ["build", "--catalog", str(catalog), "--candidates", "2",
                                                 "--split", "cold"])
        finally:
            if not args.keep_server:
                server.stop(artifacts)
                expectations_job.stop(artifacts)
        print("\nsummary (targets: warm < 10 s, cold < 15 s)")
        for label, wall, load, code in rows:
            target = 10 if "warm" in label else 15
            print(f"  {label:<48} {wall:6.2f} s  load {load:5.2f}  {'ok' if wall < target else 'over'}"
                  + ("" if code == 0 else f"  exit {code}"))


if __name__ == "__main__":
    main()
