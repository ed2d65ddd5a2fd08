"""The field table: canonical names, aliases and per-field rules (stages/fields.py, stages/fields.toml)."""

from __future__ import annotations

import pytest

from ecombench.errors import SettingError
from ecombench.tables.fields import FIELD_TABLE, load_field_table
from ecombench.text import normalize


@pytest.fixture(scope="module")
def table():
    return load_field_table()


@pytest.mark.parametrize(("raw", "canonical"), [
    ("OS", "Operating System"),
    ("Special features", "Special Feature"),
    ("Wireless communication technologies", "Connectivity Technology"),
    ("Connectivity technologies", "Connectivity Technology"),
    ("Standing screen display size", "Screen Size"),
    ("Target Audience", "Department"),
    ("Ram Memory Installed Size", "RAM"),
])
def test_real_raw_keys_map_to_their_canonical_field(table, raw, canonical):
    assert table.canonical_key(raw) == canonical


@pytest.mark.parametrize("spelling", ["os", "Os", "  OS ", "operating  system", "OPERATING SYSTEM"])
def test_alias_lookup_ignores_case_and_spacing(table, spelling):
    assert table.canonical_key(spelling) == "Operating System"


def test_unknown_keys_are_kept_with_whitespace_collapsed(table):
    assert table.canonical_key("Is  Dishwasher   Safe") == "Is Dishwasher Safe"


def test_canonical_name_maps_to_itself(table):
    assert all(table.canonical_key(f.name) == f.name for f in table.detail_fields())


def test_rubric_field_of_a_detail_field_has_the_details_prefix(table):
    assert table.fields["Operating System"].rubric_field == "details.Operating System"
    assert table.fields["price"].rubric_field == "price"


def test_by_rubric_field_reads_prefixed_and_top_level_names(table):
    assert table.by_rubric_field("details.Color").name == "Color"
    assert table.by_rubric_field("average_rating").kind == "numeric"


def test_by_rubric_field_raises_for_an_unknown_field(table):
    with pytest.raises(KeyError):
        table.by_rubric_field("details.Shelf Type")


# Real fused details from meta_electronics_beauty_office.jsonl / the bundled sample.
@pytest.mark.parametrize(("key", "value", "expected"), [
    ("Battery Cell Composition Sealed Lead Acid", "", ("Battery Cell Composition", "Sealed Lead Acid")),  # B0BFFFJG9Z
    ("", "Shape Irregular", ("Shape", "Irregular")),                                                      # B00D5T6I7M
    ("Voltage 220 Volts", "", ("Voltage", "220 Volts")),                                                  # B071FKGJW7
    ("Material Glass", "", ("Material", "Glass")),                                                        # B00IBPY476
    ("", "Item Weight 892 Pounds", ("Item Weight", "892 Pounds")),                                        # B0054IQMUA
])
def test_split_fused_repairs_real_fused_details(table, key, value, expected):
    assert table.split_fused(key, value) == expected


def test_split_fused_leaves_an_unknown_fused_key_unchanged(table):
    # Real record B071FKGJW7: "": "Is Dishwasher Safe Yes" (no field-table key at its start).
    assert table.split_fused("", "Is Dishwasher Safe Yes") == ("", "Is Dishwasher Safe Yes")


def test_split_fused_leaves_a_normal_detail_unchanged(table):
    assert table.split_fused("Color", "Black") == ("Color", "Black")


def _write_table(tmp_path, body: str):
    path = tmp_path / "fields.toml"
    path.write_text(body, encoding="utf-8")
    return str(path)


def test_a_field_without_a_label_is_rejected_naming_the_file(tmp_path):
    path = _write_table(tmp_path, '[fields."Color"]\nsources = ["query"]\n')
    with pytest.raises(SettingError, match="fields.toml") as exc:
        load_field_table(path)
    assert "label" in str(exc.value) and "Color" in str(exc.value)


def test_an_unknown_source_is_rejected_naming_the_file(tmp_path):
    path = _write_table(tmp_path, '[fields."Color"]\nlabel = "colour"\nsources = ["query", "review"]\n')
    with pytest.raises(SettingError, match=str(tmp_path)):
        load_field_table(path)


_COLOR = '[fields."Color"]\nlabel = "colour"\nsources = ["query"]\n'


@pytest.mark.parametrize("rows, named", [
    ('[fields."Color".settled_by."Colour Name"]\nBlack = ["noir"]\n', "'Colour Name'"),  # no such field
    ('[fields."price"]\nkind = "numeric"\nlabel = "price"\nsources = ["query"]\n'
     '[fields."Color".settled_by.price]\nBlack = ["10"]\n', "no other detail field"),  # no detail field
    # a string where a list belongs would be read letter by letter
    ('[fields."Department"]\nlabel = "department"\nsources = ["query"]\n'
     '[fields."Color".settled_by.Department]\nBlack = "goth"\n', "must map each other field"),
])
def test_a_malformed_settled_by_is_rejected_naming_the_file_and_field(tmp_path, rows, named):
    with pytest.raises(SettingError, match="fields.toml") as exc:
        load_field_table(_write_table(tmp_path, _COLOR + rows))
    assert "'Color'" in str(exc.value) and named in str(exc.value)


def test_a_department_settles_an_age_range_as_normalised(table):
    # real Department values of the shared data: "mens" 104, "Womens" 82, "Men's" 74, "boys" 15, "Girls" 15
    from ecombench.text import normalize

    by = table.settled_by()["Age Range (Description)"]["Department"]
    assert {by.get(normalize(v)) for v in ("mens", "Womens", "Men's", "Women")} == {"Adult"}
    assert {by.get(normalize(v)) for v in ("boys", "Girls", "Kids", "Children")} == {"Kids"}
    assert by.get(normalize("Beauty")) is None


def test_a_clarification_field_with_too_few_keywords_is_rejected(tmp_path):
    path = _write_table(tmp_path, '[fields."Shape"]\nlabel = "shape"\nsources = ["clarification"]\n'
                                  'keywords = ["shape", "form"]\n')
    with pytest.raises(SettingError, match="7-10 distinct keywords"):
        load_field_table(path)


def test_a_keyword_shared_by_two_fields_is_rejected(tmp_path):
    path = _write_table(tmp_path, '[fields."Color"]\nlabel = "colour"\nsources = ["query"]\nkeywords = ["shade"]\n'
                                  '[fields."Finish Type"]\nlabel = "finish"\nsources = ["query"]\n'
                                  'keywords = ["Shade"]\n')
    with pytest.raises(SettingError, match="(?i)keyword .shade. .*Color"):
        load_field_table(path)


def test_an_alias_shared_by_two_fields_is_rejected(tmp_path):
    path = _write_table(tmp_path, '[fields."Color"]\nlabel = "colour"\nsources = ["query"]\naliases = ["Finish"]\n'
                                  '[fields."Finish Type"]\nlabel = "finish"\nsources = ["query"]\n'
                                  'aliases = ["finish"]\n')
    with pytest.raises(SettingError, match="alias"):
        load_field_table(path)


def test_a_reader_of_detail_keys_alone_loads_the_table_before_its_question_vocabulary_is_checked(tmp_path):
    # "holding" as a Shape paraphrase reads as Capacity's "holds": a build refuses the table, ingest reads keys by it.
    text = FIELD_TABLE.read_text(encoding="utf-8").replace('paraphrases = ["round or square"',
                                                          'paraphrases = ["holding", "round or square"')
    path = tmp_path / "fields.toml"
    path.write_text(text, encoding="utf-8")
    for_ingest = load_field_table(str(path), check_vocabulary=False)
    assert for_ingest.canonical_key("Item Weight") == "Item Weight"
    with pytest.raises(ValueError, match="reads as 'holding' of field 'Shape'"):
        load_field_table(str(path))
    with pytest.raises(ValueError, match="reads as 'holding' of field 'Shape'"):  # once refused, refused again
        load_field_table(str(path))
    assert load_field_table(str(FIELD_TABLE)) is load_field_table(check_vocabulary=False)


def test_the_bundled_table_is_the_default(table):
    assert table.source_path == str(FIELD_TABLE)


def test_no_keyword_opens_two_fields_under_the_slot_matcher_rule(table):
    # The leakage check compares keywords through ecombench.text.normalize (singular/plural folded),
    # which is looser than the loader's check; two fields sharing one would make slots collide.
    owner: dict[str, str] = {}
    shared = []
    for spec in table.fields.values():
        for kw in spec.keywords:
            if owner.setdefault(normalize(kw), spec.name) != spec.name:
                shared.append((kw, spec.name, owner[normalize(kw)]))
    assert shared == []


def test_every_clarification_field_lists_its_label_among_its_keywords(table):
    missing = [f.name for f in table.fields.values()
               if "clarification" in f.sources and normalize(f.label) not in {normalize(k) for k in f.keywords}]
    assert missing == []
