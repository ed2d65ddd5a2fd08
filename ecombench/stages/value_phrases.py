"""How template-v2 says one requirement: a detail value and an exclusion, as a shopper writes them.

Each rubric type's `query_phrase_v2` (ecombench.stages.phrasing) calls these; ecombench.stages.verbalise_v2
composes the phrases into sentence plans.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from lemminflect import getAllLemmas, getInflection

from ecombench.stages.product_naming import singular_noun
from ecombench.stages.replies import (
    AGE_FIELDS,
    PROPER_WORDS,
    age_phrase,
    care_kind,
    department_said,
    speech_case,
    use_kind,
)
from ecombench.tables.fields import FieldTable
from ecombench.text import fill, fix_articles, join_words, normalize

# Each keeps what the diligent agent reads (ecombench.sandbox.agents): "any <label> but <values>", "I don't want
# <values> as the <label>", "nothing / not / anything in <values> colours". No two share a run of five words
# around the label and values (a split's queries excluding one value would repeat it).
EXCLUDE = ("I'm fine with any {label} but {values}.", "Any {label} but {values} is fine.",
           "I don't want {values} as the {label}.", "I'll take any {label} but {values}.",
           "Happy to get any {label} but {values}.", "Honestly, any {label} but {values} suits me.",
           "I'm open to any {label} but {values}.", "I'd settle for any {label} but {values}.",
           "Give me any {label} but {values}.", "Really, any {label} but {values}.")
EXCLUDE_COLOUR = ("Nothing in {values} colours, please.", "I'd rather not have it in {values} colours.",
                  "Please, not in {values} colours.", "Skip anything in {values} colours.",
                  "I'd avoid anything in {values} colours.", "Not in {values} colours, though.")

# How a query states a detail value where the field table's template-v1 phrase reads stiffly.
PHRASES: dict[str, str] = {
    "Form Factor": "in the {value} style",
    "Connectivity Technology": "that connects over {value}",
    "Power Source": "that's {value}",
    "Compatible Devices": "that works with {value}",
    "Compatible Phone Models": "that fits the {value}",
    "Capacity": "that holds {value}",
    "Size": "in size {value}",
    "Item Form": "in {value} form",
}


# A feature said as a property ("that's microwave safe") rather than a thing it has ("with a kickstand").
_PROPERTY = re.compile(r"(?:proof|able|ible|less|ant|ent|ive|ed|weight|free|ful|ic|al|ous|safe|compatible|slip|y)$",
                       re.IGNORECASE)


def _plural(word: str) -> str:
    """The plural of a lower-case noun by lemminflect ("adult" -> "adults", "child" -> "children")."""
    found = getInflection(word, tag="NNS")
    return found[0] if found else word + "s"


def _is_plural(word: str) -> bool:

    return singular_noun(word) != word


# Last words of a feature that is a kind of thing, not one thing: "with drop protection", "with data transfer".
_MASS = re.compile(r"(?:ion|ity|ery|ness|ance|ence|transfer)$", re.IGNORECASE)


def _feature(said: str) -> str:
    """A Special Feature value: a property "that's ...", a part "with a ...", a kind of thing "with ...".

    "that's microwave safe", "that's easy to use", "that's soft" (one word lemminflect knows only as an adjective),
    "that's rotating", "that's non stick"; "with a kickstand", "with an alarm", "with card slots", "with wireless
    charging", "with drop protection", "with data transfer".
    """
    words = said.split()
    last = words[-1].lower()
    lemmas = list(getAllLemmas(last))
    if _MASS.search(last):
        return f"with {said}"
    if (_PROPERTY.search(last) or " to " in f" {said.lower()} " or words[0].lower() in ("non", "anti")
            or (last.endswith("ing") and "ADJ" in lemmas)
            or (len(words) == 1 and (lemmas[:1] == ["ADJ"] or last.endswith("ing")))):
        return f"that's {said}"
    if _is_plural(last) or last.endswith("ing"):
        return f"with {said}"
    return fix_articles(f"with a {said}")


# Where a product goes, by a word of its Mounting Type value ("Wall Mount": "that mounts on a wall").
_PLACES = {"wall": "a wall", "ceiling": "the ceiling", "window": "a window", "windshield": "the windshield",
           "door": "a door", "floor": "the floor", "tabletop": "a tabletop", "desk": "a desk"}
# A value that is its place alone: how that place holds it.
_PLACE_VERBS = {"floor": "stands", "tabletop": "sits", "desk": "sits"}
_ALONE = {"hanging": "that hangs up", "freestanding": "that's freestanding", "adhesive": "that sticks on with adhesive"}


def _mounting(value: str, table_phrase: str) -> str:
    """A Mounting Type value as a shopper says it, keeping its words (stage 7 reads them).

    "that mounts on a wall" (Wall Mount, Wall), "that stands on the floor" (Floor Standing), "that sits on a
    tabletop" (Tabletop), "that hangs up" (Hanging); a value listing several ways ("Wall Mount, Tabletop") or one
    naming no place here keeps the table's phrase without a doubled noun ("with flush mounting").
    """
    words = normalize(value).replace("table top", "tabletop").replace("free standing", "freestanding").split()
    places = [w for w in words if w in _PLACES]
    if "," not in value and len(places) == 1:
        place = places[0]
        if "mount" in words:
            return f"that mounts on {_PLACES[place]}"
        if "standing" in words:
            return f"that stands on {_PLACES[place]}"
        if words == [place]:
            return f"that {_PLACE_VERBS.get(place, 'mounts')} on {_PLACES[place]}"
    if len(words) == 1 and words[0] in _ALONE:
        return _ALONE[words[0]]
    return fill(table_phrase, speech_case(re.sub(r"(?i)\s+mount$", "", value.strip())))


def _age_group(value: str, said: str) -> str:
    """An age group said of people: "for adults", "for kids", "for all ages"; other values as the table says."""
    words = said.split()
    if len(words) == 1 and words[0].isalpha():
        return f"for {said if _is_plural(said.lower()) else _plural(said)}"
    if said.lower() in ("all ages", "all age groups"):
        return f"for {said.lower()}"
    return f"for {said} users"


def _occasion(value: str, said: str) -> str:
    """An occasion: a holiday by its name ("for Christmas", "for Mother's Day"), an event with its article.

    "for a birthday", "for a wedding"; a list of occasions without one.
    """
    words = [w.strip(",.") for w in value.lower().split()]
    if words and (words[-1] == "day" or words[0] in PROPER_WORDS):
        return f"for {value}"
    return f"for {said}" if "," in value else f"for a {said}"


def _frame_type(said: str) -> str:
    """A frame type: "that comes framed", "that comes unframed"; a kind of frame "of the poster frame type"."""
    if len(said.split()) == 1 and said.lower().endswith(("ed", "less")):
        return f"that comes {said}"
    return f"of the {said} type"


# How a query says a care instruction that is an action ("Machine Wash"): each keeps the value's words.
CARE_ACTIONS = ("that you can {value}", "that's safe to {value}", "that I can {value}")


def _care(value: str, said: str, table_phrase: str, rng: random.Random | None) -> str:
    """A care instruction as something done to the product or a property of it, keeping its words (stage 7 reads them).

    "that you can machine wash" (Machine Wash; `rng` draws among CARE_ACTIONS, None takes the first), "that's
    dishwasher safe"; a label that is no action ("Water") keeps the table's phrase. A reviewer read "a cover
    labelled machine wash" as unnatural.
    """
    kind = care_kind(value)
    if kind == "adjective":
        return f"that's {said}"
    if kind == "plain":
        return (rng.choice(CARE_ACTIONS) if rng is not None else CARE_ACTIONS[0]).format(value=said)
    return fill(table_phrase, said)


# A use by its kind (ecombench.stages.replies.use_kind): "a sign for outdoor use", "a phone holder for the car", "a mug
# for travel"; a reviewer read "a sign to use for outdoor" as unnatural.
_USES = {"adjective": "for {value} use", "thing": "for the {value}", "plain": "for {value}"}


def attribute_phrase(field: str, value: str, table: FieldTable, rng: random.Random | None = None) -> str:
    """A detail value as a shopper writes it.

    "made of faux leather", "for ages 4 to 12", "for a 6-month-old", "with a 17-inch screen",
    "that connects over Bluetooth".

    Args:
        field: the rubric field ("details.Material").
        value: the rubric's expected value.
        table: the field table (its query phrase where PHRASES has none).
        rng: the verbalisation's plan generator, where a value has several wordings; None takes the first.
    """
    spec = table.by_rubric_field(field)
    if spec.name in AGE_FIELDS:
        said = age_phrase(value)
        if said is not None:
            return f"for {said}"
    m = re.match(r"^(\d+(?:\.\d+)?)\s*(inch|inches|in)$", value.strip(), re.IGNORECASE)
    if spec.name == "Screen Size" and m:
        return f"with a {m.group(1)}-inch screen"
    said = value if spec.name == "Brand" else speech_case(value)
    if spec.name == "Special Feature":
        return _feature(said)
    if spec.name == "Age Range (Description)":
        return _age_group(value, said)
    if spec.name == "Occasion":
        return _occasion(value, said)
    if spec.name == "Frame Type":
        return _frame_type(said)
    if spec.name == "Mounting Type":
        return _mounting(value, spec.query_phrase)
    if spec.name == "Product Care Instructions":
        return _care(value, said, spec.query_phrase, rng)
    if spec.name == "Department":
        said = department_said(said)
    if spec.name == "Recommended Uses For Product":
        return fill(_USES[use_kind(value)], said)
    return fill(PHRASES.get(spec.name, spec.query_phrase), said)


def exclusion_sentence(field: str, values: Sequence[str], table: FieldTable, rng: random.Random) -> str:
    """Excluded values with their field named.

    "Nothing in green or pink colours, please.", "I'm fine with any material but plastic or metal.".

    Args:
        field: the negative rubric's field.
        values: the excluded values.
        table: the field table (the field's label).
        rng: the verbalisation stage's generator (draws the wording).
    """
    spec = table.by_rubric_field(field)
    # a brand is a name: said as the catalog writes it ("OtterBox", "Lenox"), never lower-cased
    said = join_words([v if spec.name == "Brand" else speech_case(v) for v in values], "or")
    plans = EXCLUDE_COLOUR if spec.name == "Color" else EXCLUDE
    text = rng.choice(plans).format(label=spec.label, values=said)
    return text[:1].upper() + text[1:]
