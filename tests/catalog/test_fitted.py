"""The device a product fits, read from its title and bullets (ecombench.catalog.fitted), on real products.

The phrases are the shared files' own text; the facts, answer sets and grades are those of the snapshot of every
shared file (`full_catalog`).
"""

from __future__ import annotations

from typing import Any

import pytest

from ecombench.catalog.device_lines import DeviceLine
from ecombench.catalog.devices import names_device
from ecombench.catalog.fitted import device_spellings, phrases
from ecombench.rubrics.checkers import check


def _read(text: str, known: frozenset[str] = frozenset(),
          lines: frozenset[DeviceLine] = frozenset()) -> list[tuple[bool, list[str]]]:
    """(negated, devices) of every device opener of `text`, with the catalog's `lines` when given."""
    return [(negated, device_spellings(phrase, known, lines)) for _, phrase, negated in phrases(text)]


def _rubric(field: str, value: str) -> dict[str, Any]:
    return {"id": "r1", "type": "attribute_match", "field": f"details.{field}", "expected_value": value,
            "info_source": "query"}


def _facts(catalog, asin: str) -> dict[str, str]:
    return {f["value"]: f["polarity"] for f in catalog.product(asin)["facts"]
            if f["field"] in ("Compatible Phone Models", "Compatible Devices")}


def test_a_band_names_the_tracker_it_fits_after_compatible_with():
    # B08MLFZ58K's title: the maker named once covers the list; the bullets' text after it names no device.
    title = ("Maledan Bands Compatible with Fitbit Charge 3 and Charge 4, Breathable Sport Band Replacement "
             "Wristbands with Air Holes for Charge 4/ Charge 3/ Charge 3 SE Fitness Tracker Women Men, 3-Pack")
    assert _read(title)[0] == (False, ["Fitbit Charge 3", "Charge 4"])


def test_a_list_of_models_takes_the_series_named_first():
    # B0B38CSBHJ: "Compatible with Fitbit Versa/Versa 2/Fitbit Versa Lite for Women and Men, ..."
    assert _read("Neitooh 4 Packs Bands Compatible with Fitbit Versa/Versa 2/Fitbit Versa Lite for Women and Men")[0] \
        == (False, ["Versa 2"])


def test_not_for_a_device_denies_it():
    # B0B38CSBHJ's bullet: "please note that our bands are not for Fitbit Versa 3/Fitbit Sense"
    assert (True, ["Fitbit Versa 3"]) in _read("Please note that our bands are not for Fitbit Versa 3/Fitbit Sense")
    # B09MQ7ZRBB's bullet (SUANPOT S22 wallet case, no compatibility label)
    bullet = ("[The wallet case only designed for Samsung Galaxy S22 5G]---Not fit S22+/S22 Plus\uff0cIf you need "
              "another model leather wallet case, click on the one next to the title [Visit the SUANPOT Store]")
    assert _read(bullet)[:2] == [(False, ["Samsung Galaxy S22"]), (True, ["S22+", "S22 Plus"])]


def test_for_a_person_or_an_age_names_no_device():
    # B000PJ5ATC's bullet; a number after "for" is no model without a maker, a known series or a model code.
    assert _read("Includes 1 Miniatures - Not for Children under the age of 14 Years.") == [(True, [])]
    assert _read("Curtains for Bedroom 52 x 84") == [(False, [])]


def test_an_unlabelled_band_gets_the_device_as_a_fact_and_is_graded_by_it(full_catalog):
    # B08MLFZ58K has no details at all: the device it fits was a fragment ("SE") of the title before.
    facts = _facts(full_catalog, "B08MLFZ58K")
    assert facts["Fitbit Charge 3"] == "stated" and facts["Charge 4"] == "stated"
    rubric = _rubric("Compatible Phone Models", "Fitbit Charge 3")
    assert "B08MLFZ58K" in full_catalog.index.answer_set([rubric])
    assert check(rubric, full_catalog.product("B08MLFZ58K"), full_catalog.table).status == "satisfied"
    other = _rubric("Compatible Phone Models", "Fitbit Charge 5")
    assert check(other, full_catalog.product("B08MLFZ58K"), full_catalog.table).status != "satisfied"


@pytest.mark.parametrize(("asin", "value"), [
    ("B0B38CSBHJ", "Fitbit Versa 3"),  # "our bands are not for fitbit versa 3 / fitbit sense"
    ("B09MQ7ZRBB", "S22 Plus"),  # "NOT fit S22+/S22 Plus"
])
def test_a_device_the_page_denies_is_contradicted_and_fails_the_grade(full_catalog, asin, value):
    assert _facts(full_catalog, asin).get(value) == "contradicted"
    rubric = _rubric("Compatible Phone Models", value)
    assert asin not in full_catalog.index.answer_set([rubric])
    assert check(rubric, full_catalog.product(asin), full_catalog.table).status == "not_satisfied"


def test_a_series_of_a_family_the_labels_know_is_a_device():
    # The shared labels know "ipad air" and "ipad pro", not "ipad mini"; B09HXGFBPG's title names its iPad after
    # "for" with no maker's name and no model code.
    title = ("iPad Mini 6th Case, DMaos Crocodile Reflector Leather Stand Folio Case Smart Cover, Auto Sleep/Wake, "
             "Pen Holder, Classic Fashion Protector for iPad Mini 6 8.3 inch 2021 - Brown")
    known = frozenset({"ipad air", "ipad pro"})
    assert _read(title) == [(False, [])]
    assert _read(title, known) == [(False, ["iPad Mini 6"])]


@pytest.mark.parametrize("text", [
    # B09Y8XXHYX's title and B0B74MZMMQ's bullet: a system version and a verb are no iPad or iPhone.
    "COO Wireless Mouse, LED Slim Dual Mode(Bluetooth 5.1 and 2.4G Wireless) Rechargeable Led Wireless Mouse with 3 "
    "Adjustable DPI for iPad OS 13, MacBook, Laptop, Mac OS 10.10",
    "PERSONAL EXERCISE ASSISTANT - The smart watches for iPhone have 8 indoor and outdoor sports modes, tailored for "
    "you who love sports.",
])
def test_a_system_version_or_a_word_after_the_family_names_no_device(text):
    assert all(devices == [] for _, devices in _read(text, frozenset({"ipad air", "iphone"})))


def test_an_unlabelled_ipad_case_fits_its_ipad(full_catalog):
    # B09HXGFBPG has no compatibility label; its title and bullets name the iPad Mini 6.
    assert _facts(full_catalog, "B09HXGFBPG").get("iPad Mini 6") == "stated"


def test_a_line_named_without_a_number_is_the_line_with_its_maker(catalog_lines):
    # B0811QZXPD: its task said only "It needs to fit my earphones"; "for Air Pod Pro" names the AirPods Pro
    title = ("Airpods Pro Case, AKXOMY Cute Cartoon Minnie Mouse Airpod Pro Case Cover,Soft Silicone Shockproof "
             "Protective Cover with Ring Buckle Holder Earphone Case Cover for Air Pod Pro (Airpod Pro Minnie)")
    assert _read(title) == [(False, [])]
    assert _read(title, lines=catalog_lines) == [(False, ["Apple AirPods Pro"])]


def test_a_lines_numbered_models_count_where_the_catalog_knows_the_line(catalog_lines):
    # B09KY37P2L: its task said only "I'll use it with my earphones"
    title = ("AirPods 2 Case - Techcircle Colorful Premium PU Leather Portable Protective Cover Case with Metal "
             "Keychain for AirPods 2nd Generation & 1st Generation Charging Case, Couple Owl")
    assert _read(title) == [(False, [])]
    assert _read(title, lines=catalog_lines) == [(False, ["AirPods 2nd", "AirPods 1st"])]


@pytest.mark.parametrize("text", [
    "Comfortable to hold, easy and smooth handwriting in black ink, Great Gift for Christmas ,Wedding, Birthday.",
    "Elegant office Supplies - fun AND affordable Office Supplies for Women can be hard to find.",  # B07PSL2VGQ
    "Mixhug Decorative Linen Throw Pillow Covers, Farmhouse Cushion Covers for Couch and Bed, Red, 24 x 24 Inches",
    "SIMOLIO Wireless Headphones for TV Watching with Transmitter/Charging Dock 2 in 1",  # "TV" is no Apple TV
    "Bubble-free adhesive glass screen protector for Watch will make the installation easier",  # B07NMLK8KG
    "Includes 1 Miniatures - Not for Children under the age of 14 Years.",  # B000PJ5ATC
    "Curtains for Bedroom 52 x 84",
    "Rechargeable Led Wireless Mouse with 3 Adjustable DPI for iPad OS 13, MacBook, Laptop, Mac OS 10.10",
])
def test_a_phrase_naming_no_line_names_no_device_however_many_lines_the_catalog_knows(catalog_lines, text):
    # B07ZY4M6LM, B07PSL2VGQ, B09CDXDJZD, B0B8CY1MJ4, B07NMLK8KG, B000PJ5ATC, B09Y8XXHYX: bullets and titles
    assert all(devices == [] for _, devices in _read(text, lines=catalog_lines))


def test_a_line_the_page_states_more_exactly_elsewhere_is_no_fact(full_catalog):
    # B0811QZXPD's bullet "Our covers for Airpods case are carefully made" says "Apple AirPods" of an AirPods Pro case
    facts = _facts(full_catalog, "B0811QZXPD")
    assert facts.get("Apple AirPods Pro") == "stated" and "Apple AirPods" not in facts
    product = full_catalog.product("B0811QZXPD")
    pro, plain = _rubric("Compatible Phone Models", "Apple AirPods Pro"), _rubric("Compatible Phone Models",
                                                                                    "Apple AirPods")
    assert "B0811QZXPD" in full_catalog.index.answer_set([pro])
    assert check(pro, product, full_catalog.table).status == "satisfied"
    assert check(plain, product, full_catalog.table).status != "satisfied"


@pytest.mark.parametrize(("asin", "devices"), [
    ("B09KY37P2L", ["AirPods 1st", "AirPods 2nd"]),  # an AirPods 1 and 2 case (its label: "Earphones")
    ("B0BSF5YJFG", ["Apple Watch"]),  # "Christmas Watch Band Compatible with Apple Watch 38mm 40mm 41mm ..."
    ("B09Q2PSYWY", ["Nintendo Switch"]),  # "Glamgen Animal Crossing Carrying Cases for Nintendo Switch and ..."
    # "VISOOM Silicone Case Compatible with Samsung Galaxy Buds Plus/Galaxy Buds - 2022 Soft Carrying Case ..."
    ("B08XBPZCNK", ["Samsung Galaxy Buds", "Samsung Galaxy Buds Plus"]),
])
def test_an_unlabelled_accessory_fits_the_line_its_page_names(full_catalog, asin, devices):
    facts = _facts(full_catalog, asin)
    assert sorted(v for v, polarity in facts.items() if polarity == "stated" and names_device(v)) == devices
    rubric = _rubric("Compatible Phone Models", devices[-1])
    assert asin in full_catalog.index.answer_set([rubric])
    assert check(rubric, full_catalog.product(asin), full_catalog.table).status == "satisfied"


def test_a_label_naming_a_line_leaves_the_title_its_models(full_catalog):
    # B071JPG6T3: the label "apple ipad" names the line only; the title names the iPads it fits
    facts = _facts(full_catalog, "B071JPG6T3")
    assert {"apple ipad", "Apple iPad 6th", "iPad 5th"} <= set(facts)


@pytest.mark.parametrize("text", [
    # B09J83WPPW's and B09197MW1K's bullets: a water rating and a network
    "Outdoor watches for men is IP68 waterproof,you can wear it when swim and record various data.",
    "the watch can be used for calls with a 2G SIM card installed",
])
def test_a_rating_or_a_network_is_no_model_code(text):
    assert all(devices == [] for _, devices in _read(text))


def test_a_dimension_is_no_model_code(catalog_lines):
    # B0B1HGJC84: the list goes on past the AirPods into the case's description
    title = ("Compatible with AirPods 2/1 Case Noodles Cup, Kids Teens Girls Boys Women Kawaii Cartoon 3D Skin for "
             "Airpod Case, Protective Silicone Character Funny Fashion Cute Cover for AirPods 2 1 （Noodles Cup）")
    assert _read(title, lines=catalog_lines)[0] == (False, ["AirPods 2", "AirPods 1"])


def test_a_number_before_d_is_a_camera_model():
    # B07SKWXR5C: Canon's models end in "D"
    title = "LP-E17 Battery Charger LC-E17 for Canon EOS M3, M5, M6, 77D, 200D, 750D, 760D, 800D, 8000D, 9000D"
    assert {"77D", "200D", "9000D"} <= set(_read(title)[0][1])
