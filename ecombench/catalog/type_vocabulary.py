"""The product-type vocabulary learned from a catalog snapshot: which words name what a product is.

A product's type is the noun phrase that heads its title (ecombench.catalog.product_type). Which words can
head it is learned from the snapshot being built, not listed by hand, so a catalog of guitars, jerseys or
mailboxes types its products without a code change:

- a **type noun** is a word that ends the head of titles from several stores (the part of a title before
  "for", "with", a comma...: "Neoprene Oven **Mitt**", "Hungary Sports Training **Jersey**"), or that ends one
  such head and a category name of the catalog ("Oven **Mitts**");
- a **modifier** is a word that stays with the noun after it: the word before a type noun in category names
  ("**Oven** Mitts", "**Screen** Protectors") or in the title heads of several stores ("**Wall** Mount");
- a **compound** is a pair of words ending a leaf category name ("Candlestick Holders", "Electric Toothbrushes"):
  the kind of a generic noun a title's type keeps (`ecombench.catalog.product_type`).

Words are not types when the catalog shows they are something else: a value of the products' own colour,
material or size ("Black", "Glass", "Medium"), a quantity or unit after a number ("8 **oz**", "3 **Pack**"),
a word the English lexicon knows but never as a noun ("New", "Funny", lemminflect's dictionary). What data
cannot show is the reviewed override `tables/product_types.toml`: nouns to add, words to remove, modifiers.

The learning reads distinct titles, category names and detail values (a 3.7M-product generated catalog
has about 7,000 distinct titles): per-string Python, counts in polars, no loop over products. The same
snapshot always gives the same vocabulary.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl
from lemminflect import getAllLemmas

from ecombench.text import STOPWORDS, tokens

OVERRIDE_TABLE = Path(__file__).resolve().parent.parent / "tables" / "product_types.toml"

# Where a title's head ends: what follows names the fitted device, a feature or a variant.
HEAD_END = re.compile(r"\s*(?:[,|;:()\[\]{}+【】（）]| [-–—] |\b(?:for|compatible with|compatible for|fits|fit for|"
                      r"with|w/|includes?|including|made for|designed for|works with|by|not fit)\b)\s*", re.IGNORECASE)
# What says, after a title's head, what the product fits ("... Heads for Philips Sonicare", "... Case (Compatible").
FITS_NEXT = re.compile(r"(?i)^\s*[,(\[]?\s*(?:for|compatible with|compatible for|fits?|fit for|designed for|made for|"
                       r"works with|replacement for)\b")
LINE_LABEL = re.compile(r"^\s*(?:\S+\s+){0,3}\S+:\s+")  # "Funko POP! TV: Marvel ..." names a product line
WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")

# Detail fields whose values are a product's variant, never its type ("Black", "Glass", "Medium").
VARIANT_FIELDS = ("Color", "Material", "Size")


@dataclass(frozen=True)
class TypeThresholds:
    """The learning's thresholds (measured in benchmarks/RESULTS.md, "Product types from the catalog's vocabulary").

    Attributes:
        head_stores: stores whose title heads must end in a word for it to be a type noun without a category
            ending in it.
        head_share: ... and the share of the distinct titles holding the word whose head ends in it ("phone"
            is in 354 titles and ends 3 heads: a word of fitted devices, not of types).
        category_head_share: that share for a word a leaf category name ends in ("Strap", "Light": 6 % of the
            titles holding them; "Women", "Wall": under 1 %).
        category_stores: stores whose leaf category names must end in a word that no title head ends in, for
            it to be a type noun; titles must hold it, never before another word ("Couches", "Easels"; not
            "Kitchen", "Storage", "Power").
        modifier_stores: stores whose title heads must put a word just before their last word for it to be a
            modifier without a category name doing so.
        max_number_share: above this share of the distinct titles holding a word, it follows a number and is a
            unit or a count ("oz", "pack", "pcs"), not a type.
        collective_share: from this share of the distinct titles holding a type noun, "<noun> of <number>"
            follows it ("Set of 4"): a collective noun, a type only with the nouns before it ("Socket Set").
        accessory_stores, accessory_share: a type noun names an accessory when the title heads of this many
            stores, and this share of the stores whose heads end in it, end in it and go on with what the product
            fits ("... Replacement Heads for Philips Sonicare"). Measured on the shared catalog: band 39 of 47
            stores, head 19 of 28, case 132 of 259, cable 16 of 38, switch 4 of 13; against ball 2 of 10, pot 3 of
            16, ornament 5 of 36, flag 3 of 32, jar 1 of 11, display, candle, seed 0.
    """

    head_stores: int = 3
    head_share: float = 0.08
    category_head_share: float = 0.02
    category_stores: int = 2
    modifier_stores: int = 3
    max_number_share: float = 0.5
    collective_share: float = 0.1
    accessory_stores: int = 2
    accessory_share: float = 0.25


def heads(title: str) -> list[str]:
    """The title cut where its head ends, without a product-line label before a colon.

    >>> heads("PETIMETI Wall Mount for EERO 6 Mesh WiFi System")
    ['PETIMETI Wall Mount', 'EERO 6 Mesh WiFi System']
    """
    return [s.strip() for s in HEAD_END.split(LINE_LABEL.sub("", title or "", count=1)) if s and s.strip()]


# What opens a title segment that names what comes with the product ("Telephoto Lens with Nikon Mount", "Touchpad
# Trackpad with Cable").
INCLUDED_OPENERS = frozenset({"with", "w/", "include", "includes", "including"})


def opened_heads(title: str) -> list[tuple[str, str]]:
    """Each segment of `heads(title)` with what opens it.

    The opener is the lower-cased word or mark that ends the head just before the segment ("" for the first).

    >>> opened_heads("PanaVise 684-101 AMPS Tipper with Adjustment Wheel,Black")
    [('', 'PanaVise 684-101 AMPS Tipper'), ('with', 'Adjustment Wheel'), (',', 'Black')]
    """
    text = LINE_LABEL.sub("", title or "", count=1)
    out, opener, start = [], "", 0
    for m in HEAD_END.finditer(text):
        if text[start:m.start()].strip():
            out.append((opener, text[start:m.start()].strip()))
        opener, start = m.group().strip().lower(), m.end()
    if text[start:].strip():
        out.append((opener, text[start:].strip()))
    return out


def word_token(word: str) -> str:
    """A title word as the vocabulary holds it: its first normalised token, singular, lower case ("" if none)."""
    t = tokens(word)
    return t[0] if t else ""


@dataclass(frozen=True)
class TypeOverride:
    """The reviewed override on top of the learned vocabulary (tables/product_types.toml), as tokens.

    Attributes:
        nouns: type nouns the data may not show.
        remove: words that are never type nouns nor modifiers, whatever the data says.
        modifiers: modifiers the data may not show.
        collectives: type nouns that name a type only with the nouns before them ("Kit", "Bundle").
        source: the table's path.
    """

    nouns: frozenset[str] = frozenset()
    remove: frozenset[str] = frozenset()
    modifiers: frozenset[str] = frozenset()
    collectives: frozenset[str] = frozenset()
    source: str = ""


@lru_cache(maxsize=4)
def load_type_override(path: str | None = None) -> TypeOverride:
    """The override table (default tables/product_types.toml), its words as normalised tokens."""
    src = Path(path) if path else OVERRIDE_TABLE
    data = tomllib.loads(src.read_text(encoding="utf-8"))

    def words(key: str) -> frozenset[str]:
        return frozenset(t for w in data.get(key, []) for t in tokens(w))

    return TypeOverride(nouns=words("nouns"), remove=words("remove"), modifiers=words("modifiers"),
                        collectives=words("collectives"), source=str(src))


@dataclass(frozen=True)
class TypeVocabulary:
    """The words that name what a product is, and those that stay with them.

    Attributes:
        nouns: type nouns (normalised tokens: singular, lower case).
        modifiers: words kept before a run of type nouns ("wall" of "Wall Mount").
        collectives: type nouns that are a type only with a type noun before them ("set" of "Socket Set";
            "Brush Head Replacement Set" is a brush head, "3PCs Set" says nothing).
        rare_heads: nouns too rare in the catalog to be type nouns that end a title head all the same ("Hand Mixer
            **Beaters**", "Custom Book **Embosser**"): a type noun only right after a run of type nouns at the
            end of a head (`ecombench.catalog.product_type.segment_runs`).
        compounds: "<word> <noun>" pairs (tokens) ending a leaf category name of the catalog ("candlestick holder",
            "electric toothbrush"): a word the title puts before a generic noun that says which kind it is.
        accessories: type nouns that name an accessory of another product ("head", "band", "case"): titles heading
            with them go on with what the product fits (`TypeThresholds.accessory_share`).
    """

    nouns: frozenset[str]
    modifiers: frozenset[str]
    collectives: frozenset[str] = frozenset()
    rare_heads: frozenset[str] = frozenset()
    compounds: frozenset[str] = frozenset()
    accessories: frozenset[str] = frozenset()

    @property
    def digest(self) -> str:
        """sha256 of the sorted words: what a type computed with this vocabulary depends on."""
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()

    def to_json(self) -> dict[str, list[str]]:
        """{"nouns", "modifiers", "collectives", "rare_heads", "compounds", "accessories"}: sorted lists of words."""
        return {"nouns": sorted(self.nouns), "modifiers": sorted(self.modifiers),
                "collectives": sorted(self.collectives), "rare_heads": sorted(self.rare_heads),
                "compounds": sorted(self.compounds), "accessories": sorted(self.accessories)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TypeVocabulary:
        """The vocabulary `to_json` wrote."""
        return cls(nouns=frozenset(data["nouns"]), modifiers=frozenset(data["modifiers"]),
                   collectives=frozenset(data.get("collectives", ())),
                   rare_heads=frozenset(data.get("rare_heads", ())),
                   compounds=frozenset(data.get("compounds", ())),
                   accessories=frozenset(data.get("accessories", ())))

    @classmethod
    def of_override(cls, override: TypeOverride | None = None) -> TypeVocabulary:
        """The override's words alone: for a product typed without any catalog (tests, a single record)."""
        override = override or load_type_override()
        return cls(nouns=override.nouns - override.remove, modifiers=override.modifiers - override.remove,
                   collectives=override.collectives - override.remove)


# ---------------------------------------------------------------------------------------------------------------
# Evidence, vectorised over distinct titles

_WORD_RE = r"[A-Za-z][A-Za-z'\-]*"
# A trailing word holding a digit or fewer than two letters: a size, count or code after the head's noun
# ("Neoprene Oven Mitt (1)", "Moisture Shampoo 8oz Y").
_TRAILING = r"(?:\s+(?:\S*\d\S*|[^A-Za-z\s]*[A-Za-z]?[^A-Za-z\s]*))+\s*$"


def head_expr(title: pl.Expr) -> pl.Expr:
    """The first head segment of each title (`heads(title)[0]`, "" when none), as a polars expression."""
    segments = (title.fill_null("").str.replace(LINE_LABEL.pattern, "")
                .str.replace_all("(?i)" + HEAD_END.pattern, "\x1f").str.split("\x1f")
                .list.eval(pl.element().str.strip_chars()).list.eval(pl.element().filter(pl.element() != "")))
    return segments.list.first().fill_null("")


def title_words(titles: pl.DataFrame) -> pl.DataFrame:
    """Per distinct title: the head's last word and the one before it, every word, the words after a number.

    Columns title, end, before (raw words; None for a head of one word, usually a brand or a model name),
    words, after_number (lower-case words: the type of "8 oz" or "3 Pack" is neither), of_number (those
    followed by "of" and a number: "Set of 4") and fits (the title goes on after its head with what the product
    fits: "... Heads for Philips Sonicare").
    """
    first = head_expr(pl.col("title"))
    head = first.str.replace(_TRAILING, "")
    low = pl.col("title").fill_null("").str.to_lowercase()
    after = pl.col("title").fill_null("").str.slice(pl.col("title").fill_null("").str.find(first, literal=True)
                                                    + first.str.len_bytes())
    return titles.select(
        "title",
        after.str.contains(FITS_NEXT.pattern).fill_null(False).alias("fits"),
        head.str.extract(f"\\s({_WORD_RE})$", 1).alias("end"),
        head.str.extract(f"({_WORD_RE})\\s+{_WORD_RE}$", 1).alias("before"),
        low.str.extract_all(r"[a-z]+").list.unique().alias("words"),
        low.str.extract_all(r"\d(?:[\d.,]*\d)?\s*-?\s*[a-z]+").list.eval(
            pl.element().str.replace(r"^[\d.,\s-]+", "")).list.unique().alias("after_number"),
        low.str.extract_all(r"[a-z]+ of \d").list.eval(
            pl.element().str.replace(r" of \d$", "")).list.unique().alias("of_number"))


def category_evidence(name: str) -> list[tuple[str, str | None]]:
    """(last word, the word before it) of each name a category joins ("Posters & Prints": poster, print)."""
    out = []
    for part in re.split(r"\s*(?:&|,| and )\s*", name or ""):
        t = [x for x in tokens(part) if not x[0].isdigit()]
        if t:
            out.append((t[-1], t[-2] if len(t) > 1 else None))
    return out


@lru_cache(maxsize=100_000)
def verb_form(word: str) -> bool:
    """True when the lexicon reads the word as a form of another verb ("clothing", "lighting", "learning")."""
    return any(lemma != word for lemma in getAllLemmas(word).get("VERB", ()))


@lru_cache(maxsize=100_000)
def agent_noun(word: str) -> bool:
    """True for an agent noun: "-er" or "-or" after a verb of the lexicon (lemminflect).

    The lexicon reads the word itself only as a noun or does not know it: "beater", "embosser", "copier",
    "gripper", "insulator"; not "summer", "water" (verbs themselves), "diameter", "turnover" (no verb before
    the ending). A word the lexicon does not know may end in the verb ("headbopper").

    An agent noun names a thing that does something, a tool or a part: the rare words that end title heads and
    are the product ("Hand Mixer Beaters", "Pizza Pan Gripper"), where other rare head ends are abstract or a
    design's name ("Fountain Pen Luxury", "Signs Horoscope", "Yankee Candle Pumpkin").
    """
    readings = getAllLemmas(word)
    if not word.endswith(("er", "or")) or (readings and set(readings) != {"NOUN"}):
        return False
    stem = word[:-2]
    stems = {stem, stem + "e", word[:-1]}  # "beat", "insulate", "untangle"
    if stem.endswith("i"):
        stems.add(stem[:-1] + "y")  # "copier"
    if len(stem) > 2 and stem[-1] == stem[-2]:
        stems.add(stem[:-1])  # "trimmer", "gripper"
    if not readings:  # a compound the lexicon does not know ends in the verb: "headbopper"
        stems |= {s[i:] for s in stems for i in range(1, len(s) - 2)}
    return any("VERB" in getAllLemmas(s) for s in stems)


@lru_cache(maxsize=100_000)
def never_a_noun(word: str) -> bool:
    """True when the English lexicon (lemminflect) knows the word but never as a noun ("new", "funny", "large")."""
    readings = getAllLemmas(word)
    return bool(readings) and "NOUN" not in readings


# ---------------------------------------------------------------------------------------------------------------
# Learning


@dataclass
class TypeEvidence:
    """Distinct (title, store), (leaf category, store) and (variant value, store) pairs, gathered slice by slice.

    `add` takes a products frame (title, store, categories, details) a slice at a time; `vocabulary` learns.
    """

    thresholds: TypeThresholds = field(default_factory=TypeThresholds)
    _titles: list[pl.DataFrame] = field(default_factory=list)
    _categories: list[pl.DataFrame] = field(default_factory=list)
    _values: list[pl.DataFrame] = field(default_factory=list)

    def add(self, products: pl.DataFrame) -> None:
        """Take a slice of products.parquet rows (title, store, categories and details)."""
        store = pl.col("store").fill_null("")
        self._titles.append(products.select(pl.col("title").fill_null(""), store).unique())
        self._categories.append(products.select(pl.col("categories").list.last().alias("category"), store)
                                .drop_nulls("category").unique())
        self._values.append(products.select(store, "details").explode("details").drop_nulls("details")
                            .unnest("details").filter(pl.col("key").is_in(VARIANT_FIELDS))
                            .select(pl.col("value").fill_null(""), "store").unique())

    def evidence(self) -> pl.DataFrame:
        """Per word, how the catalog uses it: as the end of title heads, before that end, as a category's last word.

        A row whose word is two words ("candlestick holder") is a pair ending leaf category names: only its
        category_stores counts (`decide`'s compounds).

        Columns: word; head_stores (stores with a title whose head ends in it), head_titles and titles (distinct
        titles whose head ends in it, that hold it anywhere); before_stores (stores with a title whose head
        puts it just before the last word); category_stores and category_before_stores (stores with a product
        under a leaf category whose name ends in it, puts it before the last word); value_stores (stores with it
        as a whole colour, material or size value); after_number and of_number (distinct titles where it follows a
        number, where "of" and a number follow it).
        """
        titles = _concat(self._titles, {"title": pl.String, "store": pl.String}).unique()
        categories = _concat(self._categories, {"category": pl.String, "store": pl.String}).unique()
        values = _concat(self._values, {"value": pl.String, "store": pl.String}).unique()
        per_title = title_words(titles.select("title").unique())
        normal = _normaliser(pl.concat([per_title.select(pl.col("end").alias("raw")),
                                        per_title.select(pl.col("before").alias("raw")),
                                        per_title.select(pl.col("words").explode().alias("raw")),
                                        per_title.select(pl.col("after_number").explode().alias("raw")),
                                        per_title.select(pl.col("of_number").explode().alias("raw"))]))

        def norm(column: str) -> pl.Expr:
            return pl.col(column).replace_strict(normal, default=None, return_dtype=pl.String)

        ends = per_title.select("title", norm("end").alias("end"), norm("before").alias("before"), "fits")
        with_store = titles.join(ends, on="title", how="left")
        head = (with_store.filter(pl.col("end").is_not_null()).group_by(pl.col("end").alias("word"))
                .agg(pl.col("store").n_unique().alias("head_stores"), pl.col("title").n_unique().alias("head_titles"),
                     pl.col("store").filter(pl.col("fits")).n_unique().alias("fits_stores")))
        before = (with_store.filter(pl.col("before").is_not_null()).group_by(pl.col("before").alias("word"))
                  .agg(pl.col("store").n_unique().alias("before_stores")))

        def per_word(column: str, name: str) -> pl.DataFrame:
            return (per_title.select("title", pl.col(column).alias("raw")).explode("raw")
                    .select("title", norm("raw").alias("word")).drop_nulls().unique()
                    .group_by("word").agg(pl.len().alias(name)))

        names = categories.select("category").unique()
        parts = pl.Series("parts", [[{"end": e, "before": b} for e, b in category_evidence(c)]
                                    for c in names.get_column("category").to_list()],
                          dtype=pl.List(pl.Struct({"end": pl.String, "before": pl.String})))
        cat_rows = (names.with_columns(parts).explode("parts").drop_nulls("parts").unnest("parts")
                    .join(categories, on="category"))
        cat_end = (cat_rows.group_by(pl.col("end").alias("word"))
                   .agg(pl.col("store").n_unique().alias("category_stores")))
        cat_before = (cat_rows.filter(pl.col("before").is_not_null()).group_by(pl.col("before").alias("word"))
                      .agg(pl.col("store").n_unique().alias("category_before_stores")))
        cat_pairs = (cat_rows.filter(pl.col("before").is_not_null())
                     .group_by(pl.concat_str("before", pl.lit(" "), "end").alias("word"))
                     .agg(pl.col("store").n_unique().alias("category_stores")))
        distinct_values = values.get_column("value").unique().to_list()
        value_words = pl.DataFrame({"value": distinct_values, "word": [" ".join(tokens(v)) for v in distinct_values]},
                                   schema={"value": pl.String, "word": pl.String})
        value = (values.join(value_words, on="value").filter(~pl.col("word").str.contains(" ") & (pl.col("word") != ""))
                 .group_by("word").agg(pl.col("store").n_unique().alias("value_stores")))
        out = pl.concat([f.select("word") for f in (head, before, cat_end, cat_before)]).drop_nulls().unique()
        for f in (head, before, cat_end, cat_before, value, per_word("words", "titles"),
                  per_word("after_number", "after_number"), per_word("of_number", "of_number")):
            out = out.join(f, on="word", how="left")
        out = pl.concat([out, cat_pairs], how="diagonal_relaxed")
        return out.with_columns(pl.col(c).fill_null(0).cast(pl.Int64) for c in EVIDENCE_COUNTS).sort("word")

    def vocabulary(self, override: TypeOverride | None = None,
                   base: pl.DataFrame | None = None) -> tuple[TypeVocabulary, pl.DataFrame]:
        """(the learned vocabulary with the override applied, the evidence with each word's role and reason).

        Args:
            override: the reviewed override; None loads the default one.
            base: another catalog's evidence (`evidence`, as `decide` returns it), pooled with this one's: each
                count of EVIDENCE_COUNTS is the sum of both (a store selling in both catalogs counts twice), so
                the words both catalogs use as types decide as in one catalog of both.
        """
        evidence = self.evidence()
        if base is not None:
            counts = [pl.col(c).sum().cast(pl.Int64) for c in EVIDENCE_COUNTS]
            # a base stored before a count was kept counts 0 for it
            evidence = (pl.concat([evidence.select("word", *EVIDENCE_COUNTS),
                                   base.select("word", *((pl.col(c) if c in base.columns else pl.lit(0)).cast(pl.Int64)
                                                         .alias(c) for c in EVIDENCE_COUNTS))])
                        .group_by("word").agg(counts).sort("word"))
        return decide(evidence, override or load_type_override(), self.thresholds)


EVIDENCE_COUNTS = ("head_stores", "head_titles", "titles", "before_stores", "category_stores",
                   "category_before_stores", "value_stores", "after_number", "of_number", "fits_stores")


def _concat(frames: list[pl.DataFrame], schema: dict[str, Any]) -> pl.DataFrame:
    return pl.concat(frames) if frames else pl.DataFrame(schema=schema)


def _normaliser(raw: pl.DataFrame) -> dict[str, str]:
    """{raw word: its vocabulary token} for every distinct raw word of the column "raw" (one Python call each)."""
    return {w: t for w in raw.get_column("raw").drop_nulls().unique().sort().to_list() if (t := word_token(w))}


def _not_a_type(word: str, row: dict[str, Any], t: TypeThresholds) -> str | None:
    """Why a word cannot be a type noun or modifier whatever its counts (None: it can be)."""
    if len(word) < 3 or not word.isalpha():
        return "short_or_not_a_word"
    if word in STOPWORDS:
        return "stopword"
    if row["titles"] and row["after_number"] / row["titles"] > t.max_number_share:
        return "unit_or_count"
    return None


def decide(evidence: pl.DataFrame, override: TypeOverride, t: TypeThresholds
           ) -> tuple[TypeVocabulary, pl.DataFrame]:
    """Type nouns and modifiers from the evidence (`TypeEvidence.evidence`), then the override.

    A word is a type noun when the title heads of `t.head_stores` stores end in it and so do `t.head_share`
    of the titles holding it; or, when a leaf category name ends in it too, one store's and
    `t.category_head_share` of its titles; or when the leaf categories of `t.category_stores` stores end in
    it, titles hold it and never before another word, and it is no form of a verb. A word the English lexicon
    knows only as a verb or adjective is no noun, unless a leaf category name and a title head end in it
    ("Saucepans", "... Stew Pan"), no category name puts it before another word and it is no form of another verb.
    It is a modifier when it precedes the last word of a category name, or of the title heads of
    `t.modifier_stores` stores. Neither when `_not_a_type` says so, nor when more stores give it as a whole
    colour, material or size value than head titles or name categories with it. A type noun that "of" and a
    number follow in `t.collective_share` of its titles is a collective ("Set of 4"). A word that is none of
    these only for its counts ("too_rare"), ends a title head and is an agent noun (`agent_noun`) is a rare head
    ("beater", "embosser"): a type noun right after a run at the end of a head. A pair of words (a row whose word
    has a space) ending a leaf category name is a compound ("candlestick holder").

    Returns:
        (vocabulary, the evidence with columns role "noun" / "modifier" / "rare_head" / "compound" / "" and
        reason).
    """
    roles, reasons = [], []
    nouns, modifiers, collectives, rare_heads, compounds, accessories = set(), set(), set(), set(), set(), set()
    for row in evidence.iter_rows(named=True):
        w = row["word"]
        if " " in w:
            if row["category_stores"]:
                compounds.add(w)
            roles.append("compound" if row["category_stores"] else "")
            reasons.append("")
            continue
        share = row["head_titles"] / max(row["titles"], 1)
        reason = _not_a_type(w, row, t)
        if reason is None and row["value_stores"] > max(row["head_stores"], row["category_stores"]):
            reason = "variant_value"
        if reason is None and w in override.remove:
            reason = "override_remove"
        # The lexicon misses nouns that are also verbs or adjectives ("pan", "chime", "binocular"): a word a leaf
        # category name and a title head end in, that no category puts before another word ("Top Cover", "Audio
        # Cables") and that is no form of another verb, is a noun whatever it says.
        named = (row["category_stores"] > 0 and row["head_stores"] > 0 and share >= t.category_head_share
                 and not row["category_before_stores"] and not verb_form(w))
        lexical = never_a_noun(w) and not named
        if reason is None and lexical and not row["category_before_stores"]:
            reason = "never_a_noun"  # a category name may still put it before its noun ("Carrying Cases")
        noun = reason is None and not lexical and (
            (row["head_stores"] >= t.head_stores and share >= t.head_share)
            or (row["category_stores"] > 0 and row["head_stores"] > 0 and share >= t.category_head_share)
            or (row["category_stores"] >= t.category_stores and row["titles"] and not row["before_stores"]
                and not verb_form(w)))
        modifier = reason is None and (row["category_before_stores"] > 0 or row["before_stores"] >= t.modifier_stores)
        if noun:
            nouns.add(w)
            if row["of_number"] >= t.collective_share * max(row["titles"], 1):
                collectives.add(w)
            if (row["fits_stores"] >= t.accessory_stores
                    and row["fits_stores"] >= t.accessory_share * max(row["head_stores"], 1)):
                accessories.add(w)
        if modifier:
            modifiers.add(w)
        rare_head = reason is None and not noun and not modifier and row["head_titles"] > 0 and agent_noun(w)
        if rare_head:
            rare_heads.add(w)
        roles.append("noun" if noun else "modifier" if modifier else "rare_head" if rare_head else "")
        reasons.append(reason or ("" if noun or modifier else "too_rare"))
    vocabulary = TypeVocabulary(nouns=frozenset((nouns | override.nouns) - override.remove),
                                modifiers=frozenset((modifiers | override.modifiers) - override.remove),
                                collectives=frozenset((collectives | override.collectives) - override.remove),
                                rare_heads=frozenset(rare_heads - override.remove),
                                compounds=frozenset(compounds),
                                accessories=frozenset(accessories - override.remove))
    return vocabulary, evidence.with_columns(pl.Series("role", roles, dtype=pl.String),
                                             pl.Series("reason", reasons, dtype=pl.String))


def learn_type_vocabulary(products: pl.DataFrame, override: TypeOverride | None = None,
                          thresholds: TypeThresholds | None = None) -> tuple[TypeVocabulary, pl.DataFrame]:
    """The type vocabulary of a products frame (title, store, categories, details), and its evidence.

    >>> frame = pl.DataFrame({"title": ["Acme Oven Mitt", "Bolt Oven Mitt, Red"], "store": ["Acme", "Bolt"],
    ...                       "categories": [["Kitchen", "Oven Mitts"]] * 2,
    ...                       "details": [[{"key": "Color", "value": "Red"}]] * 2})
    >>> vocabulary, _ = learn_type_vocabulary(frame, TypeOverride())
    >>> "mitt" in vocabulary.nouns, "oven" in vocabulary.modifiers, "red" in vocabulary.nouns
    (True, True, False)
    """
    evidence = TypeEvidence(thresholds or TypeThresholds())
    evidence.add(products)
    return evidence.vocabulary(override if override is not None else load_type_override())
