"""Review opinions for review_driven tasks, drawn from the target's own real reviews (offline).

An opinion is a short clause (3-8 words) of a positive review (rating >= 4, at least
`MIN_TEXT_CHARS` characters) that carries an opinion word ("fits perfectly in my ear", "battery
lasts all day"). Helpful reviews go first; the two opinions come from different reviews, do not
repeat each other, and keep the ids of every target review that states them (the reference
kept neither the review id nor checked duplicates, §15.17).
"""

from __future__ import annotations

import html
import random
import re
from typing import Any

from ecombench.catalog.reviews import review_text
from ecombench.text import contains_phrase, keywords

MIN_RATING = 4.0
MIN_TEXT_CHARS = 30
MIN_WORDS, MAX_WORDS = 3, 8
OPINION_WORDS = frozenset(
    "comfortable comfy sturdy durable easy easily works work great perfect perfectly fits fit quality recommend "
    "sound clear quiet soft bright accurate reliable lightweight light solid excellent smooth responsive strong "
    "long lasts lasting fast quick well nice love loves good better best cheap value worth simple secure snug "
    "loud crisp clean gentle".split())
_CLAUSE_SPLIT = re.compile(r"[.!?;,:()\n]+|\s+-\s+|\bbut\b|\band then\b", re.IGNORECASE)
# Review bodies carry HTML ("<br />", "&amp;"): a tag ends a clause and never reaches a phrase.
_MARKUP = re.compile(r"<[^>]+>")
_NEGATION = re.compile(r"\b(?:not|no|nor|neither|none|never|nothing|hardly|barely|without)\b|n['’]t\b",
                       re.IGNORECASE)
_LEADING = re.compile(r"^(?:and|also|it's|its|it is|this is|they are|they're|i|the)\s+", re.IGNORECASE)


def opinion_clauses(text: str) -> list[str]:
    """Candidate opinion phrases of one review text, in text order."""
    out = []
    text = html.unescape(_MARKUP.sub("\n", text))
    for clause in _CLAUSE_SPLIT.split(text):
        clause = " ".join(clause.split()).strip("*•>\"'“” ")
        while _LEADING.match(clause):
            clause = _LEADING.sub("", clause, count=1)
        words = clause.split()
        if not MIN_WORDS <= len(words) <= MAX_WORDS:
            continue
        if not (keywords(clause) & OPINION_WORDS) or any(ch.isdigit() for ch in clause) or "http" in clause:
            continue
        if _NEGATION.search(clause):  # "battery life isn't all that great" holds "great" but says the opposite
            continue
        out.append(clause)
    return out


# What a clear, complete opinion cannot open with: a word that hangs it on the sentence it was cut from
# ("which is a great experience", "so good for walking", "just a good") or a person as its subject ("He love
# it", "My toddler loves his new shoes": about the buyer's family, not the product).
_DANGLING_START = frozenset(
    "which that who whom whose so just too even as because since when if though although while then "
    "or plus especially than he she they we you him her them his their our your my".split())
# ... nor end with: an article, a preposition, a conjunction or a verb still waiting for its object.
_DANGLING_END = frozenset(
    "a an the and or but so to of for with in on at by from my your his her their our its is are was were be "
    "very really too just as than that which this these".split())
_ARTICLES = frozenset({"a", "an", "the"})


def clear_opinion(phrase: str) -> bool:
    """True when a fragment states a clear, complete opinion a shopper could ask for.

    Refused: fragments cut from a longer sentence ("which is a great experience", "so good for walking",
    "just a good"), an article then one last word ("just a good", "a great"), and fragments about a person
    rather than the product ("He love it").

    >>> [clear_opinion(p) for p in ("He love it", "just a good", "so good for walking", "fits perfectly in my ear")]
    [False, False, False, True]
    """
    words = [w.strip("\"'“”‘’").lower() for w in phrase.split()]
    words = [w for w in words if w]
    if len(words) < MIN_WORDS or words[0] in _DANGLING_START or words[-1] in _DANGLING_END:
        return False
    if words[-2] in _ARTICLES and words[-1] in OPINION_WORDS:  # "just a good": the article's noun is missing
        return False
    return True


def extract_opinions(reviews: list[dict[str, Any]], n: int, rng: random.Random, *,
                     clear_only: bool = False) -> list[dict[str, Any]]:
    """Up to `n` distinct opinions, each {"phrase", "review_ids"}.

    Args:
        reviews: the target's reviews as reviews.parquet rows (review_id, rating, title, text, helpful_vote).
        n: opinions wanted.
        rng: the candidate's seeded generator (picks among a review's clauses).
        clear_only: keep only clauses that state a clear, complete opinion (`clear_opinion`); template-v2
            builds ask for it. False keeps the first behaviour, so template-v1 splits regenerate byte for byte.

    Returns:
        Fewer than `n` items when the reviews do not support more; the caller rejects the
        candidate (reason no_reviews).
    """
    eligible = [r for r in reviews
                if (r.get("rating") or 0) >= MIN_RATING and len(r.get("text") or "") >= MIN_TEXT_CHARS]
    eligible.sort(key=lambda r: (-(r.get("helpful_vote") or 0), r["review_id"]))
    chosen: list[dict[str, Any]] = []
    for review in eligible:
        clauses = opinion_clauses(review["text"])
        if clear_only:
            clauses = [c for c in clauses if clear_opinion(c)]
        rng.shuffle(clauses)
        for clause in clauses:
            if any(keywords(clause) <= keywords(c["phrase"]) or keywords(c["phrase"]) <= keywords(clause)
                   for c in chosen):
                continue
            ids = sorted(r["review_id"] for r in reviews if contains_phrase(review_text(r), clause))
            chosen.append({"phrase": clause, "review_ids": ids})
            break
        if len(chosen) == n:
            break
    return chosen


