"""Stage 3, three-source split: assign each feature to the query, the hidden persona or clarification.

Rules (paper §3.3; reference §6, whose duplication bug §15.14 cannot happen here because each
feature is placed exactly once):
- the entity (product type) and the intent's `query_fields` always go to the query;
- a feature whose value is stated inside another feature's value (the entity phrase, "Blue" ink
  beside "Blue" colour, a price cap of 20 beside "at least 20 ratings") stays in the query, since
  hiding it would leak through the other;
- persona and clarification take features only from fields the field table allows there
  (stable preferences such as brand or colour suit the persona; specs suit clarification);
- sizes follow the ratios with minimums (defaults 50/25/25, at least 4/2/2).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stages.features import Feature, value_forms
from stages.intents import IntentSpec
from stages.text import contains_phrase


class SplitConfig(BaseModel):
    """Ratios and minimum counts per source (DESIGN stage 3; defaults 50/25/25, at least 4/2/2).

    The query takes what the persona and clarification do not, so `query_ratio` is implied by
    the other two; it is stated anyway and must make the three sum to 1 (the reference kept an
    unused `query_ratio`, §15.12).

    Raises:
        pydantic.ValidationError: ratios outside [0, 1] or not summing to 1.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    query_ratio: float = Field(0.5, ge=0, le=1)
    persona_ratio: float = Field(0.25, ge=0, le=1)
    clarification_ratio: float = Field(0.25, ge=0, le=1)
    min_query: int = Field(4, ge=1)
    min_persona: int = Field(2, ge=0)
    min_clarification: int = Field(2, ge=0)

    @model_validator(mode="after")
    def _ratios_sum_to_one(self) -> SplitConfig:
        total = self.query_ratio + self.persona_ratio + self.clarification_ratio
        if abs(total - 1) > 1e-9:
            raise ValueError(f"query, persona and clarification ratios sum to {total:g}, not 1")
        return self


@dataclass
class Assignment:
    """Features per info source, in the order rubric ids are given (query, persona, clarification)."""

    query: list[Feature] = field(default_factory=list)
    persona: list[Feature] = field(default_factory=list)
    clarification: list[Feature] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"query": len(self.query), "persona": len(self.persona), "clarification": len(self.clarification)}


class PartitionInfeasible(ValueError):
    """No assignment meets the minimums; `evidence` says what was available."""

    def __init__(self, message: str, evidence: dict):
        super().__init__(message)
        self.evidence = evidence


def select_features(features: list[Feature], intent: IntentSpec, rng: random.Random) -> list[Feature]:
    """At most `intent.max_features` features: entity and intent-required fields first, the rest drawn with rng."""
    fixed = [f for f in features if f.kind in ("entity", "negative", "budget", "opinion") or f.field in intent.query_fields]
    rest = [f for f in features if f not in fixed]
    rng.shuffle(rest)
    if intent.min_query_attributes:
        # feature_combination needs enough detail features; draw them before numeric ones.
        rest.sort(key=lambda f: f.kind != "detail")
    return fixed + rest[: max(0, intent.max_features - len(fixed))]


def entangled_fields(features: list[Feature]) -> set[str]:
    """Fields whose value is stated inside another feature's value ("Blue" colour and "Blue" ink,
    price cap 20 and "at least 20 ratings"). Hiding one would leak through the other, so both stay
    in the query."""
    out: set[str] = set()
    for a in features:
        for b in features:
            if a is not b and any(contains_phrase(fb, fa) for fa in value_forms(a.value, a.field) for fb in value_forms(b.value, b.field)):
                out.update((a.field, b.field))
    return out


def split_features(
    features: list[Feature], intent: IntentSpec, config: SplitConfig, rng: random.Random,
    keep_in_query: frozenset[str] = frozenset(),
) -> Assignment:
    """Assign features to sources.

    Args:
        features: output of `select_features` (order matters only through rng).
        intent: gives `query_fields` and the feature_combination minimums.
        config: ratios and minimums.
        rng: the candidate's seeded generator.
        keep_in_query: fields that must stay in the query (e.g. the ones chosen to be stated
            through an implicit cue).

    Returns:
        An Assignment whose counts meet every minimum.

    Raises:
        PartitionInfeasible: too few features, or too few allowed in persona / clarification.
    """
    n = len(features)
    need = config.min_query + config.min_persona + config.min_clarification
    entangled = entangled_fields(features)
    fixed, free = [], []
    for f in features:
        pinned = (f.kind == "entity" or f.field in intent.query_fields or f.field in entangled
                  or f.field in keep_in_query)
        (fixed if pinned else free).append(f)
    # feature_combination: keep enough detail features for the query before filling hidden sources.
    reserved: list[Feature] = []
    if intent.min_query_attributes:
        details = [f for f in free if f.kind == "detail"]
        rng.shuffle(details)
        # Persona places are the scarcest, so reserve fields the persona cannot take first.
        details.sort(key=lambda f: "persona" in f.sources)
        have = sum(1 for f in fixed if f.kind == "detail")
        reserved = details[: max(0, intent.min_query_attributes - have)]
        free = [f for f in free if f not in reserved]
    n_persona = max(config.min_persona, math.floor(n * config.persona_ratio))
    n_clar = max(config.min_clarification, math.floor(n * config.clarification_ratio))
    persona_pool = [f for f in free if "persona" in f.sources]
    rng.shuffle(persona_pool)
    # Fields that only the persona (besides the query) can hide go first, leaving the others for clarification.
    persona_pool.sort(key=lambda f: "clarification" in f.sources)
    persona = persona_pool[:n_persona]
    clar_pool = [f for f in free if "clarification" in f.sources and f not in persona]
    rng.shuffle(clar_pool)
    if intent.min_query_attributes:
        clar_pool.sort(key=lambda f: f.kind == "detail")  # numeric bounds first: attributes stay in the query
    clarification = clar_pool[:n_clar]
    query = [f for f in features if f not in persona and f not in clarification]
    evidence = {
        "features": n,
        "needed": need,
        "persona_allowed": len(persona_pool),
        "clarification_allowed": len([f for f in free if "clarification" in f.sources]),
        "pinned_to_query": len(fixed) + len(reserved),
        "entangled": sorted(entangled),
        "fields": [f.field for f in features],
    }
    if n < need:
        raise PartitionInfeasible(f"{n} features, {need} needed for {config.min_query}/"
                                  f"{config.min_persona}/{config.min_clarification}", evidence)
    if len(persona) < config.min_persona or len(clarification) < config.min_clarification:
        raise PartitionInfeasible(
            f"persona got {len(persona)} (min {config.min_persona}), clarification got "
            f"{len(clarification)} (min {config.min_clarification})", evidence)
    if len(query) < config.min_query:
        raise PartitionInfeasible(f"query got {len(query)} features (min {config.min_query})", evidence)
    q_details = [f for f in query if f.kind == "detail"]
    if len(q_details) < intent.min_query_attributes or len({f.field for f in q_details}) < intent.min_query_fields:
        raise PartitionInfeasible(
            f"query has {len(q_details)} attribute constraints over {len({f.field for f in q_details})} fields; "
            f"{intent.name} needs {intent.min_query_attributes} over {intent.min_query_fields}", evidence)
    return Assignment(query=query, persona=persona, clarification=clarification)
