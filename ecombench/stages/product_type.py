"""The product type: what the product is, from the title's head noun phrase, confirmed by the category path.

Amazon category paths type an accessory by the device it fits: a watch band sits under
"Smartwatches", replacement earpads under "Wireless Headphones", a charger base under
"Toothbrushes", a wall mount under "Whole Home & Mesh Wi-Fi Systems". The title says
what the product is before it says what it fits: its head is the part before "for", "compatible
with", "fits", "with", a comma or a bar. So the type is the last run of product nouns in the
first title segment that has one ("Silicone Watch Bands" -> "Watch Bands"); when the deepest
category that the title states (ecombench.stages.product_type.entity_phrase) names that same thing, the
category's wording is kept (the category ends in the head's noun and the head states it:
"Smartwatch" in the head, "Smartwatches" the category). A title
whose head names no product noun and no category has no type, and its target is rejected
(`no_product_type`).
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ecombench.lemmas import lemmas
from ecombench.text import keywords, tokens

if TYPE_CHECKING:
    pass

NOUN_TABLE = Path(__file__).resolve().parent.parent / "tables" / "product_types.toml"
# Where a title's head ends: what follows names the fitted device, a feature or a variant.
_HEAD_END = re.compile(r"\s*(?:[,|;:()\[\]{}+]| [-–—] |\b(?:for|compatible with|compatible for|fits|fit for|with|w/|"
                       r"includes?|including|made for|designed for|works with|by|not fit)\b)\s*", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
MAX_SEGMENTS = 6  # "SUANPOT for Samsung Galaxy S8+ /S8 Plus 6.2 inch (Not Fit S8) Leather Wallet case"


@lru_cache(maxsize=4)
def load_type_nouns(path: str | None = None) -> tuple[frozenset[str], frozenset[str]]:
    """(product nouns, modifiers that stay with a following noun), singular and lower case.

    Raises:
        ValueError: the table lists no noun (the message names the file).
    """
    src = Path(path) if path else NOUN_TABLE
    data = tomllib.loads(src.read_text(encoding="utf-8"))
    nouns = frozenset(t for w in data.get("nouns", []) for t in tokens(w))
    modifiers = frozenset(t for w in data.get("modifiers", []) for t in tokens(w))
    if not nouns:
        raise ValueError(f"{src}: no product nouns")
    return nouns, modifiers


_LINE_LABEL = re.compile(r"^\s*(?:\S+\s+){0,3}\S+:\s+")  # "Funko POP! TV: Marvel ..." names a product line


def head_segments(title: str) -> list[str]:
    """The title cut where its head ends.

    "PETIMETI Wall Mount for EERO 6 ..." -> ["PETIMETI Wall Mount", "EERO 6", ...].

    A short label before a colon ("Funko POP! TV: Marvel Vs Capcom ... Figure") names a product line, not
    what the product is, and is dropped.
    """
    return [s.strip() for s in _HEAD_END.split(_LINE_LABEL.sub("", title or "", count=1)) if s and s.strip()]


def head_noun_phrase(title: str, nouns: frozenset[str], modifiers: frozenset[str],
                     variants: frozenset[tuple[str, ...]] = frozenset()) -> tuple[str, str] | None:
    """(type phrase, the segment it came from): the last run of product nouns of the first segment having one.

    A modifier just before the run stays with it ("Wall Mount", "Carrying Case"). A hyphenated word is a noun
    when its first part is; what follows the hyphen is dropped from the phrase unless it is a noun too ("Pens-Black"
    -> "Pens", "Travel Mug-Beige" -> "Travel Mug", "Mascara-Avocado" -> "Mascara"). In a later segment a run that
    is one of `variants` (the product's own colour or material, as tokens) names a variant, not the product, and
    the run before it is taken, else the next segment: "..., Blush Finish, ..." of a blush-coloured headboard,
    "..., Ceramic, Cream" of a cream pie dish, "Screen Protector Tempered Glass" of a glass screen protector.
    """
    for n, segment in enumerate(head_segments(title)[:MAX_SEGMENTS]):
        if n and re.match(r"\S*\d", segment):
            continue  # a later segment opening with a number is a spec ("500GB Hard Drive"), not the head
        words = _WORD.findall(segment)
        singular = [tokens(w)[0] if tokens(w) else "" for w in words]
        runs, start = [], None
        for i, t in enumerate(singular + [""]):
            if t in nouns and start is None:
                start = i
            elif t not in nouns and start is not None:
                runs.append((start, i))
                start = None
        for a, b in reversed(runs):
            if a > 0 and singular[a - 1] in modifiers:
                a -= 1
            phrase = " ".join(_noun_part(w, nouns) for w in words[a:b])
            if not (n and tokens(phrase) in variants):
                return phrase, segment
    return None


def _noun_part(word: str, nouns: frozenset[str]) -> str:
    # A hyphenated word of a noun run without what follows its first hyphen, unless that is a noun as well
    # ("Pens-Black" -> "Pens", "Case-Mate" -> "Case", "Pen-Shaped" -> "Pen"; "Pop-Grip" stays).
    word = word.strip("'-")
    first, hyphen, rest = word.partition("-")
    if hyphen and not any(t in nouns for t in tokens(rest)):
        return first
    return word


# Detail fields whose value, said alone, can look like a product noun ("Cream", "Blush", "Glass").
VARIANT_FIELDS = ("Color", "Material")


def _variants(product: dict[str, Any]) -> frozenset[tuple[str, ...]]:
    # The product's own colour and material values, as tokens: details as a snapshot row's [{"key", "value"}] or
    # as a raw record's {key: value}.
    details = product.get("details") or ()
    pairs = details.items() if isinstance(details, dict) else ((d.get("key"), d.get("value")) for d in details
                                                                if isinstance(d, dict))
    return frozenset(tokens(v) for k, v in pairs if k in VARIANT_FIELDS and isinstance(v, str) and v)


def product_type(product: dict[str, Any], not_entities: frozenset[str] = frozenset(),
                 path: str | None = None) -> str | None:
    """What the product is, as a phrase its title states (see the module docstring), or None.

    Args:
        product: a products.parquet row (title, categories).
        not_entities: category names that say who a product is for ("Women"), from the field table.
        path: another noun table (tests).

    Example: "Studio 2/3 Replacement Earpads, JARMOR Memory Foam ... for Beats Studio" (category
    "Wireless Headphones") -> "Earpads".
    """
    nouns, modifiers = load_type_nouns(path)
    title = product.get("title") or ""
    category = entity_phrase(product, not_entities)
    cat_tokens = tokens(category or "")
    # A colour or material value is a variant only where no category of the path ends in it: "Glass" of a wine glass
    # ("Wine Glasses") names the product.
    ends = {lem for c in product.get("categories") or () if (t := tokens(c)) for lem in lemmas(t[-1])}
    variants = frozenset(v for v in _variants(product) if v and not lemmas(v[-1]) & ends)
    head = head_noun_phrase(title, nouns, modifiers, variants)
    if head is None:
        # No product noun in the head: the category names the type only if the head itself states it.
        first = head_segments(title)[:1]
        return category if category and first and keywords(category) <= keywords(first[0]) else None
    phrase, segment = head
    # Confirmed when the category ends in the head's own noun and the head segment states it: "Wireless
    # Headphones" for "... Wireless Bluetooth Headphones", never "Toothbrushes" for "Toothbrush Cover".
    phrase_tokens = tokens(phrase)
    if (category and cat_tokens and phrase_tokens and cat_tokens[-1] == phrase_tokens[-1]
            and keywords(category) <= keywords(segment)):
        return category
    # A run that says a noun twice is a list of search terms ("... Accent Pillow Throw Pillow Cover Pillow Cushion"):
    # the category is kept when the run states it and does not end in the repeated word ("Toothbrush Cases
    # Toothbrushes Holder" is no toothbrush).
    lemma_runs = [frozenset(lemmas(t)) for t in phrase_tokens]
    repeated = {lem for i, a in enumerate(lemma_runs) for b in lemma_runs[i + 1:] for lem in a & b}
    if (category and cat_tokens and repeated and keywords(category) <= keywords(phrase)
            and not lemmas(cat_tokens[-1]) & repeated):
        return category
    return phrase


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
