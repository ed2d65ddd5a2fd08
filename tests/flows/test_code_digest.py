"""The batch-resume key's code digest (flows.build.code_digest) covers every module a batch runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_project_module_a_batch_imports_is_in_the_code_digest():
    # A fresh interpreter imports what a batch runs (the candidate pipeline and the partitioned path) and lists
    # the project's own modules it loaded; each must lie under one of CODE_DIRS, or editing it would let a
    # resumed build reuse batch results of the old code.
    script = ("import sys; import flows.build, pipeline.candidate, pipeline.batched; "
              "print('\\n'.join(sorted({m.__file__ for m in list(sys.modules.values()) "
              "if getattr(m, '__file__', None)})))")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    ours = [Path(f).resolve() for f in out.stdout.split() if Path(f).resolve().is_relative_to(REPO)]
    ours = [p for p in ours if ".venv" not in p.parts]
    from flows.build import CODE_DIRS

    outside = sorted(str(p.relative_to(REPO)) for p in ours if p.relative_to(REPO).parts[0] not in CODE_DIRS)
    assert len(ours) > 20
    assert outside == []
