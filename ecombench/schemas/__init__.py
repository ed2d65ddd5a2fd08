"""Data contracts: JSON Schema (Draft 2020-12) files for every artifact, and the pydantic models they mirror.

`validator(name)` returns one reusable jsonschema validator per schema (building one per record
is ~25x slower, stack-notes §4); `validate_record` raises with every problem listed.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA_DIR = Path(__file__).parent


class SchemaError(ValueError):
    """A record does not match its JSON Schema; the message lists every violation with its path."""


@cache
def validator(name: str) -> Draft202012Validator:
    """The validator for `schemas/<name>.schema.json`, built once and reused.

    Raises:
        FileNotFoundError: no such schema file.
    """
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_errors(name: str, record: Any) -> list[str]:
    """Every violation of schema `name` by `record`, as "<json path>: <message>" strings."""
    return [f"{e.json_path}: {e.message}" for e in validator(name).iter_errors(record)]


def validate_record(name: str, record: Any) -> None:
    """Check `record` against schema `name`.

    Raises:
        SchemaError: listing every violation.
    """
    errors = schema_errors(name, record)
    if errors:
        raise SchemaError(f"{name} record does not match schemas/{name}.schema.json: " + "; ".join(errors[:10]))
