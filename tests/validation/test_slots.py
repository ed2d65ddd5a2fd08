"""The clarification slot matcher shared by validation (and later the agent sandbox)."""

from __future__ import annotations

from validation.slots import canonical_question, check_reachability, opened_slots


def _slots(table, *names):
    return [{"slot_id": f"s{i}", "field": table.fields[n].rubric_field, "linked_rubric_ids": [f"r{i}"],
             "trigger_keywords": list(table.fields[n].keywords), "user_response": ""}
            for i, n in enumerate(names, 1)]


def test_every_clarification_field_is_opened_by_its_own_question_and_no_other(rich_catalog):
    table = rich_catalog.table
    names = [f.name for f in table.fields.values() if "clarification" in f.sources]
    slots = _slots(table, *names)
    for slot, name in zip(slots, names):
        assert opened_slots(canonical_question(table.fields[name].label), slots) == [slot["slot_id"]], name


def test_the_most_specific_keyword_wins(rich_catalog):
    slots = _slots(rich_catalog.table, "Size", "Screen Size")
    assert opened_slots("What screen size do you want?", slots) == ["s2"]
    assert opened_slots("What size do you want?", slots) == ["s1"]


def test_keywords_match_whole_tokens_only(rich_catalog):
    slots = _slots(rich_catalog.table, "Recommended Uses For Product")
    assert opened_slots("Who is the user of this?", slots) == []
    assert opened_slots("What will you use it for?", slots) == ["s1"]


def test_a_slot_whose_keywords_miss_its_label_is_unreachable(rich_catalog):
    slots = _slots(rich_catalog.table, "Shape")
    slots[0]["trigger_keywords"] = ["outline", "geometry", "contour", "profile", "silhouette", "edges", "corners"]
    findings = check_reachability({"clarification_slots": slots}, rich_catalog.table)
    assert {f.reason for f in findings} == {"slot_unreachable"}


def test_two_slots_with_equally_specific_keywords_collide(rich_catalog):
    slots = _slots(rich_catalog.table, "Shape", "Closure")
    slots[1]["trigger_keywords"].append("what shape")  # Shape's own most specific keyword
    findings = check_reachability({"clarification_slots": slots}, rich_catalog.table)
    assert {f.reason for f in findings} == {"slot_collision"}
    assert findings[0].evidence["opened"] == ["s1", "s2"]


def test_a_question_about_two_fields_opens_both_slots(rich_catalog):
    slots = _slots(rich_catalog.table, "Material", "price")
    assert opened_slots("What is it made from, and what price are you after?", slots) == ["s1", "s2"]


def test_keywords_count_as_the_matcher_sees_them(tmp_path):
    from stages.errors import SettingError
    from stages.fields import load_field_table
    import pytest

    path = tmp_path / "fields.toml"
    path.write_text('[fields."Size"]\nlabel = "size"\nsources = ["clarification"]\n'
                    'keywords = ["size", "sizes", "sizing", "dimension", "dimensions", "how big", "fit size"]\n')
    with pytest.raises(SettingError, match="7-10 distinct keywords, has 5"):
        load_field_table(str(path))


def test_every_clarification_field_opens_on_a_question_rephrased_from_its_synonyms(rich_catalog):
    from stages.text import normalize
    from validation.slots import rephrased_question

    table = rich_catalog.table
    names = [f.name for f in table.fields.values() if "clarification" in f.sources]
    slots = _slots(table, *names)
    for slot, name in zip(slots, names):
        spec = table.fields[name]
        synonym = next(k for k in spec.keywords if normalize(k) != normalize(spec.label))
        assert opened_slots(rephrased_question(synonym), slots) == [slot["slot_id"]], name


def test_a_slot_that_opens_only_on_its_label_is_unreachable_when_rephrased(rich_catalog):
    slots = _slots(rich_catalog.table, "Shape")
    slots[0]["trigger_keywords"] = ["shape", "a", "b", "c", "d", "e", "f"]  # only the label still matches
    findings = check_reachability({"clarification_slots": slots}, rich_catalog.table)
    assert [f.reason for f in findings] == ["slot_unreachable"]
    assert findings[0].evidence["question"].startswith("Anything about")
