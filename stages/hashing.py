"""Canonical JSON, sha256 digests and seeded random generators: the one place determinism comes from.

Every random choice in ecombench draws from `rng(...)`, seeded by sha256 of named parts
(run seed, stage, intent, parent_asin, attempt) — never Python's salted `hash()` nor the global
`random` state (reference §15.1–2 shows what those cost).
"""

from __future__ import annotations

import hashlib
import json
import random
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
