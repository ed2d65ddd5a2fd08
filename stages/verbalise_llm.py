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
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from rubric_types import kind_of
from schemas.models import Rubric
from stages.fields import FieldTable
from stages.hashing import sha256_hex
from stages.llm import LLMClient
from stages.text import contains_phrase
from stages.verbalise import DEFAULT_RESPONSE, persona_entry, persona_vocab, requirement_phrase

PROMPTS = Path(__file__).with_name("prompts")
SCHEMAS = Path(__file__).resolve().parent.parent / "schemas" / "llm"
VERBALISER_ID = "llm-v2"
# part -> (prompt file, reply schema file); the judges are validation/judge.py's: "judge" is stage 7's,
# "review_judge" the grader's (a review opinion code cannot decide).
PARTS = {"query": ("query.md", "query_plan.schema.json"),
         "persona": ("persona.md", "persona_background.schema.json"),
         "slots": ("slots.md", "clarification_slots.schema.json"),
         "opinions": ("opinions.md", "review_opinions.schema.json"),
         "judge": ("judge.md", "judge_verdict.schema.json"),
         "review_judge": ("review_judge.md", "review_judgement.schema.json")}
NOISE_FIELDS = ("demographics.age_range", "demographics.household", "demographics.location_type",
                "lifestyle.occupation", "lifestyle.hobbies", "shopping_habits.shopping_frequency",
                "shopping_habits.price_sensitivity", "shopping_habits.preferred_channel")
REVIEWS_IN_PROMPT = 8  # most helpful eligible reviews shown to the opinion writer
REVIEW_CHARS = 600  # each review's text is cut here in the prompt (the check reads the whole text)


@lru_cache(maxsize=8)
def prompt_template(part: str = "query") -> str:
    """The prompt file of a part (stages/prompts/<part>.md)."""
    return (PROMPTS / PARTS[part][0]).read_text(encoding="utf-8")


@lru_cache(maxsize=8)
def reply_schema(part: str = "query") -> dict[str, Any]:
    """The JSON Schema a part's reply must match (schemas/llm/)."""
    return json.loads((SCHEMAS / PARTS[part][1]).read_text(encoding="utf-8"))


def query_schema() -> dict[str, Any]:
    """schemas/llm/query_plan.schema.json."""
    return reply_schema("query")


def prompt_sha256(parts: Iterable[str] | None = None) -> dict[str, str]:
    """sha256 of the prompt and reply schema files of `parts` (None: every part), by file name, for a manifest."""
    out = {}
    for prompt, schema in (PARTS[p] for p in (PARTS if parts is None else parts)):
        out[prompt] = sha256_hex((PROMPTS / prompt).read_bytes())
        out[schema] = sha256_hex((SCHEMAS / schema).read_bytes())
    return dict(sorted(out.items()))


def _data(text: str) -> str:
    """Catalog or review text made safe to sit between <<< and >>>: the delimiters cannot be closed from inside."""
    return " ".join(str(text).replace("<<<", "«").replace(">>>", "»").split())


# ---- query ----------------------------------------------------------------------------------------


def requirement_lines(rubrics: list[Rubric], table: FieldTable, cues: dict[str, str]) -> list[str]:
    """The query's requirements as the prompt lists them, "- r2: made of Mesh" (same phrases as the template
    verbaliser; implicit rubrics as "- r3: CUE: <cue>"; catalog text made delimiter-safe)."""
    lines = []
    for r in rubrics:
        if r.info_source != "query":
            continue
        role = kind_of(r).query_role
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
        lines.append(f"- {r.id}: {text}")
    return lines


def _product_type(rubrics: list[Rubric]) -> str:
    entity = next((str(r.expected_value) for r in rubrics if kind_of(r).query_role == "subject"), "a product")
    return _data(entity)


def write_query_llm(client: LLMClient, rubrics: list[Rubric], table: FieldTable,
                    cues: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
    """The visible query and its query surfaces, written by the model.

    Args:
        client: the build's LLM client.
        rubrics: the locked rubrics (only query rubrics reach the prompt).
        table: the field table (requirement phrases).
        cues: {rubric id: cue clause} of implicit rubrics; the prompt gives the cue, never the value.

    Returns:
        (query with whitespace collapsed, {rubric id: query_surface}). Stage 7
        (validation.semantic.check_query_surfaces) checks each surface lies in the query and
        states its rubric; a surface for an id that is no query rubric is kept so that check reports it.

    Raises:
        stages.llm.LLMError: llm_error, llm_refusal, or llm_invalid_output (never matched
            schemas/llm/query_plan.schema.json).
    """
    text = (prompt_template("query").replace("{product_type}", _product_type(rubrics))
            .replace("{requirements}", "\n".join(requirement_lines(rubrics, table, cues or {}))))
    reply = client.call_json([{"role": "user", "content": text}], "query_plan", reply_schema("query"), purpose="query")
    surfaces: dict[str, str] = {}
    for item in reply["query_surfaces"]:
        surfaces.setdefault(item["rubric_id"], " ".join(item["query_surface"].split()))
    return " ".join(reply["user_query"].split()), dict(sorted(surfaces.items(), key=lambda kv: int(kv[0][1:])))


# ---- persona background ----------------------------------------------------------------------------


def noise_options(rubrics: list[Rubric]) -> dict[str, list[str]]:
    """The whitelisted options of each noise field, minus any that repeat a rubric value (token-aware, as
    stages.verbalise.write_persona skips them). Household and occupation are listed per age range
    ("demographics.household for 18-24"), as persona_vocab.toml whitelists them and stage 6 checks."""
    values = [v for r in rubrics for v in kind_of(r).forms(r)]
    vocab = persona_vocab()

    def keep(options: list[str]) -> list[str]:
        return [o for o in options if not any(contains_phrase(o, v) or contains_phrase(v, o) for v in values)]

    out: dict[str, list[str]] = {}
    for path in NOISE_FIELDS:
        group, name = path.split(".")
        if name in ("household", "occupation"):
            for age, lists in vocab["by_age"].items():
                out[f"{path} for {age}"] = keep(lists[name])
        else:
            out[path] = keep(vocab[group][name])
    return out


def write_persona_llm(client: LLMClient, rubrics: list[Rubric], table: FieldTable,
                      user_id: str) -> dict[str, Any]:
    """A persona whose background (demographics, lifestyle, shopping_habits) the model chose.

    The model sees the product type and each noise field's whitelisted options that repeat no
    rubric value, never a rubric value. `product_requirements` is not the model's: it holds exactly
    the persona rubrics through stages.verbalise.persona_entry (the form stage 7 checks). Stage 6
    rejects a background value off the whitelist (persona_noise_not_whitelisted) or repeating a
    rubric value (persona_noise_leak).

    Raises:
        stages.llm.LLMError: as write_query_llm, against schemas/llm/persona_background.schema.json.
    """
    fields = "\n".join(f"- {path}: " + " | ".join(options) for path, options in noise_options(rubrics).items())
    text = (prompt_template("persona").replace("{product_type}", _product_type(rubrics))
            .replace("{fields}", fields))
    reply = client.call_json([{"role": "user", "content": text}], "persona_background", reply_schema("persona"),
                             purpose="persona")
    persona: dict[str, Any] = {"user_id": user_id}
    for group in ("demographics", "lifestyle", "shopping_habits"):
        persona[group] = {k: ([" ".join(x.split()) for x in v] if isinstance(v, list) else " ".join(v.split()))
                          for k, v in reply[group].items()}
    persona["product_requirements"] = dict(persona_entry(r, table) for r in rubrics if r.info_source == "persona")
    return persona


# ---- clarification slots -------------------------------------------------------------------------


def slot_lines(rubrics: list[Rubric], table: FieldTable) -> list[str]:
    """One prompt line per clarification rubric: id, field label, the value (delimited data) and the
    field table's keywords as suggestions."""
    lines = []
    for r in rubrics:
        if r.info_source != "clarification":
            continue
        spec = table.by_rubric_field(r.field)
        value = kind_of(r).prompt_value(r, table)
        lines.append(f'- {r.id}: field "{spec.label}"; value <<<{_data(value)}>>>; suggested words: '
                     + ", ".join(spec.keywords[:10]))
    return lines


def write_clarification_llm(client: LLMClient, rubrics: list[Rubric], table: FieldTable,
                            max_turns: int) -> dict[str, Any]:
    """A clarification script whose slots (trigger keywords, reply) the model wrote, linked by rubric id.

    Slot ids follow the model's order (s1, s2, ...); a slot's field is its linked rubric's field
    ("" for an id that names no rubric, which stage 6 reports). Keyword count (7-10), distinctness
    after normalisation, collisions, reachability and the value in the reply are stage 6's checks
    (validation.leakage.check_slots), reused unchanged.

    Raises:
        stages.llm.LLMError: as write_query_llm, against schemas/llm/clarification_slots.schema.json.
    """
    by_id = {r.id: r for r in rubrics}
    if not any(r.info_source == "clarification" for r in rubrics):
        return {"clarification_slots": [], "default_response": DEFAULT_RESPONSE, "max_clarification_turns": max_turns}
    text = prompt_template("slots").replace("{requirements}", "\n".join(slot_lines(rubrics, table)))
    reply = client.call_json([{"role": "user", "content": text}], "clarification_slots", reply_schema("slots"),
                             purpose="slots")
    slots = []
    for i, item in enumerate(reply["slots"], 1):
        rubric = by_id.get(item["rubric_id"])
        slots.append({"slot_id": f"s{i}", "linked_rubric_ids": [item["rubric_id"]],
                      "field": rubric.field if rubric else "",
                      "trigger_keywords": [" ".join(k.split()) for k in item["trigger_keywords"]],
                      "user_response": " ".join(item["user_response"].split())})
    return {"clarification_slots": slots, "default_response": DEFAULT_RESPONSE, "max_clarification_turns": max_turns}


# ---- review opinions -------------------------------------------------------------------------------


def opinion_reviews(reviews: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reviews shown to the opinion writer: positive, long enough (stages.reviews rules), most helpful
    first, then by review_id; at most REVIEWS_IN_PROMPT."""
    from stages.reviews import MIN_RATING, MIN_TEXT_CHARS

    eligible = [r for r in reviews if (r.get("rating") or 0) >= MIN_RATING and len(r.get("text") or "") >= MIN_TEXT_CHARS]
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
        showed (opinion_reviews). validation.opinions.check_opinions decides which stand. No
        eligible review: ([], []) without a call (the candidate ends as no_reviews).

    Raises:
        stages.llm.LLMError: as write_query_llm, against schemas/llm/review_opinions.schema.json.
    """
    shown = opinion_reviews(product.get("reviews") or [])
    if not shown:
        return [], []
    blocks = "\n".join(f"<<<REVIEW id={_data(r['review_id'])} rating={r.get('rating')}\n"
                       f"{_data(r.get('title') or '')}. {_data((r.get('text') or '')[:REVIEW_CHARS])}>>>" for r in shown)
    text = (prompt_template("opinions").replace("{n}", str(n)).replace("{product}", _data(product.get("title") or ""))
            .replace("{reviews}", blocks))
    reply = client.call_json([{"role": "user", "content": text}], "review_opinions", reply_schema("opinions"),
                             purpose="opinions")
    return [{"phrase": " ".join(o["phrase"].split()), "review_ids": list(o["review_ids"])} for o in reply["opinions"]], shown
