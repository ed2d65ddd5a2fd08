"""The `ingest` Prefect flow end to end on the bundled real sample.

The flow runs in a subprocess with its own PREFECT_HOME, so the temporary Prefect server and
its settings never leak into other tests (Prefect reads its settings when first imported).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys
from ecombench.flows.ingest import ingest_flow, sample_inputs
meta, reviews = sample_inputs()
manifest = ingest_flow(meta, reviews, sys.argv[1], batch_size=100)
print("MANIFEST " + json.dumps(manifest))
"""


@pytest.mark.prefect
def test_ingest_flow_builds_the_sample_snapshot(tmp_path):
    env = dict(os.environ,
               PREFECT_HOME=str(tmp_path / "prefect-home"),
               DO_NOT_TRACK="1",
               PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120",
               PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW="ignore",
               PYTHONPATH=str(REPO))
    env.pop("PREFECT_API_URL", None)
    out = tmp_path / "catalogs" / "sample"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(out)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("MANIFEST "))
    manifest = json.loads(line.removeprefix("MANIFEST "))
    assert manifest["counts"]["products"] == 527 and manifest["counts"]["reviews"] == 430
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert (out / "products.parquet").is_file() and (out / "reviews.parquet").is_file()
