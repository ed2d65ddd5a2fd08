"""What a product's `details` say, read the same way everywhere: options of a field, cleaned values, detail rows.

The catalog's own readers, below every stage and checker: a detail value is cleaned (HTML, "See more",
placeholders, URLs, ASINs, emoji, variant codes, snake_case codes, overlong or repeated blurbs are dropped —
reference §4.2 and §15.9) and multi-valued fields are split into options. `detail_rows` is the one explosion of
the nested column a build makes; `VocabularyCounts` ranks each field's values per main_category.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

import polars as pl
import pyarrow as pa

from ecombench.catalog.devices import spell_plus
from ecombench.tables.fields import FieldSpec, FieldTable
from ecombench.text import UNIT_ALIASES, normalize, tokens

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


def strip_markup(value: str) -> str:
    """Raw detail text without HTML tags/entities and without a trailing "… See more"."""
    return _SEE_MORE.sub("", html.unescape(_TAG.sub(" ", value)))


def clean_value(spec: FieldSpec, value: str, table: FieldTable) -> tuple[str | None, str]:
    """Clean one detail value, or say why it is unusable.

    Returns:
        (clean value, "") or (None, reason) with reason one of: empty, placeholder, url, asin,
        emoji, variant_code, code, numeric_only, too_long, repeated_blurb, sentence.
    """
    v = " ".join(strip_markup(value).split()).strip(" .,;:-–—‎\u200e")  # noqa: B005 - a set of characters
    v = _REDUNDANT_PREFIX.sub("", v).strip()  # "Compatible with Galaxy S7" says no more than "Galaxy S7"
    if spec.compatibility:
        v = spell_plus(v)  # "Galaxy S23+" is the "Galaxy S23 Plus" in every normalised form, never the S23
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


def detail_rows(products: pl.DataFrame, table: FieldTable) -> pl.DataFrame:
    """Every field-table detail of every product as rows of (row, key, value); row is its position (Int32).

    The one explosion of the nested `details` column a build makes: sampling eligibility, the
    negative-value vocabulary and the answer-set index all read it (at 3.7M products each
    exploding the column again cost tens of seconds and GBs).
    """
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
    """`frame` with its string columns (lists of strings too) copied into buffers of their own.

    Polars strings are views: a small aggregate kept from a slice (its distinct values, its products' types or
    facts) pins the slice's whole string buffers. Measured on a 1M-product snapshot in slices of 60k: keeping each
    slice's distinct titles and detail pairs held 1.15 GB, copied 0.61 GB.
    """
    table = frame.to_arrow()
    out = pl.from_arrow(table.cast(pa.schema([f.with_type(_owned_type(f.type)) for f in table.schema])))
    assert isinstance(out, pl.DataFrame)
    return out


def _owned_type(t: pa.DataType) -> pa.DataType:
    # Every string (view) type as large_string, inside lists too; other types as they are.
    if pa.types.is_string_view(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.large_string()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.large_list(_owned_type(t.value_type))
    return t


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
