"""The fault drill of benchmarks/fault_drill.py in its quick form: every row passes (real sample data).

The cases that start Prefect servers or extra builds (unreachable API, concurrent builds, signals, a lost
server, kill -9 leftovers, empty split, disk full) run in the full drill; some have their own tests
(test_concurrent_builds.py, test_prefect_logs.py, test_server_watch.py, tests/test_io.py).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_quick_drill_case_passes(tmp_path):
    spec = importlib.util.spec_from_file_location("fault_drill", REPO / "benchmarks" / "fault_drill.py")
    drill = importlib.util.module_from_spec(spec)
    sys.modules["fault_drill"] = drill  # dataclasses look their module up there
    spec.loader.exec_module(drill)
    rows = drill.Drill(tmp_path, quick=True).run()
    assert len(rows) == 13
    assert all(r.passed for r in rows), drill.table(rows)
