"""Review opinions (stages/reviews.py) drawn from real electronics reviews (shared with-reviews files)."""

from __future__ import annotations

import random
import re

import pytest

from ecombench.catalog.reviews import review_text
from ecombench.stages.reviews import (
    MIN_OPINION_PRODUCTS,
    MIN_RATING,
    MIN_TEXT_CHARS,
    OPINION_WORDS,
    extract_opinions,
    learn_opinion_phrases,
)
from ecombench.text import contains_phrase, keywords, normalize

# Real products of with-reviews/meta_electronics_with_reviews.jsonl, picked by looking at their reviews.
KEYBOARD = "B08CXN6MR8"   # MageGee gaming keyboard and mouse combo: 10 reviews, 4 positive
JIGGLER = "B0C6PZJ72M"    # 5 positive reviews, bodies with "<br />" markup
SPEAKER = "B09414PJ6Q"    # one long positive review in "<br />* item" bullet lines
TRACKER = "B0BQWK46WB"    # 5 reviews: three 1-star, two 5-star ones too short ("Good.")
ALL_NEGATIVE = "B01EWJ1WS8"  # 5 reviews, none rated 4 or more
ONE_POSITIVE = "B08RDCRGXV"  # 5 reviews, one positive review long enough


def reviews_of(catalog, asin: str) -> list[dict]:
    reviews = catalog.reviewed_product(asin)["reviews"]
    assert reviews, f"{asin} has no reviews in the snapshot"
    return reviews


def eligible_sources(reviews: list[dict], phrase: str) -> list[str]:
    """Ids of positive, long-enough reviews whose body states the phrase."""
    return [r["review_id"] for r in reviews if (r["rating"] or 0) >= MIN_RATING
            and len(r["text"] or "") >= MIN_TEXT_CHARS and contains_phrase(r["text"], phrase)]


@pytest.mark.parametrize("asin", [KEYBOARD, JIGGLER])
def test_two_opinions_are_drawn_from_a_product_with_several_positive_reviews(full_catalog, asin):
    assert len(extract_opinions(reviews_of(full_catalog, asin), 2, random.Random(0))) == 2


@pytest.mark.parametrize("asin", [KEYBOARD, JIGGLER])
def test_each_opinion_comes_from_a_positive_review_of_the_product(full_catalog, asin):
    reviews = reviews_of(full_catalog, asin)
    for op in extract_opinions(reviews, 2, random.Random(0)):
        assert eligible_sources(reviews, op["phrase"]), op


@pytest.mark.parametrize("asin", [KEYBOARD, JIGGLER])
def test_review_ids_are_exactly_the_products_reviews_stating_the_phrase(full_catalog, asin):
    reviews = reviews_of(full_catalog, asin)
    for op in extract_opinions(reviews, 2, random.Random(0)):
        stating = sorted(r["review_id"] for r in reviews if contains_phrase(review_text(r), op["phrase"]))
        assert op["review_ids"] == stating and stating, op


@pytest.mark.parametrize("asin", [KEYBOARD, JIGGLER])
def test_the_two_opinions_do_not_repeat_each_other(full_catalog, asin):
    a, b = extract_opinions(reviews_of(full_catalog, asin), 2, random.Random(0))
    ka, kb = keywords(a["phrase"]), keywords(b["phrase"])
    assert not (ka <= kb or kb <= ka), (a, b)


@pytest.mark.parametrize("asin", [KEYBOARD, JIGGLER])
def test_the_two_opinions_come_from_different_reviews(full_catalog, asin):
    # Compared by text: the review file holds exact copies of some reviews under two ids.
    reviews = reviews_of(full_catalog, asin)
    text = {r["review_id"]: r["text"] for r in reviews}
    a, b = extract_opinions(reviews, 2, random.Random(0))
    assert ({text[i] for i in eligible_sources(reviews, a["phrase"])}
            != {text[i] for i in eligible_sources(reviews, b["phrase"])})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_same_seed_gives_the_same_opinions(full_catalog, seed):
    reviews = reviews_of(full_catalog, JIGGLER)
    assert extract_opinions(reviews, 2, random.Random(seed)) == extract_opinions(reviews, 2, random.Random(seed))


def test_a_product_whose_reviews_are_all_negative_gives_no_opinion(full_catalog):
    reviews = reviews_of(full_catalog, ALL_NEGATIVE)
    assert all(r["rating"] < MIN_RATING for r in reviews)
    assert extract_opinions(reviews, 2, random.Random(0)) == []


def test_a_product_whose_positive_reviews_are_too_short_gives_no_opinion(full_catalog):
    reviews = reviews_of(full_catalog, TRACKER)
    assert [len(r["text"]) < MIN_TEXT_CHARS for r in reviews if r["rating"] >= MIN_RATING] == [True, True]
    assert extract_opinions(reviews, 2, random.Random(0)) == []


def test_a_product_with_one_usable_review_gives_fewer_than_two_opinions(full_catalog):
    assert len(extract_opinions(reviews_of(full_catalog, ONE_POSITIVE), 2, random.Random(0))) == 1


def test_no_reviews_give_no_opinion():
    assert extract_opinions([], 2, random.Random(0)) == []


@pytest.mark.parametrize("asin", [JIGGLER, SPEAKER])
def test_an_opinion_carries_no_html_markup_or_bullet(full_catalog, asin):
    # Regression: '<br />A nice piece of gear' and '<br />* battery quality' became review rubrics
    # and were quoted in queries as such.
    reviews = reviews_of(full_catalog, asin)
    phrases = [op["phrase"] for seed in range(5) for op in extract_opinions(reviews, 2, random.Random(seed))]
    assert phrases and [p for p in phrases if re.search(r"[<>*]|&[a-z]+;", p)] == []


def test_every_opinion_of_the_review_file_is_a_short_opinion_clause(full_catalog):
    bad = []
    for asin, reviews in full_catalog.reviews.items():
        for op in extract_opinions(reviews, 2, random.Random(asin)):
            words = op["phrase"].split()
            if (not (3 <= len(words) <= 8 and keywords(op["phrase"]) & OPINION_WORDS)
                    or re.search(r"\d|<|>", op["phrase"])):
                bad.append((asin, op["phrase"]))
    assert bad == []


NEGATION = re.compile(r"\b(?:not|no|never|neither|nor)\b|n[’']t\b", re.IGNORECASE)


def test_an_opinion_of_a_positive_review_is_never_a_negated_clause(full_catalog):
    negated = [op["phrase"] for asin, reviews in full_catalog.reviews.items()
               for op in extract_opinions(reviews, 2, random.Random(asin)) if NEGATION.search(op["phrase"])]
    assert negated == []


# ---- the clear-opinion filter (issue #14): fragments quoted from the shared-data split ------------------

from ecombench.stages.reviews import clear_opinion, opinion_clauses  # noqa: E402


@pytest.mark.parametrize("fragment", ["He love it", "just a good", "so good for walking", "which is a great experience",
                                      "My toddler LOVES his new blue shoes", "She said he loves it"])
def test_a_fragment_cut_from_its_sentence_or_about_a_person_is_no_clear_opinion(fragment):
    assert not clear_opinion(fragment)


@pytest.mark.parametrize("phrase", ["fits perfectly in my ear", "battery lasts all day", "great quality for the price",
                                    "very comfortable to wear", "Every bit as good as the Garmin band"])
def test_a_complete_opinion_about_the_product_is_clear(phrase):
    assert clear_opinion(phrase)


def test_clear_only_draws_no_dangling_fragment_from_a_review_that_holds_them():
    review = {"review_id": "R1", "rating": 5.0, "helpful_vote": 0, "title": "",
              "text": "My son got these shoes. He love it, which is a great experience. The sole feels really soft."}
    assert {"He love it", "which is a great experience"} <= set(opinion_clauses(review["text"]))
    drawn = extract_opinions([review], 1, random.Random(0), clear_only=True)
    assert [o["phrase"] for o in drawn] == ["sole feels really soft"]


def test_without_clear_only_the_first_behaviour_stays_for_template_v1(full_catalog):
    reviews = reviews_of(full_catalog, KEYBOARD)
    first = extract_opinions(reviews, 2, random.Random(0))
    assert first == extract_opinions(reviews, 2, random.Random(0), clear_only=False)


# ---- the catalog's opinion phrases -------------------------------------------------------------------

@pytest.fixture(scope="module")
def catalog_phrases(full_catalog) -> dict[str, int]:
    rows = [(r["parent_asin"], r["rating"], r["title"], r["text"])
            for revs in full_catalog.reviews.values() for r in revs]
    return learn_opinion_phrases(rows)


def test_catalog_phrases_are_stated_for_several_products_and_name_more_than_praise(full_catalog, catalog_phrases):
    assert {"easy to use", "easy to set up", "long battery life"} <= set(catalog_phrases)
    assert not {"work great", "highly recommend", "love it", "a great"} & set(catalog_phrases)
    for phrase, n in catalog_phrases.items():
        stating = {a for a, revs in full_catalog.reviews.items()
                   if any((r["rating"] or 0) >= MIN_RATING and contains_phrase(review_text(r), phrase) for r in revs)}
        assert n >= MIN_OPINION_PRODUCTS and len(stating) >= n, (phrase, n, len(stating))


def test_a_phrase_inside_a_longer_one_stated_for_the_same_products_is_dropped(catalog_phrases):
    assert "easy to set up" in catalog_phrases and "easy to set" not in catalog_phrases


def test_with_catalog_phrases_an_opinion_is_one_of_them_from_the_targets_reviews(full_catalog, catalog_phrases):
    drawn = 0
    for asin, reviews in sorted(full_catalog.reviews.items()):
        opinions = extract_opinions(reviews, 1, random.Random(asin), clear_only=True, catalog_phrases=catalog_phrases)
        for op in opinions:
            drawn += 1
            assert normalize(op["phrase"]) in catalog_phrases
            assert op["review_ids"] == sorted(r["review_id"] for r in reviews if contains_phrase(review_text(r),
                                                                                                op["phrase"]))
    assert drawn >= 150  # 223 of the 601 products with >= 3 reviews state one on the shared data


def test_a_clause_saying_what_the_reviewer_prefers_states_no_opinion_of_the_product(full_catalog):
    # Sensodyne Pronamel Medium Toothbrush: "I prefer Soft bristles, but sometimes I want a deeper cleaning so the
    # medium bristles are good for that" (4 stars). A reviewed task asked this medium toothbrush for reviews saying
    # "Soft bristles".
    from ecombench.stages.reviews import review_opinion_phrases

    review = next(r for r in reviews_of(full_catalog, "B09NLB1THJ") if "I prefer Soft bristles" in (r["text"] or ""))
    assert not any("soft bristle" in phrase for phrase in review_opinion_phrases(review_text(review)))
    assert "prefer Soft bristles" not in " ".join(opinion_clauses(review["text"]))
