"""Canonical JSON, sha256 digests and seeded random generators: the one place determinism comes from.

Every random choice in ecombench draws from `rng(...)`, seeded by sha256 of named parts
(run seed, stage, intent, parent_asin, attempt) — never Python's salted `hash()` nor the global
`random` state (reference §15.1–2 shows what those cost).
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import threading
from functools import cache
from pathlib import Path
from typing import Any


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys, no spaces and real Unicode: equal data gives equal text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(data: str | bytes) -> str:
    """Hex sha256 of text (UTF-8) or bytes."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def digest(*parts: object) -> str:
    """Hex sha256 of named parts, joined unambiguously (each part as canonical JSON)."""
    return sha256_hex(canonical_json([str(p) if not isinstance(p, (int, float, str)) else p for p in parts]))


def seed_int(*parts: object) -> int:
    """A 64-bit seed from sha256 of named parts."""
    return int(digest(*parts)[:16], 16)


def rng(*parts: object) -> random.Random:
    """A private `random.Random` seeded from sha256 of named parts.

    For example `rng(seed, "split", intent, asin, attempt)`.
    """
    return random.Random(seed_int(*parts))


PACKAGE_DIR = Path(__file__).resolve().parent
_DATA_SUFFIXES = (".toml", ".json", ".txt", ".md")
_DIGEST_LOCK = threading.Lock()


def _module_file(module: str) -> Path | None:
    rel = Path(*module.split(".")[1:])
    for candidate in (PACKAGE_DIR / rel / "__init__.py", (PACKAGE_DIR / rel).with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imported_modules(path: Path, module: str) -> set[str]:
    """The ecombench modules `path` imports (at any depth of the file), relative imports resolved."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        found.update(n for n in names if n == "ecombench" or n.startswith("ecombench."))
    return found


def source_files(*modules: str) -> tuple[Path, ...]:
    """The files `source_digest` hashes, sorted.

    The sources of `modules`, every ecombench module they import at any depth (transitively, imports inside
    functions included), their parent packages, and the data files (.toml, .json, .txt, .md) beside each.

    Raises:
        ValueError: a name is not a module of this package.
    """
    with _DIGEST_LOCK:  # ast.parse is not safe to run from several threads at once in CPython 3.11
        return _source_files(modules)


@cache
def _source_files(modules: tuple[str, ...]) -> tuple[Path, ...]:
    seen: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:
            if name in modules:
                raise ValueError(f"{name} is not a module of the ecombench package")
            continue  # a name imported from a module ("from ecombench.text import normalize")
        seen[name] = path
        parents = {name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)}  # their __init__ runs first
        todo.extend((_imported_modules(path, name) | parents) - seen.keys())
    files = set(seen.values())
    for folder in {p.parent for p in seen.values()}:
        files.update(p for p in folder.iterdir() if p.suffix in _DATA_SUFFIXES and p.is_file())
    return tuple(sorted(files))


@cache
def source_digest(*modules: str) -> str:
    """sha256 over `source_files(*modules)`, each with its path in the package.

    A cache keyed by it (finished batches, the expectations worker, catalog statistics, the sandbox index) is never
    reused by other code; the files follow the imports, so no list of folders can go stale.

    Args:
        modules: dotted module names ("ecombench.pipeline.candidate").

    Raises:
        ValueError: a name is not a module of this package.
    """
    h = hashlib.sha256()
    for p in source_files(*modules):
        h.update(p.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()
