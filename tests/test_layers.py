"""The package's import rules that import-linter does not check: imports inside functions are deliberate."""

from __future__ import annotations

import ast
from pathlib import Path

from ecombench.hashing import PACKAGE_DIR


def _function_imports(path: Path) -> list[tuple[int, str]]:
    """(line, source line) of every import statement inside a function of `path`."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = {}
    for fn in ast.walk(ast.parse(text)):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found[node.lineno] = lines[node.lineno - 1]
    return sorted(found.items())


def _says_deferred(lines: list[str], lineno: int) -> bool:
    """The import's line, or the comment lines above its group of imports, say "deferred"."""
    if "deferred" in lines[lineno - 1]:
        return True
    i = lineno - 2
    while i >= 0 and lines[i].strip().startswith(("from ", "import ")):
        i -= 1  # the other imports of the same group
    while i >= 0 and lines[i].strip().startswith("#"):
        if "deferred" in lines[i]:
            return True
        i -= 1
    return False


def test_every_import_inside_a_function_says_why_it_is_deferred():
    unexplained = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for lineno, line in _function_imports(path):
            if not _says_deferred(lines, lineno):
                unexplained.append(f"{path.relative_to(PACKAGE_DIR)}:{lineno}: {line.strip()}")
    assert len(unexplained) == 0, "\n".join(unexplained)


def test_the_check_reads_a_comment_above_a_group_of_imports(tmp_path):
    lines = ["def f():", "    # deferred: polars is heavy", "    import polars", "    import pyarrow", "    import os"]
    assert all(_says_deferred(lines, n) for n in (3, 4, 5))
    assert not _says_deferred(["def f():", "    x = 1", "    import os"], 3)
