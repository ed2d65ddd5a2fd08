"""Typed rejection evidence: one shape per reason code, and the record forms rejections are published in.

The stages and validators build `evidence` as whatever dict suits the finding, so its keys and
types differ by reason (and one key, `features`, meant a list of fields in one reason and a count
in another). Table readers need one type per column: polars stops at "failed to determine
supertype of struct[9] and struct[9]", and keys it first meets after its 100-row inference window
are dropped without a word. So, at publishing time, `shape_rejection` rewrites a rejection's
evidence into the one evidence struct every row carries:

- every key of `FIELD_TYPES` is present in every row (None where the reason does not use it), so a
  reader infers the full struct from the first row;
- each key has one type across all reasons; a value of free form (a persona value, a dict of counts)
  is JSON text in a string key;
- a key a reason does not declare goes, as JSON text, into `extra`, so nothing is lost when the code
  that builds evidence changes (a test asserts a real build leaves `extra` empty).

`REASON_FIELDS` says which keys each reason sets; `evidence_schema(reason)` is its JSON Schema
(schemas/evidence/<reason>.schema.json, written by `python -m ecombench.schemas.generate`).
`flat_rejection` is the flat view (rejections_flat.jsonl): the reason's own evidence as one JSON
text column.
"""

from __future__ import annotations

import json
from typing import Any

# A type is "string" | "integer" | "number" | "boolean" | "text" (a string; any other value as JSON
# text) | "json" (always JSON text) | ["list", type] | {"field": type, ...} (a struct, every field
# present, None when absent).
FAILING = {"rubric_id": "string", "field": "string", "type": "string", "info_source": "string",
           "status": "string", "why": "text", "by": "string"}
FIELD_TYPES: dict[str, Any] = {
    # which rubric / field / value / text a finding is about (stages 6-7)
    "rubric_id": "string", "field": "string", "value": "text", "text": "text", "span": ["list", "integer"],
    "rule": "string", "noise_field": "string", "noise_value": "text",
    "rubric_ids": ["list", "string"], "persona_key": "string", "found": "text", "extra_keys": ["list", "string"],
    "age_range": "string", "cue": "text", "surface": "text", "expected": "string",
    # clarification slots
    "slot_id": "string", "slot_ids": ["list", "string"], "trigger_keywords": ["list", "string"],
    "user_response": "text", "keyword": "string", "question": "text", "opened": ["list", "string"],
    # review opinions (stage 2)
    "phrase": "text", "review_ids": ["list", "string"], "unknown": ["list", "string"], "shown": ["list", "string"],
    # features and the three-source split (stages 2-3)
    "features": ["list", "string"], "dropped": "json", "price": "number", "reviews": "integer",
    "feature_count": "integer", "needed": "integer", "persona_allowed": "integer",
    "clarification_allowed": "integer", "pinned_to_query": "integer", "entangled": ["list", "string"],
    "fields": ["list", "string"],
    # rubrics (stage 4)
    "failing": ["list", FAILING], "missing": ["list", "string"], "rubric_types": ["list", "string"],
    "query_answer_set_size": "integer", "min_query_answer_set": "integer", "query_fields": ["list", "string"],
    "hidden_fields": ["list", "string"], "left_out_fields": ["list", "string"], "examples": ["list", "string"],
    # every hidden source needed, exclusions that bite, the product type (stages 2 and 4)
    "without_persona_answer_set_size": "integer", "without_clarification_answer_set_size": "integer",
    "min_hidden_answer_set": "integer", "persona_fields": ["list", "string"],
    "clarification_fields": ["list", "string"], "excluded": ["list", "string"], "title": "text",
    "product_type": "string",
    "weak_sources": ["list", "string"], "min_hidden_division": "integer", "persona_ablation_ratio": "number",
    "clarification_ablation_ratio": "number",
    # answer sets (stage 7)
    "target": "string", "answer_set_size": "integer", "bound": "integer",
    # LLM calls (stages 2, 5, 7) and the judge
    "failures": ["list", "text"], "raw": "text", "errors": ["list", "text"], "refusal": "text",
    "llm_reason": "string", "named": ["list", "string"], "issues": ["list", "text"],
    "unsupported": ["list", {"rubric_id": "string", "reason": "text"}], "passed": "boolean",
    # the construction check's oracle (pipeline/agent_check.py)
    "task_id": "string", "predicted_product_id": "string", "tool_calls": "integer",
    "unrevealed": ["list", "string"], "calls_by_tool": "json",
    # every reason: the other findings of the last attempt, the reasons of earlier attempts, undeclared keys
    "other_findings": ["list", {"reason": "string", "message": "text"}],
    "earlier_attempts": ["list", {"attempt": "integer", "stage": "integer", "reason": "string"}],
    "extra": "json",
}
COMMON = ("other_findings", "earlier_attempts", "extra")

_LLM = ("failures", "raw", "errors", "refusal")
_SPLIT = ("feature_count", "needed", "persona_allowed", "clarification_allowed", "pinned_to_query", "entangled",
          "fields")
# The keys each reason sets (besides COMMON). Where the code that builds the evidence names a key
# differently, RENAMES maps it.
REASON_FIELDS: dict[str, tuple[str, ...]] = {
    "not_enough_eligible_products": (),
    "too_few_features": ("features", "dropped"),
    "no_price": ("price", "reviews"),
    "no_reviews": ("price", "reviews"),
    "opinion_unknown_review": ("phrase", "review_ids", "unknown", "shown"),
    "opinion_unsupported": ("phrase", "review_ids", "text"),
    "partition_infeasible": _SPLIT,
    "query_not_searchable": _SPLIT,
    "target_fails_rubric": ("failing",),
    "intent_requirement_unmet": ("missing", "rubric_types"),
    "query_pins_target": ("query_answer_set_size", "min_query_answer_set", "query_fields", "hidden_fields",
                          "left_out_fields", "examples"),
    "llm_error": _LLM, "llm_invalid_output": _LLM, "llm_refusal": _LLM,
    "schema_invalid": ("errors",),
    "no_implicit_cue": ("query_fields",),
    "persona_not_needed": ("without_persona_answer_set_size", "min_hidden_answer_set", "persona_fields"),
    "clarification_not_needed": ("without_clarification_answer_set_size", "min_hidden_answer_set",
                                 "clarification_fields"),
    "hidden_source_too_weak": ("weak_sources", "answer_set_size", "min_hidden_division",
                               "without_persona_answer_set_size", "without_clarification_answer_set_size",
                               "persona_ablation_ratio", "clarification_ablation_ratio", "persona_fields",
                               "clarification_fields"),
    "exclusion_excludes_nothing": ("field", "excluded"),
    "no_product_type": ("title",),
    "young_wearer_rare_for_type": ("field", "value", "product_type"),
    "query_without_product_type": ("query_fields",),
    "query_names_other_product_type": ("rubric_id", "value", "expected", "text"),
    "hidden_value_in_query": ("rubric_id", "field", "value", "text", "span"),
    "implicit_value_in_query": ("rubric_id", "field", "value", "text", "span"),
    "persona_noise_leak": ("rubric_id", "field", "value", "text"),
    "persona_noise_not_whitelisted": ("field", "value", "age_range"),
    "slot_incomplete": ("slot_id", "rubric_ids", "trigger_keywords", "user_response"),
    "slot_unreachable": ("slot_id", "question", "opened"),
    "slot_collision": ("keyword", "slot_ids", "slot_id", "question", "opened"),
    "query_missing_requirement": ("rubric_id", "field", "value", "text"),
    "implicit_cue_missing": ("rubric_id", "cue", "text"),
    "persona_missing_requirement": ("rubric_id", "field", "persona_key", "value", "found", "extra_keys"),
    "persona_incoherent": ("rule", "rubric_id", "field", "value", "noise_field", "noise_value"),
    "clarification_not_revealed": ("rubric_id", "field", "slot_ids"),
    "rubric_lock_mismatch": ("expected", "found"),
    "answer_set_missing_target": ("target", "answer_set_size"),
    "answer_set_too_large": ("answer_set_size", "bound", "examples"),
    "query_surface_missing": ("rubric_id", "field"),
    "query_surface_unanchored": ("rubric_id", "surface", "text"),
    "query_surface_mismatch": ("rubric_id", "surface", "field", "value"),
    "judge_rejected": ("issues", "unsupported", "passed"),
    "judge_unscored": ("llm_reason", "missing", "unknown", "named", *_LLM),
    "oracle_failed": ("task_id", "predicted_product_id", "tool_calls", "unrevealed", "failing", "calls_by_tool"),
}
RENAMES: dict[str, dict[str, str]] = {
    # stages/split.py counts features under "features"; too_few_features lists them under that name.
    "partition_infeasible": {"features": "feature_count"},
    "query_not_searchable": {"features": "feature_count"},
}


class _Misfit(ValueError):
    """A value that does not fit its key's type (it goes to `extra`)."""


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def coerce(value: Any, kind: Any) -> Any:
    """`value` in the form of type `kind` (see FIELD_TYPES); None stays None.

    Raises:
        _Misfit: the value cannot take that form without losing information.
    """
    if value is None:
        return None
    if kind == "json":
        return _json_text(value)
    if kind == "text":
        return value if isinstance(value, str) else _json_text(value)
    if kind == "string":
        if isinstance(value, str):
            return value
        raise _Misfit(value)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        raise _Misfit(value)
    if kind == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise _Misfit(value)
    if kind == "number":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise _Misfit(value)
    if isinstance(kind, list):
        if not isinstance(value, (list, tuple)):
            raise _Misfit(value)
        return [coerce(v, kind[1]) for v in value]
    if isinstance(kind, dict):
        if not isinstance(value, dict) or set(value) - set(kind):
            raise _Misfit(value)
        return {k: coerce(value.get(k), t) for k, t in kind.items()}
    raise TypeError(f"unknown evidence type {kind!r}")


def shape_evidence(reason: str, evidence: dict[str, Any]) -> dict[str, Any]:
    """The evidence of a rejection with `reason` in that reason's one shape (module docstring).

    Args:
        reason: the rejection's reason code (an undeclared reason keeps only the common keys).
        evidence: the evidence as the stages built it (not modified).

    Returns:
        The reason's keys, then the common ones, in FIELD_TYPES order: values typed, None when
        absent, empty lists for no other findings or earlier attempts; keys the reason does not
        declare (or values that do not fit their type) as JSON text in `extra` (else None).
    """
    own = set(REASON_FIELDS.get(reason, ())) | set(COMMON)
    renames = RENAMES.get(reason, {})
    out: dict[str, Any] = {k: None for k in FIELD_TYPES if k in own}
    extra: dict[str, Any] = {}
    for key, value in evidence.items():
        name = renames.get(key, key)
        if name not in own or name == "extra":
            extra[key] = value
            continue
        try:
            out[name] = coerce(value, FIELD_TYPES[name])
        except _Misfit:
            extra[key] = value
    for key in ("other_findings", "earlier_attempts"):
        if out[key] is None:
            out[key] = []
    out["extra"] = _json_text(extra) if extra else None
    return out


def shape_rejection(rejection: dict[str, Any]) -> dict[str, Any]:
    """A rejection record with its evidence shaped by `shape_evidence` (a new dict; the input is not modified)."""
    return {**rejection, "evidence": shape_evidence(rejection["reason"], rejection.get("evidence") or {})}


COLUMNS = ("candidate_id", "intent", "parent_asin", "stage", "stage_name", "reason", "message", "attempt")


def flat_rejection(rejection: dict[str, Any]) -> dict[str, Any]:
    """A shaped rejection as a rejections.jsonl row: scalar columns, `evidence` as JSON text."""
    # Keys in the shape's order (the reason's keys first); free-form values inside are already sorted text.
    return {**{k: rejection[k] for k in COLUMNS},
            "evidence": json.dumps(rejection["evidence"], ensure_ascii=False)}


def unflatten_rejection(row: dict[str, Any]) -> dict[str, Any]:
    """A rejections.jsonl row with `evidence` decoded (a row of an older split, evidence an object, passes as is)."""
    evidence = row.get("evidence")
    return {**row, "evidence": json.loads(evidence)} if isinstance(evidence, str) else row


# ---- JSON Schema and Hugging Face features of the same types -----------------------------------------

def _json_schema(kind: Any, nullable: bool = True) -> dict[str, Any]:
    if isinstance(kind, list):
        schema: dict[str, Any] = {"type": "array", "items": _json_schema(kind[1])}
    elif isinstance(kind, dict):
        schema = {"type": "object", "additionalProperties": False, "required": list(kind),
                  "properties": {k: _json_schema(t) for k, t in kind.items()}}
    else:
        schema = {"type": {"text": "string", "json": "string"}.get(kind, kind)}
        if kind == "json":
            schema["contentMediaType"] = "application/json"
    if nullable:
        schema["type"] = [schema["type"], "null"]
    return schema


def evidence_schema(reason: str) -> dict[str, Any]:
    """JSON Schema (Draft 2020-12) of the shaped evidence of `reason` (`shape_evidence`)."""
    own = [k for k in FIELD_TYPES if k in REASON_FIELDS[reason] or k in COMMON]
    props = {k: _json_schema(FIELD_TYPES[k], nullable=k not in ("other_findings", "earlier_attempts")) for k in own}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://ecombench.dev/schemas/evidence/{reason}.schema.json",
            "title": f"Evidence of {reason}",
            "description": f"Evidence of a rejection with reason {reason} (schemas/evidence.py): every key present, "
                           "null when the finding did not give it; keys the reason does not declare are kept as "
                           "JSON text in `extra`. In rejections.jsonl this object is the JSON text of `evidence`.",
            "type": "object", "additionalProperties": False, "required": own, "properties": props}


_HF_DTYPES = {"string": "string", "text": "string", "json": "string", "integer": "int64", "number": "float64",
              "boolean": "bool"}
_COLUMN_TYPES = {"stage": "integer", "attempt": "integer"}


def _hf_feature(name: str, kind: Any) -> dict[str, Any]:
    if isinstance(kind, list):
        inner = kind[1]
        if isinstance(inner, dict):
            return {"name": name, "list": [_hf_feature(k, t) for k, t in inner.items()]}
        return {"name": name, "list": _HF_DTYPES[inner]}
    if isinstance(kind, dict):
        return {"name": name, "struct": [_hf_feature(k, t) for k, t in kind.items()]}
    return {"name": name, "dtype": _HF_DTYPES[kind]}


def rejection_features() -> list[dict[str, Any]]:
    """Hugging Face `features` (dataset card YAML form) of rejections.parquet (typed evidence)."""
    return ([_hf_feature(c, _COLUMN_TYPES.get(c, "string")) for c in COLUMNS]
            + [{"name": "evidence", "struct": [_hf_feature(k, t) for k, t in FIELD_TYPES.items()]}])


def flat_rejection_features() -> list[dict[str, Any]]:
    """Hugging Face `features` of rejections.jsonl (evidence as JSON text)."""
    return [_hf_feature(c, _COLUMN_TYPES.get(c, "string")) for c in [*COLUMNS, "evidence"]]


def _arrow_type(kind: Any) -> Any:
    # deferred: pyarrow and polars load only when rejections are written or read
    import pyarrow as pa

    if isinstance(kind, list):
        return pa.list_(_arrow_type(kind[1]))
    if isinstance(kind, dict):
        return pa.struct([(k, _arrow_type(t)) for k, t in kind.items()])
    return {"string": pa.string(), "text": pa.string(), "json": pa.string(), "integer": pa.int64(),
            "number": pa.float64(), "boolean": pa.bool_()}[kind]


def rejections_schema() -> Any:
    """The pyarrow schema of rejections.parquet."""
    # deferred: pyarrow and polars load only when rejections are written or read
    import pyarrow as pa

    return pa.schema([(c, _arrow_type(_COLUMN_TYPES.get(c, "string"))) for c in COLUMNS]
                     + [("evidence", _arrow_type(FIELD_TYPES))])


def rejections_parquet(rejections: list[dict[str, Any]]) -> bytes:
    """Shaped rejections as Parquet bytes: evidence a struct of every FIELD_TYPES key (null where unused).

    The same rows give the same bytes (no timestamps in the file).
    """
    # deferred: pyarrow and polars load only when rejections are written or read
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{**{k: r[k] for k in COLUMNS}, "evidence": {**dict.fromkeys(FIELD_TYPES), **r["evidence"]}}
            for r in rejections]
    table = pa.Table.from_pylist(rows, schema=rejections_schema())
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


def _polars_type(kind: Any) -> Any:
    # deferred: pyarrow and polars load only when rejections are written or read
    import polars as pl

    if isinstance(kind, list):
        return pl.List(_polars_type(kind[1]))
    if isinstance(kind, dict):
        return pl.Struct({k: _polars_type(t) for k, t in kind.items()})
    return {"string": pl.String, "text": pl.String, "json": pl.String, "integer": pl.Int64, "number": pl.Float64,
            "boolean": pl.Boolean}[kind]


def polars_dtype(reason: str) -> Any:
    """The polars Struct of `reason`'s evidence, for `pl.col("evidence").str.json_decode(polars_dtype(reason))`."""
    own = REASON_FIELDS.get(reason, ())
    return _polars_type({k: t for k, t in FIELD_TYPES.items() if k in own or k in COMMON})
