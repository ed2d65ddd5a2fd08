"""Text normalisation: when two strings state the same value (stages/text.py).

Strings are real catalog values and phrases the template verbaliser writes for real products.
"""

from __future__ import annotations

import pytest

from ecombench.text import contains_phrase, find_phrase, fix_articles, format_number, normalize


def test_a_word_inside_another_word_is_not_contained():
    assert not contains_phrase("I am bored of plain cases", "red")


def test_a_colour_word_is_contained_in_a_compound_colour():
    assert contains_phrase("Matte Black", "Black")


def test_containment_ignores_case():
    assert contains_phrase("with a LIGHTNING connector", "Lightning")


@pytest.mark.parametrize("spelling", ["1.69 Inches", "1.69-inch", '1.69"', "1.69 in", "1.69 inches"])
def test_inch_spellings_are_one_value(spelling):
    assert normalize(spelling) == normalize("1.69 Inches")


@pytest.mark.parametrize("spelling", ["1.69 Inches", "1.69-inch", '1.69"', "1.69 in"])
def test_inch_spellings_are_contained_in_each_other(spelling):
    assert contains_phrase("Screen size 1.69 Inches", spelling)


def test_in_as_a_word_is_not_an_inch():
    assert normalize("Black in case") == "black in case"


@pytest.mark.parametrize(("a", "b"), [("4.50", "4.5"), ("1,000", "1000"), ("20.0", "20"), ("007", "7")])
def test_number_spellings_are_one_value(a, b):
    assert normalize(a) == normalize(b)


def test_different_numbers_do_not_match():
    assert not contains_phrase("at least 4.5 stars", "4")


def test_a_number_does_not_match_inside_a_longer_number():
    assert not contains_phrase("costs no more than $200", "20")


def test_plural_and_singular_are_one_token():
    assert contains_phrase("Wall Clocks", "wall clock")


def test_html_tags_and_entities_are_dropped():
    assert normalize("<B>Safety&nbsp;Warning</B>") == "safety warning"


def test_empty_needle_is_never_contained():
    assert not contains_phrase("anything at all", "")


def test_find_phrase_returns_the_span_in_the_original_text():
    text = "I'm looking for a case in Matte Black, please."
    start, end = find_phrase(text, "black")
    assert text[start:end] == "Black"


def test_find_phrase_span_covers_a_multi_word_value():
    text = "Please find me screen protectors made of Tempered Glass."
    start, end = find_phrase(text, "tempered glass")
    assert text[start:end] == "Tempered Glass"


def test_find_phrase_finds_a_thousands_separated_number():
    text = "It must have at least 1,000 ratings."
    start, end = find_phrase(text, "1000")
    assert text[start:end] == "1,000"


def test_find_phrase_is_none_when_absent():
    assert find_phrase("I need a bored-looking case", "red") is None


# Regression: find_phrase could not span an inch mark, so contains_phrase found the value but the
# evidence span was None.
def test_find_phrase_finds_a_value_written_with_an_inch_mark():
    text = 'I need a watch band for a 1.69" screen.'
    assert contains_phrase(text, "1.69 Inches")
    assert find_phrase(text, "1.69 Inches") is not None


@pytest.mark.parametrize(("x", "text"), [(4.0, "4"), (4.5, "4.5"), (1000.0, "1,000"), (19.99, "19.99"),
                                         (0.5, "0.5"), (20.0, "20")])
def test_format_number_states_numbers_as_text_does(x, text):
    assert format_number(x) == text


def test_format_number_round_trips_through_normalize():
    assert normalize(format_number(1000.0)) == normalize("1000")


def test_fix_articles_uses_an_before_a_vowel_letter():
    assert fix_articles("I need a Automobile charger") == "I need an Automobile charger"


def test_fix_articles_keeps_a_before_a_consonant():
    assert fix_articles("I want a Black case") == "I want a Black case"


# Regression: fix_articles goes by vowel letter, not sound; real query for B09SPZN2PN reads 'with an USB connector'
def test_fix_articles_keeps_a_before_a_consonant_sound_written_with_a_vowel():
    assert fix_articles("with a USB connector") == "with a USB connector"
