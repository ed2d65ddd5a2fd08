"""The batch-resume key's code digest (ecombench.pipeline.build.code_digest) covers every module a batch runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ecombench.hashing import PACKAGE_DIR, source_digest, source_files


def test_every_package_module_a_batch_imports_is_in_the_code_digest():
    # A fresh interpreter imports what a batch runs (the candidate pipeline and the partitioned path) and lists
    # the package's own modules it loaded; each must be among the digest's files, or editing it would let a
    # resumed build reuse batch results of the old code.
    script = ("import sys; import ecombench.pipeline.build; "
              "print('\\n'.join(sorted({m.__file__ for m in list(sys.modules.values()) "
              "if getattr(m, '__file__', None)})))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = {Path(f).resolve() for f in out.stdout.split() if Path(f).resolve().is_relative_to(PACKAGE_DIR)}
    hashed = set(source_files("ecombench.pipeline.build"))
    assert len(loaded) > 40
    assert sorted(str(p.relative_to(PACKAGE_DIR)) for p in loaded - hashed) == []
    assert PACKAGE_DIR / "tables" / "fields.toml" in hashed  # the data tables beside a module count too


def test_a_module_imported_only_inside_a_function_is_in_the_digest():
    # ecombench.pipeline.expectations_job imports the expectation suite inside the worker's functions, lazily
    assert PACKAGE_DIR / "validation" / "expectations.py" in source_files("ecombench.pipeline.expectations_job")
    assert PACKAGE_DIR / "catalog" / "records.py" in source_files("ecombench.pipeline.expectations_job")


def test_a_name_that_is_no_module_is_refused():
    with pytest.raises(ValueError, match="ecombench.nowhere is not a module"):
        source_digest("ecombench.nowhere")
