"""A catalog's device lines named without a number ("Apple AirPods", "Nintendo Switch"), learned from its titles.

A page may say what an accessory fits by a line alone: "Case for AirPods Pro", "Band Compatible with Apple Watch".
Which words name a line, not a kind or a person ("for Kids", "for Couch"), the catalog's own titles say: a maker's
name (ecombench.catalog.devices.MAKER_SERIES) followed by the line and no model number ("Apple AirPods Case",
"Nintendo Switch Carrying Case") in at least MIN_LINE_TITLES products, one of them after a device opener ("for",
"compatible with"). ecombench.catalog.fitted reads such a line after an opener with its maker, and without it
(`DeviceLine.bare`) where the catalog's bullets and descriptions write it as a name ("AirPods", "iPad"), not as a
common noun ("watch", "switch", "surface") or a kind's abbreviation ("TV").

Learned in two steps over a catalog in slices: `line_mentions` of each slice's distinct titles, then `line_uses` of
each slice's bullets and descriptions for the candidates (`line_candidates`) those mentions hold, then
`device_lines`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from ecombench.catalog.devices import MAKER_SERIES, NEUTRAL_WORDS, VARIANT_WORDS, device_models
from ecombench.text import tokens

# Titles that must name a line after its maker, without a number, for it to be a line: "Apple AirPods" in 8 of the
# shared catalog's, "Apple Watch" 8, "Nintendo Switch" 5, "Samsung Galaxy Buds" 3; "Apple TV" 4; below it the
# words after a maker are as often no line as a line ("Samsung Smart TV", "Sony Blu-ray", "Samsung Men").
MIN_LINE_TITLES = 3
# A line's uses in bullets and descriptions written all in lower case at least this share of the time make it a
# common noun there, so a page names the line by it only with the maker: on the shared catalog "watch" 76 %,
# "switch" 72 %, "surface" 89 %, "sense" 52 %; "AirPods" 10 %, "iPad" 10 %, "MacBook" 7 %, "Kindle" 8 %.
COMMON_NOUN_SHARE = 1 / 3
OPENERS = ("compatible with", "compatible for", "designed for", "made for", "works with", "work with",
           "replacement for", "suitable for", "fit for", "fits", "fit", "for")
_OPENER = re.compile(r"(?i)^(?:" + "|".join(o.replace(" ", r"\s+") for o in OPENERS) + r")\s+")
# A maker's name and up to four words after it, after an opener when one stands before it.
_MENTION = (r"(?i)(?:\b(?:" + "|".join(o.replace(" ", r"\s+") for o in OPENERS) + r")\s+(?:the\s+|your\s+)?)?\b(?:"
            + "|".join(sorted(MAKER_SERIES)) + r")\s+[A-Za-z][A-Za-z0-9+]*(?:[\s-]+[A-Za-z0-9+]+){0,4}")
_WORD = re.compile(r"[A-Za-z0-9+]+")
_LEADING = frozenset({"the", "your"})


@dataclass(frozen=True, order=True)
class DeviceLine:
    """A maker's line the catalog names without a number.

    Attributes:
        words: the line as ecombench.catalog.devices reads it ("airpod", "galaxy bud"): a line device's series.
        maker: the maker's name as the titles write it before the line ("Apple").
        spelling: the line as the titles write it after the maker ("AirPods").
        bare: whether a page names it without the maker too ("for AirPods Pro").
        continued: words that make the line's name another line's after it ("sq" of "Garmin Venu Sq").
    """

    words: str
    maker: str
    spelling: str
    bare: bool
    continued: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The line with its maker, as its facts spell it: "Apple AirPods"."""
        return f"{self.maker} {self.spelling}"


def _mention(text: str) -> tuple[str, str, str, str, bool, bool, str] | None:
    """The maker's line `text` names after the maker's name at its start, if it does.

    Returns:
        (maker, line words, maker's spelling, line's spelling, after an opener, numbered, the word between the line
        and its model): of "for Apple AirPods Pro Case" ("apple", "airpod", "Apple", "AirPods", True, False, ""), of
        "Garmin Venu Sq 2" (..., True, "sq"); None of "Apple iPhone 14" (the maker's numbered series).
    """
    opener = _OPENER.match(text)
    words = _WORD.findall(text[opener.end():] if opener else text)
    while words and words[0].lower() in _LEADING:
        words = words[1:]
    if len(words) < 2:
        return None
    maker, rest = words[0], words[1:]
    size = 2 if rest[0].lower() == MAKER_SERIES.get(maker.lower()) else 1  # "Samsung Galaxy Buds"
    line = rest[:size]
    variants = []
    for w in rest[size:]:
        if w.lower() not in VARIANT_WORDS:
            break
        variants.append(w)
    following = rest[size + len(variants):size + len(variants) + 2]  # "Sony VAIO PCG-6G3L", "ROG Phone 6"
    named = device_models(" ".join([maker, *line, *variants]))
    if len(line) < size or len(named) != 1 or not named[0].line:
        return None
    numbered = [any(not d.line for d in device_models(" ".join([maker, *line, *variants, *following[:n]])))
                for n in (1, 2)]  # a model follows: "Apple AirPods 2", "Garmin Venu Sq 2", "Sony VAIO PCG-6G3L"
    continued = following[0].lower() if numbered[1] and not numbered[0] else ""
    if continued in NEUTRAL_WORDS:
        continued = ""  # "Apple AirPods Case 1 & 2": a word that changes no device's name
    return maker.lower(), named[0].series, maker, " ".join(line), bool(opener), numbered[1], continued


def line_mentions(titles: pl.Series) -> pl.DataFrame:
    """Each maker's line a distinct title names (`_mention`), one row per title and line.

    Returns:
        (title, maker, words, maker_spelling, spelling, opened, numbered, continued).
    """
    found = (pl.DataFrame({"title": titles.drop_nulls().unique()})
             .with_columns(pl.col("title").str.extract_all(_MENTION).alias("text")).explode("text")
             .drop_nulls("text"))
    schema = {"text": pl.String, "maker": pl.String, "words": pl.String, "maker_spelling": pl.String,
              "spelling": pl.String, "opened": pl.Boolean, "numbered": pl.Boolean, "continued": pl.String}
    read = [(t, *m) for t in found.get_column("text").unique().sort().to_list() if (m := _mention(t))]
    mentions = pl.DataFrame(read, schema=schema, orient="row")
    return found.join(mentions, on="text").drop("text").unique().sort("title", "maker", "words")


def line_candidates(mentions: pl.DataFrame, min_titles: int = MIN_LINE_TITLES) -> pl.DataFrame:
    """The lines `min_titles` distinct titles name after the maker without a number, one of them after an opener.

    Returns:
        (maker, words, maker_spelling, spelling, continued): the spellings the titles write most (the first on a
        tie); the words the titles write between the line and a model of it ("Garmin Venu Sq 2": "sq"), which
        continue the line's name into another line's.
    """
    def most(column: str) -> pl.Expr:
        return pl.col(column).filter(~pl.col("numbered")).mode().sort().first()

    numberless = ~pl.col("numbered")
    return (mentions.group_by("maker", "words")
            .agg(pl.col("title").filter(numberless).n_unique().alias("titles"),
                 (pl.col("opened") & numberless).any(), most("maker_spelling"), most("spelling"),
                 pl.col("continued").filter(pl.col("continued") != "").unique().sort())
            .filter((pl.col("titles") >= min_titles) & pl.col("opened"))
            .select("maker", "words", "maker_spelling", "spelling", "continued").sort("maker", "words"))


def _pattern(words: str) -> str:
    """A line's words as a regex of its whole-word uses, in any case and number ("galaxy bud": "Galaxy Buds")."""
    return r"\s*".join(re.escape(w) + "(?:e?s)?" for w in words.split())


def line_uses(texts: pl.Series, candidates: pl.DataFrame) -> pl.DataFrame:
    """How often `texts` (bullets, descriptions) use each candidate line as a whole word, and how often in lower case.

    Returns:
        (words, uses, lower).
    """
    schema = {"words": pl.String, "uses": pl.UInt32, "lower": pl.UInt32}
    if candidates.is_empty():
        return pl.DataFrame(schema=schema)
    lines = sorted(set(candidates.get_column("words").to_list()), key=lambda w: (-len(w), w))
    found = (pl.DataFrame({"text": texts.drop_nulls()})
             .select(pl.col("text").str.extract_all(r"(?i)\b(?:" + "|".join(map(_pattern, lines)) + r")\b")
                     .alias("use")).explode("use").drop_nulls("use"))
    spelled = found.group_by("use").len()
    rows = []
    for use, n in spelled.sort("use").iter_rows():
        words = " ".join(tokens(use))
        if words in lines:
            rows.append((words, n, n if use == use.lower() else 0))
    return (pl.DataFrame(rows, schema={"words": pl.String, "uses": pl.UInt32, "lower": pl.UInt32}, orient="row")
            .group_by("words").agg(pl.col("uses").sum(), pl.col("lower").sum()).sort("words"))


def device_lines(candidates: pl.DataFrame, uses: pl.DataFrame) -> frozenset[DeviceLine]:
    """The lines of `line_candidates`, each bare when the text writes it as a name (`line_uses` summed).

    A line the text never writes, or writes as a common noun (COMMON_NOUN_SHARE), or whose titles write it in
    capitals as an abbreviation ("Apple TV": "for TV" is a television) needs its maker.
    """
    counts = {w: (u, lo) for w, u, lo in uses.group_by("words").agg(pl.col("uses").sum(), pl.col("lower").sum())
              .iter_rows()}
    out = set()
    for _, words, maker, spelling, continued in candidates.iter_rows():
        n, lower = counts.get(words, (0, 0))
        bare = n > 0 and lower < COMMON_NOUN_SHARE * n and not spelling.isupper()
        out.add(DeviceLine(words, maker, spelling, bare, tuple(continued)))
    return frozenset(out)


def learn_device_lines(products: pl.DataFrame) -> frozenset[DeviceLine]:
    """The device lines of one products frame (title, features, description), the three steps at once.

    Example:
        >>> titles = ["Case for Apple AirPods Pro", "Apple AirPods Strap", "Skin Compatible with Apple AirPods"]
        >>> sorted(learn_device_lines(pl.DataFrame({"title": titles, "features": [["fits your AirPods"]] * 3})))
        [DeviceLine(words='airpod', maker='Apple', spelling='AirPods', bare=True, continued=())]
    """
    candidates = line_candidates(line_mentions(products.get_column("title")))
    texts = [products.get_column(c).explode().rename("text") for c in ("features", "description")
             if c in products.columns]
    return device_lines(candidates, line_uses(pl.concat(texts) if texts else pl.Series("text", [], dtype=pl.String),
                                              candidates))
