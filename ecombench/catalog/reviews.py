"""The text of a product's reviews as opinions are looked for in it (grading, the answer-set index, the judge)."""

from __future__ import annotations

from typing import Any

from ecombench.text import keywords, normalize


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
