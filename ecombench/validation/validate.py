"""Re-checking an existing split against a catalog snapshot: every build check, on records already written.

`ecombench validate` runs this on any tasks.jsonl (ours or an EComAgentBench release) and
writes what it finds; the input is never modified (tau2-bench's habit of re-grading old runs
against fixed tasks). No rule lives here: each check is the build's own function (schema,
`task_problems`, `check_leakage`, `check_sources`, `check_answer_set`, `failing_rubrics`);
this module only decides what each one runs on and turns its findings into report rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ecombench.answers.index import CatalogIndex
from ecombench.catalog.details import split_options
from ecombench.catalog.type_vocabulary import TypeVocabulary
from ecombench.lemmas import states_cue
from ecombench.rubrics import as_rubrics, kind_of
from ecombench.rubrics.checkers import failing_rubrics
from ecombench.schemas import schema_errors, validator
from ecombench.schemas.findings import STAGE_NAMES, Finding
from ecombench.stages.phrasing import phrasing_of
from ecombench.stages.rubrics import rubric_lock
from ecombench.tables.cues import cue_options, load_cues
from ecombench.tables.fields import DETAIL_PREFIX, FieldTable
from ecombench.tables.intents import load_intents
from ecombench.validation.leakage import check_leakage
from ecombench.validation.semantic import intent_problems, semantic_findings, task_problems

FORMATS = ("auto", "ecombench", "ecomagentbench")

# What an EComAgentBench record (reference §14) lacks, and what validate does about it.
LACKS = {
    "rubric_lock": "no rubric_lock: computed from the rubrics as found, so rubric_lock_mismatch cannot be checked",
    "answer_set": "no answer_set: computed from the catalog, so answer_set_differs cannot be checked",
    "difficulty": "no difficulty metrics (only difficulty_metrics.implicit_count): not checked",
    "provenance": "no provenance (catalog fingerprint, config hash, seed): not checked",
    "content_id": "ids are counters, not derived from (intent, target, rubric lock): id derivation not checked",
    "source_review_ids": "review_opinion rubrics carry no source_review_ids: not checked",
}

# Optional keys of the release format and the value the release documents for a missing one (§8, §11:
# the fixed sentence asking for more specific features, and 10 turns from its config).
RELEASE_DEFAULTS = {
    "default_response": "Could you ask about more specific features or specs you'd like to know?",
    "max_clarification_turns": 10,
}

# The release's persona keys (reference §8.2, PERSONA_FIELD_MAPPING): a persona rubric on the raw field sits under
# this key of product_requirements; an unmapped field under its name lower-cased with "_" for spaces, a
# negative_attribute under avoid_preferences (a list), a price bound under budget.
RELEASE_PERSONA_KEYS = {
    "Brand": "brand_preference", "Color": "color_preference", "Material": "material_need",
    "Style": "style_preference", "Size": "size_preference", "Skin Type": "skin_type", "Hair Type": "hair_type",
    "Item Form": "form_preference", "Scent": "scent_preference", "Finish Type": "finish_preference",
    "Form Factor": "form_factor_preference", "Shell Type": "case_type_preference",
    "Compatible Devices": "device_compatibility", "Compatible Phone Models": "phone_model_compatibility",
    "Operating System": "os_preference", "RAM": "ram_requirement", "Hard Drive": "storage_preference",
    "Processor": "processor_preference", "Wireless Type": "wireless_preference",
    "Memory Storage Capacity": "storage_capacity_preference", "Lens Type": "lens_preference",
    "Water Resistance Level": "water_resistance_need", "Power Source": "power_source_preference", "price": "budget",
}

# The release's own noise rule (reference §8.2, SAFE_NOISE_FIELDS): these 16 paths, any value (an LLM writes them).
RELEASE_NOISE_FIELDS = frozenset({
    "demographics.gender", "demographics.age_range", "demographics.location", "demographics.occupation",
    "demographics.education_level", "lifestyle.hobbies", "lifestyle.daily_routine", "lifestyle.fitness_level",
    "lifestyle.dietary_preference", "lifestyle.commute_method", "lifestyle.pets", "shopping_habits.payment_method",
    "shopping_habits.shopping_frequency", "shopping_habits.preferred_device", "shopping_habits.preferred_platform",
    "shopping_habits.return_frequency",
})

# Task keys whose schema errors the warn above already covers (the id pattern is the content-derived form).
SCHEMA_KEY_OF_LACK = {"difficulty": "difficulty", "provenance": "provenance", "content_id": "id"}


def finding_row(finding: Finding, task_id: str | None, line: int) -> dict[str, Any]:
    """One findings.jsonl row: where (task id, line), which check (stage, reason), how bad, what and why."""
    return {"task_id": task_id, "line": line, "stage": finding.stage, "stage_name": STAGE_NAMES[finding.stage],
            "reason": finding.reason, "severity": finding.severity, "message": finding.message,
            "evidence": finding.evidence}


def parse_task_lines(text: str) -> tuple[list[Any], list[int], list[dict[str, Any]]]:
    """Split a JSONL text into records, their 1-based line numbers and malformed_record rows.

    Blank lines are skipped; a line that is not JSON, or JSON that is not an object, becomes a
    finding and reading goes on.
    """
    records, lines, bad = [], [], []
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as exc:
            bad.append(finding_row(Finding("malformed_record",
                                           f"line {n} is not JSON ({exc.msg} at column {exc.colno})",
                                           {"line": n, "excerpt": raw[:200]}), None, n))
            continue
        if not isinstance(rec, dict):
            bad.append(finding_row(Finding("malformed_record", f"line {n} is a JSON {type(rec).__name__}, not a task "
                                           "object", {"line": n, "excerpt": raw[:200]}), None, n))
            continue
        records.append(rec)
        lines.append(n)
    return records, lines, bad


def detect_format(record: dict[str, Any]) -> str:
    """"ecomagentbench" for a record shaped as the reference release (§14), else "ecombench"."""
    target = record.get("target_product")
    if "intent_category" in record or (isinstance(target, dict) and "product_id" in target):
        return "ecomagentbench"
    return "ecombench"


def _schema_keys(definition: str) -> list[str]:
    return list(validator("task").schema["$defs"][definition]["properties"])


def _canonical_field(name: str, table: FieldTable) -> str:
    if name.startswith(DETAIL_PREFIX):
        return DETAIL_PREFIX + table.canonical_key(name[len(DETAIL_PREFIX):])
    return name


def from_ecomagentbench(record: dict[str, Any], table: FieldTable) -> tuple[dict[str, Any], list[str]]:
    """An EComAgentBench release record (§14) in our task shape, and the keys of LACKS it lacks.

    intent_category -> intent, target_product.product_id -> parent_asin, `details.<raw key>`
    rubric fields and target details canonicalised through the field table's aliases, a slot's
    field taken from its first linked rubric, keys our schema does not know dropped
    (query_surface, hidden_info, revealed, ...). A missing rubric_lock is computed here; a
    missing answer set and difficulty are left None for the caller, who has the catalog.

    Raises:
        KeyError / TypeError / AttributeError: the record lacks a key both formats need.
    """
    lacking = ["content_id"]
    rubric_keys = _schema_keys("Rubric")
    rubrics = []
    for r in record["rubrics"]:
        out = {k: r[k] for k in rubric_keys if k in r} | {"field": _canonical_field(r["field"], table)}
        if r.get("type") == "review_opinion" and "source_review_ids" not in r:
            out["source_review_ids"] = None
            if "source_review_ids" not in lacking:
                lacking.append("source_review_ids")
        rubrics.append(out)
    field_of = {r["id"]: r["field"] for r in rubrics}
    slots = []
    script = record.get("clarification_script") or {}
    for s in script.get("clarification_slots") or []:
        linked = list(s["linked_rubric_ids"])
        field_name = (_canonical_field(s["field"], table) if "field" in s
                      else field_of.get(linked[0], "") if linked else "")
        slots.append({"slot_id": s["slot_id"], "linked_rubric_ids": linked, "field": field_name,
                      "trigger_keywords": s["trigger_keywords"], "user_response": s["user_response"]})
    tp = record["target_product"]
    details: dict[str, list[str]] = {}
    for key, value in (tp.get("details") or {}).items():
        values = value if isinstance(value, list) else [value]
        details.setdefault(table.canonical_key(key), []).extend(str(v) for v in values)
    target = {"parent_asin": tp["product_id"] if "product_id" in tp else tp["parent_asin"]}
    # Only keys the record has: one it lacks (facts, which the release never had) is not a null of the record's.
    target |= {k: tp[k] for k in _schema_keys("TargetProduct") if k not in ("parent_asin", "details") and k in tp}
    target["details"] = details
    target["facts"] = tp.get("facts") or {}  # a release record carries no product facts (the catalog has them)
    persona = {k: v for k, v in record["user_persona"].items() if k in _schema_keys("Persona")}
    persona["product_requirements"] = _release_requirements(record["rubrics"], rubrics,
                                                            persona.get("product_requirements"), table)
    task: dict[str, Any] = {
        "id": record["id"],
        "intent": record["intent_category"] if "intent_category" in record else record["intent"],
        "user_query": record["user_query"],
        "user_persona": persona,
        "clarification_script": {"clarification_slots": slots, **{
            key: script[key] if key in script else default for key, default in RELEASE_DEFAULTS.items()}},
        "target_product": target,
        "rubrics": rubrics,
        "rubric_lock": record.get("rubric_lock") or rubric_lock(rubrics),
        "implicit_rubric_ids": list(record.get("implicit_rubric_ids") or []),
        "answer_set": record.get("answer_set"),
        "difficulty": record.get("difficulty"),
    }
    if "provenance" in record:
        task["provenance"] = record["provenance"]
    lacking += [k for k in ("rubric_lock", "answer_set", "difficulty", "provenance") if not record.get(k)]
    lacking += [k for k in RELEASE_DEFAULTS if k not in script]
    return task, lacking


def release_persona_key(raw_field: str, rubric_type: str) -> str:
    """The key under which the release keeps a persona rubric of `raw_field` (its name as the release writes it).

    Example:
        >>> release_persona_key("details.Color", "attribute_match"), release_persona_key("details.Ink Color", "x")
        ('color_preference', 'ink_color')
    """
    if rubric_type == "negative_attribute":
        return "avoid_preferences"
    name = raw_field.removeprefix(DETAIL_PREFIX)
    return RELEASE_PERSONA_KEYS.get(name, name.lower().replace(" ", "_"))


def _release_requirements(raw_rubrics: list[dict[str, Any]], rubrics: list[dict[str, Any]], found: Any,
                          table: FieldTable) -> Any:
    """The release's product_requirements under our persona keys, wherever the release's entry says the same.

    Each persona rubric's entry is looked up under the release's key (`release_persona_key`); when it holds the
    rubric's value (or, for a list, every excluded value) it moves to our key with our form of the value, so
    `persona_missing_requirement` judges what the record says, not how the release names its keys. An entry
    that is missing or says something else stays as found and is reported as the defect it is.
    """
    if not isinstance(found, dict):
        return found
    out = dict(found)
    for raw, rubric in zip(raw_rubrics, rubrics):
        if rubric.get("info_source") != "persona":
            continue
        key = release_persona_key(str(raw.get("field", "")), str(raw.get("type", "")))
        if key not in out:
            continue
        value, want = out[key], raw.get("expected_value")
        same = (value == want or (isinstance(want, list) and isinstance(value, list) and set(map(str, want)) <= set(
            map(str, value))) or (isinstance(want, str) and isinstance(value, str)
                                  and value.strip().casefold() == want.strip().casefold()))
        if not same:
            continue
        try:
            ours, our_value = phrasing_of(as_rubrics([rubric])[0]).persona_entry(as_rubrics([rubric])[0], table)
        except (KeyError, ValueError, TypeError):
            continue  # a field outside the table or a malformed rubric: reported by the checks themselves
        if key == "avoid_preferences" and isinstance(value, list) and len(value) > len(want or []):
            out[key] = [v for v in value if v not in (want or [])]  # other negative rubrics' values stay
        else:
            del out[key]
        out[ours] = our_value
    return out


def _implicit_cues(task: dict[str, Any], table: FieldTable) -> tuple[dict[str, str], list[Finding]]:
    """{rubric id: cue clause} for the task's implicit rubrics, from cues.toml and the intent's cue kind.

    The build picks a cue the same way (pipeline/candidate.py); an implicit rubric whose value has
    no cue of that kind could not have been built: no_implicit_cue.
    """
    intent = load_intents().get(task["intent"])
    if intent is None:  # the schema check reports the unknown intent
        return {}, []
    cue_table = load_cues(table)
    by_id = {r["id"]: r for r in task["rubrics"]}
    product_type = next((r["expected_value"] for r in task["rubrics"] if r["type"] == "entity_match"), None)
    cues, findings = {}, []
    for rid in task["implicit_rubric_ids"]:
        r = by_id.get(rid)
        if r is None:  # task_problems reports an implicit id naming no rubric
            continue
        options = cue_options(cue_table, intent.cue_kind, r["field"], r["expected_value"], product_type, table)
        # the build drew one of the cue's phrasings: the one the query states, else the first (then reported)
        cue = next((c for c in options if states_cue(task["user_query"], c)), options[0] if options else None)
        if cue is None:
            findings.append(Finding("no_implicit_cue",
                                    f"implicit rubric {rid} ({r['field']} = {r['expected_value']!r}) "
                                    f"has no {intent.cue_kind} cue in cues.toml",
                                    {"rubric_id": rid, "field": r["field"]}))
        else:
            cues[rid] = cue
    return cues, findings


def _target_findings(task: dict[str, Any], product: dict[str, Any] | None, table: FieldTable,
                     peer: bool = False) -> list[Finding]:
    """Does the target satisfy each of its rubrics? One rubric that cannot be checked never hides the others.

    A rubric on a field outside the field table is checked by exact match against the product's detail
    (canonical or raw key) or top-level value and reported (`field_not_in_table`, warn). For the peer
    format (`peer`), an attribute value written comma-joined ("Android,Ios") that fails whole is split
    with the field's option rules (ecombench.catalog.details.split_options) and holds when every part does
    (`value_split`, warn).
    """
    asin = task["target_product"]["parent_asin"]
    if product is None:
        return [Finding("target_not_in_catalog", f"target {asin} is not in the catalog snapshot", {"target": asin})]
    rubrics, findings = as_rubrics(task["rubrics"]), []
    if "reviews" not in product and any(kind_of(r).needs_reviews for r in rubrics):
        # Unscorable without reviews, which is not a failure of the target.
        findings.append(Finding("check_skipped", "the snapshot has no reviews: review_opinion rubrics of the target "
                                "not checked", {"check": "target_fails_rubric"}, severity="warn"))
        rubrics = [r for r in rubrics if not kind_of(r).needs_reviews]
    failing = []
    for r in rubrics:
        try:
            table.by_rubric_field(r.field)
        except KeyError:
            matched = _exact_match(r.field, r.expected_value, product)
            findings.append(Finding("field_not_in_table", f"rubric {r.id}: field {r.field!r} is not in the field "
                                    f"table; checked by exact match ({'matched' if matched else 'no match'})",
                                    {"rubric_id": r.id, "field": r.field, "matched": matched}, severity="warn"))
            if not matched:
                failing.append({"rubric_id": r.id, "field": r.field, "status": "not_satisfied",
                                "why": f"no {r.field} equal to {r.expected_value!r}"})
            continue
        found = failing_rubrics([r], product, table)
        if found and peer and r.type == "attribute_match" and isinstance(r.expected_value, str) \
                and "," in r.expected_value:
            parts = split_options(table.by_rubric_field(r.field), r.expected_value)
            if len(parts) > 1:
                parts = [p.strip() for p in parts]
                found = failing_rubrics([r.model_copy(update={"expected_value": p}) for p in parts], product, table)
                findings.append(Finding("value_split", f"rubric {r.id}: comma-joined value {r.expected_value!r} "
                                        f"checked as the options {parts}", {"rubric_id": r.id, "options": parts},
                                        severity="warn"))
                for f in found:
                    f["rubric_id"] = r.id
        failing += found
    if failing:
        findings.append(Finding("target_fails_rubric", f"target fails {len(failing)} of its own rubrics",
                                {"failing": failing}))
    return findings


def _exact_match(field: str, value: Any, product: dict[str, Any]) -> bool:
    """A rubric on a field the table does not know, checked by exact match.

    The product's detail of that key (canonical or raw) or its top-level field equals the value
    (stripped, case-sensitive: no alias or option rule applies).
    """
    key = field.removeprefix(DETAIL_PREFIX)
    want = str(value).strip()
    details = product.get("details") or []
    if any((d.get("key") == key or d.get("raw_key") == key) and str(d.get("value", "")).strip() == want
           for d in details):
        return True
    return key in product and str(product[key]).strip() == want


def _guarded(name: str, check: Callable[[], list[Finding]]) -> list[Finding]:
    """Run one check; a record too broken for it (already reported by the schema check) gives a warn, not a crash."""
    try:
        return check()
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        return [Finding("check_skipped", f"{name} could not run on this record ({type(exc).__name__}: {exc})",
                        {"check": name}, severity="warn")]


def validate_task(record: dict[str, Any], table: FieldTable, index: CatalogIndex,
                  catalog_products_by_id: dict[str, dict[str, Any]], max_answer_set: int,
                  record_format: str = "auto", type_vocabulary: TypeVocabulary | None = None
                  ) -> tuple[str | None, list[Finding]]:
    """Every finding for one record: (its task id, findings). See `validate_tasks`."""
    fmt = detect_format(record) if record_format == "auto" else record_format
    lacking: list[str] = []
    if fmt == "ecomagentbench":
        try:
            task, lacking = from_ecomagentbench(record, table)
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            return record.get("id"), [Finding("malformed_record", f"not a readable EComAgentBench record "
                                              f"({type(exc).__name__}: {exc})", {"format": fmt})]
    else:
        task = record
    findings = [Finding("key_defaulted", f"no {k}: the release format's default {RELEASE_DEFAULTS[k]!r} used",
                        {"lacks": k, "default": RELEASE_DEFAULTS[k], "format": fmt}, severity="warn")
                if k in RELEASE_DEFAULTS else
                Finding("check_skipped", LACKS[k], {"lacks": k, "format": fmt}, severity="warn") for k in lacking]
    if "answer_set" in lacking:
        def fill() -> list[Finding]:
            task["answer_set"] = index.answer_set(task["rubrics"])
            return []
        findings += _guarded("answer set", fill)
        if task["answer_set"] is None:  # could not compute: the target alone, so the other checks still run
            task["answer_set"] = [task["target_product"]["parent_asin"]]
    if "difficulty" in lacking:  # only what task_problems reads; the schema check skips the rest
        task["difficulty"] = {"answer_set_size": len(task["answer_set"])}
    skip = [SCHEMA_KEY_OF_LACK[k] for k in lacking if k in SCHEMA_KEY_OF_LACK]
    if "answer_set" in lacking:
        skip.append("answer_set")  # computed here: an empty one restates target_fails_rubric, reported below
    if fmt == "ecomagentbench":  # the release's noise fields are judged by its own rule (the leakage checks),
        # and its user ids are its own ("U_" and five digits)
        skip += [f"user_persona.{key}" for key in ("demographics", "lifestyle", "shopping_habits", "user_id")]
    errors = [e for e in schema_errors("task", task)
              if not any(e.startswith(f"$.{k}") or e == f"$: '{k}' is a required property" for k in skip)]
    if errors:
        findings.append(Finding("schema_invalid", f"breaks schemas/task.schema.json: {errors[0]}",
                                {"errors": errors[:20]}))

    def invariants() -> list[Finding]:
        problems = task_problems(task, table)
        if "content_id" in lacking:  # the first invariant is the content-derived id, which the format lacks
            problems = [p for p in problems if not p.startswith(f"id {task['id']} ")]
        if "answer_set" in lacking:  # a computed answer set without the target restates target_fails_rubric
            problems = [p for p in problems if not p.startswith("answer set lacks the target")]
        return [Finding("task_invariant_broken", p, {"problem": p}) for p in problems]

    def semantics() -> list[Finding]:  # stage 7's code checks, the build's own function
        cues, missing = _implicit_cues(task, table)
        answers, out = semantic_findings(task, table, index, cues, max_answer_set, type_vocabulary)
        if "answer_set" not in lacking and answers != task["answer_set"]:
            out.append(Finding("answer_set_differs", f"the catalog gives an answer set of {len(answers)}, the task "
                               f"records {len(task['answer_set'])}",
                               {"recorded": task["answer_set"][:20], "computed": answers[:20],
                                "added": sorted(set(answers) - set(task["answer_set"]))[:20],
                                "missing": sorted(set(task["answer_set"]) - set(answers))[:20]}))
        out = [f for f in out if not (f.reason == "answer_set_missing_target" and "answer_set" in lacking)
               and not (f.reason == "rubric_lock_mismatch" and "rubric_lock" in lacking)]
        return missing + out

    def leakage() -> list[Finding]:  # stage 6, as the build runs it
        found = check_leakage(task, table)
        if fmt == "ecomagentbench":  # the release's noise rule is its own: a path of RELEASE_NOISE_FIELDS, any value
            found = [f for f in found if not (f.reason == "persona_noise_not_whitelisted"
                                              and (f.evidence or {}).get("field") in RELEASE_NOISE_FIELDS)]
        return found

    def intent() -> list[Finding]:
        spec = load_intents().get(task["intent"])
        if spec is None:
            return []  # the schema check reports an unknown intent
        return [Finding("intent_requirement_unmet", f"{task['intent']} needs {p}", {"missing": p})
                for p in intent_problems(task["rubrics"], spec)]

    findings += _guarded("task invariants", invariants)
    findings += _guarded("intent requirements", intent)
    findings += _guarded("leakage checks", leakage)
    findings += _guarded("semantic checks", semantics)
    findings += _guarded("target rubrics", lambda: _target_findings(
        task, catalog_products_by_id.get(task["target_product"]["parent_asin"]), table, peer=fmt == "ecomagentbench"))
    task_id = task.get("id") if isinstance(task.get("id"), str) else None
    return task_id, findings


def validate_tasks(records: list[dict[str, Any]], table: FieldTable, index: CatalogIndex,
                   catalog_products_by_id: dict[str, dict[str, Any]], max_answer_set: int, *,
                   record_format: str = "auto", line_numbers: list[int] | None = None,
                   type_vocabulary: TypeVocabulary | None = None) -> list[dict[str, Any]]:
    """Re-run every build check on existing task records; the records are not modified.

    Args:
        records: task records (our format or EComAgentBench's, see `record_format`).
        table: the field table.
        index: the catalog's CatalogIndex (built with reviews when tasks have review_opinion rubrics).
        catalog_products_by_id: parent_asin -> products.parquet row, for (at least) every target;
            a row carries "reviews" when its reviews were loaded.
        max_answer_set: the answer-set bound (the build's `max_answer_set`).
        record_format: "auto" (per record), "ecombench" or "ecomagentbench".
        line_numbers: each record's line in its file (default: 1, 2, ...), for the report.
        type_vocabulary: the catalog's product-type vocabulary (ecombench.validation.catalog_stats
            .catalog_type_vocabulary); None: the reviewed override's words alone.

    Returns:
        findings.jsonl rows in record order: {task_id, line, stage, stage_name, reason, severity,
        message, evidence}. Severity "error" marks a task the build would have rejected (or a
        broken file); "warn" a check that could not run.

    Example:
        >>> rows = validate_tasks(tasks, table, index, products, 5)
        >>> [r["reason"] for r in rows if r["severity"] == "error"]
        []
    """
    if record_format not in FORMATS:
        raise ValueError(f"unknown record format {record_format!r}; use one of {FORMATS}")
    lines = line_numbers or list(range(1, len(records) + 1))
    rows: list[dict[str, Any]] = []
    first_line: dict[str, int] = {}
    for record, line in zip(records, lines):
        task_id, findings = validate_task(json.loads(json.dumps(record)), table, index, catalog_products_by_id,
                                          max_answer_set, record_format, type_vocabulary)
        if task_id is not None:
            seen = first_line.setdefault(task_id, line)
            if seen != line:
                findings.insert(0, Finding("duplicate_task_id", f"task id {task_id} already used on line {seen}",
                                           {"task_id": task_id, "lines": [seen, line]}))
        rows += [finding_row(f, task_id, line) for f in findings]
    return rows
