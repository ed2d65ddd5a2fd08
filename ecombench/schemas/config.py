"""Typed settings models that a build config holds and stages read (hashed into the config as JSON)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator


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
    min_query: int = Field(3, ge=1)
    min_persona: int = Field(2, ge=0)
    min_clarification: int = Field(2, ge=0)
    max_hidden_thresholds: int = Field(
        1, ge=0, description="At most this many numeric bounds (price, rating, rating count) among a task's hidden "
                             "requirements, persona and clarification together; with the minimums 2 + 2 that is at "
                             "most a quarter of them. Hidden sources hold what a person keeps to themselves (the "
                             "device, size, material, use), not mostly floors.")

    @model_validator(mode="after")
    def _ratios_sum_to_one(self) -> SplitConfig:
        total = self.query_ratio + self.persona_ratio + self.clarification_ratio
        if abs(total - 1) > 1e-9:
            raise ValueError(f"query, persona and clarification ratios sum to {total:g}, not 1")
        return self


@dataclass(frozen=True)
class TypeRules:
    """The thresholds of the per-type rules (measured and reported: benchmarks/RESULTS.md).

    Attributes:
        implied_share: a value stated by at least this share of a type's products (of those stating the field)
            is implied by the type.
        min_coverage: a field stated by fewer than this share of a type's products is no requirement of it.
        min_products: a type needs this many products for its statistics to decide; smaller types use their
            head noun's, else no rule applies.
        min_in_text: a value (or, for a value fewer than `catalog.type_stats.MIN_VALUE_PRODUCTS` products state, its
            field) that the title, bullets or description of fewer than this share of the type's products stating it
            put in words is no requirement of the type: a label no page text bears out ("Powder Coated" finish of
            vinyl decals).
        min_cue_in_text: a cue describes the product to the agent ("with clean lines and a sleek, up-to-date look"),
            so a value whose labels the page text of fewer than this share of the type's products stating it bears
            out carries a cue only where the target's own title, bullets or description state it: Style "Modern"
            of curtains is put in words by 2 of 17 (a label on a cartoon kids' curtain); Material "Polyester" of
            curtains by 6 of 29. Nor is a value below it excluded ("any form factor but basic case or flip": no
            phone case's page says either).
        min_device_share: a type is a device accessory (its compatibility values are the device it fits, always
            among its requirements) when at least this share of its products name a device model there; for any
            other type a compatibility field follows the rules above ("PC" of a mouse is implied, a phone model
            of a mouse rare).
        margin_z: the shares are estimates from the type's products, so the rules judge their Wilson score bound
            at this many standard errors: a field is stated often enough when the lower bound of its coverage
            reaches min_coverage, a value is implied when the upper bound of its share reaches implied_share.
            0 judges the shares themselves.
    """

    implied_share: float = 0.9
    min_coverage: float = 0.2
    min_products: int = 30
    min_in_text: float = 0.1
    min_cue_in_text: float = 0.15
    min_device_share: float = 0.1
    margin_z: float = 1.0
