"""Device models named by compatibility values: one device, however the page spells it.

Compatibility labels spell one phone many ways ("Samsung S23", "Samsung Galaxy S23", "Galaxy S23 5G",
"Google Pixel 3 XL (6.3 inch)") and list several in one value ("iPhone 14/14 Pro Max", "Moto G6 Play, Moto G6
Forge"). `device_models` parses a value into the devices it names, each a `DeviceModel` (series + model +
variant), and `device_holds` says whether a stated value names the required device: the same device in any
spelling holds, another variant of it ("Galaxy S21 Ultra" for "Galaxy S21", "iPhone 14 Pro Max" for "iPhone 14")
does not. Product facts, the answer-set filters and the rubric checker decide "this product fits device X" here.

The parse reads a value's structure, not a list of phones: a model is a word with a digit (or an iPhone letter
model, "XR"); the words before it are its series, less the maker's name; the words after it that make another
variant ("Pro", "Max", "Ultra", "Play") are its variant; a model without a series of its own takes the one before
it ("iPhone 7/8/SE"). A maker named without a series takes the series its labels name (`MAKER_SERIES`: "Samsung
S23" is a "Galaxy S23"), a small reviewed table checked against the catalog's own labels by `learn_maker_series`
(benchmarks/device_models.py prints what they show).

A maker's line named without a number is a device too, the line itself: "Apple AirPods Pro" is the AirPods Pro
(series and model "airpod", variant "pro"), neither the "Apple AirPods" nor the "AirPods Pro 2". Only after the
maker's name: "iPad Pro" alone is a series as labels use it, and "Tablets" or "Cellphone" a kind, so a value without
a maker names no line; ecombench.catalog.fitted names a line the catalog knows with its maker where a page leaves it
out ("for Air Pod Pro").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from ecombench.text import UNIT_ALIASES, tokens

# A maker's name, dropped from the series, and the series its compatibility labels name after it; "" where the
# maker's own name serves ("TCL 30", "LG Stylo 3" keeps "stylo"). On the shared catalog's labels
# (learn_maker_series): samsung -> galaxy 239 of 253, apple -> iphone 33 of 41, google -> pixel 30 of 37,
# motorola -> moto 13 of 18, xiaomi -> redmi 6 of 6. Nintendo names its lines itself: the shared catalog's titles
# write "Nintendo Switch" in 5 products, never a Nintendo series before it.
MAKER_SERIES: dict[str, str] = {
    "samsung": "galaxy", "motorola": "moto", "google": "pixel", "apple": "iphone", "xiaomi": "redmi",
    "lg": "", "oneplus": "oneplus", "huawei": "", "nokia": "", "sony": "", "tcl": "", "alcatel": "", "zte": "",
    "htc": "", "blackberry": "", "asus": "", "lenovo": "", "oppo": "", "vivo": "", "realme": "", "honor": "",
    "microsoft": "", "amazon": "", "garmin": "", "fitbit": "", "nintendo": "",
}
# Words after a model that make another device of it: "Galaxy S21 Ultra" is no "Galaxy S21".
VARIANT_WORDS = frozenset("ultra plus pro max mini xl lite fe play forge power stylus edge active neo prime go air "
                          "e s c t r x xs xr".split())
# Letter models of a series without a digit: "iPhone XR", "iPhone SE".
LETTER_MODELS = frozenset({"x", "xr", "xs", "se"})
# Series whose one-letter lines are models when a variant word or a year follows: "Moto G Stylus 2021" (the year
# tells one Moto G Stylus from the next, so it stays part of such a model).
LETTER_LINE_SERIES = frozenset(s for s in MAKER_SERIES.values() if s)
# Words that neither name nor change the device: the network ("Galaxy S23 5G" is the S23), release, filler.
NEUTRAL_WORDS = frozenset("5g 4g lte version model edition release released new generation gen the only and or for "
                          "with compatible phone cell case cover st nd rd th".split())
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
_PLUS = re.compile(r"(?<=[A-Za-z0-9])\s?\+")
# Letters that end a model ("6a", "6s", "6t", "10e"): between two numbers, any other letter opens the next model.
_ENDINGS = frozenset("a s t e c r".split())
_WHOLE = re.compile(r"^\d+$")
# Words that make a "model" a system version, not a device: "iOS 13", "iPad OS 13", "Android 12".
SYSTEM_WORDS = frozenset({"ios", "os", "ipados", "android", "windows", "macos"})
# Words after a maker that name no line of its: a system ("Samsung Android"), a whole range ("Apple Watch Series",
# "Huawei and all phones") or Amazon's cut-off "… See more".
_NOT_LINE = SYSTEM_WORDS | frozenset("all any every other most more see series model models device devices "
                                     "product products".split())
# The words of a line after the maker's name at most, beside the maker's own series ("Galaxy Buds Live"): a longer
# run is a description ("Apple Watch Magnetic Charging Dock").
_LINE_WORDS = 2
_UNITS = frozenset(UNIT_ALIASES.values())
# Words after a number that make it a count, not a model: "AirPods Pro 4 Pairs", "Galaxy S10 2 Pack".
_COUNTS = frozenset("pack pc pcs piece pair count ct set".split())
# Short words that never open a model: letter models, makers, and variants that follow one ("3 XL", "S21 FE").
_NOT_PREFIX = LETTER_MODELS | frozenset(MAKER_SERIES) | frozenset(w for w in VARIANT_WORDS if len(w) == 2)


@dataclass(frozen=True, order=True)
class DeviceModel:
    """One device: its series ("galaxy", "ipad pro"; "" when unknown), model ("s23", "14") and variant words."""

    series: str
    model: str
    variant: tuple[str, ...]

    @property
    def line(self) -> bool:
        """Whether it is a line named without a number ("Apple AirPods Pro": model and series "airpod")."""
        return self.model == self.series

    def same_device(self, other: DeviceModel) -> bool:
        """Same model and variant, and the same series where both state one ("S23" is a "Galaxy S23")."""
        if self.model != other.model or self.variant != other.variant:
            return False
        return not self.series or not other.series or _series_match(self.series, other.series)


def _series_match(a: str, b: str) -> bool:
    """One series' words end the other's: "note" is the "galaxy note", "ipad pro" is no "macbook pro"."""
    wa, wb = a.split(), b.split()
    short, long = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
    return long[len(long) - len(short):] == short


def _words(text: str) -> list[str]:
    """The value's words with each model rejoined from its tokens: "s 23" -> "s23", "a 21 s" -> "a21s".

    Reads a page's value and its normalised form (ecombench.text.normalize splits letters from digits) alike, so
    the checker and the answer-set filters find one device in either. A letter or two before a whole number
    opens a model ("s 23") and one letter after it ends one ("6 a"); between two numbers a letter ends the model
    before it ("6 a 6") when it is an ending letter that model did not open with ("s 23 s 23", "8 n 950");
    a letter before a year opens no model ("moto e 2020"); "5 g" is the network, a neutral word; a size
    ("6.3 inch") or a count ("2 pack") is dropped; "+" after a model is its "Plus".
    """
    toks = list(tokens(_PLUS.sub(" plus ", text)))
    out: list[str] = []
    i = 0
    while i < len(toks):
        t, nxt, later = toks[i], _at(toks, i + 1), _at(toks, i + 2)
        if _NUMBER.match(t) and (nxt in _UNITS or nxt in _COUNTS):
            i += 2
            continue
        # a letter model opens a model too before a number of three digits or more ("x360", "x220": no "iPhone X" is
        # followed by one), unless a number comes before it (a resolution or a size: "1920x1080")
        after_number = bool(i and _NUMBER.match(toks[i - 1]))
        opens = t not in _NOT_PREFIX or (t in LETTER_MODELS and len(nxt) >= 3 and not after_number)
        if (t.isalpha() and len(t) <= 2 and opens and _WHOLE.match(nxt) and later not in _UNITS
                and not (nxt in ("4", "5") and later == "g") and not _YEAR.match(nxt)):
            model, i = t + nxt, i + 2
        elif _NUMBER.match(t) and nxt not in _UNITS:
            model, i = t, i + 1
        else:
            out.append(t)
            i += 1
            continue
        after, beyond = _at(toks, i), _at(toks, i + 1)
        if len(after) == 1 and after.isalpha() and (not _NUMBER.match(beyond) or (model in ("4", "5") and after == "g")
                                                    or (after in _ENDINGS and not model.startswith(after))):
            model += after  # "6 a" is the 6a; "5 g" becomes "5g", a neutral word
            i += 1
        out.append(model)
    return out


def _at(toks: list[str], i: int) -> str:
    return toks[i] if i < len(toks) else ""


def _is_model(word: str) -> bool:
    if word in NEUTRAL_WORDS or _YEAR.match(word):
        return False
    return any(c.isdigit() for c in word) or word in LETTER_MODELS


def _parse(words: list[str]) -> list[DeviceModel]:
    """The devices named in a run of words; a model without a series of its own takes the one before it.

    A run may list several models ("Galaxy S23 S23+ S23 Ultra S22", "iPhone 14 14 Pro Max", "iPhone 7 8 SE"):
    the words between one device's variant and the next model are that model's series.
    """
    words = [w for w in words if w not in NEUTRAL_WORDS]
    found: list[DeviceModel] = []
    series_words: list[str] = []
    makers: list[str] = []
    after_maker: list[str] = []  # the words since the last maker's name, while no model has followed it
    i = 0
    while i < len(words):
        w = words[i]
        if _letter_line(words, i, series_words):
            end = i + 1
            while end < len(words) and (words[end] in VARIANT_WORDS or _YEAR.match(words[end])):
                end += 1
            found.append(DeviceModel(series_words[-1], w, tuple(sorted(set(words[i + 1:end])))))
            series_words, makers, after_maker, i = [], [], [], end
            continue
        if _YEAR.match(w):  # a release year names nothing on its own ("Galaxy S23 2023" is the S23)
            i += 1
            continue
        if not _is_model(w):
            if w in MAKER_SERIES:
                makers.append(w)
                after_maker = []
            else:
                series_words.append(w)
                after_maker.append(w)
            i += 1
            continue
        own = " ".join(series_words[-3:])
        if not own and makers:
            own = MAKER_SERIES[makers[-1]] or makers[-1]  # "Samsung S23" is a Galaxy S23, "TCL 30" a TCL
        series = own or (found[-1].series if found else "")
        end = i + 1
        while end < len(words) and words[end] in VARIANT_WORDS and not _is_model(words[end]):
            end += 1
        if series or (any(c.isalpha() for c in w) and any(c.isdigit() for c in w)):  # "12", "XS" alone: no device
            found.append(DeviceModel(series, w, tuple(sorted(set(words[i + 1:end])))))
        series_words, makers, after_maker, i = [], [], [], end
    line = _line(makers[-1], after_maker) if makers and after_maker else None
    return [*found, line] if line else found


def _line(maker: str, words: list[str]) -> DeviceModel | None:
    """The line a maker's name and the words after it name without a number ("apple airpod pro"), if they do.

    The line's words come first, its variant words after them; none is the maker's numbered series alone ("Samsung
    Galaxy", "Apple iPhone"), a letter ("Sony E", "LG G") or a word of `_NOT_LINE`.
    """
    cut = next((i for i, w in enumerate(words) if w in VARIANT_WORDS), len(words))
    line, variant = words[:cut], words[cut:]
    own = MAKER_SERIES.get(maker, "")
    most = _LINE_WORDS + (1 if line[:1] == [own] else 0)
    if (not line or len(line) > most or line == [own] or any(w not in VARIANT_WORDS for w in variant)
            or any(len(w) < 2 or not w.isalpha() or w in _NOT_LINE for w in line)):
        return None
    name = " ".join(line)
    return DeviceModel(name, name, tuple(sorted(set(variant))))


def _letter_line(words: list[str], i: int, series_words: list[str]) -> bool:
    """Whether words[i] is a one-letter model of the series just named: "g" in "moto g stylus 2021"."""
    w, nxt = words[i], _at(words, i + 1)
    return (len(w) == 1 and w.isalpha() and bool(series_words) and series_words[-1] in LETTER_LINE_SERIES
            and (nxt in VARIANT_WORDS or bool(_YEAR.match(nxt))))


@lru_cache(maxsize=65536)
def device_models(value: str) -> tuple[DeviceModel, ...]:
    """The devices a compatibility value names, in order; empty when it names none (a kind: "Tablets").

    Example:
        >>> [f"{d.series} {d.model} {' '.join(d.variant)}".strip() for d in device_models("iPhone 14/14 Pro Max")]
        ['iphone 14', 'iphone 14 max pro']
        >>> device_models("Samsung S23") == device_models("Galaxy S23 5G")
        True
        >>> device_models("Apple AirPods Pro"), device_models("AirPods Pro")
        ((DeviceModel(series='airpod', model='airpod', variant=('pro',)),), ())
    """
    return tuple(dict.fromkeys(_parse(_words(value))))


def spell_plus(value: str) -> str:
    """A value with "+" after a model written as the word ("Galaxy S23+" -> "Galaxy S23 Plus").

    Normalised text drops "+", so a page's value keeps its variant only spelled out.
    """
    return _PLUS.sub(" Plus", value)


def names_device(value: str) -> bool:
    """Whether a compatibility value names a device model or a maker's line, not a kind or a series ("Tablets")."""
    return bool(device_models(value))


def names_model(value: str) -> bool:
    """Whether a compatibility value names a device by its model: not of a line alone ("Apple Watch 38mm")."""
    return any(not d.line for d in device_models(value))


def device_holds(stated: str, required: str) -> bool | None:
    """Whether a stated compatibility value names the required device; None when `required` names no device model.

    Every device the requirement names must be among the stated ones, in any spelling, and in the same variant.

    Example:
        >>> device_holds("Samsung Galaxy S21 Ultra", "Samsung Galaxy S21"), device_holds("Galaxy S21 5G", "Samsung S21")
        (False, True)
        >>> device_holds("Apple AirPods Pro", "Apple AirPods"), device_holds("Apple AirPods 2", "Apple AirPods Pro")
        (False, False)
    """
    want = device_models(required)
    if not want:
        return None
    have = device_models(stated)
    return all(any(w.same_device(h) for h in have) for w in want)


def device_words(text: str) -> frozenset[str]:
    """The words of `text` as device models are read from it: models rejoined ("s21", "v20"), sizes dropped.

    Example:
        >>> sorted(device_words("Case for Samsung S22 Ultra 5G, 6.8 inch"))
        ['5g', 'case', 'for', 's22', 'samsung', 'ultra']
    """
    return frozenset(_words(spell_plus(text)))


def device_tokens(required: str) -> list[str] | None:
    """Tokens every option naming the required device holds (its models' tokens), or None when it names none.

    What an answer-set index narrows on: a superset of the options `device_holds` accepts.
    """
    want = device_models(required)
    if not want:
        return None
    return sorted({t for d in want for t in tokens(d.model) if t not in ("5g", "4g")})


def learn_maker_series(values: Iterable[str]) -> dict[str, Counter[str]]:
    """Per maker word, how often each word follows it before a model in compatibility values ("samsung" -> "galaxy").

    What `MAKER_SERIES` is reviewed against: the series a maker's labels name when they name one.
    """
    seen: dict[str, Counter[str]] = {}
    for value in values:
        words = [w for w in _words(value) if w not in NEUTRAL_WORDS]
        for i in range(len(words) - 2):
            if words[i] in MAKER_SERIES and not _is_model(words[i + 1]) and _is_model(words[i + 2]):
                seen.setdefault(words[i], Counter())[words[i + 1]] += 1
    return seen
