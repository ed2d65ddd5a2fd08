"""Product facts: what a product's whole page states for each field of the field table, with its evidence.

A fact is one (product, field, value) with a polarity — the page *states* the value or *contradicts* it — and
its evidence: where it was read (the `details` label, the title, a feature bullet, the description, the store)
and the span in that segment's normalised text. Every catalog-wide question (answer sets, support counts,
grading, stage 2's features) reads facts instead of the one Amazon label per field, and tells a page that
contradicts a value from one that says nothing of it.

How the page is read (all of it polars over whole columns, Python only once per distinct value):

- **Vocabulary** (`learn_vocabulary`): each field's values are the clean options of its `details` labels across
  the catalog being built (ecombench.catalog.details), carried by at least `min_products` products, with the
  field table's value aliases as extra spellings and its reviewed `text_values` besides. So a new category
  brings its own values.
- **Mentions** (`find_mentions`): every vocabulary value found, as whole words, in the title, each feature
  bullet and each description paragraph (Aho-Corasick over the normalised text); a value inside a longer value
  found at the same place ("leather" in "faux leather", "wireless" in "wireless charging") is not a mention of
  its own.
- **Role** (`read_mentions`): a mention is a fact only where the value plays the field's role. In a title the
  value is stated unless it sits in the part that names the device an accessory fits ("... for iPhone 8": only
  compatibility fields read there) or in a gift phrase ("a gift for Christmas"); in a bullet or paragraph it
  needs a cue: the field's own cue words around it ("made of silicone", "silicone material", a bullet headed
  "MATERIAL:"), or for a compatibility field a "for / compatible with / fits" before it. Which fields' title
  mentions hold is learned from the products that carry a label (`learn_title_rates`).
- **Fitted devices** (ecombench.catalog.fitted): where no label names a device model, the devices the title and
  bullets name after a device opener ("Compatible with Fitbit Charge 3 and Charge 4") are compatibility facts,
  each spelled as the page spells it, and so are the device lines the catalog's titles name after a maker ("for
  AirPods Pro": "Apple AirPods Pro"; ecombench.catalog.device_lines); after a negated opener ("NOT compatible
  with", "not for") they are contradicted.
- **Contradictions**: a negated mention ("not waterproof", "NOT compatible with S20 Ultra", "BPA free"), an
  imitation qualifier ("PU leather" against a label "Leather"), in a field whose labels hold one value per
  product, a title or cued value other than the label's (a "Plaid" title against the label Pattern "Solid"), and
  a title naming the field's cue word against a value that says the field is absent ("Wolf Print" against "Solid").
  A value the page contradicts and nowhere states is contradicted, even when its label says it.

`extract_facts` returns one row per (row, field, value): the strongest evidence for it, its polarity and
`sources` (which parts of the page state it).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import polars as pl
from polars.io.plugins import register_io_source

from ecombench.catalog.bounds import wilson_bound
from ecombench.catalog.details import (
    clean_value,
    detail_options,
    detail_rows,
    owned_strings,
    split_options,
    strip_markup,
)
from ecombench.catalog.device_lines import (
    DeviceLine,
    device_lines,
    line_candidates,
    line_mentions,
    line_uses,
)
from ecombench.catalog.devices import VARIANT_WORDS, names_device, names_model
from ecombench.catalog.fitted import fitted_device_facts, title_names_other_device
from ecombench.tables.fields import FieldSpec, FieldTable
from ecombench.text import normalize

# Columns of the facts frame.
FACT_SCHEMA: dict[str, pl.DataType] = {
    "row": pl.Int32(), "parent_asin": pl.String(), "field": pl.String(), "value": pl.String(), "polarity": pl.String(),
    "source": pl.String(), "segment": pl.Int32(), "start": pl.Int32(), "end": pl.Int32(), "evidence": pl.String(),
    "sources": pl.List(pl.String())}
STATED, CONTRADICTED = "stated", "contradicted"
# Page parts, strongest evidence first: a fact keeps the first that states it.
SOURCES = ("details", "title", "feature", "description", "store")
CONTEXT_CHARS = 60  # evidence: this much normalised text on each side of a span
PRE_TOKENS = 4  # context tokens read before a mention
WINDOW_CHARS = 48  # the text read around a mention for its context words (a word longer than this is cut)
# Words that negate the value that follows within PRE_TOKENS ("not waterproof", "no frame", "isn't compatible"),
# when only bridge words stand between them ("does not support wireless charging", "not a blackout curtain"):
# "does not fade, supports wireless charging" and "do not bleach; warm iron" deny nothing of the value.
NEGATIONS = frozenset("not no non without never nor neither isn aren doesn don won cannot excluding except".split())
NEGATION_BRIDGE = frozenset("a an the any be been is are was support supports supported compatible compatibility "
                            "with for work works working fit fits include includes included come comes have has "
                            "made of by use used".split())
# A value followed by "free" is denied ("BPA free", "latex free"), unless "<value> free" is a value itself.
DENYING_SUFFIXES = frozenset({"free"})
# Words before a material that make it an imitation of that material: "PU leather" is no leather.
IMITATIONS = frozenset("pu faux vegan synthetic artificial imitation fake leatherette simulated".split())
# A gift phrase makes the value a mention, not the product's theme or occasion ("a perfect gift for Christmas").
# Spellings of a possessive without its apostrophe that labels use for a department ("Mens", "Womens").
POSSESSIVE_SPELLINGS = frozenset({"mens", "womens"})
# Age words a title names a child's product by ("HOBIBEAR Kids Breathable Knit Sneakers", "Kids Smart Watch"), and
# the words beside them that make them one of a list of wearers ("for Women Men Kids"): a list is no child's product.
YOUNG_TITLE_WORDS = frozenset({"kid", "kids", "child", "children", "toddler", "toddlers"})
WEARER_WORDS = frozenset({"women", "womens", "men", "mens", "adult", "adults", "teen", "teens", "and", "or"})
# ... and the words beside them that make them something else: "Kid-Proof Case", "Child Safety Latches", "I Am A
# Child of God", "The Child" (a Star Wars figure).
NOT_A_WEARER_BESIDE = frozenset({"proof", "proofing", "safety", "safe", "friendly", "of", "the", "a"})
GIFT_BEFORE = frozenset("gift gifts present presents stocking stuffer stuffers".split())
GIFT_AFTER = frozenset("gift gifts present presents".split())
# Words of the occasions gifts are given for: an occasion beside another is in a list of them ("Fathers Day,
# Christmas, Birthday"; the normalised text keeps no comma). "day" ends one before ("Mothers Day"), never after
# ("Christmas Day" is Christmas).
OCCASION_WORDS = frozenset("day birthday birthdays christmas halloween easter thanksgiving wedding weddings "
                           "anniversary graduation valentine valentines hanukkah retirement housewarming".split())
# Words after a value in a bullet's header that keep the header about the value: "[Unique Design]", "【Compact and
# Stylish】", "[Wireless Charging Compatible]". Any other word makes the value a modifier of something else:
# "【Space Saving Keyboard】" is no space theme, "Country of Origin:" no country theme, "Integrated Mesh Pocket" no
# mesh material (a field's own cue words keep it too: "Bright Color"). A self-evident field's value heads what it
# describes ("Adjustable Resistance", "Magnetic Backing"), so there any word may follow.
HEADER_ITEM_WORDS = frozenset("and or design designs style styles look finish pattern patterns print prints theme "
                              "themes decor decoration decorations compatible compatibility feature features "
                              "function functions construction quality shape edition series technology case cases "
                              "cover".split())
# What opens the part of a title that names the device an accessory fits; what opens a variant after it.
DEVICE_OPENERS = ("for", "compatible with", "compatible for", "fits", "fit for", "fit", "designed for",
                  "made for", "works with", "work with", "replacement for", "suitable for")
# Cues before a compatibility value in a bullet or paragraph ("compatible with iPhone 8", "for Galaxy S21").
COMPATIBILITY_CUES = DEVICE_OPENERS + ("support", "supports", "compatible", "compatibility")
# Words after a device name that make it another model: "Galaxy S8 Active" is no "Galaxy S8".
MODEL_SUFFIXES = VARIANT_WORDS | {"note"}
# The variant words that do not also open the next model of a list ("iPhone XS XR X", "Galaxy Note 9 Note 8",
# "printer's"): after a device label, these make it another device wherever the page names it.
LIST_SAFE_VARIANTS = frozenset(w for w in VARIANT_WORDS if len(w) > 1 and w not in {"x", "xs", "xr"})
# Words that end the device part of a title: after them the title speaks of the product again.
DEVICE_PART_END = frozenset({"with", "and"})


def surface(expr: pl.Expr) -> pl.Expr:
    """The normalised surface text facts are matched in (" usb c cable ").

    Lower case, a decimal point or comma between digits as "_" ("15_6"), every run of other characters one space,
    padded with one space on each side.
    """
    return pl.concat_str([pl.lit(" "), expr.fill_null("").str.to_lowercase()
                         .str.replace_all(r"(\d)[.,](\d)", "${1}_${2}")  # "15.6" stays one number
                         .str.replace_all(r"[^a-z0-9_]+", " ").str.strip_chars(), pl.lit(" ")])


def surface_text(text: str) -> str:
    """`surface` of one string (Python), for values and tests."""
    return pl.select(surface(pl.lit(text))).item()


# Punctuation that ends a clause: a cue word before it does not put the value after it in the field's role
# ("more vibrant color, clear images": "clear" describes the images). A full stop counts only before a space, so
# "2.4" and "U.S." stay whole.
_BREAK = "\x01"


def surface_breaks(expr: pl.Expr) -> pl.Expr:
    """Where the `surface` text of `expr` has a clause break: its offsets joined by "," ("" when none).

    An offset is that of the one space `surface` puts for a run of non-word characters holding a comma, semicolon,
    bar, exclamation or question mark, or a full stop before white space. A mention (`find_mentions`) starts and
    ends on such a space, so a break at its start or end tells that the word before or after it is in another
    clause.
    """
    marked = (expr.fill_null("").str.to_lowercase().str.replace_all(r"(\d)[.,](\d)", "${1}_${2}")
              .str.replace_all(r"[,;|!?]|\.(?:\s|$)", _BREAK + " ")
              .str.replace_all(r"[^a-z0-9_]*" + _BREAK + r"[^a-z0-9_]*", _BREAK)
              .str.replace_all(r"[^a-z0-9_" + _BREAK + r"]+", " ").str.strip_chars(" " + _BREAK))
    padded = pl.concat_str([pl.lit(" "), marked, pl.lit(" ")])
    return padded.str.find_many([_BREAK]).cast(pl.List(pl.String)).list.join(",")


# Standard errors a field's title agreement rate must clear `FactVocabulary.min_title_rate` by, as the per-type rules'
# shares do theirs (TypeRules.margin_z).
TITLE_MARGIN_Z = 1.0


@dataclass(frozen=True)
class FactVocabulary:
    """The values facts are read for, learned from the catalog's labels (see `learn_vocabulary`).

    Attributes:
        values: field, value (its most common clean spelling), norm (`surface` of a spelling), products (how
            many products' labels carry it); one row per spelling, every spelling of a value under its value.
        single_valued: fields whose labels hold one value per product (at most 5 % list several): a page that
            states another value there contradicts the label.
        title_rates: field -> share of title mentions that agree with the product's own label, over products
            that carry one (`learn_title_rates`); a field's title mentions become facts when it is at least
            `min_title_rate`.
        min_title_rate: see `title_rates`.
        common: value norms found in the text of at least COMMON_SHARE of the catalog's products ("base",
            "light", "water"): read from a bullet or paragraph only with a cue word, never as self-evident.
        title_counts: field -> (title mentions of products that carry a label for the field, those the label
            agrees with): what `title_rates` are computed from.
        mention_products: value norm -> products whose title, bullets or description mention it: what `common`
            is computed from.
        products: the products `title_counts` and `mention_products` count over (0: no counts kept).
        device_lines: the device lines the catalog's titles name after a maker (ecombench.catalog.device_lines).
    """

    values: pl.DataFrame
    single_valued: frozenset[str] = frozenset()
    title_rates: dict[str, float] = field(default_factory=dict)
    min_title_rate: float = 0.3
    common: frozenset[str] = frozenset()
    title_counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    mention_products: dict[str, int] = field(default_factory=dict)
    products: int = 0
    device_lines: frozenset[DeviceLine] = frozenset()

    def title_fields(self) -> frozenset[str]:
        """Fields whose title mentions are facts: agreement at least `min_title_rate`, TITLE_MARGIN_Z to spare.

        The rate is an estimate from the field's title mentions, so where their counts are known it is judged by its
        lower Wilson bound (`ecombench.catalog.bounds.wilson_bound`): Style's 122 agreeing of 424 (0.288) and 121 of
        400 (0.303) are one rate, and a field does not flip with a few mentions more or less.
        """
        counted = sorted(f for f in self.title_rates if self.title_counts.get(f, (0, 0))[0])
        sure = set()
        if counted:
            n = pl.Series([self.title_counts[f][0] for f in counted], dtype=pl.Float64)
            agree = pl.Series([self.title_counts[f][1] for f in counted], dtype=pl.Float64)
            low = pl.select(wilson_bound(pl.lit(agree) / pl.lit(n), pl.lit(n), TITLE_MARGIN_Z, upper=False)).to_series()
            sure = {f for f, b in zip(counted, low.to_list()) if b >= self.min_title_rate}
        return frozenset(sure | {f for f, rate in self.title_rates.items()
                                 if f not in counted and rate >= self.min_title_rate})


def label_options(products: pl.DataFrame, table: FieldTable, details: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every clean option of every field-table label: (row, field, value, norm), one row per distinct option.

    The rules are ecombench.catalog.details' (markup stripped, multi-option fields split, placeholders and codes
    dropped), run once per distinct (field, raw value).

    Args:
        products: a products.parquet frame (row order = the `row` numbers).
        table: the field table.
        details: `detail_rows(products, table)` when the caller has it.
    """
    if details is None:
        details = detail_rows(products, table)
    options: list[tuple[str, str, str]] = []
    for key, raw in details.select("key", "value").unique().iter_rows():
        spec = table.fields[key]
        for option in split_options(spec, strip_markup(raw)):
            clean, _ = clean_value(spec, option, table)
            if clean:
                options.append((key, raw, clean))
    opts = pl.DataFrame(options, schema={"key": pl.String, "raw": pl.String, "value": pl.String}, orient="row")
    return (details.join(opts, left_on=["key", "value"], right_on=["key", "raw"])
            .select(pl.col("row").cast(pl.Int32), pl.col("key").alias("field"), pl.col("value_right").alias("value"))
            .with_columns(surface(pl.col("value")).alias("norm")).unique(["row", "field", "norm"])
            .sort("row", "field", "norm"))


# A value several fields' labels carry belongs to those that carry it at least this share as often as the one that
# carries it most ("Orange" is a colour; the few scent labels "Orange" do not make it a scent in text).
OWNER_SHARE = 0.25


def _field_words(table: FieldTable) -> frozenset[str]:
    """Surface forms of the words that name fields (names, labels, cues): never a value ("Material", "Compatible")."""
    words = {surface_text(w).strip() for spec in table.detail_fields()
             for w in (spec.name, spec.label, *spec.text_cues(), *spec.keywords)}
    return frozenset(w for w in words if w)


# Words that praise or sell rather than describe: a label holding only one is no value ("Premium", "Gift").
MARKETING = frozenset("premium gift gifts upgraded upgrade new latest best quality high quality bonus "
                      "version edition deluxe luxury".split())


# Labels that must carry a field's own keyword for it to be a value of the field (stage 2 calls a value carried by
# fewer products than this rare: `min_value_support`).
OWN_KEYWORD_PRODUCTS = 3


def _without_field_words(counts: pl.DataFrame, table: FieldTable) -> pl.DataFrame:
    """Label values without those that only name a field ("Material", "Compatible") or only praise ("Premium").

    A field's own keywords are the exception in that field where at least OWN_KEYWORD_PRODUCTS products' labels
    carry them: the words a shopper asks about it with include its common values (Hand Orientation
    "ambidextrous", "left hand"), and a keyword only two labels carry is more often the topic ("laundry").
    """
    blocked = _field_words(table) | MARKETING
    own = pl.DataFrame([(spec.name, word) for spec in table.detail_fields()
                        for word in {surface_text(k).strip() for k in spec.keywords}
                        - {surface_text(w).strip() for w in (spec.name, spec.label, *spec.text_cues())}],
                       schema={"field": pl.String, "word": pl.String}, orient="row")
    counts = counts.with_columns(pl.col("norm").str.strip_chars().alias("word"))
    kept = counts.join(own, on=["field", "word"], how="semi").filter(pl.col("products") >= OWN_KEYWORD_PRODUCTS)
    return pl.concat([counts.filter(~pl.col("word").is_in(list(blocked))), kept]).unique(
        ["field", "norm"], maintain_order=True).drop("word")


def _owned_values(counts: pl.DataFrame, min_share: float) -> pl.DataFrame:
    """Each value kept in the fields that carry it at least `min_share` of its most-carrying field's products."""
    top = counts.group_by("norm").agg(pl.col("products").max().alias("top"))
    return counts.join(top, on="norm").filter(pl.col("products") >= min_share * pl.col("top")).drop("top")


def _number_forms(norm: str) -> list[str]:
    """The other grammatical number of a value's last word ("card slot" <-> "card slots"), as surface text."""
    words = norm.split()
    if not words or not words[-1].isalpha() or len(words[-1]) < 4:
        return []
    last = words[-1]
    if last.endswith("ies"):
        other = last[:-3] + "y"
    elif last.endswith(("sses", "xes", "ches", "shes")):
        other = last[:-2]
    elif last.endswith("s") and not last.endswith("ss"):
        other = last[:-1]
    elif last.endswith("y") and last[-2] not in "aeiou":
        other = last[:-1] + "ies"
    elif last.endswith(("s", "x", "ch", "sh")):
        other = last + "es"
    else:
        other = last + "s"
    return [" " + " ".join([*words[:-1], other]) + " "]


def _device_models(counts: pl.DataFrame, labels: pl.DataFrame, table: FieldTable) -> pl.DataFrame:
    """Compatibility values that name device models ("Galaxy S21", "iPad Air 2", "AirPods").

    Not a kind of device ("Tablets", "Printer") nor a series that other values extend ("Samsung Galaxy"). A kind
    of device is a one-word value written as an ordinary word (capital first letter at most); a series is a value
    without digits that opens at least three other values of the field.
    """
    compat = [s.name for s in table.detail_fields() if s.compatibility]
    spelled = labels.filter(pl.col("field").is_in(compat)).group_by("field", "norm").agg(pl.col("value").first())
    rows = counts.filter(pl.col("field").is_in(compat)).drop("value").join(spelled, on=["field", "norm"])
    norms = rows.select("field", "norm")
    extended = (norms.join(norms, on="field").filter((pl.col("norm_right") != pl.col("norm"))
                                                     & pl.col("norm_right").str.starts_with(pl.col("norm")))
                .group_by("field", "norm").len())
    words = pl.col("norm").str.strip_chars().str.count_matches(" ") + 1
    kind = (words == 1) & ~pl.col("value").str.contains(r"\d|[a-z][A-Z]|^[A-Z]{2,}")
    series = ~pl.col("norm").str.contains(r"\d") & (pl.col("len").fill_null(0) >= 3)
    drop = (rows.join(extended, on=["field", "norm"], how="left").filter(kind | series).select("field", "norm"))
    return counts.join(drop, on=["field", "norm"], how="anti")


# Words a maker's name ends in on labels but not in titles ("BoxWave Corporation" is "BoxWave" on the page).
COMPANY_SUFFIXES = frozenset({"corporation", "corp", "inc", "incorporated", "llc", "ltd", "limited", "co", "company",
                              "gmbh", "direct", "official", "store", "shop"})


def _without_company_suffix(norm: str) -> str | None:
    """A surface form without its trailing company words ("boxwave corporation" -> "boxwave"), else None."""
    words = norm.split()
    cut = len(words)
    while cut > 1 and words[cut - 1] in COMPANY_SUFFIXES:
        cut -= 1
    short = " ".join(words[:cut])
    return f" {short} " if cut < len(words) and len(short) > 2 else None


def learn_vocabulary(labels: pl.DataFrame, table: FieldTable, min_products: int = 2,
                     max_words: int = 5) -> FactVocabulary:
    """Each field's values: label options carried by at least `min_products` products, with alias spellings.

    Args:
        labels: `label_options` of the whole catalog (or its slices concatenated).
        table: the field table (value alias groups, detail fields).
        min_products: products that must carry a value for it to be read in text (a value one product
            carries is no shared vocabulary: a product name, a variant code).
        max_words: longer values are read only from labels, never found in text.

    Returns:
        The vocabulary, with `single_valued` fields learned from how many values labels hold per product and
        no title rates yet (`learn_title_rates` adds them).
    """
    counts = (labels.group_by("field", "norm").agg(pl.col("row").n_unique().alias("products"),
                                                    pl.col("value").mode().sort().first().alias("value"))
              .filter((pl.col("products") >= min_products)
                      & (pl.col("norm").str.strip_chars().str.count_matches(" ") < max_words)))
    counts = _owned_values(_without_field_words(counts, table), min_share=OWNER_SHARE)
    counts = _device_models(counts, labels, table)
    # In a fixed order, most carried first: where two values share a spelling ("Multicolored", "Multicolour"), the
    # one more products carry names it, the same on every run (group_by leaves rows in no set order).
    rows = (counts.select("field", "value", "norm", "products")
            .sort(["field", "products", "value", "norm"], descending=[False, True, False, False]).to_dicts())
    learned = {(r["field"], r["norm"]) for r in rows}
    rows += [{"field": spec.name, "value": value, "norm": surface_text(value), "products": 0}
             for spec in table.detail_fields() for value in spec.text_values
             if (spec.name, surface_text(value)) not in learned]
    spelled: list[dict[str, Any]] = []
    for r in rows:
        spelled.append(r)
        for spelling in table.spellings(r["value"])[1:]:
            spelled.append({**r, "norm": surface_text(spelling)})
    spelled += [{**r, "norm": n} for r in list(spelled) if r["norm"].strip().count(" ") >= 1
                for n in _number_forms(r["norm"])]
    # a maker's name only: "Coffee Shop" (an Occasion) is no "Coffee" company
    spelled += [{**r, "norm": short} for r in list(spelled)
                if r["field"] == "Brand" and (short := _without_company_suffix(r["norm"]))]
    values = (pl.DataFrame(spelled, schema={"field": pl.String, "value": pl.String, "norm": pl.String,
                                            "products": pl.Int64}, orient="row")
              .filter(pl.col("norm").str.len_chars() > 2).unique(["field", "norm"], keep="first", maintain_order=True)
              .sort("field", "norm"))
    per_product = labels.group_by("field", "row").len()
    multi = per_product.group_by("field").agg((pl.col("len") > 1).mean().alias("multi"), pl.len().alias("n"))
    single = frozenset(multi.filter((pl.col("multi") <= 0.05) & (pl.col("n") >= 20)).get_column("field").to_list())
    return FactVocabulary(values=values, single_valued=single)


def product_segments(products: pl.DataFrame) -> pl.DataFrame:
    """The page's text segments: (row, source, segment, norm, breaks, header, for_from, for_to).

    One for the title, each feature bullet, each description paragraph and the store; `breaks` the clause breaks
    of `norm` (`surface_breaks`); `header` is the `surface`
    of a short label that opens a bullet ("MATERIAL:", "[Wide Compatibility]"); of a title, `for_from` and `for_to`
    list the spans that a device opener ("for", "compatible with") opens up to the title's next break
    (`_title_for_parts`).

    Args:
        products: products.parquet frame (title, features, description, store); rows numbered in order.
    """
    present = set(products.columns)
    missing: dict[str, pl.DataType] = {"title": pl.String(), "features": pl.List(pl.String()),
                                       "description": pl.List(pl.String()), "store": pl.String()}
    base = products.select(pl.int_range(pl.len(), dtype=pl.Int32).alias("row"),
                           *(pl.col(c) if c in present else pl.lit(None, dtype=d).alias(c) for c, d in missing.items()))
    title = base.select("row", pl.lit("title").alias("source"), pl.lit(0, dtype=pl.Int32).alias("segment"),
                        pl.col("title").alias("text"))
    parts = []
    for name, column in (("feature", "features"), ("description", "description")):
        parts.append(base.select("row", column).explode(column).drop_nulls(column)
                     .with_columns(pl.int_range(pl.len(), dtype=pl.Int32).over("row").alias("segment"))
                     .select("row", pl.lit(name).alias("source"), "segment", pl.col(column).alias("text")))
    store = base.select("row", pl.lit("store").alias("source"), pl.lit(0, dtype=pl.Int32).alias("segment"),
                        pl.col("store").alias("text")).drop_nulls("text")
    opening = r"^\s*[\[【(]?\s*([A-Za-z][A-Za-z &/'+-]{1,40}?)\s*(?::|：|\]|】|\)| - | – )"
    header = pl.col("text").str.extract(opening, 1)
    parts_for = _title_for_parts(base)
    raw = pl.concat([title, *parts, store]).filter(pl.col("text").str.len_chars() > 0)
    # Surface text and header once per distinct raw text: a catalog repeats its bullets and paragraphs.
    surfaces = (raw.select(pl.col("text").unique())
                .with_columns(surface(pl.col("text")).alias("norm"), surface_breaks(pl.col("text")).alias("breaks"),
                              surface(header).alias("header")))
    return (raw.join(surfaces, on="text", how="left", maintain_order="left")
            .drop("text").join(parts_for, on=["row", "source"], how="left"))


# What breaks a title into parts: after one, a title that spoke of what the product is for speaks of it again.
TITLE_BREAKS = r"[,;|()\[\]【】]| - | – "


def _title_for_parts(base: pl.DataFrame) -> pl.DataFrame:
    """(row, source "title", for_from, for_to): each span of the title's `norm` from a device opener to its part's end.

    "Red Curtains for Bedroom Living Room Kitchen, Abstract Painting Curtains": the span runs from " for " to the
    comma, so "Abstract" describes the curtains again; a later "Watch for Android iOS Phone" opens a span of its
    own. Offsets are those of `surface(title)`, which is the parts' surfaces joined by single spaces.
    """
    openers = "|".join(sorted((o.replace(" ", r"\s") for o in DEVICE_OPENERS), key=len, reverse=True))
    pieces = (base.select("row", pl.col("title").str.replace_all(TITLE_BREAKS, "\x00").str.split("\x00")
                          .alias("piece"))
              .explode("piece").with_columns(surface(pl.col("piece")).str.strip_chars().alias("piece"))
              .filter(pl.col("piece").str.len_bytes() > 0)
              .with_columns(pl.col("piece").str.len_bytes().cast(pl.Int32).alias("len"))
              .with_columns(((pl.col("len") + 1).cum_sum().over("row") - pl.col("len")).alias("at"))
              .with_columns(pl.concat_str([pl.lit(" "), pl.col("piece"), pl.lit(" ")])
                            .str.find(rf" (?:{openers}) ").cast(pl.Int32).alias("opener"))
              .drop_nulls("opener"))
    return (pieces.group_by("row").agg((pl.col("at") + pl.col("opener") - 1).alias("for_from"),
                                       (pl.col("at") + pl.col("len")).alias("for_to"))
            .with_columns(pl.lit("title").alias("source")).select("row", "source", "for_from", "for_to"))


def _in_for_part(mentions: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """`mentions` (with `_mid`, source, row, start) -> (_mid, in_for_part True) of title mentions in a for-part."""
    spans = (segments.filter(pl.col("source") == "title").select("row", "for_from", "for_to")
             .drop_nulls("for_from").explode("for_from", "for_to"))
    return (mentions.filter(pl.col("source") == "title").select("_mid", "row", "start").join(spans, on="row")
            .filter((pl.col("start") >= pl.col("for_from")) & (pl.col("start") < pl.col("for_to")))
            .select("_mid").unique().with_columns(pl.lit(True).alias("in_for_part")))


def find_mentions(segments: pl.DataFrame, vocabulary: FactVocabulary) -> pl.DataFrame:
    """Every vocabulary value found in the segments, as whole words (see the module docstring).

    Each distinct segment text is searched once (Aho-Corasick, polars' `find_many`). Mentions inside a longer
    mention at the same place are dropped, except that an imitation word opening the longer one ("pu leather")
    turns the inner value ("leather") into a contradiction (`imitated` True).

    Returns:
        (row, source, segment, start, end, field, value, norm, pre, post, header, imitated, break_before,
        break_after): start/end are offsets in the segment's `norm`; pre holds the PRE_TOKENS words before, post the
        word after; break_before / break_after tell that a clause break (`surface_breaks`) parts the mention from
        the word before / after it.
    """
    patterns = vocabulary.values.select("norm").unique().sort("norm").get_column("norm").to_list()
    empty = pl.DataFrame(schema={"row": pl.Int32, "source": pl.String, "segment": pl.Int32, "start": pl.Int32,
                                 "end": pl.Int32, "field": pl.String, "value": pl.String, "norm": pl.String,
                                 "pre": pl.List(pl.String), "post": pl.String, "header": pl.String,
                                 "imitated": pl.Boolean, "break_before": pl.Boolean, "break_after": pl.Boolean})
    if not patterns or segments.is_empty():
        return empty
    texts = segments.select("norm", "breaks").unique().with_row_index("text_id")
    hits = (texts.with_columns(pl.col("norm").str.extract_many(patterns, overlapping=True).alias("pattern"),
                               pl.col("norm").str.find_many(patterns, overlapping=True).alias("start"))
            .explode("pattern", "start").drop_nulls("pattern")
            .with_columns(pl.col("start").cast(pl.Int32),
                          (pl.col("start") + pl.col("pattern").str.len_bytes()).cast(pl.Int32).alias("end")))
    if hits.is_empty():
        return empty
    # A mention strictly inside a longer one at the same place is not a mention of its own: with the mentions of a
    # text sorted by start (longest first at one start), it ends no later than some mention before it.
    hits = _with_inner(hits)
    # Context: the words before (up to PRE_TOKENS) and the word after each mention.
    window = pl.max_horizontal(pl.col("start") - WINDOW_CHARS, pl.lit(0))
    hits = hits.with_columns(
        pl.col("norm").str.slice(window, pl.col("start") - window).str.strip_chars().str.split(" ")
        .list.slice(-PRE_TOKENS, PRE_TOKENS).alias("pre"),
        pl.col("norm").str.slice(pl.col("end"), WINDOW_CHARS).str.strip_chars().str.split(" ").list.first()
        .fill_null("").alias("post"))
    # ... unless an imitation word opens the longer one ("pu leather"): the inner value is then denied.
    hits = (hits.with_columns((pl.col("inner") & pl.col("pre").list.last().is_in(list(IMITATIONS))).alias("imitated"))
            .filter(~pl.col("inner") | pl.col("imitated")).drop("inner"))
    # an elided value spans its one word: the plain value at the same place ("polyester" of "polyester and cotton
    # blend") is inside it, as "leather" is inside "faux leather"
    hits = _with_inner(pl.concat([hits, _elided(hits, patterns)]))
    hits = hits.filter(~pl.col("inner") | pl.col("imitated")).drop("inner")
    vocab = vocabulary.values.select("field", "value", pl.col("norm").alias("pattern"))
    breaks = pl.concat_str([pl.lit(","), pl.col("breaks"), pl.lit(",")])
    at = [pl.concat_str([pl.lit(","), pl.col(c).cast(pl.String), pl.lit(",")]) for c in ("start", "_last")]
    hits = (hits.with_columns((pl.col("end") - 1).alias("_last"))
            .with_columns(breaks.str.contains(at[0], literal=True).alias("break_before"),
                          breaks.str.contains(at[1], literal=True).alias("break_after"))
            .drop("breaks", "_last"))
    return (segments.join(texts, on=["norm", "breaks"]).join(hits.drop("norm"), on="text_id")
            .join(vocab, on="pattern")
            .select("row", "source", "segment", "start", "end", "field", "value", pl.col("pattern").alias("norm"),
                    "pre", "post", "header", "imitated", "break_before", "break_after"))


def _with_inner(hits: pl.DataFrame) -> pl.DataFrame:
    """Hits with `inner`: the mention ends no later than one before it in its text.

    Sorted by start, longest first; of two at the same place, the longer value first, then by pattern, so that the
    one kept is the same on every run.
    """
    return (hits.sort("text_id", "start", pl.col("end"), pl.col("pattern").str.len_bytes(), "pattern",
                      descending=[False, False, True, True, False])
            .with_columns((pl.col("end").cum_max().shift(1).over("text_id") >= pl.col("end"))
                          .fill_null(False).alias("inner")))


def _elided(hits: pl.DataFrame, patterns: list[str]) -> pl.DataFrame:
    """Mentions a coordination elides: "dishwasher and microwave safe" states "dishwasher safe" too.

    Where a mention of several words follows "<word> and" or "<word> or", and that word with the mention's words
    after its first is a value too, that value is mentioned at the word (its context: the words before it, and
    "and" after), unless a negation stands within three words before it (`NEGATIONS`). Measured on the shared
    catalog: 82 more stated facts ("water and oil resistant", "hand or machine wash"), six "Hand Wash Only" labels
    of mugs "dishwasher and microwave safe" contradicted. Of `find_mentions`' hits (pre, post, imitated
    computed); returns rows of the same columns.
    """
    # patterns and texts are padded with spaces (`surface`): " microwave safe " starts at the space before it
    rest = pl.col("pattern").str.strip_chars().str.splitn(" ", 2).struct.field("field_1")
    word = pl.col("pre").list.get(-2, null_on_oob=True)
    joined = pl.col("pre").list.get(-1, null_on_oob=True)
    elided = (hits.filter(rest.is_not_null() & joined.is_in(["and", "or"]) & word.is_not_null())
              .with_columns(pl.concat_str([pl.lit(" "), word, pl.lit(" "), rest, pl.lit(" ")]).alias("pattern"),
                            (pl.col("start") - joined.str.len_bytes() - word.str.len_bytes() - 2).cast(pl.Int32)
                            .alias("start"),
                            (pl.col("start") - joined.str.len_bytes()).cast(pl.Int32).alias("end"),
                            pl.col("pre").list.slice(0, pl.col("pre").list.len() - 2).alias("pre"),
                            joined.alias("post"), pl.lit(False).alias("imitated")))
    # a negation just before a list may deny every item of it ("not dishwasher oven or microwave safe"): no mention
    near_negation = pl.col("pre").list.slice(-3, 3).list.eval(pl.element().is_in(list(NEGATIONS))).list.any()
    return (elided.filter(pl.col("pattern").is_in(patterns) & (pl.col("start") >= 0) & ~near_negation)
            .select(hits.columns))


def _header_grams(keyed: pl.DataFrame, n: int) -> pl.DataFrame:
    """(_mid, field, cue, single False): every run of `n` words of each mention's bullet header."""
    words = pl.col("header").str.strip_chars().str.split(" ")
    return (keyed.select("_mid", "field", words.alias("w")).filter(pl.col("w").list.len() >= n)
            .with_columns(pl.int_ranges(0, pl.col("w").list.len() - n + 1).alias("i")).explode("i")
            .select("_mid", "field", pl.col("w").list.slice(pl.col("i"), n).list.join(" ").alias("cue"),
                    pl.lit(False).alias("single"), pl.lit(False).alias("before")))


def _cue_table(table: FieldTable) -> pl.DataFrame:
    """(field, cue) of every detail field: the `surface` forms of its cue words (FieldSpec.cues)."""
    rows = [(spec.name, surface_text(cue).strip()) for spec in table.detail_fields() for cue in spec.text_cues()]
    return pl.DataFrame(rows, schema={"field": pl.String, "cue": pl.String}, orient="row").unique()


def _negated_before(pre: pl.Expr) -> pl.Expr:
    """True where a negation word stands among the tokens before a mention with only bridge words after it."""
    def word(k: int) -> pl.Expr:  # the k-th token before the mention (1 = the last)
        return pre.list.get(-k, null_on_oob=True)
    return pl.any_horizontal(
        (word(k).is_in(list(NEGATIONS)) & pl.all_horizontal(
            [word(j).is_in(list(NEGATION_BRIDGE)) for j in range(1, k)] or [pl.lit(True)])).fill_null(False)
        for k in range(1, PRE_TOKENS + 1))


def read_mentions(mentions: pl.DataFrame, segments: pl.DataFrame, vocabulary: FactVocabulary,
                  table: FieldTable) -> pl.DataFrame:
    """Decide which mentions are facts (see the module docstring).

    Returns (row, field, value, polarity, source, segment, start, end) of the mentions kept, with `cued` (a cue
    word placed it in the field's role) and `imitation` (an imitation qualifier denies it: "PU leather").

    Args:
        mentions: `find_mentions` of the segments.
        segments: `product_segments` (the title's text, to find its device part).
        vocabulary: the learned vocabulary (which fields read titles).
        table: the field table (cue words, compatibility fields).
    """
    compat = [s.name for s in table.detail_fields() if s.compatibility]
    measures = [s.name for s in table.detail_fields() if s.measure]
    # The first words of the device models the vocabulary holds ("galaxy" of "Galaxy S21").
    device_openers = set(vocabulary.values.filter(pl.col("field").is_in(compat) & pl.col("norm").str.contains(r"\d"))
                         .get_column("norm").str.strip_chars().str.split(" ").list.first().unique().to_list())
    device_openers -= {w for w in device_openers if any(c.isdigit() for c in w)}
    evident_fields = [s.name for s in table.detail_fields() if s.self_evident]
    cues = _cue_table(table)
    last_pre = pl.col("pre").list.last().fill_null("")
    # Imitation decides a material only: "artificial flowers" still have a flower theme.
    imitation = (pl.col("imitated") | last_pre.is_in(list(IMITATIONS))) & pl.col("field").str.contains("Material")
    imitated = imitation | pl.col("other_model")
    negated = (_negated_before(pl.col("pre")) | pl.col("post").is_in(list(DENYING_SUFFIXES)) | imitated)
    gift = (pl.col("pre").list.eval(pl.element().is_in(list(GIFT_BEFORE))).list.any()
            | pl.col("post").is_in(list(GIFT_AFTER))
            # an occasion named as a theme in a list of occasions is one the product is given for: "on Fathers Day,
            # Christmas, Birthday" of a Father's Day mug
            | ((pl.col("field") == "Theme")
               & pl.col("norm").str.strip_chars().str.split(" ").list.last().is_in(list(OCCASION_WORDS))
               & (last_pre.is_in(list(OCCASION_WORDS)) | pl.col("post").is_in(list(OCCASION_WORDS - {"day"})))))
    # The title's device part: from the first device opener to a comma-like break (in surface text, a break is
    # lost, so the device part runs to the next device-part end word or the end of the title).
    openers = "|".join(sorted((o.replace(" ", r"\s") for o in DEVICE_OPENERS), key=len, reverse=True))
    titles = (segments.filter(pl.col("source") == "title").select(
        "row", pl.col("norm").str.find(rf" (?:{openers}) ").fill_null(-1).cast(pl.Int32).alias("device_at")))
    # Two values of one field that share a word ("rose gold white" holds "Rose Gold" and "Gold White"): the first
    # claims it, so the one that starts inside it is no mention (mentions side by side share only a space); an
    # imitated inner value ("leather" of "pu leather") stays, as its denial. Device names are left to
    # ecombench.catalog.devices ("Apple iPad Mini" holds "Apple iPad" and "iPad Mini").
    place = ["row", "source", "segment", "field"]
    overlaps = pl.col("start") + 1 < pl.col("end").cum_max().shift(1).over(place)
    mentions = (mentions.sort(*place, "start", pl.col("end"), descending=[False] * 5 + [True])
                .filter(pl.col("imitated") | pl.col("field").is_in(compat) | ~overlaps.fill_null(False)))
    m = (mentions.join(titles, on="row", how="left").with_columns(pl.col("device_at").fill_null(-1))
         .filter(~(pl.col("field").is_in(measures) & ~pl.col("norm").str.contains(r"\d")))
         # "for OnePlus 10 Pro" names the OnePlus 10 Pro, not the series "OnePlus": a device value the text runs on
         # from into a model number is no mention of its own (ecombench.catalog.devices reads the whole name)
         .filter(~(pl.col("field").is_in(compat) & pl.col("post").str.contains(r"^\d")))
         # ... and the word that opens a device name ("Galaxy A42", "Galaxy S20 Ultra") is no pattern or theme there
         # (a maker's name there is still its brand).
         .filter(~(~pl.col("field").is_in([*compat, "Brand"])
                   & pl.col("norm").str.strip_chars().is_in(list(device_openers))
                   & pl.col("post").str.contains(r"\d"))))
    # "for Galaxy S8 Active" names another model than "Galaxy S8": it denies the shorter one (a plain mention
    # elsewhere still states it).
    m = m.with_columns((pl.col("field").is_in(compat) & pl.col("post").is_in(list(MODEL_SUFFIXES)))
                       .alias("other_model"))
    m = m.with_row_index("_mid")
    m = (m.join(_in_for_part(m, segments), on="_mid", how="left")
         .with_columns(pl.col("in_for_part").fill_null(False)))
    # For a compatibility field the device part runs to the end of the title ("for Galaxy S21, S21+, S21 Ultra");
    # for the others it is each for-part, up to the title's next break (`_title_for_parts`).
    in_device_part = ((pl.col("source") == "title") & (pl.col("device_at") >= 0)
                      & (pl.col("start") >= pl.col("device_at"))
                      & (pl.col("field").is_in(compat) | pl.col("in_for_part")))
    compat_cued = pl.col("field").is_in(compat) & pl.col("compat_cue")
    # A cue of the field: a one-word cue just before or just after the value in its clause (no comma or full stop
    # between: "more vibrant color, clear images" cues no colour), a longer cue among the words before, or any cue in
    # the bullet's header. Matched by joins on the cue text (no pattern per mention). A comma that joins two values of
    # the field is a list's, not a clause's: "for bedroom, living room, nursery room" reads on.
    listed = (m.select("row", "source", "segment", "field", (pl.col("end") - 1).alias("start")).unique()
              .with_columns(pl.lit(True).alias("_listed")))
    m = (m.join(listed, on=["row", "source", "segment", "field", "start"], how="left")
         .with_columns(pl.col("break_before") & pl.col("_listed").is_null()).drop("_listed"))
    keyed = m.select("_mid", "field", "pre", "post", "header", "break_before", "break_after")
    grams = pl.concat([
        keyed.filter(~pl.col("break_before")).select("_mid", "field", pl.col("pre").list.last().alias("cue"),
                                                     pl.lit(True).alias("single"), pl.lit(True).alias("before")),
        keyed.filter(~pl.col("break_after")).select("_mid", "field", pl.col("post").alias("cue"),
                                                    pl.lit(True).alias("single"), pl.lit(False).alias("before")),
        *(keyed.select("_mid", "field", pl.col("pre").list.slice(i, n).list.join(" ").alias("cue"),
                       pl.lit(False).alias("single"), pl.lit(True).alias("before"))
          for n in (2, 3) for i in range(PRE_TOKENS - n + 1)),
        *(_header_grams(keyed, n) for n in (1, 2, 3)),
    ]).drop_nulls("cue")
    field_cues = (grams.join(cues.with_columns((~pl.col("cue").str.contains(" ")).alias("one_word")),
                             on=["field", "cue"])
                  .filter(~pl.col("single") | pl.col("one_word"))
                  .select("_mid").unique().with_columns(pl.lit(True).alias("field_cued")))
    compat_keys = pl.DataFrame({"cue": [surface_text(c).strip() for c in COMPATIBILITY_CUES]})
    compat_hits = (grams.filter(pl.col("field").is_in(compat) & pl.col("before"))
                   .join(compat_keys, on="cue").select("_mid").unique()
                   .with_columns(pl.lit(True).alias("compat_cue")))
    m = (m.join(compat_hits, on="_mid", how="left").with_columns(pl.col("compat_cue").fill_null(False)))
    # A brand named in a bullet or the description is mostly one the product works with ("compatible with Brother
    # QL label printers", "Apple TV mount", "Universal Compatibility:"), not its maker: there it counts only with
    # the field's cue ("Upstart Battery brand"); the title and the details name the maker.
    by_header_or_evidence = ~((pl.col("field") == "Brand") & (pl.col("source") != "title"))
    # The word after the value in the header (HEADER_ITEM_WORDS): "" where the value ends it.
    header_after = (pl.col("header").str.split(pl.col("norm")).list.get(1, null_on_oob=True).str.strip_chars()
                    .str.split(" ").list.first().fill_null(""))
    one_word_cues = cues.filter(~pl.col("cue").str.contains(" ")).select("field", pl.col("cue").alias("_after"),
                                                                        pl.lit(True).alias("_own_cue"))
    m = (m.with_columns(header_after.alias("_after")).join(one_word_cues, on=["field", "_after"], how="left")
         .with_columns((pl.col("_after").is_in(["", *HEADER_ITEM_WORDS]) | pl.col("_own_cue").fill_null(False)
                        | pl.col("field").is_in(evident_fields)).alias("header_item")).drop("_after", "_own_cue"))
    m = (m.join(field_cues, on="_mid", how="left")
         .with_columns(pl.col("field_cued").fill_null(False)
                       # a value in a bullet's header ("[Wireless Charging Compatible]:") labels the product
                       | (pl.col("header").str.contains(pl.col("norm"), literal=True).fill_null(False)
                          & pl.col("header_item") & by_header_or_evidence)
                       | (pl.col("field").is_in(evident_fields) & ~pl.col("norm").is_in(list(vocabulary.common))
                          & by_header_or_evidence)))
    # A title value opening with a number is a size or a model code unless the field table lists it ("2.4G").
    reviewed = vocabulary.values.filter(pl.col("products") == 0).select("field", "norm").unique()
    m = (m.join(reviewed.with_columns(pl.lit(True).alias("reviewed")), on=["field", "norm"], how="left")
         .with_columns(pl.col("reviewed").fill_null(False)))
    # A department in the possessive ("Nike Women's Odyssey React Running Shoes", "Mens Wallet": the labels' own
    # spellings of "men's", "women's") says whom the product is for, where the field's other title mentions do not
    # ("Real Men Drink Tea Mugs", "BANTAN BOYS Photocards"): 112 of the shared catalog's 152 shoes say so in the
    # title, 19 carried a Department fact.
    possessive = ((pl.col("field") == "Department") & (pl.col("source") == "title") & ~gift
                  & ((pl.col("post") == "s") | pl.col("norm").str.ends_with(" s ")
                     | pl.col("norm").str.strip_chars().is_in(list(POSSESSIVE_SPELLINGS))))
    # Outside the device part, a compatibility value of the title must name a device model: "Apple Watch SE" names
    # the watch itself, and "SE" alone is no phone it fits.
    compat_values = vocabulary.values.filter(pl.col("field").is_in(compat)).select("norm", "value").unique("norm")
    device_norms = [n for n, v in compat_values.iter_rows() if names_device(v)]
    loose_device = pl.col("field").is_in(compat) & ~pl.col("norm").is_in(device_norms)
    title_ok = ((pl.col("source") == "title") & pl.col("field").is_in(list(vocabulary.title_fields() - {"Brand"}))
                & ~in_device_part & ~gift & (~pl.col("norm").str.contains(r"^ \d") | pl.col("reviewed"))
                & ~loose_device)
    # An age word in the title says whom the product is for, where the field's other title mentions do not (a list
    # of wearers aside): 32 Age Range title mentions agree with a label 3 % of the time on the shared catalog, most
    # of them gift lists ("Gifts for Women Men Kids").
    young = ((pl.col("field") == "Age Range (Description)") & (pl.col("source") == "title") & ~gift
             & pl.col("norm").str.strip_chars().is_in(list(YOUNG_TITLE_WORDS))
             & ~last_pre.is_in(list(WEARER_WORDS | NOT_A_WEARER_BESIDE))
             & ~pl.col("post").is_in(list(WEARER_WORDS | NOT_A_WEARER_BESIDE)))
    title_ok = title_ok | possessive | young
    device_ok = pl.col("field").is_in(compat) & (in_device_part | compat_cued)
    cued = pl.col("field_cued") & ~gift & (~in_device_part | pl.col("field").is_in(compat))
    brand = (pl.col("field") == "Brand") & (pl.col("source") == "title") & (pl.col("start") == 0)
    kept = m.with_columns((device_ok | cued | brand).alias("cued"), (title_ok | device_ok | cued | brand).alias("keep"),
                          last_pre.alias("_last"))
    kept = kept.filter(pl.col("keep") | (negated & (pl.col("field_cued") | device_ok | (pl.col("source") == "title"))))
    return kept.select("row", "field", "value",
                       pl.when(negated).then(pl.lit(CONTRADICTED)).otherwise(pl.lit(STATED)).alias("polarity"),
                       "source", "segment", "start", "end", "cued", imitation.alias("imitation"))


COMMON_SHARE = 0.02  # see FactVocabulary.common


def learn_common(mentions: pl.DataFrame, n_products: int, share: float = COMMON_SHARE) -> frozenset[str]:
    """Value norms mentioned in the text of at least `share` of `n_products` products (FactVocabulary.common)."""
    if not n_products:
        return frozenset()
    df = mentions.group_by("norm").agg(pl.col("row").n_unique().alias("n"))
    return frozenset(df.filter(pl.col("n") >= share * n_products).get_column("norm").to_list())


def learn_title_rates(mentions: pl.DataFrame, labels: pl.DataFrame, min_mentions: int = 30) -> dict[str, float]:
    """Per field, the share of its title mentions that a product's own label for that field agrees with.

    Only products that carry a label for the field count, so a field whose values name other things in titles
    (Department "Men" in a brand, Mounting Type "Wall" in "wall clock") scores low. Fields with fewer than
    `min_mentions` such mentions get no rate (their titles are not read).
    """
    title = mentions.filter(pl.col("source") == "title").select("row", "field", "norm").unique()
    labelled = labels.select("row", "field").unique()
    agree = labels.select("row", "field", "norm", pl.lit(True).alias("agree"))
    scored = (title.join(labelled, on=["row", "field"]).join(agree, on=["row", "field", "norm"], how="left")
              .group_by("field").agg(pl.len().alias("n"), pl.col("agree").fill_null(False).mean().alias("rate"))
              .filter(pl.col("n") >= min_mentions))
    return {f: round(float(r), 4) for f, r in scored.select("field", "rate").iter_rows()}


# What `find_mentions` and `read_mentions` read of a segment: two segments alike in these give the same text facts.
SEGMENT_KEY = ("source", "norm", "breaks", "header", "for_key")


def distinct_segments(segments: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(keyed, texts): each product segment with the id of its distinct text, and one row per distinct text.

    Two segments are one text when their source, surface text and its breaks, bullet header and title for-parts
    (SEGMENT_KEY) are equal. A catalog repeats its texts (a brand's bullets, a resold title; a generated catalog
    draws every page from a few thousand real ones), so the text facts are read once per distinct text and joined
    back.

    Args:
        segments: `product_segments` of some products.

    Returns:
        keyed: (row, source, segment, text_row): the product segments and their text's id.
        texts: a `product_segments` frame of the distinct texts, in first-seen order: `row` is the text's id
            (Int32), `segment` 0.
    """
    parts = [pl.col(c).cast(pl.List(pl.String)).list.join(",").fill_null("") for c in ("for_from", "for_to")]
    with_key = segments.with_columns(pl.concat_str(parts, separator="|").alias("for_key"))
    texts = (with_key.unique(list(SEGMENT_KEY), keep="first", maintain_order=True)
             .select(pl.int_range(pl.len(), dtype=pl.Int32).alias("row"), "source",
                     pl.lit(0, dtype=pl.Int32).alias("segment"), "norm", "breaks", "header", "for_from", "for_to",
                     "for_key"))
    keyed = (with_key.join(texts.select(pl.col("row").alias("text_row"), *SEGMENT_KEY), on=list(SEGMENT_KEY),
                           how="left", maintain_order="left")
             .select("row", "source", "segment", "text_row"))
    return keyed, texts.drop("for_key")


def _with_evidence(read: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """`read_mentions` rows with their evidence: CONTEXT_CHARS of the segment's surface text on each side."""
    context = segments.select("row", "source", "segment", "norm")
    window = pl.max_horizontal(pl.col("start") - CONTEXT_CHARS, pl.lit(0))
    return (read.join(context, on=["row", "source", "segment"], how="left")
            .with_columns(pl.col("norm").str.slice(window, pl.col("end") - window + CONTEXT_CHARS)
                          .str.strip_chars().alias("evidence"))
            .drop("norm"))


def segment_facts(segments: pl.DataFrame, vocabulary: FactVocabulary, table: FieldTable) -> pl.DataFrame:
    """The text facts of the segments (`read_mentions` with evidence), each distinct text read once.

    Equal to `read_mentions(find_mentions(segments, ...), segments, ...)` with its evidence: what a segment's
    mentions mean depends on the segment alone (its text, header and, of a title, its for-parts;
    `distinct_segments`).

    Returns:
        (row, field, value, polarity, source, segment, start, end, cued, imitation, evidence), per product segment.
    """
    keyed, texts = distinct_segments(segments)
    read = _with_evidence(read_mentions(find_mentions(texts, vocabulary), texts, vocabulary, table), texts)
    columns = read.columns
    return (keyed.join(read.drop("source", "segment").rename({"row": "text_row"}), on="text_row")
            .drop("text_row").select(columns))


# Distinct texts a SegmentReader keeps at most: past this it forgets them and starts again, so a catalog of unique
# pages (a real one at 10M) holds no more than this many texts' mentions and facts: about 840 bytes a text
# (measured on the generated catalog's 57,049 texts of 25k products), 0.4 GB at the most.
MAX_KEPT_TEXTS = 500_000


class SegmentReader:
    """Reads segments once per distinct text across calls: a catalog read in slices meets its texts in every slice.

    Keeps each distinct text (SEGMENT_KEY) it has met with its mentions (`find_mentions`) and its text facts
    (`read_mentions` with evidence), and reads only the texts a call brings new. What it returns equals reading
    every segment afresh (`segment_facts`); the mentions are those of one vocabulary's values and the facts those of
    one vocabulary (a call with another starts again). At most `max_texts` texts are kept (then it starts again).
    """

    def __init__(self, table: FieldTable, max_texts: int = MAX_KEPT_TEXTS) -> None:
        self.table = table
        self.max_texts = max_texts
        self._values: pl.DataFrame | None = None
        self._vocabulary: FactVocabulary | None = None
        self._reset()

    def _reset(self) -> None:
        self._texts = pl.DataFrame(schema={"row": pl.Int32, "source": pl.String, "segment": pl.Int32,
                                           "norm": pl.String, "breaks": pl.String, "header": pl.String,
                                           "for_from": pl.List(pl.Int32), "for_to": pl.List(pl.Int32),
                                           "for_key": pl.String})
        self._mentions: pl.DataFrame | None = None
        self._facts: pl.DataFrame | None = None
        self._read: pl.DataFrame = pl.DataFrame(schema={"row": pl.Int32})

    def _keyed(self, segments: pl.DataFrame, vocabulary: FactVocabulary) -> pl.DataFrame:
        """(row, source, segment, text_row) of the segments, the texts new to the reader added with their mentions."""
        if self._values is not vocabulary.values or self._texts.height > self.max_texts:
            self._reset()
            self._values, self._vocabulary = vocabulary.values, None
        parts = [pl.col(c).cast(pl.List(pl.String)).list.join(",").fill_null("") for c in ("for_from", "for_to")]
        with_key = segments.with_columns(pl.concat_str(parts, separator="|").alias("for_key"))
        known = self._texts.select(pl.col("row").alias("text_row"), *SEGMENT_KEY)
        new = (with_key.join(known, on=list(SEGMENT_KEY), how="anti")
               .unique(list(SEGMENT_KEY), keep="first", maintain_order=True)
               .select((pl.int_range(pl.len(), dtype=pl.Int32) + self._texts.height).alias("row"), "source",
                       pl.lit(0, dtype=pl.Int32).alias("segment"), "norm", "breaks", "header", "for_from", "for_to",
                     "for_key"))
        if new.height:
            # Copied out of the slice (`owned_strings`): a view would pin the slice's whole text.
            new = owned_strings(new)
            mentions = owned_strings(find_mentions(new.drop("for_key"), vocabulary))
            self._texts = pl.concat([self._texts, new])
            self._mentions = mentions if self._mentions is None else pl.concat([self._mentions, mentions])
        known = self._texts.select(pl.col("row").alias("text_row"), *SEGMENT_KEY)
        return (with_key.join(known, on=list(SEGMENT_KEY), how="left", maintain_order="left")
                .select("row", "source", "segment", "text_row"))

    def mentions(self, segments: pl.DataFrame, vocabulary: FactVocabulary) -> pl.DataFrame:
        """(row, source, field, norm): the distinct values `find_mentions` finds in each product segment's text."""
        keyed = self._keyed(segments, vocabulary)
        if self._mentions is None:
            return pl.DataFrame(schema={"row": pl.Int32, "source": pl.String, "field": pl.String, "norm": pl.String})
        found = self._mentions.select(pl.col("row").alias("text_row"), "field", "norm").unique()
        return keyed.join(found, on="text_row").select("row", "source", "field", "norm")

    def text_facts(self, segments: pl.DataFrame, vocabulary: FactVocabulary) -> pl.DataFrame:
        """`segment_facts(segments, vocabulary, table)`, each text read once for this vocabulary."""
        keyed = self._keyed(segments, vocabulary)
        if self._vocabulary is not vocabulary:
            self._vocabulary, self._facts, self._read = vocabulary, None, pl.DataFrame(schema={"row": pl.Int32})
        todo = self._texts.join(self._read, on="row", how="anti").drop("for_key")
        if todo.height or self._facts is None:
            mentions = (find_mentions(todo, vocabulary) if self._mentions is None
                        else self._mentions.join(todo.select("row"), on="row", how="semi"))
            read = owned_strings(_with_evidence(read_mentions(mentions, todo, vocabulary, self.table), todo))
            self._facts = read if self._facts is None else pl.concat([self._facts, read])
            self._read = pl.concat([self._read, todo.select("row")])
        columns = self._facts.columns
        return (keyed.join(self._facts.drop("source", "segment").rename({"row": "text_row"}), on="text_row")
                .drop("text_row").select(columns))


def extract_facts(products: pl.DataFrame, table: FieldTable, vocabulary: FactVocabulary,
                  labels: pl.DataFrame | None = None, mentions: pl.DataFrame | None = None,
                  segments: pl.DataFrame | None = None, reader: SegmentReader | None = None) -> pl.DataFrame:
    """The product facts of `products` (one row per row, field and value; FACT_SCHEMA).

    Args:
        products: products.parquet frame; `row` is the position in it.
        table: the field table.
        vocabulary: `learn_vocabulary` (+ `learn_title_rates`) of the whole catalog.
        labels: `label_options` of `products`, when the caller has them.
        mentions: `find_mentions` of its segments, when the caller has them.
        segments: `product_segments` of `products`, when the caller has them.
        reader: reads the text facts, keeping the texts it met in earlier calls (a catalog in slices).
    """
    if labels is None:
        labels = label_options(products, table)
    if segments is None:
        segments = product_segments(products)
    if mentions is None:
        text = (segment_facts(segments, vocabulary, table) if reader is None
                else reader.text_facts(segments, vocabulary))
    else:
        text = _with_evidence(read_mentions(mentions, segments, vocabulary, table), segments)
    compat = [s.name for s in table.detail_fields() if s.compatibility]
    title_device = _title_device_conflicts(labels.filter(pl.col("field").is_in(compat)), products)
    text = pl.concat([text, _fitted_facts(products, vocabulary, table, labels, compat,
                                          title_device.select("row").unique()).select(text.columns)])
    # The details name the maker; a brand the bullets or description name beside it is one the product works with
    # ("PhotoHighQuality" adapter "Compatible for Canon"), so it neither states nor contradicts the label.
    branded = labels.filter(pl.col("field") == "Brand").get_column("row").unique().to_list()
    text = text.filter(~((pl.col("field") == "Brand") & pl.col("source").is_in(["feature", "description"])
                         & pl.col("row").is_in(branded)))
    known = vocabulary.values.select("field", "norm").unique()
    # A label value outside the field's shared vocabulary (a product name as a colour, a category as a
    # department) is no fact, except a compatibility field's: device models are an open class.
    labels = pl.concat([labels.join(known, on=["field", "norm"], how="semi"),
                        labels.filter(pl.col("field").is_in(compat))]).unique(["row", "field", "norm"])
    label_facts = labels.select("row", "field", "value", pl.lit(STATED).alias("polarity"),
                                pl.lit("details").alias("source"), pl.lit(0, dtype=pl.Int32).alias("segment"),
                                pl.lit(0, dtype=pl.Int32).alias("start"), pl.col("value").str.len_bytes()
                                .cast(pl.Int32).alias("end"), pl.lit(True).alias("cued"),
                                pl.col("value").alias("evidence"), pl.lit(False).alias("imitation"))
    canonical = vocabulary.values.select("field", "norm", pl.col("value").alias("canonical"))
    other_model = pl.concat([_other_model_conflicts(labels.filter(pl.col("field").is_in(compat)), segments),
                             title_device])
    all_facts = (pl.concat([label_facts, text.select(label_facts.columns), other_model.select(label_facts.columns)])
                 .with_columns(surface(pl.col("value")).alias("norm"))
                 .join(canonical, on=["field", "norm"], how="left")
                 .with_columns(pl.coalesce("canonical", "value").alias("value")).drop("canonical", "norm"))
    all_facts = _label_first(all_facts, table)
    all_facts = _single_valued_conflicts(all_facts, vocabulary)
    all_facts = _exclusive_conflicts(all_facts)
    all_facts = _absence_conflicts(all_facts, segments, table)
    asins = products.select(pl.int_range(pl.len(), dtype=pl.Int32).alias("row"), "parent_asin")
    return _resolve(all_facts).drop("parent_asin").join(asins, on="row", how="left").select(list(FACT_SCHEMA))


def _fitted_facts(products: pl.DataFrame, vocabulary: FactVocabulary, table: FieldTable, labels: pl.DataFrame,
                  compat: list[str], mislabelled: pl.DataFrame) -> pl.DataFrame:
    """The devices the title and bullets say a product fits (ecombench.catalog.fitted), as text facts with evidence.

    Only for products whose labels name no device model, or whose title fits another device than every label names
    (`mislabelled`: row): elsewhere a label is the stronger evidence. A label naming a line only ("Apple iPad",
    "Apple Watch 38mm") says less than a title naming the model ("for iPad 6th Generation").
    """
    compat_labels = labels.filter(pl.col("field").is_in(compat))
    named = [names_model(v) for v in compat_labels.get_column("value").to_list()]
    labelled = (compat_labels.filter(pl.Series(named, dtype=pl.Boolean)).select(pl.col("row").cast(pl.Int32))
                .join(mislabelled.select(pl.col("row").cast(pl.Int32)), on="row", how="anti"))
    found = fitted_device_facts(products, vocabulary.values, table, labelled, vocabulary.device_lines)
    norm, value = surface(pl.col("text")), surface(pl.col("value")).str.strip_chars()
    # a line named without its maker ("for AirPods Pro": "Apple AirPods Pro") is found without it
    unmade = value.str.replace(r"^\S+ ", "")
    start = pl.coalesce(pl.col("norm").str.find(value, literal=True), pl.col("norm").str.find(unmade, literal=True),
                        pl.lit(0)).cast(pl.Int32)
    window = pl.max_horizontal(pl.col("start") - CONTEXT_CHARS, pl.lit(0))
    return (found.with_columns(norm.alias("norm")).with_columns(start.alias("start"))
            .with_columns((pl.col("start") + value.str.len_bytes()).cast(pl.Int32).alias("end"),
                          pl.lit(True).alias("cued"), pl.lit(False).alias("imitation"))
            .with_columns(pl.col("norm").str.slice(window, pl.col("end") - window + CONTEXT_CHARS).str.strip_chars()
                          .alias("evidence")))


def _label_first(facts: pl.DataFrame, table: FieldTable) -> pl.DataFrame:
    """Facts less the values only a title adds in a `FieldSpec.label_first` field of a product labelled in it.

    "CafePress Black Lab Mug" (B088PK1TR1, label "White/Blue Inside") names a dog, not the mug's colour; a bullet or
    the description stating the value still makes it a fact. Only labels whose values the vocabulary knows count: a
    design name ("Midnight Green", "Rose Gold Rainbow Butterfly") says less than the title's colour.
    """
    fields = [s.name for s in table.detail_fields() if s.label_first]
    if not fields:
        return facts
    indexed = facts.with_row_index("_i")
    labels = indexed.filter(pl.col("field").is_in(fields) & (pl.col("source") == "details")).select(
        "row", "field", "value").unique()
    title_only = (indexed.filter(pl.col("field").is_in(fields) & (pl.col("source") == "title")
                                 & (pl.col("polarity") == STATED))
                  .join(labels.select("row", "field").unique(), on=["row", "field"], how="semi")
                  .join(labels, on=["row", "field", "value"], how="anti"))
    return indexed.join(title_only.select("_i"), on="_i", how="anti").drop("_i")


def _single_valued_conflicts(facts: pl.DataFrame, vocabulary: FactVocabulary) -> pl.DataFrame:
    """In a single-valued field, a label value contradicted by another value the title or a cue states."""
    single = list(vocabulary.single_valued)
    stated_text = facts.filter(pl.col("field").is_in(single) & (pl.col("polarity") == STATED)
                               & (pl.col("source") != "details") & pl.col("cued"))
    labels = facts.filter(pl.col("field").is_in(single) & (pl.col("source") == "details"))
    if stated_text.is_empty() or labels.is_empty():
        return facts
    # In page order, so the values listed and the evidence quoted are the same on every run.
    text_values = (stated_text.sort("row", "field", "source", "segment", "start", "value")
                   .group_by("row", "field", maintain_order=True)
                   .agg(pl.col("value").unique(maintain_order=True).alias("text_values"),
                        pl.col("evidence").first().alias("by")))
    conflicts = (labels.join(text_values, on=["row", "field"])
                 .filter(~pl.col("text_values").list.contains(pl.col("value")))
                 .select("row", "field", "value", pl.lit(CONTRADICTED).alias("polarity"),
                         pl.lit("title").alias("source"),
                         "segment", "start", "end", pl.lit(True).alias("cued"), pl.lit(False).alias("imitation"),
                         pl.concat_str([pl.lit("states "), pl.col("text_values").list.join(", "), pl.lit(": "),
                                        pl.col("by")]).alias("evidence")))
    return pl.concat([facts, conflicts.select(facts.columns)])


_LETTERS = re.compile(r"[a-z]+")


def _other_way(only: str, other: str) -> bool:
    """Whether `other` names another way of doing what the label `only` ("Hand Wash Only") allows alone.

    It does when one of its words holds one of `only`'s (four letters or more) and another is no form of them:
    "Machine Wash" and "Dishwasher Safe" against "Hand Wash Only"; "Hand Wash" and "Hand Washable" are the same way,
    "Microwave Safe" no way of washing.
    """
    own = set(_LETTERS.findall(only.lower())) - {"only"}
    words = set(_LETTERS.findall(other.lower()))
    new = [b for b in words if not any(b.startswith(a) for a in own)]
    return bool(new) and any(a in b for a in own if len(a) >= 4 for b in words)


def _exclusive_conflicts(facts: pl.DataFrame) -> pl.DataFrame:
    """Contradictions of labels that say they are the only way ("Hand Wash Only", "Dry Clean Only").

    The page's text (not another label: a label list that holds both is no evidence either way) states another
    value of the field that names another way of doing it (`_other_way`): "MICROWAVE AND DISHWASHER SAFE" in a
    bullet contradicts a mug's "Hand Wash Only" (B07YLGSF7S).
    """
    labels = facts.filter((pl.col("source") == "details") & (pl.col("polarity") == STATED)
                          & pl.col("value").str.to_lowercase().str.ends_with(" only"))
    if labels.is_empty():
        return facts
    text = facts.filter((pl.col("source") != "details") & (pl.col("polarity") == STATED) & pl.col("cued")).select(
        "row", "field", pl.col("value").alias("other"), "source", "segment", "start", "end", "evidence")
    pairs = (labels.select("row", "field", "value").join(text, on=["row", "field"])
             .filter(pl.col("other") != pl.col("value")))
    if pairs.is_empty():
        return facts
    ways = [_other_way(v, o) for v, o in pairs.select("value", "other").iter_rows()]
    conflicts = (pairs.filter(pl.Series(ways, dtype=pl.Boolean))
                 .sort("row", "field", "value", "source", "segment", "start", "other")
                 .group_by("row", "field", "value", maintain_order=True).first()
                 .select("row", "field", "value", pl.lit(CONTRADICTED).alias("polarity"), "source", "segment",
                         "start", "end", pl.lit(True).alias("cued"), pl.lit(False).alias("imitation"),
                         pl.concat_str([pl.lit("states "), pl.col("other"), pl.lit(": "), pl.col("evidence")])
                         .alias("evidence")))
    return pl.concat([facts, conflicts.select(facts.columns).cast(facts.schema)])


_CONFLICT_SCHEMA = pl.Schema({"row": pl.Int32, "field": pl.String, "value": pl.String, "polarity": pl.String,
                              "source": pl.String, "segment": pl.Int32, "start": pl.Int32, "end": pl.Int32,
                              "cued": pl.Boolean, "evidence": pl.String, "imitation": pl.Boolean})


def _title_device_conflicts(labels: pl.DataFrame, products: pl.DataFrame) -> pl.DataFrame:
    """Contradictions of device labels whose product's title fits another device of the same line.

    "Samsung Galaxy S21" on a case whose title reads "... case for Samsung S22 Ultra 5G" (B09Q5ZJ42R): the label
    was copied from another listing (ecombench.catalog.fitted.title_names_other_device).

    Args:
        labels: the compatibility `label_options` (row, field, value, norm) of the products.
        products: the products frame; `row` is the position in it.

    Returns:
        The contradictions, one per label value, in `_CONFLICT_SCHEMA`.
    """
    named = labels.filter(pl.Series([names_device(v) for v in labels.get_column("value").to_list()],
                                    dtype=pl.Boolean))
    if named.is_empty():
        return pl.DataFrame(schema=_CONFLICT_SCHEMA)
    per_row = (named.group_by("row").agg(pl.col("value").unique().sort())
               .join(products.select(pl.int_range(pl.len(), dtype=pl.Int32).alias("row"), "title"), on="row")
               .sort("row"))
    other = [title_names_other_device(title or "", tuple(values))
             for values, title in per_row.select("value", "title").iter_rows()]
    found = (per_row.with_columns(pl.Series("other", other, dtype=pl.String)).drop_nulls("other")
             .select("row", "other", "title"))
    if found.is_empty():
        return pl.DataFrame(schema=_CONFLICT_SCHEMA)
    window = pl.max_horizontal(pl.col("start") - CONTEXT_CHARS, pl.lit(0))
    start = pl.max_horizontal(pl.col("norm").str.find(surface(pl.col("other")).str.strip_chars(), literal=True)
                              .fill_null(0), pl.lit(0)).cast(pl.Int32)
    return (named.join(found, on="row").with_columns(surface(pl.col("title")).alias("norm"))
            .with_columns(start.alias("start"))
            .select("row", "field", "value", pl.lit(CONTRADICTED).alias("polarity"), pl.lit("title").alias("source"),
                    pl.lit(0, dtype=pl.Int32).alias("segment"), "start",
                    (pl.col("start") + surface(pl.col("other")).str.strip_chars().str.len_bytes()).cast(pl.Int32)
                    .alias("end"), pl.lit(True).alias("cued"),
                    pl.concat_str([pl.lit("fits another device: "),
                                   pl.col("norm").str.slice(window, surface(pl.col("other")).str.len_bytes()
                                                            + 2 * CONTEXT_CHARS).str.strip_chars()]).alias("evidence"),
                    pl.lit(False).alias("imitation"))
            .sort("row", "field", "value").cast(_CONFLICT_SCHEMA))


def _other_model_conflicts(labels: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """Contradictions of device labels the page names only as another model ("Galaxy S8" on an "S8 Active" part).

    A compatibility label is an open class, often outside the vocabulary, so the product's own text is searched for
    it: where every mention runs on into a variant word (LIST_SAFE_VARIANTS: "active", "plus", "ultra"), the page
    names another device and contradicts the label.

    Returns the contradictions (row, field, value, polarity, source, segment, start, end, cued, evidence, imitation).

    Args:
        labels: the compatibility `label_options` (row, field, value, norm) of the products.
        segments: `product_segments` of the same products.
    """
    empty = pl.DataFrame(schema=_CONFLICT_SCHEMA)
    if labels.is_empty():
        return empty
    variants = "|".join(sorted(LIST_SAFE_VARIANTS))
    # Counted in text whose words stand two spaces apart, so that back-to-back mentions in a list ("11 pro 11 pro
    # max") do not share the space between them; surface text holds only [a-z0-9_ ], so a norm is its own regex.
    wide = pl.concat_str([pl.lit(" "), pl.col("norm").str.strip_chars().str.replace_all(" ", "  ", literal=True),
                          pl.lit(" ")])
    pairs = labels.select("row", "field", "value", "norm").join(segments.select("row", "source", "segment",
                                                                                 pl.col("norm").alias("text")),
                                                                 on="row")
    # Counted once per distinct (label, text), and the variants (a pattern per label) only where the label is found.
    counts = (pairs.select("norm", "text").unique()
              .filter(pl.col("text").str.contains(pl.col("norm").str.strip_chars(), literal=True))
              .with_columns(pl.col("text").str.replace_all(" ", "  ", literal=True).alias("wide_text"),
                            wide.alias("wide"))
              .with_columns(pl.col("wide_text").str.count_matches(pl.col("wide"), literal=True).alias("all"))
              .filter(pl.col("all") > 0)
              .with_columns(pl.col("wide_text").str.count_matches(pl.concat_str([pl.col("wide"),
                                                                                 pl.lit(f" (?:{variants}) ")]))
                            .alias("other"))
              .select("norm", "text", "all", "other"))
    hits = pairs.join(counts, on=["norm", "text"])
    denied = (hits.group_by("row", "field", "value").agg((pl.col("all").sum() == pl.col("other").sum()).alias("only"))
              .filter(pl.col("only")).drop("only"))
    if denied.is_empty():
        return empty
    order = {s: i for i, s in enumerate(SOURCES)}
    first = (hits.filter(pl.col("other") > 0).join(denied, on=["row", "field", "value"])
             .with_columns(pl.col("source").replace_strict(order, default=len(SOURCES)).alias("_rank"),
                           pl.col("text").str.find(pl.col("norm"), literal=True).cast(pl.Int32).alias("start"))
             .sort("row", "field", "value", "_rank", "segment").group_by("row", "field", "value", maintain_order=True)
             .first())
    start = pl.max_horizontal(pl.col("start") - CONTEXT_CHARS, pl.lit(0))
    conflicts = first.select(
        "row", "field", "value", pl.lit(CONTRADICTED).alias("polarity"), "source", "segment", "start",
        (pl.col("start") + pl.col("norm").str.len_bytes()).cast(pl.Int32).alias("end"), pl.lit(True).alias("cued"),
        pl.concat_str([pl.lit("names another model: "),
                       pl.col("text").str.slice(start, pl.col("norm").str.len_bytes() + 2 * CONTEXT_CHARS)
                       .str.strip_chars()]).alias("evidence"),
        pl.lit(False).alias("imitation"))
    return conflicts.select(empty.columns).cast(empty.schema)


def _absence_conflicts(facts: pl.DataFrame, segments: pl.DataFrame, table: FieldTable) -> pl.DataFrame:
    """Contradictions of label values that say the field is absent (FieldSpec.absence_values: Pattern "Solid").

    A title that names one of the field's cue words or absence cues and not the value ("... Wolf Print Curtains",
    "... Abstract Painting Curtains" against "Solid") contradicts the label, unless the word sits in the part of
    the title that says what the product is for ("Drop Cloth for Painting"); the evidence quotes the word and the
    title.
    """
    specs = [s for s in table.detail_fields() if s.absence_values]
    labels = facts.filter((pl.col("source") == "details") & (pl.col("polarity") == STATED))
    titles = segments.filter(pl.col("source") == "title").select("row", "segment", pl.col("norm").alias("title"))
    spans = (segments.filter(pl.col("source") == "title").select("row", "for_from", "for_to")
             .drop_nulls("for_from").explode("for_from", "for_to"))
    conflicts = []
    for spec in specs:
        absent = [v.lower() for v in spec.absence_values]
        cues = sorted({surface_text(c) for c in (*spec.text_cues(), *spec.absence_cues)})
        found = (labels.filter((pl.col("field") == spec.name) & pl.col("value").str.to_lowercase().is_in(absent))
                 .drop("segment").join(titles, on="row"))
        # Every cue word of the title outside its for-parts, the first one quoted.
        hits = (found.select("row", pl.col("title").str.extract_many(cues, overlapping=True).alias("cue"),
                             pl.col("title").str.find_many(cues, overlapping=True).alias("at"))
                .explode("cue", "at").drop_nulls("cue").with_row_index("_hit"))
        inside = (hits.join(spans, on="row").filter((pl.col("at") >= pl.col("for_from"))
                                                    & (pl.col("at") < pl.col("for_to"))).select("_hit"))
        first = (hits.join(inside, on="_hit", how="anti").sort("row", "at").group_by("row", maintain_order=True)
                 .agg(pl.col("cue").first().str.strip_chars()))
        found = (found.join(first, on="row", how="left")
                 .filter(pl.col("cue").is_not_null()
                         & ~pl.col("title").str.contains(pl.concat_str([pl.lit(" "), pl.col("value").str.to_lowercase(),
                                                                         pl.lit(" ")]), literal=True)))
        if found.is_empty():
            continue
        start = pl.col("title").str.find(pl.concat_str([pl.lit(" "), pl.col("cue"), pl.lit(" ")]), literal=True)
        conflicts.append(found.select(
            "row", "field", "value", pl.lit(CONTRADICTED).alias("polarity"), pl.lit("title").alias("source"),
            "segment", start.cast(pl.Int32).alias("start"),
            (start + pl.col("cue").str.len_bytes() + 1).cast(pl.Int32).alias("end"), pl.lit(True).alias("cued"),
            pl.lit(False).alias("imitation"),
            pl.concat_str([pl.lit("states "), pl.col("cue"), pl.lit(": "), pl.col("title").str.strip_chars()])
            .alias("evidence")).select(facts.columns))
    return pl.concat([facts, *conflicts]) if conflicts else facts


def _resolve(facts: pl.DataFrame) -> pl.DataFrame:
    """One row per (row, field, value), contradicted when text contradicts it and no text states it, else stated.

    An imitation qualifier contradicts the value whatever else the page says: a page selling "PU leather" calls
    the same material "premium leather" a bullet later, and a label "Leather" copies it.

    Its evidence comes from the strongest source that gave the verdict; `sources` lists every part that states it.
    """
    order = {s: i for i, s in enumerate(SOURCES)}
    facts = facts.with_columns(pl.col("source").replace_strict(order, default=len(SOURCES)).alias("_rank"),
                               (pl.col("source") != "details").alias("_text"))
    verdict = (facts.group_by("row", "field", "value")
               .agg(((pl.col("polarity") == STATED) & pl.col("_text")).any().alias("text_states"),
                    ((pl.col("polarity") == CONTRADICTED) & pl.col("_text")).any().alias("text_denies"),
                    ((pl.col("polarity") == CONTRADICTED) & pl.col("imitation")).any().alias("imitated"))
               .with_columns(pl.when((pl.col("text_denies") & ~pl.col("text_states")) | pl.col("imitated"))
                             .then(pl.lit(CONTRADICTED))
                             .otherwise(pl.lit(STATED)).alias("verdict")))
    facts = facts.join(verdict.select("row", "field", "value", "verdict"), on=["row", "field", "value"])
    sources = (facts.filter(pl.col("polarity") == STATED).sort("_rank").group_by("row", "field", "value")
               .agg(pl.col("source").unique(maintain_order=True).alias("sources")))
    best = (facts.filter(pl.col("polarity") == pl.col("verdict")).sort("row", "field", "value", "_rank", "segment",
                                                                         "start", "evidence")
            .group_by("row", "field", "value", maintain_order=True).first())
    return (best.join(sources, on=["row", "field", "value"], how="left")
            .with_columns(pl.col("sources").fill_null([]), pl.lit(None, dtype=pl.String).alias("parent_asin"))
            .select([pl.col(c).cast(t) for c, t in FACT_SCHEMA.items()]).sort("row", "field", "value"))


_Frame = TypeVar("_Frame", pl.DataFrame, pl.LazyFrame)


def stated_rows(facts: _Frame) -> _Frame:
    """The stated facts as detail rows (row, key, value): what `detail_rows` gives of labels, from the whole page.

    Sampling eligibility, the value vocabulary of exclusions and the answer-set options read these.
    """
    return facts.filter(pl.col("polarity") == STATED).select("row", pl.col("field").alias("key"), "value")


# What a product dict's "facts" key holds: one struct per fact.
FACT_STRUCT_FIELDS = ("field", "value", "polarity", "source", "sources", "evidence")


def facts_column(facts: pl.DataFrame, by: str = "row") -> pl.DataFrame:
    """(`by`, facts): each product's facts as a list of structs (FACT_STRUCT_FIELDS), in (field, value) order.

    Args:
        facts: a facts frame (FACT_SCHEMA).
        by: "row" or "parent_asin": what the products are keyed by.
    """
    return (facts.sort("row", "field", "value").group_by(by, maintain_order=True)
            .agg(pl.struct(*FACT_STRUCT_FIELDS).alias("facts")))


def with_facts(products: pl.DataFrame, facts: pl.DataFrame) -> pl.DataFrame:
    """`products` with a "facts" column: each product's facts by parent_asin ([] for a product with none)."""
    column = facts_column(facts.filter(pl.col("parent_asin").is_in(products.get_column("parent_asin").implode())),
                          by="parent_asin")
    return (products.drop("facts", strict=False).join(column, on="parent_asin", how="left", maintain_order="left")
            .with_columns(pl.col("facts").fill_null([])))


def page_facts(product: Mapping[str, Any], spec: FieldSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(facts stating a value of the field, facts contradicting one) of one product dict, each {"value", ...}.

    From the product's "facts" (`with_facts`, the answer-set index's rows); a product without them (a raw record)
    is read by its `details` options, each as a fact its label states.
    """
    facts = product.get("facts")
    if facts is None:
        return [{"value": o, "evidence": o, "source": "details", "sources": ["details"]}
                for o in detail_options(product, spec)], []
    mine = [f for f in facts if f["field"] == spec.name]
    return [f for f in mine if f["polarity"] == STATED], [f for f in mine if f["polarity"] == CONTRADICTED]


def page_values(product: Mapping[str, Any], spec: FieldSpec) -> list[str]:
    """The values the product's page states for the field (`page_facts`), in fact order."""
    return [f["value"] for f in page_facts(product, spec)[0]]


def facts_by_product(facts: pl.DataFrame, rows: Iterable[int] | None = None) -> dict[int, list[dict[str, Any]]]:
    """{row: [fact dicts]} of the given rows (all when None), in (field, value) order."""
    chosen = facts if rows is None else facts.filter(pl.col("row").is_in(list(rows)))
    out: dict[int, list[dict[str, Any]]] = {}
    for rec in chosen.drop("row").with_columns(chosen.get_column("row")).to_dicts():
        out.setdefault(rec.pop("row"), []).append(rec)
    return out


def field_values(product_facts: Sequence[dict[str, Any]], field_name: str,
                 polarity: str = STATED) -> list[str]:
    """The values of `field_name` a product's facts give with `polarity` (in fact order)."""
    return [f["value"] for f in product_facts if f["field"] == field_name and f["polarity"] == polarity]


def normalise_value(value: str) -> str:
    """A value as the checkers compare it (ecombench.text.normalize)."""
    return normalize(value)


@dataclass(frozen=True)
class CatalogFacts:
    """The facts of a catalog and the vocabulary they were read with (`build_catalog_facts`).

    The facts are held in memory (`frame`) or only in a parquet file (`file`, `facts_in_slices(..., file=...)`):
    a large catalog's facts need not fit in memory while its knowledge is learned and stored.
    """

    frame: pl.DataFrame | None
    vocabulary: FactVocabulary
    file: Path | None = None

    @property
    def facts(self) -> pl.DataFrame:
        """The facts (FACT_SCHEMA), read from `file` when not held in memory."""
        if self.frame is not None:
            return self.frame
        assert self.file is not None, "CatalogFacts holds neither a frame nor a file"
        return pl.read_parquet(self.file)

    def scan(self) -> pl.LazyFrame:
        """The facts as a lazy frame (over `file` when not held in memory)."""
        return self.frame.lazy() if self.frame is not None else pl.scan_parquet(self.file)  # type: ignore[arg-type]


# The products.parquet columns facts read.
FACT_COLUMNS = ("parent_asin", "title", "features", "description", "store", "details")
# What each pass of `facts_in_slices` reads: the labels, the text, the text with each product's id.
LABEL_COLUMNS = ("details",)
TEXT_COLUMNS = ("title", "features", "description", "store")
# A catalog in slices: called with the columns a pass reads, returns a fresh iterator over consecutive frames of
# products.parquet that hold at least those columns (in-memory frames may hold more).
ProductSlices = Callable[[tuple[str, ...]], Iterator[pl.DataFrame]]


def build_catalog_facts(products: pl.DataFrame, table: FieldTable) -> CatalogFacts:
    """Learn the vocabulary from the whole catalog and read every product's facts (one frame in memory).

    Args:
        products: a products.parquet frame with FACT_COLUMNS; facts' `row` is the position in it.
        table: the field table.
    """
    return facts_in_slices(lambda columns: iter([products]), table)


def with_base(own: FactVocabulary, base: FactVocabulary, labelled: frozenset[str]) -> FactVocabulary:
    """A catalog's own vocabulary with another catalog's (`base`) beneath it.

    The base's values are read too, where the own vocabulary has no value of that spelling, and a value stays in
    the fields that carry it most in both catalogs' labels together (OWNER_SHARE); a field the catalog's
    own labels never state (`labelled` holds those they do) takes the base's single-valued verdict; title rates
    and common words are learned later from both catalogs' counts (`_with_counts`). A catalog whose pages carry
    no labels (the shared electronics file with reviews) is read with the values another catalog learned.

    Args:
        own: `learn_vocabulary` of the catalog (title rates and common words not yet learned).
        base: a stored vocabulary (`read_vocabulary`).
        labelled: fields that at least one of the catalog's own labels states.
    """
    known = own.values.select("field", "norm")
    extra = base.values.join(known, on=["field", "norm"], how="anti").select(own.values.columns)
    values = pl.concat([own.values, extra.cast(own.values.schema)])
    # A value belongs to the fields both catalogs' labels carry it in most (`_owned_values` on the pooled counts):
    # "Heavy Duty" that a few of the catalog's Style labels carry stays a Special Feature that the base's carry.
    pooled = (pl.concat([own.values, base.values.cast(own.values.schema)]).group_by("field", "norm")
              .agg(pl.col("products").sum()))
    owned = _owned_values(pooled.filter(pl.col("products") > 0), min_share=OWNER_SHARE)
    values = pl.concat([values.join(owned.select("field", "norm"), on=["field", "norm"], how="semi"),
                        values.filter(pl.col("products") == 0)]).unique(["field", "norm"]).sort("field", "norm")
    single = own.single_valued | frozenset(f for f in base.single_valued if f not in labelled)
    return FactVocabulary(values=values, single_valued=single, title_rates={**base.title_rates, **own.title_rates},
                          min_title_rate=own.min_title_rate, common=own.common,
                          device_lines=_pooled_lines(own.device_lines, base.device_lines))


def _pooled_lines(own: frozenset[DeviceLine], base: frozenset[DeviceLine]) -> frozenset[DeviceLine]:
    """A catalog's own device lines and the base's it does not name itself."""
    return own | frozenset(b for b in base if not any(o.words == b.words for o in own))


def facts_in_slices(slices: ProductSlices, table: FieldTable, base: FactVocabulary | None = None,
                    each: Callable[[pl.DataFrame], None] | None = None, file: Path | None = None) -> CatalogFacts:
    """`build_catalog_facts` over a catalog given in slices: only one slice's text is in memory at a time.

    Three passes over the slices: the labels and titles (for the vocabulary and the device lines' candidates), the
    mentions (for the title rates and the common words, kept as counts, and the uses of the device lines), the
    facts.

    Args:
        slices: the catalog's products in consecutive frames (ProductSlices; the passes ask for LABEL_COLUMNS with
            the title, TEXT_COLUMNS and TEXT_COLUMNS with parent_asin).
        table: the field table.
        base: another catalog's vocabulary read beneath this one's (`with_base`), its title agreement and mention
            counts added to this one's (`_with_counts`); None reads only this one's.
        each: called with each slice's facts as they are read (rows numbered in the whole catalog).
        file: where to write the facts (parquet): each slice's are written to a part beside it as they are read
            and the file from the parts, so no more than a slice's facts are in memory; None keeps them in memory.
    """
    # What is kept of a slice is copied out of it (`owned_strings`): polars strings are views that would pin every
    # slice's text, the whole catalog's, while the passes run.
    labels, mentions = [], []
    offset = 0
    for frame in slices((*LABEL_COLUMNS, "title")):
        labels.append(owned_strings(label_options(frame, table).with_columns(pl.col("row") + offset)))
        mentions.append(owned_strings(line_mentions(frame.get_column("title"))))
        offset += frame.height
    candidates = line_candidates(pl.concat(mentions) if mentions else line_mentions(pl.Series([], dtype=pl.String)))
    n_products = offset
    # rechunk=False: the slices' labels are shared, not copied a second time.
    all_labels = pl.concat(labels, rechunk=False) if labels else label_options(pl.DataFrame(schema={"details": pl.List(
        pl.Struct({"key": pl.String, "raw_key": pl.String, "value": pl.String}))}), table)
    vocabulary = learn_vocabulary(all_labels, table)
    if base is not None:
        vocabulary = with_base(vocabulary, base, frozenset(all_labels.get_column("field").unique().to_list()))
    title_counts, df_counts, uses = [], [], []
    offset = 0
    reader = SegmentReader(table)
    for frame in slices(TEXT_COLUMNS):
        found = reader.mentions(product_segments(frame), vocabulary).with_columns(pl.col("row") + offset)
        title_counts.append(owned_strings(_title_agreement(found, all_labels)))
        df_counts.append(owned_strings(found.filter(pl.col("source") != "store").group_by("norm")
                                       .agg(pl.col("row").n_unique().alias("n"))))
        text = [frame.get_column(c).explode().rename("text") for c in ("features", "description") if c in frame.columns]
        uses.append(line_uses(pl.concat(text) if text else pl.Series("text", [], dtype=pl.String), candidates))
        offset += frame.height
    lines = device_lines(candidates, pl.concat(uses) if uses else line_uses(pl.Series([], dtype=pl.String),
                                                                              candidates))
    vocabulary = _with_counts(vocabulary, _summed_title_counts(title_counts), _summed_mentions(df_counts),
                              n_products, base)
    vocabulary = dataclasses.replace(vocabulary, device_lines=_pooled_lines(lines, vocabulary.device_lines))
    facts = []
    parts = _FactParts(file) if file is not None else None
    offset = 0
    for frame, labels_here in zip(slices(("parent_asin", *TEXT_COLUMNS)), labels):
        local = labels_here.with_columns(pl.col("row") - offset)
        read = owned_strings(extract_facts(frame, table, vocabulary, labels=local, reader=reader)
                             .with_columns(pl.col("row") + offset))
        if each is not None:
            each(read)
        if parts is not None:
            parts.add(read)
        else:
            facts.append(read)
        offset += frame.height
    if parts is not None:
        parts.finish()
        return CatalogFacts(frame=None, vocabulary=vocabulary, file=file)
    empty = pl.DataFrame(schema=FACT_SCHEMA)
    return CatalogFacts(frame=pl.concat(facts) if facts else empty, vocabulary=vocabulary)


class _FactParts:
    """A facts parquet file written slice by slice: each slice a part in a folder beside it, then the file."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.folder = file.parent / f".{file.name}.parts"
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        self.parts: list[Path] = []

    def add(self, facts: pl.DataFrame) -> None:
        self.parts.append(self.folder / f"part-{len(self.parts):06d}.parquet")
        facts.write_parquet(self.parts[-1])

    def finish(self) -> None:
        """Write the file from the parts, one part in memory at a time, and remove them.

        Each part is handed to the parquet sink as one frame of one chunk, as the slice was when read: polars
        lays a chunk's row groups and pages out by its chunks, so the file has the bytes `write_parquet` gives the
        slices' facts concatenated in memory (a `scan_parquet` of the parts streams in other chunks: the same rows,
        other pages).
        """
        def frames(with_columns: list[str] | None, predicate: Any, n_rows: int | None,
                   batch_size: int | None) -> Iterator[pl.DataFrame]:
            for part in self.parts:
                frame = pl.read_parquet(part).rechunk()
                yield frame if with_columns is None else frame.select(with_columns)

        try:
            if self.parts:
                register_io_source(frames, schema=FACT_SCHEMA).sink_parquet(self.file)
            else:
                pl.DataFrame(schema=FACT_SCHEMA).write_parquet(self.file)
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def _title_agreement(mentions: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """(field, n, agree): title mentions of products that carry a label for the field, and how many agree."""
    title = mentions.filter(pl.col("source") == "title").select("row", "field", "norm").unique()
    labelled = labels.select("row", "field").unique()
    agree = labels.select("row", "field", "norm", pl.lit(True).alias("agree"))
    return (title.join(labelled, on=["row", "field"]).join(agree, on=["row", "field", "norm"], how="left")
            .group_by("field").agg(pl.len().alias("n"), pl.col("agree").fill_null(False).sum().alias("agree")))


def _summed_title_counts(parts: list[pl.DataFrame]) -> dict[str, tuple[int, int]]:
    """`_title_agreement` of each slice -> field -> (mentions, agreeing), summed over the slices."""
    if not parts:
        return {}
    summed = pl.concat(parts).group_by("field").agg(pl.col("n").sum(), pl.col("agree").sum()).sort("field")
    return {f: (int(n), int(a)) for f, n, a in summed.select("field", "n", "agree").iter_rows()}


def _summed_mentions(parts: list[pl.DataFrame]) -> dict[str, int]:
    """(norm, n) products mentioning each norm, per slice -> norm -> products, summed over the slices."""
    if not parts:
        return {}
    summed = pl.concat(parts).group_by("norm").agg(pl.col("n").sum()).sort("norm")
    return {norm: int(n) for norm, n in summed.iter_rows()}


def _title_rates(counts: Mapping[str, tuple[int, int]], min_mentions: int = 30) -> dict[str, float]:
    """Per field with at least `min_mentions` title mentions, the share of them its label agrees with."""
    return {f: round(a / n, 4) for f, (n, a) in sorted(counts.items()) if n >= min_mentions}


def _common(mention_products: Mapping[str, int], n_products: int, share: float = COMMON_SHARE) -> frozenset[str]:
    """Norms mentioned by at least `share` of `n_products` products."""
    if not n_products:
        return frozenset()
    return frozenset(norm for norm, n in mention_products.items() if n >= share * n_products)


def _with_counts(vocabulary: FactVocabulary, title_counts: dict[str, tuple[int, int]],
                 mention_products: dict[str, int], n_products: int, base: FactVocabulary | None) -> FactVocabulary:
    """`vocabulary` with its title rates and common words, from this catalog's counts and the base's.

    With a base that kept its counts (`FactVocabulary.products`), the counts of both catalogs are added before the
    rates and common words are computed, as for one catalog of both: a new category's pages are read as a build
    over both would read them. A file of phone cases alone finds "scratch resistant" in 2 % of its pages, which
    makes it a common word read only with a cue, though in a catalog of both it is not. A base without counts
    (stored before they were kept) lends its title rates to fields this catalog cannot measure and its common words.
    """
    if base is not None and base.products:
        title_counts = {f: (title_counts.get(f, (0, 0))[0] + base.title_counts.get(f, (0, 0))[0],
                            title_counts.get(f, (0, 0))[1] + base.title_counts.get(f, (0, 0))[1])
                        for f in sorted(set(title_counts) | set(base.title_counts))}
        mention_products = {n: mention_products.get(n, 0) + base.mention_products.get(n, 0)
                            for n in sorted(set(mention_products) | set(base.mention_products))}
        n_products += base.products
        rates, common = _title_rates(title_counts), _common(mention_products, n_products)
    else:
        rates = {**vocabulary.title_rates, **_title_rates(title_counts)}
        common = _common(mention_products, n_products) | (base.common if base is not None else frozenset())
    return dataclasses.replace(vocabulary, title_rates=rates, common=common, title_counts=title_counts,
                               mention_products=mention_products, products=n_products)


def write_vocabulary(vocabulary: FactVocabulary, folder: Path) -> list[str]:
    """Store a vocabulary in `folder` (fact_vocabulary.parquet and .json). Returns the file names."""
    vocabulary.values.write_parquet(folder / "fact_vocabulary.parquet")
    (folder / "fact_vocabulary.json").write_text(json.dumps({
        "single_valued": sorted(vocabulary.single_valued), "title_rates": vocabulary.title_rates,
        "min_title_rate": vocabulary.min_title_rate, "common": sorted(vocabulary.common),
        "products": vocabulary.products, "title_counts": {f: list(c) for f, c in vocabulary.title_counts.items()},
        "mention_products": vocabulary.mention_products,
        "device_lines": [[d.words, d.maker, d.spelling, d.bare, list(d.continued)]
                         for d in sorted(vocabulary.device_lines)]},
        indent=1) + "\n", encoding="utf-8")
    return ["fact_vocabulary.parquet", "fact_vocabulary.json"]


def read_vocabulary(folder: Path) -> FactVocabulary:
    """A vocabulary `write_vocabulary` stored.

    Raises:
        OSError, ValueError, polars.exceptions.PolarsError: a file is missing or malformed.
    """
    meta = json.loads((folder / "fact_vocabulary.json").read_text(encoding="utf-8"))
    return FactVocabulary(values=pl.read_parquet(folder / "fact_vocabulary.parquet"),
                          single_valued=frozenset(meta["single_valued"]), title_rates=meta["title_rates"],
                          min_title_rate=meta["min_title_rate"], common=frozenset(meta["common"]),
                          title_counts={f: (int(c[0]), int(c[1])) for f, c in meta.get("title_counts", {}).items()},
                          mention_products={n: int(c) for n, c in meta.get("mention_products", {}).items()},
                          products=int(meta.get("products", 0)),
                          device_lines=frozenset(DeviceLine(w, m, s, b, tuple(c))
                                                 for w, m, s, b, c in meta.get("device_lines", [])))
