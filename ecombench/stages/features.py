"""Stage 2, feature extraction: a catalog product -> typed candidate features under canonical fields.

A feature is a requirement the target truly meets, with a clean value a shopper could state:
detail values are cleaned (HTML, "See more", placeholders, URLs, ASINs, emoji, variant codes,
snake_case codes, overlong or repeated blurbs are dropped — reference §4.2 and §15.9) and
multi-valued fields are split into options; numeric fields become bounds whose inclusiveness
is explicit, so a price exactly on a bucket passes its own rubric (fixes reference §15.10).
"""

from __future__ import annotations

import html
import math
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ecombench.stages.reviews import extract_opinions
from ecombench.stages.vocabulary import MIN_VALUE_SUPPORT, usable_values
from ecombench.stages.vouchers import budget_numbers, generate_budget
from ecombench.tables.fields import FieldSpec, FieldTable
from ecombench.tables.intents import IntentSpec
from ecombench.text import UNIT_ALIASES, contains_phrase, format_number, keywords, normalize, tokens

if TYPE_CHECKING:
    import polars as pl

PRICE_BUCKETS = (5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300, 500, 1000)
RATING_COUNT_BUCKETS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
MIN_RATING_THRESHOLD = 3.0

_TAG = re.compile(r"<[^>]+>")
_SEE_MORE = re.compile(r"(?:…|\.\.\.)?\s*see (?:more|less)\s*$", re.IGNORECASE)
_URL = re.compile(r"https?://|www\.", re.IGNORECASE)
_ASIN = re.compile(r"\bB0[A-Z0-9]{8}\b")
_EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F]")
# A word, a dash, one lower-case letter and digits: "Black-d04", "Color-a212". Upper-case model
# numbers such as "SM-G998" or "HHR-P107" are real values and stay.
_VARIANT_CODE = re.compile(r"\b[A-Za-z]{2,}-[a-z]\d{2,}")
_SNAKE = re.compile(r"[A-Za-z0-9]+_[A-Za-z0-9_]+")
_OPTION_SPLIT = re.compile(r"\s*[,;|]\s*|(?<!\d)\s*/\s*|\s*/\s*(?!\d)")
_NUMERIC_ONLY = re.compile(r"^[\d.,\s]+$")
_REDUNDANT_PREFIX = re.compile(r"^(?:compatible with|compatible for|fits)\s+", re.IGNORECASE)
# A token mixing letters and digits ("UA96", "YX4", "Equ-02"): a model or variant code, not a
# description. Only refused in descriptive fields (colour, style, ...), where specs never need it.
_MIXED_CODE = re.compile(r"\b(?=[A-Za-z-]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]*-?[A-Za-z0-9]*\d[A-Za-z0-9-]*\b|-\d{2,}\b")


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


def strip_markup(value: str) -> str:
    """Raw detail text without HTML tags/entities and without a trailing "… See more"."""
    return _SEE_MORE.sub("", html.unescape(_TAG.sub(" ", value)))


NUMBER_UNITS = {"price": ("$", ""), "average_rating": ("", " stars"), "rating_number": ("", " ratings")}


def value_forms(value: Any, field: str = "") -> list[str]:
    """The strings whose presence in text states a requirement's value.

    A string is itself; excluded values are each value; a numeric bound is each of its numbers
    with the field's unit ("$20", "4.5 stars", "100 ratings", so "$20" is not "20 ratings"); a
    budget is every amount of its voucher and limit. Leakage and completeness checks both use this.
    """
    if isinstance(value, dict) and "voucher" in value:
        return budget_numbers(value)
    if isinstance(value, dict):
        before, after = NUMBER_UNITS.get(field, ("", ""))
        return [f"{before}{format_number(value[k])}{after}" for k in ("min", "max") if value.get(k) is not None]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


def clean_value(spec: FieldSpec, value: str, table: FieldTable) -> tuple[str | None, str]:
    """Clean one detail value, or say why it is unusable.

    Returns:
        (clean value, "") or (None, reason) with reason one of: empty, placeholder, url, asin,
        emoji, variant_code, code, numeric_only, too_long, repeated_blurb, sentence.
    """
    v = " ".join(strip_markup(value).split()).strip(" .,;:-–—‎\u200e")  # noqa: B005 - a set of characters
    v = _REDUNDANT_PREFIX.sub("", v).strip()  # "Compatible with Galaxy S7" says no more than "Galaxy S7"
    if not v or not tokens(v):
        return None, "empty"
    if v.lower() in spec.placeholders:
        return None, "placeholder"
    if _URL.search(v):
        return None, "url"
    if _ASIN.search(v):
        return None, "asin"
    if _EMOJI.search(v):
        return None, "emoji"
    if _VARIANT_CODE.search(v):
        return None, "variant_code"
    if _SNAKE.search(v) or "[" in v or "]" in v:
        return None, "code"
    if ":" in v:
        return None, "label_in_value"
    if spec.descriptive and (_MIXED_CODE.search(v) or v.count("-") >= 3):
        return None, "code"
    if _NUMERIC_ONLY.match(v):
        return None, "numeric_only"
    if len(normalize(v).replace(" ", "")) < 2:
        return None, "too_short"
    if all(t in UNIT_ALIASES for t in tokens(v)):
        return None, "unit_only"  # "Inches" is a unit, not a size
    if len(v) > 50 and v[:30].lower() in v[len(v) // 2 :].lower():
        return None, "repeated_blurb"
    if len(v) > table.max_value_chars or len(v.split()) > table.max_value_words:
        return None, "too_long"
    if re.search(r"[a-z]{2}[.!?]\s+\w", v):  # "Fits most. Easy" is prose; "C.P. Company" is a name
        return None, "sentence"
    return v, ""


def split_options(spec: FieldSpec, value: str) -> list[str]:
    """The options a raw value lists ("Black, Blue" -> ["Black", "Blue"]); one item when not multi-option.

    Slashes split only when not between digits, so "1/4 inch" stays whole, and nothing splits
    inside parentheses or brackets.
    """
    if not spec.multi_option:
        return [value]
    # Separators inside brackets belong to the option: "BAHAMA WAY (BAHAMA BLUE/WHETSTONE BLUE)" is one colour.
    parts, depth, start = [], 0, 0
    for m in re.finditer(r"[()\[\]]|" + _OPTION_SPLIT.pattern, value):
        token = m.group(0)
        if token in "([":
            depth += 1
        elif token in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and m.end() > m.start():
            parts.append(value[start:m.start()])
            start = m.end()
    parts.append(value[start:])
    return [p for p in parts if p.strip()]


def detail_values(product: Mapping[str, Any], spec: FieldSpec) -> list[str]:
    """Every raw value the product has for canonical detail field `spec` (all aliases merged)."""
    return [d["value"] for d in product.get("details") or [] if d["key"] == spec.name and d["value"]]


def detail_options(product: Mapping[str, Any], spec: FieldSpec) -> list[str]:
    """Every option (after `split_options`) the product has for `spec`; what attribute checkers compare with."""
    return [opt for raw in detail_values(product, spec) for opt in split_options(spec, raw)]


def entity_phrase(product: dict[str, Any], not_entities: frozenset[str] = frozenset()) -> str | None:
    """The product type a title states, taken from the product's own category path.

    The deepest category whose content words all occur in the title (e.g. "Wall Clocks" for
    "Rooster 1 Wall Clock Farmer Kitchen ..."), or else its longest ending that does ("Cases"
    of "Basic Cases"); a category joining names with "&" ("Stickers & Decals") offers each. None when
    no category qualifies. `not_entities` (lower case) are category names that say who a
    product is for rather than what it is ("Women"): the field table's placeholders for `title`.
    """
    title = keywords(product.get("title") or "")
    cats = list(reversed(product.get("categories") or []))
    for depth, cat in enumerate(cats):
        # "Stickers & Decals" names two kinds of product: try each. Only the deepest category is
        # cut down (to parts or endings); a parent such as "Camping & Hiking" names an activity.
        parts = [p.strip() for p in re.split(r"\s*(?:&|,| and )\s*", cat)] if depth == 0 else [cat]
        for part in parts:
            words = part.split()
            if not words or len(words) > 4:
                continue
            # the whole name first, then its head noun phrases: "Basic Cases" -> "Cases"
            for start in range(len(words) if depth == 0 else 1):
                phrase = " ".join(words[start:])
                if phrase.lower() in not_entities:
                    break
                if keywords(phrase) and keywords(phrase) <= title:
                    return phrase
    return None


def price_bound(price: float) -> dict[str, Any]:
    """Price cap: the smallest bucket >= price (inclusive), above $1000 the next multiple of 50."""
    cap = next((b for b in PRICE_BUCKETS if price <= b), None)
    if cap is None:
        cap = math.ceil(price / 50) * 50
    return {"max": float(cap), "max_inclusive": True}


def rating_bound(average_rating: float) -> dict[str, Any]:
    """Rating floor: the rating rounded down to a half star (inclusive)."""
    return {"min": max(1.0, math.floor(average_rating * 2) / 2), "min_inclusive": True}


def rating_count_bound(rating_number: int) -> dict[str, Any] | None:
    """Popularity floor: the largest bucket <= rating_number (inclusive), or None below 10."""
    floor = [b for b in RATING_COUNT_BUCKETS if b <= rating_number]
    return {"min": float(floor[-1]), "min_inclusive": True} if floor else None


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
    clear_opinions: bool = False,
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
            (ecombench.stages.reviews.clear_opinion; template-v2, issue #14). False keeps template-v1's opinions.

    Returns:
        (features, {field: reason} for every field present but unusable). Intent-specific
        features (negative, budget, opinions) follow the intent's settings; when they cannot be
        made, "budget" -> "no_price" or "review" -> "no_reviews" appears among the reasons.
    """
    features: list[Feature] = []
    dropped: dict[str, str] = {}
    from ecombench.stages.product_type import (
        product_type,  # here: ecombench.stages.product_type builds on entity_phrase
    )
    from ecombench.stages.type_values import type_value_problem

    entity = product_type(product, table.fields["title"].placeholders)  # issue #12: what the product is
    if entity:
        spec = table.fields["title"]
        features.append(Feature("title", "entity", entity, spec.sources, product.get("title") or ""))
    cleaned = [(spec, raws, *_clean_options(spec, raws, table)) for spec in table.detail_fields()
               if (raws := detail_values(product, spec))]
    prefetch = getattr(value_support, "prefetch", None)
    if prefetch is not None:  # every option's support asked at once (one partition pass, pipeline/batched.py)
        prefetch([(spec.rubric_field, o) for spec, _, options, _ in cleaned for o in options or []])
    for spec, raws, options, reason in cleaned:
        if options is None:
            dropped[spec.rubric_field] = reason
            continue
        if options and (value_support is not None or rejected_values is not None):
            options, bad = usable_values(spec, options, value_support, product, min_value_support)
            if entity:  # "a kitchen rug for the kitchen", "a coffee mug to use for coffee": the type says it already
                bad.update({o: why for o in options if (why := type_value_problem(spec.rubric_field, o, entity))})
                options = [o for o in options if o not in bad]
            if bad and rejected_values is not None:
                rejected_values[spec.rubric_field] = bad
            reason = reason or next(iter(bad.values()), "")
        if not options:
            dropped[spec.rubric_field] = reason or "empty"
            continue
        value = options[0] if len(options) == 1 else rng.choice(options)
        features.append(Feature(spec.rubric_field, "detail", value, spec.sources, raws[0]))
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
        features = _make_negatives(features, product, intent, table, rng, vocabulary or {})
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
            opinions = extract_opinions(reviews or [], intent.review_opinions, rng, clear_only=clear_opinions)
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


def _make_negatives(features: list[Feature], product: dict[str, Any], intent: IntentSpec, table: FieldTable,
                    rng: random.Random, vocabulary: dict[str, dict[str, list[str]]]) -> list[Feature]:
    """Turn 1..intent.negatives detail features into negative ones.

    The excluded values are real values of the same field among products of the target's
    main_category (so the exclusion rules out products a shopper would meet), never the target's own
    value, a value contained in it or one containing it, in any spelling (fixes reference
    §15.13, whose negative rubrics could be empty).
    """
    local = vocabulary.get(product.get("main_category") or "(none)", {})
    pool = [f for f in features if f.kind == "detail" and f.field.removeprefix("details.") in intent.negative_fields]
    rng.shuffle(pool)
    want = rng.randint(1, intent.negatives)
    swaps: dict[str, Feature] = {}
    for f in pool:
        if len(swaps) == want:
            break
        spec = table.by_rubric_field(f.field)
        mine = detail_options(product, spec)
        others = [v for v in local.get(spec.name, []) if not _overlaps(v, mine, table)]
        if len(others) < 2:
            continue
        excluded = sorted(rng.sample(others[:10], 2), key=str.lower)
        swaps[f.field] = Feature(f.field, "negative", excluded, f.sources, f.raw)
    return [swaps.get(f.field, f) if f.kind == "detail" else f for f in features]


def detail_rows(products: pl.DataFrame, table: FieldTable) -> pl.DataFrame:
    """Every field-table detail of every product as rows of (row, key, value); row is its position (Int32).

    The one explosion of the nested `details` column a build makes: sampling eligibility, the
    negative-value vocabulary and the answer-set index all read it (at 3.7M products each
    exploding the column again cost tens of seconds and GBs).
    """
    import polars as pl

    known = [f.name for f in table.detail_fields()]
    return (products.select(pl.int_range(pl.len(), dtype=pl.Int32).alias("row"), "details").explode("details")
            .drop_nulls("details").unnest("details").filter(pl.col("key").is_in(known)).select("row", "key", "value"))


def field_vocabulary(products: pl.DataFrame, table: FieldTable, fields: list[str],
                     top: int = 20, details: pl.DataFrame | None = None) -> dict[str, dict[str, list[str]]]:
    """The most frequent clean values of each field, per main_category.

    Args:
        products: a products.parquet frame (details as list of {key, raw_key, value}).
        table: the field table.
        fields: canonical detail field names.
        top: values kept per field and category.
        details: `detail_rows(products, table)` when the caller has it already.

    Returns:
        {main_category (or "(none)"): {field: [value, ...]}},
        each value in its most common spelling, ranked by how many products have it (ties by
        normalised text), so negative rubrics exclude values shoppers of that category meet.
        The same as `VocabularyCounts` fed the products in slices (what ingest does, `validation.catalog_stats`).
    """
    counts = VocabularyCounts(table, fields)
    counts.add(products, details)
    return counts.vocabulary(top)


def owned_strings(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with its string columns copied into buffers of their own.

    Polars strings are views: a small aggregate kept from a slice (its distinct values) pins the
    slice's whole string buffers. Measured on a 1M-product snapshot in slices of 60k: keeping each
    slice's distinct titles and detail pairs held 1.15 GB, copied 0.61 GB.
    """
    import polars as pl
    import pyarrow as pa

    table = frame.to_arrow()
    strings = pa.schema([f.with_type(pa.large_string()) if pa.types.is_string_view(f.type) or pa.types.is_string(f.type)
                         or pa.types.is_large_string(f.type) else f for f in table.schema])
    out = pl.from_arrow(table.cast(strings))
    assert isinstance(out, pl.DataFrame)
    return out


class VocabularyCounts:
    """`field_vocabulary` over products given in slices: per slice, counts; at the end, the ranking.

    A product's (field, value) rows are counted within its slice, and slices hold distinct products,
    so summed counts are the whole catalog's: the result equals `field_vocabulary` on the whole frame
    while only one slice of products is in memory (ingest's statistics at 3.7M products held the whole
    table, 6.5 GB, benchmarks/RESULTS.md). Each distinct (field, value) is cleaned once.
    """

    def __init__(self, table: FieldTable, fields: list[str]):
        self.table, self.fields = table, fields
        self._clean: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (key, value) -> [(norm, clean)]
        self._products: list[pl.DataFrame] = []  # main_category, key, norm, n (products)
        self._spellings: list[pl.DataFrame] = []  # main_category, key, norm, clean, len (product options)

    def add(self, products: pl.DataFrame, details: pl.DataFrame | None = None) -> None:
        """Count one slice of products (main_category, details; `details` = its `detail_rows` if at hand)."""
        import polars as pl

        if details is None:
            details = detail_rows(products, self.table)
        categories = products.select(pl.int_range(pl.len(), dtype=pl.Int32).alias("row"),
                                     pl.col("main_category").fill_null("(none)"))
        rows = (details.filter(pl.col("key").is_in(self.fields)).join(categories, on="row")
                .select(pl.col("row").alias("parent_asin"), "main_category", "key", "value").unique())
        # Clean each distinct (field, value) once in Python; counting and ranking are polars (no loop over products).
        options: list[tuple[str, str, str, str]] = []
        for key, value in rows.select("key", "value").unique().iter_rows():
            known = self._clean.get((key, value))
            if known is None:
                spec = self.table.fields[key]
                known = []
                for opt in split_options(spec, strip_markup(value)):
                    clean, _ = clean_value(spec, opt, self.table)
                    if clean:
                        known.append((normalize(clean), clean))
                self._clean[(key, value)] = known
            options.extend((key, value, norm, clean) for norm, clean in known)
        opts = pl.DataFrame(options, schema={"key": pl.String, "value": pl.String, "norm": pl.String,
                                             "clean": pl.String}, orient="row")
        # One row per (product, option): a value's repeated option counts twice.
        hits = rows.join(opts, on=["key", "value"])
        self._products.append(owned_strings(hits.group_by("main_category", "key", "norm")
                                            .agg(pl.col("parent_asin").n_unique().cast(pl.Int64).alias("n"))))
        self._spellings.append(owned_strings(hits.group_by("main_category", "key", "norm", "clean").len()
                                             .with_columns(pl.col("len").cast(pl.Int64))))

    def vocabulary(self, top: int = 20) -> dict[str, dict[str, list[str]]]:
        """The `field_vocabulary` of every slice added (`top` values per field and category)."""
        import polars as pl

        if not self._products:
            return {}
        products = pl.concat(self._products).group_by("main_category", "key", "norm").agg(pl.col("n").sum())
        spellings = (pl.concat(self._spellings).group_by("main_category", "key", "norm", "clean")
                     .agg(pl.col("len").sum()))
        ranked = (products.sort(["n", "norm"], descending=[True, False])
                  .group_by("main_category", "key", maintain_order=True).head(top)
                  .with_columns(pl.int_range(pl.len()).over("main_category", "key").alias("rank")))
        # The most common spelling of each ranked value (ties: the larger string, as max() of (count, spelling) does).
        spelled = (spellings.sort(["len", "clean"], descending=[True, True])
                   .group_by("main_category", "key", "norm", maintain_order=True).first())
        best = (ranked.join(spelled.select("main_category", "key", "norm", "clean"),
                            on=["main_category", "key", "norm"])
                .sort("main_category", "key", "rank"))
        out: dict[str, dict[str, list[str]]] = {}
        for scope, key, clean in best.select("main_category", "key", "clean").iter_rows():
            out.setdefault(scope, {}).setdefault(key, []).append(clean)
        return out
