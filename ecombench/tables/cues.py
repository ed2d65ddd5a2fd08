"""Implicit cues (cues.toml): clauses that state a requirement without naming its value."""

from __future__ import annotations

import random
import tomllib
from functools import lru_cache
from pathlib import Path

from ecombench.errors import SettingError
from ecombench.tables.fields import FieldTable
from ecombench.text import keywords, normalize, tokens

CUE_TABLE = Path(__file__).with_name("cues.toml")
CUE_KINDS = ("knowledge", "scenario")


@lru_cache(maxsize=8)
def load_cues(table: FieldTable, path: str | None = None) -> dict[tuple[str, str], dict[str, tuple[str, ...]]]:
    """{(canonical field, normalised value): {"knowledge": clauses, "scenario": clauses}}.

    A row's cue is one clause or a list of several phrasings of the same hint; the first is the cue's
    canonical phrasing (template-v1 and `cue_for` without a generator say it), the others let template-v2
    queries vary (`cue_options`).

    Raises:
        SettingError: a row names a field missing from the field table, has no cue, or a cue
            shares a content word with its value or any spelling of it (it would give the
            value away); the message names the file and the row.
    """
    src = Path(path) if path else CUE_TABLE
    rows = tomllib.loads(src.read_text(encoding="utf-8")).get("cue", [])
    out: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}
    for i, row in enumerate(rows, 1):
        field, value = row.get("field"), row.get("value")
        where = f"{src}: cue {i} ({field!r} = {value!r})"
        if field not in table.fields or not value:
            raise SettingError(f"{where}: unknown field or empty value")
        cues = {k: (row[k],) if isinstance(row[k], str) else tuple(row[k]) for k in CUE_KINDS if row.get(k)}
        if not cues:
            raise SettingError(f"{where}: needs a knowledge or scenario clause")
        banned = set().union(*(keywords(s) for s in table.spellings(value)))
        for kind, clauses in cues.items():
            for clause in clauses:
                shared = keywords(clause) & banned
                if shared:
                    raise SettingError(f"{where}: {kind} cue {clause!r} shares {sorted(shared)} with the value")
        out[(field, normalize(value))] = cues
    return out


def cue_options(cues: dict[tuple[str, str], dict[str, tuple[str, ...]]], cue_kind: str | None, field: str,
                value: object, product_type: str | None = None, table: FieldTable | None = None) -> tuple[str, ...]:
    """Every phrasing of the clause of kind `cue_kind` that states (field, value) and suits the product; () if none.

    Args: as `cue_for`.
    """
    if not cue_kind or not isinstance(value, str):
        return ()
    key = (field.removeprefix("details."), normalize(value))
    if table is not None and not cue_suits(key, product_type, table):
        return ()
    return cues.get(key, {}).get(cue_kind, ())


def cue_for(cues: dict[tuple[str, str], dict[str, tuple[str, ...]]], cue_kind: str | None, field: str, value: object,
            product_type: str | None = None, table: FieldTable | None = None,
            rng: random.Random | None = None) -> str | None:
    """The clause of kind `cue_kind` that states (field, value) without naming it and suits the product, or None.

    The one lookup the build (stage 3 choosing implicit fields, stage 5 writing them) and
    `ecombench validate` share.

    Args:
        cues: `load_cues(table)`.
        cue_kind: the intent's cue kind ("knowledge", "scenario"), None when it has no implicit requirement.
        field: a rubric field ("details.Material"); the prefix is dropped.
        value: the expected value; only strings have cues.
        product_type: the task's product type; a cue whose row lists `product_types` suits only those
            (`cue_suits`). Checked when `table` is given.
        table: the field table the cue table was loaded with.
        rng: a seeded generator drawing one of the row's phrasings; None says the first.
    """
    options = cue_options(cues, cue_kind, field, value, product_type, table)
    if not options:
        return None
    return rng.choice(options) if rng is not None else options[0]


@lru_cache(maxsize=8)
def load_cue_types(table: FieldTable, path: str | None = None) -> dict[tuple[str, str], frozenset[str]]:
    """{(canonical field, normalised value): product nouns the cue suits} for rows with `product_types`.

    A row without `product_types` states a property any product can have (Bluetooth, an occasion) and
    suits every type. Nouns are compared singular (ecombench.text.tokens), with the last word of a
    product type: "Wireless Headphones" suits a row listing "headphone".
    """
    src = Path(path) if path else CUE_TABLE
    rows = tomllib.loads(src.read_text(encoding="utf-8")).get("cue", [])
    return {(row["field"], normalize(row["value"])): frozenset(t for w in row["product_types"] for t in tokens(w))
            for row in rows if row.get("product_types")}


def cue_suits(key: tuple[str, str], product_type: str | None, table: FieldTable, path: str | None = None) -> bool:
    """Whether the cue of (field, normalised value) fits a product of `product_type` (see `load_cue_types`).

    A restricted cue never fits a product without a type.
    """
    types = load_cue_types(table, path).get(key)
    if types is None:
        return True
    words = tokens(product_type or "")
    return bool(words) and words[-1] in types
