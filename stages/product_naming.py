"""Product types as a shopper names them, and the product nouns a query may name (issue #14).

A separate helper from how stage 2 finds the product type (stages/features.py, and the product-type
work of the `quality` branch): this one only says a type found there ("Mice", "Wall Clocks",
"Earbuds") in natural form ("a mouse", "a wall clock", "earbuds"), and lists the nouns that name a
product, so stage 7 can tell when a query names another type than its entity rubric's.
"""

from __future__ import annotations

from functools import lru_cache

from stages.lemmas import lemmas
from stages.text import STOPWORDS, fix_articles, tokens

# Nouns said in the plural even of one item: "wireless earbuds", never "a wireless earbud".
PLURAL_ONLY = frozenset("earbuds headphones earphones glasses sunglasses scissors pants jeans shorts leggings tweezers "
                        "pliers binoculars goggles clippers pajamas overalls tights trousers".split())

# Nouns that name what a product is (singular). Short and general on purpose: a query naming one of
# these where its entity rubric names another (headphones for an audio cable) has drifted.
PRODUCT_NOUNS = frozenset("""
adapter amplifier antenna bag band battery blanket bottle bowl box bracelet bracket brush cable camera candle
case chair charger clock controller cord cover cup curtain decal desk desktop dock drive earbud earphone earring
fan figure filter frame glove hat headphone headset holder hub keyboard knife lamp laptop light mat microphone
modem monitor mount mouse mug necklace notebook organizer pad pan pen pencil phone pillow plate poster printer
projector protector rack remote ring router rug scarf sheet shelf shirt shoe sign sneaker sock speaker stand
sticker strap table tablet television towel toy tripod tv wallet watch webcam wig
""".split())


def _speech_word(word: str) -> str:
    """Ordinary words in lower case; acronyms and codes ("USB", "4K") keep theirs."""
    if (len(word) > 1 and word.isupper()) or any(c.isdigit() for c in word):
        return word
    return word.lower()


@lru_cache(maxsize=4096)
def singular_noun(word: str) -> str:
    """The singular of a lower-case noun, by lemminflect's noun lemmas, else stages.text's rule ("mice" -> "mouse")."""
    from lemminflect import getLemma

    if word in PLURAL_ONLY:
        return word
    found = getLemma(word, upos="NOUN")
    return found[0].lower() if found else word


def natural_type(entity: str) -> str:
    """How a query names a product type: "a mouse" (Mice), "a wall clock" (Wall Clocks), "a VGA cable",
    "earbuds" (Earbuds, said in the plural), "an HDMI switch".

    >>> natural_type("Mice"), natural_type("Wall Clocks"), natural_type("Earbuds"), natural_type("VGA Cables")
    ('a mouse', 'a wall clock', 'earbuds', 'a VGA cable')
    """
    words = [_speech_word(w) for w in entity.split()]
    if not words:
        return ""
    last = words[-1]
    if last.lower() in PLURAL_ONLY:
        return " ".join(words)
    if last.islower() and "'" not in last:  # "women's" has no singular
        words[-1] = singular_noun(last)
    return fix_articles("a " + " ".join(words))


def type_words(entity: str) -> frozenset[str]:
    """Every lemma of the entity's content words: what a query may call the product."""
    return frozenset(lem for t in tokens(entity) if t not in STOPWORDS for lem in lemmas(t))


def named_type(text: str, entity: str, skip: frozenset[int] = frozenset()) -> str | None:
    """The product noun a text names first, if it is not the entity's: None when the text's first product
    noun phrase holds an entity word ("a phone case" for "Cases"), else that noun ("headphones" for "Audio
    Cables"). Positions in `skip` (tokens of other requirements' values, e.g. a compatible device) are ignored.

    >>> named_type("I need RCA headphones for my stereo", "Audio Cables"), named_type("a phone case", "Cases")
    ('headphone', None)
    """
    own = type_words(entity)
    toks = tokens(text)
    for i, tok in enumerate(toks):
        if i in skip:
            continue
        ls = lemmas(tok)
        if ls & own:
            return None
        if ls & PRODUCT_NOUNS:
            run = i
            while run + 1 < len(toks) and run + 1 not in skip and lemmas(toks[run + 1]) & (PRODUCT_NOUNS | own):
                run += 1
                if lemmas(toks[run]) & own:
                    return None  # "phone case": the run's head is the entity's
            return tok
    return None
