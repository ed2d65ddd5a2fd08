"""The seven stages as one declared list, and one candidate's way through them.

A candidate is (intent, target product). `STAGES` names each stage of DESIGN.md "The seven
stages" in order with the function that runs it; stage 1 (catalog sampling) runs once per build
(`ecombench.stages.sampling.sample_candidates`, called by ecombench.pipeline.build), stages 2-7 once per attempt of a
candidate, over one `CandidateState`. `build_candidate` is the loop: the first attempt whose
stages all pass becomes the task; a candidate that never passes becomes one rejection, built by
`ecombench.schemas.findings.rejection_record` from its last attempt's findings, with the stage its
reason code belongs to.

Each attempt re-draws features, the split and the text, each stage from its own generator seeded
by sha256(seed, stage name, intent, parent_asin, attempt) (`CandidateState.rng`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any, NamedTuple, cast

import polars as pl

from ecombench.answers.index import AnswerSets
from ecombench.answers.partitioned import PartitionedCatalog
from ecombench.catalog.details import detail_values
from ecombench.catalog.facts import CatalogFacts, page_facts
from ecombench.catalog.type_stats import TypeStats
from ecombench.catalog.type_vocabulary import TypeVocabulary
from ecombench.hashing import digest, rng
from ecombench.llm import LLMClient, LLMError
from ecombench.pipeline.config import CODE_VERSION, LLM_PARTS, BuildConfig
from ecombench.rubrics.checkers import failing_rubrics
from ecombench.schemas import schema_errors
from ecombench.schemas.config import SplitConfig
from ecombench.schemas.findings import Finding, rejection_record, rejection_stage
from ecombench.schemas.models import Rubric
from ecombench.stages.features import Feature, extract_features
from ecombench.stages.persona_fit import product_for_whom, young_wearer_fact
from ecombench.stages.prompts import VERBALISER_ID as LLM_VERBALISER_ID
from ecombench.stages.reviews import MIN_OPINION_PRODUCTS
from ecombench.stages.rubrics import build_rubrics, feature_rubric, rubric_lock
from ecombench.stages.split import (
    Assignment,
    PartitionInfeasible,
    SplitGoals,
    entangled_fields,
    select_features,
    split_features,
)
from ecombench.stages.verbalise import write_clarification, write_persona, write_query
from ecombench.stages.verbalise_llm import (
    write_clarification_llm,
    write_opinions_llm,
    write_persona_llm,
    write_query_llm,
)
from ecombench.stages.verbalise_v2 import product_type_rubric, write_query_v2
from ecombench.stages.vouchers import MIN_PRICE
from ecombench.tables.cues import cue_for
from ecombench.tables.fields import FieldTable
from ecombench.tables.intents import IntentSpec
from ecombench.validation.judge import judge_task
from ecombench.validation.leakage import check_leakage, check_slots
from ecombench.validation.opinions import check_opinions
from ecombench.validation.semantic import (
    answer_set_masks,
    biting_exclusions,
    hidden_source_answer_sets,
    hidden_source_findings,
    intent_problems,
    semantic_findings,
)

VERBALISER_ID = "template-v1"
# the second offline verbaliser, the default; BuildConfig stores template-v1 as "template".
VERBALISER_V2_ID = "template-v2"
# Outcomes another draw cannot change: they end a candidate at once.
# An opinion reply does not depend on the attempt (same prompt, cached reply), and a judge that could
# not score after its retries would only be called again.
NO_RETRY = frozenset({"too_few_features", "no_product_type", "no_price", "no_reviews", "target_fails_rubric",
                      "llm_error", "opinion_unknown_review", "opinion_unsupported", "judge_unscored",
                      "query_without_product_type", "young_wearer_rare_for_type"})
# Rejections of the text a model wrote (stages 5-7): an LLM build retries them on the same split.
TEXT_RETRY_REASONS = frozenset({"llm_invalid_output", "llm_refusal", "schema_invalid", "hidden_value_in_query",
                                "implicit_value_in_query", "persona_noise_leak", "persona_noise_not_whitelisted",
                                "slot_incomplete", "slot_unreachable", "slot_collision", "query_missing_requirement",
                                "implicit_cue_missing", "persona_missing_requirement", "clarification_not_revealed",
                                "query_surface_missing", "query_surface_unanchored", "query_surface_mismatch",
                                "judge_rejected", "query_names_other_product_type"})

# difficulty.query_answer_set_size is counted up to this many products: grading every product a broad
# query leaves in a million-product catalog costs seconds per candidate and says no more.
QUERY_ANSWER_SET_CAP = 100


@dataclass(frozen=True)
class BuildContext:
    """What every candidate of a build shares (read-only)."""

    config: BuildConfig
    table: FieldTable
    intents: dict[str, IntentSpec]
    # The catalog-wide questions' answerer: the whole-catalog index, or a batch's `pipeline.batched.BatchingCatalog`
    # (answer_sets "partitioned"); None in the planning process of a Dask build and before a partitioned batch.
    index: AnswerSets | None
    catalog_fingerprint: str
    config_hash: str
    vocabulary: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    # The catalog's product-type vocabulary (stored at ingest, ecombench.validation.catalog_stats); None: the
    # reviewed override's words alone.
    type_vocabulary: TypeVocabulary | None = None
    reviews: dict[str, list[dict[str, Any]]] | None = None  # candidates' reviews, when an intent needs them
    cues: dict[tuple[str, str], dict[str, tuple[str, ...]]] = field(default_factory=dict)
    llm: LLMClient | None = None  # set when config.verbaliser == "llm"
    artifacts: Path = Path("artifacts")  # root of the caches: batch completion files, LLM replies
    answer_engine: PartitionedCatalog | None = None  # answer_sets "partitioned": the partition passes' engine
    # The catalog suite stored at ingest, when the build planned from the snapshot in slices (assemble's data
    # expectations reuse it: that build never holds the whole products table to run the suite on).
    catalog_suite: dict[str, Any] | None = None
    # The catalog's product facts and their vocabulary (ecombench.catalog.facts); candidates carry their own.
    facts: CatalogFacts | None = field(default=None, repr=False)
    # Per product type: how often each field is stated and how its values divide (ecombench.catalog.type_stats).
    type_stats: TypeStats | None = field(default=None, repr=False)
    # (parent_asin, product_type, type_head) of every catalog product (ecombench.catalog.product_type).
    product_types: pl.DataFrame | None = field(default=None, repr=False)
    # The catalog's review opinion phrases, normalised phrase -> products whose reviews state it
    # (ecombench.stages.reviews.learn_opinion_phrases); None when no intent asks for review opinions.
    opinion_phrases: dict[str, int] | None = field(default=None, repr=False)

    @property
    def catalog(self) -> AnswerSets:
        """The answer-set index, or a batch's batching catalog (present wherever stages 2-7 run)."""
        if self.index is None:
            raise RuntimeError("stages 2-7 need the catalog index; this context was loaded without it")
        return self.index


@dataclass
class CandidateState:
    """One attempt of one candidate: what each stage adds, in stage order.

    Stage 2 fills `opinions`, `features`, `product_type`; stage 3 `selected`, `implicit_fields`,
    `assignment`; stage 4 `rubrics`, `query_only`, `hidden` (answer-set sizes without each hidden
    source), `lock`; stage 5 `cues`, `task` (text, no answer set yet);
    stage 7 completes `task` with its answer set, difficulty and provenance.
    """

    product: dict[str, Any]
    intent: IntentSpec
    attempt: int
    seed: int
    stats: Counter
    split_config: SplitConfig
    writes: frozenset[str]
    draw: int | None = None  # the attempt whose draws stages 2-7 take (None: `attempt`); an LLM text retry keeps it
    text_draw: int = 0  # > 0: the verbalisation stage draws anew, the other stages as before (`REPHRASE`)
    opinions: list[dict[str, Any]] | None = None
    features: list[Feature] = field(default_factory=list)
    product_type: str | None = None
    selected: list[Feature] = field(default_factory=list)
    implicit_fields: frozenset[str] = frozenset()
    assignment: Assignment | None = None
    rubrics: list[Rubric] = field(default_factory=list)
    query_only: list[str] = field(default_factory=list)
    hidden: dict[str, int] = field(default_factory=dict)
    lock: str = ""
    cues: dict[str, str] = field(default_factory=dict)
    task: dict[str, Any] = field(default_factory=dict)
    previous: tuple[Finding, ...] = ()  # first finding of each earlier attempt (an LLM retry's prompt names them)

    _gens: dict[str, Random] = field(default_factory=dict, repr=False)

    @property
    def asin(self) -> str:
        """The target's parent_asin."""
        return self.product["parent_asin"]

    def rng(self, stage: str) -> Random:
        """The generator of one stage of this attempt, seeded by sha256(seed, stage name, intent, parent_asin, draw).

        One per stage (DESIGN "Determinism"): a change inside one stage (a field-table row that
        changes the features) never moves another stage's draws (openers, persona noise). `draw` is the
        attempt number except after an LLM text rejection (`TEXT_RETRY_REASONS`), whose retry keeps it.
        """
        if stage not in self._gens:
            draw = self.attempt if self.draw is None else self.draw
            parts: tuple[object, ...] = (self.seed, stage, self.intent.name, self.asin, draw)
            if self.text_draw and stage == "verbalisation":
                parts += ("rephrase", self.text_draw)
            self._gens[stage] = rng(*parts)
        return self._gens[stage]


StageRun = Callable[[CandidateState, BuildContext], list[Finding]]


class Stage(NamedTuple):
    """One declared stage: its number and name (DESIGN.md) and the function that runs it.

    `run` takes the candidate state and the build context and returns the findings that reject
    the attempt (empty: the stage passed). Stage 1 has no per-candidate function: it samples the
    candidates of the whole build.
    """

    number: int
    name: str
    run: StageRun | None
    summary: str


# --------------------------------------------------------------------------------------------------
# Stage 2: feature extraction


def extract(state: CandidateState, ctx: BuildContext) -> list[Finding]:
    """Typed candidate features of the target (ecombench.stages.features), and review opinions an LLM cites."""
    product, intent = state.product, state.intent
    if "opinions" in state.writes and intent.review_opinions:
        assert ctx.llm is not None
        try:
            cited, shown = write_opinions_llm(ctx.llm, product, intent.review_opinions)
        except LLMError as exc:
            return [Finding(exc.reason, f"review opinions: {exc}", exc.evidence)]
        opinions, problems = check_opinions(cited, shown, product.get("reviews") or [], intent.review_opinions)
        if problems:
            return problems
        state.opinions = opinions
    rejected_values: dict[str, dict[str, str]] = {}  # values a shopper would not state
    # template-v2 quotes only review clauses that state a clear, complete opinion
    features, dropped = extract_features(product, intent, ctx.table, state.rng("feature_extraction"),
                                         vocabulary=ctx.vocabulary, reviews=product.get("reviews"),
                                         opinions=state.opinions, value_support=_value_support(ctx),
                                         min_value_support=ctx.config.min_value_support,
                                         rejected_values=rejected_values,
                                         clear_opinions=ctx.config.verbaliser == VERBALISER_V2_ID,
                                         type_vocabulary=ctx.type_vocabulary, type_stats=ctx.type_stats,
                                         opinion_phrases=ctx.opinion_phrases)
    if state.attempt == 0:  # counted once per candidate: report.md's rejected values by field
        state.stats.update(f"value_rejected|{f}|{why}" for f, bad in rejected_values.items() for why in bad.values())
    sc = state.split_config
    need = sc.min_query + sc.min_persona + sc.min_clarification
    for key, reason in (("budget", "no_price"), ("review", "no_reviews")):
        if dropped.get(key) == reason:
            what = (f"price a voucher can apply to (${MIN_PRICE:g} or more)" if key == "budget"
                    else f"{intent.review_opinions} distinct opinions in its positive reviews"
                    if ctx.opinion_phrases is None
                    else f"{intent.review_opinions} distinct opinion phrase(s) in its positive reviews that positive "
                         f"reviews of at least {MIN_OPINION_PRODUCTS} catalog products state "
                         f"({len(ctx.opinion_phrases)} such phrases in this catalog)")
            return [Finding(reason, f"target has no {what}", {"price": product.get("price"),
                                                               "reviews": len(product.get("reviews") or [])})]
    if dropped.get("wearer") == "young_wearer_rare_for_type":
        young = young_wearer_fact(product)
        return [Finding("young_wearer_rare_for_type", "the title or label says it is a child's, but products of its "
                        "type seldom state whom they are for", {"field": young[0] if young else None,
                                                                 "value": young[1] if young else None,
                                                                 "product_type": next((f.value for f in features
                                                                                       if f.kind == "entity"), None)})]
    if not any(f.kind == "entity" for f in features):  # every query names its product type
        return [Finding("no_product_type", "the title's head names no product type and no category of the "
                        "product confirms one", {"title": product.get("title")})]
    if len(features) < need:
        return [Finding("too_few_features", f"{len(features)} usable features, {need} needed",
                        {"features": [f.field for f in features], "dropped": dropped})]
    state.features = features
    state.product_type = next((f.value for f in features if f.kind == "entity"), None)
    return []


# --------------------------------------------------------------------------------------------------
# Stage 3: three-source split


def split(state: CandidateState, ctx: BuildContext) -> list[Finding]:
    """Query / persona / clarification assignment: the hidden sources chosen by answer sets (ecombench.stages.split).

    When the features drawn admit no placement meeting every goal (each hidden source needed and dividing the
    answer set `min_hidden_division`-fold), other features are drawn from the target's, up to
    SPLIT_FEATURE_DRAWS draws, before stage 4 rejects the plan (re-split before rejecting). The
    first draw that meets the goals wins, else the first draw that gave an assignment goes on (as before the rule).
    """
    intent, gen = state.intent, state.rng("three_source_split")
    first: tuple[list[Feature], frozenset[str], Assignment | PartitionInfeasible] | None = None
    seen: set[frozenset[str]] = set()
    salience, required = _salience(state, ctx)
    for _ in range(SPLIT_FEATURE_DRAWS):
        selected = select_features(state.features, intent, gen, salience, required)
        fields = frozenset(f"{f.field}={f.value}" for f in selected)
        if fields in seen:  # a target with few features draws the same ones again: nothing new to place
            continue
        seen.add(fields)
        implicit, outcome = _plan_split(state, ctx, selected, gen, required)
        if first is None or (isinstance(first[2], PartitionInfeasible) and isinstance(outcome, Assignment)):
            first = (selected, implicit, outcome)
        if isinstance(outcome, Assignment) and outcome.planned is not False:
            first = (selected, implicit, outcome)
            break
    assert first is not None
    state.selected, state.implicit_fields, outcome = first
    if isinstance(outcome, PartitionInfeasible):
        return [Finding(outcome.reason, str(outcome), outcome.evidence)]
    state.assignment = outcome
    return []


# Feature draws stage 3 tries per attempt before a plan whose hidden sources fall short goes on to stage 4.
SPLIT_FEATURE_DRAWS = 4


def _plan_split(state: CandidateState, ctx: BuildContext, selected: list[Feature], gen: Random,
                required: frozenset[str] = frozenset()) -> tuple[frozenset[str], Assignment | PartitionInfeasible]:
    """The implicit fields and the answer-set-driven assignment of one draw of features (or why none exists).

    `required` fields (the device an accessory fits) stay in the task: the split may hide them but never leaves them
    out, and a query that pins the target never sheds them.
    """
    intent = state.intent
    tangled = entangled_fields(selected)  # a value repeated elsewhere in the query cannot stay implicit
    cueable = sorted(f.field for f in selected if f.kind == "detail" and f.field not in tangled
                     and _cue(ctx, intent, f.field, f.value, state.product_type) and _cue_fits(state, ctx, f))
    # Up to max_implicit implicit requirements where cues allow, at least intent.implicit.
    implicit = frozenset(gen.sample(cueable, min(max(intent.implicit, intent.max_implicit), len(cueable))))
    # Support of each feature the split may hide: how many catalog products satisfy it alone.
    hideable = [f for f in selected if "persona" in f.sources or "clarification" in f.sources]
    support = dict(zip((f.field for f in hideable), ctx.catalog.supports([feature_rubric(f) for f in hideable])))
    # The split searches placements by their answer sets, so that each hidden source is needed.
    within = [feature_rubric(f) for f in selected if f.kind == "entity" or f.field in intent.query_fields]
    masks, universe = answer_set_masks([feature_rubric(f) for f in selected], within, ctx.catalog, state.asin)
    plan = SplitGoals(masks=masks, universe=universe, min_query=_query_floor(ctx, intent),
                      min_hidden=_hidden_floor(ctx, intent), max_total=ctx.config.max_answer_set,
                      min_division=_hidden_division(ctx, intent))
    try:
        return implicit, split_features(selected, intent, state.split_config, gen,
                                        keep_in_query=implicit, support=support, plan=plan, required=required)
    except PartitionInfeasible as exc:
        return implicit, exc


# --------------------------------------------------------------------------------------------------
# Stage 4: locked rubrics


def lock(state: CandidateState, ctx: BuildContext) -> list[Finding]:
    """Typed, source-tagged rubrics, checked by code on the target, the query's floor, then the lock.

    The query floor is checked before any text is written (no verbaliser call is spent on it): a
    query that already pins the target makes the persona and clarification confirm rather than
    narrow. Such a query first sheds its most selective optional requirements, down to
    the split's minimum and ratio share; one still too narrow is rejected (query_pins_target) and
    retried with another draw.
    """
    intent, assignment = state.intent, state.assignment
    assert assignment is not None
    rubrics = build_rubrics(assignment, ctx.table)
    # Exclusions that bite: a negative rubric excludes values that products the task's other
    # rubrics leave do carry (its own such values first, else others of the field among those products).
    # Two negatives exclude among each other's survivors, so a second pass checks the first against the
    # second's new values; what still does not bite after it is rejected.
    for final in (False, False, True):
        for f in [f for f in assignment.query + assignment.persona + assignment.clarification if f.kind == "negative"]:
            rid = next(r.id for r in rubrics if r.field == f.field and r.type == "negative_attribute")
            values = biting_exclusions(rubrics, rid, ctx.catalog, state.product,
                                       min_support=ctx.config.min_value_support, type_stats=ctx.type_stats,
                                       product_type=state.product_type)
            if not values or (final and values != list(f.value)):
                return [Finding("exclusion_excludes_nothing", f"no product the other rubrics leave has another "
                                f"{f.field} than the target's: excluding {f.value} rules out nothing",
                                {"field": f.field, "excluded": list(f.value)})]
            if values != list(f.value):
                assignment.replace(f, dataclasses.replace(f, value=values))
                rubrics = build_rubrics(assignment, ctx.table)
    unmet = intent_problems(rubrics, intent)
    if unmet:
        return [Finding("intent_requirement_unmet", f"{intent.name} needs {', '.join(unmet)}",
                        {"missing": unmet, "rubric_types": [r.type for r in rubrics]})]
    failing = failing_rubrics(rubrics, state.product, ctx.table)
    if failing:
        return [Finding("target_fails_rubric", f"target fails {len(failing)} of its own rubrics", {"failing": failing})]
    floor = _query_floor(ctx, intent)
    query_only = _query_answer_set(rubrics, ctx)
    left_out = []
    while len(query_only) < floor and (dropped := assignment.leave_out_most_selective(state.split_config)) is not None:
        left_out.append(dropped.field)
        rubrics = build_rubrics(assignment, ctx.table)
        query_only = _query_answer_set(rubrics, ctx)
    if len(query_only) < floor:
        return [Finding("query_pins_target", f"the query's own rubrics leave {len(query_only)} catalog "
                        f"product(s), fewer than min_query_answer_set={floor}",
                        {"query_answer_set_size": len(query_only), "min_query_answer_set": floor,
                         "query_fields": [r.field for r in rubrics if r.info_source == "query"],
                         "hidden_fields": [r.field for r in rubrics if r.info_source != "query"],
                         "left_out_fields": left_out,
                         "examples": query_only[:10]})]
    # Every hidden source necessary: the rubrics without the persona's and without the
    # clarification's must each leave min_hidden_answer_set products, and min_hidden_division times the
    # products all rubrics leave. A plan that fails first sheds the query's most selective optional
    # requirements (as above), else is rejected and re-split by the next attempt.
    hidden_floor, division = _hidden_floor(ctx, intent), _hidden_division(ctx, intent)
    hidden = hidden_source_answer_sets(rubrics, ctx.catalog)
    full = len(ctx.catalog.answer_set(rubrics))
    while (hidden_source_findings(hidden, hidden_floor, rubrics, full, division)
           and (dropped := assignment.leave_out_most_selective(state.split_config)) is not None):
        left_out.append(dropped.field)
        rubrics = build_rubrics(assignment, ctx.table)
        hidden = hidden_source_answer_sets(rubrics, ctx.catalog)
        full = len(ctx.catalog.answer_set(rubrics))
        query_only = _query_answer_set(rubrics, ctx)
    findings = hidden_source_findings(hidden, hidden_floor, rubrics, full, division)
    if findings:
        return findings
    state.rubrics, state.query_only, state.hidden, state.lock = rubrics, query_only, hidden, rubric_lock(rubrics)
    return []


def _query_floor(ctx: BuildContext, intent: IntentSpec) -> int:
    """Products the query's rubrics alone must leave (BuildConfig.min_query_answer_set, or the intent's own)."""
    return ctx.config.min_query_answer_set if intent.min_query_answer_set is None else intent.min_query_answer_set


def _hidden_floor(ctx: BuildContext, intent: IntentSpec) -> int:
    """Products the rubrics without one hidden source must leave.

    BuildConfig.min_hidden_answer_set, or the intent's.
    """
    return ctx.config.min_hidden_answer_set if intent.min_hidden_answer_set is None else intent.min_hidden_answer_set


def _hidden_division(ctx: BuildContext, intent: IntentSpec) -> int:
    """How many times each hidden source must divide the answer set.

    BuildConfig.min_hidden_division, or the intent's.
    """
    return ctx.config.min_hidden_division if intent.min_hidden_division is None else intent.min_hidden_division


def _query_answer_set(rubrics: list[Rubric], ctx: BuildContext) -> list[str]:
    return ctx.catalog.answer_set([r for r in rubrics if r.info_source == "query"], limit=QUERY_ANSWER_SET_CAP)


# --------------------------------------------------------------------------------------------------
# Stage 5: verbalisation


def verbalise(state: CandidateState, ctx: BuildContext) -> list[Finding]:
    """The user query (with implicit cues), persona and clarification script, by templates or an LLM."""
    intent, rubrics, writes, asin = state.intent, state.rubrics, state.writes, state.asin
    v2 = ctx.config.verbaliser == VERBALISER_V2_ID
    # template-v2 draws one of each cue's phrasings with a generator of its own, seeded by one draw from the
    # stage's generator whatever the number of cues (the persona drawn later must not move with them);
    # template-v1 says each cue's first phrasing, as older splits did.
    cue_rng = Random(state.rng("verbalisation").getrandbits(64)) if v2 else None
    # Stage 3 makes a field implicit only where it has a cue, so every value here is a string.
    cues = cast("dict[str, str]", {r.id: _cue(ctx, intent, r.field, r.expected_value, state.product_type, cue_rng)
                                   for r in rubrics if r.info_source == "query" and r.field in state.implicit_fields})
    if len(cues) < intent.implicit:
        return [Finding("no_implicit_cue", f"{intent.name} needs {intent.implicit} implicit requirement(s); "
                        f"cues.toml has a {intent.cue_kind} cue for {len(cues)} of this target's query values",
                        {"query_fields": [r.field for r in rubrics if r.info_source == "query"]})]
    user_id = "u_" + digest(ctx.config.seed, "persona", intent.name, asin, state.attempt)[:10]
    turns = ctx.config.max_clarification_turns
    llm = cast(LLMClient, ctx.llm)  # set whenever the config has the LLM write a part (`writes`)
    # template-v2 writes the query; every query names its product type
    if v2 and "query" not in writes and product_type_rubric(rubrics) is None:
        return [Finding("query_without_product_type", "template-v2 names the product type in every query, and "
                        "no entity rubric gives this target's", {"query_fields": [r.field for r in rubrics
                                                                                  if r.info_source == "query"]})]
    write_template = write_query_v2 if v2 else write_query
    try:
        # An LLM retry's prompt names the attempt and the earlier rejections: at temperature 0 the same
        # prompt would only fetch the rejected reply from the cache.
        attempt, previous = state.attempt, state.previous
        query, surfaces = (write_query_llm(llm, rubrics, ctx.table, cues, attempt, previous) if "query" in writes
                           else (write_template(rubrics, ctx.table, state.rng("verbalisation"), cues), None))
        for_whom = product_for_whom(state.product)
        persona = (write_persona_llm(llm, rubrics, ctx.table, user_id, attempt, previous,
                                     state.rng("verbalisation"), for_whom) if "persona" in writes
                   else write_persona(rubrics, ctx.table, state.rng("verbalisation"), user_id, for_whom))
        script = (write_clarification_llm(llm, rubrics, ctx.table, turns, attempt, previous,
                                          state.rng("verbalisation")) if "slots" in writes
                  else write_clarification(rubrics, ctx.table, turns, state.rng("verbalisation")))
    except LLMError as exc:
        return [Finding(exc.reason, str(exc), exc.evidence)]
    if "slots" in writes:
        # Stage 6's slot checks run before the task schema here: the schema would report a model's short
        # keyword list as schema_invalid, hiding which slot and why.
        findings = [f for f in check_slots(script, rubrics, ctx.table) if f.severity == "error"]
        if findings:
            return findings
    task: dict[str, Any] = {
        "id": f"{intent.name}-{digest(intent.name, asin, state.lock)[:12]}",
        "intent": intent.name,
        "user_query": query,
        "user_persona": persona,
        "clarification_script": script,
        "target_product": _target_record(state.product, rubrics, ctx.table),
        "rubrics": [r.record() for r in rubrics],
        "rubric_lock": state.lock,
        "implicit_rubric_ids": sorted(cues, key=lambda rid: int(rid[1:])),
    }
    if surfaces is not None:
        task["query_surfaces"] = surfaces
    problems = schema_errors("task", task | {"answer_set": [asin], "difficulty": _difficulty(task, 1, 1),
                                             "provenance": _provenance(ctx, state.attempt)})
    if problems:
        return [Finding("schema_invalid", f"verbalised task breaks the task schema: {problems[0]}",
                        {"errors": problems[:10]})]
    state.cues, state.task = cues, task
    return []


# --------------------------------------------------------------------------------------------------
# Stage 6: leakage checks


def check_leaks(state: CandidateState, ctx: BuildContext) -> list[Finding]:
    """Hidden values must not surface where they do not belong; every slot reachable (ecombench.validation.leakage)."""
    return [f for f in check_leakage(state.task, ctx.table) if f.severity == "error"]


# --------------------------------------------------------------------------------------------------
# Stage 7: semantic validation


def check_semantics(state: CandidateState, ctx: BuildContext) -> list[Finding]:
    """Each source supports its rubrics, the answer set over the catalog is small, the optional LLM judge."""
    task = state.task
    answers, findings = semantic_findings(task, ctx.table, ctx.catalog, state.cues, ctx.config.max_answer_set,
                                          ctx.type_vocabulary)
    findings = [f for f in findings if f.severity == "error"]
    if not findings and ctx.config.judge and ctx.llm is not None:
        findings = judge_task(ctx.llm, task, state.product.get("reviews"))
    if findings:
        return findings
    task["answer_set"] = answers
    task["difficulty"] = _difficulty(task, len(answers), len(state.query_only)) | {
        f"{k}_answer_set_size": v for k, v in state.hidden.items()} | {
        # The ablated oracles' expected accuracy on this task: the answer set's share of each ablation's.
        f"{k.removeprefix('without_')}_ablation_ratio": round(len(answers) / v, 4) for k, v in state.hidden.items()}
    task["provenance"] = _provenance(ctx, state.attempt)
    return []


STAGES: tuple[Stage, ...] = (
    Stage(1, "catalog_sampling", None, "catalog snapshot + intent -> candidate targets (ecombench.stages.sampling)"),
    Stage(2, "feature_extraction", extract, "target -> typed candidate features"),
    Stage(3, "three_source_split", split, "features -> query / persona / clarification assignment"),
    Stage(4, "locked_rubrics", lock, "assignment -> typed, source-tagged rubrics + rubric_lock"),
    Stage(5, "verbalisation", verbalise, "locked rubrics -> query, persona, clarification script"),
    Stage(6, "leakage_checks", check_leaks, "hidden values stay hidden; slots reachable"),
    Stage(7, "semantic_validation", check_semantics, "sources support rubrics; small answer set; judge"),
)


# --------------------------------------------------------------------------------------------------
# The loop


@dataclass
class CandidateResult:
    """A task or a rejection, plus counters merged into the manifest (stage funnel, per attempt)."""

    task: dict[str, Any] | None = None
    rejection: dict[str, Any] | None = None
    stats: Counter = field(default_factory=Counter)
    resumed: bool = False  # loaded from a finished batch of an earlier, interrupted run


def run_attempt(product: dict[str, Any], intent: IntentSpec, ctx: BuildContext, attempt: int,
                stats: Counter, previous: tuple[Finding, ...] = (),
                draw: int | None = None, text_draw: int = 0) -> tuple[dict[str, Any] | None, list[Finding], int]:
    """Stages 2-7 of one attempt, in `STAGES` order.

    `previous` holds the first finding of each earlier attempt; only the LLM writers read it (template
    text never depends on it, so template builds are unchanged). `draw` (default: `attempt`) seeds the
    stages' generators; `text_draw` > 0 reseeds the verbalisation stage alone (the same rubrics, other words).

    Returns:
        (task, [], 7) when every stage passes, else (None, findings, stage of the rejection).
        `stats["stage<N>_passed"]` counts each stage the attempt got through.
    """
    state = CandidateState(
        product=product, intent=intent, attempt=attempt, stats=stats,
        seed=ctx.config.seed, draw=attempt if draw is None else draw, text_draw=text_draw,
        split_config=ctx.config.partition.model_copy(update=intent.split_overrides()),
        writes=ctx.config.llm_writes() if ctx.llm is not None else frozenset(), previous=previous)
    for stage in STAGES:
        if stage.run is None:
            continue
        findings = stage.run(state, ctx)
        if findings:
            rejected_at = rejection_stage(findings[0].reason, stage.number)
            for passed in range(stage.number, rejected_at):  # a later stage's check run early (LLM slots)
                stats[f"stage{passed}_passed"] += 1
            return None, findings, rejected_at
        stats[f"stage{stage.number}_passed"] += 1
    return state.task, [], STAGES[-1].number


# A product row holding this key, [attempt, text draw], asks for that accepted attempt again with its text drawn
# anew (ecombench.pipeline.build.rephrase_repeats: a query repeating a run of five words of another).
REPHRASE = "rephrase"


def build_candidate(product: dict[str, Any], intent_name: str, ctx: BuildContext) -> CandidateResult:
    """Run stages 2-7 for one candidate, retrying up to `config.max_attempts` times.

    Outcomes in NO_RETRY (too few features, no price or reviews, target failing a rubric) do
    not depend on the draw in a way a retry could fix, so they end the candidate at once. A row holding
    `REPHRASE` runs that one attempt with its verbalisation drawn anew instead.

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
    if product.get(REPHRASE):
        attempt, text_draw = product[REPHRASE]
        task, findings, stage = run_attempt(product, intent, ctx, attempt, result.stats, draw=attempt,
                                            text_draw=text_draw)
        result.task = task
        if task is None:
            result.rejection = rejection_record(intent_name, product["parent_asin"], findings, attempt, stage, [])
        return result
    result.stats["candidates"] += 1
    earlier: list[dict[str, Any]] = []
    previous: list[Finding] = []
    draw = 0
    for attempt in range(ctx.config.max_attempts):
        task, findings, stage = run_attempt(product, intent, ctx, attempt, result.stats, tuple(previous), draw)
        if task is not None:
            result.task = task
            result.stats["accepted"] += 1
            return result
        if attempt + 1 < ctx.config.max_attempts and findings[0].reason not in NO_RETRY:
            earlier.append({"attempt": attempt, "stage": stage, "reason": findings[0].reason})
            previous.append(findings[0])
            # The model's text failed: its retry (a new prompt naming the finding) rewrites the same
            # split; any other failure, or template text, draws a new one.
            if not (ctx.llm is not None and findings[0].reason in TEXT_RETRY_REASONS):
                draw = attempt + 1
            continue
        result.rejection = rejection_record(intent_name, product["parent_asin"], findings, attempt, stage, earlier)
        result.stats["rejected"] += 1
        return result
    raise AssertionError("unreachable: the last attempt always returns")


# --------------------------------------------------------------------------------------------------
# Helpers of the stages above


def _salience(state: CandidateState, ctx: BuildContext) -> tuple[dict[str, float] | None, frozenset[str]]:
    """({rubric field: salience for the target's type} or None without type statistics, the fields always drawn).

    The device an accessory fits is always drawn: a shopper names the phone first. So is the department or age
    saying the target is a child's or a teen's, where its title or label does (`young_wearer_fact`) and the field
    is a requirement of its type: a shopper buying girls' running shoes says so.
    """
    specs = {spec.rubric_field: spec for spec in ctx.table.detail_fields()}
    required = frozenset(f.field for f in state.features if f.field in specs and specs[f.field].compatibility)
    young = young_wearer_fact(state.product)
    if young is not None:
        required |= {f.field for f in state.features if f.field == f"details.{young[0]}"}
    if ctx.type_stats is None:
        return None, required
    return ({f.field: ctx.type_stats.salience(state.product_type, specs[f.field].name)
             for f in state.features if f.field in specs}, required)


def _cue_fits(state: CandidateState, ctx: BuildContext, feature: Feature) -> bool:
    """Whether a cue may describe the target by this feature's value.

    A cue tells the agent what the product is like, so where the type's pages seldom put a labelled value in words
    (`TypeStats.labels_borne_out`), the target's own title, bullets or description must state it: a details label
    "Modern" on a cartoon undersea kids' shower curtain (B07Q3VDYM7) made "with clean lines and a sleek, up-to-date
    look". Without type statistics every cue fits.
    """
    spec = ctx.table.by_rubric_field(feature.field)
    if ctx.type_stats is None or ctx.type_stats.labels_borne_out(state.product_type, spec.name, str(feature.value)):
        return True
    stated, _ = page_facts(state.product, spec)
    return any(f["value"] == feature.value and set(f.get("sources") or [f.get("source")]) - {"details"}
               for f in stated)


def _cue(ctx: BuildContext, intent: IntentSpec, field_name: str, value: Any, product_type: str | None,
         rng: Random | None = None) -> str | None:
    """The intent's kind of cue for (field, value) that suits the product type, or None (tables.cues.cue_for).

    `rng` draws one of the cue's phrasings; None takes the first.
    """
    kind = intent.cue_kind if (intent.implicit or intent.max_implicit) else None
    return cue_for(ctx.cues, kind, field_name, value, product_type, ctx.table, rng)


class ValueSupport:
    """(rubric field, value) -> catalog products carrying it ( the value vocabulary).

    `prefetch` asks many counts at once (`AnswerSets.supports`): stage 2 checks every option of every detail
    field, and a partitioned build then answers them in one pass instead of one pass each.

    Args:
        index: the catalog's answer sets (`ecombench.answers.index.AnswerSets`).
    """

    def __init__(self, index: AnswerSets):
        self.index = index
        self.known: dict[tuple[str, str], int] = {}

    @staticmethod
    def _rubric(field_name: str, value: str) -> dict[str, Any]:
        return {"type": "attribute_match", "field": field_name, "expected_value": value}

    def prefetch(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Ask the counts of these (rubric field, value) pairs together, and keep them."""
        todo = [p for p in dict.fromkeys(pairs) if p not in self.known]
        if todo:
            self.known.update(zip(todo, self.index.supports([self._rubric(*p) for p in todo])))

    def __call__(self, field_name: str, value: str) -> int:
        """How many catalog products carry `value` in `field_name` (`CatalogIndex.support`)."""
        if (field_name, value) not in self.known:
            self.prefetch([(field_name, value)])
        return self.known[(field_name, value)]


def _value_support(ctx: BuildContext) -> ValueSupport | None:
    """The candidate's `ValueSupport`, None without an index."""
    return None if ctx.index is None else ValueSupport(ctx.index)


def _target_record(product: dict[str, Any], rubrics: list[Rubric], table: FieldTable) -> dict[str, Any]:
    details, facts = {}, {}
    for r in rubrics:
        if r.field.startswith("details."):
            spec = table.by_rubric_field(r.field)
            details[spec.name] = detail_values(product, spec)
            facts[spec.name] = [{"value": f["value"], "sources": list(f.get("sources") or [f["source"]]),
                                 "evidence": f.get("evidence") or f["value"]} for f in page_facts(product, spec)[0]]
    keep = ("parent_asin", "title", "main_category", "store", "average_rating", "rating_number", "price")
    return {k: product.get(k) for k in keep} | {"details": details, "facts": facts}


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
    """The verbaliser's id in provenance.

    "template-v1", "template-v2", or "llm-v3[query+persona+slots+opinions]:<model>" (the parts the
    LLM wrote) for the LLM verbaliser.
    """
    if config.verbaliser == "template":
        return VERBALISER_ID
    if config.verbaliser == VERBALISER_V2_ID:
        return VERBALISER_V2_ID
    return f"{LLM_VERBALISER_ID}[{'+'.join(p for p in LLM_PARTS if p in config.llm_writes())}]:{config.llm_model}"
