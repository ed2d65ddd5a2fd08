"""One candidate through stages 2-7, as plain Python (the build flow maps it over batches).

A candidate is (intent, target product). Each attempt re-draws features, the split and the
text from a generator seeded by sha256(seed, "candidate", intent, parent_asin, attempt); the
first attempt that passes every check becomes the task. A candidate that never passes becomes
one rejection carrying its last attempt's findings and the reasons of earlier attempts.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.settings import CODE_VERSION, LLM_PARTS, BuildConfig
from schemas import schema_errors
from stages.cues import cue_suits
from stages.features import detail_values, extract_features
from stages.fields import FieldTable
from stages.hashing import digest, rng
from stages.text import normalize
from stages.vouchers import MIN_PRICE
from stages.intents import IntentSpec
from stages.rubrics import build_rubrics, feature_rubric, rubric_lock
from stages.split import PartitionInfeasible, SplitGoals, entangled_fields, select_features, split_features
from stages.llm import LLMClient, LLMError
from stages.verbalise import write_clarification, write_persona, write_query
from stages.verbalise_llm import VERBALISER_ID as LLM_VERBALISER_ID
from stages.verbalise_llm import write_clarification_llm, write_opinions_llm, write_persona_llm, write_query_llm
from validation.answer_set import CatalogIndex
from validation.checkers import failing_rubrics
from validation.findings import STAGE_NAMES, Finding
from validation.judge import judge_task
from validation.leakage import check_leakage, check_slots
from validation.opinions import check_opinions
from validation.semantic import (answer_set_masks, biting_exclusions, check_answer_set, check_sources,
                                 hidden_source_answer_sets, hidden_source_findings, intent_problems)

VERBALISER_ID = "template-v1"
# Outcomes another draw cannot change: they end a candidate at once.
# An opinion reply does not depend on the attempt (same prompt, cached reply), and a judge that could
# not score after its retries would only be called again.
NO_RETRY = frozenset({"too_few_features", "no_product_type", "no_price", "no_reviews", "target_fails_rubric",
                      "llm_error", "opinion_unknown_review", "opinion_unsupported", "judge_unscored"})


# difficulty.query_answer_set_size is counted up to this many products: grading every product a broad
# query leaves in a million-product catalog costs seconds per candidate and says no more (issue #6).
QUERY_ANSWER_SET_CAP = 100

@dataclass(frozen=True)
class BuildContext:
    """What every candidate of a build shares (read-only)."""

    config: BuildConfig
    table: FieldTable
    intents: dict[str, IntentSpec]
    index: CatalogIndex | None  # None only in the planning process of a Dask build (workers hold it)
    catalog_fingerprint: str
    config_hash: str
    vocabulary: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    reviews: dict[str, list[dict[str, Any]]] | None = None  # candidates' reviews, when an intent needs them
    cues: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    llm: LLMClient | None = None  # set when config.verbaliser == "llm"
    artifacts: Path = Path("artifacts")  # root of the caches: batch completion files, LLM replies


@dataclass
class CandidateResult:
    """A task or a rejection, plus counters merged into the manifest (stage funnel, per attempt)."""

    task: dict[str, Any] | None = None
    rejection: dict[str, Any] | None = None
    stats: Counter = field(default_factory=Counter)
    resumed: bool = False  # loaded from a finished batch of an earlier, interrupted run


def _target_record(product: dict[str, Any], rubrics: list[dict[str, Any]], table: FieldTable) -> dict[str, Any]:
    details = {}
    for r in rubrics:
        if r["field"].startswith("details."):
            spec = table.by_rubric_field(r["field"])
            details[spec.name] = detail_values(product, spec)
    keep = ("parent_asin", "title", "main_category", "store", "average_rating", "rating_number", "price")
    return {k: product.get(k) for k in keep} | {"details": details}


def _attempt(product: dict[str, Any], intent: IntentSpec, ctx: BuildContext, attempt: int,
             stats: Counter) -> tuple[dict[str, Any] | None, list[Finding], int]:
    """One attempt. Returns (task, [], 7) on success, else (None, findings, failing stage)."""
    asin = product["parent_asin"]
    gen = rng(ctx.config.seed, "candidate", intent.name, asin, attempt)
    writes = ctx.config.llm_writes() if ctx.llm is not None else frozenset()
    opinions = None
    if "opinions" in writes and intent.review_opinions:
        try:
            cited, shown = write_opinions_llm(ctx.llm, product, intent.review_opinions)
        except LLMError as exc:
            return None, [Finding(exc.reason, f"review opinions: {exc}", exc.evidence)], 2
        opinions, problems = check_opinions(cited, shown, product.get("reviews") or [], intent.review_opinions)
        if problems:
            return None, problems, 2
    rejected_values: dict[str, dict[str, str]] = {}  # [issue #12] values a shopper would not state
    features, dropped = extract_features(product, intent, ctx.table, gen, vocabulary=ctx.vocabulary,
                                         reviews=product.get("reviews"), opinions=opinions,
                                         value_support=_value_support(ctx),
                                         min_value_support=ctx.config.min_value_support,
                                         rejected_values=rejected_values)
    if attempt == 0:  # [issue #12] counted once per candidate: report.md's rejected values by field
        stats.update(f"value_rejected|{f}|{why}" for f, bad in rejected_values.items() for why in bad.values())
    sc = ctx.config.partition.model_copy(update=intent.split_overrides())
    need = sc.min_query + sc.min_persona + sc.min_clarification
    for key, reason in (("budget", "no_price"), ("review", "no_reviews")):
        if dropped.get(key) == reason:
            what = (f"price a voucher can apply to (${MIN_PRICE:g} or more)" if key == "budget"
                    else f"{intent.review_opinions} distinct opinions in its positive reviews")
            return None, [Finding(reason, f"target has no {what}", {"price": product.get("price"),
                                                                      "reviews": len(product.get("reviews") or [])})], 2
    if not any(f.kind == "entity" for f in features):  # [issue #12] every query names its product type
        return None, [Finding("no_product_type", "the title's head names no product type and no category of the "
                              "product confirms one", {"title": product.get("title")})], 2
    if len(features) < need:
        return None, [Finding("too_few_features", f"{len(features)} usable features, {need} needed",
                              {"features": [f.field for f in features], "dropped": dropped})], 2
    stats["stage2_passed"] += 1
    selected = select_features(features, intent, gen)
    tangled = entangled_fields(selected)  # a value repeated elsewhere in the query cannot stay implicit
    ptype = next((f.value for f in features if f.kind == "entity"), None)  # [issue #12] cues fit the product type
    cueable = sorted(f.field for f in selected
                     if f.kind == "detail" and f.field not in tangled and _cue(ctx, intent, f.field, f.value, ptype))
    # [issue #12] up to max_implicit implicit requirements where cues allow (at least intent.implicit)
    implicit_fields = frozenset(gen.sample(cueable, min(max(intent.implicit, intent.max_implicit), len(cueable))))
    # Support of each feature the split may hide: how many catalog products satisfy it alone.
    support = {f.field: ctx.index.support(feature_rubric(f)) for f in selected
               if "persona" in f.sources or "clarification" in f.sources}
    # [issue #12, quality] The split searches placements by their answer sets (each hidden source needed).
    floor = ctx.config.min_query_answer_set if intent.min_query_answer_set is None else intent.min_query_answer_set
    within = [feature_rubric(f) for f in selected if f.kind == "entity" or f.field in intent.query_fields]
    masks, universe = answer_set_masks([feature_rubric(f) for f in selected], within, ctx.index, asin)
    hidden_floor = (ctx.config.min_hidden_answer_set if intent.min_hidden_answer_set is None
                    else intent.min_hidden_answer_set)
    plan = SplitGoals(masks=masks, universe=universe, min_query=floor, min_hidden=hidden_floor,
                      max_total=ctx.config.max_answer_set)
    try:
        assignment = split_features(selected, intent, sc, gen, keep_in_query=implicit_fields, support=support,
                                    plan=plan)
    except PartitionInfeasible as exc:
        return None, [Finding(exc.reason, str(exc), exc.evidence)], 3
    stats["stage3_passed"] += 1
    rubrics = build_rubrics(assignment, ctx.table)
    # [issue #12, quality] Exclusions that bite: a negative rubric excludes values that products the task's
    # other rubrics leave do carry (its own such values first, else others of the field among those products).
    # Two negatives exclude among each other's survivors, so a second pass checks the first against the second's
    # new values; what still does not bite after it is rejected.
    for final in (False, False, True):
        for f in [f for f in assignment.query + assignment.persona + assignment.clarification if f.kind == "negative"]:
            rid = next(r["id"] for r in rubrics if r["field"] == f.field and r["type"] == "negative_attribute")
            values = biting_exclusions(rubrics, rid, ctx.index, product, min_support=ctx.config.min_value_support)
            if not values or (final and values != list(f.value)):
                return None, [Finding("exclusion_excludes_nothing", f"no product the other rubrics leave has another "
                                      f"{f.field} than the target's: excluding {f.value} rules out nothing",
                                      {"field": f.field, "excluded": list(f.value)})], 4
            if values != list(f.value):
                assignment.replace(f, dataclasses.replace(f, value=values))
                rubrics = build_rubrics(assignment, ctx.table)
    # [end issue #12 call site]
    unmet = intent_problems(rubrics, intent)
    if unmet:
        return None, [Finding("intent_requirement_unmet", f"{intent.name} needs {', '.join(unmet)}",
                              {"missing": unmet, "rubric_types": [r["type"] for r in rubrics]})], 4
    failing = failing_rubrics(rubrics, product, ctx.table)
    if failing:
        return None, [Finding("target_fails_rubric", f"target fails {len(failing)} of its own rubrics",
                              {"failing": failing})], 4
    # Checked before any text is written (no verbaliser call is spent on it): a query that already pins
    # the target makes the persona and clarification confirm rather than narrow (issue #7). Such a query
    # first sheds its most selective optional requirements, down to the split's minimum and ratio share;
    # one still too narrow is rejected (query_pins_target) and retried with another draw.
    floor = ctx.config.min_query_answer_set if intent.min_query_answer_set is None else intent.min_query_answer_set
    query_only = ctx.index.answer_set([r for r in rubrics if r["info_source"] == "query"], limit=QUERY_ANSWER_SET_CAP)
    left_out = []
    while len(query_only) < floor and (dropped := assignment.leave_out_most_selective(sc)) is not None:
        left_out.append(dropped.field)
        rubrics = build_rubrics(assignment, ctx.table)
        query_only = ctx.index.answer_set([r for r in rubrics if r["info_source"] == "query"],
                                          limit=QUERY_ANSWER_SET_CAP)
    query_rubrics = [r for r in rubrics if r["info_source"] == "query"]
    if len(query_only) < floor:
        return None, [Finding("query_pins_target", f"the query's own rubrics leave {len(query_only)} catalog "
                              f"product(s), fewer than min_query_answer_set={floor}",
                              {"query_answer_set_size": len(query_only), "min_query_answer_set": floor,
                               "query_fields": [r["field"] for r in query_rubrics],
                               "hidden_fields": [r["field"] for r in rubrics if r["info_source"] != "query"],
                               "left_out_fields": left_out,
                               "examples": query_only[:10]})], 4
    # [issue #12, quality] Every hidden source necessary: the rubrics without the persona's and without the
    # clarification's must each leave min_hidden_answer_set products. A plan that fails first sheds the query's
    # most selective optional requirements (as above), else is rejected and re-split by the next attempt.
    hidden = hidden_source_answer_sets(rubrics, ctx.index)
    while (min(hidden.values()) < hidden_floor
           and (dropped := assignment.leave_out_most_selective(sc)) is not None):
        left_out.append(dropped.field)
        rubrics = build_rubrics(assignment, ctx.table)
        hidden = hidden_source_answer_sets(rubrics, ctx.index)
        query_only = ctx.index.answer_set([r for r in rubrics if r["info_source"] == "query"],
                                          limit=QUERY_ANSWER_SET_CAP)
    findings = hidden_source_findings(hidden, hidden_floor, rubrics)
    if findings:
        return None, findings, 4
    # [end issue #12 call site]
    lock = rubric_lock(rubrics)
    stats["stage4_passed"] += 1
    cues = {r["id"]: _cue(ctx, intent, r["field"], r["expected_value"], ptype) for r in rubrics
            if r["info_source"] == "query" and r["field"] in implicit_fields}
    if len(cues) < intent.implicit:
        return None, [Finding("no_implicit_cue", f"{intent.name} needs {intent.implicit} implicit requirement(s); "
                              f"cues.toml has a {intent.cue_kind} cue for {len(cues)} of this target's query values",
                              {"query_fields": [r["field"] for r in rubrics if r["info_source"] == "query"]})], 5
    user_id = "u_" + digest(ctx.config.seed, "persona", intent.name, asin, attempt)[:10]
    turns = ctx.config.max_clarification_turns
    try:
        query, surfaces = (write_query_llm(ctx.llm, rubrics, ctx.table, cues) if "query" in writes
                           else (write_query(rubrics, ctx.table, gen, cues), None))
        persona = (write_persona_llm(ctx.llm, rubrics, ctx.table, user_id) if "persona" in writes
                   else write_persona(rubrics, ctx.table, gen, user_id))
        script = (write_clarification_llm(ctx.llm, rubrics, ctx.table, turns) if "slots" in writes
                  else write_clarification(rubrics, ctx.table, turns))
    except LLMError as exc:
        return None, [Finding(exc.reason, str(exc), exc.evidence)], 5
    if "slots" in writes:
        # Stage 6's slot checks run before the task schema here: the schema would report a model's short
        # keyword list as schema_invalid, hiding which slot and why.
        findings = [f for f in check_slots(script, rubrics, ctx.table) if f.severity == "error"]
        if findings:
            stats["stage5_passed"] += 1
            return None, findings, 6
    task: dict[str, Any] = {
        "id": f"{intent.name}-{digest(intent.name, asin, lock)[:12]}",
        "intent": intent.name,
        "user_query": query,
        "user_persona": persona,
        "clarification_script": script,
        "target_product": _target_record(product, rubrics, ctx.table),
        "rubrics": rubrics,
        "rubric_lock": lock,
        "implicit_rubric_ids": sorted(cues, key=lambda rid: int(rid[1:])),
    }
    if surfaces is not None:
        task["query_surfaces"] = surfaces
    problems = schema_errors("task", task | {"answer_set": [asin], "difficulty": _difficulty(task, 1, 1),
                                             "provenance": _provenance(ctx, attempt)})
    if problems:
        return None, [Finding("schema_invalid", f"verbalised task breaks the task schema: {problems[0]}",
                              {"errors": problems[:10]})], 5
    stats["stage5_passed"] += 1
    findings = [f for f in check_leakage(task, ctx.table) if f.severity == "error"]
    if findings:
        return None, findings, 6
    stats["stage6_passed"] += 1
    findings = check_sources(task, ctx.table, cues)
    answers, answer_findings = check_answer_set(rubrics, asin, ctx.index, ctx.config.max_answer_set)
    findings = [f for f in findings + answer_findings if f.severity == "error"]
    if not findings and ctx.config.judge and ctx.llm is not None:
        findings = judge_task(ctx.llm, task, product.get("reviews"))
    if findings:
        return None, findings, 7
    stats["stage7_passed"] += 1
    task["answer_set"] = answers
    task["difficulty"] = _difficulty(task, len(answers), len(query_only)) | {  # [issue #12]
        f"{k}_answer_set_size": v for k, v in hidden.items()}
    task["provenance"] = _provenance(ctx, attempt)
    return task, [], 7


def _value_support(ctx: BuildContext):
    """[issue #12] (rubric field, value) -> catalog products carrying it, or None without an index."""
    if ctx.index is None:
        return None
    return lambda field_name, value: ctx.index.support({"type": "attribute_match", "field": field_name,
                                                         "expected_value": value})


def _cue(ctx: BuildContext, intent: IntentSpec, field_name: str, value: Any, product_type: str | None = None
         ) -> str | None:
    """The intent's kind of cue for (field, value), or None; [issue #12] None when the cue's product types
    (cues.toml `product_types`) exclude `product_type`."""
    if not (intent.implicit or intent.max_implicit) or not isinstance(value, str):
        return None
    key = (field_name.removeprefix("details."), normalize(value))
    if not cue_suits(key, product_type, ctx.table):
        return None
    return ctx.cues.get(key, {}).get(intent.cue_kind)


def _difficulty(task: dict[str, Any], answer_set_size: int, query_answer_set_size: int) -> dict[str, int]:
    rubrics = task["rubrics"]
    by_source = Counter(r["info_source"] for r in rubrics)
    return {"n_rubrics": len(rubrics), "n_query": by_source["query"], "n_persona": by_source["persona"],
            "n_clarification": by_source["clarification"], "implicit_count": len(task["implicit_rubric_ids"]),
            "answer_set_size": answer_set_size, "query_answer_set_size": query_answer_set_size}


def _provenance(ctx: BuildContext, attempt: int) -> dict[str, Any]:
    return {"catalog_fingerprint": ctx.catalog_fingerprint, "config_hash": ctx.config_hash,
            "seed": ctx.config.seed, "attempt": attempt, "verbaliser": verbaliser_id(ctx.config),
            "code_version": CODE_VERSION}


def verbaliser_id(config: BuildConfig) -> str:
    """"template-v1", or "llm-v2[query+persona+slots+opinions]:<model>" (the parts the LLM wrote) for the LLM verbaliser."""
    if config.verbaliser == "template":
        return VERBALISER_ID
    return f"{LLM_VERBALISER_ID}[{'+'.join(p for p in LLM_PARTS if p in config.llm_writes())}]:{config.llm_model}"


def build_candidate(product: dict[str, Any], intent_name: str, ctx: BuildContext) -> CandidateResult:
    """Run stages 2-7 for one candidate, retrying up to `config.max_attempts` times.

    Outcomes in NO_RETRY (too few features, no price or reviews, target failing a rubric) do
    not depend on the draw in a way a retry could fix, so they end the candidate at once.

    Args:
        product: a products.parquet row as a dict.
        intent_name: a key of ctx.intents.
        ctx: the shared build context.

    Returns:
        CandidateResult with `task` (schema-valid task record) or `rejection` (schema-valid
        rejection record), and stage counters.
    """
    intent = ctx.intents[intent_name]
    result = CandidateResult()
    result.stats["candidates"] += 1
    earlier: list[dict[str, Any]] = []
    for attempt in range(ctx.config.max_attempts):
        task, findings, stage = _attempt(product, intent, ctx, attempt, result.stats)
        if task is not None:
            result.task = task
            result.stats["accepted"] += 1
            return result
        first = findings[0]
        if attempt + 1 < ctx.config.max_attempts and first.reason not in NO_RETRY:
            earlier.append({"attempt": attempt, "stage": stage, "reason": first.reason})
            continue
        result.rejection = {
            "candidate_id": f"{intent_name}:{product['parent_asin']}",
            "intent": intent_name,
            "parent_asin": product["parent_asin"],
            "stage": stage,
            "stage_name": STAGE_NAMES[stage],
            "reason": first.reason,
            "message": first.message,
            "evidence": {**first.evidence,
                         "other_findings": [{"reason": f.reason, "message": f.message} for f in findings[1:]],
                         "earlier_attempts": earlier},
            "attempt": attempt,
        }
        result.stats["rejected"] += 1
        return result
    raise AssertionError("unreachable: the last attempt always returns")
