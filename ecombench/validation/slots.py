"""The clarification slot matcher: what a shopper's question is about, and which slots it opens.

One matcher for validation (stage 6) and the sandbox's `ask_user`. It reads a question the way a
person hears it, deterministically and explainably:

- words are compared as lemmas (ecombench.lemmas), whole words only, so "holding" is "hold",
  "children" is "child", and "use" never matches inside "user" (the reference's two-way substring
  test opened slots on "the" and "use", §15.23);
- a question *names a field* through the field table's vocabulary for it (label, keywords,
  paraphrases in tables/fields.toml, so the vocabulary is data in the config hash); two of a
  field's common values ("glossy or matte?") ask about the field, and so does a guess at one of
  them ("Is it glossy?") when the question names no field: a person answers it with what they want
  (a topic beside it does not change that: "Would velcro be easier for your kid?"). A value several
  fields hold ("Christmas": an occasion and a theme), or values of several fields ("solid wood": a
  pattern and a material), guess at each of those fields, and the slot of whichever the task has
  opens; topics ("How old is the child?") name a group of fields;
- an adjective that names a field ("cheap") and stands right before another field's value
  ("cheap plastic") describes that value, and a kind word after one ("wallet-style") only says "of that
  kind" (`kind_words`): the question is about the value's field;
- besides the table's values, a field's values include those its catalog's labels carry often enough
  (`catalog_values`: "Are you thinking stainless steel?" guesses a material on a snapshot where 500
  products' labels say so), so a new category brings its own;
- an idiom of the table ("open to") names nothing, and the words in it name nothing either;
- a money amount ("Under $50?") names the table's `amount_field` (price);
- a match overlapping a longer one is dropped, so "What screen size?" names screen size, not
  size (and of two as long, a field's term beats a topic or value);
- a slot opens when its field is named (or, when the task has no slot of the named field, the
  field's first `fallback` with a slot); a topic opens the slot of the first field of its group
  that the task has (two topics sharing fields count as the first of them);
- a question naming more than `max_fields_per_question` fields or topics (3 by default) opens
  nothing: listing field names gains nothing.

A slot whose field the table does not know (an imported record) opens on its own trigger keywords,
matched as whole lemma phrases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import polars as pl

from ecombench.catalog.facts import CatalogFacts, surface_text
from ecombench.lemmas import adjective_of, adjective_only, lemma_key, lemmas, same_phrase, words
from ecombench.schemas.findings import Finding
from ecombench.tables.fields import FieldTable, load_field_table

_Key = tuple[frozenset[str], ...]


@dataclass(frozen=True)
class Reading:
    """What one question is about, independent of any task.

    Attributes:
        fields: canonical names of the fields the question names, in question order.
        topics: for each topic it raises, the topic's fields.
        matched: (phrase of the vocabulary, what it named) for every match kept, for explanations.
        guess: the field named comes from a guess at one of its values ("Is it glossy?"), or `choices` holds
            the guessed fields: a shopper with nothing hidden there answers with the inviting reply, not
            "no preference" on the field.
        choices: the fields a guess may be about when its values belong to several fields, in table order of
            first appearance in the question ("Are you shopping for Christmas?": Occasion, Theme); empty
            otherwise. A task's slots of any of them open.
    """

    fields: tuple[str, ...]
    topics: tuple[tuple[str, ...], ...]
    matched: tuple[tuple[str, str], ...]
    guess: bool = False
    choices: tuple[str, ...] = ()

    @property
    def subjects(self) -> int:
        """How many things the question asks about (fields, topics, one guess): the "one thing at a time" count."""
        return len(self.fields) + len(self.topics) + bool(self.choices)


@dataclass(frozen=True)
class Answer:
    """The matcher's verdict on one question against one task's slots.

    Attributes:
        opened: slot ids the question opens, in slot order.
        reading: what the question was about.
        too_many: it named more than the table's `max_fields_per_question` things, so opened is empty.
    """

    opened: tuple[str, ...]
    reading: Reading
    too_many: bool = False


@lru_cache(maxsize=8)
def _vocabulary(table: FieldTable) -> dict[str, list[tuple[_Key, str, str, str]]]:
    """First-word lemma -> [(lemma key, phrase, kind, owner)] of the whole table.

    kind is field, value, topic, weak (a weak topic) or idiom.
    """
    index: dict[str, list[tuple[_Key, str, str, str]]] = {}

    def add(phrase: str, kind: str, owner: str) -> None:
        key = lemma_key(phrase)
        if key:
            for lemma in key[0]:
                index.setdefault(lemma, []).append((key, phrase, kind, owner))

    for spec in table.fields.values():
        for phrase in dict.fromkeys((spec.label, *spec.keywords, *spec.paraphrases)):
            add(phrase, "field", spec.name)
        for phrase in spec.values:
            add(phrase, "value", spec.name)
    for i, topic in enumerate(table.topics):
        for phrase in topic.terms:
            add(phrase, "weak" if topic.weak else "topic", str(i))
    for phrase in table.idioms:
        add(phrase, "idiom", "")
    return index


def _matches(ws: tuple[str, ...],
             index: dict[str, list[tuple[_Key, str, str, str]]]) -> list[tuple[int, int, str, str, str]]:
    """Every (start, end, phrase, kind, owner) of the vocabulary in the words, whole words only."""
    found = set()
    word_lemmas = [lemmas(w) | adjective_of(w) for w in ws]  # "portability" also reads as "portable"
    for i, ls in enumerate(word_lemmas):
        for lemma in ls:
            for key, phrase, kind, owner in index.get(lemma, ()):
                n = len(key)
                if i + n <= len(ws) and all(word_lemmas[i + j] & key[j] for j in range(n)):
                    found.add((i, i + n, phrase, kind, owner))
    return sorted(found)


# A money amount: "$50", "£ 20", "40 dollars", "30 bucks".
_AMOUNT = re.compile(r"[$£€]\s?\d|\b\d+(?:\.\d+)?\s?(?:dollars?|bucks|usd)\b", re.IGNORECASE)


@lru_cache(maxsize=20_000)
def read_question(question: str, table: FieldTable) -> Reading:
    """What a question is about (see the module docstring for the rules).

    Args:
        question: the agent's question.
        table: the field table (vocabulary, topics).

    Returns:
        A Reading; fields and topics are empty for a generic question ("Anything else?").
    """
    found = _matches(words(question), _vocabulary(table))
    rank = {"idiom": 2, "field": 1, "topic": 0}

    def beaten(m: tuple[int, int, str, str, str]) -> bool:
        # A match yields to a field term or topic it overlaps that is longer, or as long and naming a
        # field ("what age range": the field "age range", not the topic "what age"). Weak topics never push a
        # field term out: they count only when nothing else is named. A match also yields to a longer value it
        # overlaps ("stainless steel", a material, not "stainless", a handle material; "dishwasher safe", a
        # value, not "dishwasher", a care term).
        return any(s < m[1] and m[0] < e
                   and ((k in rank and ((e - s) > (m[1] - m[0])
                                        or ((e - s) == (m[1] - m[0]) and rank[k] > rank.get(m[3], -1))))
                        or (k == "value" and m[3] in ("value", "field") and (e - s) > (m[1] - m[0])))
                   for s, e, _, k, _ in found)

    kept = [m for m in found if not beaten(m)]
    ws = words(question)
    # "cheap plastic": an adjective naming a field, right before another field's value, describes the value
    # and a kind word right after another field's value ("wallet-style", table `kind_words`) only says "of that kind"
    kept = [m for m in kept if not (m[3] == "field" and m[1] - m[0] == 1 and (
        (adjective_only(ws[m[0]]) and any(n[3] == "value" and n[0] == m[1] and n[4] != m[4] for n in kept))
        or (ws[m[0]] in table.kind_words and any(n[3] == "value" and n[1] == m[0] and n[4] != m[4] for n in kept))))]
    fields: dict[str, None] = {}
    values: dict[str, set[str]] = {}
    topics: dict[int, None] = {}
    weak: dict[int, None] = {}
    matched: list[tuple[str, str]] = []
    for _, _, phrase, kind, owner in kept:
        if kind == "field":
            fields[owner] = None
            matched.append((phrase, owner))
        elif kind == "value":
            values.setdefault(owner, set()).add(phrase)
        elif kind == "idiom":  # "Are you open to Linux?": not a question about how it opens
            continue
        else:
            (topics if kind == "topic" else weak)[int(owner)] = None
            matched.append((phrase, f"topic {table.topics[int(owner)].name}"))
    amount = _AMOUNT.search(question) if table.amount_field in table.fields else None
    if amount:  # "Under $50?" asks about the price
        fields[table.amount_field] = None
        matched.append((amount.group(0), table.amount_field))
    for owner, phrases in values.items():
        if len(phrases) >= 2:  # a choice between two values asks about the field
            fields[owner] = None
            matched.append((" or ".join(sorted(phrases)), owner))
    guess = not fields and bool(values)  # a topic beside it ("Velcro, for your kid?") leaves the guess standing
    choices: tuple[str, ...] = ()
    if guess and len(values) == 1:
        # A guess at one field's value ("Does it need to be waterproof?") asks about that field: a person answers
        # it with what they want.
        owner, phrases = next(iter(values.items()))
        fields[owner] = None
        matched.append((" or ".join(sorted(phrases)), owner))
    elif guess:  # a value several fields hold, or values of several fields: the guess is about one of them
        choices = tuple(values)
        matched += [(" or ".join(sorted(values[owner])), owner) for owner in choices]
    if not fields and not topics and not values:  # a value in the question makes it a guess, not a vague ask
        topics = weak
    # A topic whose group holds a field the question names is that field ("How big a screen?").
    topics = {i: None for i in topics if not set(table.topics[i].fields) & set(fields)}
    return Reading(fields=tuple(fields), topics=tuple(table.topics[i].fields for i in topics),
                   matched=tuple(matched), guess=guess, choices=choices)


# A value the matcher learns from a catalog: carried by at least this many products' labels, and by at least this
# share of the labelled products among the fields whose labels carry it ("Natural" is a colour, a scent and a
# finish, so a guess at it names none). Measured with the held-out question lists (benchmarks/RESULTS.md).
MIN_VALUE_PRODUCTS = 5
MIN_VALUE_SHARE = 0.6


def catalog_values(facts: CatalogFacts, table: FieldTable, min_products: int = MIN_VALUE_PRODUCTS,
                   min_share: float = MIN_VALUE_SHARE) -> dict[str, tuple[str, ...]]:
    """The values a question may name or guess at, learned from a catalog's labels (`FieldTable.with_catalog_values`).

    Args:
        facts: a catalog's product facts (ecombench.catalog.facts); only the values stated by a product's
            `details` labels count.
        table: the field table: a learned value that reads as one of its phrases (a field term, a value or a
            topic term), that is one of the field's placeholders, or that holds no letter is left out, and so is
            a one-word value the catalog's text uses everywhere (`FactVocabulary.common`: "right", "love",
            "full"), which a question uses as a plain word.
        min_products: how many products' labels must carry the value.
        min_share: the share of those products, among every field whose labels carry the value (compared as
            lemmas), that the field must hold.

    Returns:
        field -> values, most carried first (ties by value); fields the table does not know are left out.
    """
    if facts.facts.height == 0:
        return {}
    common = facts.vocabulary.common
    counts = (facts.facts.filter((pl.col("source") == "details") & (pl.col("polarity") == "stated")
                           & pl.col("field").is_in(list(table.fields)))
              .group_by("field", "value").agg(pl.col("parent_asin").n_unique().alias("products"))
              .sort(["products", "field", "value"], descending=[True, False, False]))
    vocabulary = _vocabulary(table)
    rows: list[tuple[str, str, int, tuple[frozenset[str], ...]]] = []
    for name, value, products in counts.iter_rows():
        key = lemma_key(value)
        if (not key or not any(c.isalpha() for c in value) or value.casefold() in table.fields[name].placeholders
                or (len(key) == 1 and surface_text(value) in common)
                or any(same_phrase(key, other) for lemma in key[0] for other, *_ in vocabulary.get(lemma, ()))):
            continue
        rows.append((name, value, products, key))
    by_first: dict[str, list[int]] = {}
    for i, (_, _, _, key) in enumerate(rows):
        for lemma in key[0]:
            by_first.setdefault(lemma, []).append(i)
    learned: dict[str, list[str]] = {}
    for name, value, products, key in rows:
        if products < min_products:
            continue
        alike = {j for lemma in key[0] for j in by_first[lemma] if same_phrase(key, rows[j][3])}
        total = sum(rows[j][2] for j in alike)
        held = sum(rows[j][2] for j in alike if rows[j][0] == name)
        if held >= min_share * total:
            learned.setdefault(name, []).append(value)
    return {name: tuple(values) for name, values in learned.items()}


def _slot_field(slot: dict[str, Any]) -> str:
    return (slot.get("field") or "").removeprefix("details.")


def _keyword_match(question: str, keywords: list[str]) -> bool:
    ws = [lemmas(w) for w in words(question)]
    for kw in keywords:
        key = lemma_key(kw)
        if key and any(all(ws[i + j] & key[j] for j in range(len(key))) for i in range(len(ws) - len(key) + 1)):
            return True
    return False


def answer_question(question: str, slots: list[dict[str, Any]], table: FieldTable | None = None) -> Answer:
    """Which of a task's slots a question opens.

    Args:
        question: the agent's question.
        slots: the task's clarification slots ({slot_id, field, trigger_keywords, ...}).
        table: the field table; None reads the bundled one.

    Returns:
        An Answer: opened slot ids in slot order (several when the question asks about several
        fields; none when it names more than the table's `max_fields_per_question`).
    """
    table = table or load_field_table()
    reading = read_question(question, table)
    if reading.subjects > table.max_fields_per_question:
        return Answer(opened=(), reading=reading, too_many=True)
    by_field: dict[str, list[str]] = {}
    for s in slots:
        by_field.setdefault(_slot_field(s), []).append(s["slot_id"])
    opened: set[str] = set()
    for name in reading.fields:
        spec = table.fields.get(name)
        for candidate in (name, *(spec.fallback if spec else ())):
            if candidate in by_field:
                opened.update(by_field[candidate])
                break
    for name in reading.choices:  # a guess at a value several fields hold: the slot of any of them the task has
        opened.update(by_field.get(name, ()))
    asked: set[str] = set()
    for group in reading.topics:  # in question order; topics sharing fields ("how old", "who for") are one
        if asked & set(group):
            continue
        asked.update(group)
        hit = next((f for f in group if f in by_field), None)
        if hit is not None:
            opened.update(by_field[hit])
    for s in slots:  # a field the table does not know: the slot's own keywords name it
        if _slot_field(s) not in table.fields and _keyword_match(question, s.get("trigger_keywords") or []):
            opened.add(s["slot_id"])
    return Answer(opened=tuple(s["slot_id"] for s in slots if s["slot_id"] in opened), reading=reading)


def opened_slots(question: str, slots: list[dict[str, Any]], table: FieldTable | None = None) -> list[str]:
    """Ids of the slots a question opens, in slot order (`answer_question(...).opened`)."""
    return list(answer_question(question, slots, table).opened)


def canonical_question(label: str) -> str:
    """The plain question an agent would ask about a field: "What colour do you want?"."""
    return f"What {label} do you want?"


def reachability_questions(spec: Any) -> list[str]:
    """The questions stage 6 asks a slot of this field.

    The canonical one and the field's two natural questions from the field table (`questions`).
    """
    return [canonical_question(spec.label), *spec.questions[:2]]


def check_reachability(script: dict[str, Any], table: FieldTable) -> list[Finding]:
    """Ask each slot its canonical question and the field table's two natural questions about its field.

    slot_unreachable when a question does not open the slot, slot_collision when it opens other slots
    too. Findings carry the question and the slots it opened.
    """
    findings = []
    slots = script["clarification_slots"]
    for slot in slots:
        spec = table.fields.get(_slot_field(slot))
        if spec is None:  # reported as slot_incomplete by the leakage check; no question to ask
            continue
        for question in reachability_questions(spec):
            opened = opened_slots(question, slots, table)
            if slot["slot_id"] not in opened:
                findings.append(Finding("slot_unreachable", f"slot {slot['slot_id']} does not open on {question!r}",
                                        {"slot_id": slot["slot_id"], "question": question, "opened": opened}))
            if [o for o in opened if o != slot["slot_id"]]:
                findings.append(Finding("slot_collision",
                                        f"{question!r} opens slots {opened}, not only {slot['slot_id']}",
                                        {"slot_id": slot["slot_id"], "question": question, "opened": opened}))
    return findings
