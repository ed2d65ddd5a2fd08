"""Words and their lemmas, for reading a shopper's question the way a person hears it.

The clarification matcher (validation/slots.py) compares a question with the field table's
vocabulary word by word, each word standing for every lemma it can have: "holds", "holding" and
"held" all read as "hold", "children" as "child", "bigger" as "big", "mounting" as both "mounting"
and "mount". Lemmas come from lemminflect's dictionary (English, data shipped in the package, no
download), plus stages.text's singular rule for words the dictionary does not know.
"""

from __future__ import annotations

import re
from functools import lru_cache

from stages.text import _singular

_WORD = re.compile(r"\d+(?:\.\d+)?|[a-z]+")
_APOSTROPHE_S = re.compile(r"(\w)['’]s\b")


def words(text: str) -> tuple[str, ...]:
    """Lower-cased words and numbers of `text`, split at every other character.

    "What's the kids' age?" -> ("what", "the", "kids", "age"): a possessive or contracted 's is
    dropped, hyphenated words split ("left-handed" -> "left", "handed").
    """
    return tuple(_WORD.findall(_APOSTROPHE_S.sub(r"\1", text.lower())))


@lru_cache(maxsize=50_000)
def lemmas(word: str) -> frozenset[str]:
    """Every lemma a lower-cased word may have (the word itself included).

    >>> sorted(lemmas("holding"))
    ['hold', 'holding']
    """
    from lemminflect import getAllLemmas, getAllLemmasOOV  # imported here: loading its tables costs ~0.1 s

    out = {word, _singular(word)}
    found = getAllLemmas(word)
    if not found and word.isalpha() and len(word) > 3:
        found = {k: v for k, v in getAllLemmasOOV(word, upos="VERB").items() if word.endswith(("ed", "ing"))}
    for forms in found.values():
        out.update(f.lower() for f in forms)
    return frozenset(out)


def lemma_key(phrase: str) -> tuple[frozenset[str], ...]:
    """The phrase as one lemma set per word, the form vocabulary entries are compared in."""
    return tuple(lemmas(w) for w in words(phrase))



def same_phrase(a: tuple[frozenset[str], ...], b: tuple[frozenset[str], ...]) -> bool:
    """True when two lemma keys read alike: as many words, each pair sharing a lemma ("made of" = "make of")."""
    return len(a) == len(b) and all(x & y for x, y in zip(a, b))
