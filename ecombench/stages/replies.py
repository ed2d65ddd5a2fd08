"""What the scripted shopper says: clarification replies that read like a person's, per field and value kind.

A reply states its slot's value in a sentence written for the field and for the kind of value:

- ages: "6 - 6 months" -> "It's for a 6-month-old.", "4 - 12 years" -> "It's for ages 4 to 12.",
  "48 months to 144 months" -> "It's for ages 4 to 12.", "15 years and up" -> "It's for ages 15
  and up." (raw Amazon ranges never reach the shopper's mouth);
- measures: "17 Inches" on a screen -> "I'd like a 17-inch screen.", "3.4 Fluid Ounces" ->
  "It needs to hold 3.4 fluid ounces.";
- numeric bounds ("at least 100 ratings"), excluded values ("Any connectivity is fine except
  cellular or RCA."), and plain values ("It should be made of faux leather.");

with the value in speech case (ordinary words lower-cased, acronyms, codes and proper names kept).
Besides the slot replies it writes the replies to questions that open nothing: the default reply
invites a more specific question, as the paper's does (reference §8), and never claims there is
nothing more to know; a question about too many things at once gets a request for one at a time.

Rubrics are read as dicts or as typed models (attribute access), so this module works on either.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from ecombench.catalog.devices import MAKER_SERIES, device_models
from ecombench.lemmas import lemmas, parts_of_speech, states_bound
from ecombench.stages.reply_forms import FORMS, POINTS, STATES_TAIL, profile_name
from ecombench.stages.value_forms import bound_phrase, value_forms
from ecombench.tables.fields import FieldSpec, FieldTable
from ecombench.text import contains_phrase, fix_articles, format_number, normalize

DEFAULT_RESPONSE = ("Could you ask me about something more specific, "
                    "like a particular feature or spec? Then I can tell you what I need.")
ONE_AT_A_TIME = "That's a lot at once. Could you ask me about one thing at a time?"

# Words that keep their capital in speech (proper names and trademarks seen in field values).
PROPER_WORDS = frozenset({
    "bluetooth", "windows", "ethernet", "android", "wi-fi", "christmas", "halloween", "easter", "thanksgiving",
    "valentine", "valentines", "velcro", "linux", "mac", "macos", "ios", "chrome", "chromebook", "apple", "iphone",
    "ipad", "samsung", "galaxy", "pixel", "lightning", "teflon", "kevlar", "lycra", "gore-tex", "father", "fathers",
    "mother", "mothers", "hanukkah", "diwali", "ramadan", "thrones", "game", "usb", "hdmi",
}) | frozenset(MAKER_SERIES) | frozenset(s for s in MAKER_SERIES.values() if s)  # device makers and their series

# The reply forms per field and kind of value live in stages/reply_forms.py (several per field, drawn with
# the verbalisation stage's generator); a field without any says its field table `reply`.
NEGATIVE = "Any {label} is fine except {values}."
NEGATIVES = (NEGATIVE, "I don't mind the {label}, as long as it's not {values}.",
             "Anything but {values} for the {label}.", "Just not {values}; any other {label} is fine.")

_UNITS = {"inch": "inch", "inches": "inch", "foot": "foot", "feet": "foot", "ounce": "ounce", "ounces": "ounce",
          "fluid ounce": "fluid ounce", "fluid ounces": "fluid ounce", "pound": "pound", "pounds": "pound",
          "milliliter": "milliliter", "milliliters": "milliliter", "millilitre": "milliliter", "liter": "liter",
          "liters": "liter", "litre": "liter", "volt": "volt", "volts": "volt", "watt": "watt", "watts": "watt",
          "gb": "GB", "tb": "TB", "mb": "MB", "mah": "mAh", "centimeter": "centimeter", "centimeters": "centimeter",
          "millimeter": "millimeter", "millimeters": "millimeter", "gram": "gram", "grams": "gram", "mm": "mm",
          "cm": "cm", "oz": "oz", "ml": "ml", "lbs": "lbs", "v": "V", "w": "W", "ft": "ft"}
_MEASURE = re.compile(r"^(\d+(?:\.\d+)?)\s*(" + "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True))
                      + r")$", re.IGNORECASE)
_LENGTHS = re.compile(r"\d\s*(?:\"|''|”|″|-?inch|-?inches|in\b|ft\b|feet|foot|cm\b|mm\b|m\b)", re.IGNORECASE)
_AGE_SPAN = re.compile(r"^(\d+)\s*(years?|months?)?\s*(?:-|–|to)\s*(\d+)\s*(years?|months?)$", re.IGNORECASE)
_AGE_UP = re.compile(r"^(\d+)\s*(years?|months?)?\s*(?:and up|and older|\+|up|plus|and over)$", re.IGNORECASE)
_COUNT = re.compile(r"\b(?:count|pack|piece|pieces|pcs|set)\b", re.IGNORECASE)
AGE_FIELDS = frozenset({"Manufacturer recommended age", "Age Range (Description)"})


def _get(obj: Any, key: str) -> Any:
    """A rubric attribute, whether the rubric is a dict or a typed model."""
    return obj[key] if isinstance(obj, dict) else getattr(obj, key)


def _plain(value: Any) -> Any:
    """A rubric value as plain data (typed bounds dumped to dicts)."""
    return value.model_dump(exclude_none=True) if hasattr(value, "model_dump") else value


def speech_case(value: str) -> str:
    """A catalog value as a person says it.

    "Faux Leather" -> "faux leather", "Shock-Absorbent" -> "shock-absorbent"; acronyms and codes ("TPU",
    "DDR4", "802.11n") and PROPER_WORDS ("Bluetooth", "Windows 10", "Wi-Fi") keep their case, and so does the
    word a proper word's possessive names ("Father's Day", "Valentine's Day") or a device maker's line ("Fitbit
    Charge 3", "Apple Watch").
    """
    def word(w: str) -> str:
        core = re.sub(r"['’]s$", "", w.strip("()[],.;:'\""))
        if not core or core.lower() in PROPER_WORDS or any(c.isdigit() for c in core):
            return w
        parts = core.split("-")
        if any(len(p) > 1 and p.isupper() for p in parts):
            return w
        if all(p[:1].isupper() and p[1:].islower() or p.islower() or not p for p in parts):
            return w.replace(core, core.lower())
        return w  # mixed case such as "iPhone": a name
    out: list[str] = []
    for w in value.split():
        named = bool(out) and out[-1][:1].isupper() and (re.search(r"['’]s$", out[-1]) is not None
                                                         or out[-1].lower() in MAKER_SERIES)
        out.append(w if named and w[:1].isupper() else word(w))
    return " ".join(out)


# The people a department is named for, said as whose range it is ("the women's range", "from the men's
# department"): the labels write "Women", "mens", "Girls" (a reviewer read "It should be from the women range." as
# no shopper's English).
_DEPARTMENT_POSSESSIVES = {"women": "women's", "womens": "women's", "woman": "women's", "men": "men's",
                           "mens": "men's", "man": "men's", "girls": "girls'", "girl": "girls'", "boys": "boys'",
                           "boy": "boys'", "kids": "kids'", "kid": "kids'", "children": "children's",
                           "child": "children's"}


def department_said(said: str) -> str:
    """A department value, already in speech case, as whose range it is.

    >>> department_said("women"), department_said("mens"), department_said("men's"), department_said("unisex")
    ("women's", "men's", "men's", 'unisex')
    """
    return " ".join(_DEPARTMENT_POSSESSIVES.get(w.lower(), w) for w in said.split())


def _years(n: int, unit: str) -> tuple[int, str]:
    """Months that make whole years are said in years (48 months -> 4 years)."""
    if unit.startswith("month") and n >= 24 and n % 12 == 0:
        return n // 12, "year"
    return n, "year" if unit.startswith("year") else "month"


def age_phrase(value: str) -> str | None:
    """How a person says an age value, or None for a value that is not a number of years or months.

    >>> age_phrase("6 - 6 months"), age_phrase("4 - 12 years"), age_phrase("15 years and up")
    ('a 6-month-old', 'ages 4 to 12', 'ages 15 and up')
    >>> age_phrase("48 months to 144 months"), age_phrase("13+")
    ('ages 4 to 12', 'ages 13 and up')
    """
    v = " ".join(value.split())
    m = _AGE_SPAN.match(v)
    if m:
        lo_unit = m.group(2) or m.group(4)
        lo, lo_u = _years(int(m.group(1)), lo_unit)
        hi, hi_u = _years(int(m.group(3)), m.group(4))
        if lo == hi and lo_u == hi_u:
            return f"a {lo}-{lo_u}-old"
        if lo_u == hi_u == "year":
            return f"ages {lo} to {hi}"
        return f"{lo} {lo_u}s to {hi} {hi_u}s old" if lo_u == hi_u else f"ages {lo} {lo_u}s to {hi} {hi_u}s"
    m = _AGE_UP.match(v)
    if m:
        n, unit = _years(int(m.group(1)), m.group(2) or "years")
        return f"ages {n} and up" if unit == "year" else f"babies {n} months and older"
    return None


def spoken_forms(value: Any, field: str) -> list[str]:
    """The ways a reply may state `value` besides the value itself ("a 6-month-old" for "6 - 6 months").

    So checks that a reply reveals its value, or that a query hides it, know the spoken spelling.
    """
    name = field.removeprefix("details.")
    if name in AGE_FIELDS and isinstance(value, str):
        phrase = age_phrase(value)
        return [phrase.removeprefix("a ")] if phrase else []
    return []


def reply_states(reply: str, value: Any, field: str) -> bool:
    """True when a reply reveals `value`.

    It holds every form of the value (ecombench.stages.value_forms.value_forms, token-aware) or the value's spoken
    form ("a 6-month-old"). Stage 6's slot completeness and stage 7's clarification check both ask this.
    """
    value = _plain(value)
    return (all(contains_phrase(reply, f) for f in value_forms(value, field))
            or any(contains_phrase(reply, f) for f in spoken_forms(value, field)))


# A value that describes the product ("Waterproof", "Scratch Resistant", "Wired") rather than naming a part or a
# thing it has ("Kickstand", "Card Slots", "Built-in Screen Protector", "Bluetooth"), told by its last word.
_ADJECTIVE = re.compile(r"(?:proof|able|ible|less|ant|ent|ive|ed|weight|free|ful|ic|al|ous|safe|sided|slim|solar|"
                        r"out|ing|[^e]ry|y|^compact|^soft|^strong|^nonstick)$", re.IGNORECASE)
_NOUN_WORDS = frozenset({"charging", "lighting", "padding", "lining", "stitching", "embroidery", "battery", "memory",
                         "body", "key", "display", "tray", "strap", "cord", "pocket", "alarm", "design", "stand"})
# Endings of nouns naming a quality or an action ("protection", "durability", "resistance", "adjustment").
_QUALITY_NOUN = re.compile(r"(?:tion|sion|ity|ness|ance|ence|ment)$", re.IGNORECASE)
# "Easy to Install": a reply read "One thing it really must have: an easy to install."
_ADJECTIVE_PREFIXES = ("anti", "non", "multi", "extra", "ultra", "self", "double", "heavy", "easy")


def reads_as_adjective(value: str) -> bool:
    """True when a value describes the product, False when it names a thing the product has.

    Describes: "durable", "dust proof", "wired", "anti-slip"; has: "card slots", "kickstand", "wireless
    charging", "Bluetooth".

    >>> [reads_as_adjective(v) for v in ("Shock-Absorbent", "Microwave Safe", "Card Slots", "Wireless Charging")]
    [True, True, False, False]
    >>> reads_as_adjective("Easy to Install"), reads_as_adjective("Compact")
    (True, True)
    >>> reads_as_adjective("Heavy Duty Protection"), reads_as_adjective("Durability")
    (False, False)
    """
    words = re.split(r"[\s-]+", value.strip().lower())
    last = words[-1] if words else ""
    # "Heavy Duty Protection", "Durability": a noun of a quality whatever its first word ("I really need it to be
    # heavy duty protection." was read as broken grammar)
    if last in _NOUN_WORDS or _QUALITY_NOUN.search(last):
        return False
    return bool(_ADJECTIVE.search(last)) or (len(words) > 1 and words[0] in _ADJECTIVE_PREFIXES)


# Fields whose "plain" values are things the product has, said with an article when one is countable:
# "It has to come with a kickstand.", "... with card slots.", "... with wireless charging.".
_THING_FIELDS = frozenset({"Special Feature"})
_MASS = re.compile(r"(?:ing|tion|sion|ery|ness|ware|s)$", re.IGNORECASE)


def _thing(said: str) -> str:
    """A feature noun with its article where English needs one ("a kickstand"; "card slots", "drop protection")."""
    last = said.split()[-1] if said.split() else ""
    return said if _MASS.search(last) and not last.endswith("ss") else f"a {said}"


def _value_kind(spec: FieldSpec, value: str) -> tuple[str, dict[str, str]]:
    m = _MEASURE.match(" ".join(value.split()))
    if m:
        unit = _UNITS[m.group(2).lower()]
        return "measure", {"number": m.group(1), "unit": unit}
    if spec.name == "Size" and _LENGTHS.search(value):
        return "measure", {}
    if spec.name == "Size" and _COUNT.search(value):
        return "count", {}
    if spec.name == "Product Care Instructions":
        return care_kind(value), {}
    if spec.name in _USE_FIELDS:
        return use_kind(value), {}
    if spec.name == "Occasion":
        return _occasion_kind(value), {}
    if spec.name == "Age Range (Description)":
        # "Kids", "Toddlers", "Adults" name a group, said bare: "It's for kids.", not "It's for a kids."
        words = value.lower().split()
        return ("group" if len(words) == 1 and words[0] not in ("kid", "child", "adult") and
                any(lemma != words[0] for lemma in lemmas(words[0]) if lemma) else "plain"), {}
    if spec.name in _SHAPE_OR_THEME:
        # "heart" and "star" are shapes as nouns ("heart-shaped"); "square" and "round" describe; a theme "Funny"
        # or "Vintage" describes, "Animals" or "Christmas" is what it shows
        words = value.lower().split()
        if len(words) == 1 and "ADJ" in parts_of_speech(words[0]):
            return "adjective", {}
        return ("noun" if spec.name == "Shape" and len(words) == 1 and "NOUN" in parts_of_speech(words[0])
                else "plain"), {}
    if "adjective" in FORMS.get(spec.name, {}) and reads_as_adjective(value):
        return "adjective", {}  # "It has to be waterproof." where a feature noun reads "It has to have a kickstand."
    return "plain", {}


_SHAPE_OR_THEME = frozenset({"Shape", "Theme"})
# Fields whose value is what the product is used for: "for travel", "for outdoor use", "for the car".
_USE_FIELDS = frozenset({"Recommended Uses For Product"})
# Nouns said without an article although they end like countable ones, and nouns that lemminflect also knows as
# adjectives with another sense ("light use" is use that is not heavy). English, not the catalog: a catalog's
# telegraphic titles do not tell "a car" from "travel".
_UNCOUNTABLE = frozenset({"travel", "coffee", "tea", "business", "rain", "snow", "fruit", "soup", "decor", "décor",
                          "music", "fitness", "storage", "furniture", "luggage", "makeup", "hair", "skin", "water",
                          "food", "therapy", "aromatherapy", "stationery", "jewelry", "use", "salad", "dessert",
                          "cereal"})
_NOT_USE_ADJECTIVES = frozenset({"light", "vegetable", "cereal", "fruit", "festival"})


def use_kind(value: str) -> str:
    """The kind of a use value, so its reply reads as English.

    "adjective" ("Outdoor", "Decorative", "Personal": "for outdoor use"), "plain" (an activity, a plural or
    something uncountable: "Travel", "Gaming", "Cold Drinks", "Home Decor", "Privacy": "for travel") or "thing"
    (a countable thing or place: "Car", "Garden", "Christmas Tree": "for the car").

    >>> [use_kind(v) for v in ("Outdoor", "Home", "Travel", "Camping", "Nail Arts", "Security", "Car", "Light")]
    ['adjective', 'adjective', 'plain', 'plain', 'plain', 'plain', 'thing', 'thing']
    """
    words = value.lower().split()
    last = words[-1] if words else ""
    if len(words) == 1 and last not in _NOT_USE_ADJECTIVES and ("ADJ" in parts_of_speech(last) or (
            not parts_of_speech(last) and reads_as_adjective(last) and not last.endswith(("ing", "y")))):
        return "adjective"
    if (last in _UNCOUNTABLE or last.endswith(("ing", "ity", "cy", "ness", "ion")) or last not in lemmas(last)
            or (last.endswith("s") and not last.endswith("ss"))):
        return "plain"
    return "thing"


# Events people give presents for: "a birthday gift", "a Father's Day present" (English, not the catalog).
_GIFT_EVENTS = frozenset({"birthday", "birthdays", "christmas", "wedding", "anniversary", "halloween", "graduation",
                          "thanksgiving", "easter", "hanukkah", "engagement", "retirement", "housewarming", "prom",
                          "holiday", "holidays", "thank you", "new year", "bridal shower", "baby shower"})
_GIFT_EVENT_ENDS = frozenset({"day", "shower", "eve"})  # the last word of "Father's Day", "Bridal Shower"
# Countable events and places an occasion label names: "for a picnic", "at a coffee shop".
_EVENT_NOUNS = frozenset({"party", "picnic", "shop", "office", "festival", "dinner", "event", "barbecue",
                          "cookout", "reunion", "game", "restaurant", "bar", "cafe", "ceremony"})


def _occasion_kind(value: str) -> str:
    """The kind of an Occasion value, so its reply reads as English (`reply_forms.FORMS`).

    "plain" (an event one gives presents for: "Birthday", "Father's Day": "a birthday gift"), "thing" (a countable
    event or place: "Picnic", "Coffee Shop": "for a picnic") or "season" (anything else, said bare: a season, a use,
    who it is for: "Spring", "Travel", "Women", "Home Decor"). The shared catalog's Occasion labels hold all three.

    >>> [_occasion_kind(v) for v in ("Birthday", "Father's Day", "Spring", "Travel", "Women", "Picnic", "Coffee Shop")]
    ['plain', 'plain', 'season', 'season', 'season', 'thing', 'thing']
    """
    low = " ".join(value.lower().replace("’", "'").split())
    if low in _GIFT_EVENTS or (len(low.split()) > 1 and low.split()[-1] in _GIFT_EVENT_ENDS):
        return "plain"
    return "thing" if low.split()[-1:] and low.split()[-1] in _EVENT_NOUNS else "season"


def care_kind(value: str) -> str:
    """The kind of a care instruction, so its reply reads as English.

    "adjective" ("Dishwasher Safe", "Machine Washable"), "label" (words that are no action: "Hand Wash Only",
    "Do Not Bleach", "Water") or "plain" (an action: "Machine Wash", "Wipe with Dry Cloth"); the examples are the
    shared catalog's Product Care Instructions labels.
    """
    words = value.lower().replace("_", " ").split()
    if words and (words[-1] == "safe" or words[-1].endswith("able")):
        return "adjective"
    if len(words) < 2 or {"only", "not", "no", "it"} & set(words):
        return "label"
    return "plain"


def _join(parts: list[str], word: str = "or") -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" {word} " + parts[-1]


def _fill(template: str, value: str) -> str:
    """Put a value into a template without doubling the template's noun ("a barrel connector connector")."""
    pre, _, post = template.partition("{value}")
    noun = post.rstrip(".!?")
    tail = normalize(noun).split()
    if tail and normalize(value).split()[-len(tail):] == tail:
        post = post[len(noun):]
    return f"{pre}{value}{post}"


def _choose(texts: list[str], rng: random.Random | None, states: Callable[[str], bool]) -> str:
    """One of the rendered forms: the first without a generator, else a seeded draw among those that state the value.

    A form whose sentence does not state the value (a unit the form cannot carry) is never drawn; when none
    does, the first form is said (stage 6 then reports the slot, as it would any reply).
    """
    if rng is None:
        return texts[0]
    ok = [t for t in texts if states(t)] or texts[:1]
    return rng.choice(ok)


def _one_end(field: str, bound: dict[str, Any]) -> tuple[str, str] | None:
    """("max" | "min", the number with its unit: "$25", "4.5", "100") for a one-ended inclusive bound, else None."""
    ends = [e for e in ("min", "max") if bound.get(e) is not None]
    if len(ends) != 1 or not bound.get(f"{ends[0]}_inclusive", True):
        return None
    n = format_number(float(bound[ends[0]]))
    return ends[0], f"${n}" if field == "price" else n


def bound_reply(field: str, bound: Any, table: FieldTable, rng: random.Random | None = None) -> str:
    """A numeric bound said aloud: "I can spend no more than $20 on it.", "I trust things with 100 or more reviews.".

    Args:
        field: price, average_rating or rating_number.
        bound: the NumericBound (or its dict).
        table: the field table (a field without reply forms says its table `reply`).
        rng: the verbalisation stage's generator; None says the first form.
    """
    spec = table.by_rubric_field(field)
    plain = _plain(bound)
    end = _one_end(field, plain)
    forms = FORMS.get(spec.name, {}).get(end[0], ()) if end else ()
    fallback = _capital(spec.reply.replace("{bound}", "{value}").format(value=bound_phrase(field, plain)))
    if not forms or end is None:
        return fallback
    texts = [_capital(f.format(n=end[1])) for f in forms]
    return _choose(texts, rng, lambda t: states_bound(t, field, plain))


def exclusion_reply(field: str, values: list[str], table: FieldTable, rng: random.Random | None = None) -> str:
    """Excluded values said aloud: "Any colour is fine except green or pink.", "Just not green or pink; ...".

    Args:
        field: the rubric field.
        values: the excluded values.
        table: the field table (the label).
        rng: the verbalisation stage's generator; None says the first form.
    """
    spec = table.by_rubric_field(field)
    said = _join([speech_case(v) for v in values])
    # no article fixing here: a value such as "USB Type A" holds a capital "A" that is no article
    texts = [_capital(f.format(label=spec.label, values=said)) for f in NEGATIVES]
    return _choose(texts, rng, lambda t: all(contains_phrase(t, v) for v in values))


def value_reply(field: str, value: str, table: FieldTable, rng: random.Random | None = None) -> str:
    """One value said aloud, in one of the field's reply forms for its kind (stages/reply_forms.py).

    Ages ("It's for a 6-year-old."), measures ("I'd like a 10.1-inch screen."), counts, or plain values
    in speech case.

    Args:
        field: the rubric field ("details.Material").
        value: the value as the rubric holds it.
        table: the field table.
        rng: the verbalisation stage's generator; None says the field's first form.
    """
    spec = table.by_rubric_field(field)
    forms = FORMS.get(spec.name, {})

    def states(text: str) -> bool:
        return reply_states(text, value, field)

    if spec.name in AGE_FIELDS:
        phrase = age_phrase(value)
        if phrase is not None:
            ages = forms.get("age", ("It's for {age}.",))
            return _choose([_capital(fix_articles(f.format(age=phrase))) for f in ages], rng, states)
    value_kind, parts = _value_kind(spec, value)
    templates = forms.get(value_kind) or forms.get("plain") or (spec.reply,)
    said = re.sub(r"\s*\(([^()]*)\)", r", \1", value)  # "1 Count (Pack of 12)" -> "1 count, pack of 12"
    said = said if spec.name == "Brand" else speech_case(said)  # a maker's name keeps its case, as in queries
    if spec.name == "Department":
        said = department_said(said)
    if value_kind == "plain" and spec.name in _THING_FIELDS:
        said = _thing(said)
    if "{number}" in templates[0]:
        texts = [_capital(fix_articles(t.format(number=parts["number"], unit=parts["unit"]))) for t in templates]
    else:
        texts = [_capital(fix_articles(_fill(t, said))) for t in templates]
    return _choose(texts, rng, states)


# The series of phones (ecombench.catalog.devices.MAKER_SERIES: the series a phone maker's labels name).
PHONE_SERIES = frozenset(s for s in MAKER_SERIES.values() if s)


def names_a_phone(value: str) -> bool:
    """Whether a compatible device value is a phone: a model of a phone maker's series ("iPhone 8", "Galaxy S21").

    The labels list watches as phone models too ("Fitbit Versa 3" of a band's "Compatible Phone Models").
    """
    return any(m.series.split()[0] in PHONE_SERIES for m in device_models(value) if m.series)


def profile_reply(rubric: Any, table: FieldTable, rng: random.Random | None, said: str) -> tuple[str, str]:
    """The reply to a question about a requirement the persona holds: (mode, reply).

    Never a denial. Mode "points" sends the agent to the profile without the value ("That's in my profile:
    I saved my phone model there.", "... the material I want ..."), so an agent that never reads the profile
    learns nothing by asking;
    mode "states" says the value as `said` gives it (the rubric type's reply) and mentions the profile
    ("It's for my iPhone 8. It's in my profile too."). The mode is drawn with `rng` (None: "points").

    Args:
        rubric: the persona rubric (dict or typed model).
        table: the field table (the field's label).
        rng: the verbalisation stage's generator.
        said: the rubric type's reply stating the value.
    """
    spec = table.by_rubric_field(_get(rubric, "field"))
    mine = profile_name(spec.name, spec.label)
    if spec.name == "Compatible Phone Models" and not names_a_phone(str(_get(rubric, "expected_value"))):
        mine = profile_name("Compatible Devices", spec.label)  # a reviewed Fitbit band's "my phone model"
    mode = "points" if rng is None else rng.choice(("points", "states"))
    if mode == "points":
        form = POINTS[0] if rng is None else rng.choice(POINTS)
        return mode, _capital(form.format(mine=mine))
    tail = STATES_TAIL[0] if rng is None else rng.choice(STATES_TAIL)
    return mode, said + tail


def reply_form(reply: str, values: list[str]) -> str:
    """A reply with its value masked: the sentence form it used, to count how often forms repeat.

    Every given spelling of the value (longest first, whole words, any case) becomes "{v}", every number
    "{n}"; the rest is lower-cased with single spaces. Works on template and LLM replies alike.

    >>> reply_form("I'd like it made of faux leather.", ["Faux Leather"])
    "i'd like it made of {v}."
    """
    text = reply
    for v in sorted({v for v in values if v.strip()}, key=len, reverse=True):
        text = re.sub(r"(?<!\w)" + re.escape(v) + r"(?!\w)", "{v}", text, flags=re.IGNORECASE)
    text = re.sub(r"\$?\d+(?:[.,]\d+)*", "{n}", text)
    return " ".join(text.lower().split())


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def no_preference_reply(labels: list[str]) -> str:
    """The reply to a question about fields the shopper keeps no hidden requirement on.

    True for those fields only, never a claim that nothing else is left.
    """
    return (f"I don't have a particular {_join(labels, 'or')} in mind beyond what I've told you. "
            "Is there something else specific you'd like to know?")

