"""Whether a text states a requirement: the checks that stage 5's writers repair against and stage 7 enforces.

A cue by its content words, a bound by its direction and unit, a value by its spoken form or the content
words of any of its spellings; and the product noun a query names (`product_type_drift`).
"""

from __future__ import annotations

from ecombench.catalog.type_vocabulary import TypeVocabulary
from ecombench.lemmas import stated_count, states_cue, states_phrase
from ecombench.schemas.models import Rubric
from ecombench.stages.phrasing import phrasing_of, rubric_forms
from ecombench.stages.product_naming import named_type, names_only_the_type
from ecombench.stages.replies import spoken_forms
from ecombench.tables.fields import FieldTable
from ecombench.text import contains_phrase, count_phrase, tokens


def states_rubric(rubric: Rubric, text: str, table: FieldTable | None = None, cue: str | None = None) -> bool:
    """Whether `text` states one query rubric on its own, in any wording the query check accepts.

    A cue (implicit rubric) by its content words (ecombench.lemmas.states_cue: "match the sky-coloured
    shirts" states "that matches the sky-coloured shirts"); a bound by its direction and unit; a value by
    its spoken form or the content words of any of its spellings. Unlike the whole-query check
    (`_unstated`) it does not weigh the other rubrics' values: it reads a surface, one rubric's words.
    """
    if cue is not None:
        return states_cue(text, cue)
    kind = phrasing_of(rubric)
    said = kind.stated_in(rubric, text)
    if said is not None:
        return said
    if any(contains_phrase(text, f) for f in spoken_forms(rubric.expected_value, rubric.field)):
        return True
    spellings = (lambda f: table.spellings(f)) if table is not None else (lambda f: [f])
    return any(states_phrase(text, s) for f in rubric_forms(rubric) if isinstance(f, str) for s in spellings(f))


def query_unstated(query: str, rubrics: list[Rubric], implicit: set[str], table: FieldTable,
                   cues: dict[str, str] | None) -> list[Rubric]:
    """The query rubrics `query` does not state, by the rules of `check_sources` (cue, bound, value forms).

    Shared by stage 7 and the LLM writer's repair turn (ecombench.stages.verbalise_llm.query_problems), so the model
    is asked to change exactly what stage 7 would reject.
    """
    out = []
    for r in rubrics:
        if r.info_source != "query":
            continue
        if r.id in implicit:
            if cues is not None and not states_cue(query, cues.get(r.id, "")):
                out.append(r)
        elif _unstated(r, rubric_forms(r), rubrics, implicit, query, table):
            out.append(r)
    return out


def _unstated(rubric: Rubric, forms: list[str], rubrics: list[Rubric], implicit: set[str],
              query: str, table: FieldTable) -> list[str]:
    """The forms of a query rubric the query does not state on their own.

    A bound must appear with its direction and unit, in any wording ("at least 4.5 stars", "4.5 stars or
    higher"), so "$4.5" does not stand for a rating. A value is stated by its content words in any of the
    field's spellings (ecombench.lemmas: "mounted on a wall" states "Wall Mount", "it runs a size small" does
    not state "true to size") or by its spoken form ("for ages 4 to 12"), and must be stated more often
    than inside the other query rubrics' values, so "Blue" inside "Dark Blue" does not stand for a
    dropped colour.
    """
    kind = phrasing_of(rubric)
    said = kind.stated_in(rubric, query)
    if said is not None:  # a bound: its own wording decides
        return [] if said else kind.stated_forms(rubric)
    if any(contains_phrase(query, f) for f in spoken_forms(rubric.expected_value, rubric.field)):
        return []
    others = [f for o in rubrics if o.info_source == "query" and o.id != rubric.id and o.id not in implicit
              for f in rubric_forms(o)]

    def count(text: str, form: str) -> int:
        return max(max(count_phrase(text, s), stated_count(text, s)) for s in table.spellings(form))

    return [f for f in forms if count(query, f) <= sum(count(o, f) for o in others)]


def product_type_drift(query: str, rubrics: list[Rubric], implicit: set[str],
                       cues: dict[str, str] | None = None,
                       type_vocabulary: TypeVocabulary | None = None) -> str | None:
    """The product noun a query names instead of its entity rubric's ("headphones" for an audio cable), or None.

    The query's first product noun phrase must hold a word of the entity (ecombench.stages.product_naming.named_type);
    words the query spends on other requirements (a compatible device "Headphones" of an earpad, a cue)
    are not read as the product's name, unless the requirement's value is the type's own word: an excluded
    form factor "Case" of a case must not hide the "case" the query names it by. Product nouns are the
    catalog's (`type_vocabulary`; None: the reviewed override's alone).
    """
    entity = next((r for r in rubrics if r.info_source == "query" and phrasing_of(r).query_role == "subject"), None)
    if entity is None:
        return None
    spans = [f for r in rubrics if r.info_source == "query" and r.id != entity.id and r.id not in implicit
             for f in rubric_forms(r) if isinstance(f, str)]
    spans += [c for rid, c in (cues or {}).items() if rid in implicit]
    toks = tokens(query)
    skip: set[int] = set()
    for span in spans:
        n = tokens(span)
        if not n or names_only_the_type(span, str(entity.expected_value)):
            continue
        for i in range(len(toks) - len(n) + 1):
            if n and toks[i:i + len(n)] == n:
                skip.update(range(i, i + len(n)))
    return named_type(query, str(entity.expected_value), type_vocabulary or TypeVocabulary.of_override(),
                      frozenset(skip))
