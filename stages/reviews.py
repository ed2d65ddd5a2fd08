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

from stages.text import contains_phrase, keywords, normalize

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


def extract_opinions(reviews: list[dict[str, Any]], n: int, rng: random.Random) -> list[dict[str, Any]]:
    """Up to `n` distinct opinions, each {"phrase", "review_ids"}.

    Args:
        reviews: the target's reviews as reviews.parquet rows (review_id, rating, title, text, helpful_vote).
        n: opinions wanted.
        rng: the candidate's seeded generator (picks among a review's clauses).

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


def review_text(review: dict[str, Any]) -> str:
    """The text a review opinion is looked for in: title and body."""
    return f"{review.get('title') or ''}. {review.get('text') or ''}"


def opinion_overlap(phrase: str, text: str) -> float:
    """Share of the phrase's content words found in the text (0..1), for the unscorable band."""
    words = keywords(phrase)
    return len(words & keywords(text)) / len(words) if words else 0.0


def normalized_review_text(review: dict[str, Any]) -> str:
    """Padded normalised title+text, as the answer-set index stores it."""
    return f" {normalize(review_text(review))} "
