"""A published split as UserSimCRS input: information needs, an item collection CSV and a domain file.

UserSimCRS (iai-group, v2) simulates a user from an *information need*: `constraints` (slot ->
value the wanted item must satisfy), `requests` (slots the user wants information about) and
`target_items` (the ground-truth items) — docs/source/information_need.rst. Its item collection is
a CSV with `ID` and `NAME` columns whose other columns map to domain slots through the simulator
config's `domain_mapping` (`ItemCollection.load_items_csv`, docs/source/configuration.rst), and
its domain is a YAML file with `name`, `slot_names`, `requestable_slots` and `informable_slots`
(data/domains/movies.yaml). The mapping from an ecombench task is in docs/crs-formats.md: one
constraint per rubric (its source and type kept as metadata), requests for what only the catalog
can tell the shopper, and the task's answer set as the target items.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ecombench.catalog.details import detail_options
from ecombench.interop.slots import TOP_LEVEL_SLOTS, constraint_slot, constraint_value, slot_name
from ecombench.tables.fields import FieldTable

MULTI_VALUE_DELIMITER = "|"
DOMAIN_NAME = "ecombench"


def _requested_slot(rubric: dict[str, Any]) -> str | None:
    """A slot the shopper must learn from the agent: what reviews say, a price after coupons, a rating."""
    if rubric["type"] in ("review_opinion", "budget_match"):
        return constraint_slot(rubric)
    if rubric["type"] == "numeric_range" and rubric["field"] in ("average_rating", "rating_number"):
        return constraint_slot(rubric)
    return None


def information_need(task: dict[str, Any]) -> dict[str, Any]:
    """One task as a UserSimCRS information need (docs/source/information_need.rst), with ecombench metadata.

    Args:
        task: a published task record (tasks.jsonl line).

    Returns:
        {"id", "constraints": {slot: value}, "requests": [slot], "target_items": [parent_asin],
        "metadata": {...}}. Two rubrics on one slot give a list value (a multi-valued slot). Requests
        are the slots judged from catalog data the shopper cannot state: review opinions, a price
        after coupons, ratings. `target_items` is the task's answer set (every catalog product
        satisfying all code-checkable rubrics, the target among them). `metadata.constraints` keeps,
        per slot, each rubric's id, type, info_source (query / persona / clarification), field and exact
        expected value, so a simulator can hold the persona and clarification constraints back;
        `metadata.clarification_slots` holds the scripted shopper's slots (constraint slots, trigger keywords,
        reply) and `metadata.default_response` its reply to anything else.
    """
    constraints: dict[str, Any] = {}
    meta: dict[str, list[dict[str, Any]]] = {}
    requests: list[str] = []
    for r in task["rubrics"]:
        slot, value = constraint_slot(r), constraint_value(r)
        if slot in constraints:
            before = constraints[slot] if isinstance(constraints[slot], list) else [constraints[slot]]
            constraints[slot] = before + (value if isinstance(value, list) else [value])
        else:
            constraints[slot] = value
        meta.setdefault(slot, []).append({"rubric_id": r["id"], "type": r["type"], "info_source": r["info_source"],
                                          "field": r["field"], "expected_value": r["expected_value"]})
        asked = _requested_slot(r)
        if asked is not None and asked not in requests:
            requests.append(asked)
    by_id = {r["id"]: r for r in task["rubrics"]}
    script = task["clarification_script"]
    slots = [{"slot_id": s["slot_id"], "constraint_slots": [constraint_slot(by_id[i]) for i in s["linked_rubric_ids"]
                                                            if i in by_id],
              "trigger_keywords": list(s["trigger_keywords"]), "user_response": s["user_response"]}
             for s in script["clarification_slots"]]
    targets = list(task.get("answer_set") or [task["target_product"]["parent_asin"]])
    return {"id": task["id"], "constraints": constraints, "requests": requests, "target_items": targets,
            "metadata": {"task_id": task["id"], "intent": task["intent"], "user_query": task["user_query"],
                         "target_product": task["target_product"]["parent_asin"],
                         "implicit_rubric_ids": list(task.get("implicit_rubric_ids") or []),
                         "constraints": meta, "clarification_slots": slots,
                         "default_response": script.get("default_response")}}


def item_columns(table: FieldTable) -> list[tuple[str, str, bool]]:
    """Item-collection columns after ID and NAME: (column, slot, multi-valued). Columns are named by their slot."""
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


def item_row(product: dict[str, Any], table: FieldTable) -> dict[str, str]:
    """One product as an item-collection row.

    ID, NAME, top-level fields and each detail field's options joined by "|" (the options the
    attribute checkers compare; a "|" inside an option becomes "/").
    """
    row = {"ID": product["parent_asin"], "NAME": product.get("title") or ""}
    for name, slot in TOP_LEVEL_SLOTS.items():
        row[slot] = _cell(product.get(name))
    by_slot: dict[str, list[str]] = {}
    for spec in table.detail_fields():
        slot = slot_name(spec.name)
        for opt in detail_options(product, spec):
            clean = opt.replace(MULTI_VALUE_DELIMITER, "/")
            if clean not in by_slot.setdefault(slot, []):
                by_slot[slot].append(clean)
    for col, _, multi in item_columns(table):
        if multi:
            row[col] = MULTI_VALUE_DELIMITER.join(by_slot.get(col, []))
    return row


def domain(needs: list[dict[str, Any]], table: FieldTable) -> dict[str, Any]:
    """The domain file (data/domains/*.yaml form): every item column's slot and every constraint slot.

    requestable_slots: the item columns an agent can report plus every requested slot; informable_slots:
    every slot some need constrains (sorted).
    """
    columns = [slot for _, slot, _ in item_columns(table)]
    informable = sorted({s for n in needs for s in n["constraints"]})
    requested = sorted({s for n in needs for s in n["requests"]})
    names = list(dict.fromkeys(["NAME", *columns, *informable, *requested]))
    return {"name": DOMAIN_NAME, "slot_names": {s: None for s in names},
            "requestable_slots": list(dict.fromkeys([*TOP_LEVEL_SLOTS.values(), *requested])),
            "informable_slots": informable}


def simulator_config(table: FieldTable) -> dict[str, Any]:
    """The simulator-config keys that load the item collection (docs/source/configuration.rst).

    Returns domain, items, id_col and domain_mapping (column -> slot, multi-valued with its delimiter).
    """
    mapping: dict[str, Any] = {"NAME": {"slot": "NAME"}}
    for col, slot, multi in item_columns(table):
        mapping[col] = ({"slot": slot, "multi-valued": True, "delimiter": MULTI_VALUE_DELIMITER} if multi
                        else {"slot": slot})
    return {"domain": "domain.yaml", "items": "items.csv", "id_col": "ID", "domain_mapping": mapping}


def write_usersimcrs(tasks: list[dict[str, Any]], products: Iterable[dict[str, Any]], table: FieldTable,
                     out: Path) -> dict[str, Any]:
    """Write information_needs.json, items.csv, domain.yaml and config.yaml into `out`.

    Args:
        tasks: the split's task records (sorted by id on output).
        products: catalog product rows (products.parquet rows as dicts), written in the order given.
        table: the field table (detail fields -> item columns).
        out: output directory (created; existing files of these names are replaced).

    Returns:
        {"information_needs": count, "items": count, "slots": count, "files": {name: path}}.

    Raises:
        ValueError: a task's target item is missing from the products (the collection would not hold it).
    """
    # deferred: an optional dependency (the crs extra)
    import yaml

    out.mkdir(parents=True, exist_ok=True)
    needs = [information_need(t) for t in sorted(tasks, key=lambda t: t["id"])]
    columns = ["ID", "NAME", *[c for c, _, _ in item_columns(table)]]
    ids: set[str] = set()
    items_path = out / "items.csv"
    with items_path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for product in products:
            ids.add(product["parent_asin"])
            writer.writerow(item_row(product, table))
    missing = sorted({i for n in needs for i in n["target_items"] if i not in ids})
    if missing:
        raise ValueError(f"{len(missing)} target item(s) are not in the catalog's products, e.g. {missing[0]}; "
                         "export with the split's own catalog (--catalog)")
    needs_path = out / "information_needs.json"
    needs_path.write_text(json.dumps(needs, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    dom = domain(needs, table)
    (out / "domain.yaml").write_text(yaml.safe_dump(dom, sort_keys=False, allow_unicode=True), encoding="utf-8")
    (out / "config.yaml").write_text(yaml.safe_dump(simulator_config(table), sort_keys=False, allow_unicode=True),
                                     encoding="utf-8")
    return {"information_needs": len(needs), "items": len(ids), "slots": len(dom["slot_names"]),
            "files": {n: str(out / n) for n in ("information_needs.json", "items.csv", "domain.yaml", "config.yaml")}}
