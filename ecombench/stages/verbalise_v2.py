"""Stage 5, the second offline verbaliser (template-v2): queries that read like a shopper wrote them.

Same contract as stages/verbalise.py's `write_query` (template-v1, still selectable so older splits
regenerate): it states every query rubric and nothing else, from locked rubrics only. What changes is
the writing: the product type is always named, in natural form ("a mouse", "earbuds", "a black bumper
case"); values are said as people say them ("made of faux leather", "for ages 4 to 12", "$25 or
under"); the rating and review-count bounds are folded into one phrase ("well rated (4 stars or more)
with plenty of reviews (at least 100)"); exclusions name their field ("not in green or pink colours");
and each intent's query follows one of several sentence plans, drawn by the verbalisation stage's own
seeded generator. Each rubric type says its own value (`query_phrase_v2` in ecombench.stages.phrasing,
which calls stages/value_phrases.py and stages/product_naming.py); the checks that read the text
(validation/semantic.py, validation/leakage.py) accept these paraphrases through ecombench.lemmas.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

from ecombench.rubrics import RubricLike, plain_value
from ecombench.schemas.models import Rubric
from ecombench.stages.phrasing import phrasing_of
from ecombench.stages.product_naming import PLURAL_ONLY, natural_type
from ecombench.stages.replies import speech_case
from ecombench.stages.value_forms import bound_phrase
from ecombench.stages.verbalise import _plural_verb
from ecombench.tables.fields import FieldTable
from ecombench.text import fix_articles, format_number, join_words, tokens

VERBALISER_ID = "template-v2"

OPENERS = ("I'm looking for {s}.", "I need {s}.", "I want to buy {s}.", "Can you help me find {s}?",
           "I'm shopping for {s}.", "Could you find me {s}?", "I'd like {s}.", "Help me pick {s}.",
           "I'm hoping to find {s}.", "I'm after {s}.", "Please find {s} for me.", "I'd love to get {s}.",
           "I'm trying to find {s}.", "Any suggestions for {s}?", "I'm searching for {s}.", "I'd like to order {s}.")
# The further attributes, on the singular "one" ("Ideally one made of cotton and with a floral pattern.").
MORE = ("Ideally one {x}.", "It should be one {x}.", "I'd prefer one {x}.", "Something {x} would be best.",
        "Preferably one {x}.", "One {x} would be ideal.", "I'm picturing one {x}.", "Best if it's one {x}.")
QUALITY = ("It should be {x}.", "I'd like one that's {x}.", "Please make sure it's {x}.", "It has to be {x}.",
           "Ideally it's {x}.", "I care that it's {x}.", "Only if it's {x}.", "I want it {x}.")
PRICE = ("My budget is up to {p}.", "I can spend up to {p}.", "It should cost no more than {p}.",
         "I'd like to keep it to {p} or under.", "Anything up to {p} works.", "I'd spend at most {p}.",
         "Keep it at {p} or less, please.", "My limit is {p} or less.")
OPINIONS = ('I\'d like one whose reviews say {x}.', "Other buyers should say things like {x}.",
            "Reviews should mention {x}.", "I want buyers' reviews to say {x}.", "Past buyers should report {x}.")
# Fields whose (short) value goes before the product noun: "a black bumper case", "a Bluetooth speaker".
PREMODIFIERS = ("Color", "Form Factor", "Connectivity Technology", "Special Feature", "Power Source")
MAX_PREMODIFIERS = 2
_ADJECTIVE = re.compile(r"(?:proof|able|ible|less|ant|ent|ive|ed|weight|free|ful|ic|al|ous|y)$", re.IGNORECASE)

def premodifier(rubric: RubricLike, entity: str | None) -> str | None:
    """The value said before the product noun ("black", "bumper", "waterproof"), or None.

    None when it reads better after the noun: long values, codes opening with a digit, nouns of Special
    Feature, a value sharing a word with the product type.
    """
    name = rubric.field.removeprefix("details.")
    value = str(rubric.expected_value)
    if name not in PREMODIFIERS or len(value.split()) > 2 or "/" in value or value[:1].isdigit():
        return None  # a code opening with a digit ("802.11b") reads better after the noun, and takes no "a"
    if name in ("Special Feature", "Power Source") and not _ADJECTIVE.search(value.split()[-1]):
        return None
    if entity and set(tokens(value)) & set(tokens(entity)):
        return None  # "Flip" of "Flip Cases": a second "flip" before the noun would read "a flip flip case"
    return speech_case(value)


def quality_phrase(bounds: Mapping[str, RubricLike], rng: random.Random) -> str | None:
    """The rating and review-count bounds folded into one phrase, or None without either.

    "well rated (4 stars or more) with plenty of reviews (at least 100)"; an exclusive bound keeps
    template-v1's wording.
    """
    rating, count = bounds.get("average_rating"), bounds.get("rating_number")
    r = _floor(rating, "stars")
    n = _floor(count, "")
    if rating is not None and r is None or count is not None and n is None:
        parts = [f"rated {bound_phrase(b.field, plain_value(b))}" if b.field == "average_rating"
                 else f"backed by {bound_phrase(b.field, plain_value(b))}" for b in (rating, count) if b is not None]
        return join_words(parts)
    if r and n:
        return rng.choice((f"well rated ({r} stars or more) with plenty of reviews (at least {n})",
                           f"rated at least {r} stars across {n} or more reviews",
                           f"rated {r} stars and up, with at least {n} ratings",
                           f"backed by {n} or more reviews averaging {r} stars or better"))
    if r:
        return rng.choice((f"rated {r} stars or higher", f"rated at least {r} stars", f"rated {r} stars or better",
                           f"rated {r} stars and up"))
    if n:
        return rng.choice((f"well reviewed, with at least {n} reviews", f"popular, with {n} or more ratings",
                           f"backed by {n} or more reviews", f"tried by plenty of people, with at least {n} ratings"))
    return None


def _floor(rubric: RubricLike | None, unit: str) -> str | None:
    """The inclusive lower bound of a rubric as a number ("4.5"), or None (no rubric, or not such a bound)."""
    if rubric is None:
        return None
    b = plain_value(rubric)
    if b.get("max") is not None or b.get("min") is None or not b.get("min_inclusive", True):
        return None
    return format_number(b["min"])


def price_sentence(rubric: RubricLike, rng: random.Random) -> str:
    """A price cap as a shopper says it ("I can spend up to $25."); an exclusive or lower bound keeps v1's wording."""
    b = plain_value(rubric)
    if b.get("min") is not None or b.get("max") is None or not b.get("max_inclusive", True):
        return f"It should cost {bound_phrase(rubric.field, b)}."
    return rng.choice(PRICE).format(p=f"${format_number(b['max'])}")


def join_clauses(parts: list[str]) -> str:
    """Phrases after the product noun, joined: "a and b"; with a serial comma when a phrase holds a comma.

    "with no added perfume, since smells give me headaches, and without any corners" (without the
    comma the second cue would read as part of the first's reason).
    """
    if len(parts) > 1 and any("," in p for p in parts):
        return ", ".join(parts[:-1]) + ", and " + parts[-1]
    return join_words(parts)


def product_type_rubric(rubrics: list[Rubric]) -> Rubric | None:
    """The query's entity rubric (what the product is), or None."""
    return next((r for r in rubrics if r.info_source == "query" and phrasing_of(r).query_role == "subject"), None)


def write_query_v2(rubrics: list[Rubric], table: FieldTable, rng: random.Random,
                   cues: dict[str, str] | None = None) -> str:
    """A request stating every query rubric and nothing else, in one of several sentence plans.

    Sentence 1 names the product type with up to two values before its noun and up to two phrases
    after it; the further attributes, the exclusions, the folded rating and review bounds, the
    opinions and the price or budget follow in an order the plan draws.

    Args:
        rubrics: the locked rubrics (the query's must include an entity: the caller rejects a target without).
        table: the field table.
        rng: the verbalisation stage's seeded generator. The query takes exactly one draw from it, the seed
            of its own plan generator (openers, plans, phrasings): how many choices a query makes depends on
            its rubrics, and the persona drawn next from the same generator must not move when they change
            (pipeline/candidate.py `CandidateState.rng`).
        cues: {rubric id: clause} for implicit rubrics: the clause replaces the rubric's phrase.

    Raises:
        ValueError: the query rubrics hold no entity (template-v2 always names the product type).
    """
    cues = cues or {}
    rng = random.Random(rng.getrandbits(64))  # one draw from the stage generator; see Args
    opener = rng.choice(OPENERS)  # first, so a change of the rubrics never moves it
    entity_rubric = product_type_rubric(rubrics)
    if entity_rubric is None:
        raise ValueError("template-v2 needs an entity rubric among the query rubrics")
    entity = str(entity_rubric.expected_value)
    plural = entity.split()[-1].lower() in PLURAL_ONLY
    before: list[str] = []
    after: list[str] = []
    exclusions, bounds, opinions, budgets = [], {}, [], []
    for r in rubrics:
        if r.info_source != "query" or r is entity_rubric:
            continue
        role = phrasing_of(r).query_role
        if role == "attribute":
            if r.id in cues:
                after.append(_plural_verb(cues[r.id]) if plural else cues[r.id])
                continue
            pre = premodifier(r, entity)
            if pre is not None and len(before) < MAX_PREMODIFIERS:
                before.append(pre)
            else:
                after.append(phrasing_of(r).query_phrase_v2(r, table, rng))
        elif role == "exclusion":
            exclusions.append(phrasing_of(r).query_phrase_v2(r, table, rng))
        elif role == "bound":
            bounds[r.field] = r
        elif role == "opinion":
            opinions.append(phrasing_of(r).query_phrase_v2(r, table, rng))
        elif role == "budget":
            budgets.append(phrasing_of(r).query_phrase_v2(r, table, rng))
    subject = natural_type(entity, before)
    head, rest = after[:2], after[2:]
    first = opener.format(s=" ".join([subject, join_clauses(head)]).strip())
    middle: list[str] = []
    if rest:
        middle.append(rng.choice(MORE).format(x=join_clauses(rest)))
    middle += exclusions
    quality = quality_phrase(bounds, rng)
    tail: list[str] = []
    if quality:
        tail.append(rng.choice(QUALITY).format(x=quality))
    if opinions:
        tail.append(rng.choice(OPINIONS).format(x=join_words(opinions)))
    if rng.random() < 0.5:  # the plan: details first, or what others say first
        middle, tail = tail, middle
    money = [price_sentence(bounds["price"], rng)] if "price" in bounds else []
    for field, r in bounds.items():
        if field not in ("price", "average_rating", "rating_number"):
            money.append(f"It should be {bound_phrase(field, plain_value(r))}.")
    return fix_articles(" ".join([first, *middle, *tail, *money, *budgets]))
