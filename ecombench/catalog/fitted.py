"""The device a product fits, read from its title and feature bullets where no label names one.

Many accessories carry no compatibility label, and their page says what they fit only in words: "Maledan Bands
Compatible with Fitbit Charge 3 and Charge 4", "Case for iPhone 14, 14 Pro". `fitted_device_facts` reads the
phrase after a device opener ("for", "compatible with", "fits", "designed for" ...; ecombench.catalog.facts'
DEVICE_OPENERS) in the title and each bullet, keeps the devices it names (ecombench.catalog.devices: a series and
a model), each spelled as the page spells it ("Fitbit Charge 3", "Charge 4"), and makes each a fact of a
compatibility field, with the text as its evidence. A negated opener ("NOT compatible with S20 Ultra", "Not for
Galaxy S8") contradicts the device instead of stating it.

"for" opens many phrases that name no device ("for Kids 3-5", "for Bedroom 52 x 84"), so a device counts only when
the catalog's compatibility labels know its series, a maker's name precedes it ("Fitbit Charge 3") or its model
mixes letters and digits ("S23", "PS5").

A line named without a number ("for AirPods Pro", "Compatible with Apple Watch") is a device where the catalog
knows it as a maker's line: its titles name it after the maker's name, without a number, in a few products
(ecombench.catalog.device_lines). Such a line is read after an opener with the maker, and without it
where the catalog's text writes it as a name ("AirPods", "iPad"), not as a common noun ("watch", "switch"); its fact
names the maker ("Apple AirPods Pro"), as ecombench.catalog.devices reads a line.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import polars as pl

from ecombench.catalog.device_lines import DeviceLine
from ecombench.catalog.devices import (
    MAKER_SERIES,
    SYSTEM_WORDS,
    VARIANT_WORDS,
    DeviceModel,
    device_models,
    device_words,
    spell_plus,
)
from ecombench.tables.fields import FieldTable
from ecombench.text import tokens

# What opens the device part ("compatible with Fitbit Charge 3"), longest first so "fit for" wins over "for".
OPENERS = ("compatible with", "compatible for", "designed for", "made for", "works with", "work with",
           "replacement for", "suitable for", "fit for", "fits", "fit", "for")
_OPENER = re.compile(r"(?i)\b(" + "|".join(o.replace(" ", r"\s+") for o in OPENERS) + r")\s+")
# Words before an opener that deny it: "NOT compatible with", "not for", "does not fit", "Not Fit S8".
_NEGATED = re.compile(r"(?i)\b(?:not|no|non|never|isn'?t|doesn'?t|won'?t|cannot|except|excluding)\W+(?:\w+\W+)?$")
# Where the device phrase ends: a bracket, a colon, a sentence end, a dash between words.
_PHRASE_END = re.compile(r"[()\[\]{}【】:;!?|]|\.(?:\s|$)| [-–—] ")
# What separates the devices of a list: "Charge 4/ Charge 3", "iPhone 14, 14 Pro", "S21 and S21+".
_PARTS = re.compile(r"\s*(?:[,，/&]|\band\b|\bor\b)\s*", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9+]+")
_MIXED = re.compile(r"(?=.*[a-z])(?=.*\d)")
# "2D" and "3D" are dimensions ("3D Cute Silicone Cover"), other numbers before a "D" models ("Canon EOS 77D"); a
# network ("2G") and a water rating ("IP68") are no model either.
_QUANTITY = re.compile(r"^\d+(?:v|w|mm|cm|in|mah|gb|tb|hz|th|st|nd|rd|s|pcs|pack|ft|oz|lb|lbs|k)$|^[wlhd]\d+$"
                       r"|^[23]d$|^[2-5]g$|^ip[x\d]\d$")
_SIZE = re.compile(r"^\d+(?:\.\d+)?\"?$")
# A screen size after a line, in the words `_WORD` leaves of it: "9.7 inch", "12.9''", "10.2" (a band's "41mm" is no
# screen size: an Apple Watch band is made for the line, its size said apart).
_SCREEN = re.compile(r"^\d+(?: \d)?(?: (?:inch|inches|in))?(?: |$)(?!mm)", re.IGNORECASE)
_LEADING = frozenset("your my the a an all any both most select selected only".split())
_SIZE_UNITS = frozenset({"inch", "inches", "in", "mm", "cm", ""})


@lru_cache(maxsize=65536)
def _devices(part: str) -> tuple[DeviceModel, ...]:
    return device_models(spell_plus(part))


def _device_words(part: str) -> str:
    """The words of a part that spell its devices: "the iPhone 14 Pro Case" -> "iPhone 14 Pro".

    The part up to the last word that changes what it names ("Charge 3 SE Fitness Tracker" -> "Charge 3 SE"), less
    the words before that change nothing ("the", a size), but never a maker's name ("Fitbit Charge 3").
    """
    words = part.split()
    last, named = 0, tuple[DeviceModel, ...]()
    for i in range(len(words)):
        now = _devices(" ".join(words[: i + 1]))
        if now != named:
            last, named = i + 1, now
    words = words[:last]
    while len(words) > 2 and _SIZE.match(words[0]) and words[1].lower().strip('"') in _SIZE_UNITS:
        words = words[2:]  # "10.1 inch Samsung Galaxy Tab 3": the tablet's size is no part of its name
    while len(words) > 1 and words[0].lower() in _LEADING:
        words = words[1:]  # "your Fitbit Versa 3", "the iPhone 14"
    while len(words) > 1 and words[0].lower() not in MAKER_SERIES and _devices(" ".join(words[1:])) == named:
        words = words[1:]
    return " ".join(words)


def _one_each(part: str) -> list[str]:
    """A part naming several devices cut into one spelling each ("Galaxy S20 Plus Galaxy S20 FE" -> two)."""
    words = part.split()
    cuts, named = [0], _devices(words[0]) if words else ()
    for i in range(1, len(words)):
        now = _devices(" ".join(words[: i + 1]))
        if len(now) > len(named) and len(named):
            cuts.append(i)
        named = now
    return [_device_words(" ".join(words[a:b])) for a, b in zip(cuts, [*cuts[1:], len(words)])]


def device_spellings(phrase: str, known_series: frozenset[str],
                     lines: frozenset[DeviceLine] = frozenset()) -> list[str]:
    """The devices a phrase after an opener names, each as the page spells it, in order (`_spellings`).

    Example:
        >>> device_spellings("Fitbit Charge 3 and Charge 4, Breathable Sport Band", frozenset())
        ['Fitbit Charge 3', 'Charge 4']
        >>> airpods = DeviceLine("airpod", "Apple", "AirPods", bare=True)
        >>> device_spellings("Air Pod Pro", frozenset(), frozenset({airpods}))
        ['Apple AirPods Pro']
    """
    return list(_spellings(phrase, known_series, lines))


# Kept across calls: a catalog read in slices meets the same phrases in every slice.
@lru_cache(maxsize=65536)
def _spellings(phrase: str, known_series: frozenset[str], lines: frozenset[DeviceLine]) -> tuple[str, ...]:
    """The devices a phrase after an opener names, each as the page spells it, in order.

    The phrase is cut into parts at list separators; a part with no series of its own takes the words before the
    previous part's model ("iPhone 14, 14 Pro" -> "iPhone 14", "iPhone 14 Pro"). Reading stops at the first part
    that names no device ("... Charge 3, Breathable Sport Band"). A maker's name or a series the phrase already
    named makes its later devices count ("Fitbit Charge 3 and Charge 4"). A part that names no model but opens
    with one of the catalog's `lines` names that line, spelled with its maker (`_line_at`); a line read without
    its maker makes its numbered models count ("AirPods Pro/2/1").
    """
    out: list[str] = []
    prefix = ""
    bare = {line.words for line in lines if line.bare}
    trusted = set(known_series) | bare
    families = frozenset(_family(s) for s in known_series | bare)
    maker = False
    named_lines: set[DeviceLine] = set()
    for raw in _PARTS.split(phrase):
        named_maker = bool({w.lower() for w in _WORD.findall(raw)} & set(MAKER_SERIES))
        part = _device_words(raw.strip())
        if not part and prefix:
            part = _device_words(f"{prefix} {raw.strip()}")
        devices = tuple(d for d in _devices(part) if not d.line) if part else ()
        line = None if devices else _line_at(raw, lines, named_lines)
        if line is not None:
            named_lines.add(line[0])
            out.append(line[1])
            prefix, maker = line[2], maker or named_maker
            continue
        if not devices and named_maker and len(raw.split()) <= 3:
            maker = True  # "Fitbit Versa/Versa 2": a maker's series before its models
            continue
        maker = maker or named_maker
        if not devices or not all(maker or _plausible(d, part, trusted, families) for d in devices):
            break
        trusted.update(d.series for d in devices if d.series)
        for spelling in _one_each(part):
            named = _devices(spelling)
            if len(named) == 1 and not named[0].line:
                out.append(spelling)
            elif len(named) == 1 and (among := _line_at(spelling, lines, named_lines)) is not None:
                out.append(among[1])  # a line among the models: "Garmin Venu" of "Garmin Venu Venu 2", not the
                # maker's other words ("Sony TV" of "Sony TV XBR-85Z8H")
        words = part.split()
        first_model = next((i for i, w in enumerate(words) if any(c.isdigit() for c in w)), 0)
        prefix = " ".join(words[:first_model]) or prefix
    return tuple(dict.fromkeys(out))


def _line_at(part: str, lines: frozenset[DeviceLine], named: set[DeviceLine]) -> tuple[DeviceLine, str, str] | None:
    """The line a part opens with, if one of `lines`: "Air Pod Pro" is the line "Apple AirPods" with "Pro".

    The maker's name may stand before the line; without it the line must be `DeviceLine.bare` or one the phrase
    named already ("for Nintendo Switch, Switch Lite").

    Returns:
        (line, its spelling with the maker and the part's variant words, the part's words for the line):
        (AirPods, "Apple AirPods Pro", "Air Pod"); None when the part opens with no line.
    """
    words = _WORD.findall(spell_plus(part))
    while words and words[0].lower() in _LEADING:
        words = words[1:]
    for line in sorted(lines):
        start = 1 if words and words[0].lower() == line.maker.lower() else 0
        if not (start or line.bare or line in named):
            continue
        size = next((n for n in range(1, 4) if "".join(tokens(" ".join(words[start:start + n])))
                     == line.words.replace(" ", "")), 0)
        if not size:
            continue
        variants = []
        for w in words[start + size:]:
            if w.lower() not in VARIANT_WORDS:
                break
            variants.append(w.capitalize() if w.islower() else w)
        after = words[start + size + len(variants):]
        if _SCREEN.match(" ".join(after)) or (after and after[0].lower() in line.continued):
            return None  # "iPad Pro 9.7 inch", "Venu Sq": a model of the line or another line, which this reads not
        return line, " ".join([line.name, *variants]), " ".join(words[start:start + size])
    return None


def _family(series: str) -> str:
    """A series' first word, the line it belongs to: "ipad" of "ipad mini" and "ipad pro", "galaxy" of "galaxy note"."""
    return series.split()[0] if series else ""


def _plausible(device: DeviceModel, part: str, known_series: set[str], families: frozenset[str] = frozenset()) -> bool:
    """A device whose series the catalog or the phrase knows, named after a maker, or with a model code.

    A series of a family the catalog's labels know counts too (`families`: the labels name some of a line's series
    only; the shared catalog's know "ipad air" and "ipad pro", and "for iPad Mini 6" names a device as surely),
    unless a lower-case word that is no variant joins the family to its model ("iPhone have 8 sports modes"). A
    model code is a word mixing letters and digits ("S23", "PS5"), not "of 14" nor a quantity ("240V", "10th",
    "W52", "3D"). A system version is no device, whatever series names it ("iPhone iOS 9.0+", "iPad OS 13").
    """
    words = _WORD.findall(part)
    if {w.lower() for w in words} & SYSTEM_WORDS:
        return False
    in_family = (_family(device.series) in families
                 and all(w[0].isupper() or w in VARIANT_WORDS for w in words
                         if w.lower() in device.series.split()[1:]))
    return bool(device.series in known_series or in_family
                or {w.lower() for w in words} & set(MAKER_SERIES)
                or any(_MIXED.match(w.lower()) and not _QUANTITY.match(w.lower()) for w in words))


def phrases(text: str) -> list[tuple[int, str, bool]]:
    """(start, phrase, negated) of every device opener in `text`: the words after it up to a break or the next one."""
    out = []
    found = list(_OPENER.finditer(text))
    for m, after in zip(found, [*found[1:], None]):
        rest = text[m.end(): after.start() if after else len(text)]  # the next opener starts another phrase
        end = _PHRASE_END.search(rest)
        phrase = rest[: end.start()] if end else rest
        out.append((m.start(), phrase.strip(), bool(_NEGATED.search(text[: m.start()]))))
    return out


def device_fields(values: pl.DataFrame, table: FieldTable) -> tuple[dict[str, str], str | None, frozenset[str]]:
    """({series or family: the compatibility field naming it most}, the field naming most devices, known series).

    A family (`_family`: "ipad" of "ipad air") that is no series of its own maps to the field naming its series most.
    Read from a fact vocabulary's values (field, value, products).
    """
    compat = [s.name for s in table.detail_fields() if s.compatibility]
    by_series: dict[str, Counter[str]] = {}
    overall: Counter[str] = Counter()
    rows = values.filter(pl.col("field").is_in(compat)).unique(["field", "value"]).sort("field", "value")
    for field, value, products in rows.select("field", "value", "products").iter_rows():
        for d in _devices(value):
            overall[field] += int(products or 1)
            if d.series and not d.line:  # a line is a series only where the catalog's titles make it one
                by_series.setdefault(d.series, Counter())[field] += int(products or 1)
    by_family: dict[str, Counter[str]] = {}
    for series, counts in by_series.items():
        if _family(series) not in by_series:
            by_family.setdefault(_family(series), Counter()).update(counts)
    best = {s: max(sorted(c), key=lambda f: c[f]) for s, c in (by_family | by_series).items()}
    return best, (max(sorted(overall), key=lambda f: overall[f]) if overall else (compat[0] if compat else None)), \
        frozenset(by_series)


def fitted_device_facts(products: pl.DataFrame, values: pl.DataFrame, table: FieldTable,
                        labelled: pl.DataFrame, lines: frozenset[DeviceLine] = frozenset()) -> pl.DataFrame:
    """Facts of the devices the title and bullets say a product fits, for rows no label names a device of.

    Args:
        products: products.parquet frame (title, features); `row` is the position in it.
        values: the fact vocabulary's values (which field names which series).
        table: the field table.
        labelled: (row) of the products whose labels name a device model already.
        lines: the catalog's device lines (ecombench.catalog.device_lines), read as devices too.

    Returns:
        (row, field, value, polarity, source, segment, text): `text` is the segment's raw text.
    """
    schema = {"row": pl.Int32, "field": pl.String, "value": pl.String, "polarity": pl.String, "source": pl.String,
              "segment": pl.Int32, "text": pl.String}
    fields, default, known = device_fields(values, table)
    if default is None or products.is_empty():
        return pl.DataFrame(schema=schema)
    base = products.select(pl.int_range(pl.len(), dtype=pl.Int32).alias("row"), "title",
                           pl.col("features") if "features" in products.columns
                           else pl.lit(None, dtype=pl.List(pl.String)).alias("features"))
    base = base.join(labelled.select(pl.col("row").cast(pl.Int32)).unique(), on="row", how="anti")
    title = base.select("row", pl.lit("title").alias("source"), pl.lit(0, dtype=pl.Int32).alias("segment"),
                        pl.col("title").alias("text"))
    bullets = (base.select("row", "features").explode("features").drop_nulls("features")
               .with_columns(pl.int_range(pl.len(), dtype=pl.Int32).over("row").alias("segment"))
               .select("row", pl.lit("feature").alias("source"), "segment", pl.col("features").alias("text")))
    segments = pl.concat([title, bullets]).filter(pl.col("text").str.contains(r"(?i)\b(?:for|with|fits)\b"))
    found: list[tuple[str, str, str, str, bool]] = []
    for text in segments.get_column("text").unique().sort().to_list():
        for _, phrase, negated in phrases(text):
            spellings = device_spellings(phrase, known, lines)
            exact = {line for s in spellings for d in _devices(s) if not d.line or d.variant for line in _lines_of(d)}
            for spelling in spellings:
                series = _devices(spelling)[0].series
                field = fields.get(series) or fields.get(_family(series), default)
                found.append((text, field, spelling, "contradicted" if negated else "stated", series in exact))
    if not found:
        return pl.DataFrame(schema=schema)
    hits = pl.DataFrame(found, schema={"text": pl.String, "field": pl.String, "value": pl.String,
                                       "polarity": pl.String, "listed": pl.Boolean}, orient="row")
    facts = (segments.join(hits, on="text").select(*schema, "listed").sort("listed", descending=True)
             .unique(["row", "field", "value", "polarity", "source", "segment"], keep="first")
             .sort("row", "segment", "value"))
    return _without_vaguer_lines(facts).drop("listed")


def _lines_of(device: DeviceModel) -> set[str]:
    """The lines a device belongs to: "airpod pro" and "airpod" of the AirPods Pro 2."""
    return {device.series, _family(device.series), device.series.rsplit(" ", 1)[0]}


def _without_vaguer_lines(facts: pl.DataFrame) -> pl.DataFrame:
    """Facts less a bare line the product's page states more exactly: (row, value, polarity, listed) and more.

    A bullet's "our covers for Airpods case" says "Apple AirPods" of a case its title fits to the AirPods Pro
    (B0811QZXPD), and "Band for Fitbit Versa Smart Watch" a band its title fits to the Versa 3 (B0BN9T2GTF): a line
    with no variant yields to a stated device of the same line with a variant or a number, unless a phrase lists
    both (`listed`: "Compatible with Samsung Galaxy Buds Plus/Galaxy Buds" names two devices).
    """
    stated = facts.filter(pl.col("polarity") == "stated")
    bare = {(row, value) for row, value, listed in stated.select("row", "value", "listed").iter_rows()
            if not listed and (d := _devices(value)) and d[0].line and not d[0].variant}
    if not bare:
        return facts
    exact: dict[int, set[str]] = {}
    for row, value in stated.filter(pl.col("row").is_in([r for r, _ in bare])).select("row", "value").iter_rows():
        for device in _devices(value):
            if not device.line or device.variant:
                exact.setdefault(row, set()).update(_lines_of(device))
    vaguer = [(row, value) for row, value in sorted(bare) if _devices(value)[0].series in exact.get(row, set())]
    listed = stated.filter(pl.col("listed")).select("row", "value").unique()
    drop = (pl.DataFrame(vaguer, schema={"row": pl.Int32, "value": pl.String}, orient="row")
            .join(listed, on=["row", "value"], how="anti").with_columns(pl.lit("stated").alias("polarity")))
    return facts.join(drop, on=["row", "value", "polarity"], how="anti")


def _plain(text: str) -> str:
    """Lower-case words, one space apart and around: " honeywell lynx touch k5109 "."""
    return " " + " ".join(_WORD.findall(text.lower())) + " "


@lru_cache(maxsize=65536)
def title_names_other_device(title: str, labelled: tuple[str, ...]) -> str | None:
    """The device the title says the product fits where it names none of the `labelled` ones, else None.

    A compatibility label copied from another listing names a device the product does not fit: "Samsung Galaxy
    S21" on a case whose title says "Samsung S22 Ultra 5G Metal case ... for Samsung S22 Ultra 5G" (B09Q5ZJ42R). The
    title contradicts the labels when a device phrase of it ("for ...", "compatible with ...", not negated) names a
    device of the same line (the series' first word: "galaxy", "iphone") as a labelled one, and the title holds the
    model of no labelled device, nor a labelled value word for word (another variant of one, "S7 Edge" for "S7", is
    for ecombench.catalog.facts' `_other_model_conflicts` to judge). A title naming another line only ("Toner for
    HP 64X" on a "LaserJet P4015" label) names what the product is, not what it fits, and contradicts nothing.

    Args:
        title: the product's title.
        labelled: the compatibility label values of the product that name a device model.

    Returns:
        The title's spelling of the first such device, or None.

    Example:
        >>> title_names_other_device("JINGANGYU Samsung S22 Ultra 5G Metal case", ("Samsung Galaxy S21",)) is None
        True
        >>> title_names_other_device("Metal case for Samsung S22 Ultra 5G (Red)", ("Samsung Galaxy S21",))
        'Samsung S22 Ultra'
        >>> title_names_other_device("Evo Wallet for Samsung Galaxy S7 Edge - Black", ("Samsung Galaxy S7",)) is None
        True
    """
    wanted = [d for value in labelled for d in _devices(value) if d.series]
    if not wanted:
        return None
    if {w.model for w in wanted} & device_words(title) or any(_plain(v) in _plain(title) for v in labelled):
        return None
    lines = {_family(w.series) for w in wanted}
    for _, phrase, negated in phrases(title):
        if negated:
            continue
        for spelling in device_spellings(phrase, frozenset()):
            if any(d.series and _family(d.series) in lines for d in _devices(spelling)):
                return spelling
    return None
