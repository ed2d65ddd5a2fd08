"""ecombench.interop.information_need on hand-written needs: from_dict semantics, the agenda, the simulator.

UserSimCRS is not installed here (it runs from its checkout); its simulator class is exercised against a
stand-in of the two UserSimCRS classes it builds on, with their constructor order
(usersimcrs/simulator/user_simulator.py l.14-24: the need is drawn inside the base __init__).
"""

from __future__ import annotations

import json
import sys
import types
from collections import deque
from types import SimpleNamespace

import pytest

from ecombench.interop import information_need as loader
from ecombench.interop.information_need import DISCLOSE, INQUIRE, START, STOP, Act, AgendaUser, InformationNeed

NEED = {"id": "t1", "constraints": {"PRODUCT_TYPE": "Mugs", "COLOR": ["Red", "Blue"], "MATERIAL": "Ceramic"},
        "requests": ["PRICE"], "target_items": [{"item_id": "17", "properties": {"ASIN": "B0ABC12345"}}],
        "metadata": {"hidden_slots": ["MATERIAL"]}}


def test_from_dict_reads_what_usersimcrs_reads_and_ignores_the_rest():
    need = InformationNeed.from_dict(NEED)
    assert need.target_items[0].item_id == "17" and need.requested_slots == {"PRICE": None}
    assert need.to_dict() == {k: NEED[k] for k in ("target_items", "constraints", "requests")}
    with pytest.raises(TypeError, match="unexpected keyword argument 'asin'"):
        InformationNeed.from_dict({**NEED, "target_items": [{"item_id": "1", "asin": "B0"}]})
    with pytest.raises(KeyError):
        InformationNeed.from_dict({"target_items": [], "constraints": {}})


def test_the_agenda_follows_usersimcrs_order_and_holds_hidden_slots_back():
    user = AgendaUser(InformationNeed.from_dict(NEED))
    assert list(user.agenda) == [Act(START), Act(DISCLOSE, (("PRODUCT_TYPE", "Mugs"),)),
                                 Act(DISCLOSE, (("COLOR", "Red"), ("COLOR", "Blue"))), Act(INQUIRE, (("PRICE", None),)),
                                 Act(STOP)]
    everything = AgendaUser(InformationNeed.from_dict(NEED), hide=False)
    assert Act(DISCLOSE, (("MATERIAL", "Ceramic"),)) in everything.agenda
    # An elicited value that only names the slot ("Which colours?") asks for the slot.
    assert user.reply_acts([Act("INQUIRE.ELICIT", (("COLOR", "colors"),))]) == [
        Act(DISCLOSE, (("COLOR", "Red"), ("COLOR", "Blue")))]
    assert user.reply_acts([Act("INQUIRE.ELICIT", (("SIZE", None),))]) == [Act("DONT-KNOW")]


@pytest.fixture
def usersimcrs_stand_in(monkeypatch, tmp_path):
    """usersimcrs' InformationNeed and AgendaBasedSimulator as minimal stand-ins, and a needs file."""
    class Need:
        def __init__(self, data):
            self.constraints = data["constraints"]

        @classmethod
        def from_dict(cls, data):
            return cls(data)

    class Annotation:  # DialogueKit's SlotValueAnnotation(slot, value)
        def __init__(self, slot, value=None):
            self.slot, self.value = slot, value

    class Model:
        INTENT_DISCLOSE = "DISCLOSE"

        def __init__(self, acts):
            self.agenda = SimpleNamespace(_dialogue_acts_stack=deque(acts))
            self.agenda.stack = self.agenda._dialogue_acts_stack
            self.state = SimpleNamespace(belief_state={"SIZE": []})  # a slot of an earlier dialogue
            self.dialogue_state_tracker = SimpleNamespace(get_current_state=lambda: self.state,
                                                          reset_state=lambda: setattr(self, "state", SimpleNamespace(
                                                              belief_state={})))

        def _sample_next_user_dialogue_acts(self, information_need, agent_dialogue_acts):
            """One DISCLOSE per slot it could disclose, and one of a state slot with no value (UserSimCRS's)."""
            acts = [SimpleNamespace(intent="DISCLOSE", annotations=[Annotation(s, v)])
                    for s, v in sorted(information_need.constraints.items())]
            return acts + [SimpleNamespace(intent="DISCLOSE", annotations=[Annotation("SIZE", None)])]

    class Base:
        def __init__(self, id, domain, **kwargs):
            self._domain = domain
            self.get_new_information_need()  # as UserSimulator.__init__ does
            acts = [SimpleNamespace(intent="DISCLOSE", annotations=[SimpleNamespace(slot=s)])
                    for s in self.information_need.constraints]
            self._interaction_model = Model(acts)

    modules = {"usersimcrs": None, "usersimcrs.core": None, "usersimcrs.core.information_need": Need,
               "usersimcrs.simulator": None, "usersimcrs.simulator.agenda_based": None,
               "usersimcrs.simulator.agenda_based.agenda_based_simulator": Base}
    for name, cls in modules.items():
        module = types.ModuleType(name)
        if cls is not None:
            setattr(module, cls.__name__ if cls is Base else "InformationNeed", cls)
            if cls is Base:
                module.AgendaBasedSimulator = Base
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.delitem(loader.__dict__, "AgendaBasedSimulator", raising=False)
    path = tmp_path / "information_needs.json"
    path.write_text(json.dumps([NEED, {**NEED, "id": "t2", "metadata": {}}]), encoding="utf-8")
    return path


def test_the_simulator_draws_the_needs_in_order_and_keeps_hidden_constraints_off_its_agenda(usersimcrs_stand_in):
    cls = loader.AgendaBasedSimulator
    assert cls.__name__ == "AgendaBasedSimulator"  # UserSimCRS's config builder dispatches on the name
    domain = SimpleNamespace(_config={"information_needs": str(usersimcrs_stand_in)})
    first, second = cls("User Simulator", domain), cls("User Simulator", domain)
    assert (first.ecombench_need["id"], second.ecombench_need["id"]) == ("t1", "t2")
    slots = [da.annotations[0].slot for da in first._interaction_model.agenda._dialogue_acts_stack]
    assert slots == ["PRODUCT_TYPE", "COLOR"]  # MATERIAL is hidden until asked
    model = first._interaction_model
    assert model.state.belief_state == {}  # a new dialogue starts from an empty state
    sampled = model._sample_next_user_dialogue_acts(first.information_need, [])
    assert [da.annotations[0].slot for da in sampled] == ["COLOR", "PRODUCT_TYPE"]  # no MATERIAL, no value-less SIZE
    assert [a.value for a in sampled[0].annotations] == ["Red", "Blue"]  # a list value: one annotation per value
    model.state.belief_state["MATERIAL"] = []  # once the agent asked for it, it may be said again
    sampled = model._sample_next_user_dialogue_acts(first.information_need, [])
    assert [da.annotations[0].slot for da in sampled] == ["COLOR", "MATERIAL", "PRODUCT_TYPE"]
    assert len(second._interaction_model.agenda._dialogue_acts_stack) == 3


def test_without_usersimcrs_the_simulator_is_an_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "usersimcrs", None)
    monkeypatch.delitem(loader.__dict__, "AgendaBasedSimulator", raising=False)
    with pytest.raises(ImportError):
        loader.AgendaBasedSimulator  # noqa: B018
    with pytest.raises(AttributeError):
        loader.NoSuchThing  # noqa: B018
