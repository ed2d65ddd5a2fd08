"""The field table (fields.toml) as typed data: canonical field names, aliases and per-field rules.

One alias table serves ingestion, feature extraction, checkers and answer sets, so `OS` and
`Operating System` are the same field everywhere (fixes reference §4.1 / §15.8, where aliases
were one-way, case-sensitive and missed `Wireless communication technologies`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from ecombench.errors import SettingError
from ecombench.lemmas import lemma_key, same_phrase
from ecombench.text import normalize

FIELD_TABLE = Path(__file__).with_name("fields.toml")

DETAIL_PREFIX = "details."


def _key_form(raw: str) -> str:
    """Case-, space- and punctuation-insensitive form of a detail key, for alias lookup."""
    return " ".join(re.findall(r"[a-z0-9]+", raw.lower()))


@dataclass(frozen=True)
class FieldSpec:
    """One row of the field table.

    Attributes:
        name: canonical name, e.g. "Operating System" (detail fields) or "price" (top-level).
        kind: "detail", "numeric", "entity", "budget" (voucher budget) or "opinion" (review opinion).
        label: how a shopper names the field.
        sources: info sources a requirement on this field may be assigned to.
        aliases: raw Amazon keys that mean this field.
        multi_option: raw values list several options to split.
        query_phrase: template stating the requirement in a query ("{value}").
        persona_key: key under `product_requirements` in a persona.
        keywords: clarification trigger keywords, label first (written into each slot).
        paraphrases: further words and phrases that name the field in a question (matcher only).
        values: common values of the field, the table's then those learned from a catalog's labels
            (`FieldTable.with_catalog_values`): two ("glossy or matte") ask about the field, and so does one
            alone when the question names nothing else (a guess, ecombench.validation.slots).
        fallback: fields whose slot a question about this field opens when the task has no slot
            of this field ("What size?" of a bottle whose capacity is hidden).
        questions: natural questions about the field that stage 6 asks every slot besides the
            canonical one (validation/slots.py).
        reply: clarification reply template.
        placeholders: lower-cased values that mean "unknown" for this field.
        descriptive: values describe (colour, style, ...): model-like codes are refused.
        cues: words around a value in a product's text that put it in this field's role ("made of",
            "material"); ecombench.catalog.facts reads a bullet's value only with one. Empty: the label.
        compatibility: the field names the device an accessory fits (read after "for", "compatible with").
        self_evident: a value of the field said anywhere in the page describes the product ("waterproof").
        label_alone: a value only the `details` label states may be drawn as a requirement (reviewed; False where
            the labels list what a product might be given for rather than what it is: Occasion).
        label_first: where a product carries a label for the field, a value only its title adds is no fact
            (reviewed; Color: titles name designs and variants in colour words, "CafePress Black Lab Mug" of a white
            mug).
        measure: values are measurements, read from text only when they hold a number.
        text_values: values a page may state though too few labels carry them to be learned (reviewed): read in
            text like the learned ones, so a page saying "repositionable" contradicts a label "Single Use".
        absence_values: values that say the page has none of what the field describes (Pattern "Solid"): a title
            that names one of the field's cue words ("print", "patterned") and not the value contradicts such a
            label (reviewed; ecombench.catalog.facts).
        absence_cues: words besides the cue words that, in a title outside the part naming what the product is
            for, name what an absence value denies ("Abstract Painting Curtains" against Pattern "Solid").
        kinds: (broad value, its narrower values) pairs (reviewed): Material "Plastic" holds "Thermoplastic
            Polyurethane"; a shopper excluding the one excludes the other.
        catch_all: a product stating this many distinct values of the field lists everywhere it might go ("for
            living room, bedroom, office"): none of them is a requirement to draw (0: no such rule).
        not_wanted: words that make a value something no shopper asks for (reviewed): a care restriction ("Hand
            Wash Only", "Do Not Bleach") is what an owner may not do. Such a value is never drawn; it stays a fact.
        settled_by: ((other field, ((normalised value of it, value of this field), ...)), ...): values of other
            fields that settle a value of this one (reviewed): a page naming a men's or women's department says the
            product is an adult's, so Department "Men's" settles Age Range "Adult". Counted in the per-type
            statistics (ecombench.catalog.type_stats), never a fact of the product.
    """

    name: str
    kind: str
    label: str
    sources: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    multi_option: bool = False
    query_phrase: str = "with {value}"
    persona_key: str = ""
    keywords: tuple[str, ...] = ()
    paraphrases: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    fallback: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    reply: str = "{value}"
    placeholders: frozenset[str] = field(default_factory=frozenset)
    descriptive: bool = False
    cues: tuple[str, ...] = ()
    compatibility: bool = False
    self_evident: bool = False
    label_alone: bool = True
    label_first: bool = False
    measure: bool = False
    text_values: tuple[str, ...] = ()
    absence_values: tuple[str, ...] = ()
    absence_cues: tuple[str, ...] = ()
    kinds: tuple[tuple[str, tuple[str, ...]], ...] = ()
    catch_all: int = 0
    not_wanted: tuple[str, ...] = ()
    settled_by: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()

    def text_cues(self) -> tuple[str, ...]:
        """The cue words of the field in product text: `cues`, else its label."""
        return self.cues or (self.label,)

    @property
    def rubric_field(self) -> str:
        """The `field` string used in rubrics: `details.<name>` for detail fields."""
        return DETAIL_PREFIX + self.name if self.kind == "detail" else self.name


@dataclass(frozen=True)
class QuestionTopic:
    """A way of asking that names no single field ("How old is the child?", "What kind?").

    Attributes:
        name: short name, for reports.
        terms: the words and phrases of the topic.
        fields: the fields it may be about, in order: it opens the slot of the first one a task has.
        weak: counts only when the question names no field and no other topic.
    """

    name: str
    terms: tuple[str, ...]
    fields: tuple[str, ...]
    weak: bool = False


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: it keys caches of derived tables
class FieldTable:
    """All field specs plus the alias index. Build with `load_field_table`."""

    fields: dict[str, FieldSpec]
    alias_index: dict[str, str]
    max_value_chars: int
    max_value_words: int
    source_path: str
    value_aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    topics: tuple[QuestionTopic, ...] = ()
    max_fields_per_question: int = 3
    amount_field: str = ""  # the field a money amount in a question names ("Under $50?"); "" for none
    idioms: tuple[str, ...] = ()  # phrases that name nothing, read before the words in them ("open to")
    kind_words: tuple[str, ...] = ()  # words that, after another field's value, say "of that kind" ("wallet-style")

    def with_catalog_values(self, learned: Mapping[str, Sequence[str]]) -> FieldTable:
        """This table with each field's `values` extended by the values learned from a catalog's labels.

        The table's own values come first; the question matcher reads them all (ecombench.validation.slots,
        `catalog_values`). Returns a new table (caches keyed by table identity start afresh), or this one when
        nothing is learned.
        """
        if not any(learned.values()):
            return self
        fields = {name: replace(spec, values=(*spec.values, *learned[name])) if learned.get(name) else spec
                  for name, spec in self.fields.items()}
        return replace(self, fields=fields)

    def spellings(self, value: str) -> tuple[str, ...]:
        """Every spelling of `value` from the table's value alias groups (the value itself first).

        Matching is on normalised text ("usb-c" finds the "USB Type C" group); a value in no
        group has only itself.
        """
        group = self.value_aliases.get(normalize(value), ())
        return (value, *(g for g in group if normalize(g) != normalize(value)))

    def canonical_key(self, raw_key: str) -> str:
        """Canonical detail key for a raw Amazon key.

        Known keys and aliases map to their canonical name whatever their case or spacing
        ("OS", "operating  system" -> "Operating System"); unknown keys are kept with their
        whitespace collapsed, so nothing is lost.
        """
        return self.alias_index.get(_key_form(raw_key), " ".join(raw_key.split()))

    def by_rubric_field(self, rubric_field: str) -> FieldSpec:
        """Spec for a rubric `field` ("details.Color", "price", "title").

        Raises:
            KeyError: the field is not in the table.
        """
        name = rubric_field[len(DETAIL_PREFIX):] if rubric_field.startswith(DETAIL_PREFIX) else rubric_field
        return self.fields[name]

    def settled_by(self) -> dict[str, dict[str, dict[str, str]]]:
        """{field: {other field: {normalised value of it: value of the field}}} (`FieldSpec.settled_by`)."""
        return {name: {other: dict(values) for other, values in spec.settled_by}
                for name, spec in self.fields.items() if spec.settled_by}

    def detail_fields(self) -> list[FieldSpec]:
        """Detail-kind specs in table order."""
        return [f for f in self.fields.values() if f.kind == "detail"]

    def split_fused(self, raw_key: str, raw_value: str) -> tuple[str, str]:
        """Repair a detail whose value was fused into its key, or whose key is empty.

        Real records hold `"Battery Cell Composition Sealed Lead Acid": ""` and
        `"": "Shape Irregular"`. When the joined text starts with a known field name or alias,
        it is split there; otherwise the pair is returned unchanged.

        Returns:
            (key, value) with the key still in raw form (call `canonical_key` on it).
        """
        key, value = raw_key.strip(), raw_value.strip()
        if key and value:
            return raw_key, raw_value
        text = key or value
        words = text.split()
        for n in range(min(len(words) - 1, 6), 0, -1):
            head = " ".join(words[:n])
            if _key_form(head) in self.alias_index:
                return head, " ".join(words[n:])
        return raw_key, raw_value


def load_field_table(path: str | None = None, *, check_vocabulary: bool = True) -> FieldTable:
    """Read and check the field table, once per process and file (the same object for the same file).

    Args:
        path: a TOML file in the fields.toml format; None reads the bundled table.
        check_vocabulary: False leaves out the question-vocabulary check (`_check_question_vocabulary`, ~0.5 s of
            lemminflect's tables), for readers of detail keys alone (ingest), which never match a question; the
            first call that asks for it runs it. The table object is the same either way.

    Raises:
        SettingError: a row is malformed (names the file and field), or two fields share an
            alias or a clarification keyword.
        ValueError: (with `check_vocabulary`) a phrase of the question vocabulary means two things.
    """
    # One cache entry per file however it is named: ingest read the bundled table as None and again by its
    # path (ecombench.catalog.records), paying the vocabulary check twice.
    resolved = str(Path(path) if path else FIELD_TABLE)
    table = _load_field_table(resolved)
    if check_vocabulary:
        _checked_vocabulary(resolved)
    return table


@lru_cache(maxsize=8)
def _checked_vocabulary(path: str) -> bool:
    # Once per file (a failing check raises, and lru_cache keeps no result, so it raises again next time).
    table = _load_field_table(path)
    _check_question_vocabulary(Path(path), table.fields, table.topics)
    return True


@lru_cache(maxsize=8)
def _load_field_table(path: str) -> FieldTable:
    src = Path(path)
    data = tomllib.loads(src.read_text(encoding="utf-8"))
    defaults = data.get("defaults", {})
    global_placeholders = {p.lower() for p in defaults.get("placeholders", [])}
    descriptive = set(defaults.get("descriptive_fields", []))
    fields: dict[str, FieldSpec] = {}
    alias_index: dict[str, str] = {}
    keyword_owner: dict[str, str] = {}
    for name, row in data.get("fields", {}).items():
        try:
            spec = FieldSpec(
                name=name,
                kind=row.get("kind", "detail"),
                label=row["label"],
                sources=tuple(row["sources"]),
                aliases=tuple(row.get("aliases", ())),
                multi_option=bool(row.get("multi_option", False)),
                query_phrase=row.get("query_phrase", "with {value}"),
                persona_key=row.get("persona_key", _key_form(name).replace(" ", "_")),
                keywords=tuple(row.get("keywords", ())),
                paraphrases=tuple(row.get("paraphrases", ())),
                values=tuple(row.get("values", ())),
                fallback=tuple(row.get("fallback", ())),
                questions=tuple(row.get("questions", ())),
                reply=row.get("reply", "{value}"),
                placeholders=frozenset(global_placeholders | {p.lower() for p in row.get("placeholders", [])}),
                descriptive=name in descriptive,
                cues=tuple(row.get("cues", ())),
                compatibility=bool(row.get("compatibility", False)),
                self_evident=bool(row.get("self_evident", False)),
                label_alone=bool(row.get("label_alone", True)),
                label_first=bool(row.get("label_first", False)),
                measure=bool(row.get("measure", False)),
                text_values=tuple(row.get("text_values", ())),
                absence_values=tuple(row.get("absence_values", ())),
                absence_cues=tuple(row.get("absence_cues", ())),
                kinds=tuple((broad, tuple(narrower)) for broad, narrower in row.get("kinds", {}).items()),
                catch_all=int(row.get("catch_all", 0)),
                not_wanted=tuple(row.get("not_wanted", ())),
                settled_by=_settled_by(src, name, row.get("settled_by", {})),
            )
        except KeyError as exc:
            raise SettingError(f"{src}: field {name!r} lacks required key {exc.args[0]!r}") from None
        bad = set(spec.sources) - {"query", "persona", "clarification"}
        if bad or spec.kind not in {"detail", "numeric", "entity", "budget", "opinion"}:
            raise SettingError(f"{src}: field {name!r} has unknown sources {sorted(bad)} or kind {spec.kind!r}")
        # Keywords are compared as the slot matcher sees them (normalised: "batteries" = "battery").
        distinct = {normalize(k) for k in spec.keywords}
        if "clarification" in spec.sources and not (7 <= len(distinct) and len(spec.keywords) <= 10):
            raise SettingError(f"{src}: field {name!r} needs 7-10 distinct keywords, has {len(distinct)}")
        if "clarification" in spec.sources and normalize(spec.label) not in distinct:
            raise SettingError(f"{src}: field {name!r} must list its label {spec.label!r} among its keywords")
        for kw in distinct:
            owner = keyword_owner.setdefault(kw, name)
            if owner != name:
                raise SettingError(f"{src}: keyword {kw!r} of field {name!r} is already a keyword of {owner!r}")
        if spec.kind == "detail":
            for alias in (name, *spec.aliases):
                owner = alias_index.setdefault(_key_form(alias), name)
                if owner != name:
                    raise SettingError(f"{src}: alias {alias!r} of field {name!r} already names {owner!r}")
        fields[name] = spec
    for name, spec in fields.items():
        if unknown := [f for f, _ in spec.settled_by if f not in fields or f == name
                       or fields[f].kind != "detail" or spec.kind != "detail"]:
            raise SettingError(f"{src}: field {name!r} is settled_by {unknown}, which name no other detail field")
    for other in defaults.get("other_keys", []):
        alias_index.setdefault(_key_form(other), other)
    value_aliases: dict[str, tuple[str, ...]] = {}
    for group in data.get("values", {}).get("aliases", []):
        for spelling in group:
            if value_aliases.get(normalize(spelling), tuple(group)) != tuple(group):
                raise SettingError(f"{src}: value spelling {spelling!r} is in two alias groups")
            value_aliases[normalize(spelling)] = tuple(group)
    clarification = data.get("clarification", {})
    topics = tuple(QuestionTopic(name=t["name"], terms=tuple(t["terms"]), fields=tuple(t["fields"]),
                                 weak=bool(t.get("weak", False))) for t in clarification.get("topics", []))
    return FieldTable(
        fields=fields,
        alias_index=alias_index,
        max_value_chars=int(defaults.get("max_value_chars", 40)),
        max_value_words=int(defaults.get("max_value_words", 6)),
        source_path=str(src),
        value_aliases=value_aliases,
        topics=topics,
        max_fields_per_question=int(clarification.get("max_fields_per_question", 3)),
        amount_field=str(clarification.get("amount_field", "")),
        idioms=tuple(str(i) for i in clarification.get("idioms", [])),
        kind_words=tuple(str(w).lower() for w in clarification.get("kind_words", [])),
    )


def _settled_by(src: Path, name: str, rows: Any) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """`FieldSpec.settled_by` from a field's `settled_by` sub-table: {other field: {value: [spellings]}}.

    Raises:
        SettingError: the sub-table is not shaped so (names the file and field).
    """
    if not isinstance(rows, dict) or not all(
            isinstance(by, dict) and all(isinstance(v, str) and isinstance(spellings, list)
                                         and all(isinstance(x, str) for x in spellings)
                                         for v, spellings in by.items())
            for by in rows.values()):
        raise SettingError(f"{src}: field {name!r} settled_by must map each other field to "
                           '{value = ["spelling", ...]}')
    return tuple((other, tuple((normalize(spelling), value) for value, spellings in by.items()
                               for spelling in spellings))
                 for other, by in rows.items())


def _check_question_vocabulary(src: Path, fields: dict[str, FieldSpec], topics: tuple[QuestionTopic, ...]) -> None:
    """No phrase of the question vocabulary may mean two things, compared as the matcher reads them (lemmas).

    Raises:
        ValueError: a field term, value or topic term of one owner is also another's (names both),
            a fallback or topic names an unknown field, or a clarification field lacks two questions.
    """
    seen: dict[int, list[tuple[tuple[frozenset[str], ...], str, str]]] = {}
    entries = [(p, f"field {f.name!r}") for f in fields.values() for p in (f.label, *f.keywords, *f.paraphrases)]
    entries += [(v, f"values of {f.name!r}") for f in fields.values() for v in f.values]
    entries += [(term, f"topic {t.name!r}") for t in topics for term in t.terms]
    for phrase, owner in entries:
        key = lemma_key(phrase)
        for other_key, other_phrase, other_owner in seen.setdefault(len(key), []):
            both_values = owner.startswith("values") and other_owner.startswith("values")  # counted per field only
            if other_owner != owner and not both_values and same_phrase(key, other_key):
                raise ValueError(f"{src}: {phrase!r} of {owner} reads as {other_phrase!r} of {other_owner}")
        seen[len(key)].append((key, phrase, owner))
    for f in fields.values():
        for name in f.fallback:
            if name not in fields:
                raise ValueError(f"{src}: field {f.name!r} falls back to unknown field {name!r}")
        if "clarification" in f.sources and len(f.questions) < 2:
            raise ValueError(f"{src}: clarification field {f.name!r} needs two natural questions, "
                             f"has {len(f.questions)}")
    for t in topics:
        for name in t.fields:
            if name not in fields:
                raise ValueError(f"{src}: topic {t.name!r} names unknown field {name!r}")


# How many trigger keywords a slot has (reference §9.2): stage 6 checks it, the LLM slot writer fits a reply to it.
SLOT_KEYWORDS = (7, 10)
