"""The LLM writers' and judges' prompts (the .md files here) and reply schemas (ecombench/schemas/llm/).

Their sha256 go into a build's config hash when it calls a model, so a new prompt is a new hash.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from ecombench.hashing import sha256_hex

PROMPTS = Path(__file__).resolve().parent
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas" / "llm"
VERBALISER_ID = "llm-v3"  # v3: enum-narrowed schemas, required phrases, repair quoting checks, attempt notes
# part -> (prompt file, reply schema file); the judges are validation/judge.py's: "judge" is stage 7's,
# "review_judge" the grader's (a review opinion code cannot decide).
PARTS = {"query": ("query.md", "query_plan.schema.json"),
         "persona": ("persona.md", "persona_background.schema.json"),
         "slots": ("slots.md", "clarification_slots.schema.json"),
         "opinions": ("opinions.md", "review_opinions.schema.json"),
         "judge": ("judge.md", "judge_verdict.schema.json"),
         "review_judge": ("review_judge.md", "review_judgement.schema.json")}


@lru_cache(maxsize=8)
def prompt_template(part: str = "query") -> str:
    """The prompt file of a part (ecombench/stages/prompts/<part>.md)."""
    return (PROMPTS / PARTS[part][0]).read_text(encoding="utf-8")


@lru_cache(maxsize=8)
def reply_schema(part: str = "query") -> dict[str, Any]:
    """The JSON Schema a part's reply must match (schemas/llm/)."""
    return json.loads((SCHEMAS / PARTS[part][1]).read_text(encoding="utf-8"))


def query_schema() -> dict[str, Any]:
    """schemas/llm/query_plan.schema.json."""
    return reply_schema("query")


def prompt_sha256(parts: Iterable[str] | None = None) -> dict[str, str]:
    """sha256 of the prompt and reply schema files of `parts` (None: every part), by file name, for a manifest."""
    out = {}
    for prompt, schema in (PARTS[p] for p in (PARTS if parts is None else parts)):
        out[prompt] = sha256_hex((PROMPTS / prompt).read_bytes())
        out[schema] = sha256_hex((SCHEMAS / schema).read_bytes())
    return dict(sorted(out.items()))
