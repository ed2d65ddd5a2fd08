"""Regenerate the JSON Schema files in schemas/ from the pydantic models: `python -m ecombench.schemas.generate`.

The test suite checks that the files on disk equal what this produces, so the two never drift.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ecombench.schemas.evidence import REASON_FIELDS, evidence_schema
from ecombench.schemas.models import (
    ClarificationScript,
    Persona,
    Rejection,
    Rubric,
    SplitManifest,
    Task,
    value_type_by_rubric_type,
)

SCHEMA_DIR = Path(__file__).parent
DRAFT = "https://json-schema.org/draft/2020-12/schema"

MODELS: dict[str, type[BaseModel]] = {
    "task": Task,
    "rubric": Rubric,
    "persona": Persona,
    "clarification_script": ClarificationScript,
    "rejection": Rejection,
    "split_manifest": SplitManifest,
}


def render(name: str) -> str:
    """JSON text of the schema for artifact `name` (a key of MODELS)."""
    schema: dict[str, Any] = {"$schema": DRAFT, "$id": f"https://ecombench.dev/schemas/{name}.schema.json"}
    schema.update(MODELS[name].model_json_schema())
    rubric = schema if name == "rubric" else schema.get("$defs", {}).get("Rubric")
    if rubric is not None:
        value_type_by_rubric_type(rubric)
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_evidence(reason: str) -> str:
    """JSON text of schemas/evidence/<reason>.schema.json (schemas/evidence.py)."""
    return json.dumps(evidence_schema(reason), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> None:
    """Write every model's schema to schemas/<name>.schema.json."""
    for name in MODELS:
        (SCHEMA_DIR / f"{name}.schema.json").write_text(render(name), encoding="utf-8")
        print(f"wrote schemas/{name}.schema.json")
    (SCHEMA_DIR / "evidence").mkdir(exist_ok=True)
    for reason in REASON_FIELDS:
        (SCHEMA_DIR / "evidence" / f"{reason}.schema.json").write_text(render_evidence(reason), encoding="utf-8")
    print(f"wrote schemas/evidence/<reason>.schema.json for {len(REASON_FIELDS)} reasons")


if __name__ == "__main__":
    main()
