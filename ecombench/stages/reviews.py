"""Review opinions for review_driven tasks, drawn from the target's own real reviews (offline).

An opinion is a short clause (3-8 words) of a positive review (rating >= 4, at least
`MIN_TEXT_CHARS` characters) that carries an opinion word ("fits perfectly in my ear", "battery
lasts all day"). Helpful reviews go first; the two opinions come from different reviews, do not
repeat each other, and keep the ids of every target review that states them (the reference
kept neither the review id nor checked duplicates, §15.17).

A whole clause is almost always stated by the target's reviews alone, so a requirement on it pins the
target. With the catalog's opinion phrases (`learn_opinion_phrases`: 2-5 word phrases of positive review
clauses, such as "easy to set up" or "long battery life", that reviews of at least `MIN_OPINION_PRODUCTS`
products state), the opinions are drawn from those instead: requirements other products' reviews also meet,
so the answer set counts every product whose reviews state them.
"""

from __future__ import annotations

import html
import random
import re
from collections.abc import Iterable
from typing import Any

from ecombench.catalog.reviews import review_text
from ecombench.text import contains_phrase, keywords, normalize

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
# A clause that says what the reviewer wants, would like or expected states no opinion of the product: "I prefer
# Soft bristles, but ... the medium bristles are good" (a reviewed task asked a medium toothbrush for "soft bristles").
_WANTING = re.compile(r"\b(?:prefers?|preferred|wish(?:es|ed)?|hoped?|hoping|wants?|wanted|would|"
                      r"should|instead|looking for)\b", re.IGNORECASE)
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
        if _WANTING.search(clause):  # "I prefer soft bristles", "I wish it were more comfortable"
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
                     clear_only: bool = False, catalog_phrases: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Up to `n` distinct opinions, each {"phrase", "review_ids"}.

    Args:
        reviews: the target's reviews as reviews.parquet rows (review_id, rating, title, text, helpful_vote).
        n: opinions wanted.
        rng: the candidate's seeded generator (picks among a review's clauses).
        clear_only: keep only clauses that state a clear, complete opinion (`clear_opinion`); template-v2
            builds ask for it. False keeps the first behaviour, so template-v1 splits regenerate byte for byte.
        catalog_phrases: the catalog's opinion phrases (`learn_opinion_phrases`); when given, each opinion
            is one of them that a review of the target states, instead of a whole clause.

    Returns:
        Fewer than `n` items when the reviews do not support more; the caller rejects the
        candidate (reason no_reviews).
    """
    eligible = [r for r in reviews
                if (r.get("rating") or 0) >= MIN_RATING and len(r.get("text") or "") >= MIN_TEXT_CHARS]
    eligible.sort(key=lambda r: (-(r.get("helpful_vote") or 0), r["review_id"]))
    chosen: list[dict[str, Any]] = []
    for review in eligible:
        if catalog_phrases is not None:
            clauses = [surface for norm, surface in review_opinion_phrases(review_text(review)).items()
                       if norm in catalog_phrases]
        else:
            clauses = opinion_clauses(review["text"])
        if clear_only and catalog_phrases is None:
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




# Catalog opinion phrases: this many words, stated by positive reviews of at least this many products.
MIN_PHRASE_WORDS, MAX_PHRASE_WORDS = 2, 5
MIN_OPINION_PRODUCTS = 3
# Words that open or close no phrase of their own: articles, pronouns, auxiliaries, intensifiers
# ("a great", "is very comfortable", "super easy to install" -> "easy to install", "recommend it").
_PHRASE_EDGE = frozenset(
    "a an the and or but so to of for with in on at by from it its it's is are was were be been am i me my "
    "this these those that they them their we you your he she his her which what how far still also would "
    "will can could should much pretty super absolutely highly very really too just quite as than then "
    "if when all any some more most its doe does do did has have had got get like put find see term".split())
# A phrase must name something about the product besides praise: "works great", "highly recommend" or
# "love it" hold for nearly every product a review likes, so they are no requirement a shopper states.
_PRAISE = frozenset(
    "love loves loved like likes liked recommend recommended great good nice best better excellent perfect "
    "perfectly awesome amazing work works worked working well fine product item buy bought purchase "
    "purchased one thing things money worth value price deal happy glad".split())
# Phrases that say nothing a shopper could require ("used it for a long time", "seems to work").
_EMPTY_PHRASES = frozenset({"long time", "seem to work", "great little", "so far", "long it last"})
# Phrases about the purchase rather than the product.
_NOT_THE_PRODUCT = frozenset(
    "shipping shipped delivery delivered arrived arrive seller service customer package packaging amazon "
    "return returned refund gift gifts daughter son husband wife kids".split())


def _surface_words(clause: str) -> list[str]:
    return [w for w in (w.strip("\"'“”‘’*") for w in clause.split()) if w]


def phrase_is_opinion(phrase: str) -> bool:
    """True when a phrase can stand as a catalog opinion phrase (read on its normalised tokens).

    It holds 2-5 tokens, neither opening nor closing on an article, pronoun, auxiliary or intensifier, speaks
    of the product rather than the purchase, and carries an opinion word that is not mere praise.

    >>> [phrase_is_opinion(p) for p in ("easy to set up", "works great", "is very comfortable",
    ...                                 "long battery life", "shipping was fast", "love these shoes")]
    [True, False, False, True, False, False]
    """
    words = normalize(phrase).split()
    if not MIN_PHRASE_WORDS <= len(words) <= MAX_PHRASE_WORDS or words[0] in _PHRASE_EDGE or words[-1] in _PHRASE_EDGE:
        return False
    if words[0] in _DANGLING_START or words[-1] in _DANGLING_END or any(w in _NOT_THE_PRODUCT for w in words):
        return False
    if " ".join(words) in _EMPTY_PHRASES:
        return False
    return any(w in OPINION_WORDS and w not in _PRAISE for w in words)


def review_opinion_phrases(text: str) -> dict[str, str]:
    """The opinion phrases one review text states: normalised phrase -> its surface form in the text."""
    out: dict[str, str] = {}
    for clause in opinion_clauses(text):
        words = _surface_words(clause)
        for n in range(MIN_PHRASE_WORDS, MAX_PHRASE_WORDS + 1):
            for i in range(len(words) - n + 1):
                surface = " ".join(words[i:i + n])
                if phrase_is_opinion(surface):
                    out.setdefault(normalize(surface), surface)
    return out


def learn_opinion_phrases(reviews: Iterable[tuple[str, float | None, str | None, str | None]],
                          min_products: int = MIN_OPINION_PRODUCTS) -> dict[str, int]:
    """The catalog's opinion phrases: normalised phrase -> how many products' positive reviews state it.

    A review states what its title and body say (`review_text`, the text grading and answer sets read): a title
    such as "Very comfortable shoes" is often the review's clearest opinion.

    Args:
        reviews: (parent_asin, rating, title, text) of every review of the catalog, in any order.
        min_products: keep phrases stated for at least this many distinct products.

    Returns:
        Phrases kept are maximal: a phrase inside a longer kept phrase stated for the same products
        ("easy to set" inside "easy to set up") is dropped.
    """
    products: dict[str, set[str]] = {}
    seen_texts: dict[str, list[str]] = {}
    for asin, rating, title, text in reviews:
        if (rating or 0) < MIN_RATING or len(text or "") < MIN_TEXT_CHARS:
            continue
        whole = review_text({"title": title, "text": text})
        phrases = seen_texts.get(whole)
        if phrases is None:
            phrases = seen_texts[whole] = list(review_opinion_phrases(whole))
        for phrase in phrases:
            products.setdefault(phrase, set()).add(asin)
    kept = {p: frozenset(a) for p, a in products.items() if len(a) >= min_products}
    by_products: dict[frozenset[str], list[str]] = {}
    for phrase, asins in kept.items():
        by_products.setdefault(asins, []).append(phrase)
    out: dict[str, int] = {}
    for asins, phrases in by_products.items():
        for phrase in phrases:
            if not any(other != phrase and f" {phrase} " in f" {other} " for other in phrases):
                out[phrase] = len(asins)
    return dict(sorted(out.items()))
