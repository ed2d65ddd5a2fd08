"""Loading exported information needs as UserSimCRS does, one agenda turn over them, and a simulator that draws them.

UserSimCRS is not on PyPI (it runs from a checkout), so this module reproduces the parts of its code
that read a need, from iai-group/UserSimCRS at commit 1e7d339:

- `InformationNeed.from_dict` (`usersimcrs/core/information_need.py` l.96-104): each target item is
  `Item(**item)`, so it must be a mapping of `item_id` and optionally `properties` and `domain`
  (`usersimcrs/items/item.py` l.9-38); `constraints` and `requests` are read as they are, and any
  other key (`id`, `metadata`) is ignored. `requests` become `requested_slots` (l.71-75);
- the agenda (`usersimcrs/simulator/agenda_based/agenda.py` l.40-60): the start act, one DISCLOSE per
  constraint (a list value gives one slot value per element), one INQUIRE per requestable slot, the stop
  act; `clean_agenda` (l.95-117) drops INQUIRE acts whose slot is still requestable, and duplicates;
- a user turn (`usersimcrs/simulator/agenda_based/interaction_model.py` l.301-356, 393-457): an agent act
  that elicits a slot (INQUIRE, INQUIRE.ELICIT) is answered with DISCLOSE of that slot's constraint value,
  and the reply acts go on top of the agenda before the next act is taken.

Two things differ, on purpose: a constraint the need marks as hidden (`metadata.hidden_slots`: from the
shopper's profile or kept for clarification) is not on the opening agenda, so it is said only when
the agent asks for its slot (UserSimCRS discloses every constraint unasked, and samples a random one
to disclose when an agent act leads nowhere); and a recommendation is
answered from `target_items` (NOTE.LIKE for a target, else NOTE.DISLIKE), where UserSimCRS's preference
model answers at random. An elicited slot the need does not constrain gets DONT-KNOW (UserSimCRS draws a
random value of the item table's column instead).

`AgendaBasedSimulator`, loaded only when UserSimCRS is installed, is UserSimCRS's own agenda-based
simulator drawing the exported needs in file order (its `get_new_information_need` draws random ones,
`usersimcrs/simulator/user_simulator.py` l.24-30) with the hidden constraints off its agenda and out of
its sampled disclosures. It keeps
the class name UserSimCRS's config builder dispatches on (`usersimcrs/utils/simulation_utils.py`
l.102-103); the exported config names it as `simulator_class_path`, and it finds the needs file through
the domain file's `information_needs` key or the ECOMBENCH_INFORMATION_NEEDS variable.
"""

from __future__ import annotations

import copy
import json
import os
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ecombench.errors import InputError

NEEDS_ENV = "ECOMBENCH_INFORMATION_NEEDS"
# The CIR6 labels of UserSimCRS's crs_v1 interaction model (required_intents, l.5-16).
START, STOP, DISCLOSE, INQUIRE, DONT_KNOW = "DISCLOSE.NON-DISCLOSE", "COMPLETE", "DISCLOSE", "INQUIRE", "DONT-KNOW"
LIKE, DISLIKE = "NOTE.LIKE", "NOTE.DISLIKE"
ELICIT_INTENTS = ("INQUIRE", "INQUIRE.ELICIT")
SET_RETRIEVAL_INTENTS = ("REVEAL", "REVEAL.SIMILAR", "REVEAL.NONE")
_ITEM_KEYS = ("item_id", "properties", "domain")


@dataclass(frozen=True)
class Item:
    """A target item as `Item(**mapping)` builds it: an id and its properties (None when not given)."""

    item_id: str
    properties: dict[str, Any] | None = None

    @classmethod
    def from_mapping(cls, data: Any) -> Item:
        """`Item(**data)`: the same failures as UserSimCRS's call.

        Raises:
            TypeError: `data` is not a mapping, lacks `item_id` or has a key Item does not take.
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"Item() argument after ** must be a mapping, not {type(data).__name__}")
        unknown = sorted(set(data) - set(_ITEM_KEYS))
        if unknown:
            raise TypeError(f"Item.__init__() got an unexpected keyword argument {unknown[0]!r}")
        if "item_id" not in data:
            raise TypeError("Item.__init__() missing 1 required positional argument: 'item_id'")
        return cls(data["item_id"], data.get("properties"))


@dataclass
class InformationNeed:
    """What `usersimcrs.core.information_need.InformationNeed` holds, plus the file's metadata.

    Attributes:
        target_items: the ground-truth items.
        constraints: slot -> value the wanted item must satisfy (a list for several values).
        requested_slots: slot -> None until the agent reports it.
        metadata: the exported need's `metadata` (UserSimCRS ignores it).
    """

    target_items: list[Item]
    constraints: dict[str, Any]
    requested_slots: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InformationNeed:
        """`InformationNeed.from_dict`: target items through `Item(**item)`, constraints and requests as given.

        Raises:
            KeyError: target_items, constraints or requests is missing.
            TypeError: a target item is not an `Item(**item)` mapping.
        """
        targets = [Item.from_mapping(item) for item in data["target_items"]]
        return cls(targets, data["constraints"], {slot: None for slot in data["requests"]},
                   dict(data.get("metadata") or {}))

    def get_constraint_value(self, slot: str) -> Any:
        """The constraint's value of a slot (None when unconstrained)."""
        return self.constraints.get(slot)

    def get_requestable_slots(self) -> list[str]:
        """Requested slots the agent has not reported yet."""
        return [slot for slot, value in self.requested_slots.items() if not value]

    @property
    def hidden_slots(self) -> set[str]:
        """Constraint slots a simulator states only when asked (ecombench's `metadata.hidden_slots`)."""
        return set(self.metadata.get("hidden_slots") or [])

    def to_dict(self) -> dict[str, Any]:
        """`InformationNeed.to_dict` (l.106-115): target items, constraints, requests."""
        return {"target_items": [{"item_id": i.item_id, "properties": i.properties} for i in self.target_items],
                "constraints": self.constraints, "requests": list(self.requested_slots)}


def load_information_needs(path: Path) -> list[InformationNeed]:
    """Every need of an exported information_needs.json, each read by `InformationNeed.from_dict`.

    Raises:
        InputError: the file is missing or not a JSON list, or a need does not load (names the need).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a readable JSON file of information needs ({exc})") from None
    if not isinstance(data, list):
        raise InputError(f"{path}: information needs must be a JSON list, got {type(data).__name__}")
    needs = []
    for i, raw in enumerate(data):
        try:
            needs.append(InformationNeed.from_dict(raw))
        except (KeyError, TypeError) as exc:
            name = raw.get("id") if isinstance(raw, dict) else None
            raise InputError(f"{path}: need {i} ({name or 'no id'}) does not load: "
                             f"{type(exc).__name__}: {exc}") from None
    return needs


@dataclass(frozen=True)
class Act:
    """A dialogue act: intent and (slot, value) pairs, as DialogueKit's DialogueAct holds them."""

    intent: str
    slot_values: tuple[tuple[str, Any], ...] = ()


def _disclose(slot: str, value: Any) -> Act:
    values = value if isinstance(value, list) else [value]
    return Act(DISCLOSE, tuple((slot, v) for v in values))


def _names_slot(value: Any, slot: str) -> bool:
    """An elicited value that only repeats the slot's name (the value of "Which genres?" is "genres")."""
    def norm(s: str) -> str:
        return s.casefold().replace("_", " ").removesuffix("s").strip()

    return isinstance(value, str) and norm(value) == norm(slot)


class AgendaUser:
    """An agenda-based simulated user over one information need (see the module docstring).

    Args:
        need: the information need.
        hide: keep the need's hidden constraints off the opening agenda (UserSimCRS itself does not).
    """

    def __init__(self, need: InformationNeed, hide: bool = True):
        self.need = need
        hidden = need.hidden_slots if hide else set()
        self.agenda: deque[Act] = deque([Act(START)])
        self.agenda += [_disclose(s, v) for s, v in need.constraints.items() if s not in hidden]
        self.agenda += [Act(INQUIRE, ((s, None),)) for s in need.get_requestable_slots()]
        self.agenda.append(Act(STOP))

    def _clean(self) -> None:
        requestable = set(self.need.get_requestable_slots())
        kept: deque[Act] = deque()
        for act in self.agenda:
            if act.intent == INQUIRE and any(slot in requestable for slot, _ in act.slot_values):
                continue
            if act not in kept:
                kept.append(act)
        self.agenda = kept

    def _is_target(self, slot_values: tuple[tuple[str, Any], ...]) -> bool:
        named = {str(v) for _, v in slot_values}
        return any(item.item_id in named or named & {str(v) for v in (item.properties or {}).values()}
                   for item in self.need.target_items)

    def reply_acts(self, agent_acts: list[Act]) -> list[Act]:
        """The acts a user pushes in reply to the agent's acts (before the agenda is consulted)."""
        out: list[Act] = []
        for act in agent_acts:
            if act.intent in ELICIT_INTENTS:
                out = []
                for slot, value in act.slot_values:
                    if value and not _names_slot(value, slot):
                        out.append(Act(LIKE if value in _as_list(self.need.get_constraint_value(slot)) else DISLIKE,
                                       ((slot, value),)))
                    elif slot in self.need.constraints:
                        out.append(_disclose(slot, self.need.constraints[slot]))
                    else:
                        out.append(Act(DONT_KNOW))
            elif act.intent in SET_RETRIEVAL_INTENTS:
                out = ([Act(LIKE if self._is_target(act.slot_values) else DISLIKE)] if act.slot_values
                       else [Act(DONT_KNOW)])
        return out

    def next_acts(self, agent_acts: list[Act] | None = None, n: int = 1) -> list[Act]:
        """One user turn: push the replies to `agent_acts` on the agenda, clean it, take the next `n` acts."""
        for act in self.reply_acts(agent_acts or []):
            self.agenda.appendleft(act)
        self._clean()
        return [self.agenda.popleft() for _ in range(min(n, len(self.agenda)))]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


@lru_cache(maxsize=4)
def _needs_file(path: str) -> tuple[dict[str, Any], ...]:
    load_information_needs(Path(path))  # every need loads, or one line says which does not
    return tuple(json.loads(Path(path).read_text(encoding="utf-8")))


def _simulator_class() -> type:
    """UserSimCRS's AgendaBasedSimulator, drawing the exported needs in order with hidden constraints held back."""
    # deferred: UserSimCRS runs from its own checkout and is never a dependency of ecombench
    from usersimcrs.core.information_need import InformationNeed as UserSimCRSNeed
    from usersimcrs.simulator.agenda_based.agenda_based_simulator import AgendaBasedSimulator as Base

    class AgendaBasedSimulator(Base):  # type: ignore[misc, valid-type]
        """UserSimCRS's agenda-based simulator over ecombench's exported information needs."""

        drawn = 0

        def get_new_information_need(self) -> None:
            """The next exported need (in file order, cycling), read by UserSimCRS's own from_dict."""
            path = os.environ.get(NEEDS_ENV) or self._domain._config.get("information_needs")
            if not path:
                raise InputError(f"no information needs: set {NEEDS_ENV} or `information_needs` in the domain file")
            needs = _needs_file(str(path))
            raw = needs[AgendaBasedSimulator.drawn % len(needs)]
            AgendaBasedSimulator.drawn += 1
            self.information_need = UserSimCRSNeed.from_dict(raw)
            self.ecombench_need = raw

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            hidden = set(self.ecombench_need.get("metadata", {}).get("hidden_slots") or [])
            model = self._interaction_model
            agenda = model.agenda
            agenda._dialogue_acts_stack = deque(
                da for da in agenda.stack
                if not (da.intent == model.INTENT_DISCLOSE and da.annotations
                        and all(a.slot in hidden for a in da.annotations)))
            # A new dialogue starts from an empty state: UserSimCRS never resets its tracker (reset_state has
            # no caller), and the interaction model is shared by the simulators of a run, which talk one at a time.
            model.dialogue_state_tracker.reset_state()
            # When an agent act leads nowhere, UserSimCRS samples a DISCLOSE of a random constraint, or of a
            # slot of the state the need does not constrain, with the value None, which its NLG cannot fill
            # (interaction_model.py l.557-601), and a list value as one annotation, which it cannot fill
            # either. Here it picks among the constraints said unasked or already asked for, a list value
            # becomes one annotation per value (as the agenda does, agenda.py l.45-48), and a disclosure
            # without a value is left out.
            sample = type(model)._sample_next_user_dialogue_acts

            def sample_shown(information_need: Any, agent_dialogue_acts: Any) -> Any:
                asked = model.dialogue_state_tracker.get_current_state().belief_state
                shown = copy.copy(information_need)
                shown.constraints = ({s: v for s, v in information_need.constraints.items()
                                      if s not in hidden or s in asked} or information_need.constraints)
                acts = []
                for da in sample(model, shown, agent_dialogue_acts):
                    if da.intent == model.INTENT_DISCLOSE:
                        if any(a.value is None for a in da.annotations):
                            continue
                        da.annotations = [type(a)(a.slot, v) for a in da.annotations
                                          for v in (a.value if isinstance(a.value, list) else [a.value])]
                    acts.append(da)
                return acts

            model._sample_next_user_dialogue_acts = sample_shown

    AgendaBasedSimulator.__module__ = __name__
    return AgendaBasedSimulator


def __getattr__(name: str) -> Any:
    """`AgendaBasedSimulator`, built on first use (UserSimCRS must be importable then)."""
    if name == "AgendaBasedSimulator":
        cls = _simulator_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
