"""A CLI build on a temporary Prefect server: Ctrl-C stops it cleanly (exit 130), the rerun says what it
resumed, and the flow runs are named <split>-<version>, tagged, with the build's log lines, read back
through the Prefect API from the database under the artifacts folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
QUERY = """
import json, sys
from pathlib import Path
from ecombench.flows.prefect_server import temporary_server
with temporary_server(Path(sys.argv[1])):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName, LogFilter, LogFilterFlowRunId
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=["sig-v1"])))
        out = []
        for run in runs:
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))
            out.append({"name": run.name, "tags": sorted(run.tags), "state": run.state.type.value,
                        "logs": [log.message for log in logs]})
print("RESULT", json.dumps(out))
"""


@pytest.mark.prefect
def test_ctrl_c_stops_a_build_and_the_runs_logs_are_in_prefect(sample_catalog, tmp_path):
    art = tmp_path / "art"
    env = dict(os.environ, ECOMBENCH_ARTIFACTS=str(art), PYTHONPATH=str(REPO), PREFECT_HOME=str(tmp_path / "home"))
    env.pop("PREFECT_API_URL", None)
    env.pop("PREFECT_API_DATABASE_CONNECTION_URL", None)
    args = [sys.executable, "-m", "ecombench.flows.cli", "build", "--catalog", str(sample_catalog.path),
            "--split", "sig", "--intent", "product_search", "--intent", "rating_quality", "--candidates", "12",
            "--batch-size", "2"]
    err = tmp_path / "first.err"
    with open(err, "w") as fh:
        first = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=fh, start_new_session=True)
        deadline = time.time() + 300
        while time.time() < deadline and first.poll() is None and "batch 2/" not in err.read_text():
            time.sleep(0.1)
        os.killpg(first.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole process group
        assert first.wait(timeout=120) == 130
    text = err.read_text()
    assert "Traceback" not in text and "nothing was published" in text.splitlines()[-1]
    assert not (art / "splits" / "sig").exists()
    rerun = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert any(line.strip().startswith("resumed ") and "batches from the cache" in line
               for line in rerun.stderr.splitlines())
    assert (art / "prefect" / "prefect.db").is_file() and not (tmp_path / "home" / "prefect.db").exists()

    query = subprocess.run([sys.executable, "-c", QUERY, str(art)], cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=300)
    assert query.returncode == 0, query.stderr[-2000:]
    runs = json.loads(next(line for line in query.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert sorted(r["state"] for r in runs) == ["COMPLETED", "FAILED"]
    for run in runs:
        assert run["name"] == "sig-v1"
        assert {"split:sig", "version:v1", "intent:product_search", "verbaliser:template-v2"} <= set(run["tags"])
    done = next(r for r in runs if r["state"] == "COMPLETED")
    assert any(m.startswith("batch 1/") for m in done["logs"]) and any("from the cache" in m for m in done["logs"])
    stopped = next(r for r in runs if r["state"] == "FAILED")
    assert any("interrupted by SIGINT" in m for m in stopped["logs"])
