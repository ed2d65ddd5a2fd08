"""Ctrl-C during a partition pass stops the build within seconds, and the same command then resumes it.

A partitioned build over the shared electronics/beauty/office file (real products, partitions of 100 rows) runs
in a subprocess whose partition answers are slowed to 0.5 s a question once its first batch is finished, so a
pass lasts minutes, as one does on a 10M-product catalog. SIGINT arrives during such a pass.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import os, sys, time
from pathlib import Path
import ecombench.answers.partitioned as partitioned
from ecombench.flows.settings import artifacts_root
from ecombench.pipeline.build import BuildInterrupted, build_split, stop_on_signals
from ecombench.pipeline.config import BuildConfig

catalog, splits, flag = sys.argv[1:4]
batches = artifacts_root() / "cache" / "batches"
answer = partitioned.Partition.answer

def slow_answer(self, question, exact_within):
    if os.environ.get("SLOW_PASSES") == "1" and any(batches.rglob("*.json")):
        Path(flag).touch()
        time.sleep(0.5)
    return answer(self, question, exact_within)

partitioned.Partition.answer = slow_answer
config = BuildConfig(catalog=catalog, intents=["product_search"], candidates_per_intent=6, batch_size=3,
                     min_hidden_division=1, answer_sets="partitioned", partition_rows=100)
try:
    with stop_on_signals():
        # allow_empty: what is tested is the stop and the resume, not how many of six candidates pass
        out = build_split(config, "interrupted", root=Path(splits), artifacts=artifacts_root(), allow_empty=True)
except BuildInterrupted as exc:
    print("INTERRUPTED", exc, flush=True)
    sys.exit(130)
print("PATH", out.path)
"""


def test_ctrl_c_stops_a_partition_pass_within_5_s_and_the_rerun_resumes(rich_catalog, tmp_path):
    env = dict(os.environ, ECOMBENCH_ARTIFACTS=str(tmp_path / "art"), PYTHONPATH=str(REPO))
    flag = tmp_path / "slow-pass-running"
    args = [sys.executable, "-c", SCRIPT, str(rich_catalog.path), str(tmp_path / "splits"), str(flag)]
    first = subprocess.Popen(args, cwd=REPO, env={**env, "SLOW_PASSES": "1"}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while not flag.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert flag.exists(), f"no slow pass started: {first.communicate(timeout=60)[1][-2000:]}"
    time.sleep(1.0)  # well inside the pass
    sent = time.monotonic()
    first.send_signal(signal.SIGINT)
    out, err = first.communicate(timeout=60)
    stopped_after = time.monotonic() - sent
    assert first.returncode == 130, err[-2000:]
    assert stopped_after < 5, f"took {stopped_after:.1f} s to stop"
    assert "INTERRUPTED interrupted by SIGINT" in out
    assert not (tmp_path / "splits" / "interrupted").exists()  # nothing published
    kept = list((tmp_path / "art" / "cache" / "batches").rglob("*.json"))
    assert len(kept) == 1  # the batch finished before the signal, not the interrupted one

    second = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr[-2000:]
    resumed = Path(second.stdout.split("PATH ", 1)[1].strip())
    manifest = json.loads((resumed / "manifest.json").read_text())
    assert manifest["resumed_candidates"] == 3  # the first batch, from its completion marker
