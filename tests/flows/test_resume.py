"""A build killed midway and rerun finishes with the same tasks.jsonl and does not redo finished batches."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ecombench.pipeline.build import build_split
from ecombench.pipeline.config import BuildConfig

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
from pathlib import Path
from ecombench.pipeline.build import build_split
from ecombench.pipeline.config import BuildConfig
from ecombench.flows.settings import artifacts_root
out = build_split(BuildConfig(min_hidden_division=1, candidates_per_intent=10,
                              catalog=sys.argv[1], batch_size=5), "resume", root=Path(sys.argv[2]),
                  artifacts=artifacts_root())
print("PATH", out.path)
"""


def test_a_killed_build_resumes_with_identical_output(sample_catalog, tmp_path):
    env = dict(os.environ, ECOMBENCH_ARTIFACTS=str(tmp_path / "art"), PYTHONPATH=str(REPO))
    batches = tmp_path / "art" / "cache" / "batches"
    args = [sys.executable, "-c", SCRIPT, str(sample_catalog.path), str(tmp_path / "splits")]
    first = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and len(list(batches.rglob("*.json"))) < 3 and first.poll() is None:
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    finished = len(list(batches.rglob("*.json")))
    assert finished >= 3 and not (tmp_path / "splits" / "resume").exists()  # killed before publishing

    second = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    resumed = Path(second.stdout.split("PATH ", 1)[1].strip())
    manifest = json.loads((resumed / "manifest.json").read_text())
    # At least the batches finished before the kill: up to 5 candidates each (fewer where an intent of the small
    # sample runs short of candidates).
    assert manifest["resumed_candidates"] >= finished

    clean = build_split(BuildConfig(min_hidden_division=1, candidates_per_intent=10, catalog=str(sample_catalog.path),
                                    batch_size=5, resume=False), "clean",
                        root=tmp_path / "clean", artifacts=tmp_path / "clean-art")
    assert (resumed / "tasks.jsonl").read_bytes() == (clean.path / "tasks.jsonl").read_bytes()
    assert (resumed / "rejections.jsonl").read_bytes() == (clean.path / "rejections.jsonl").read_bytes()
