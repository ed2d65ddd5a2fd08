"""A published split as UserSimCRS input that its own loaders read: needs, items, domain, config, dialogues.

Written against UserSimCRS's code (iai-group/UserSimCRS, commit 1e7d339), not its prose docs, which
show `target_items` as plain strings:

- an information need is what `InformationNeed.from_dict` reads (`usersimcrs/core/information_need.py`
  l.96-104): `target_items` as `{"item_id", "properties"}` mappings (`Item(**item)`), `constraints`
  (slot -> value) and `requests` (slots); requests never repeat a constrained slot, as UserSimCRS's
  own generator keeps them apart (l.47-51). ecombench.interop.information_need loads them and carries
  the simulator class that draws them;
- items are numbered 1..N in parent_asin order, with the ASIN as the `ASIN` property: UserSimCRS's
  `ItemCollection.exists` builds an unquoted `WHERE id = {item_id}` (`usersimcrs/items/item_collection.py`
  l.121-134), which an ASIN id breaks and a leading-zero id silently misses;
- the config overrides every key of UserSimCRS's default config (`config/default/config_default.yaml`)
  that would otherwise point at its movie data, with absolute paths: UserSimCRS opens every path
  as given, relative to the process's working directory (`usersimcrs/utils/simulation_utils.py`
  l.129-172), never to the config file;
- `dialogues.json` holds one scripted dialogue per task (ecombench.interop.dialoguekit's format) for the
  interaction model, the cosine NLU and the template NLG, which all read that file (l.159-178, 235-236,
  269-276), with the agent id the config names and the user id "User".

The mapping from a task (constraints, their sources, what stays hidden until asked) is in
docs/crs-formats.md.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from ecombench.catalog.facts import page_values
from ecombench.interop.dialoguekit import (
    ACCEPT,
    DISCLOSE,
    ELICIT,
    NON_DISCLOSE,
    REVEAL,
    USER_ID,
    dialogue_record,
    outcome_utterance,
    query_values,
    require_dialoguekit,
    reveal_utterance,
    rubric_values,
    slot_value,
    write_json,
)
from ecombench.interop.slots import TOP_LEVEL_SLOTS, constraint_slot, constraint_value, slot_name, spoken_value
from ecombench.stages.phrasing import slot_reply
from ecombench.tables.fields import FieldTable

MULTI_VALUE_DELIMITER = "|"
DOMAIN_NAME = "ecombench"
ITEM_TABLE = "ecombench_items"
ITEM_TYPE = "product"
# The agent id of the seed dialogues; UserSimCRS keeps only dialogues of the config's agent_id.
AGENT_ID = "ecombench-agent"
SIMULATOR_CLASS = "ecombench.interop.information_need.AgendaBasedSimulator"
# Slots the shopper cannot state from their own knowledge: code judges them from catalog data.
VERIFY_SLOTS = {"review_opinion": "REVIEWS", "budget_match": "BUDGET"}
# The item column an agent can report for a slot to verify (a budget is checked against the price).
REPORTED_BY = {"BUDGET": "PRICE", "AVERAGE_RATING": "AVERAGE_RATING", "RATING_NUMBER": "RATING_NUMBER"}
# How a constraint's source says when a simulator states it: in the opening request, from the saved
# profile, or only when the agent asks about its slot. A slot with several sources takes the most open.
DISCLOSURE = {"query": "upfront", "persona": "profile", "clarification": "when_asked"}
FILES = ("information_needs.json", "items.csv", "domain.yaml", "interaction_model.yaml", "dialogues.json",
         "config.yaml")

# The CIR6 intents of UserSimCRS's data/interaction_models/crs_v1.yaml, which our dialogues use: the eleven
# required intents (interaction_model.py l.42-54 raise without them) and the agent intent groups.
INTERACTION_MODEL: dict[str, Any] = {
    "name": "ecombench_cir6",
    "description": "CIR6 intents (as UserSimCRS's crs_v1) for ecombench shopping dialogues",
    "required_intents": {"INTENT_START": NON_DISCLOSE, "INTENT_STOP": "COMPLETE", "INTENT_ITEM_CONSUMED": "NOTE.YES",
                         "INTENT_LIKE": "NOTE.LIKE", "INTENT_DISLIKE": "NOTE.DISLIKE",
                         "INTENT_NEUTRAL": "NOTE.NEUTRAL", "INTENT_DISCLOSE": DISCLOSE, "INTENT_INQUIRE": "INQUIRE",
                         "INTENT_DONT_KNOW": "DONT-KNOW", "INTENT_YES": "YES", "INTENT_NO": "NO"},
    "user_intents": {
        "COMPLETE": {"expected_agent_intents": ["END"]},
        NON_DISCLOSE: {"expected_agent_intents": ["INQUIRE", ELICIT, NON_DISCLOSE]},
        DISCLOSE: {"expected_agent_intents": [ELICIT, REVEAL]},
        "INQUIRE": {"expected_agent_intents": [ELICIT, REVEAL]},
        "NOTE.DISLIKE": {"preference_contingent": "NEGATIVE"},
        "NOTE.LIKE": {"expected_agent_intents": [REVEAL], "preference_contingent": "POSITIVE"},
        ACCEPT: {"expected_agent_intents": ["END"]},
    },
    "agent_elicit_intents": ["INQUIRE", ELICIT],
    "agent_set_retrieval": [REVEAL],
    "agent_inquire_intents": ["INQUIRE", ELICIT],
}


def information_need(task: dict[str, Any], item_ids: dict[str, str], titles: dict[str, str]) -> dict[str, Any]:
    """One task as a UserSimCRS information need, with ecombench's metadata.

    Args:
        task: a published task record (tasks.jsonl line).
        item_ids: parent_asin -> item id of the exported collection.
        titles: parent_asin -> title.

    Returns:
        {"id", "target_items": [{"item_id", "properties": {"ASIN", "NAME"}}], "constraints": {slot: value},
        "requests": [slot], "metadata": {...}}. One constraint per rubric (two on one slot give a list, a
        multi-valued slot; an exclusion is the slot NOT_<X> with the excluded values). The target items are
        the task's answer set, the target first. Requests are the item columns an agent reports to let the
        shopper verify what only the catalog knows (a price against a budget), never a constrained slot.
        `metadata.disclosure` says per constraint slot when a simulator states it (upfront, profile,
        when_asked); `metadata.constraints` keeps each rubric's id, type, source, field and exact value;
        `metadata.verify_slots` the constraints judged from catalog data (reviews, budget, ratings).
    """
    constraints: dict[str, Any] = {}
    meta: dict[str, list[dict[str, Any]]] = {}
    verify: list[str] = []
    for r in task["rubrics"]:
        slot, value = constraint_slot(r), constraint_value(r)
        if slot in constraints:
            before = constraints[slot] if isinstance(constraints[slot], list) else [constraints[slot]]
            constraints[slot] = before + (value if isinstance(value, list) else [value])
        else:
            constraints[slot] = value
        meta.setdefault(slot, []).append({"rubric_id": r["id"], "type": r["type"], "info_source": r["info_source"],
                                          "field": r["field"], "expected_value": r["expected_value"]})
        judged = r["type"] in VERIFY_SLOTS or (r["type"] == "numeric_range"
                                               and r["field"] in ("average_rating", "rating_number"))
        if judged and slot not in verify:
            verify.append(slot)
    requests = list(dict.fromkeys(REPORTED_BY[s] for s in verify if s in REPORTED_BY
                                  and REPORTED_BY[s] not in constraints))
    order = list(DISCLOSURE.values())
    disclosure = {slot: min((DISCLOSURE[m["info_source"]] for m in ms), key=order.index) for slot, ms in meta.items()}
    by_id = {r["id"]: r for r in task["rubrics"]}
    script = task["clarification_script"]
    slots = [{"slot_id": s["slot_id"], "constraint_slots": [constraint_slot(by_id[i]) for i in s["linked_rubric_ids"]
                                                            if i in by_id],
              "trigger_keywords": list(s["trigger_keywords"]), "user_response": s["user_response"]}
             for s in script["clarification_slots"]]
    target = task["target_product"]["parent_asin"]
    answers = list(dict.fromkeys([target, *(task.get("answer_set") or [])]))
    return {"id": task["id"],
            "target_items": [{"item_id": item_ids[a], "properties": {"ASIN": a, "NAME": titles.get(a, "")}}
                             for a in answers if a in item_ids],
            "constraints": constraints, "requests": requests,
            "metadata": {"task_id": task["id"], "intent": task["intent"], "user_query": task["user_query"],
                         "target_product": target, "target_item_id": item_ids.get(target), "answer_set": answers,
                         "implicit_rubric_ids": list(task.get("implicit_rubric_ids") or []),
                         "disclosure": disclosure, "hidden_slots": [s for s, d in disclosure.items() if d != "upfront"],
                         "verify_slots": verify, "constraints": meta, "clarification_slots": slots,
                         "default_response": script.get("default_response")}}


def item_columns(table: FieldTable) -> list[tuple[str, str, bool]]:
    """Item-collection columns after ID, ASIN and NAME: (column, slot, multi-valued), each named by its slot."""
    cols = [(slot, slot, False) for slot in TOP_LEVEL_SLOTS.values()]
    seen = {c for c, _, _ in cols}
    for spec in table.detail_fields():
        slot = slot_name(spec.name)
        if slot not in seen:
            seen.add(slot)
            cols.append((slot, slot, True))
    return cols


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def item_row(product: dict[str, Any], item_id: str, table: FieldTable) -> dict[str, str]:
    """One product as an item-collection row.

    ID (the numeric item id), ASIN, NAME, top-level fields and each detail field's values joined by "|": the
    values the page states (its product facts, as the attribute checkers compare them; a product without facts: its
    label options), a "|" inside a value becoming "/".
    """
    row = {"ID": item_id, "ASIN": product["parent_asin"], "NAME": product.get("title") or ""}
    for name, slot in TOP_LEVEL_SLOTS.items():
        row[slot] = _cell(product.get(name))
    by_slot: dict[str, list[str]] = {}
    for spec in table.detail_fields():
        slot = slot_name(spec.name)
        for opt in page_values(product, spec):
            clean = opt.replace(MULTI_VALUE_DELIMITER, "/")
            if clean not in by_slot.setdefault(slot, []):
                by_slot[slot].append(clean)
    for col, _, multi in item_columns(table):
        if multi:
            row[col] = MULTI_VALUE_DELIMITER.join(by_slot.get(col, []))
    return row


def domain(needs: list[dict[str, Any]], table: FieldTable, needs_path: Path | None = None) -> dict[str, Any]:
    """The domain file (UserSimCRS's data/domains/*.yaml form, read by `SimulationDomain`).

    slot_names: ASIN, NAME, every item column and every constraint or requested slot (an item keeps only
    the properties its domain names, usersimcrs/items/item.py l.30-36); requestable_slots: the top-level
    item columns and every requested slot; informable_slots: every constrained slot. `information_needs`
    (ignored by UserSimCRS) is where ecombench.interop.information_need's simulator finds the needs.
    """
    columns = [slot for _, slot, _ in item_columns(table)]
    informable = sorted({s for n in needs for s in n["constraints"]})
    requested = sorted({s for n in needs for s in n["requests"]})
    names = list(dict.fromkeys(["ASIN", "NAME", *columns, *informable, *requested]))
    out: dict[str, Any] = {"name": DOMAIN_NAME, "slot_names": {s: None for s in names},
                           "requestable_slots": list(dict.fromkeys([*TOP_LEVEL_SLOTS.values(), *requested])),
                           "informable_slots": informable}
    if needs_path is not None:
        out["information_needs"] = str(needs_path)
    return out


def domain_mapping(table: FieldTable) -> dict[str, Any]:
    """Item column -> slot (multi-valued with its delimiter), as `ItemCollection.load_items_csv` reads it.

    The id column is not mapped (load_items_csv pops it first, item_collection.py l.170-219).
    """
    mapping: dict[str, Any] = {"ASIN": {"slot": "ASIN"}, "NAME": {"slot": "NAME"}}
    for col, slot, multi in item_columns(table):
        mapping[col] = ({"slot": slot, "multi-valued": True, "delimiter": MULTI_VALUE_DELIMITER} if multi
                        else {"slot": slot})
    return mapping


def simulator_config(out: Path, table: FieldTable, name: str, needs: int) -> dict[str, Any]:
    """The complete UserSimCRS run config for the export in `out` (absolute paths; see the module docstring).

    Agent keys are placeholders for the CRS under test (agent_id must stay equal to the seed dialogues'
    agent id, or be changed in both). The simulator is ecombench.interop.information_need's, which draws
    the exported needs in order instead of random ones.
    """
    base = out.resolve()
    return {
        "output_name": name, "debug": False, "fix_random_seed": True, "num_simulated_dialogues": needs,
        "agent_id": AGENT_ID, "agent_uri": "http://127.0.0.1:5005",
        "agent_class_path": "crs_agent_wrapper.ievalm_agent.iEvaLMAgent",
        "simulator_class_path": SIMULATOR_CLASS, "simulator_id": "User Simulator",
        "item_type": ITEM_TYPE,
        "domain": str(base / "domain.yaml"), "intents": str(base / "interaction_model.yaml"),
        "collection_db_path": str(base / "items.db"), "collection_name": ITEM_TABLE,
        "items": str(base / "items.csv"), "id_col": "ID", "csv_delimiter": ",",
        "domain_mapping": domain_mapping(table),
        "ratings": None, "historical_ratings_ratio": 0.8,
        "dialogues": str(base / "dialogues.json"),
        "nlu": {"type": "cosine"}, "nlg": {"type": "conditional"},
    }


def _utterance(text: str, participant: str, intent: str, values: list[Any] | None = None,
               metadata: dict[str, Any] | None = None) -> Any:
    # deferred: an optional dependency (the crs extra)
    from dialoguekit.core.annotated_utterance import AnnotatedUtterance
    from dialoguekit.core.dialogue_act import DialogueAct
    from dialoguekit.core.intent import Intent
    from dialoguekit.participant import DialogueParticipant

    return AnnotatedUtterance(text=text, participant=DialogueParticipant[participant],
                              dialogue_acts=[DialogueAct(Intent(intent), values or [])], metadata=metadata or {})


def _label(rubric: dict[str, Any], table: FieldTable) -> str:
    try:
        return table.by_rubric_field(rubric["field"]).label
    except KeyError:
        return rubric["field"].removeprefix("details.").lower()


def seed_reply(rubric: dict[str, Any], table: FieldTable) -> str:
    """A reply stating one requirement with the words of its constraint value, as a template can refill it.

    A bound, a budget or an opinion is said with `constraint_value`'s words ("The price should be at
    most 25."), the value UserSimCRS's NLG puts back into the template; the product type by name; an
    attribute or an exclusion as the build's clarification reply says it.
    """
    value = spoken_value(rubric)
    if rubric["type"] == "numeric_range":
        return f"The {_label(rubric, table)} should be {value}."
    if rubric["type"] == "budget_match":
        return f"I can pay {value}."
    if rubric["type"] == "review_opinion":
        return f"Reviews should mention {value}."
    if rubric["type"] == "entity_match":
        return f"I'm looking for {value}."
    try:
        return slot_reply(rubric, table)
    except (KeyError, TypeError, ValueError):  # a rubric type without a reply of its own
        return f"The {_label(rubric, table)} should be {value}."


def seed_dialogue(task: dict[str, Any], product: dict[str, Any], table: FieldTable) -> Any:
    """A scripted dialogue of one task for UserSimCRS's interaction model, NLU and template NLG.

    The agent greets; the shopper states the query; the agent asks a vague question (the shopper's
    default reply, DISCLOSE.NON-DISCLOSE) and then about each constraint slot in turn. The shopper
    answers with the task's clarification reply when it states the value, else with `seed_reply`, so
    every constraint slot has a one-slot DISCLOSE utterance whose value a template can replace. The
    agent recommends the target, the shopper accepts, the agent and the shopper close.
    """
    # deferred: an optional dependency (the crs extra)
    from dialoguekit.core.dialogue import Dialogue

    d = Dialogue(AGENT_ID, USER_ID, f"{task['id']}/seed")
    d.add_utterance(_utterance("Hi! What are you shopping for today?", "AGENT", NON_DISCLOSE))
    d.add_utterance(_utterance(task["user_query"], "USER", DISCLOSE, query_values(task, table)))
    d.add_utterance(_utterance("Is there anything else I should know?", "AGENT", "INQUIRE"))
    d.add_utterance(_utterance(task["clarification_script"].get("default_response") or "Nothing in particular.",
                               "USER", NON_DISCLOSE))
    replies = {rid: s["user_response"] for s in task["clarification_script"]["clarification_slots"]
               for rid in s["linked_rubric_ids"]}
    asked: set[str] = set()
    for r in task["rubrics"]:
        slot = constraint_slot(r)
        if slot in asked:
            continue
        asked.add(slot)
        values = rubric_values(replies[r["id"]], r, table, unstated=False) if r["id"] in replies else []
        reply = replies[r["id"]] if values else seed_reply(r, table)
        words = spoken_value(r)
        if not values and words not in reply:
            values = rubric_values(reply, r, table, unstated=False)
        if not values:  # the value in words, literally (a reply in other words is replaced by one that has them)
            if words not in reply:
                reply = f"The {_label(r, table)} should be {words}."
            values = [slot_value(slot, words, reply.index(words), reply.index(words) + len(words))]
        label = _label(r, table)
        question = f"What {label} do you have in mind?"
        d.add_utterance(_utterance(question, "AGENT", ELICIT, [slot_value(slot, label, 5, 5 + len(label))]))
        d.add_utterance(_utterance(reply, "USER", DISCLOSE, values))
    text, values = reveal_utterance({"product_id": product["parent_asin"], "title": product.get("title")})
    d.add_utterance(_utterance(text, "AGENT", REVEAL, values))
    d.add_utterance(outcome_utterance("accepted", task["id"], "target"))
    d.add_utterance(_utterance("Glad I could help. Goodbye!", "AGENT", "END"))
    d.add_utterance(_utterance("Thanks, bye!", "USER", "COMPLETE"))
    d._metadata = {"task_id": task["id"], "intent": task["intent"], "agent": AGENT_ID, "user": "seed",
                   "predicted_product_id": product["parent_asin"], "outcome": "accepted"}
    return d


def write_usersimcrs(tasks: list[dict[str, Any]], products: Iterable[dict[str, Any]], table: FieldTable,
                     out: Path, name: str = "ecombench") -> dict[str, Any]:
    """Write FILES (needs, items, domain, interaction model, seed dialogues, config) into `out`.

    Args:
        tasks: the split's task records (sorted by id on output).
        products: catalog product rows (products.parquet rows as dicts); numbered 1..N in parent_asin order.
        table: the field table (detail fields -> item columns).
        out: output directory (created; existing files of these names are replaced, and a stale `items.db`,
            which UserSimCRS would append to, is removed).
        name: the run's output_name in the config.

    Returns:
        {"information_needs", "items", "slots", "dialogues", "files": {name: path}}.

    Raises:
        ValueError: a task's target item is missing from the products (the collection would not hold it).
        SettingError: dialoguekit (the crs extra) is not installed.
    """
    require_dialoguekit()
    out.mkdir(parents=True, exist_ok=True)
    rows = sorted(products, key=lambda p: p["parent_asin"])
    item_ids = {p["parent_asin"]: str(i) for i, p in enumerate(rows, 1)}
    titles = {p["parent_asin"]: p.get("title") or "" for p in rows}
    ordered = sorted(tasks, key=lambda t: t["id"])
    missing = sorted({t["target_product"]["parent_asin"] for t in ordered} - set(item_ids))
    if missing:
        raise ValueError(f"{len(missing)} target item(s) are not in the catalog's products, e.g. {missing[0]}; "
                         "export with the split's own catalog (--catalog)")
    needs = [information_need(t, item_ids, titles) for t in ordered]
    with (out / "items.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["ID", "ASIN", "NAME", *[c for c, _, _ in item_columns(table)]])
        writer.writeheader()
        for p in rows:
            writer.writerow(item_row(p, item_ids[p["parent_asin"]], table))
    needs_path = (out / "information_needs.json").resolve()
    needs_path.write_text(json.dumps(needs, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    dom = domain(needs, table, needs_path)
    by_asin = {p["parent_asin"]: p for p in rows}
    dialogues = [dialogue_record(seed_dialogue(t, by_asin[t["target_product"]["parent_asin"]], table))
                 for t in ordered]
    write_json(dialogues, out / "dialogues.json")
    (out / "items.db").unlink(missing_ok=True)
    for file, data in (("domain.yaml", dom), ("interaction_model.yaml", INTERACTION_MODEL),
                       ("config.yaml", simulator_config(out, table, name, len(needs)))):
        (out / file).write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return {"information_needs": len(needs), "items": len(rows), "slots": len(dom["slot_names"]),
            "dialogues": len(dialogues), "files": {n: str(out / n) for n in FILES}}
