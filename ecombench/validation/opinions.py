"""Stage 2 check of LLM-phrased review opinions: every cited review exists and states the phrase.

The reference kept neither the source review nor any check that the review says what the opinion
claims (§5.1, §15.17). Here an opinion stands only if each review it cites was shown to the model
and contains the phrase (token-normalised, the same test the review_opinion checker grades the
target with, so an accepted opinion cannot make the target fail its own rubric).
"""

from __future__ import annotations

from typing import Any

from ecombench.catalog.reviews import review_text
from ecombench.schemas.findings import Finding
from ecombench.text import contains_phrase, keywords


def check_opinions(cited: list[dict[str, Any]], shown: list[dict[str, Any]], reviews: list[dict[str, Any]],
                   n: int) -> tuple[list[dict[str, Any]], list[Finding]]:
    """The opinions that stand, and a finding for each one that does not.

    Args:
        cited: the model's opinions, {"phrase", "review_ids"}.
        shown: the reviews the prompt showed (review_id, title, text).
        reviews: all of the target's reviews (for the ids that state an accepted phrase).
        n: opinions wanted; extra distinct opinions are dropped, a phrase that repeats an
            earlier one's content words is skipped.

    Returns:
        (opinions as {"phrase", "review_ids"} with ids = every target review stating the phrase,
        sorted; findings opinion_unknown_review / opinion_unsupported). A caller rejects on any finding.
    """
    by_id = {r["review_id"]: r for r in shown}
    findings: list[Finding] = []
    accepted: list[dict[str, Any]] = []
    for op in cited:
        phrase = op["phrase"]
        unknown = [rid for rid in op["review_ids"] if rid not in by_id]
        if unknown:
            findings.append(Finding("opinion_unknown_review", f"opinion {phrase!r} cites review(s) {unknown} that "
                                    "were not among the target's reviews shown",
                                    {"phrase": phrase, "review_ids": op["review_ids"], "unknown": unknown,
                                     "shown": sorted(by_id)}))
            continue
        silent = [rid for rid in op["review_ids"] if not contains_phrase(review_text(by_id[rid]), phrase)]
        if silent:
            findings.append(Finding("opinion_unsupported", f"opinion {phrase!r} is not stated by cited review(s) "
                                    f"{silent}", {"phrase": phrase, "review_ids": silent,
                                                  "text": review_text(by_id[silent[0]])[:500]}))
            continue
        words = keywords(phrase)
        if not words or any(words <= keywords(a["phrase"]) or keywords(a["phrase"]) <= words for a in accepted):
            continue
        ids = sorted(r["review_id"] for r in reviews if contains_phrase(review_text(r), phrase))
        accepted.append({"phrase": phrase, "review_ids": ids})
    return accepted[:n], findings
