"""Text normalisation: the one place that decides when two strings say the same value.

Every checker, leakage test and answer-set filter compares values through `normalize`, so
"1.69 Inches", "1.69-inch" and '1.69"' are one value, "Black" matches inside "Matte Black" but
"red" never matches inside "bored" (comparison is on whole tokens, reference §15.15).
"""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache

_TAG = re.compile(r"<[^>]+>")
_INCH_MARK = re.compile(r"(\d)\s*(?:\"|''|”|″)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_TOKEN = re.compile(r"\d+(?:\.\d+)?|[a-z]+")
_DOLLAR = re.compile(r"\$\s*(\d+(?:\.\d+)?)")
_PERCENT = re.compile(r"(\d)\s*%")
_POSSESSIVE = re.compile(r"(\w)['’]s\b")
# Plural forms the naive rule gets wrong, and words that only look plural.
IRREGULAR = {"series": "series", "news": "news", "species": "species", "knives": "knife", "wives": "wife",
             "shelves": "shelf", "leaves": "leaf", "halves": "half", "children": "child", "feet": "foot",
             "teeth": "tooth", "geese": "goose", "mice": "mouse",
             "glasses": "glasses", "pants": "pants", "shorts": "shorts", "scissors": "scissors",
             "jeans": "jeans", "earbuds": "earbud", "lens": "lens", "gas": "gas", "bus": "bus", "plus": "plus"}

# Unit spellings folded to one token, applied only right after a number ("in" stays a word).
UNIT_ALIASES: dict[str, str] = {
    "in": "inch", "inch": "inch", "inche": "inch", "inches": "inch",
    "ft": "foot", "feet": "foot", "foot": "foot",
    "oz": "ounce", "ounce": "ounce", "ounces": "ounce",
    "lb": "pound", "lbs": "pound", "pound": "pound", "pounds": "pound",
    "mm": "millimeter", "millimeter": "millimeter", "millimeters": "millimeter", "millimetre": "millimeter",
    "cm": "centimeter", "centimeter": "centimeter", "centimeters": "centimeter", "centimetre": "centimeter",
    "ml": "milliliter", "milliliter": "milliliter", "milliliters": "milliliter", "millilitre": "milliliter",
    "l": "liter", "liter": "liter", "liters": "liter", "litre": "liter",
    "gram": "gram", "grams": "gram", "kg": "kilogram", "kilogram": "kilogram", "kilograms": "kilogram",
    "w": "watt", "watt": "watt", "watts": "watt", "v": "volt", "volt": "volt", "volts": "volt",
    "gb": "gb", "tb": "tb", "mb": "mb", "mah": "mah", "hz": "hz", "ghz": "ghz",
}

STOPWORDS = frozenset({"the", "a", "an", "for", "with", "and", "or", "of", "to", "in", "on", "is", "it", "my", "i"})


def _number(token: str) -> str:
    whole, _, frac = token.partition(".")
    frac = frac.rstrip("0")
    whole = whole.lstrip("0") or "0"
    return f"{whole}.{frac}" if frac else whole


def _singular(token: str) -> str:
    if token in IRREGULAR:
        return IRREGULAR[token]
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 4 and token.endswith(("ches", "shes", "xes", "sses", "zzes")):
        return token[:-2]
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


@lru_cache(maxsize=200_000)
def tokens(text: str) -> tuple[str, ...]:
    """Split text into normalised tokens.

    Lower-cases, folds accents and HTML entities, drops tags, splits digits from letters
    ("5G" -> "5", "g"), drops thousands separators, trims trailing decimal zeros, reads "$20" as
    "20 dollar" and "8%" as "8 percent", drops possessive 's ("Women's" = "Womens"), folds unit
    spellings that follow a number ("in", "inches", '"' -> "inch") and singularises
    (-ies, -ches/-shes/-xes/-sses, -s, plus an irregular list).

    Args:
        text: any string (None is not accepted).

    Returns:
        A tuple of tokens; empty for text with no letters or digits.
    """
    text = html.unescape(_TAG.sub(" ", text))
    if not text.isascii():  # ASCII has no accents to fold: skipping NFKD halves the cost on long text
        text = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = text.lower()
    text = _INCH_MARK.sub(r"\1 inch ", text)
    text = _THOUSANDS.sub("", text)
    text = _DOLLAR.sub(r"\1 dollar ", text)
    text = _PERCENT.sub(r"\1 percent ", text)
    text = _POSSESSIVE.sub(r"\1s", text)
    out: list[str] = []
    for raw in _TOKEN.findall(text):
        if raw[0].isdigit():
            out.append(_number(raw))
        elif out and out[-1][0].isdigit() and raw in UNIT_ALIASES:
            out.append(UNIT_ALIASES[raw])
        else:
            out.append(_singular(raw))
    return tuple(out)


def normalize(text: str) -> str:
    """Normalised form of `text`: its `tokens` joined by single spaces."""
    return " ".join(tokens(text))


def contains_phrase(haystack: str, needle: str) -> bool:
    """True when the tokens of `needle` occur contiguously, as whole tokens, in `haystack`.

    An empty needle is never contained (it cannot be stated, so it cannot leak either).
    """
    n = normalize(needle)
    return bool(n) and f" {n} " in f" {normalize(haystack)} "


def count_phrase(haystack: str, needle: str) -> int:
    """How many times `needle` occurs in `haystack` as whole tokens (overlaps counted)."""
    n, h = tokens(needle), tokens(haystack)
    if not n:
        return 0
    return sum(1 for i in range(len(h) - len(n) + 1) if h[i:i + len(n)] == n)


def find_phrase(haystack: str, needle: str) -> tuple[int, int] | None:
    """Character span in `haystack` of the shortest run of whole words that contains `needle` (token-aware).

    Used for evidence in reports: the span points into the original text, and is found with
    the same `tokens` as `contains_phrase`, so inch marks, units and numbers behave alike.
    Returns None when the needle is not contained.
    """
    n = normalize(needle)
    if not n or f" {n} " not in f" {normalize(haystack)} ":
        return None
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", haystack)]

    def holds(i: int, j: int) -> bool:
        return f" {n} " in f" {normalize(haystack[words[i][0]:words[j][1]])} "

    last = next(j for j in range(len(words)) if holds(0, j))  # the first word where the needle is complete
    first = next(i for i in range(last, -1, -1) if holds(i, last))  # the latest start that still holds it
    start, end = words[first][0], words[last][1]
    # Trim punctuation that clings to the words ("Black," -> "Black") while the needle stays whole.
    while (end - start > 1 and haystack[end - 1] in ".,;:!?)]'"
           and f" {n} " in f" {normalize(haystack[start:end - 1])} "):
        end -= 1
    while end - start > 1 and haystack[start] in "([\"'" and f" {n} " in f" {normalize(haystack[start + 1:end])} ":
        start += 1
    return start, end


def keywords(text: str) -> frozenset[str]:
    """Content tokens of `text` (normalised tokens minus stopwords), for set comparisons."""
    return frozenset(t for t in tokens(text) if t not in STOPWORDS)


def format_number(x: float) -> str:
    """How text states a number: 4.0 -> "4", 4.5 -> "4.5", 1000.0 -> "1,000"."""
    return f"{x:,.2f}".rstrip("0").rstrip(".") if x != int(x) else f"{int(x):,}"


_VOWEL_SOUND_LETTERS = set("AEFHILMNORSX")  # letters whose spoken name starts with a vowel: "an HDMI", "an LED"
_CONSONANT_SOUND_START = re.compile(r"^(?:u(?:ni|s[aeiu]|sb|ti|r[aeiou]|k)|eu|one\b|once\b)", re.IGNORECASE)


def _article(word: str) -> str:
    if len(word) > 1 and word.isupper() and word.isalpha():
        return "an" if word[0] in _VOWEL_SOUND_LETTERS else "a"
    if word[:1].lower() in "aeiou" and not _CONSONANT_SOUND_START.match(word):
        return "an"
    return "a"


def fix_articles(text: str) -> str:
    """Choose "a" or "an" by the next word's sound, as far as spelling tells.

    For example "an Automobile", "a USB", "an HDMI", "a Universal". Only the lowercase/capitalised
    article words "a"/"an" change.
    """
    def repl(m: re.Match) -> str:
        art, word = m.group(1), m.group(2)
        new = _article(word)
        return (new.capitalize() if art[0] == "A" else new) + " " + word
    return re.sub(r"\b(an?|An?) ([A-Za-z][\w-]*)", repl, text)


def join_words(parts: list[str], word: str = "and") -> str:
    """"a, b and c" (or with `word` "or"); one part is itself, none is ""."""
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + f" {word} " + parts[-1]


def fill(template: str, value: str) -> str:
    """Put a value into a field template without doubling the template's noun.

    "with a {value} connector" + "barrel connector" -> "with a barrel connector" (not
    "barrel connector connector"); articles follow the value ("an Automobile theme").
    """
    pre, _, post = template.partition("{value}")
    noun = post.rstrip(".!?")
    tail = normalize(noun).split()
    if tail and normalize(value).split()[-len(tail):] == tail:
        post = post[len(noun):]
    return fix_articles(f"{pre}{value}{post}")
