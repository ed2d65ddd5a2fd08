"""The implicit cue table (stages/cues.toml, stages/cues.py)."""

from __future__ import annotations

import random
import tomllib

import pytest

from ecombench.errors import SettingError
from ecombench.tables.cues import CUE_KINDS, CUE_TABLE, cue_for, cue_options, load_cues
from ecombench.tables.fields import load_field_table
from ecombench.text import contains_phrase, normalize


@pytest.fixture(scope="module")
def table():
    return load_field_table()


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return tomllib.loads(CUE_TABLE.read_text(encoding="utf-8"))["cue"]


def write(tmp_path, body: str):
    path = tmp_path / "cues.toml"
    path.write_text(body, encoding="utf-8")
    return str(path)


def test_the_bundled_cue_table_loads_with_one_entry_per_row(table, rows):
    cues = load_cues(table)
    assert len(cues) == len(rows)


def test_bundled_cues_are_keyed_by_canonical_field_and_normalised_value(table):
    cues = load_cues(table)
    assert cues[("Connectivity Technology", normalize("Bluetooth"))]["knowledge"][0].startswith("that pairs")
    assert cues[("Material", "stainless steel")]["scenario"]


def test_every_cue_row_names_a_detail_field_of_the_field_table(table, rows):
    assert [r["field"] for r in rows
            if r["field"] not in table.fields or table.fields[r["field"]].kind != "detail"] == []


def test_every_cue_row_has_a_knowledge_or_scenario_clause(rows):
    assert [r for r in rows if not any(r.get(k) for k in CUE_KINDS)] == []


def test_no_bundled_cue_states_its_value_in_any_spelling(table, rows):
    leaks = [(r["value"], k, c) for r in rows for k in CUE_KINDS if r.get(k)
             for c in ([r[k]] if isinstance(r[k], str) else r[k])
             for s in table.spellings(r["value"]) if contains_phrase(c, s)]
    assert leaks == []


def test_no_two_phrasings_of_one_cue_share_a_run_of_five_words(rows):
    # a shared run would recur in the split's queries whichever phrasing the generator draws
    # (validation/shopper_text.py counts five-word phrases; 3 % of queries is the ceiling)
    from ecombench.validation.shopper_text import PHRASE_WORDS, _words

    def runs(text: str) -> set[str]:
        ws = _words(text)
        return {" ".join(ws[i:i + PHRASE_WORDS]) for i in range(len(ws) - PHRASE_WORDS + 1)}

    shared = [(r["field"], r["value"], a, b) for r in rows for k in CUE_KINDS
              if isinstance(r.get(k), list)
              for i, a in enumerate(r[k]) for b in r[k][i + 1:] if runs(a) & runs(b)]
    assert shared == []


def test_a_cue_sharing_a_word_with_its_value_is_refused_naming_the_file(table, tmp_path):
    path = write(tmp_path, '[[cue]]\nfield = "Material"\nvalue = "Stainless Steel"\n'
                           'knowledge = "made of the steel that does not rust"\n')
    with pytest.raises(SettingError, match="steel") as err:
        load_cues(table, path)
    assert path in str(err.value)


def test_a_cue_sharing_a_word_with_another_spelling_of_its_value_is_refused(table, tmp_path):
    # "WLAN" is a spelling of "Wi-Fi" in fields.toml [values].
    path = write(tmp_path, '[[cue]]\nfield = "Connectivity Technology"\nvalue = "Wi-Fi"\n'
                           'scenario = "that joins my home WLAN"\n')
    with pytest.raises(SettingError, match="wlan"):
        load_cues(table, path)


def test_a_cue_row_with_an_unknown_field_is_refused_naming_the_file(table, tmp_path):
    path = write(tmp_path, '[[cue]]\nfield = "Flavour Profile"\nvalue = "Mint"\nknowledge = "like toothpaste"\n')
    with pytest.raises(SettingError, match="unknown field") as err:
        load_cues(table, path)
    assert path in str(err.value)


def test_a_cue_row_without_any_clause_is_refused(table, tmp_path):
    path = write(tmp_path, '[[cue]]\nfield = "Material"\nvalue = "Glass"\n')
    with pytest.raises(SettingError, match="knowledge or scenario"):
        load_cues(table, path)


def test_a_row_may_give_several_phrasings_and_each_is_checked(table, tmp_path):
    path = write(tmp_path, '[[cue]]\nfield = "Material"\nvalue = "Ceramic"\n'
                           'knowledge = ["made of fired clay", "made of clay hardened in a kiln"]\n')
    cues = load_cues(table, str(path))
    assert cues[("Material", "ceramic")]["knowledge"] == ("made of fired clay", "made of clay hardened in a kiln")
    (tmp_path / "leaky").mkdir()
    leaky = write(tmp_path / "leaky", '[[cue]]\nfield = "Material"\nvalue = "Ceramic"\n'
                            'knowledge = ["made of fired clay", "a ceramic mug"]\n')
    with pytest.raises(SettingError, match="a ceramic mug"):
        load_cues(table, str(leaky))


def test_a_seeded_generator_draws_among_the_phrasings_and_none_says_the_first(table):
    cues = load_cues(table)
    first = cue_for(cues, "knowledge", "details.Material", "Polyester", "Curtains", table)
    assert first == "that won't wrinkle or shrink when I wash it"
    drawn = {cue_for(cues, "knowledge", "details.Material", "Polyester", "Curtains", table, random.Random(s))
             for s in range(40)}
    assert len(drawn) == 5 and drawn <= set(cue_options(cues, "knowledge", "details.Material", "Polyester"))
