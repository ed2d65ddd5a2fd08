"""Stage 2, feature extraction: a catalog product -> typed candidate features under canonical fields.

A feature is a requirement the target truly meets, with a clean value a shopper could state:
detail values are cleaned (HTML, "See more", placeholders, URLs, ASINs, emoji, variant codes,
snake_case codes, overlong or repeated blurbs are dropped — reference §4.2 and §15.9) and
multi-valued fields are split into options; numeric fields become bounds whose inclusiveness
is explicit, so a price exactly on a bucket passes its own rubric (fixes reference §15.10).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ecombench.catalog.details import (
    clean_value,
    detail_options,
    detail_values,
    split_options,
    strip_markup,
)
from ecombench.catalog.devices import device_holds, device_models, names_device
from ecombench.catalog.facts import STATED, page_values
from ecombench.catalog.product_type import product_type
from ecombench.catalog.type_stats import MIN_VALUE_PRODUCTS, TypeStats
from ecombench.catalog.type_vocabulary import TypeVocabulary
from ecombench.stages.persona_fit import who_for, young_wearer_fact
from ecombench.stages.product_naming import names_department
from ecombench.stages.reviews import extract_opinions
from ecombench.stages.type_values import type_value_problem
from ecombench.stages.vocabulary import MIN_VALUE_SUPPORT, usable_values
from ecombench.stages.vouchers import generate_budget
from ecombench.tables.fields import FieldSpec, FieldTable
from ecombench.tables.intents import IntentSpec
from ecombench.text import contains_phrase, normalize

if TYPE_CHECKING:
    pass

PRICE_BUCKETS = (5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300, 500, 1000)
RATING_COUNT_BUCKETS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
MIN_RATING_THRESHOLD = 3.0
# Page parts that alone make no requirement: a value only the description states. Measured on three reviewed
# builds of the shared catalog (benchmarks/RESULTS.md, 2026-12-07): rubrics on a description-only fact were true
# 12 of 23 times (the rest a disclaimer's "Manual measurement", a list of styles a curtain "can easy match", the
# button covers' "touch-sensitive"), on a fact of one feature bullet alone 62 of 73.
DESCRIPTION_ONLY = frozenset({"description"})


@dataclass(frozen=True)
class Feature:
    """A candidate requirement the target satisfies.

    Attributes:
        field: rubric field ("details.Color", "price", "title", ...).
        kind: "detail", "numeric" or "entity" (decides the rubric type).
        value: the clean value (str) or, for numeric fields, a bound dict
            {"min"|"max": float, "min_inclusive"|"max_inclusive": bool}.
        sources: info sources the field table allows for this field.
        raw: the raw catalog value it came from (provenance).
        evidence: ids backing the feature (review ids for an opinion).

    Kinds: "detail", "numeric", "entity", "negative" (value: excluded values), "budget"
    (value: a schemas Budget dict) and "opinion" (value: a phrase from the target's reviews).
    """

    field: str
    kind: str
    value: Any
    sources: tuple[str, ...]
    raw: str
    evidence: tuple[str, ...] = ()


MAX_RAW_CHARS = 200



def price_bound(price: float) -> dict[str, Any]:
    """Price cap: the smallest bucket above the price (inclusive), above $1000 the next multiple of 50 above it.

    Strictly above: a shopper's round budget is seldom the product's exact price, and a cap at it tells an agent
    the answer ("$20 or less" for a product at $20.00 read as set at the target's own price by a reviewer).
    """
    cap = next((b for b in PRICE_BUCKETS if price < b), None)
    if cap is None:
        cap = (math.floor(price / 50) + 1) * 50
    return {"max": float(cap), "max_inclusive": True}


def rating_bound(average_rating: float) -> dict[str, Any]:
    """Rating floor: the rating rounded down to a half star (inclusive)."""
    return {"min": max(1.0, math.floor(average_rating * 2) / 2), "min_inclusive": True}


def rating_count_bound(rating_number: int) -> dict[str, Any] | None:
    """Popularity floor: the largest bucket below rating_number (inclusive), or None at 10 or fewer.

    Strictly below, as `price_bound` is strictly above: "at least 50 ratings" of a product with exactly 50 sets the
    floor at the target's own count.
    """
    floor = [b for b in RATING_COUNT_BUCKETS if b < rating_number]
    return {"min": float(floor[-1]), "min_inclusive": True} if floor else None


def _page_values(product: dict[str, Any], spec: FieldSpec) -> list[str]:
    """The values the product's page states for the field, strongest evidence first.

    From its facts when it has them (ecombench.catalog.facts; confirmed by two parts of the page, then by its
    label, then by its title, then by one bullet), else its raw `details` values. A value only the description
    states is no requirement to draw (`DESCRIPTION_ONLY`); it still counts wherever the page is read for an answer.
    """
    facts = product.get("facts")
    if facts is None:
        return detail_values(product, spec)
    return [f["value"] for f in sorted(_drawable(facts, spec), key=_strength)]


def _drawable(facts: list[dict[str, Any]], spec: FieldSpec) -> list[dict[str, Any]]:
    """The facts of the field that the page states somewhere else than in its description alone.

    Of a field whose label alone says too little (`FieldSpec.label_alone` false: Occasion), also somewhere else
    than in its label alone.
    """
    alone = DESCRIPTION_ONLY if spec.label_alone else DESCRIPTION_ONLY | {"details"}
    return [f for f in facts if f["field"] == spec.name and f["polarity"] == STATED
            and set(f.get("sources") or [f["source"]]) - alone]


def _labelled_only(product: dict[str, Any], spec: FieldSpec) -> frozenset[str]:
    """The field's values that only the product's details label states (none for a product without facts)."""
    return frozenset(f["value"] for f in _drawable(product.get("facts") or [], spec)
                     if set(f.get("sources") or [f["source"]]) == {"details"})


def _strength(fact: dict[str, Any]) -> tuple[int, str]:
    sources = list(fact.get("sources") or [fact["source"]])
    rank = 0 if len(sources) >= 2 else 1 if "details" in sources else 2 if "title" in sources else 3
    return rank, fact["value"]


def _page_options(product: dict[str, Any], spec: FieldSpec, values: list[str],
                  table: FieldTable) -> tuple[list[str] | None, str]:
    """(distinct clean options of the field, the first cleaning problem), as `_clean_options` for raw labels.

    Facts are clean already: the strongest ones are the options (those confirmed by two parts of the page when
    there are any, else every stated value; of a compatibility field, those naming a device model when any does);
    raw labels are cleaned here.
    """
    facts = product.get("facts")
    if facts is None:
        return _clean_options(spec, values, table)
    ranked = sorted(_drawable(facts, spec), key=_strength)
    if spec.compatibility and any(names_device(f["value"]) for f in ranked):
        ranked = [f for f in ranked if names_device(f["value"])]  # the device it fits before a series or a kind
        best = _strength(ranked[0])[0]
        pool = [f["value"] for f in facts if f["polarity"] == STATED and f["field"] in table.fields
                and table.fields[f["field"]].compatibility]
        spelled = [_full_spelling(f["value"], pool) for f in ranked if _strength(f)[0] == best]
        return list(dict.fromkeys(spelled)), ""
    best = _strength(ranked[0])[0]
    return [f["value"] for f in ranked if _strength(f)[0] == best], ""


def _full_spelling(value: str, spellings: list[str]) -> str:
    """The page's shortest spelling of the same device that names its series ("S10" -> "Galaxy S10"), else `value`.

    `spellings` are the values the page states for any compatibility field.
    """
    same = [v for v in spellings if device_holds(v, value) and device_holds(value, v)]
    return min(same or [value], key=lambda v: (not all(d.series for d in device_models(v)), len(v), v))


def _clean_options(spec: FieldSpec, raws: list[str], table: FieldTable) -> tuple[list[str] | None, str]:
    """(distinct clean options of the first raw value, the first cleaning problem); (None, "blurb") for a blurb."""
    text = strip_markup(raws[0])
    if len(text) > MAX_RAW_CHARS:
        return None, "blurb"
    options: list[str] = []
    reason = ""
    for opt in split_options(spec, text):
        clean, why = clean_value(spec, opt, table)
        if clean and clean.lower() not in {o.lower() for o in options}:
            options.append(clean)
        reason = reason or why
    return options, reason


def extract_features(
    product: dict[str, Any], intent: IntentSpec, table: FieldTable, rng: random.Random, *,
    vocabulary: dict[str, dict[str, list[str]]] | None = None, reviews: list[dict[str, Any]] | None = None,
    opinions: list[dict[str, Any]] | None = None, value_support: Callable[[str, str], int] | None = None,
    min_value_support: int = MIN_VALUE_SUPPORT, rejected_values: dict[str, dict[str, str]] | None = None,
    clear_opinions: bool = False, type_vocabulary: TypeVocabulary | None = None,
    type_stats: TypeStats | None = None, opinion_phrases: dict[str, int] | None = None,
) -> tuple[list[Feature], dict[str, str]]:
    """Typed candidate features of one product for one intent.

    One feature per canonical field: the first raw key's clean options, one option drawn with
    `rng` when a multi-option field lists several. Numeric features follow the intent's
    `numeric_fields`. The entity (product type from the title) is included when found.

    Args:
        product: a products.parquet row as a dict (details as [{"key","raw_key","value"}]).
        intent: the intent being built.
        table: the field table.
        rng: the candidate's seeded generator.
        vocabulary: frequent values per category and field (`field_vocabulary`), for the
            excluded values of negative features.
        reviews: the target's reviews, for review opinions.
        opinions: review opinions ({"phrase", "review_ids"}) made elsewhere (the LLM writer,
            ecombench.validation.opinions); None extracts them from `reviews` (ecombench.stages.reviews).
        value_support: (rubric field, value) -> how many catalog products carry it (CatalogIndex.support);
            when it also has `prefetch([(rubric field, value), ...])`, every option's count is asked through
            that first, at once (ecombench.pipeline.candidate.ValueSupport). With it, options a shopper would not
            state are dropped before the draw
            (ecombench.stages.vocabulary.value_problems: placeholders, the product's own model, packaging,
            values fewer than `min_value_support` products carry), and so are options the product type
            implies or does not take (ecombench.stages.type_values.type_value_problem: Room Type "Kitchen" of a kitchen
            rug, Shape "Round" of a mug, Age Range "Adult" of a chair).
            None keeps the old behaviour.
        min_value_support: see ecombench.stages.vocabulary.MIN_VALUE_SUPPORT.
        rejected_values: when given, filled with {rubric field: {value: reason}} of the dropped options.
        clear_opinions: extracted opinions only from review clauses that state a clear, complete opinion
            (ecombench.stages.reviews.clear_opinion; template-v2). False keeps template-v1's opinions.
        type_vocabulary: the catalog's product-type vocabulary (ecombench.catalog.type_vocabulary); None types
            the product by the reviewed override's words alone (`TypeVocabulary.of_override`).
        type_stats: the catalog's per-type statistics (ecombench.catalog.type_stats); with them, options that the
            product's type implies, fields its products rarely state and values absent from its products' pages
            are dropped (`TypeStats.problem`), except the device a device accessory fits (`TypeStats.fits_devices`),
            where a compatibility option naming a device model is kept and those naming none are dropped. A value
            only the details label states that fewer than `MIN_VALUE_PRODUCTS` products of the type state has no
            text share of its own to judge it by and is dropped too ("rare_label_only"): on the shared data such labels
            were more often a seller's slip (Pattern "Checkered" of a damask shower curtain, Material "Metal" of a
            fabric one, Age "Baby" of a queen comforter set) than a trait; brands and measures are rare by nature and
            stay.
        opinion_phrases: the catalog's review opinion phrases (ecombench.stages.reviews.learn_opinion_phrases);
            with them, a review opinion is one of those its reviews state, not a whole clause.

    Returns:
        (features, {field: reason} for every field present but unusable). Intent-specific
        features (negative, budget, opinions) follow the intent's settings; when they cannot be
        made, "budget" -> "no_price" or "review" -> "no_reviews" appears among the reasons; "wearer" ->
        "young_wearer_rare_for_type" when the title or label says the product is a child's
        (ecombench.stages.persona_fit.young_wearer_fact), its type's products state that field too seldom, and no
        feature drawn says it is a child's.
    """
    features: list[Feature] = []
    dropped: dict[str, str] = {}

    vocabulary_of_types = type_vocabulary or TypeVocabulary.of_override()
    entity = product_type(product, vocabulary_of_types, table.fields["title"].placeholders)  # what the product is
    if entity:
        spec = table.fields["title"]
        features.append(Feature("title", "entity", entity, spec.sources, product.get("title") or ""))
    cleaned = [(spec, raws, *_page_options(product, spec, raws, table)) for spec in table.detail_fields()
               if (raws := _page_values(product, spec))]
    compat = frozenset(spec.name for spec in table.detail_fields() if spec.compatibility)
    device_fields = frozenset(spec.rubric_field for spec in table.detail_fields() if spec.compatibility)
    names_a_device = any(names_device(o) for s, _, options, _ in cleaned if s.compatibility for o in options or [])
    devices = [v for s, raws, _, _ in cleaned if s.compatibility for v in raws]  # every device the page names
    young = young_wearer_fact(product)
    young_rare = False  # the child's age or department the title or label states is on a field rare for the type
    prefetch = getattr(value_support, "prefetch", None)
    if prefetch is not None:  # every option's support asked at once (one partition pass, pipeline/batched.py)
        prefetch([(spec.rubric_field, o) for spec, _, options, _ in cleaned for o in options or []])
    for spec, raws, options, reason in cleaned:
        if options is None:
            dropped[spec.rubric_field] = reason
            continue
        if spec.catch_all and len(set(page_values(product, spec))) >= spec.catch_all:
            dropped[spec.rubric_field] = "catch_all"  # "for living room, bedroom, office": it goes anywhere
            continue
        labelled_only = _labelled_only(product, spec)
        if options and (value_support is not None or rejected_values is not None):
            options, bad = usable_values(spec, options, value_support, product, min_value_support)
            if entity:  # "a kitchen rug for the kitchen", "a coffee mug to use for coffee": the type says it already
                bad.update({o: why for o in options if (why := type_value_problem(spec.rubric_field, o, entity))})
            # "a throw pillow cover for the home" under "Home & Kitchen": the department says it already
            bad.update({o: "names_department" for o in options
                        if o not in bad and names_department(spec.rubric_field, o, product.get("categories"),
                                                              product.get("main_category"))})
            device = spec.compatibility and (type_stats is None or type_stats.fits_devices(entity, compat))
            if entity and type_stats is not None and not device:
                problems = {o: why for o in options if o not in bad and (why := type_stats.problem(entity, spec.name,
                                                                                                   o))}
                if young is not None and young[0] == spec.name and problems.get(young[1]) == "field_rare_for_type":
                    young_rare = True
                bad.update(problems)
                if spec.name != "Brand" and not spec.measure:  # brands and sizes are rare by nature
                    bad.update({o: "rare_label_only" for o in options if o not in bad and o in labelled_only
                                and (n := type_stats.value_products(entity, spec.name, o)) is not None
                                and n < MIN_VALUE_PRODUCTS})
            if spec.not_wanted:  # "Hand Wash Only": what an owner may not do, never what a shopper asks for
                bad.update({o: "not_wanted" for o in options if o not in bad
                            and any(contains_phrase(o, w) for w in spec.not_wanted)})
            if not spec.compatibility and spec.name != "Brand":
                # a word of the device it fits is no theme or use of its own ("Galaxy" of a Galaxy J3 case)
                bad.update({o: "names_device" for o in options
                            if o not in bad and any(contains_phrase(d, o) for d in devices)})
            if device and names_a_device:
                # the device it fits, not a kind, series or fragment the page also names ("OnePlus" of a OnePlus
                # 10 Pro case, "12 Pro" beside "iPhone 12 Pro")
                bad.update({o: "not_a_device_model" for o in options if o not in bad and not names_device(o)})
            options = [o for o in options if o not in bad]
            if bad and rejected_values is not None:
                rejected_values[spec.rubric_field] = bad
            reason = reason or next(iter(bad.values()), "")
        if not options:
            dropped[spec.rubric_field] = reason or "empty"
            continue
        if spec.compatibility and any(f.field in device_fields for f in features):
            # one shopper owns one device: a case for the iPhone X and XS is wanted for one of them
            dropped[spec.rubric_field] = "one_device"
            continue
        value = options[0] if len(options) == 1 else rng.choice(options)
        features.append(Feature(spec.rubric_field, "detail", value, spec.sources, raws[0]))
    if young_rare and not any(isinstance(f.value, str) and who_for(f.field, f.value) for f in features):
        # A child's product whose type's pages seldom say whom they are for, and no other field says it: asking for
        # a child's one fails the peers that never say so, and leaving it out drops what the product is.
        dropped["wearer"] = "young_wearer_rare_for_type"
    numeric = {
        "price": lambda p: price_bound(p["price"]) if p.get("price") else None,
        "average_rating": lambda p: rating_bound(p["average_rating"])
        if (p.get("average_rating") or 0) >= MIN_RATING_THRESHOLD and (p.get("rating_number") or 0) >= 5 else None,
        "rating_number": lambda p: rating_count_bound(p["rating_number"]) if p.get("rating_number") else None,
    }
    for name in intent.numeric_fields:
        bound = numeric[name](product)
        if bound is not None:
            features.append(Feature(name, "numeric", bound, table.fields[name].sources, str(product.get(name))))
    features = _drop_repeated_values(features, dropped)
    if intent.negatives:
        features = _make_negatives(features, product, intent, table, rng, vocabulary or {},
                                   entity if type_stats is not None else None, type_stats)
    if intent.voucher:
        budget = generate_budget(product.get("price") or 0.0, rng)
        if budget is None:
            dropped["budget"] = "no_price"
        else:
            features.append(Feature("budget", "budget", budget, table.fields["budget"].sources,
                                    str(product.get("price"))))
    if intent.review_opinions:
        # An LLM build passes the opinions its model phrased (already checked against the reviews).
        if opinions is None:
            opinions = extract_opinions(reviews or [], intent.review_opinions, rng, clear_only=clear_opinions,
                                        catalog_phrases=opinion_phrases)
        if len(opinions) < intent.review_opinions:
            dropped["review"] = "no_reviews"
        for op in opinions:
            features.append(Feature("review", "opinion", op["phrase"], table.fields["review"].sources, op["phrase"],
                                    tuple(op["review_ids"])))
    return features, dropped


def _drop_repeated_values(features: list[Feature], dropped: dict[str, str]) -> list[Feature]:
    """Keep one feature per value: "Floral" as both pattern and style would say the same thing twice."""
    seen: set[str] = set()
    out = []
    for f in features:
        if isinstance(f.value, str):
            key = normalize(f.value)
            if key in seen:
                dropped[f.field] = "same_value_as_another_field"
                continue
            seen.add(key)
        out.append(f)
    return out


def _overlaps(value: str, options: list[str], table: FieldTable) -> bool:
    return any(contains_phrase(o, s) or contains_phrase(s, o) for o in options for s in table.spellings(value))


def _same_kind(value: str, options: list[str], spec: FieldSpec, table: FieldTable) -> bool:
    """Whether `value` is a kind of one of `options` or the reverse (FieldSpec.kinds: "Plastic" and "Polycarbonate")."""
    for broad, narrower in spec.kinds:
        kinds = list(narrower)
        if _overlaps(value, [broad], table) and any(_overlaps(o, kinds, table) for o in options):
            return True
        if _overlaps(value, kinds, table) and any(_overlaps(o, [broad], table) for o in options):
            return True
    return False


def page_text(product: dict[str, Any]) -> str:
    """The target's title, bullets and description as one normalised text with a space at each end.

    The build's candidates carry it as "page_text" (ecombench.catalog.snapshot.load_page_texts); else it is made
    from the product's "title", "features" and "description".
    """
    if product.get("page_text") is not None:
        return str(product["page_text"])
    parts = [product.get("title") or "", *(product.get("features") or []), *(product.get("description") or [])]
    return f" {normalize(' '.join(str(p) for p in parts))} "


def describes_target(value: str, product: dict[str, Any], spec: FieldSpec, table: FieldTable,
                     mine: list[str] | None = None, text: str | None = None) -> bool:
    """Whether excluding `value` of field `spec` would rule out the target itself, as a shopper reads it.

    True when the value overlaps one the target's page states (in any spelling) or one its labels give, even a
    label the page contradicts (a reader sees "Form Factor: Bumper" on the page of B06XZTVYH9 and reads "any form
    factor but bumper" as ruling it out), is a kind of one or what one is a kind of (FieldSpec.kinds: "Plastic" of
    a TPU case), or the target's title, bullets or description say it ("Funny" of a meme case whose bullet reads
    "Funny trick or treat design"). `mine` (`page_values`) and `text` (`page_text`) may be passed when already
    computed; `product` is a products.parquet row (its "details" a list of key/value records).
    """
    mine = [*(page_values(product, spec) if mine is None else mine), *detail_options(product, spec)]
    text = page_text(product) if text is None else text
    return (_overlaps(value, mine, table) or _same_kind(value, mine, spec, table)
            or any(f" {n} " in text for sp in table.spellings(value) if (n := normalize(sp))))


def _make_negatives(features: list[Feature], product: dict[str, Any], intent: IntentSpec, table: FieldTable,
                    rng: random.Random, vocabulary: dict[str, dict[str, list[str]]], entity: str | None = None,
                    type_stats: TypeStats | None = None) -> list[Feature]:
    """Turn 1..intent.negatives detail features into negative ones.

    The excluded values are real values of the same field among products of the target's
    main_category (so the exclusion rules out products a shopper would meet), never the target's own
    value, a value contained in it or one containing it, in any spelling (fixes reference
    §15.13, whose negative rubrics could be empty), a kind of it or what it is a kind of ("Plastic" of a TPU case,
    FieldSpec.kinds), nor a value its title, bullets or description say ("Funny" of a "funny trick or treat"
    meme case: reviewers read the exclusion as ruling out the target). With the type's statistics (`type_stats`, of
    the product type `entity`), only values the type's pages put in words (`TypeStats.labels_borne_out`): no page of
    a phone case says "basic case" or "flip" (Form Factor labels of 32 and 49 cases, none in their text), so neither
    shopper nor agent can tell whether a case is one, and reviewers read "any form factor but basic case or flip" of
    a slim clear case as ruling out the target; and only values products of the type state
    (`TypeStats.met_in_type`): no shower curtain of the catalog is metal; never words of a device the type's products
    fit, but for a brand (`TypeStats.names_a_fitted_device`: "any theme but Galaxy" of an iPhone case; "any brand but
    Samsung" stays).
    """
    local = vocabulary.get(product.get("main_category") or "(none)", {})
    compat = frozenset(s.name for s in table.detail_fields() if s.compatibility)
    pool = [f for f in features if f.kind == "detail" and f.field.removeprefix("details.") in intent.negative_fields]
    rng.shuffle(pool)
    want = rng.randint(1, intent.negatives)
    swaps: dict[str, Feature] = {}
    for f in pool:
        if len(swaps) == want:
            break
        spec = table.by_rubric_field(f.field)
        mine, text = page_values(product, spec), page_text(product)
        others = [v for v in local.get(spec.name, []) if not describes_target(v, product, spec, table, mine, text)
                  and (type_stats is None or (type_stats.labels_borne_out(entity, spec.name, v)
                                              and type_stats.met_in_type(entity, spec.name, v)
                                              and (spec.name == "Brand"  # a maker's cases: "any brand but Samsung"
                                                   or not type_stats.names_a_fitted_device(entity, compat, v))))]
        # one spelling of a value, not two: "any material but 100% cotton or cotton" read as unnatural
        distinct: list[str] = []
        for v in others:
            if not any(contains_phrase(v, k) or contains_phrase(k, v) for k in distinct):
                distinct.append(v)
        if len(distinct) < 2:
            continue
        excluded = sorted(rng.sample(distinct[:10], 2), key=str.lower)
        swaps[f.field] = Feature(f.field, "negative", excluded, f.sources, f.raw)
    return [swaps.get(f.field, f) if f.kind == "detail" else f for f in features]


