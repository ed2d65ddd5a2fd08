"""validation/opinions.py: LLM-phrased review opinions stand only on the target's own review text."""

from __future__ import annotations

import pytest

from ecombench.stages.reviews import opinion_clauses
from ecombench.validation.opinions import check_opinions


@pytest.fixture(scope="module")
def reviewed(sample_catalog):
    """(reviews of one real sample product with an opinion clause in its first review, that clause)."""
    from ecombench.catalog.snapshot import load_reviews

    by_product: dict[str, list[dict]] = {}
    for row in load_reviews(sample_catalog.path).sort("review_id").iter_rows(named=True):
        by_product.setdefault(row["parent_asin"], []).append(row)
    for asin in sorted(by_product):
        reviews = by_product[asin]
        clauses = opinion_clauses(reviews[0]["text"] or "")
        if len(reviews) >= 2 and clauses:
            return reviews, clauses[0]
    pytest.fail("no sample product with an opinion clause")


def test_a_phrase_its_cited_review_states_stands_with_every_review_stating_it(reviewed):
    reviews, clause = reviewed
    opinions, findings = check_opinions([{"phrase": clause, "review_ids": [reviews[0]["review_id"]]}],
                                        reviews, reviews, 2)
    assert findings == []
    assert opinions[0]["phrase"] == clause and reviews[0]["review_id"] in opinions[0]["review_ids"]


def test_an_unknown_review_id_is_reported(reviewed):
    reviews, clause = reviewed
    _, findings = check_opinions([{"phrase": clause, "review_ids": ["R_MADE_UP"]}], reviews, reviews, 2)
    assert [f.reason for f in findings] == ["opinion_unknown_review"]
    assert findings[0].evidence["unknown"] == ["R_MADE_UP"] and findings[0].stage == 2


def test_a_phrase_the_review_does_not_state_is_unsupported(reviewed):
    reviews, _ = reviewed
    _, findings = check_opinions([{"phrase": "outlasted three hurricanes", "review_ids": [reviews[0]["review_id"]]}],
                                 reviews, reviews, 2)
    assert [f.reason for f in findings] == ["opinion_unsupported"]


def test_a_repeated_opinion_counts_once(reviewed):
    reviews, clause = reviewed
    cited = [{"phrase": clause, "review_ids": [reviews[0]["review_id"]]}] * 2
    opinions, findings = check_opinions(cited, reviews, reviews, 2)
    assert findings == [] and len(opinions) == 1
