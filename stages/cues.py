"""Implicit cues (cues.toml): clauses that state a requirement without naming its value."""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from stages.errors import SettingError
from stages.fields import FieldTable
from stages.text import keywords, normalize

CUE_TABLE = Path(__file__).with_name("cues.toml")
CUE_KINDS = ("knowledge", "scenario")


@lru_cache(maxsize=8)
def load_cues(table: FieldTable, path: str | None = None) -> dict[tuple[str, str], dict[str, str]]:
    """{(canonical field, normalised value): {"knowledge": clause, "scenario": clause}}.

    Raises:
        SettingError: a row names a field missing from the field table, has no cue, or a cue
            shares a content word with its value or any spelling of it (it would give the
            value away); the message names the file and the row.
    """
    src = Path(path) if path else CUE_TABLE
    rows = tomllib.loads(src.read_text(encoding="utf-8")).get("cue", [])
    out: dict[tuple[str, str], dict[str, str]] = {}
    for i, row in enumerate(rows, 1):
        field, value = row.get("field"), row.get("value")
        where = f"{src}: cue {i} ({field!r} = {value!r})"
        if field not in table.fields or not value:
            raise SettingError(f"{where}: unknown field or empty value")
        cues = {k: row[k] for k in CUE_KINDS if row.get(k)}
        if not cues:
            raise SettingError(f"{where}: needs a knowledge or scenario clause")
        banned = set().union(*(keywords(s) for s in table.spellings(value)))
        for kind, clause in cues.items():
            shared = keywords(clause) & banned
            if shared:
                raise SettingError(f"{where}: {kind} cue shares {sorted(shared)} with the value")
        out[(field, normalize(value))] = cues
    return out
