"""Findings and reason codes: what a check reports about a candidate.

Validators collect every finding for a candidate before deciding (lighteval's linter habit);
severity "error" rejects the candidate, "warn" is only reported (dagster's WARN/ERROR split).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

# Stable reason codes by stage (DESIGN "The seven stages"). Reports and tests use these names.
# Stage 0 holds what only a published split file can show, found by `ecombench validate`
# (validation/validate.py): a line that is not a task, an id used twice, a broken task invariant,
# a target the catalog lacks, a recorded answer set the catalog no longer gives, a check that
# could not run (severity warn). Stage 3's query_not_searchable: the query would name neither a product
# type nor an attribute; stage 4's query_pins_target: the query's rubrics alone leave fewer than
# min_query_answer_set catalog products, checked before any text is written; persona_not_needed /
# clarification_not_needed: the rubrics without that source's already leave fewer than
# min_hidden_answer_set products; hidden_source_too_weak: they leave fewer than min_hidden_division
# times the products all rubrics leave, so an oracle skipping that source guesses right too often;
# exclusion_excludes_nothing: a negative rubric's excluded
# values occur in no product the other rubrics leave.
# Stage 2's no_product_type: the title's head names no product noun and no category; young_wearer_rare_for_type: the
# title or label says the target is a child's, and its type's products state that field too seldom to ask for it.
# LLM-written parts add: opinion_unknown_review / opinion_unsupported (stage 2, an opinion citing a
# review not shown or not stating it), query_surface_* (stage 7, a query rubric's span of the query
# missing, not in the query, or not stating the rubric), judge_rejected / judge_unscored (stage 7,
# the optional LLM judge failed the task / could not score it). llm_* at stage 5 also end stage-2
# opinion calls (the rejection's stage says where).
# Stage 5's query_without_product_type: template-v2 names the product type in every query and the target has no
# entity rubric; stage 7's query_names_other_product_type: the query's first product noun is not the entity
# rubric's ("RCA headphones" for an RCA audio cable).
# Stage 7's persona_incoherent: the persona's background contradicts the requirements (stages/persona_fit.py).
# Stage 7's oracle_failed comes from the build's construction check (pipeline/agent_check.py):
# the sandbox's oracle could not solve the task with the agents' tools.
REASONS: dict[int, tuple[str, ...]] = {
    0: ("malformed_record", "duplicate_task_id", "task_invariant_broken", "target_not_in_catalog",
        "answer_set_differs", "check_skipped", "key_defaulted", "value_split", "field_not_in_table"),
    1: ("not_enough_eligible_products",),
    2: ("too_few_features", "no_price", "no_reviews", "opinion_unknown_review", "opinion_unsupported",
        "no_product_type", "young_wearer_rare_for_type"),
    3: ("partition_infeasible", "query_not_searchable"),
    4: ("target_fails_rubric", "intent_requirement_unmet", "query_pins_target", "persona_not_needed",
        "clarification_not_needed", "hidden_source_too_weak", "exclusion_excludes_nothing"),
    5: ("llm_error", "llm_invalid_output", "llm_refusal", "schema_invalid", "no_implicit_cue",
        "query_without_product_type"),
    6: ("hidden_value_in_query", "implicit_value_in_query", "persona_noise_leak", "persona_noise_not_whitelisted",
        "slot_incomplete", "slot_unreachable", "slot_collision"),
    7: ("query_missing_requirement", "implicit_cue_missing", "persona_missing_requirement", "persona_incoherent",
        "clarification_not_revealed", "rubric_lock_mismatch", "answer_set_missing_target", "answer_set_too_large",
        "query_surface_missing",
        "query_surface_unanchored", "query_surface_mismatch", "judge_rejected", "judge_unscored",
        "oracle_failed", "query_names_other_product_type"),
}
STAGE_NAMES = {0: "split_record", 1: "catalog_sampling", 2: "feature_extraction", 3: "three_source_split",
               4: "locked_rubrics", 5: "verbalisation", 6: "leakage_checks", 7: "semantic_validation"}
STAGE_OF_REASON = {reason: stage for stage, reasons in REASONS.items() for reason in reasons}
# A model call can fail in any stage that makes one (stage 2's review opinions, stage 5's texts, stage 7's
# judge): these reasons are listed under stage 5 above but a rejection takes the stage that made the call.
CALLER_STAGE_REASONS = frozenset({"llm_error", "llm_invalid_output", "llm_refusal"})

Reason = Enum("Reason", {code: code for codes in REASONS.values() for code in codes}, type=str)  # type: ignore[misc]
Reason.__doc__ = ("Every stable reason code, derived from REASONS (the one table): "
                  "Reason.query_pins_target == 'query_pins_target'.")


def rejection_stage(reason: str, running_stage: int) -> int:
    """The stage a rejection with this reason is counted under.

    A reason's stage comes from REASONS; a model-call reason (CALLER_STAGE_REASONS) takes the stage
    that made the call (`running_stage`).

    Raises:
        KeyError: `reason` is not a known reason code.
    """
    if reason in CALLER_STAGE_REASONS:
        return running_stage
    return STAGE_OF_REASON[reason]


def rejection_record(intent: str, parent_asin: str, findings: list[Finding], attempt: int, stage: int,
                     earlier_attempts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The one constructor of a rejection record (schemas/rejection.schema.json).

    The first finding gives the reason, message and evidence; the others are listed under
    `evidence.other_findings`, earlier attempts' (attempt, stage, reason) under
    `evidence.earlier_attempts`.

    Args:
        intent: the candidate's intent.
        parent_asin: the candidate's target product.
        findings: at least one finding; the first decides.
        attempt: the attempt that ended the candidate (0-based).
        stage: the rejection's stage (`rejection_stage`).
        earlier_attempts: [{attempt, stage, reason}] of the attempts before.
    """
    first = findings[0]
    return {
        "candidate_id": f"{intent}:{parent_asin}",
        "intent": intent,
        "parent_asin": parent_asin,
        "stage": stage,
        "stage_name": STAGE_NAMES[stage],
        "reason": first.reason,
        "message": first.message,
        "evidence": {**first.evidence,
                     "other_findings": [{"reason": f.reason, "message": f.message} for f in findings[1:]],
                     "earlier_attempts": list(earlier_attempts or [])},
        "attempt": attempt,
    }


@dataclass(frozen=True)
class Finding:
    """One problem found in a candidate.

    Attributes:
        reason: a stable reason code from REASONS.
        message: one line a person can read.
        evidence: which rubric, which value, which text (and span) — JSON-serialisable.
        severity: "error" rejects the candidate; "warn" is reported only.
    """

    reason: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    severity: str = "error"

    def __post_init__(self) -> None:
        if self.reason not in STAGE_OF_REASON:
            raise ValueError(f"unknown reason code {self.reason!r}: add it to REASONS in ecombench/schemas/findings.py")

    @property
    def stage(self) -> int:
        """The stage this reason belongs to (REASONS)."""
        return STAGE_OF_REASON[self.reason]
