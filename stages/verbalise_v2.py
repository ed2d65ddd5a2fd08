"""Stage 5, the second offline verbaliser (template-v2, issue #14): queries that read like a shopper wrote them.

Same contract as stages/verbalise.py's `write_query` (template-v1, still selectable so older splits
regenerate): it states every query rubric and nothing else, from locked rubrics only. What changes is
the writing: the product type is always named, in natural form ("a mouse", "earbuds", "a black bumper
case"); values are said as people say them ("made of faux leather", "for ages 4 to 12", "$25 or
under"); the rating and review-count bounds are folded into one phrase ("well rated (4 stars or more)
with plenty of reviews (at least 100)"); exclusions name their field ("not in green or pink colours");
and each intent's query follows one of several sentence plans, drawn by the verbalisation stage's own
seeded generator. Each rubric type says its own value (`query_phrase_v2` in rubric_types/builtin.py,
which calls the phrase functions here); the checks that read the text (validation/semantic.py,
validation/leakage.py) accept these paraphrases through stages/lemmas.py.
"""

from __future__ import annotations

import random
import re

from rubric_types import RubricLike, bound_phrase, kind_of, plain_value
from schemas.models import Rubric
from stages.fields import FieldTable
from stages.product_naming import PLURAL_ONLY, singular_noun
from stages.replies import AGE_FIELDS, age_phrase, speech_case
from stages.text import fill, fix_articles, format_number, join_words, tokens
from stages.verbalise import _plural_verb

VERBALISER_ID = "template-v2"

OPENERS = ("I'm looking for {s}.", "I need {s}.", "I want to buy {s}.", "Can you help me find {s}?",
           "I'm shopping for {s}.", "Could you find me {s}?", "I'd like {s}.")
# The further attributes, on the singular "one" ("Ideally one made of cotton and with a floral pattern.").
MORE = ("Ideally one {x}.", "It should be one {x}.", "I'd prefer one {x}.", "Something {x} would be best.")
QUALITY = ("It should be {x}.", "I'd like one that's {x}.", "Please make sure it's {x}.")
PRICE = ("My budget is up to {p}.", "I can spend up to {p}.", "It should cost no more than {p}.",
         "I'd like to keep it to {p} or under.")
OPINIONS = ('I\'d like one whose reviews say {x}.', "Other buyers should say things like {x}.",
            "Reviews should mention {x}.")
EXCLUDE = ("I'm fine with any {label} but {values}.", "Any {label} but {values} is fine.",
           "I don't want {values} as the {label}.")
EXCLUDE_COLOUR = ("Nothing in {values} colours, please.", "I'd rather not have it in {values} colours.")

# Fields whose (short) value goes before the product noun: "a black bumper case", "a Bluetooth speaker".
PREMODIFIERS = ("Color", "Form Factor", "Connectivity Technology", "Special Feature", "Power Source")
MAX_PREMODIFIERS = 2
_ADJECTIVE = re.compile(r"(?:proof|able|ible|less|ant|ent|ive|ed|weight|free|ful|ic|al|ous|y)$", re.IGNORECASE)

# How a query states a detail value where the field table's template-v1 phrase reads stiffly.
PHRASES: dict[str, str] = {
    "Mounting Type": "in a {value} design",
    "Form Factor": "in the {value} style",
    "Connectivity Technology": "that connects over {value}",
    "Special Feature": "with {value}",
    "Power Source": "that's {value}",
    "Compatible Devices": "that works with {value}",
    "Compatible Phone Models": "that fits the {value}",
    "Recommended Uses For Product": "to use for {value}",
    "Capacity": "that holds {value}",
    "Age Range (Description)": "for {value} users",
    "Size": "in size {value}",
    "Item Form": "in {value} form",
}


def type_phrase(entity: str, premodifiers: list[str] | None = None) -> str:
    """The product type in natural form, with values before its noun: ("Mice", ["wireless"]) -> "a wireless
    mouse"; ("Earbuds", []) -> "earbuds"; ("VGA Cables", []) -> "a VGA cable"."""
    words = [w if (len(w) > 1 and w.isupper()) or any(c.isdigit() for c in w) else w.lower() for w in entity.split()]
    plural = bool(words) and words[-1].lower() in PLURAL_ONLY
    if words and not plural and words[-1].islower() and "'" not in words[-1]:  # "women's" has no singular
        words[-1] = singular_noun(words[-1])
    phrase = " ".join([*(premodifiers or []), *words])
    return phrase if plural else fix_articles("a " + phrase)


def attribute_phrase(field: str, value: str, table: FieldTable) -> str:
    """A detail value as a shopper writes it: "made of faux leather", "for ages 4 to 12", "for a 6-month-old",
    "with a 17-inch screen", "that connects over Bluetooth"."""
    spec = table.by_rubric_field(field)
    if spec.name in AGE_FIELDS:
        said = age_phrase(value)
        if said is not None:
            return f"for {said}"
    m = re.match(r"^(\d+(?:\.\d+)?)\s*(inch|inches|in)$", value.strip(), re.IGNORECASE)
    if spec.name == "Screen Size" and m:
        return f"with a {m.group(1)}-inch screen"
    said = value if spec.name == "Brand" else speech_case(value)
    return fill(PHRASES.get(spec.name, spec.query_phrase), said)


def premodifier(rubric: RubricLike, entity: str | None) -> str | None:
    """The value said before the product noun ("black", "bumper", "waterproof"), or None when it reads
    better after it (long values, nouns of Special Feature, a value ending in the product's own noun)."""
    name = rubric.field.removeprefix("details.")
    value = str(rubric.expected_value)
    if name not in PREMODIFIERS or len(value.split()) > 2 or "/" in value:
        return None
    if name in ("Special Feature", "Power Source") and not _ADJECTIVE.search(value.split()[-1]):
        return None
    if entity and set(tokens(value)) & set(tokens(entity)):
        return None  # "Flip" of "Flip Cases": a second "flip" before the noun would read "a flip flip case"
    return speech_case(value)


def quality_phrase(bounds: dict[str, RubricLike], rng: random.Random) -> str | None:
    """The rating and review-count bounds folded into one phrase ("well rated (4 stars or more) with plenty of
    reviews (at least 100)"); None without either. An exclusive bound keeps template-v1's wording."""
    rating, count = bounds.get("average_rating"), bounds.get("rating_number")
    r = _floor(rating, "stars")
    n = _floor(count, "")
    if rating is not None and r is None or count is not None and n is None:
        parts = [f"rated {bound_phrase(b.field, plain_value(b))}" if b.field == "average_rating"
                 else f"backed by {bound_phrase(b.field, plain_value(b))}" for b in (rating, count) if b is not None]
        return join_words(parts)
    if r and n:
        return rng.choice((f"well rated ({r} stars or more) with plenty of reviews (at least {n})",
                           f"rated at least {r} stars across {n} or more reviews"))
    if r:
        return rng.choice((f"rated {r} stars or higher", f"rated at least {r} stars"))
    if n:
        return rng.choice((f"well reviewed, with at least {n} reviews", f"popular, with {n} or more ratings"))
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


def exclusion_sentence(rubric: RubricLike, table: FieldTable, rng: random.Random) -> str:
    """Excluded values with their field named: "Nothing in green or pink colours, please.", "I'm fine with any
    material but plastic or metal."."""
    spec = table.by_rubric_field(rubric.field)
    values = join_words([speech_case(v) for v in rubric.expected_value], "or")  # type: ignore[union-attr]
    plans = EXCLUDE_COLOUR if spec.name == "Color" else EXCLUDE
    return _capitalise(rng.choice(plans).format(label=spec.label, values=values))


def product_type_rubric(rubrics: list[Rubric]) -> Rubric | None:
    """The query's entity rubric (what the product is), or None."""
    return next((r for r in rubrics if r.info_source == "query" and kind_of(r).query_role == "subject"), None)


def write_query_v2(rubrics: list[Rubric], table: FieldTable, rng: random.Random,
                   cues: dict[str, str] | None = None) -> str:
    """A request stating every query rubric and nothing else, in one of several sentence plans.

    Sentence 1 names the product type with up to two values before its noun and up to two phrases
    after it; the further attributes, the exclusions, the folded rating and review bounds, the
    opinions and the price or budget follow in an order the plan draws.

    Args:
        rubrics: the locked rubrics (the query's must include an entity: the caller rejects a target without).
        table: the field table.
        rng: the verbalisation stage's seeded generator (plans, openers, phrasings).
        cues: {rubric id: clause} for implicit rubrics: the clause replaces the rubric's phrase.

    Raises:
        ValueError: the query rubrics hold no entity (template-v2 always names the product type).
    """
    cues = cues or {}
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
        role = kind_of(r).query_role
        if role == "attribute":
            if r.id in cues:
                after.append(_plural_verb(cues[r.id]) if plural else cues[r.id])
                continue
            pre = premodifier(r, entity)
            if pre is not None and len(before) < MAX_PREMODIFIERS:
                before.append(pre)
            else:
                after.append(kind_of(r).query_phrase_v2(r, table, rng))
        elif role == "exclusion":
            exclusions.append(kind_of(r).query_phrase_v2(r, table, rng))
        elif role == "bound":
            bounds[r.field] = r
        elif role == "opinion":
            opinions.append(kind_of(r).query_phrase_v2(r, table, rng))
        elif role == "budget":
            budgets.append(kind_of(r).query_phrase_v2(r, table, rng))
    subject = type_phrase(entity, before)
    head, rest = after[:2], after[2:]
    opener = rng.choice(OPENERS)
    first = opener.format(s=" ".join([subject, join_words(head)]).strip())
    middle: list[str] = []
    if rest:
        middle.append(rng.choice(MORE).format(x=join_words(rest)))
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


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]
