"""Stage 3, three-source split: assign each feature to the query, the hidden persona or clarification.

Rules (paper §3.3; reference §6, whose duplication bug §15.14 cannot happen here because each
feature is placed exactly once):
- the entity (product type) and the intent's `query_fields` always go to the query;
- a feature whose value is stated inside another feature's value (the entity phrase, "Blue" ink
  beside "Blue" colour, a price cap of 20 beside "at least 20 ratings") stays in the query, since
  hiding it would leak through the other;
- persona and clarification take features only from fields the field table allows there
  (stable preferences such as brand or colour suit the persona; specs suit clarification);
- sizes follow the ratios with minimums (defaults 50/25/25, at least 4/2/2);
- the hidden sources together hold at most `max_hidden_thresholds` (default 1) numeric bounds (price,
  rating, rating count), and the search prefers placements hiding fewer: a person keeps the device, the
  size, the material or the use to themselves, not mostly floors;
- within those rules the hidden sources take the most selective features (fewest catalog
  products satisfy them alone) and the query the least selective, so the persona and
  clarification narrow the choice instead of confirming it; the query always keeps a
  product type or an attribute, something a search can use.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import product as placements

from ecombench.schemas.config import SplitConfig
from ecombench.stages.features import Feature
from ecombench.stages.value_forms import value_forms
from ecombench.tables.intents import IntentSpec
from ecombench.text import contains_phrase


@dataclass
class Assignment:
    """Features per info source, in the order rubric ids are given (query, persona, clarification).

    `optional` lists the query's attributes and numeric bounds that no rule keeps there (not the
    entity, an intent query field, an entangled or implicit value, nor an attribute reserved for
    a query minimum), most selective first: what `leave_out_most_selective` may drop.
    """

    query: list[Feature] = field(default_factory=list)
    persona: list[Feature] = field(default_factory=list)
    clarification: list[Feature] = field(default_factory=list)
    optional: list[Feature] = field(default_factory=list)
    # Whether the answer-set-driven search found a placement meeting every goal of its plan (None: no plan).
    planned: bool | None = None

    def replace(self, old: Feature, new: Feature) -> None:
        """Put `new` where `old` is (whichever source holds it)."""
        for source in (self.query, self.persona, self.clarification, self.optional):
            if old in source:
                source[source.index(old)] = new

    def counts(self) -> dict[str, int]:
        """Features per source: query, persona, clarification."""
        return {"query": len(self.query), "persona": len(self.persona), "clarification": len(self.clarification)}

    def leave_out_most_selective(self, config: SplitConfig) -> Feature | None:
        """Drop the query's most selective optional feature from the task, if the query stays big enough.

        For a query that pins the target (stage 4, `query_pins_target`): the feature is left out of
        the task altogether, not moved to a hidden source, so the hidden sources keep their ratio
        places. The query keeps at least `config.min_query` features and at least its ratio share
        (`query_ratio` of the features left, i.e. as many as persona and clarification together at
        50/25/25).

        Returns:
            The feature left out, or None when nothing may go (the assignment is unchanged).
        """
        hidden = len(self.persona) + len(self.clarification)
        share = (math.ceil(hidden * config.query_ratio / (1 - config.query_ratio) - 1e-9)
                 if config.query_ratio < 1 else 0)
        if not self.optional or len(self.query) - 1 < max(config.min_query, share):
            return None
        dropped = self.optional.pop(0)
        self.query.remove(dropped)
        return dropped


class PartitionInfeasible(ValueError):
    """No assignment meets the minimums; `evidence` says what was available, `reason` is the reason code."""

    reason = "partition_infeasible"

    def __init__(self, message: str, evidence: dict):
        super().__init__(message)
        self.evidence = evidence


class QueryNotSearchable(PartitionInfeasible):
    """The query would name neither a product type nor an attribute: nothing a search tool can use."""

    reason = "query_not_searchable"


# The weight of a field no product of the type states (salience 0) in select_features' draw: it still can be drawn.
SALIENCE_FLOOR = 0.05

def select_features(features: list[Feature], intent: IntentSpec, rng: random.Random,
                    salience: Mapping[str, float] | None = None, required: frozenset[str] = frozenset()
                    ) -> list[Feature]:
    """At most `intent.max_features` features: entity, intent-required and `required` fields first, then the rest.

    The rest are drawn with rng; with `salience` ({rubric field: weight >= 0}, what the product type's shoppers
    state: ecombench.catalog.type_stats.TypeStats.salience), a weighted draw without replacement (each key
    u ** (1 / weight), Efraimidis and Spirakis 2006), so salient fields come first more often but every field can.
    """
    fixed = [f for f in features
             if f.kind in ("entity", "negative", "budget", "opinion") or f.field in intent.query_fields
             or f.field in required]
    rest = [f for f in features if f not in fixed]
    if salience is None:
        rng.shuffle(rest)
    else:
        keys = [rng.random() ** (1.0 / (SALIENCE_FLOOR + salience.get(f.field, 0.0))) for f in rest]
        rest = [f for _, f in sorted(zip(keys, rest, strict=True), key=lambda kf: -kf[0])]
    if intent.min_query_attributes:
        # feature_combination needs enough detail features; draw them before numeric ones.
        rest.sort(key=lambda f: f.kind != "detail")
    return fixed + rest[: max(0, intent.max_features - len(fixed))]


def entangled_fields(features: list[Feature]) -> set[str]:
    """Fields whose value is stated inside another feature's value.

    For example "Blue" colour and "Blue" ink, price cap 20 and "at least 20 ratings". Hiding one
    would leak through the other, so both stay in the query.
    """
    out: set[str] = set()
    for a in features:
        for b in features:
            if a is not b and any(contains_phrase(fb, fa) for fa in value_forms(a.value, a.field)
                                  for fb in value_forms(b.value, b.field)):
                out.update((a.field, b.field))
    return out


def split_features(
    features: list[Feature], intent: IntentSpec, config: SplitConfig, rng: random.Random,
    keep_in_query: frozenset[str] = frozenset(), support: Mapping[str, int] | None = None,
    plan: SplitGoals | None = None, required: frozenset[str] = frozenset(),
) -> Assignment:
    """Assign features to sources: the most selective hidden, the least selective in the query.

    Hidden information must matter: when the query already states the features that
    single out the target, the persona and clarification only confirm it and an agent that never
    consults them still succeeds. So, within the rules of the module docstring, persona and
    clarification take the features with the smallest support (fewest catalog products satisfy
    them alone), and the query keeps the ones with the largest. The hidden places are filled
    greedily in that order, taking a feature whenever the persona/clarification places can still
    hold everything taken so far (a transversal matroid, on which greedy is optimal). Ties, and
    every feature when `support` is None, are ordered by a shuffle with `rng`.

    The query also keeps something a search can use: when the entity (product type) is missing,
    the least selective attribute stays in the query (a query stating only a price, a rating and
    review opinions names nothing any tool can find; sandbox finding on review_driven).

    Args:
        features: output of `select_features`.
        intent: gives `query_fields` and the feature_combination minimums.
        config: ratios and minimums.
        rng: the candidate's seeded generator (sha256-seeded, ecombench.hashing.rng).
        keep_in_query: fields that must stay in the query (e.g. the ones chosen to be stated
            through an implicit cue).
        plan: per-feature answer-set masks and goals. When given, the hidden places are
            not filled greedily by support but by searching every placement of the free features for
            one where the query alone, the task without the persona and the task without the
            clarification each leave enough products and the whole task few (`_search_hidden`):
            selectivity from combining ordinary requirements, each hidden source needed.
        support: rubric field -> how many catalog products satisfy that feature's rubric alone
            (ecombench.answers.index.CatalogIndex.support); a field absent from it counts as the
            least selective. One feature per field, except query-only review opinions.
        required: fields the task keeps whatever the plan (the device an accessory fits): never left out of the
            task, never among the query's optional features that stage 4 may shed.

    Returns:
        An Assignment whose counts meet every minimum.

    Raises:
        PartitionInfeasible: too few features, or too few allowed in persona / clarification.
        QueryNotSearchable: no entity and no attribute among the features the query may keep.
    """
    n = len(features)
    need = config.min_query + config.min_persona + config.min_clarification
    entangled = entangled_fields(features)
    ranked = _by_support(features, support or {}, rng)  # most selective first
    fixed: list[Feature] = []
    free: list[Feature] = []
    for f in ranked:
        # A negative feature is the intent's stated exclusion ("explicitly excluding", intents.toml): it sits in
        # the query (8 of 66 negative_constraint tasks stated none there when it could hide).
        pinned = (f.kind in ("entity", "negative") or f.field in intent.query_fields or f.field in entangled
                  or f.field in keep_in_query)
        (fixed if pinned else free).append(f)
    # Attributes the query must keep: feature_combination's minimum, or one searchable value when
    # no product type names what is sought. The least selective ones, so the hidden keep the rest.
    reserved: list[Feature] = []
    have = sum(1 for f in fixed if f.kind == "detail")
    want = intent.min_query_attributes
    if not want and not any(f.kind == "entity" for f in fixed):
        want = 1
    if want > have:
        details = [f for f in free if f.kind == "detail"]
        reserved = details[max(0, len(details) - (want - have)):]  # the least selective ones
        free = [f for f in free if f not in reserved]
    n_persona = max(config.min_persona, math.floor(n * config.persona_ratio))
    n_clar = max(config.min_clarification, math.floor(n * config.clarification_ratio))
    left_out: list[Feature] = []
    planned = None
    if plan is None:
        persona, clarification = _fill_hidden(free, n_persona, n_clar, config)
    else:
        persona, clarification, left_out, planned = _search_hidden(features, fixed + reserved, free, n_persona,
                                                                   n_clar, config, plan, intent.min_query_attributes,
                                                                   required)
    query = [f for f in features if f not in persona and f not in clarification and f not in left_out]
    persona.sort(key=features.index)
    clarification.sort(key=features.index)
    evidence = {
        "features": n,
        "needed": need,
        "persona_allowed": len([f for f in free if "persona" in f.sources]),
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
    if not q_details and not any(f.kind == "entity" for f in query):
        raise QueryNotSearchable("the query would state neither a product type nor an attribute (the target's "
                                 "title names no category and it has no usable attribute)", evidence)
    if len(q_details) < intent.min_query_attributes or len({f.field for f in q_details}) < intent.min_query_fields:
        raise PartitionInfeasible(
            f"query has {len(q_details)} attribute constraints over {len({f.field for f in q_details})} fields; "
            f"{intent.name} needs {intent.min_query_attributes} over {intent.min_query_fields}", evidence)
    optional = [f for f in free if f in query and f.kind in ("detail", "numeric") and f.field not in required]
    return Assignment(query=query, persona=persona, clarification=clarification, optional=optional, planned=planned)


def _by_support(features: list[Feature], support: Mapping[str, int], rng: random.Random) -> list[Feature]:
    """Features from the most to the least selective; a shuffle with `rng` breaks ties (stable sort)."""
    out = list(features)
    rng.shuffle(out)
    out.sort(key=lambda f: support.get(f.field, math.inf))
    return out


def _fill_hidden(free: list[Feature], n_persona: int, n_clar: int,
                 config: SplitConfig) -> tuple[list[Feature], list[Feature]]:
    """Persona and clarification features: the most selective of `free` that the places can hold.

    Greedy over `free` (most selective first), skipping numeric bounds past `config.max_hidden_thresholds`:
    a feature is taken when everything taken so far still fits — at most `n_persona` that only the persona
    may hide, at most `n_clar` that only clarification may, at most `n_persona + n_clar` in all. Features
    either may hide then go where a minimum is still unmet, then to the persona, then to clarification.

    Returns:
        (persona features, clarification features), each most selective first.
    """
    taken: list[Feature] = []
    only_p = only_c = 0
    for f in free:
        p, c = "persona" in f.sources, "clarification" in f.sources
        if not (p or c) or len(taken) == n_persona + n_clar:
            continue
        if f.kind == "numeric" and sum(t.kind == "numeric" for t in taken) >= config.max_hidden_thresholds:
            continue
        if p and not c and only_p == n_persona:
            continue
        if c and not p and only_c == n_clar:
            continue
        taken.append(f)
        only_p += p and not c
        only_c += c and not p
    persona = [f for f in taken if "clarification" not in f.sources]
    clarification = [f for f in taken if "persona" not in f.sources]
    either = [f for f in taken if "persona" in f.sources and "clarification" in f.sources]
    for f in either:
        if len(clarification) < config.min_clarification and len(persona) >= config.min_persona:
            clarification.append(f)
        elif len(persona) < n_persona:
            persona.append(f)
        else:
            clarification.append(f)
    return persona, clarification


MAX_PLACEMENTS = 4000


@dataclass(frozen=True)
class SplitGoals:
    """What an answer-set-driven split aims at, with each feature's answer-set mask.

    Attributes:
        masks: position of a feature in the `features` list -> bitmask over a fixed list of catalog
            products (bit i set: product i satisfies that feature's rubric); the target is one of them.
        universe: the length of that list (every product the query's fixed requirements leave).
        min_query: products the query alone must leave (min_query_answer_set).
        min_hidden: products the task without the persona, and without the clarification, must each leave.
        max_total: products the whole task may leave (max_answer_set).
        min_division: how many times each hidden source must divide the answer set (min_hidden_division):
            the task without it must leave at least this many times the products the whole task leaves.
    """

    masks: Mapping[int, int]
    universe: int = 0  # how many products the masks' bits stand for
    min_query: int = 3
    min_hidden: int = 2
    max_total: int = 5
    min_division: int = 1
    cap: int = 10  # sizes above this count as this much: past it, more products say no more

    def sizes(self, query: int, persona: int, clarification: int) -> tuple[int, int, int, int]:
        """(query alone, without persona, without clarification, whole task) for three masks."""
        return (query.bit_count(), (query & clarification).bit_count(), (query & persona).bit_count(),
                (query & persona & clarification).bit_count())

    def division(self, no_persona: int, no_clarification: int, total: int) -> float:
        """How many times the weaker hidden source divides the answer set: min(without each) / whole task.

        An ablated oracle that skips that source is right about 1 / division of the time.
        Counted up to twice `min_division` (past it, the search prefers its other goals).
        """
        return min(min(no_persona, no_clarification) / max(total, 1), 2 * self.min_division)

    def met(self, alone: int, no_persona: int, no_clarification: int, total: int) -> bool:
        """Whether sizes (as `sizes` returns them) meet every goal: floors, division and the whole task's bound."""
        return (total <= self.max_total and alone >= self.min_query and no_persona >= self.min_hidden
                and no_clarification >= self.min_hidden
                and min(no_persona, no_clarification) >= self.min_division * max(total, 1))


def _search_hidden(features: list[Feature], pinned: list[Feature], free: list[Feature], n_persona: int, n_clar: int,
                   config: SplitConfig, goals: SplitGoals, min_query_details: int = 0,
                   required: frozenset[str] = frozenset()
                   ) -> tuple[list[Feature], list[Feature], list[Feature], bool | None]:
    """Persona and clarification features chosen by their answer sets, not one by one.

    Every placement of the free features in query / persona / clarification the field table allows,
    with min..n places per hidden source and at most `config.max_hidden_thresholds` numeric bounds hidden, is
    scored by set arithmetic on the masks: first whether it meets every goal (and the floors), then the
    fewest numeric bounds hidden, then how many times the weaker hidden source divides the answer set (`SplitGoals.
    division`: an oracle that skips it guesses among that many times the answer set), then the smaller
    of the two ablated answer sets (each hidden source must cut the products the other sources leave),
    then the query's own answer set, then the hidden places used. `free` comes most selective first
    with rng-shuffled ties, and the first best placement wins, so the result is deterministic for a
    seed. Falls back to the greedy fill when no mask is known for some feature. A free attribute or
    bound may also be left out of the task (the query keeps at least `config.min_query` features and
    `min_query_details` attributes), the fewer the better once the ablated answer sets are as large as
    they can be (up to `goals.cap`); a `required` field never is.

    Returns:
        (persona features, clarification features, features left out of the task, whether that placement
        meets every goal; None when the greedy fill was used).
    """
    pos = {id(f): i for i, f in enumerate(features)}
    if any(pos[id(f)] not in goals.masks for f in pinned + free):
        return (*_fill_hidden(free, n_persona, n_clar, config), [], None)
    everything = (1 << goals.universe) - 1
    base = everything
    for f in pinned:
        base &= goals.masks[pos[id(f)]]
    masks = [goals.masks[pos[id(f)]] for f in free]
    options = [("q",) + (("p",) if "persona" in f.sources else ()) + (("c",) if "clarification" in f.sources else ())
               + (("x",) if f.kind in ("detail", "numeric") and f.field not in required else ()) for f in free]
    pinned_details = sum(f.kind == "detail" for f in pinned)
    numeric = [f.kind == "numeric" for f in free]
    # Past MAX_PLACEMENTS placements, the least selective free features stay in the query (their hiding
    # would narrow least) so the search stays a few milliseconds.
    for i in range(len(options) - 1, -1, -1):
        if math.prod(len(o) for o in options) <= MAX_PLACEMENTS:
            break
        options[i] = ("q",)
    best, best_key = None, None
    undivided = dataclasses.replace(goals, min_division=1)  # the goals without the division
    for choice in placements(*options):
        n_p, n_c, n_x = choice.count("p"), choice.count("c"), choice.count("x")
        if not (config.min_persona <= n_p <= n_persona and config.min_clarification <= n_c <= n_clar):
            continue
        hidden_bounds = (sum(num and where == "p" for num, where in zip(numeric, choice)),
                         sum(num and where == "c" for num, where in zip(numeric, choice)))
        if sum(hidden_bounds) > config.max_hidden_thresholds:
            continue
        if n_x and (len(pinned) + choice.count("q") < config.min_query or pinned_details + sum(
                where == "q" and f.kind == "detail" for where, f in zip(choice, free)) < min_query_details):
            continue
        q, p, c = base, everything, everything
        for where, m in zip(choice, masks):
            if where == "q":
                q &= m
            elif where == "p":
                p &= m
            elif where == "c":
                c &= m
        alone, no_persona, no_clar, total = goals.sizes(q, p, c)
        meets = goals.met(alone, no_persona, no_clar, total)
        # Where no placement divides enough, one meeting the other goals still wins: stage 4 then rejects it for
        # the division (hidden_source_too_weak), not for a floor the search gave up.
        floors = undivided.met(alone, no_persona, no_clar, total)
        key = (meets, floors, -sum(hidden_bounds), total <= goals.max_total, goals.division(no_persona, no_clar, total),
               min(no_persona, no_clar, goals.cap), -n_x, min(alone, goals.cap), n_p + n_c)
        if best_key is None or key > best_key:
            best, best_key = choice, key
    if best is None:
        return (*_fill_hidden(free, n_persona, n_clar, config), [], None)
    persona = [f for f, where in zip(free, best) if where == "p"]
    clarification = [f for f, where in zip(free, best) if where == "c"]
    assert best_key is not None
    return persona, clarification, [f for f, where in zip(free, best) if where == "x"], best_key[0]
