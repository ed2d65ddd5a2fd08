"""Stage 5 (and stage 2's review opinions) with an LLM: the model writes text around locked rubrics.

Four parts can be LLM-written, each also available offline (stages/verbalise.py, stages/reviews.py):
the visible query with a `query_surface` per query rubric, the persona's background (whitelisted
noise fields only), the clarification slots (trigger keywords and reply), and the review opinions
of review-driven tasks, phrased from the target's own reviews. The model never sees a hidden value
it need not write, cannot change a rubric (they are locked before it is called, and stage 7
re-checks the lock), and every catalog or review text in a prompt sits between delimiters and is
declared data. Stages 6 and 7 check what it writes exactly as they check the templates' text.
Prompts are versioned files in stages/prompts/ whose sha256 go into the manifest, with the reply
schemas of schemas/llm/.

For small local models (llm-v3): each reply schema is narrowed per request before it is
sent — the persona's options and every rubric or review id become JSON Schema `enum`s, which a
llama.cpp server turns into a grammar, so the model cannot write an option list or an id it was not
given; the query prompt gives the exact phrases the text must contain, and a reply missing one gets
a repair turn that quotes the failed check (ecombench.llm.LLMClient.call_json); a later attempt's prompt
names the attempt and what the earlier one was rejected for, so a retry at temperature 0 is a new
request, not the cached reply of the last one; every part's prompt has worked examples.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Iterable
from typing import Any

from ecombench.lemmas import states_phrase
from ecombench.llm import LLMClient
from ecombench.schemas.findings import Finding
from ecombench.schemas.models import Rubric
from ecombench.stages.persona_fit import BUDGET_MINDED, persona_needs
from ecombench.stages.phrasing import phrasing_of, slot_reply
from ecombench.stages.prompts import (
    prompt_template,
    reply_schema,
)
from ecombench.stages.reviews import MIN_RATING, MIN_TEXT_CHARS
from ecombench.stages.stating import query_unstated, states_rubric
from ecombench.stages.verbalise import (
    DEFAULT_RESPONSE,
    persona_entry,
    persona_vocab,
    requirement_phrase,
    write_profile_replies,
)
from ecombench.tables.fields import SLOT_KEYWORDS, FieldTable
from ecombench.text import contains_phrase, normalize

NOISE_FIELDS = ("demographics.age_range", "demographics.household", "demographics.location_type",
                "lifestyle.occupation", "lifestyle.hobbies", "shopping_habits.shopping_frequency",
                "shopping_habits.price_sensitivity", "shopping_habits.preferred_channel")
REVIEWS_IN_PROMPT = 8  # most helpful eligible reviews shown to the opinion writer
REVIEW_CHARS = 600  # each review's text is cut here in the prompt (the check reads the whole text)
NOTE_CHARS = 240  # an earlier finding's message is cut here in a retry's prompt
# Findings whose message names a hidden value: a retry's prompt gives this instead, so that the writer of
# the visible query is never shown a persona or clarification value (a small model copies what it reads).
SAFE_HINTS = {"hidden_value_in_query": "the request stated a requirement that is not in the list; state only the "
                                       "listed requirements",
              "persona_noise_leak": "a background choice repeated a product requirement; choose other options",
              "clarification_value_leak": "an answer stated more than its own requirement"}


def _data(text: str) -> str:
    """Catalog or review text made safe to sit between <<< and >>>: the delimiters cannot be closed from inside."""
    return " ".join(str(text).replace("<<<", "«").replace(">>>", "»").split())


def attempt_note(attempt: int, previous: Iterable[Finding] = ()) -> str:
    """What a retry's prompt says about the attempt: "" for a first one, else its number and earlier rejections.

    At temperature 0 a retry that sends the same prompt gets the reply cache's copy of the rejected
    reply (4 of 6 persona retries were once cache hits); the note makes it a new request and tells
    the model what went wrong. Messages that could name a hidden value are replaced by SAFE_HINTS.

    Args:
        attempt: 0-based attempt number of the candidate (ecombench.pipeline.candidate.build_candidate).
        previous: the first finding of each earlier attempt, oldest first.
    """
    notes = [f"{f.reason}: " + (SAFE_HINTS.get(f.reason) or _data(f.message)[:NOTE_CHARS]) for f in previous]
    if attempt == 0 and not notes:
        return ""
    lines = [f"This is attempt {attempt + 1}."] + [f"An earlier attempt was rejected ({n})." for n in notes[-2:]]
    return "\n".join(lines) + "\n\n"


def _fill(template: str, values: dict[str, str]) -> str:
    """A prompt with its {placeholders} filled in one pass (a value holding "{x}" is never filled again)."""
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


def _with_ids(schema: dict[str, Any], path: tuple[str, ...], ids: list[str], exact: bool = True) -> dict[str, Any]:
    """`schema` with the id property at `path` (from the root, through array items) made an enum of `ids`.

    With `exact`, the array holding it takes exactly len(ids) items (a grammar then makes the model write
    one entry per id; duplicates are for the caller's check).
    """
    out = copy.deepcopy(schema)
    node = out
    for key in path[:-2]:
        node = node["properties"][key] if key != "items" else node["items"]
    array = node["properties"][path[-2]] if path[-2] != "items" else node
    prop = array["items"]["properties"][path[-1]] if "items" in array else array["properties"][path[-1]]
    prop.pop("pattern", None)
    prop["enum"] = list(ids)
    if exact and "items" in array:
        array["minItems"] = array["maxItems"] = len(ids)
    return out


def id_problems(named: list[str], ids: list[str], what: str) -> list[str]:
    """Problems of a reply that must name each id once: ids it skips or names twice (for the repair turn)."""
    problems = [f"{what} has no entry for {i}" for i in ids if i not in named]
    problems += [f"{what} names {i} {named.count(i)} times" for i in sorted(set(named)) if named.count(i) > 1]
    return problems


# ---- query ----------------------------------------------------------------------------------------


def required_phrases(rubric: Rubric, table: FieldTable, cues: dict[str, str]) -> list[str]:
    """The phrases of which the query must contain one to state `rubric` (the prompt's "must contain").

    The value forms stage 7 reads (the rubric kind's stated_forms: "Mesh", "no more than $75", the
    opinion); the product type for the subject; none for a cue (its wording is free: the value must not
    appear) or a coupon budget (a sentence of its own).
    """
    role = phrasing_of(rubric).query_role
    if rubric.id in cues or role == "budget":
        return []
    if role == "subject":
        return [str(rubric.expected_value)]
    return [f for f in phrasing_of(rubric).stated_forms(rubric) if f][:3]


def requirement_lines(rubrics: list[Rubric], table: FieldTable, cues: dict[str, str]) -> list[str]:
    """The query's requirements as the prompt lists them, '- r2: made of Mesh [must contain: "Mesh"]'.

    Same phrases as the template verbaliser; implicit rubrics as "- r3: CUE: <cue>"; each with the
    phrases the text must contain (`required_phrases`); catalog text made delimiter-safe.
    """
    lines = []
    for r in rubrics:
        if r.info_source != "query":
            continue
        role = phrasing_of(r).query_role
        if role == "subject":
            text = f"it is {_data(str(r.expected_value)).lower()}"
        elif r.id in cues:
            text = f"CUE: {cues[r.id]}"
        elif role == "budget":
            text = requirement_phrase(r, table)
        elif role == "opinion":
            text = f'its reviews should say "{_data(str(r.expected_value))}"'
        else:
            text = _data(requirement_phrase(r, table))
        phrases = required_phrases(r, table, cues)
        must = (" [must contain: " + " or ".join(f'"{_data(p)}"' for p in phrases) + "]") if phrases else ""
        lines.append(f"- {r.id}: {text}{must}")
    return lines


def query_reply_schema(rubrics: list[Rubric]) -> dict[str, Any]:
    """schemas/llm/query_plan.schema.json narrowed: query_surfaces' rubric_id an enum of the query ids, one each."""
    ids = [r.id for r in rubrics if r.info_source == "query"]
    return _with_ids(reply_schema("query"), ("query_surfaces", "rubric_id"), ids)


def query_problems(reply: dict[str, Any], rubrics: list[Rubric], table: FieldTable,
                   cues: dict[str, str]) -> list[str]:
    """What a query reply gets wrong that the prompt spelled out (problems for the repair turn).

    A requirement stage 7 would find unstated (ecombench.stages.stating.query_unstated: the same rules, so a
    paraphrase stage 7 accepts gets no repair turn), quoted with its required phrases or its cue; a
    rubric id without a surface or with two. Surfaces that are loosely copied or carry the wrong id are
    not the model's text at fault: `surfaces_for` re-anchors them.

    A quick check for the repair turn, not the verdict: stage 7 (ecombench.validation.semantic) decides.
    """
    query = reply["user_query"]
    ids = [r.id for r in rubrics if r.info_source == "query"]
    problems = id_problems([s["rubric_id"] for s in reply["query_surfaces"]], ids, "query_surfaces")
    for r in query_unstated(query, rubrics, set(cues), table, cues):
        phrases = required_phrases(r, table, cues)
        if r.id in cues:
            problems.append(f'{r.id}: user_query must state the cue "{cues[r.id]}" (its words, in any order)')
        elif phrases:
            problems.append(f"{r.id}: user_query must contain " + " or ".join(f'"{p}"' for p in phrases))
        else:
            problems.append(f"{r.id}: user_query does not state this requirement")
    return problems


def surfaces_for(query: str, reply_surfaces: list[dict[str, str]], rubrics: list[Rubric], table: FieldTable,
                 cues: dict[str, str]) -> dict[str, str]:
    """{query rubric id: surface}: for each rubric, the model's surface that states it, else the query's sentence.

    Small models copy a surface loosely ("wrap edges" for "wrap the edges") or under the neighbouring
    rubric's id: that is the metadata at fault, not the query. A rubric keeps its own surface
    when it states the rubric (ecombench.stages.stating.states_rubric), else takes another id's surface that
    does, else the first sentence of the query that does; a rubric the query does not state keeps what
    the model gave, so stage 7 reports it.
    """
    given: dict[str, str] = {}
    for item in reply_surfaces:
        given.setdefault(item["rubric_id"], " ".join(item["query_surface"].split()))
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", query) if s.strip()]
    out: dict[str, str] = {}
    for r in rubrics:
        if r.info_source != "query":
            continue
        cue = cues.get(r.id)
        options = [given[r.id]] if r.id in given else []
        options += [s for rid, s in given.items() if rid != r.id] + sentences + [query]
        stating = next((s for s in options if states_rubric(r, s, table, cue) and states_phrase(query, s)), None)
        if stating is not None:
            out[r.id] = stating
        elif r.id in given:
            out[r.id] = given[r.id]
    for rid, s in given.items():  # an id that is no query rubric is kept, so stage 7 reports it
        out.setdefault(rid, s)
    return dict(sorted(out.items(), key=lambda kv: int(kv[0][1:])))


def _product_type(rubrics: list[Rubric]) -> str:
    entity = next((str(r.expected_value) for r in rubrics if phrasing_of(r).query_role == "subject"), "a product")
    return _data(entity)


def write_query_llm(client: LLMClient, rubrics: list[Rubric], table: FieldTable,
                    cues: dict[str, str] | None = None, attempt: int = 0,
                    previous: Iterable[Finding] = ()) -> tuple[str, dict[str, str]]:
    """The visible query and its query surfaces, written by the model.

    Args:
        client: the build's LLM client.
        rubrics: the locked rubrics (only query rubrics reach the prompt).
        table: the field table (requirement phrases).
        cues: {rubric id: cue clause} of implicit rubrics; the prompt gives the cue, never the value.
        attempt: the candidate's attempt (0-based); with `previous` it goes into the prompt (attempt_note).
        previous: the first finding of each earlier attempt.

    Returns:
        (query with whitespace collapsed, {rubric id: query_surface} re-anchored by `surfaces_for`).
        Stage 7 (ecombench.validation.semantic.check_query_surfaces) checks each surface lies in the query and
        states its rubric; a surface for an id that is no query rubric is kept so that check reports it.

    Raises:
        ecombench.llm.LLMError: llm_error, llm_refusal, or llm_invalid_output (never matched the
            query_reply_schema; a reply missing a required phrase got a repair turn quoting it).
    """
    cues = cues or {}
    text = _fill(prompt_template("query"), {"product_type": _product_type(rubrics),
                                            "requirements": "\n".join(requirement_lines(rubrics, table, cues)),
                                            "attempt": attempt_note(attempt, previous)})
    reply = client.call_json([{"role": "user", "content": text}], "query_plan", query_reply_schema(rubrics),
                             purpose="query", check=lambda obj: query_problems(obj, rubrics, table, cues))
    query = " ".join(reply["user_query"].split())
    return query, surfaces_for(query, reply["query_surfaces"], rubrics, table, cues)


# ---- persona background ----------------------------------------------------------------------------


NOISE_SHOWN = 3  # options of each noise field the persona prompt shows, drawn per task


def noise_options(rubrics: list[Rubric], rng: random.Random | None = None,
                  for_whom: tuple[str, str, str] | None = None) -> dict[str, list[str]]:
    """The whitelisted options of each noise field that fit the requirements and repeat no rubric value.

    Token-aware, as ecombench.stages.verbalise.write_persona skips them; fitting as stages/persona_fit.py says
    (a child's product, by a rubric or by the target's own page, `for_whom`: households with children; a price
    cap: no "pays more for quality"). Household and
    occupation are listed per age range ("demographics.household for 18-24"), as persona_vocab.toml
    whitelists them and stage 6 checks; a household that lives only in some places (persona_vocab.toml's
    location_by_household: a dorm) is left out, as the model draws the location on its own. With `rng` (the
    verbalisation stage's generator) each field shows NOISE_SHOWN options in a drawn order: a small model tends to
    copy the first option listed, and one fixed list gave every persona the same background.
    """
    values = [v for r in rubrics for v in phrasing_of(r).forms(r)]
    vocab = persona_vocab()
    needs = persona_needs(rubrics, for_whom)

    def keep(options: list[str], path: str) -> list[str]:
        out = [o for o in options if not any(contains_phrase(o, v) or contains_phrase(v, o) for v in values)]
        if path == "demographics.household" and needs.households is not None:
            out = [o for o in out if o in needs.households]
        if path == "demographics.household":  # the model picks the location apart: only households living anywhere
            out = [o for o in out if o not in vocab.get("location_by_household", {})] or out
        if path == "shopping_habits.price_sensitivity" and needs.budget_minded:
            out = [o for o in out if o in BUDGET_MINDED]
        if rng is not None:
            rng.shuffle(out)
            out = out[:NOISE_SHOWN] if path != "lifestyle.hobbies" else out[:NOISE_SHOWN + 1]
        return out

    ages = vocab["demographics"]["age_range"]
    if needs.households is not None:
        ages = [a for a in ages if set(vocab["by_age"][a]["household"]) & needs.households] or ages
    out: dict[str, list[str]] = {"demographics.age_range": keep(ages, "demographics.age_range")}
    for path in NOISE_FIELDS:
        group, name = path.split(".")
        if path == "demographics.age_range":
            continue
        if name in ("household", "occupation"):
            for age in out["demographics.age_range"]:
                out[f"{path} for {age}"] = keep(vocab["by_age"][age][name], path)
        else:
            out[path] = keep(vocab[group][name], path)
    return out


def persona_reply_schema(options: dict[str, list[str]]) -> dict[str, Any]:
    """The persona reply schema with every field's options as an enum, one anyOf branch per age range.

    A branch's household and occupation are that age's options (persona_vocab.toml's by_age).

    A llama.cpp server turns it into a grammar, so the model can only pick whole options: it cannot
    write "family with teenagers | family with young children". An age range left with no
    household or occupation option has no branch; none left gives the plain schema file.

    Args:
        options: noise_options(rubrics).
    """
    base = reply_schema("persona")
    flat = {k: v for k, v in options.items() if " for " not in k}

    def enum(values: list[str]) -> dict[str, Any]:
        return {"type": "string", "enum": list(values)}

    branches = []
    for age in flat.get("demographics.age_range", []):
        household, occupation = options.get(f"demographics.household for {age}"), options.get(
            f"lifestyle.occupation for {age}")
        if not household or not occupation or len(flat.get("lifestyle.hobbies", [])) < 2:
            continue
        branch = copy.deepcopy({k: v for k, v in base.items() if k not in ("$schema", "$id", "title", "description")})
        groups = branch["properties"]
        groups["demographics"]["properties"] = {"age_range": enum([age]), "household": enum(household),
                                                "location_type": enum(flat["demographics.location_type"])}
        groups["lifestyle"]["properties"]["occupation"] = enum(occupation)
        groups["lifestyle"]["properties"]["hobbies"]["items"] = enum(flat["lifestyle.hobbies"])
        for name in ("shopping_frequency", "price_sensitivity", "preferred_channel"):
            groups["shopping_habits"]["properties"][name] = enum(flat[f"shopping_habits.{name}"])
        branches.append(branch)
    if not branches or any(not v for k, v in flat.items()):
        return base
    return {k: base[k] for k in ("$schema", "title", "description")} | {"anyOf": branches}


def write_persona_llm(client: LLMClient, rubrics: list[Rubric], table: FieldTable,
                      user_id: str, attempt: int = 0, previous: Iterable[Finding] = (),
                      rng: random.Random | None = None,
                      for_whom: tuple[str, str, str] | None = None) -> dict[str, Any]:
    """A persona whose background (demographics, lifestyle, shopping_habits) the model chose.

    The model sees the product type and each noise field's whitelisted options that repeat no
    rubric value, never a rubric value; the reply schema holds the same options as enums
    (persona_reply_schema), so a reply outside them is llm_invalid_output after a repair turn that
    quotes the field and its options. `product_requirements` is not the model's: it holds exactly
    the persona rubrics through ecombench.stages.verbalise.persona_entry (the form stage 7 checks). Stage 6
    still rejects a background value off the whitelist (persona_noise_not_whitelisted) or repeating a
    rubric value (persona_noise_leak).

    Args:
        client: the build's LLM client.
        rubrics: the locked rubrics (their values are kept out of the options).
        table: the field table (persona entries).
        user_id: the persona's id.
        attempt: as write_query_llm.
        previous: as write_query_llm.
        rng: the verbalisation stage's generator: which options each field shows, in which order.
        for_whom: whom the target is for (stages.persona_fit.product_for_whom).

    Raises:
        ecombench.llm.LLMError: as write_query_llm, against persona_reply_schema.
    """
    options = noise_options(rubrics, rng, for_whom)
    fields = "\n".join(f"- {path}: " + " | ".join(values) for path, values in options.items())
    text = _fill(prompt_template("persona"), {"product_type": _product_type(rubrics), "fields": fields,
                                              "attempt": attempt_note(attempt, previous)})
    reply = client.call_json([{"role": "user", "content": text}], "persona_background", persona_reply_schema(options),
                             purpose="persona")
    persona: dict[str, Any] = {"user_id": user_id}
    for group in ("demographics", "lifestyle", "shopping_habits"):
        persona[group] = {k: ([" ".join(x.split()) for x in v] if isinstance(v, list) else " ".join(v.split()))
                          for k, v in reply[group].items()}
    persona["product_requirements"] = dict(persona_entry(r, table) for r in rubrics if r.info_source == "persona")
    return persona


# ---- clarification slots -------------------------------------------------------------------------


def slot_lines(rubrics: list[Rubric], table: FieldTable, rng: random.Random | None = None) -> list[str]:
    """One prompt line per clarification rubric.

    Each holds the id, field label, the value (delimited data), the field table's keywords as
    suggestions and a way to say it: one of the field's reply forms drawn with `rng` (stages/reply_forms.py),
    so a small model's answers vary as the template replies do instead of copying one example's form.
    """
    lines = []
    for r in rubrics:
        if r.info_source != "clarification":
            continue
        spec = table.by_rubric_field(r.field)
        value = phrasing_of(r).prompt_value(r, table)
        lines.append(f'- {r.id}: field "{spec.label}"; value <<<{_data(value)}>>>; suggested words: '
                     + ", ".join(spec.keywords[:10]) + f"; a way to say it: <<<{_data(slot_reply(r, table, rng))}>>>")
    return lines


def slots_reply_schema(rubrics: list[Rubric]) -> dict[str, Any]:
    """schemas/llm/clarification_slots.schema.json narrowed: rubric_id an enum of the clarification ids, one each.

    The keyword count is not narrowed: seven required strings of at most 40 characters made llama.cpp's
    grammar grow past 20 GB (the server was OOM-killed on the first such request), so the
    count is settled by `fit_keywords` instead.
    """
    ids = [r.id for r in rubrics if r.info_source == "clarification"]
    return _with_ids(reply_schema("slots"), ("slots", "rubric_id"), ids)


def fit_keywords(keywords: list[str], suggested: list[str], taken: set[str]) -> list[str]:
    """A slot's trigger keywords brought to stage 6's 7-10 (ecombench.tables.fields.SLOT_KEYWORDS), or as written.

    More than 10: the first 10 distinct ones (after ecombench.text.normalize). Fewer than 7: the field
    table's own keywords (`suggested`, the prompt's suggestions, the words template slots use) added in
    order, skipping any already there or `taken` by another slot, until 7. Qwen2.5-Coder-1.5B wrote 6 or
    11 well-chosen keywords in 5 of 40 slot replies whose answers stated the value. A list
    that cannot reach 7 is left short for stage 6 to reject.
    """
    low, high = SLOT_KEYWORDS
    out: list[str] = []
    seen: set[str] = set()
    for k in keywords:
        if normalize(k) not in seen:
            seen.add(normalize(k))
            out.append(k)
    if len(out) >= low:
        return out[:high]
    for k in suggested:
        if len(out) >= low:
            break
        if normalize(k) not in seen and normalize(k) not in taken:
            seen.add(normalize(k))
            out.append(k)
    return out if len(out) >= low else keywords


def write_clarification_llm(client: LLMClient, rubrics: list[Rubric], table: FieldTable, max_turns: int,
                            attempt: int = 0, previous: Iterable[Finding] = (),
                            rng: random.Random | None = None) -> dict[str, Any]:
    """A clarification script whose slots (trigger keywords, reply) the model wrote, linked by rubric id.

    Slot ids follow the model's order (s1, s2, ...); a slot's field is its linked rubric's field
    ("" for an id that names no rubric, which stage 6 reports; the enum of slots_reply_schema keeps a
    server with grammars from writing one). Keyword count (7-10), distinctness after normalisation,
    collisions, reachability and the value in the reply are stage 6's checks
    (ecombench.validation.leakage.check_slots), reused unchanged.

    Args:
        client: the build's LLM client.
        rubrics: the locked rubrics (only clarification rubrics reach the prompt).
        table: the field table (labels, keywords).
        max_turns: the script's max_clarification_turns.
        attempt: as write_query_llm.
        previous: as write_query_llm.
        rng: the verbalisation stage's generator, for the replies about profile requirements (written from
            templates, stages/verbalise.py `write_profile_replies`: the profile is the model's text already).

    Raises:
        ecombench.llm.LLMError: as write_query_llm, against slots_reply_schema.
    """
    by_id = {r.id: r for r in rubrics}
    profile = write_profile_replies(rubrics, table, rng)
    if not any(r.info_source == "clarification" for r in rubrics):
        return {"clarification_slots": [], "profile_replies": profile, "default_response": DEFAULT_RESPONSE,
                "max_clarification_turns": max_turns}
    ids = [r.id for r in rubrics if r.info_source == "clarification"]
    text = _fill(prompt_template("slots"), {"requirements": "\n".join(slot_lines(rubrics, table, rng)),
                                            "attempt": attempt_note(attempt, previous)})
    reply = client.call_json([{"role": "user", "content": text}], "clarification_slots", slots_reply_schema(rubrics),
                             purpose="slots",
                             check=lambda obj: id_problems([x["rubric_id"] for x in obj["slots"]], ids, "slots"))
    slots = []
    written = [[" ".join(k.split()) for k in item["trigger_keywords"]] for item in reply["slots"]]
    for i, (item, keywords) in enumerate(zip(reply["slots"], written), 1):
        rubric = by_id.get(item["rubric_id"])
        taken = {normalize(k) for j, other in enumerate(written, 1) if j != i for k in other}
        suggested = table.by_rubric_field(rubric.field).keywords if rubric else []
        slots.append({"slot_id": f"s{i}", "linked_rubric_ids": [item["rubric_id"]],
                      "field": rubric.field if rubric else "",
                      "trigger_keywords": fit_keywords(keywords, list(suggested), taken) if rubric else keywords,
                      "user_response": " ".join(item["user_response"].split())})
    return {"clarification_slots": slots, "profile_replies": profile, "default_response": DEFAULT_RESPONSE,
            "max_clarification_turns": max_turns}


# ---- review opinions -------------------------------------------------------------------------------


def opinion_reviews(reviews: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reviews shown to the opinion writer.

    Positive, long enough (ecombench.stages.reviews rules), most helpful first, then by review_id; at most
    REVIEWS_IN_PROMPT.
    """
    eligible = [r for r in reviews
                if (r.get("rating") or 0) >= MIN_RATING and len(r.get("text") or "") >= MIN_TEXT_CHARS]
    eligible.sort(key=lambda r: (-(r.get("helpful_vote") or 0), r["review_id"]))
    return eligible[:REVIEWS_IN_PROMPT]


def write_opinions_llm(client: LLMClient, product: dict[str, Any],
                       n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Review opinions phrased by the model from the target's own reviews (not yet checked).

    Args:
        client: the build's LLM client.
        product: the target's products.parquet row with "reviews" (reviews.parquet rows).
        n: opinions wanted (the intent's review_opinions).

    Returns:
        (cited, shown): the model's opinions as {"phrase", "review_ids"} and the reviews its prompt
        showed (opinion_reviews). ecombench.validation.opinions.check_opinions decides which stand. No
        eligible review: ([], []) without a call (the candidate ends as no_reviews).

    The prompt does not depend on the attempt: opinions are written once per candidate (stage 2), and
    their rejections end the candidate (ecombench.pipeline.candidate.NO_RETRY).

    Raises:
        ecombench.llm.LLMError: as write_query_llm, against schemas/llm/review_opinions.schema.json.
    """
    shown = opinion_reviews(product.get("reviews") or [])
    if not shown:
        return [], []
    blocks = "\n".join(f"<<<REVIEW id={_data(r['review_id'])} rating={r.get('rating')}\n"
                       f"{_data(r.get('title') or '')}. {_data((r.get('text') or '')[:REVIEW_CHARS])}>>>"
                       for r in shown)
    text = _fill(prompt_template("opinions"), {"n": str(n), "product": _data(product.get("title") or ""),
                                               "reviews": blocks})
    # Review ids stay free strings: an unknown one is opinion_unknown_review (validation.opinions), with its evidence.
    reply = client.call_json([{"role": "user", "content": text}], "review_opinions", reply_schema("opinions"),
                             purpose="opinions")
    return [{"phrase": " ".join(o["phrase"].split()), "review_ids": list(o["review_ids"])}
            for o in reply["opinions"]], shown
