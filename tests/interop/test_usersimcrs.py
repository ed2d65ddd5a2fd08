"""`ecombench export SPLIT --format usersimcrs` on a real published split, read back as UserSimCRS's code reads it.

UserSimCRS is not on PyPI, so these tests use its semantics, from iai-group/UserSimCRS (commit 1e7d339):
- needs: ecombench.interop.information_need reproduces `InformationNeed.from_dict` (usersimcrs/core/
  information_need.py l.96-104) and the agenda turn (simulator/agenda_based/agenda.py l.40-60,
  interaction_model.py l.393-457), with its file and lines cited;
- items: `ItemCollection.load_items_csv` (usersimcrs/items/item_collection.py l.170-219) pops the id column
  and maps every `domain_mapping` column to its slot, split on the delimiter when multi-valued (below);
- domain, dialogues and NLG: DialogueKit 0.1.1's own Domain, reader and template NLG, which UserSimCRS's
  SimulationDomain and config builder call (usersimcrs/utils/simulation_utils.py l.129-178, 257-276).
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import pytest
import yaml
from dialoguekit.core.dialogue_act import DialogueAct
from dialoguekit.core.domain import Domain
from dialoguekit.core.intent import Intent
from dialoguekit.core.slot_value_annotation import SlotValueAnnotation
from dialoguekit.nlg import ConditionalNLG
from dialoguekit.nlg.template_from_training_data import extract_utterance_template
from dialoguekit.utils.dialogue_reader import json_to_dialogues
from typer.testing import CliRunner

from ecombench.errors import InputError
from ecombench.flows.cli import app
from ecombench.interop.information_need import (
    DISCLOSE,
    DISLIKE,
    LIKE,
    START,
    Act,
    AgendaUser,
    load_information_needs,
)
from ecombench.text import contains_phrase

# UserSimCRS's README: the config's paths are opened as given (confuse `.get()`), relative to the process.
PATH_KEYS = ("domain", "intents", "items", "dialogues")


@pytest.fixture(scope="module")
def export(full_build, tmp_path_factory):
    out = tmp_path_factory.mktemp("usersimcrs") / "export"
    res = CliRunner().invoke(app, ["export", str(full_build.path), "--format", "usersimcrs", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def load_items_csv(path, config):
    """Item id -> properties by slot, as UserSimCRS's ItemCollection.load_items_csv builds them."""
    items = {}
    with Path(path).open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter=config["csv_delimiter"]):
            item_id = row.pop(config["id_col"], None)
            assert item_id, "Item ID is mandatory"
            items[item_id] = {m["slot"]: (row[col].split(m["delimiter"]) if m.get("multi-valued") else row[col])
                              for col, m in config["domain_mapping"].items()}
    return items


def test_every_need_loads_with_usersimcrs_from_dict_semantics(full_build, export):
    needs = load_information_needs(export / "information_needs.json")
    tasks = {t["id"]: t for t in full_build.tasks}
    raw = json.loads((export / "information_needs.json").read_text(encoding="utf-8"))
    assert [n["id"] for n in raw] == sorted(tasks)
    config = yaml.safe_load((export / "config.yaml").read_text(encoding="utf-8"))
    items = load_items_csv(export / "items.csv", config)
    for need, r in zip(needs, raw):
        task = tasks[r["id"]]
        # Target items: numeric ids of the collection (an ASIN breaks its unquoted `WHERE id = ...`), ASIN as a
        # property; the target first, then the rest of the answer set.
        assert [t.properties["ASIN"] for t in need.target_items] == list(dict.fromkeys(
            [task["target_product"]["parent_asin"], *task["answer_set"]]))
        for item in need.target_items:
            assert re.fullmatch(r"[1-9][0-9]*", item.item_id) and items[item.item_id]["ASIN"] == item.properties["ASIN"]
        # Requests never repeat a constrained slot (UserSimCRS's generator keeps them apart).
        assert not set(need.requested_slots) & set(need.constraints)
        # Hidden: the slots no query requirement names, said only when asked.
        query_slots = {s for s, ms in r["metadata"]["constraints"].items() if any(m["info_source"] == "query"
                                                                               for m in ms)}
        assert need.hidden_slots == set(need.constraints) - query_slots


def test_the_loader_refuses_needs_usersimcrs_cannot_load(tmp_path):
    # UserSimCRS's prose docs show target items as plain ids; its from_dict calls Item(**item) on each.
    path = tmp_path / "needs.json"
    path.write_text(json.dumps([{"id": "t1", "constraints": {"COLOR": "Red"}, "requests": [],
                                 "target_items": ["B0ABC12345"]}]), encoding="utf-8")
    with pytest.raises(InputError, match="need 0 .t1. does not load: TypeError: .*must be a mapping, not str"):
        load_information_needs(path)


def test_one_agenda_turn_discloses_a_hidden_slot_only_when_asked(export):
    needs = load_information_needs(export / "information_needs.json")
    raw = json.loads((export / "information_needs.json").read_text(encoding="utf-8"))
    need, meta = next((n, r["metadata"]) for n, r in zip(needs, raw)
                      if "when_asked" in r["metadata"]["disclosure"].values())
    slot = next(s for s, d in meta["disclosure"].items() if d == "when_asked")
    user = AgendaUser(need)
    assert user.next_acts() == [Act(START)]
    assert slot not in {s for act in user.agenda for s, _ in act.slot_values}  # not said unasked
    acts = user.next_acts([Act("INQUIRE.ELICIT", ((slot, None),))])
    values = need.constraints[slot] if isinstance(need.constraints[slot], list) else [need.constraints[slot]]
    assert acts == [Act(DISCLOSE, tuple((slot, v) for v in values))]
    # UserSimCRS's NLG (DialogueKit's ConditionalNLG over the exported dialogues) says it.
    nlg = ConditionalNLG(extract_utterance_template(str(export / "dialogues.json")))
    text = nlg.generate_utterance_text([DialogueAct(Intent(DISCLOSE), [SlotValueAnnotation(slot, str(v))
                                                                       for v in values])]).text
    assert all(contains_phrase(text, str(v)) for v in values)
    # The recommendation of a target is liked, of anything else disliked.
    target = need.target_items[0].properties["ASIN"]
    assert user.next_acts([Act("REVEAL", (("ASIN", target),))]) == [Act(LIKE)]
    assert user.next_acts([Act("REVEAL", (("ASIN", "B000000000"),))]) == [Act(DISLIKE)]


def test_every_constraint_of_every_need_has_a_template_to_say_it(export):
    # ConditionalNLG raises "NLG text generation failed." for an act no template's slots fit.
    nlg = ConditionalNLG(extract_utterance_template(str(export / "dialogues.json")))
    said = 0
    for need in load_information_needs(export / "information_needs.json"):
        for slot, value in need.constraints.items():
            values = value if isinstance(value, list) else [value]
            act = DialogueAct(Intent(DISCLOSE), [SlotValueAnnotation(slot, str(v)) for v in values])
            assert nlg.generate_utterance_text([act]).text
            said += 1
    assert said > 100


def test_the_config_resolves_from_any_working_directory(full_build, export, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = yaml.safe_load((export / "config.yaml").read_text(encoding="utf-8"))
    for key in PATH_KEYS:
        assert os.path.isabs(config[key]) and os.path.isfile(config[key]), key
    assert os.path.isabs(config["collection_db_path"]) and os.path.isdir(os.path.dirname(config["collection_db_path"]))
    # Nothing left at UserSimCRS's movie defaults: its own item table and type, no MovieLens ratings.
    assert (config["collection_name"], config["item_type"], config["id_col"], config["ratings"]) == (
        "ecombench_items", "product", "ID", None)
    assert "ID" not in config["domain_mapping"] and config["domain_mapping"]["ASIN"] == {"slot": "ASIN"}
    domain = Domain(config["domain"])  # SimulationDomain's base class: the file must exist and name its slots
    items = load_items_csv(config["items"], config)
    assert set(domain.get_slot_names()) >= {m["slot"] for m in config["domain_mapping"].values()}
    assert len(items) > 1000 and all(re.fullmatch(r"[1-9][0-9]*", i) for i in items)
    # The dialogues UserSimCRS keeps: those of the config's agent id and the user id "User", one per task.
    kept = json_to_dialogues(config["dialogues"], agent_ids=[config["agent_id"]], user_ids=["User"])
    assert len(kept) == len(full_build.tasks)
    model = yaml.safe_load(Path(config["intents"]).read_text(encoding="utf-8"))
    assert len(model["required_intents"]) == 11 and "REVEAL" in model["agent_set_retrieval"]
    assert config["simulator_class_path"] == "ecombench.interop.information_need.AgendaBasedSimulator"


def test_a_target_items_properties_hold_its_attribute_constraints(export):
    config = yaml.safe_load((export / "config.yaml").read_text(encoding="utf-8"))
    items = load_items_csv(export / "items.csv", config)
    held = []
    for need in json.loads((export / "information_needs.json").read_text(encoding="utf-8")):
        target = items[need["metadata"]["target_item_id"]]
        for slot, metas in need["metadata"]["constraints"].items():
            for m in metas:
                if m["type"] == "attribute_match" and slot in target:
                    held.append(any(contains_phrase(v, m["expected_value"]) for v in target[slot]))
    # The checkers also match alias spellings and a few fields read beyond `details` (e.g. a brand
    # from the store), which one column cannot show; nearly all constraints are plain values.
    assert len(held) >= 50 and sum(held) / len(held) >= 0.95
