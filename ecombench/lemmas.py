"""Words and their lemmas, for reading a shopper's question the way a person hears it.

The clarification matcher (validation/slots.py) compares a question with the field table's
vocabulary word by word, each word standing for every lemma it can have: "holds", "holding" and
"held" all read as "hold", "children" as "child", "bigger" as "big", "mounting" as both "mounting"
and "mount". Lemmas come from lemminflect's dictionary (English, data shipped in the package, no
download), plus ecombench.text's singular rule for words the dictionary does not know.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ecombench.text import IRREGULAR, STOPWORDS, _singular, contains_phrase, count_phrase, format_number, tokens

_WORD = re.compile(r"\d+(?:\.\d+)?|[a-z]+")
_APOSTROPHE_S = re.compile(r"(\w)['’]s\b")


def words(text: str) -> tuple[str, ...]:
    """Lower-cased words and numbers of `text`, split at every other character.

    "What's the kids' age?" -> ("what", "the", "kids", "age"): a possessive or contracted 's is
    dropped, hyphenated words split ("left-handed" -> "left", "handed").
    """
    return tuple(_WORD.findall(_APOSTROPHE_S.sub(r"\1", text.lower())))


def _plurals() -> dict[str, tuple[str, ...]]:

    out: dict[str, tuple[str, ...]] = {}
    for plural, single in IRREGULAR.items():
        if plural != single:
            out[single] = out.get(single, ()) + (plural,)
    return out


_PLURALS = _plurals()


@lru_cache(maxsize=50_000)
def lemmas(word: str) -> frozenset[str]:
    """Every lemma a lower-cased word may have (the word itself included).

    >>> sorted(lemmas("holding"))
    ['hold', 'holding']
    """
    # deferred: lemminflect's tables cost ~0.1 s to load
    from lemminflect import getAllLemmas, getAllLemmasOOV  # imported here: loading its tables costs ~0.1 s

    out = {word, _singular(word)}
    found = dict(getAllLemmas(word))
    for plural in _PLURALS.get(word, ()):  # tokens() read "leaves" as "leaf": the verb "leave" stays a reading
        for forms in getAllLemmas(plural).values():
            out.update(f.lower() for f in forms)
    if not found and word.isalpha() and len(word) > 3:
        found = {k: v for k, v in getAllLemmasOOV(word, upos="VERB").items() if word.endswith(("ed", "ing"))}
    for forms in found.values():
        out.update(f.lower() for f in forms)
    return frozenset(out)


@lru_cache(maxsize=8192)
def parts_of_speech(word: str) -> frozenset[str]:
    """The universal parts of speech lemminflect's dictionary knows a lower-cased word as ({} when unknown).

    "home" -> {"ADJ", "ADV", "NOUN", "VERB"}, "car" -> {"NOUN"}, "outdoor" -> {"ADJ"}.
    """
    from lemminflect import getAllLemmas  # deferred, as in lemmas()

    return frozenset(getAllLemmas(word))


@lru_cache(maxsize=8192)
def adjective_only(word: str) -> bool:
    """Whether a lower-cased word reads only as an adjective in lemminflect's dictionary.

    "cheap" and "wooden" do; "solid" (also a noun) and "fabric" do not; a word the dictionary does not know does not.
    """
    from lemminflect import getAllLemmas  # deferred, as in lemmas()

    return set(getAllLemmas(word)) == {"ADJ"}


@lru_cache(maxsize=8192)
def adjective_of(word: str) -> frozenset[str]:
    """The adjective a quality noun is made from, when lemminflect knows it as an adjective.

    "portability" -> {"portable"}, "flexibility" -> {"flexible"}, "softness" -> {"soft"}, "coziness" -> {"cozy"};
    "business" -> {} ("busi" is no word). For reading questions ("Is portability important?"), not for leakage.
    """
    from lemminflect import getAllLemmas  # deferred, as in lemmas()

    stems = []
    for suffix, ending in (("ability", "able"), ("ibility", "ible"), ("iness", "y"), ("ness", "")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            stems.append(word[: -len(suffix)] + ending)
    return frozenset(w for w in stems if "ADJ" in getAllLemmas(w))


def lemma_key(phrase: str) -> tuple[frozenset[str], ...]:
    """The phrase as one lemma set per word, the form vocabulary entries are compared in."""
    return tuple(lemmas(w) for w in words(phrase))



def same_phrase(a: tuple[frozenset[str], ...], b: tuple[frozenset[str], ...]) -> bool:
    """True when two lemma keys read alike: as many words, each pair sharing a lemma ("made of" = "make of")."""
    return len(a) == len(b) and all(x & y for x, y in zip(a, b))


# --------------------------------------------------------------------------------------------------
# Whether a text states a value: shared by the query check (validation/semantic.py) and the leakage
# checks (validation/leakage.py), so a paraphrase that states a value also leaks it.

# Extra tokens a value's content words may be spread over: "mounted on a wall" states "Wall Mount".
SPREAD = 3


def _content(phrase: str) -> list[frozenset[str]]:

    return [lemmas(t) for t in tokens(phrase) if t not in STOPWORDS]


def stated_count(text: str, phrase: str, spread_over_phrase: bool = False) -> int:
    """How many times `text` states `phrase` by its content words.

    Each word (as a lemma, in any order) must occur within len(words) + SPREAD tokens of text
    ("mounted on a wall" states "Wall Mount"; "it runs a size small" does not state "true to size",
    it lacks "true").

    A phrase holding a number is stated only contiguously (ecombench.text.count_phrase): "4.5 stars"
    must not be assembled from a 4.5 and a star far apart. A phrase of stopwords only, likewise.

    >>> stated_count("I'd like it to be mounted on a wall.", "Wall Mount")
    1
    >>> stated_count("it runs a size small", "true to size")
    0
    """
    want = _content(phrase)
    if not want or any(t[0].isdigit() for t in tokens(phrase)):
        return count_phrase(text, phrase)
    have = [lemmas(t) for t in tokens(text)]
    # spread_over_phrase: the window is the phrase's own length (its stopwords too) plus SPREAD, for
    # clause-long phrases such as cues, whose content words alone undercount their span.
    width = (len(tokens(phrase)) if spread_over_phrase else len(want)) + SPREAD
    count, i = 0, 0
    while i < len(have):
        if have[i] & want[0] or any(have[i] & w for w in want[1:]):
            window = have[i:i + width]
            if all(any(h & w for h in window) for w in want):
                count += 1
                # the next statement starts after this one's last word
                i += max(min(j for j, h in enumerate(window) if h & w) for w in want) + 1
                continue
        i += 1
    return count


_RELATIVE = ("that", "which", "whose", "who", "where")


def states_cue(text: str, cue: str) -> bool:
    """True when `text` states an implicit requirement's cue clause in its own words.

    The cue's leading relative word goes ("that keys in the same pocket won't mark" is stated by "keys in
    the same pocket won't mark"); its other content words must occur as lemmas within the cue's length
    plus SPREAD tokens ("guard only the rim and corners and leave the back bare" states "that guards only
    the rim and corners and leaves the back bare"). A cue the text holds word for word is stated.

    >>> cue = "that matches the sky-coloured team shirts we wear"
    >>> states_cue("I want cases that match the sky-coloured team shirts we wear", cue)
    True
    >>> states_cue("I want cases in sky blue", cue)
    False
    """
    if not cue:
        return False
    if contains_phrase(text, cue):
        return True
    first, _, rest = cue.strip().partition(" ")
    core = rest if first.lower() in _RELATIVE and rest else cue
    return bool(tokens(core)) and stated_count(text, core, spread_over_phrase=True) > 0


def states_phrase(text: str, phrase: str) -> bool:
    """True when `text` holds `phrase` as whole tokens or states its content words (`stated_count`)."""
    return contains_phrase(text, phrase) or stated_count(text, phrase) > 0


# How a text bounds a number: (direction, inclusive) per phrase before or after the number with its unit.
_BEFORE = {("at", "least"): ("min", True), ("minimum",): ("min", True), ("no", "fewer", "than"): ("min", True),
           ("no", "less", "than"): ("min", True), ("more", "than"): ("min", False), ("over",): ("min", False),
           ("above",): ("min", False), ("higher", "than"): ("min", False),
           ("no", "more", "than"): ("max", True), ("at", "most"): ("max", True), ("up", "to"): ("max", True),
           ("maximum",): ("max", True), ("max",): ("max", True), ("within",): ("max", True),
           ("less", "than"): ("max", False), ("under",): ("max", False), ("below",): ("max", False)}
_AFTER = {("or", "more"): ("min", True), ("or", "higher"): ("min", True), ("or", "better"): ("min", True),
          ("or", "above"): ("min", True), ("and", "up"): ("min", True), ("or", "over"): ("min", True),
          ("or", "less"): ("max", True), ("or", "under"): ("max", True), ("or", "lower"): ("max", True),
          ("or", "cheaper"): ("max", True), ("minimum",): ("min", True), ("at", "minimum"): ("min", True)}
# A count of ratings is said as ratings or as reviews.
BOUND_UNITS = {"price": ("dollar",), "average_rating": ("star",), "rating_number": ("rating", "review")}


def states_bound(text: str, field: str, bound: dict) -> bool:
    """True when `text` states every end of a numeric bound with its unit and direction, however worded.

    "at least 4 stars", "4 stars or higher", "$25 or under", "up to $25", "plenty of reviews (at least
    100)", "100 or more ratings". The direction must be the bound's and so must its inclusiveness:
    "under $25" states max 25 exclusive, not "no more than $25".

    Args:
        text: the text.
        field: price, average_rating or rating_number.
        bound: {"min"|"max": number, "min_inclusive"|"max_inclusive": bool}.
    """
    t = list(tokens(text))
    units = BOUND_UNITS.get(field, ())
    for end in ("min", "max"):
        if bound.get(end) is None:
            continue
        want = (end, bool(bound.get(f"{end}_inclusive", True)))
        number = tokens(format_number(float(bound[end])))[0]
        if not any(_bounded_at(t, i, units, want) for i, tok in enumerate(t) if tok == number):
            return False
    return True


def _bounded_at(t: list[str], i: int, units: tuple[str, ...], want: tuple[str, bool]) -> bool:
    """Whether the number at t[i] carries its unit and the wanted direction ("at least 4 stars")."""
    # the longest phrase ending just before the number decides: "no more than" ends in "more than"
    before = max((p for p in _BEFORE if tuple(t[max(0, i - len(p)):i]) == p), key=len, default=None)
    unit_after = next((j for j in range(i + 1, min(i + 4, len(t))) if t[j] in units), None)
    if unit_after is not None:
        after = [d for p, d in _AFTER.items()
                 if tuple(t[unit_after + 1:unit_after + 1 + len(p)]) == p or tuple(t[i + 1:i + 1 + len(p)]) == p]
        return want in after or (before is not None and _BEFORE[before] == want)
    # "plenty of reviews (at least 100)": the unit just before the direction phrase
    return (before is not None and _BEFORE[before] == want and i - len(before) - 1 >= 0
            and t[i - len(before) - 1] in units)
