"""Stage 7, semantic validation: each source carries exactly its rubrics, the lock holds, the answer set is small.

Cheap deterministic checks that the reference left to one LLM judge (§15.19-20): the query
states every query rubric, the persona holds every persona rubric, exactly one slot reveals
each clarification rubric, the rubrics still match their lock, and the target is in an answer
set no larger than the configured bound.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ecombench.answers.index import AnswerSets
from ecombench.catalog.facts import page_values
from ecombench.catalog.type_stats import TypeStats
from ecombench.catalog.type_vocabulary import TypeVocabulary
from ecombench.hashing import digest
from ecombench.lemmas import states_cue, states_phrase
from ecombench.rubrics import RUBRIC_TYPES, RubricLike, as_rubrics, kind_of
from ecombench.schemas.findings import Finding
from ecombench.schemas.models import Rubric
from ecombench.stages.features import describes_target, page_text
from ecombench.stages.persona_fit import incoherences
from ecombench.stages.phrasing import phrasing_of, rubric_forms
from ecombench.stages.rubrics import rubric_lock
from ecombench.stages.stating import _unstated, product_type_drift, states_rubric
from ecombench.stages.type_values import type_value_problem
from ecombench.stages.vocabulary import value_problems
from ecombench.tables.fields import FieldTable
from ecombench.text import contains_phrase
from ecombench.validation.leakage import reply_reveals


def check_sources(task: dict[str, Any], table: FieldTable, cues: dict[str, str] | None = None,
                  type_vocabulary: TypeVocabulary | None = None) -> list[Finding]:
    """Findings where a source does not carry its rubrics, the persona contradicts them, or the lock broke.

    Sources: query, persona, clarification; a persona's background contradicting the requirements is
    persona_incoherent (stages/persona_fit.py).

    Args:
        task: a task record.
        table: the field table.
        cues: {rubric id: cue clause} of the task's implicit rubrics; their value must not be in
            the query (stage 6 checks that) and the cue must be. None skips the cue check.
        type_vocabulary: the catalog's product-type vocabulary, for the query's product noun (None: the
            reviewed override's words alone).
    """
    findings: list[Finding] = []
    query = task["user_query"]
    requirements = task["user_persona"]["product_requirements"]
    slots = task["clarification_script"]["clarification_slots"]
    implicit = set(task.get("implicit_rubric_ids") or [])
    rubrics = as_rubrics(task["rubrics"])
    for r in rubrics:
        forms = rubric_forms(r)
        if r.id in implicit:
            if cues is not None and not states_cue(query, cues.get(r.id, "")):
                findings.append(Finding("implicit_cue_missing", f"implicit rubric {r.id} ({r.field}) has no cue "
                                        "in the query", {"rubric_id": r.id, "cue": cues.get(r.id), "text": query}))
        elif r.info_source == "query":
            missing = _unstated(r, forms, rubrics, implicit, query, table)
            if missing:
                findings.append(Finding("query_missing_requirement",
                                        f"query rubric {r.id} ({r.field}) value {missing[0]!r} is not in the query",
                                        {"rubric_id": r.id, "field": r.field, "value": missing[0], "text": query}))
        elif r.info_source == "persona":
            key, value = phrasing_of(r).persona_entry(r, table)
            if requirements.get(key) != value:
                findings.append(Finding("persona_missing_requirement",
                                        f"persona rubric {r.id} ({r.field}) is not under product_requirements.{key}",
                                        {"rubric_id": r.id, "field": r.field, "persona_key": key,
                                         "value": value, "found": requirements.get(key)}))
        else:
            revealing = [s["slot_id"] for s in slots if r.id in s["linked_rubric_ids"]
                         and reply_reveals(s["user_response"], r, table)]
            if len(revealing) != 1:
                findings.append(Finding("clarification_not_revealed",
                                        f"clarification rubric {r.id} ({r.field}) is revealed by "
                                        f"{len(revealing)} slots, not exactly one",
                                        {"rubric_id": r.id, "field": r.field, "slot_ids": revealing}))
    drift = product_type_drift(query, rubrics, implicit, cues, type_vocabulary)
    if drift is not None:
        entity = next(r for r in rubrics if r.info_source == "query" and phrasing_of(r).query_role == "subject")
        findings.append(Finding("query_names_other_product_type",
                                f"the query names {drift!r}, but the product is {entity.expected_value!r} "
                                f"({entity.id})",
                                {"rubric_id": entity.id, "value": drift, "expected": entity.expected_value,
                                 "text": query}))
    keys = {phrasing_of(r).persona_entry(r, table)[0] for r in rubrics if r.info_source == "persona"}
    extra = sorted(set(requirements) - keys)
    if extra:
        findings.append(Finding("persona_missing_requirement",
                                f"product_requirements holds keys with no persona rubric: {extra}",
                                {"extra_keys": extra}))
    for c in incoherences(task["user_persona"], rubrics):  # the background explains the requirements
        findings.append(Finding("persona_incoherent",
                                f"persona {c['noise_field']} {c['noise_value']!r} contradicts {c['rule']} rubric "
                                f"{c['rubric_id']} ({c['field']} = {c['value']!r})", c))
    if rubric_lock(rubrics) != task["rubric_lock"]:
        findings.append(Finding("rubric_lock_mismatch", "rubrics changed after they were locked",
                                {"expected": task["rubric_lock"], "found": rubric_lock(rubrics)}))
    if task.get("query_surfaces") is not None:
        findings.extend(check_query_surfaces(task, cues, table))
    return findings


def check_query_surfaces(task: dict[str, Any], cues: dict[str, str] | None = None,
                         table: FieldTable | None = None) -> list[Finding]:
    """Findings where the `query_surfaces` an LLM gave do not hold (reference §9.1 "anchored" rule, token-aware).

    Each query rubric needs a surface (query_surface_missing); each surface must occur in the query
    (query_surface_unanchored) and state its rubric the way the query check accepts it: an explicit
    rubric's value forms (a bound with its direction and unit), an implicit rubric's cue and not its
    value; a surface naming no query rubric is a mismatch (query_surface_mismatch). The leakage
    check already covers the whole query, so a surface cannot hide a hidden value.

    Args:
        task: a task record with `query_surfaces` ({rubric id: span of user_query}).
        cues: {rubric id: cue} of implicit rubrics; None takes the surface of an implicit rubric as given.
        table: the field table (a value's other spellings); None reads the value forms only.
    """
    findings: list[Finding] = []
    query = task["user_query"]
    surfaces = task.get("query_surfaces") or {}
    implicit = set(task.get("implicit_rubric_ids") or [])
    query_rubrics = {r.id: r for r in as_rubrics(task["rubrics"]) if r.info_source == "query"}
    for rid, surface in surfaces.items():
        if rid not in query_rubrics:
            findings.append(Finding("query_surface_mismatch", f"query surface {surface!r} names {rid}, which is no "
                                    "query rubric", {"rubric_id": rid, "surface": surface}))
    for rid, r in query_rubrics.items():
        surface = surfaces.get(rid)
        if not surface:
            findings.append(Finding("query_surface_missing", f"query rubric {rid} ({r.field}) has no query surface",
                                    {"rubric_id": rid, "field": r.field}))
            continue
        if not states_phrase(query, surface):
            findings.append(Finding("query_surface_unanchored",
                                    f"query surface {surface!r} of {rid} is not in the query",
                                    {"rubric_id": rid, "surface": surface, "text": query}))
            continue
        if rid in implicit and not (cues and cues.get(rid)):
            continue
        if not states_rubric(r, surface, table, cues[rid] if rid in implicit and cues else None):
            forms = phrasing_of(r).stated_forms(r) or [str(r.expected_value)]
            wanted = cues[rid] if rid in implicit and cues else forms[0]
            findings.append(Finding("query_surface_mismatch", f"query surface {surface!r} of {rid} ({r.field}) does "
                                    f"not state {wanted!r}", {"rubric_id": rid, "surface": surface,
                                                              "value": wanted}))
    return findings


def semantic_findings(task: dict[str, Any], table: FieldTable, index: AnswerSets, cues: dict[str, str] | None,
                      max_answer_set: int, type_vocabulary: TypeVocabulary | None = None
                      ) -> tuple[list[str], list[Finding]]:
    """Stage 7's code checks of a task record, as the build runs them and `ecombench validate` reruns them.

    Each source carries its rubrics and the lock holds (`check_sources`), and the answer set over
    the catalog holds the target and stays within `max_answer_set` (`check_answer_set`).

    Returns:
        (the answer set: sorted parent_asins, every finding: errors and warns).
    """
    findings = check_sources(task, table, cues, type_vocabulary)
    answers, answer_findings = check_answer_set(task["rubrics"], task["target_product"]["parent_asin"], index,
                                                max_answer_set)
    return answers, findings + answer_findings


def check_answer_set(rubrics: list[RubricLike] | list[dict[str, Any]], target: str, index: AnswerSets,
                     max_size: int) -> tuple[list[str], list[Finding]]:
    """The answer set over the catalog, and findings if it misses the target or exceeds `max_size`.

    Returns:
        (sorted parent_asins, findings). The evidence of answer_set_too_large lists up to 10 ids.
    """
    answers = index.answer_set(rubrics)
    findings = []
    if target not in answers:
        findings.append(Finding("answer_set_missing_target", f"target {target} is not in its own answer set",
                                {"target": target, "answer_set_size": len(answers)}))
    if len(answers) > max_size:
        findings.append(Finding("answer_set_too_large",
                                f"{len(answers)} catalog products satisfy every rubric (bound {max_size})",
                                {"answer_set_size": len(answers), "bound": max_size, "examples": answers[:10]}))
    return answers, findings


def task_problems(task: dict[str, Any], table: FieldTable) -> list[str]:
    """Invariants of a finished task that JSON Schema cannot state, as readable problems (empty: sound).

    The id is content-derived from (intent, target, lock); rubric ids are unique; the lock
    matches the rubrics; every rubric's field is in the field table and fits its type; bounds
    are ordered; every slot links existing clarification rubrics and every clarification rubric
    has one slot; implicit ids name query rubrics; the answer set holds the target, is sorted
    and unique, and its size is the one recorded.
    """
    problems = []
    asin = task["target_product"]["parent_asin"]
    if task["id"] != f"{task['intent']}-{digest(task['intent'], asin, task['rubric_lock'])[:12]}":
        problems.append(f"id {task['id']} is not derived from its intent, target and rubric lock")
    rubrics = task["rubrics"]  # records: a broken one is reported here, not parsed
    ids = [r["id"] for r in rubrics]
    if len(set(ids)) != len(ids):
        problems.append(f"rubric ids repeat: {ids}")
    if rubric_lock(rubrics) != task["rubric_lock"]:
        problems.append("rubric_lock does not match the rubrics")
    for r in rubrics:
        try:
            spec = table.by_rubric_field(r["field"])
        except KeyError:
            problems.append(f"rubric {r['id']} names field {r['field']!r}, absent from the field table")
            continue
        if r["type"] not in RUBRIC_TYPES or kind_of(r["type"]).field_kind != spec.kind:
            problems.append(f"rubric {r['id']} is {r['type']} on {spec.kind} field {r['field']}")
        v = r["expected_value"]
        if isinstance(v, dict) and v.get("min") is not None and v.get("max") is not None and v["min"] > v["max"]:
            problems.append(f"rubric {r['id']} has min {v['min']} above max {v['max']}")
    by_id = {r["id"]: r for r in rubrics}
    linked = [rid for s in task["clarification_script"]["clarification_slots"] for rid in s["linked_rubric_ids"]]
    for rid in linked:
        if rid not in by_id or by_id[rid]["info_source"] != "clarification":
            problems.append(f"a slot links {rid}, which is not a clarification rubric of the task")
    for r in rubrics:
        if r["info_source"] == "clarification" and linked.count(r["id"]) != 1:
            problems.append(f"clarification rubric {r['id']} is linked by {linked.count(r['id'])} slots")
    for rid in task["implicit_rubric_ids"]:
        if rid not in by_id or by_id[rid]["info_source"] != "query":
            problems.append(f"implicit id {rid} is not a query rubric")
    answers = task["answer_set"]
    if asin not in answers:
        problems.append(f"answer set lacks the target {asin}")
    if answers != sorted(set(answers)):
        problems.append("answer set is not sorted and unique")
    if task["difficulty"]["answer_set_size"] != len(answers):
        problems.append("difficulty.answer_set_size differs from the answer set")
    return problems


def intent_problems(rubrics: list[Rubric] | list[dict[str, Any]], intent: Any) -> list[str]:
    """What the intent's definition requires but the rubrics lack.

    Its required rubric types (with counts) and a query rubric on each of its query_fields
    (tables/intents.toml).
    """
    typed = as_rubrics(rubrics)
    have = Counter(r.type for r in typed)
    missing = [f"{n} x {t}" for t, n in Counter(intent.required_types).items() if have[t] < n]
    query_fields = {r.field for r in typed if r.info_source == "query"}
    missing += [f"a query rubric on {f}" for f in intent.query_fields if f not in query_fields]
    return missing


# Hidden-source answer sets are counted up to this many products: the check needs only "at least the
# floor", and the report's distribution says no more past it.
HIDDEN_SOURCE_ANSWER_SET_CAP = 100


def _field_of(rubric: Any, name: str) -> Any:
    """A rubric's attribute, whether the rubric is a dict or a typed model (ecombench.schemas.models.Rubric)."""
    return rubric[name] if isinstance(rubric, dict) else getattr(rubric, name)


def _as_dict(rubric: Any) -> dict[str, Any]:
    if isinstance(rubric, dict):
        return rubric
    dump = getattr(rubric, "model_dump", None)
    return dump(mode="json") if dump else {k: getattr(rubric, k) for k in ("id", "type", "field", "expected_value",
                                                                          "info_source")}


def hidden_source_answer_sets(rubrics: list[Any], index: AnswerSets,
                              limit: int | None = HIDDEN_SOURCE_ANSWER_SET_CAP) -> dict[str, int]:
    """How many catalog products each ablation of the task's sources leaves.

    DESIGN "Every source is needed".

    `without_persona` grades every rubric except the persona's (what an agent that never reads the profile
    knows); `without_clarification` every rubric except the clarification's (an agent that never asks).
    When either is 1, the target is already singled out without that source: the source is decorative.

    Args:
        rubrics: the task's rubrics, as dicts or as objects with `.type/.field/.expected_value/.info_source`.
        index: the catalog index.
        limit: count up to this many products (None: all).

    Returns:
        {"without_persona": n, "without_clarification": n}.
    """
    plain = [_as_dict(r) for r in rubrics]
    return {f"without_{source}": len(index.answer_set([r for r in plain if r["info_source"] != source], limit=limit))
            for source in ("persona", "clarification")}


def hidden_source_findings(sizes: dict[str, int], floor: int, rubrics: list[Any], full: int | None = None,
                           division: int = 1) -> list[Finding]:
    """Findings for each hidden source whose ablation leaves too few products: its rubrics add (almost) nothing.

    DESIGN "Every source is needed". An ablated oracle (sandbox/agents.py) recommends the first
    product that satisfies the rubrics it can learn, so it is right about |full| / |without source| of the
    time: a source that leaves two products where the task leaves one still lets it guess right half the time.

    Args:
        sizes: `hidden_source_answer_sets` of the task's rubrics ({"without_persona": n, "without_clarification": n}).
        floor: min_hidden_answer_set.
        rubrics: the task's rubrics (dicts or typed models).
        full: products all the task's rubrics leave (None: the division is not checked).
        division: min_hidden_division: each ablation must leave at least `division` x `full` products.

    Returns:
        Reason codes persona_not_needed / clarification_not_needed (that ablation leaves fewer than `floor`),
        else one hidden_source_too_weak naming every source that divides the answer set fewer than `division`
        times (ratios |full| / |without source| in its evidence).
    """
    findings = []
    present = [s for s in ("persona", "clarification") if any(_field_of(r, "info_source") == s for r in rubrics)]
    for source in present:
        n = sizes[f"without_{source}"]
        if n < floor:
            findings.append(Finding(f"{source}_not_needed",
                                    f"without the {source}'s rubrics the task's other rubrics leave {n} catalog "
                                    f"product(s), fewer than min_hidden_answer_set={floor}: an agent that skips the "
                                    f"{source} loses nothing",
                                    {f"without_{source}_answer_set_size": n, "min_hidden_answer_set": floor,
                                     f"{source}_fields": [_field_of(r, "field") for r in rubrics
                                                          if _field_of(r, "info_source") == source]}))
    if findings or full is None or division <= 1:
        return findings
    weak = [s for s in present if sizes[f"without_{s}"] < division * max(full, 1)]
    if weak:
        ratios = ", ".join(f"without the {s}'s rubrics {sizes[f'without_{s}']}" for s in weak)
        findings.append(Finding("hidden_source_too_weak",
                                f"the task leaves {full} catalog product(s) and {ratios}: fewer than "
                                f"min_hidden_division={division} times as many, so an oracle that skips "
                                f"the {' or the '.join(weak)} guesses the target too often",
                                {"weak_sources": weak, "answer_set_size": full, "min_hidden_division": division,
                                 **{f"without_{s}_answer_set_size": sizes[f"without_{s}"] for s in present},
                                 **{f"{s}_ablation_ratio": round(full / sizes[f"without_{s}"], 4) for s in present},
                                 **{f"{s}_fields": [_field_of(r, "field") for r in rubrics
                                                    if _field_of(r, "info_source") == s] for s in present}}))
    return findings


# The products a split plan's masks cover: those the query's fixed requirements (the product type, the
# intent's query fields) leave, up to this many (the split's choice is re-verified exactly afterwards).
SPLIT_UNIVERSE_CAP = 20000


def answer_set_masks(rubrics: list[Any], within: list[Any], index: AnswerSets, target: str,
                     cap: int = SPLIT_UNIVERSE_CAP) -> tuple[dict[int, int], int]:
    """Each rubric's answer set as a bitmask over the products `within` leaves (for ecombench.stages.split.SplitGoals).

    Args:
        rubrics: one rubric (or {type, field, expected_value}) per feature, in the features' order.
        within: rubrics every placement keeps in the query (their products are the universe).
        index: the catalog index.
        target: the target's parent_asin (always in the universe).
        cap: at most this many products in the universe.

    Returns:
        ({position in `rubrics`: mask}, universe size). Bit i stands for the i-th product of the universe.
    """
    base = [_as_dict(r) for r in within]
    universe = index.answer_set(base, limit=cap) if base else index.first_products(cap)
    if target not in universe:
        universe = [*universe, target]
    bit = {asin: i for i, asin in enumerate(universe)}
    masks = {}
    # Each feature's answer set within the universe (= its whole answer set, cut to the universe), all asked at once.
    for i, found in enumerate(index.answer_sets_within([base + [_as_dict(r)] for r in rubrics], universe)):
        mask = 0
        for asin in found:
            mask |= 1 << bit[asin]
        masks[i] = mask
    return masks, len(universe)


# How many of the products the other rubrics leave must carry an excluded value (fewer when fewer are left).
MIN_CARRIED = 2


def biting_exclusions(rubrics: list[Any], rubric_id: str, index: AnswerSets, target: dict[str, Any],
                      keep: int = 2, sources: tuple[str, ...] = ("query",), min_support: int = 3,
                      type_stats: TypeStats | None = None, product_type: str | None = None) -> list[str]:
    """Excluded values for negative rubric `rubric_id` that exclude something ("exclusions that bite").

    The products the other rubrics of `sources` leave are the ones the exclusion must rule out among: an
    excluded value none of them carries excludes nothing. By default the query's other rubrics (the
    exclusion is stated there, beside the product type, so it rules out products of that type the rest
    of the query admits); ("query", "persona", "clarification") asks that it cut the final answer set,
    which on the shared data leaves almost no negative_constraint task (measured on the shared data, CHANGELOG.md).
    Returns the rubric's own excluded values that some such products carry (MIN_CARRIED of them, or all when
    fewer are left), then other values of the same field those products carry (most products first, then
    alphabetical), never one that describes the target (`describes_target`: its own options or labels, a kind
    of them, a word its page says), at most `keep`. Empty
    when no product the other rubrics leave has another value of the field (the exclusion cannot bite).
    A value the product type implies or does not take (`ecombench.stages.type_values.type_value_problem`: a form factor
    "Case" of a case, Age Range "Adult" of a chair) is never excluded: "a case ... any form factor but case is
    fine" contradicts itself. With the catalog's per-type statistics, a value the type's pages seldom put in words
    is never excluded either (`TypeStats.labels_borne_out` for `product_type`): no phone case's page says "basic
    case" or "flip", and reviewers read "any form factor but basic case or flip" of a slim clear case as ruling
    out the target. Nor is a value fewer than MIN_EXCLUDED_PRODUCTS products of the type state (`TypeStats.met_in_type`:
    "any material but metal" of a fabric shower curtain, bitten by shower curtain hooks), nor words of a device the
    type's products fit but for a brand (`TypeStats.names_a_fitted_device`: "any theme but Galaxy" of an iPhone case),
    nor one spelling of a value beside another ("100% cotton or cotton").

    Args:
        rubrics: the task's rubrics (dicts or typed models).
        rubric_id: the negative_attribute rubric.
        index: the catalog index.
        target: the target product row (its own options are never excluded).
        keep: how many values to return at most.
        sources: whose rubrics (besides this one) decide the products the exclusion must bite among.
        min_support: an excluded value is a value a shopper would state too (ecombench.stages.vocabulary.value_problems
            with this min_value_support): no one-off brand string ("AIDITIYMI").
        type_stats: the catalog's per-type statistics (ecombench.catalog.type_stats), or None.
        product_type: the target's product type, which `type_stats` judge the values for.
    """
    plain = [_as_dict(r) for r in rubrics]
    negative = next(r for r in plain if r["id"] == rubric_id)
    spec = index.table.by_rubric_field(negative["field"])
    others = [r for r in plain if r["id"] != rubric_id and r["info_source"] in sources]
    left = [a for a in index.answer_set(others) if a != target.get("parent_asin")]
    if not left:
        return []
    mine, text = page_values(target, spec), page_text(target)
    carried: Counter = Counter()
    for product in index.products_of(left):
        seen = set()
        for clean in page_values(product, spec):
            if clean.lower() not in seen and not describes_target(clean, target, spec, index.table, mine, text):
                seen.add(clean.lower())
                carried[clean] += 1
    # A value only one of them carries is a stray label of that type ("802.11a" on one of 57 mice), not a kind of
    # product a shopper of it rules out.
    carried = Counter({c: n for c, n in carried.items() if n >= min(MIN_CARRIED, len(left))})
    entity = next((str(r["expected_value"]) for r in plain if r["info_source"] == "query" and r["type"] in RUBRIC_TYPES
                   and phrasing_of(r["type"]).query_role == "subject"), None)
    if entity is not None:
        carried = Counter({c: n for c, n in carried.items() if not type_value_problem(negative["field"], c, entity)})
    if type_stats is not None:
        compat = frozenset(s.name for s in index.table.detail_fields() if s.compatibility)
        carried = Counter({c: n for c, n in carried.items()
                           if type_stats.labels_borne_out(product_type, spec.name, c)
                           and type_stats.met_in_type(product_type, spec.name, c)
                           and (spec.name == "Brand" or not type_stats.names_a_fitted_device(product_type, compat, c))})
    own = [v for v in negative["expected_value"] if any(v.lower() == c.lower() for c in carried)]
    rest = sorted((c for c in carried if c.lower() not in {v.lower() for v in own}), key=lambda c: (-carried[c], c))
    # Kept only when the attribute checker agrees that some such product carries it (the rule the negative
    # rubric is graded by), not just the option text.
    chosen: list[str] = []
    values = own + rest
    field_name = negative["field"]

    def rubric(v: str) -> dict[str, Any]:
        return {"type": "attribute_match", "field": field_name, "expected_value": v}

    # The values are tried in order until `keep` bite; a few values ahead are asked together (their supports,
    # then the answer sets of those a shopper would state), so a partitioned build answers them in one pass.
    for at in range(0, len(values), EXCLUSIONS_AHEAD):
        if len(chosen) == keep:
            break
        window = values[at:at + EXCLUSIONS_AHEAD]
        supports = index.supports([rubric(v) for v in window])
        stated = [v for v, n in zip(window, supports) if not value_problems(spec, v, n, None, min_support)]
        for v, found in zip(stated, index.answer_sets([others + [rubric(v)] for v in stated], limit=3)):
            if (len(chosen) < keep and any(a != target.get("parent_asin") for a in found)
                    and not any(contains_phrase(v, c) or contains_phrase(c, v) for c in chosen)):
                chosen.append(v)
    return sorted(chosen, key=str.lower)


# biting_exclusions: values asked about together; what is asked beyond the values it ends up needing costs only
# time (the choice is the same), and fewer, larger rounds suit a partitioned build.
EXCLUSIONS_AHEAD = 8
