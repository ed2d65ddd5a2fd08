"""The Dask task runner (prefect-dask) builds the same split as the default threads runner.

Both builds run in one subprocess (one temporary Prefect server) with a private PREFECT_HOME and
artifacts folder, over the bundled real sample; the Dask one on a LocalCluster of two worker
processes, each loading the catalog context itself from the snapshot path.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ecombench.errors import ServerError
from ecombench.flows.build import check_dask_address
from ecombench.flows.cli import app
from ecombench.pipeline.config import BuildConfig
from tests.conftest import session_prefect_url

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import json, sys
from ecombench.flows.build import run_build
from ecombench.pipeline.config import BuildConfig
from ecombench.flows.settings import artifacts_root
# Three intents (one of them over reviews) keep three builds quick; the runners' equality does not depend on which.
config = BuildConfig(min_hidden_division=1, catalog=sys.argv[1], candidates_per_intent=10, batch_size=3, resume=False,
                     intents=["product_search", "negative_constraint", "review_driven"])
out = {}
# "partitioned": the batches run in this process and each round of their questions is one Dask task per
# partition (527 products in partitions of 150 rows: four, the last shorter); a worker keeps one partition in
# memory and reads its other one back from its scratch directory on each pass.
for runner, extra in (("threads", {}), ("dask", {}), ("partitioned", {"answer_sets": "partitioned",
                                                                       "partition_rows": 150,
                                                                       "partitions_kept": 1})):
    update = {"task_runner": "threads" if runner == "threads" else "dask", "dask_workers": 2, **extra}
    result = run_build(config.model_copy(update=update), runner, str(artifacts_root()), root=sys.argv[2])
    out[runner] = result.get("path") or result
print("RESULT", json.dumps(out))
"""


@pytest.mark.prefect
def test_dask_local_cluster_builds_equal_the_threads_build_byte_for_byte(sample_catalog, tmp_path):
    env = dict(os.environ, PREFECT_HOME=str(tmp_path / "prefect-home"), ECOMBENCH_ARTIFACTS=str(tmp_path / "art"),
               PYTHONPATH=str(REPO))
    env.pop("PREFECT_API_URL", None)
    env.update(session_prefect_url())  # the run's Prefect server (tests/conftest.py)
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(sample_catalog.path), str(tmp_path / "splits")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    # The partitioned build's pass reports, made on candidate threads, name their flow run (no Prefect warning).
    assert "without a flow run id" not in run.stderr, run.stderr[-3000:]
    # The test snapshot carries no statistics, so the partitioned build says it plans from the whole table.
    assert "the partitioned build reads the whole products table to plan" in run.stderr
    paths = json.loads(run.stdout.split("RESULT ", 1)[1])
    threads, dask, partitioned = Path(paths["threads"]), Path(paths["dask"]), Path(paths["partitioned"])
    for other in (dask, partitioned):
        assert (threads / "tasks.jsonl").read_bytes() == (other / "tasks.jsonl").read_bytes(), other
        assert (threads / "rejections.jsonl").read_bytes() == (other / "rejections.jsonl").read_bytes(), other
    assert json.loads((partitioned / "manifest.json").read_text())["config"]["answer_sets"] == "partitioned"
    manifest = json.loads((dask / "manifest.json").read_text())
    assert manifest["config"]["task_runner"] == "dask" and manifest["counts"]["tasks"] > 0
    assert manifest["resumed_candidates"] == 0  # the workers built every candidate themselves
    assert manifest["config_hash"] == json.loads((threads / "manifest.json").read_text())["config_hash"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_dask_address_is_one_line_naming_the_option(tmp_path, sample_catalog):
    address = f"tcp://127.0.0.1:{_closed_port()}"
    with pytest.raises(ServerError, match=r"^--dask-address tcp://127\.0\.0\.1:\d+: cannot reach the Dask scheduler"):
        check_dask_address(address, timeout=2)
    result = CliRunner().invoke(app, ["build", "--catalog", str(sample_catalog.path), "--dask-address", address,
                                      "--out", str(tmp_path / "splits")])
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines()[-1].startswith(f"error: --dask-address {address}: cannot reach")
    assert not (tmp_path / "splits").exists()


def test_the_task_runner_does_not_change_the_config_hash():
    threads = BuildConfig(catalog="c")
    dask = BuildConfig(catalog="c", task_runner="dask", dask_address="tcp://10.0.0.1:8786", dask_workers=8)
    assert threads.config_hash("fp") == dask.config_hash("fp")
