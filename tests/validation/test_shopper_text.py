"""What the shopper says and keeps, over the full real build (validation/shopper_text.py)."""

from __future__ import annotations

from ecombench.tables.fields import load_field_table
from ecombench.validation.shopper_text import reply_form_counts, shopper_text_figures


def test_the_real_split_keeps_its_shopper_figures(full_build):
    f = shopper_text_figures(full_build.tasks, load_field_table())
    assert f["max_reply_form_share"] <= 0.10, f["top_reply_forms"]
    assert f["threshold_share"] <= 0.25
    assert f["max_thresholds_in_a_source"] <= 1
    assert f["incoherent_personas"] == 0, f["incoherent_examples"]
    # a query repeating another's run of five words is drawn again (pipeline/build.py rephrase_repeats)
    assert f["max_phrase_share"] <= 0.03 or f["top_phrases"][0][1] == 1, f["top_phrases"]
    assert f == full_build.manifest["counts"]["shopper_text"]


def test_a_reply_form_masks_the_value_and_the_label():
    task = {"rubrics": [{"id": "r4", "type": "attribute_match", "field": "details.Material",
                         "expected_value": "Faux Leather", "info_source": "clarification"}],
            "clarification_script": {"clarification_slots": [
                {"slot_id": "s1", "linked_rubric_ids": ["r4"], "field": "details.Material",
                 "user_response": "I'd like it made of faux leather."}], "profile_replies": []}}
    assert reply_form_counts([task], load_field_table()) == {"i'd like it made of {v}.": 1}
