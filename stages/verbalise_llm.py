"""Stage 5 with an LLM: the visible query written by a model from the locked rubric plan.

The model sees only the product type and the requirement phrases the template verbaliser would
use (cues instead of values for implicit requirements); it cannot change a rubric, and stages 6
and 7 reject whatever it drops, adds or leaks. Persona background and clarification replies stay
with the templates. The prompt is a versioned file whose sha256 goes into the manifest.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from stages.fields import FieldTable
from stages.hashing import sha256_hex
from stages.llm import LLMClient
from stages.verbalise import negative_phrase, requirement_phrase
from stages.vouchers import describe_budget

PROMPT = Path(__file__).with_name("prompts") / "query.md"
SCHEMA = Path(__file__).resolve().parent.parent / "schemas" / "llm" / "query_plan.schema.json"
VERBALISER_ID = "llm-query-v1"


@lru_cache(maxsize=1)
def prompt_template() -> str:
    return PROMPT.read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def query_schema() -> dict[str, Any]:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


def prompt_sha256() -> dict[str, str]:
    """sha256 of the prompt and reply schema files, for the manifest."""
    return {"query.md": sha256_hex(PROMPT.read_bytes()), "query_plan.schema.json": sha256_hex(SCHEMA.read_bytes())}


def requirement_lines(rubrics: list[dict[str, Any]], table: FieldTable, cues: dict[str, str]) -> list[str]:
    """The query's requirements as the prompt lists them (same phrases as the template verbaliser)."""
    lines = []
    for r in rubrics:
        if r["info_source"] != "query":
            continue
        if r["type"] == "entity_match":
            lines.append(f"- it is {r['expected_value'].lower()}")
            continue
        if r["id"] in cues:
            lines.append(f"- CUE: {cues[r['id']]}")
        elif r["type"] in ("attribute_match", "numeric_range"):
            lines.append(f"- {requirement_phrase(r, table)}")
        elif r["type"] == "negative_attribute":
            lines.append(f"- {negative_phrase(r, table)}")
        elif r["type"] == "budget_match":
            lines.append(f"- {describe_budget(r['expected_value'])}")
        elif r["type"] == "review_opinion":
            lines.append(f'- its reviews should say "{r["expected_value"]}"')
    return lines


def write_query_llm(client: LLMClient, rubrics: list[dict[str, Any]], table: FieldTable,
                    cues: dict[str, str] | None = None) -> str:
    """The visible query, written by the model.

    Raises:
        stages.llm.LLMError: the call failed (llm_error), was refused (llm_refusal) or never
            matched schemas/llm/query_plan.schema.json (llm_invalid_output).
    """
    entity = next((r["expected_value"] for r in rubrics if r["info_source"] == "query" and r["type"] == "entity_match"),
                  "a product")
    text = (prompt_template().replace("{product_type}", entity.replace(">>>", ""))
            .replace("{requirements}", "\n".join(requirement_lines(rubrics, table, cues or {}))))
    reply = client.call_json([{"role": "user", "content": text}], "query_plan", query_schema(), purpose="query")
    return " ".join(reply["user_query"].split())
