"""The product type: what the product is, from the title's head noun phrase, confirmed by the category path.

Amazon category paths type an accessory by the device it fits: a watch band sits under "Smartwatches", replacement
earpads under "Wireless Headphones", a charger base under "Toothbrushes", a wall mount under "Whole Home & Mesh
Wi-Fi Systems". The title says what the product is before it says what it fits: its head is the part before "for",
"compatible with", "fits", "with", a comma or a bar. So the type is the last run of type nouns in the first title
segment that has one ("Silicone Watch Bands" -> "Watch Bands"), the nouns and the modifiers that stay with them
being the catalog's own (`ecombench.catalog.type_vocabulary.TypeVocabulary`, learned from the snapshot). When the
deepest category that the title states (`entity_phrase`) names that same thing, the category's wording is kept (the
category ends in the head's noun and the head states it: "Smartwatch" in the head, "Smartwatches" the category),
after the title's words before it that the catalog names as a kind of it (`_with_kind`: "Candle Holders", not the
"Holders" ending "Candlestick Holders"). A title whose head names no type noun and no category has no type, and its
target is rejected (`no_product_type`). A type whose noun no category of the path names gives way to the leaf
category where the title states it as a product before what it fits (`_stated_category`): "Olive Oil Color Shine
Shield, 4 oz - ... Hair Spray" under "Hair Sprays"; not where the category names what the typed accessory fits
(`_fits_stated`: "Fish Finder 12V Power Adapter" under "Fish Finders & Depth Finders").

`product_type` types one product; `product_types` types a whole catalog with one Python call per distinct
(title, category path), the product's own colours and materials applied in polars.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import polars as pl

from ecombench.catalog.devices import VARIANT_WORDS
from ecombench.catalog.type_vocabulary import (
    FITS_NEXT,
    HEAD_END,
    INCLUDED_OPENERS,
    LINE_LABEL,
    WORD,
    TypeVocabulary,
    category_evidence,
    heads,
    opened_heads,
    verb_form,
    word_token,
)
from ecombench.lemmas import lemmas
from ecombench.text import STOPWORDS, keywords, tokens

MAX_SEGMENTS = 6  # "SUANPOT for Samsung Galaxy S8+ /S8 Plus 6.2 inch (Not Fit S8) Leather Wallet case"
# Words of a type phrase at most: a longer run of type nouns is a list of search terms ("Patio Furniture Sofa Set").
MAX_TYPE_WORDS = 3
# Detail fields whose value, said alone, can look like a product noun ("Cream", "Blush", "Glass").
VARIANT_FIELDS = ("Color", "Material")
# A later segment opening with a number is a spec ("500GB Hard Drive"), not the head; one opening with a model
# code is not ("DW-5600 Watch Screen Protector", "RJ-45 ... Strain Relief Boots").
_SPEC = re.compile(r"\d")
# Words between a run naming the category and a later last run that make the head a list of search terms
# (`_category_run`); an accessory follows its device's noun closer ("Toothbrush Replacement Heads").
LISTED_GAP = 3
# Variant words of device models (ecombench.catalog.devices.VARIANT_WORDS) that name no kind of product: no category
# name of the shared catalog holds them ("active", "air", "mini", "play" and "power" do: "Air Purifiers").
DEVICE_VARIANTS = frozenset({"pro", "max", "plus", "ultra", "lite"}) & VARIANT_WORDS
# Words after a noun that say it comes with the product.
_INCLUDED = frozenset({"included", "include", "includes", "incl", "inclusive"})


def head_noun_phrases(title: str, vocabulary: TypeVocabulary) -> list[tuple[str, str, str, bool, bool]]:
    """Every (run, type phrase, its segment, from a later segment, from a spec) the title's head offers, best first.

    In the first segment that has a run of type nouns, its last run; in later segments (when the first has
    none), every run, last first, and the next segment's after them: a run there may turn out to be the
    product's own colour or material (`product_type`). A later segment opening with a number is a spec ("500GB
    Hard Drive" of a laptop), and one opened by "with", "w/", "include(s)" or "including" (`INCLUDED_OPENERS`), with
    the comma list it opens, names what comes with the product ("Telephoto Lens with Nikon Mount", "Push Wagon with
    Canopy, Storage Bag"): their runs are offered flagged, for the category to confirm or rule out
    ("24AWG ... HDMI Extension Cable" under "HDMI Cables" is the product). The type phrase is the run's last
    `MAX_TYPE_WORDS` words, with a modifier just before them ("Wall Mount", "Carrying Case"); the whole run is
    kept for the category to confirm (`type_candidates`). A hyphenated word is a noun when its first part is;
    what follows the hyphen is dropped unless it is a noun too ("Pens-Black" -> "Pens").
    """
    out: list[tuple[str, str, str, bool, bool]] = []
    included = False  # in what comes with the product: a "with" segment and the list it opens
    for n, (opener, segment) in enumerate(opened_heads(title)[:MAX_SEGMENTS]):
        included = opener in INCLUDED_OPENERS or (included and opener == ",")
        spec = bool(n and (_SPEC.match(segment) or included))
        for run, phrase, _, _ in reversed(segment_runs(segment, vocabulary)):
            out.append((run, phrase, segment, n > 0, spec))
            if n == 0:
                return out
    return out


def segment_runs(segment: str, vocabulary: TypeVocabulary) -> list[tuple[str, str, int, int]]:
    """The (run, type phrase, first word, end word) of every run of type nouns in one title segment, in title order.

    The type phrase is the run's last `MAX_TYPE_WORDS` words, with a modifier just before them; the run keeps a
    modifier just before it (`head_noun_phrases`). A rare head (`TypeVocabulary.rare_heads`) that ends the segment
    right after a type noun ends that run: the run named what it fits or is part of ("Hand Mixer Beaters"). The
    last run joins the run just before it across an "and" ("Keyboard and Mouse Combo"). First and end count the
    segment's words (`WORD`), end excluded.
    """
    nouns, modifiers = vocabulary.nouns, vocabulary.modifiers
    found = list(WORD.finditer(segment))
    words = [m.group() for m in found]
    singular = [_noun_token(w, nouns, i == len(words) - 1) for i, w in enumerate(words)]
    # A number between two words parts them: "Galaxy Note 20 Case Cover" holds no run "Note Case Cover".
    parted = {i for i in range(1, len(found)) if _SPEC.search(segment[found[i - 1].end():found[i].start()])}
    # A rare head extends a run that it ends the segment after ("Hand Mixer Beaters").
    if len(singular) > 1 and singular[-1] in vocabulary.rare_heads and singular[-2] in nouns:
        nouns = nouns | {singular[-1]}
    runs, start = [], None
    for i, t in enumerate(singular + [""]):
        if start is not None and (t not in nouns or i in parted):
            runs.append((start, i))
            start = None
        if t in nouns and start is None:
            start = i
    # A noun followed by "included" is in the box, not the product ("Wireless Mouse Battery Included").
    runs = [(a, b - 1) if b < len(singular) and singular[b] in _INCLUDED else (a, b) for a, b in runs]
    runs = [(a, b) for a, b in runs if b > a]
    # A collective noun alone ("... Replacement Set", "3PCs Set") is no type: the run before it is. With a
    # modifier it is ("Wiring Kit").
    runs = [(a, b) for a, b in runs if b - a > 1 or singular[a] not in vocabulary.collectives
            or (a > 0 and singular[a - 1] in modifiers)]
    out = []
    # A device's variant word after the device's name is the device's, not a kind of the product: "AirPods Pro
    # Case" is a case, no "Pro Case".
    of_device = {i for i in range(1, len(words)) if singular[i] in DEVICE_VARIANTS and words[i - 1][:1].isupper()
                 and i not in parted}
    for a, b in runs:
        first = a - 1 if a > 0 and singular[a - 1] in modifiers and a not in parted and a - 1 not in of_device else a
        short = max(a, b - MAX_TYPE_WORDS)
        if (short > 0 and singular[short - 1] in modifiers and b - short < MAX_TYPE_WORDS and short not in parted
                and short - 1 not in of_device):
            short -= 1
        out.append((" ".join(_noun_part(w, nouns) for w in words[first:b]),
                    " ".join(_noun_part(w, nouns) for w in words[short:b]), first, b))
    # Two nouns joined by "and" name one product ("Wireless Keyboard and Mouse Combo", "Patch and Tab").
    if len(out) > 1 and out[-2][3] == out[-1][2] - 1 and words[out[-2][3]].lower() == "and":
        (run, _, first, _), (_, phrase, _, end) = out[-2], out[-1]
        out[-2:] = [(f"{run} and {out[-1][0]}", f"{run.split()[-1]} and {phrase}", first, end)]
    return out


def _noun_token(word: str, nouns: frozenset[str], last: bool) -> str:
    """A title word as the vocabulary holds it: its first token, or a hyphenated last word's last token.

    The last token only when it alone is a noun and the word ends the segment ("... Disposable Pre-Filter" is a
    filter; "Non-Stick Pan" stays a pan), or when it makes the word an adjective (`_ADJECTIVE_ENDINGS`, or a past
    participle the lexicon knows): "Lead-Free Velvet Underglaze" is no lead, "Eraser Pen-Shaped" no pen.
    """
    t = tokens(word)
    if len(t) > 1 and "-" in word and (t[-1] in _ADJECTIVE_ENDINGS or (t[-1].endswith("ed") and verb_form(t[-1]))):
        return t[-1]
    if last and len(t) > 1 and t[0] not in nouns and t[-1] in nouns and "-" in word:
        return t[-1]
    return t[0] if t else ""


# Words that make "<noun>-<word>" an adjective ("Lead-Free", "Rust-Proof", "Heat-Resistant", "Dishwasher-Safe"); the
# lexicon reads them as nouns too, so `never_a_noun` does not find them.
_ADJECTIVE_ENDINGS = frozenset({"free", "proof", "resistant", "safe"})


def _noun_part(word: str, nouns: frozenset[str]) -> str:
    # A hyphenated word of a noun run without what follows its first hyphen, unless that is a noun as well
    # ("Pens-Black" -> "Pens", "Case-Mate" -> "Case"; "Pop-Grip" stays).
    word = word.strip("'-")
    first, hyphen, rest = word.partition("-")
    if hyphen and not any(t in nouns for t in tokens(rest)):
        return first
    return word


@lru_cache(maxsize=65_536)
def type_candidates(title: str, categories: tuple[str, ...], vocabulary: TypeVocabulary,
                    not_entities: frozenset[str] = frozenset()) -> tuple[tuple[str | None, tuple[str, ...]], ...]:
    """The types a title and category path offer, best first, each with the variant that rules it out.

    A candidate (type, variant) holds unless the product's own colour or material, as tokens, is `variant`
    (empty: nothing rules it out): "..., Blush Finish, ..." of a blush-coloured headboard. The last candidate
    always holds (None: no type). Cached per (title, path, vocabulary): the one Python call per distinct pair
    of a catalog (`product_types`).
    """
    product = {"title": title, "categories": list(categories)}
    category = entity_phrase(product, not_entities)
    cat_tokens = tokens(category or "")
    # A colour or material value is a variant only where no category of the path ends in it: "Glass" of a wine
    # glass ("Wine Glasses") names the product.
    ends = {lem for c in categories if (t := tokens(c)) for lem in lemmas(t[-1])}
    out: list[tuple[str | None, tuple[str, ...]]] = []
    stated = _stated_category(title, categories, vocabulary, not_entities)
    for run, phrase, segment, later, spec in head_noun_phrases(title, vocabulary):
        if spec and not _names_category(run, segment, category, cat_tokens):
            continue  # a spec's noun is the product only where the category names it too
        if not later and cat_tokens and tokens(run)[-1:] != cat_tokens[-1:]:
            run, phrase = _category_run(segment, vocabulary, cat_tokens, _fits_next(title, segment)) or (run, phrase)
        phrase_tokens = tokens(phrase)
        variant = phrase_tokens if later and phrase_tokens and not lemmas(phrase_tokens[-1]) & ends else ()
        kind = _confirmed(run, phrase, segment, category, cat_tokens, categories, vocabulary, not_entities)
        if stated and not _in_path(kind, categories) and not _fits_stated(kind, stated, title):
            kind = stated
        out.append((kind, variant))
        if not variant:
            return tuple(out)
    # No type noun in the head: the category names the type only if the head itself states it.
    first = heads(title)[:1]
    if category and first and keywords(category) <= keywords(first[0]):
        out.append((category, ()))
        return tuple(out)
    # Nor in the rest: a product-line label before a colon may name what the product is ("Christmas Ornament:
    # Poodle, gray", "Funko Pop! Keychain: Marvel ...").
    if LINE_LABEL.match(title):
        text = title.partition(":")[0]
        out.extend((_confirmed(run, phrase, text, category, cat_tokens, categories, vocabulary, not_entities), ())
                   for run, phrase, _, later, _ in head_noun_phrases(text, vocabulary) if not later)
    out.append((None, ()))
    return tuple(out)


# What opens the part of a title that names what the product fits or comes with ("... Case for iPhone 8", "... with
# Mouse"); what separates the pieces of a head.
_FITS = re.compile(r"\b(?:for|with|compatible|fits?|designed|made for|works? with|replacement for|suitable)\b|\bw/",
                   re.IGNORECASE)
_PIECES = re.compile(r"[,|;:()\[\]/]| - ")


def _in_path(kind: str | None, categories: Sequence[str]) -> bool:
    """Whether some category of the path names the type's noun ("Cases" of "Basic Cases" for "Wallet Case")."""
    kind_tokens = tokens(kind or "")
    return bool(kind_tokens) and any(lemmas(kind_tokens[-1]) & lemmas(end)
                                     for c in categories for end, _ in category_evidence(c))


def _stated_category(title: str, categories: Sequence[str], vocabulary: TypeVocabulary,
                     not_entities: frozenset[str]) -> str | None:
    """The leaf category as the title states it before what it fits (`entity_phrase` of that part), or None.

    "Olive Oil Color Shine Shield, 4 oz - Regis DESIGNLINE - Heat Styling Protectant, Hair Spray" under "Hair
    Sprays" states its category; "Youkamoo 4 Pin XLR Balanced Male Compatible for Hifiman ... Headphones" under
    "Wireless Headphones" does not: the headphones are what the cable fits. The phrase ends in a noun the leaf names
    products by (`category_evidence`) and the catalog's vocabulary holds as a type noun that stands alone.
    """
    if not categories:
        return None
    head = _FITS.split(title, maxsplit=1)[0]
    phrase = entity_phrase({"title": head, "categories": [categories[-1]]}, not_entities) if head.strip() else None
    words = tokens(phrase or "")
    nouns = {lem for end, _ in category_evidence(categories[-1]) for lem in lemmas(end)}
    if phrase is None or not words or not phrase[0].isupper() or not lemmas(words[-1]) & nouns:
        return None  # "de Parfum" of "Eau de Parfum"
    # a type noun of the catalog that names a product alone: "Salt" of "Salt & Pepper Mill Sets" and "Sets" of
    # "Container Sets" do not
    if words[-1] not in vocabulary.nouns or words[-1] in vocabulary.collectives:
        return None
    # ... and that the head names as a product: its noun ends a run of type nouns ("TRRS 4-Pole Headphone Cable"
    # names a cable, "Foam Cushion Premium Pad Headphone Earpads" ear pads).
    noun = lemmas(words[-1])
    for piece in _PIECES.split(head):
        if _INCLUDED & set(tokens(piece)):
            continue  # "Tablet Case Keyboard Wireless Mouse Stylus Included": what comes in the box
        for run, *_ in segment_runs(piece, vocabulary):
            if lemmas(tokens(run)[-1]) & noun:
                return phrase
    return None


def _fits_stated(kind: str | None, stated: str, title: str) -> bool:
    """Whether the stated category is what the typed product fits: its noun is in the type or just before it.

    "FishTrax Fish Finder 12V Power Adapter", "Dog Collar Battery", "Drive Enclosure" are accessories of what
    their category names.
    """
    kind_tokens, cat_noun = tokens(kind or ""), lemmas(tokens(stated)[-1])
    if any(lemmas(t) & cat_noun for t in kind_tokens):
        return True
    # the head's words, a spec with a number left out ("12V")
    words = tuple(t for w in WORD.findall(_FITS.split(title, maxsplit=1)[0]) if not _SPEC.search(w)
                  for t in tokens(w)[:1])
    starts = [i for i in range(len(words)) if words[i:i + len(kind_tokens)] == kind_tokens]
    return any(lemmas(w) & cat_noun for i in starts for w in words[max(i - 2, 0):i])


def _fits_next(title: str, segment: str) -> bool:
    """Whether the title goes on after `segment` with what the product fits ("... Heads for Philips Sonicare")."""
    at = title.find(segment)
    return at >= 0 and bool(FITS_NEXT.match(title[at + len(segment):]))


def _category_run(segment: str, vocabulary: TypeVocabulary, cat_tokens: tuple[str, ...],
                  fits_next: bool = False) -> tuple[str, str] | None:
    """The last (run, phrase) ending in the category's noun before the last run, where that names the product; or None.

    A head that lists search terms names the product where its category does: "State of Texas Flag Lanyard ...
    Pass ID Holder Mens Womens Kids Adult Detachable Breakaway Snap Buckle" under "Badge Holders" is an ID holder,
    not a buckle. An accessory names its device just before itself ("Toothbrush Replacement Heads", "Mouse Feet
    Skates for Logitech" under "Toothbrushes", "Gaming Mice"): it stays the accessory where its noun names
    accessories in the catalog (`TypeVocabulary.accessories`), "replacement" stands between them or the title goes
    on with what it fits (`fits_next`), unless `LISTED_GAP` words or more part them.
    A later run close after the category's noun is otherwise a spec, a motif or a pack ("Laptop FHD Display" under
    "Laptops", "Ornament Santas Bumper Car" under "Hanging Ornaments", "Jute Twine Large Ball"): the category's run
    names the product. A run that holds the category's whole
    name among more search terms names it too ("... Euro Square Throw Pillow Cover Cushion Case 26x26 Inches One
    Sided Print" under "Throw Pillow Covers" is a pillow cover, not a print), unless the head says its last noun
    twice: that noun is the product, the category what it fits ("Mechanical Keyboard Keycap Transparent Keycap ...
    Mountain Keycap").
    """
    runs = segment_runs(segment, vocabulary)
    last_start = runs[-1][2] if runs else 0
    size = len(cat_tokens)
    # a noun the head says twice is the product ("Mechanical Keyboard Keycap Transparent Keycap ... Mountain Keycap")
    last_noun_token = word_token(runs[-1][0].split()[-1]) if runs else ""
    last_noun = lemmas(last_noun_token) if runs else set()
    repeated = any(lemmas(word_token(w)) & last_noun for run, *_ in runs[:-1] for w in run.split())
    for run, phrase, first, end in reversed(runs[:-1]):
        words = run.split()
        run_tokens = [word_token(w) for w in words]
        between = {word_token(w) for w in WORD.findall(segment)[end:last_start + 1]}
        accessory = fits_next or "replacement" in between or last_noun_token in vocabulary.accessories
        if run_tokens[-1:] == list(cat_tokens[-1:]) and (last_start - end >= LISTED_GAP or not accessory):
            return run, phrase
        # the category's whole name inside a longer run of search terms: "... Throw Pillow Cover Cushion Case 26x26
        # Inches One Sided Print" under "Throw Pillow Covers" is a pillow cover
        stated = [i + size for i in range(len(run_tokens) - size + 1) if tuple(run_tokens[i:i + size]) == cat_tokens]
        if size > 1 and stated and not repeated and last_start - (first + stated[-1]) >= LISTED_GAP:
            named = " ".join(words[stated[-1] - size:stated[-1]])
            return named, named
    return None


def _names_category(run: str, segment: str, category: str | None, cat_tokens: tuple[str, ...]) -> bool:
    """Whether the category ends in the run's own noun and the segment states it.

    "Wireless Headphones" for "... Wireless Bluetooth Headphones", never "Toothbrushes" for "Toothbrush Cover".
    """
    run_tokens = tokens(run)
    return bool(category and cat_tokens and run_tokens and cat_tokens[-1] == run_tokens[-1]
                and keywords(category) <= keywords(segment))


def _confirmed(run: str, phrase: str, segment: str, category: str | None, cat_tokens: tuple[str, ...],
               categories: Sequence[str] = (), vocabulary: TypeVocabulary | None = None,
               not_entities: frozenset[str] = frozenset()) -> str:
    """The head's phrase, or the category's wording of it when the category names the same thing as the run.

    The category's wording keeps the run's words before it that say which kind of it the product is
    (`_with_kind`): "Candle Holders", not "Holders" of "Candlestick Holders".
    """
    phrase_tokens = tokens(run)
    if _names_category(run, segment, category, cat_tokens):
        return _with_kind(run, segment, category, categories, vocabulary,  # type: ignore[arg-type]
                          not_entities)
    # A run that says a noun twice is a list of search terms ("... Accent Pillow Throw Pillow Cover Pillow Cushion"):
    # the category is kept when the run states it and does not end in the repeated word ("Toothbrush Cases
    # Toothbrushes Holder" is no toothbrush).
    lemma_runs = [frozenset(lemmas(t)) for t in phrase_tokens]
    repeated = {lem for i, a in enumerate(lemma_runs) for b in lemma_runs[i + 1:] for lem in a & b}
    if (category and cat_tokens and repeated and keywords(category) <= keywords(run)
            and not lemmas(cat_tokens[-1]) & repeated):
        # with the run's words before the category's that name a kind of it, as where the run ends in it
        # ("Flower Nail Stickers Nail Decorations Decals" under "Stickers & Decals": "Nail Stickers")
        words = run.split()
        ends = [i + len(cat_tokens) for i in range(len(words) - len(cat_tokens) + 1)
                if tuple(map(word_token, words[i:i + len(cat_tokens)])) == cat_tokens]
        if ends and vocabulary is not None:
            return _with_kind(" ".join(words[:ends[-1]]), segment, category, categories, vocabulary, not_entities)
        return category
    return _path_compound(phrase, segment, categories)


def _path_compound(phrase: str, segment: str, categories: Sequence[str]) -> str:
    """The phrase with the title word just before it where that word and the phrase's first make a pair of the path.

    A modifier opening the phrase may be the second word of a compound a category of the path opens with: "MIO
    Quest Heart Rate Watch" under "Heart Rate Monitors" is a "Heart Rate Watch", no "Rate Watch"; "Eau de Parfum
    Spray" under "Eau de Parfum" stays as it is (the pair does not open the name). Up to `MAX_TYPE_WORDS` words.
    """
    words = phrase.split()
    if not words or len(words) >= MAX_TYPE_WORDS:
        return phrase
    seg_words = WORD.findall(segment)
    first = word_token(words[0])
    # not the department's: "Cell Phones & Accessories" is said of every phone holder under it, and an entity rubric
    # on "Cell Phone Holder" would fail those whose titles say "Phone Holder"
    pairs = {tuple(t[:2]) for c in categories[1:] if len(t := tokens(c)) > 1}
    for i in range(1, len(seg_words)):
        if seg_words[i:i + len(words)] == words and (word_token(seg_words[i - 1]), first) in pairs \
                and _adjacent(seg_words[i - 1], seg_words[i], segment):
            return f"{seg_words[i - 1]} {phrase}"
    return phrase


def _with_kind(run: str, segment: str, category: str, categories: Sequence[str], vocabulary: TypeVocabulary | None,
               not_entities: frozenset[str]) -> str:
    """The category's wording of the run, after the run's words just before it that say which kind it names.

    The category that names the run is often the ending of a longer name ("Holders" of "Candlestick Holders",
    "Sets" of "Bathroom Accessory Sets"): alone, a generic noun that leaves the shopper to say what the product
    is. A title word just before that ending stays with it (up to `MAX_TYPE_WORDS` words) when the catalog says it
    names a kind of the word after it: the pair ends a leaf category name of the catalog (`TypeVocabulary.compounds`:
    "Electric Toothbrush" of "Electric Toothbrushes"), or the product's category path holds the word or a closed
    compound of it with the next ("Wedding Candle Holders" under "Candles & Holders", "Candleholders" -> "Candle
    Holders"; "Bath Rugs Sets" under "Bath" -> "Bath Rugs Sets"; "Phone Case" under "Cell Phones & Accessories").
    Never a word naming whom the product is for (`not_entities`: "Men's Shaver"), the noun after it again
    ("Stickers Stickers"), nor a word a number or mark parts from it in the title ("Christopher Knight Home 313893
    Pouf"); a category that is no ending of the run ("Wireless Headphones" of "Wireless Bluetooth Headphones") is
    kept as it is.
    """
    words, cat_words = run.split(), category.split()
    if (vocabulary is None or len(words) <= len(cat_words)
            or tuple(map(word_token, words[-len(cat_words):])) != tuple(map(word_token, cat_words))):
        return category
    # the segment's words up to the category's first word, where the run ends last
    seg_words, run_tokens = WORD.findall(segment), tuple(map(word_token, words))
    ends = [i + len(run_tokens) for i in range(len(seg_words) - len(run_tokens) + 1)
            if tuple(map(word_token, seg_words[i:i + len(run_tokens)])) == run_tokens]
    if not ends:
        return category
    before = seg_words[:ends[-1] - len(cat_words)]
    path = {t for c in categories for t in tokens(c)}
    # the department names no kind: "Phone" of "Cell Phones & Accessories" is said of every case under it, and an
    # entity rubric on "Phone Cases" fails the iPhone cases whose titles never say "phone"
    below_department = {t for c in categories[1:] for t in tokens(c)}
    # nouns a category of the path names beside the type's own ("Adapters" of "Chargers & Adapters"): the title
    # lists them as alternatives ("AC Adapter Charger"), they are no kind of it
    noun = lemmas(word_token(cat_words[-1]))
    siblings = {lem for c in categories if any(lemmas(e) & noun for e, _ in category_evidence(c))
                for e, _ in category_evidence(c) for lem in lemmas(e)} - noun
    kept: list[str] = []
    after, after_word = word_token(cat_words[0]), seg_words[len(before)]
    for i in range(len(before) - 1, -1, -1):
        word, t = before[i], word_token(before[i])
        if (len(kept) + len(cat_words) >= MAX_TYPE_WORDS or t in STOPWORDS or lemmas(t) & lemmas(after)
                or (t,) in _entity_tokens(not_entities) or not _adjacent(word, after_word, segment)):
            break
        named = f"{t} {after}" in vocabulary.compounds or any(p.startswith(t) and p[len(t):] == after for p in path)
        if kept:  # a longer kind only as a phrase of the path: "Hearing Aid Batteries", not "Furniture Dining Benches"
            named = named or any(pair == (t, after) for c in categories for pair in zip(tokens(c), tokens(c)[1:]))
        elif not named:
            named = bool(lemmas(t) & below_department) and not lemmas(t) & siblings
            # or a type noun naming, with the word before it, a kind the catalog names whose first word the path
            # holds: "Bath Rugs Sets" under "Bath" ("Bath Rugs" a leaf category of the catalog)
            previous = word_token(before[i - 1]) if i else ""
            named = named or (t in vocabulary.nouns and f"{previous} {t}" in vocabulary.compounds
                              and bool(lemmas(previous) & path) and _adjacent(before[i - 1], word, segment))
        if not named:
            break
        kept.insert(0, word)
        after, after_word = t, word
    return " ".join([*kept, category])


def _adjacent(word: str, after: str, segment: str) -> bool:
    """Whether the segment says `word` right before `after`, no number or mark between ("Home 313893 Pouf": no)."""
    return re.search(rf"(?<![\w'-]){re.escape(word)}\s+{re.escape(after)}", segment, re.IGNORECASE) is not None


@lru_cache(maxsize=16)
def _entity_tokens(not_entities: frozenset[str]) -> frozenset[tuple[str, ...]]:
    return frozenset(tokens(n) for n in not_entities)


def without_store(title: str, store: str | None) -> str | None:
    """The title after the store's name it opens with, or None when it does not open with it.

    Case and spacing aside ("granola gear" opens "Granola Gear - Eco Friendly Phone Case"); a store of fewer
    than three characters, a title that is the store's name alone, and a rest that opens with a cut of the head
    with a word ("Hermitshell for Logitech ...": what follows names a device) give None; a mark opening the rest
    is dropped ("Granola Gear - Eco Friendly Phone Case").

    >>> without_store("Flash Furniture Fairway Sit to Stand Home Office Desk - Black", "Flash Furniture")
    'Fairway Sit to Stand Home Office Desk - Black'
    >>> without_store("Hermitshell for Logitech Wireless Mouse M320 Case", "Hermitshell") is None
    True
    """
    name = " ".join((store or "").split())
    if len(name) < 3:
        return None
    opening = re.match(r"\s*" + r"\s+".join(map(re.escape, name.split())) + r"(?![A-Za-z0-9])", title or "",
                       re.IGNORECASE)
    if opening is None:
        return None
    rest = title[opening.end():].strip()
    cut = HEAD_END.match(" " + rest)
    if cut and any(c.isalpha() for c in cut.group()):
        return None
    rest = rest[max(cut.end() - 1, 0):] if cut else rest  # "Granola Gear - Eco Friendly Phone Case"
    return rest if WORD.search(rest) else None


def names_store(kind: str | None, store: str | None) -> bool:
    """Whether every word of the type is a word of the store's name ("Hot Wheels" of the store Hot Wheels)."""
    kind_tokens = set(tokens(kind or ""))
    return bool(kind_tokens) and kind_tokens <= set(tokens(store or ""))


def names_leaf_category(kind: str | None, categories: Sequence[str]) -> bool:
    """Whether the type ends in a noun its leaf category ends a name in ("Posters" under "Posters & Prints")."""
    kind_tokens = tokens(kind or "")
    ends = [end for end, _ in category_evidence(categories[-1])] if categories else []
    return bool(kind_tokens) and any(lemmas(kind_tokens[-1]) & lemmas(end) for end in ends)


def variants(details: Any) -> frozenset[tuple[str, ...]]:
    """The product's own colour and material values, as tokens.

    Details as a snapshot row's [{"key", "value"}] or as a raw record's {key: value}.
    """
    details = details or ()
    pairs = details.items() if isinstance(details, dict) else ((d.get("key"), d.get("value")) for d in details
                                                                if isinstance(d, dict))
    return frozenset(tokens(v) for k, v in pairs if k in VARIANT_FIELDS and isinstance(v, str) and v)


def product_type(product: dict[str, Any], vocabulary: TypeVocabulary,
                 not_entities: frozenset[str] = frozenset()) -> str | None:
    """What the product is, as a phrase its title states (see the module docstring), or None.

    Args:
        product: a products.parquet row (title, categories, details) or a raw record.
        vocabulary: the catalog's type vocabulary (`ecombench.catalog.type_vocabulary`).
        not_entities: category names that say who a product is for ("Women"), from the field table.

    Example: "Studio 2/3 Replacement Earpads, JARMOR Memory Foam ... for Beats Studio" (category
    "Wireless Headphones") -> "Earpads".

    A title that opens with the product's store names the type after it (`without_store`): "Flash Furniture
    Fairway Height Adjustable ... Home Office Desk" (store "Flash Furniture") is a desk, "RSH DECOR Set of 2 -
    ... Seat Chair Cushions" cushions; unless the whole title's type is the leaf category's ("Yankee Candle
    Fall/Autumn Votives" under "Votive Candles" stays "Votive Candles") or the rest names no type ("Movie Posters
    27 x 40 Coffy"); then a type that only says the store's name is none ("Hot Wheels 1998 First Editions: Solar
    Eagle III ... Collector Car").
    """
    own = variants(product.get("details"))
    title, categories = product.get("title") or "", tuple(product.get("categories") or ())

    def pick(text: str) -> str | None:
        return next(kind for kind, variant in type_candidates(text, categories, vocabulary, not_entities)
                    if not variant or variant not in own)

    kind = pick(title)
    rest = without_store(title, product.get("store"))
    if rest is None or names_leaf_category(kind, categories):
        return kind
    return pick(rest) or (None if names_store(kind, product.get("store")) else kind)


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


def type_head(kind: str | None) -> str | None:
    """The noun a type phrase ends in, as a vocabulary token ("Watch Bands" -> "band"): the type's kind."""
    t = tokens(kind or "")
    return t[-1] if t else None


def product_types(products: pl.DataFrame, vocabulary: TypeVocabulary,
                  not_entities: Sequence[str] = ()) -> pl.DataFrame:
    """Every product's type: parent_asin, product_type (None: no type), type_head (`type_head`).

    One `type_candidates` call per distinct (title, category path), and per distinct (title after the store's
    name, path) where the title opens with it; the product's own colours and materials are matched against the
    candidates in polars, so no Python runs per product. Gives what `product_type` gives for each row.

    Args:
        products: products.parquet rows (parent_asin, title, categories, details; store when there is one).
        vocabulary: the catalog's type vocabulary.
        not_entities: see `product_type`.
    """
    excluded = frozenset(not_entities)
    categories = pl.col("categories").cast(pl.List(pl.String)).fill_null([])
    store = pl.col("store") if "store" in products.columns else pl.lit(None, dtype=pl.String)
    keyed = products.select("parent_asin", pl.col("title").fill_null(""), categories,
                            categories.list.join("\x1f").alias("_path"), "details",
                            store.alias("_store")).with_row_index("_row")
    own = (keyed.select("parent_asin", "details").explode("details").drop_nulls("details").unnest("details")
           .filter(pl.col("key").is_in(VARIANT_FIELDS)).select("parent_asin", "value").drop_nulls().unique())
    distinct = own.get_column("value").unique().to_list()
    normal = pl.DataFrame({"value": distinct, "variant": [" ".join(tokens(v)) for v in distinct]},
                          schema={"value": pl.String, "variant": pl.String})
    own = own.join(normal, on="value").select("parent_asin", "variant").filter(pl.col("variant") != "").unique()
    typed = _resolved(keyed, own, vocabulary, excluded)
    openings = keyed.select("title", "_store").unique(maintain_order=True)
    rests = openings.with_columns(pl.Series("_rest", [without_store(t, s) for t, s in openings.iter_rows()],
                                            dtype=pl.String))
    after_store = (keyed.join(rests, on=["title", "_store"], how="left", nulls_equal=True)
                   .filter(pl.col("_rest").is_not_null()).with_columns(pl.col("_rest").alias("title")).drop("_rest"))
    after = _resolved(after_store, own, vocabulary, excluded).select("_row", pl.col("product_type").alias("_rest_type"))
    rows = (typed.join(after.with_columns(pl.lit(True).alias("_opens")), on="_row", how="left")
            .join(keyed.select("_row", pl.col("categories").list.last().alias("_leaf"), "_store"), on="_row"))
    pairs = rows.filter(pl.col("_opens")).select("product_type", "_leaf", "_store").unique()
    pairs = pairs.with_columns(
        pl.Series("_named", [names_leaf_category(k, [c] if c else []) for k, c, _ in pairs.iter_rows()],
                  dtype=pl.Boolean),
        pl.Series("_store_type", [names_store(k, st) for k, _, st in pairs.iter_rows()], dtype=pl.Boolean))
    rows = rows.join(pairs, on=["product_type", "_leaf", "_store"], how="left", nulls_equal=True)
    typed = rows.select("_row", "parent_asin", pl.when(pl.col("_opens").is_null() | pl.col("_named"))
                        .then(pl.col("product_type"))
                        .when(pl.col("_rest_type").is_not_null()).then(pl.col("_rest_type"))
                        .when(pl.col("_store_type")).then(pl.lit(None, dtype=pl.String))
                        .otherwise(pl.col("product_type")).alias("product_type"))
    heads_of = typed.get_column("product_type").unique().to_list()
    head_frame = pl.DataFrame({"product_type": heads_of, "type_head": [type_head(k) for k in heads_of]},
                              schema={"product_type": pl.String, "type_head": pl.String})
    return typed.join(head_frame, on="product_type", how="left", nulls_equal=True).sort("_row").select(
        "parent_asin", "product_type", "type_head")


def _resolved(keyed: pl.DataFrame, own: pl.DataFrame, vocabulary: TypeVocabulary,
              excluded: frozenset[str]) -> pl.DataFrame:
    """_row, parent_asin, product_type: each row's first candidate that its own variants do not rule out.

    `keyed` has _row, parent_asin, title, categories, _path; `own` parent_asin, variant (tokens joined by spaces).
    """
    pairs = keyed.select("title", "_path", "categories").unique(["title", "_path"], maintain_order=True)
    found = [type_candidates(t, tuple(c), vocabulary, excluded)
             for t, c in zip(pairs.get_column("title").to_list(), pairs.get_column("categories").to_list())]
    candidates = (pairs.with_columns(pl.Series("candidates", [[{"rank": i, "product_type": kind,
                                                                "variant": " ".join(variant)}
                                                               for i, (kind, variant) in enumerate(c)] for c in found],
                                               dtype=pl.List(pl.Struct({"rank": pl.Int32, "product_type": pl.String,
                                                                        "variant": pl.String}))))
                  .explode("candidates").unnest("candidates").drop("categories"))
    return (keyed.select("_row", "parent_asin", "title", "_path")
            .join(candidates, on=["title", "_path"], how="left")
            .join(own.with_columns(pl.lit(True).alias("_own")), on=["parent_asin", "variant"], how="left")
            .filter(pl.col("_own").is_null() | (pl.col("variant") == ""))
            .sort("_row", "rank").group_by("_row", maintain_order=True)
            .agg(pl.col("parent_asin").first(), pl.col("product_type").first()))
