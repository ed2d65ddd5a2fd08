"""Two builds of the same split started together both publish, as v1 and v2 (real processes, no Prefect)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ecombench.splits.publish import next_version, reserve_version

REPO = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
from pathlib import Path
from ecombench.pipeline.build import build_split
from ecombench.pipeline.config import BuildConfig
out = build_split(BuildConfig(min_hidden_division=1,
                              catalog=sys.argv[1], intents=["product_search"], candidates_per_intent=8),
                  "same", root=Path(sys.argv[2]), artifacts=Path(sys.argv[3]), allow_empty=True)
print(out.path.name)
"""


def test_two_builds_of_one_split_started_together_publish_v1_and_v2(sample_catalog, tmp_path):
    root = tmp_path / "splits"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(sample_catalog.path), str(root),
                               str(tmp_path / f"artifacts{k}")], cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for k in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    assert sorted(out.strip().splitlines()[-1] for out, _ in outs) == ["v1", "v2"]
    assert sorted(p.name for p in (root / "same").iterdir()) == ["v1", "v2"]  # no reservation or temp left
    manifests = [json.loads((root / "same" / v / "manifest.json").read_text()) for v in ("v1", "v2")]
    assert [m["version"] for m in manifests] == ["v1", "v2"]
    assert (root / "same" / "v1" / "tasks.jsonl").read_bytes() == (root / "same" / "v2" / "tasks.jsonl").read_bytes()


def test_a_reservation_holds_its_version_and_a_dead_builds_is_taken_over(tmp_path):
    split = tmp_path / "s"
    with reserve_version(split) as first, reserve_version(split) as second:
        assert (first, second) == ("v1", "v2") and next_version(split) == "v3"
    assert not split.exists()  # released, and the empty split directory with it
    dead = split / ".v1.reserved"
    dead.mkdir(parents=True)
    (dead / "pid").write_text("999999999")  # no such process
    with reserve_version(split) as again:
        assert again == "v1"
