"""Product types as a shopper names them, and the product nouns a query may name.

Stage 2 finds what the product is (ecombench.catalog.product_type, from the title's head); this
module only says that type in natural form ("Mice" -> "a mouse", "Wall Clocks" -> "a wall clock",
"Earbuds" -> "earbuds") and tells, from the same type vocabulary (ecombench.catalog.type_vocabulary, learned
from the catalog), which product a text names first, so stage 7 can reject a query naming another type than
its entity rubric's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from lemminflect import getLemma

from ecombench.catalog.type_vocabulary import TypeVocabulary
from ecombench.lemmas import lemmas
from ecombench.stages.replies import speech_case
from ecombench.text import STOPWORDS, fix_articles, tokens

# Nouns said in the plural even of one item: "wireless earbuds", never "a wireless earbud".
PLURAL_ONLY = frozenset("earbuds earpads headphones earphones glasses sunglasses scissors pants jeans shorts leggings "
                        "tweezers pliers binoculars goggles clippers pajamas overalls tights trousers".split())

@lru_cache(maxsize=4096)
def singular_noun(word: str) -> str:
    """The singular of a lower-case noun, by lemminflect's noun lemmas, else text's rule ("mice" -> "mouse")."""
    if word in PLURAL_ONLY:
        return word
    found = getLemma(word, upos="NOUN")
    return found[0].lower() if found else word


def natural_type(entity: str, premodifiers: Sequence[str] = ()) -> str:
    """How a query names a product type, with values said before its noun.

    Words are in speech case (ecombench.stages.replies.speech_case: "VGA", "iPhone" keep theirs), the last one
    singular unless the noun is said in the plural of one item ("earbuds"), and the article fits.

    Args:
        entity: the entity rubric's value ("Mice", "Watch Bands", "Earbuds").
        premodifiers: values said before the noun, already in speech case ("black", "wireless").

    >>> natural_type("Mice", ["wireless"]), natural_type("Wall Clocks"), natural_type("Earbuds")
    ('a wireless mouse', 'a wall clock', 'earbuds')
    >>> natural_type("VGA Cables"), natural_type("iPhone Cases")
    ('a VGA cable', 'an iPhone case')
    """
    words = speech_case(entity).split()
    if not words:
        return ""
    plural = words[-1].lower() in PLURAL_ONLY
    if not plural and words[-1].islower() and "'" not in words[-1]:  # "women's" has no singular
        words[-1] = singular_noun(words[-1])
    phrase = " ".join([*premodifiers, *words])
    return phrase if plural else fix_articles("a " + phrase)


def type_words(entity: str) -> frozenset[str]:
    """Every lemma of the entity's content words: what a query may call the product."""
    return frozenset(lem for t in tokens(entity) if t not in STOPWORDS for lem in lemmas(t))


def names_only_the_type(text: str, entity: str) -> bool:
    """True when every word of `text` is a word of the entity's type: the text says nothing but the product itself.

    A form factor "Case" of a case, or "Cases" of one, names only the product; "Wallet Case" or "Basic Case"
    say a kind of it. An exclusion of such a value contradicts the query it stands beside ("a case ... any
    form factor but case is fine", the sample build's task in the closing note).

    >>> names_only_the_type("Case", "Cases"), names_only_the_type("Basic Case", "Cases")
    (True, False)
    """
    words = tokens(text)
    own = type_words(entity)
    return bool(words) and all(lemmas(t) & own for t in words)


# Fields that say what form a product takes or what it is for: a value of one that names only the product type
# restates it ("a kitchen rug for the kitchen"). Material, colour, brand or compatible device do not: "Glass" of
# wine glasses is a real requirement (the catalog's wine glasses also come in plastic, acrylic, crystal), and a
# wrong product type ("Blush" of a headboard) would make the rule drop a real colour; an occasion or sport can name
# the type ("Christmas" of a Christmas decoration, "Running" of running shoes).
# A closure too: "a balloon clip with a clips closure" (a reviewer read it as saying nothing).
TYPE_LIKE_FIELDS = frozenset({"Form Factor", "Item Form", "Room Type", "Recommended Uses For Product", "Rug Form Type",
                              "Closure", "Wall Art Form", "Mounting Type", "Connectivity Technology", "Connector Type",
                              "Shape", "Theme", "Special Feature", "Occasion", "Sport Type"})


def restates_the_type(field: str, value: str, entity: str) -> bool:
    """True when a value of a form-or-use field (`TYPE_LIKE_FIELDS`) names only the product type.

    `field` is a detail key ("Form Factor") or rubric field ("details.Form Factor"). Stage 2 drops such an
    option (stages.features.extract_features) and an exclusion never takes one (validation.semantic.biting_exclusions).

    >>> restates_the_type("details.Form Factor", "Case", "Cases")
    True
    >>> restates_the_type("Material", "Glass", "Wine Glasses")
    False
    """
    return field.removeprefix("details.") in TYPE_LIKE_FIELDS and names_only_the_type(value, entity)


# Words that add nothing to a department's name: "Home Decor" of a wall decal under "Home & Kitchen" says "for the
# home" (three reviewed rubrics, "for home decor, mainly" of wall stickers and "a home decor present" of curtains).
DECOR_WORDS = frozenset({"decor", "decoration", "decorations", "decorative"})


def names_department(field: str, value: str, categories: Sequence[str] | None, store: str | None = None) -> bool:
    """True when a value of a form-or-use field (`TYPE_LIKE_FIELDS`) names only the product's department.

    Every content word of the value (but decor words, `DECOR_WORDS`) is a word of the first name of the path's
    first category, or of the Amazon store the product is sold in (its `main_category` less "Amazon": "Home" of
    "Amazon Home"): that first name says what all of the department is for ("Home" of "Home & Kitchen", "Office" of
    "Office Products"); the names after it are its sections ("Kitchen", "Garden" of "Patio, Lawn & Garden"), which a
    shopper does state ("a kitchen rug", "a garden flag"). A reviewer of the shared build read "for home" of pillow
    covers and wall stickers under "Home & Kitchen" as saying nothing (5 of its 22 meaningless rubrics), a later
    one "Home" and "Home Decor" of wall stickers under "Baby Products" and "Tools & Home Improvement" sold in
    "Amazon Home". `field` is a detail key or rubric field.

    >>> names_department("details.Recommended Uses For Product", "Home", ["Home & Kitchen", "Bedding"])
    True
    >>> names_department("details.Room Type", "Kitchen", ["Home & Kitchen", "Kitchen & Dining"])
    False
    >>> names_department("details.Recommended Uses For Product", "Home Decor", ["Tools & Home Improvement"],
    ...                  "Amazon Home")
    True
    """
    if field.removeprefix("details.") not in TYPE_LIKE_FIELDS or not (categories or store):
        return False
    names = [re.split(r"\s*(?:&|,| and )\s*", categories[0])[0]] if categories else []
    if store and store.startswith("Amazon "):
        names.append(store.removeprefix("Amazon "))
    department = {lem for name in names for t in tokens(name) for lem in lemmas(t)}
    words = [t for t in tokens(value) if t not in STOPWORDS and t not in DECOR_WORDS]
    return bool(words) and all(lemmas(t) & department for t in words)


def named_type(text: str, entity: str, vocabulary: TypeVocabulary, skip: frozenset[int] = frozenset()) -> str | None:
    """The product noun a text names first, if it is not the entity's.

    None when the text's first product noun phrase holds an entity word ("a phone case" for "Cases"),
    else that noun ("headphones" for "Audio Cables"). Product nouns are stage 2's (the catalog's type
    vocabulary), so the type a title gives and the type a query names are read by one vocabulary. Positions in
    `skip` (tokens of other requirements' values, e.g. a compatible device) are ignored.

    >>> words = TypeVocabulary(nouns=frozenset({"headphone", "case", "cable"}), modifiers=frozenset())
    >>> named_type("I need RCA headphones for my stereo", "Audio Cables", words)
    'headphone'
    >>> named_type("a phone case", "Cases", words)
    """
    own = type_words(entity)
    nouns = vocabulary.nouns
    toks = tokens(text)
    for i, tok in enumerate(toks):
        if i in skip:
            continue
        ls = lemmas(tok)
        if ls & own:
            return None
        if ls & nouns:
            run = i
            while run + 1 < len(toks) and run + 1 not in skip and lemmas(toks[run + 1]) & (nouns | own):
                run += 1
                if lemmas(toks[run]) & own:
                    return None  # "phone case": the run's head is the entity's
            return tok
    return None
