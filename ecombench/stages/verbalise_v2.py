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
from ecombench.stages.replies import names_a_phone, reads_as_adjective, speech_case
from ecombench.stages.value_forms import bound_phrase
from ecombench.stages.verbalise import _plural_verb
from ecombench.tables.fields import FieldTable
from ecombench.text import fix_articles, format_number, join_words, tokens

VERBALISER_ID = "template-v2"

# Sentence pieces. A fixed run of five or more words would recur across a split's queries, so each piece is
# short and a sentence is put together from several independently drawn pieces: the product noun, values
# and numbers between them vary too (validation/shopper_text.py counts five-word phrases).
# Openers put at most three words before the product: with its article they never fill five words.
OPENERS = ("I'm looking for {s}.", "I need {s}.", "I want {s}.", "Can you find {s}?", "I'm shopping for {s}.",
           "Find me {s}.", "I'd like {s}.", "Help me pick {s}.", "I'm hoping for {s}.", "I'm after {s}.",
           "Please find {s}.", "I'd love {s}.", "I'm hunting for {s}.", "Any suggestions for {s}?",
           "I'm searching for {s}.", "Recommend {s}, please.", "I'm picking out {s}.",
           "Have you got {s}?", "Show me {s}.", "Can you suggest {s}?", "Point me to {s}.")
# The further attributes, on the singular "one" ("It must be one made of cotton and with a floral pattern."), each
# stated as a requirement: the grader holds them, and a reviewer read "And with a zipper closure, if possible." of a
# locked rubric as telling the agent it may skip it.
MORE = ("It should be one {x}.", "It must be one {x}.", "Make it one {x}.", "Also, one {x}.", "I need one {x}.",
        "It has to be one {x}.", "And {x}, please.", "Only one {x}, though.", "Plus, one {x}.", "Get me one {x}.",
        "It needs to be one {x}.", "And it must be one {x}.", "I'm set on one {x}.")
# A quality sentence: a lead of at most three words ending in a noun ("one", "something", "an option"), a
# one-word verb, the floor, a link and the count. "4 stars or" recurs in most floors, so the words before it
# (the lead's last and the verb) are drawn apart from many.
QUALITY_LEADS = ("I'd like one {x}.", "Pick something {x}.", "Suggest an option {x}.", "I want one {x}.",
                 "I'd trust anything {x}.", "Only consider one {x}.", "Find me something {x}, please.",
                 "Look for one {x}.", "Go for one {x}.", "Give me one {x}.", "I'd take one {x}.",
                 "I need an option {x}.", "I'm after one {x}.", "Choose one {x}.", "I'll consider anything {x}.",
                 "Show me one {x}.")
# Verbs a shopper uses of a rating ("one rated 4 stars or more", "averaging", "with"); not sales copy's
# ("boasting", "netting").
RATING_VERBS = ("rated", "averaging", "scoring", "holding", "earning", "showing", "with", "having", "getting",
                "reaching", "that has", "that gets", "that earns", "that scores", "that averages", "that holds",
                "that shows")
# The floor itself, in the wordings ecombench.lemmas `states_bound` and the diligent agent read.
RATING_FLOORS = ("at least {r} stars", "{r} stars or higher", "{r} stars or better", "{r} stars or more",
                 "{r} stars and up", "{r} stars or above", "{r} or more stars", "{r} stars minimum",
                 "{r} stars at minimum")
# A count of ratings after the stars ("rated at least 4 stars across 100 or more reviews").
# One word each: a two-word link would make five fixed words with the end of a floor ("or above out of").
COUNT_LINKS = ("across", "over", "from", "with", "on", "among", "and", "by")
COUNT_FLOORS = ("{n} or more reviews", "at least {n} ratings", "{n} ratings or more", "{n} reviews or more",
                "at least {n} reviews", "{n} or more ratings", "{n} ratings and up", "{n} reviews and up")
# A count alone, after the lead's noun.
COUNT_VERBS = ("backed by", "with", "that has", "having", "reviewed by many, with", "that lots have rated,",
               "that people trust, with", "bought a lot, with", "that's proven, with", "carrying", "showing",
               "well reviewed, with", "popular, with", "tried by many, with")
# A price cap: a lead and the cap.
# Every lead reads before every cap; a lead has at most two words and a cap at most two before the amount,
# so no five fixed words ever precede it.
PRICE_LEADS = ("My budget's", "I'd spend", "I'll pay", "I'm spending", "I'd pay", "Price-wise,", "I'm paying",
               "Cost-wise,", "Budget:", "I'll spend", "Price cap:")
PRICE_CAPS = ("up to {p}", "{p} or less", "{p} or under", "{p} or lower", "at most {p}")
# At most four words before the quoted opinions, each naming who says them (the diligent agent reads that).
OPINIONS = ("Reviews should mention {x}.", "Past buyers should report {x}.", "Buyers should say {x}.",
            "Owners should mention {x}.", "Its reviews should note {x}.", "I'd want reviews saying {x}.",
            "I'm hoping reviews say {x}.", "Reviewers should report {x}.", "Look for reviews saying {x}.",
            "Buyers' reviews should say {x}.", "Reviews saying {x} would reassure me.", "People should report {x}.")
# One word that may open a later sentence ("Also, my budget's up to $20."): the words across a sentence break
# vary, and a lead of three words after it still makes no five fixed words.
LINKS = ("Also,", "And", "Plus,", "Oh, and", "Besides,")
LINK_SHARE = 0.35


def linked(sentences: list[str], rng: random.Random) -> list[str]:
    """Later sentences, each opened now and then with a linking word ("Also, ..."), no word twice."""
    links = list(LINKS)
    out = []
    opening = {link.split(" ", 1)[0].rstrip(",") for link in LINKS}
    for sentence in sentences:
        # A sentence that opens with a link of its own ("And with a zipper, if possible.") takes no other.
        if rng.random() >= LINK_SHARE or sentence.split(" ", 1)[0].rstrip(",") in opening:
            out.append(sentence)
            continue
        first = sentence.split(" ", 1)[0]
        keep = first == "I" or first.startswith("I'")  # "I" stays a capital
        body = sentence if keep else sentence[:1].lower() + sentence[1:]
        link = rng.choice(links)
        links.remove(link)
        out.append(f"{link} {body}")
    return out


# Fields whose (short) value goes before the product noun: "a black bumper case", "a Bluetooth speaker".
PREMODIFIERS = ("Color", "Form Factor", "Connectivity Technology", "Special Feature", "Power Source")
MAX_PREMODIFIERS = 2

def premodifier(rubric: RubricLike, entity: str | None) -> str | None:
    """The value said before the product noun ("black", "bumper", "waterproof"), or None.

    None when it reads better after the noun: long values, codes opening with a digit, nouns of Special
    Feature, a value sharing a word with the product type.
    """
    name = rubric.field.removeprefix("details.")
    value = str(rubric.expected_value)
    if name not in PREMODIFIERS or len(value.split()) > 2 or "/" in value or value[:1].isdigit():
        return None  # a code opening with a digit ("802.11b") reads better after the noun, and takes no "a"
    if name in ("Special Feature", "Power Source") and not reads_as_adjective(value):
        return None
    if entity and set(tokens(value)) & set(tokens(entity)):
        return None  # "Flip" of "Flip Cases": a second "flip" before the noun would read "a flip flip case"
    return speech_case(value)




def device_named(entity: str, rubrics: list[Rubric]) -> str:
    """The entity with the kind of device it fits before a bare noun: "Cases" of an iPhone 7 case -> "Phone Cases".

    A shopper asks for "a phone case", not "a case", whichever source holds the model. Only a one-word entity and
    only a phone (a compatible phone model whose series is a phone maker's: a Fitbit listed as a phone model is not).
    """
    if len(entity.split()) != 1:
        return entity
    for r in rubrics:
        if r.field == "details.Compatible Phone Models" and r.type == "attribute_match":
            if names_a_phone(str(r.expected_value)):
                return f"Phone {entity}"
    return entity


def quality_sentence(bounds: Mapping[str, RubricLike], rng: random.Random) -> str | None:
    """The rating and review-count bounds folded into one sentence, or None without either.

    "I'd like one rated at least 4 stars across 100 or more reviews.", "Show me options backed by 100 or
    more ratings.": a lead, a verb, the floor, a link and the count drawn apart, so the same bounds rarely
    read the same twice; an exclusive bound keeps template-v1's wording.
    """
    rating, count = bounds.get("average_rating"), bounds.get("rating_number")
    if rating is None and count is None:
        return None
    r = _floor(rating, "stars")
    n = _floor(count, "")
    lead = rng.choice(QUALITY_LEADS)
    if rating is not None and r is None or count is not None and n is None:
        parts = [f"rated {bound_phrase(b.field, plain_value(b))}" if b.field == "average_rating"
                 else f"backed by {bound_phrase(b.field, plain_value(b))}" for b in (rating, count) if b is not None]
        return lead.format(x=join_words(parts))
    reviews = rng.choice(COUNT_FLOORS).format(n=n) if n else None
    if r:
        stars = f"{rng.choice(RATING_VERBS)} {rng.choice(RATING_FLOORS).format(r=r)}"
        return lead.format(x=f"{stars} {rng.choice(COUNT_LINKS)} {reviews}" if reviews else stars)
    return lead.format(x=f"{rng.choice(COUNT_VERBS)} {reviews}")


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
    cap = rng.choice(PRICE_CAPS).format(p=f"${format_number(b['max'])}")
    return f"{rng.choice(PRICE_LEADS)} {cap}."


def join_clauses(parts: list[str]) -> str:
    """Phrases after the product noun, joined: "a and b"; with a serial comma when a phrase holds a comma.

    "with no added perfume, since smells give me headaches, and without any corners" (without the
    comma the second cue would read as part of the first's reason). Relative clauses ("that ...") come after the
    other phrases and are joined only with each other: "a sign made of metal that mounts on a wall", not "a sign
    made of metal and that mounts on a wall" (reviewers read that coordination as broken grammar).
    """
    relative = [p for p in parts if RELATIVE.match(p)]
    plain = [p for p in parts if not RELATIVE.match(p)]
    if plain and relative:
        return f"{_joined(plain)} {_joined(relative)}"
    return _joined(parts)


# What opens a relative clause after the product noun: a cue ("that goes up on a hook"), a property ("that's soft").
RELATIVE = re.compile(r"(?:that|which|who)\b", re.IGNORECASE)


def _joined(parts: list[str]) -> str:
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
    entity = device_named(str(entity_rubric.expected_value), rubrics)
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
    quality = quality_sentence(bounds, rng)
    tail: list[str] = [quality] if quality else []
    if opinions:
        tail.append(rng.choice(OPINIONS).format(x=join_words(opinions)))
    if rng.random() < 0.5:  # the plan: details first, or what others say first
        middle, tail = tail, middle
    money = [price_sentence(bounds["price"], rng)] if "price" in bounds else []
    for field, r in bounds.items():
        if field not in ("price", "average_rating", "rating_number"):
            money.append(f"It should be {bound_phrase(field, plain_value(r))}.")
    later = linked([*middle, *tail, *money, *budgets], rng)
    return fix_articles(" ".join([first, *later]))
