"""One device, however the page spells it: the device models compatibility values name (ecombench.catalog.devices).

Every value below is a real "Compatible Phone Models" / "Compatible Devices" label of the shared data (the
product's parent_asin beside it).
"""

from __future__ import annotations

import pytest

from ecombench.catalog.devices import (
    MAKER_SERIES,
    DeviceModel,
    device_holds,
    device_models,
    learn_maker_series,
    names_device,
    names_model,
    spell_plus,
)
from ecombench.text import normalize


@pytest.mark.parametrize(("stated", "required"), [
    ("Samsung Galaxy S23 Ultra, Samsung Galaxy S23 Plus, Samsung Galaxy S23", "Samsung S23"),  # B0BZYFY69Q's label
    ("Galaxy S23 5G", "Samsung Galaxy S23"),
    ("Google Pixel 3A XL, Google Pixel 3 XL, Google Pixel 4", "Google Pixel 3 XL (6.3 inch)"),  # B09NQNKJWS, B089SWLV8K
    ("Motorola Moto G6 Play", "Moto G6 Play"),  # B07J64WK38, B07DWHRM71
    ("Galaxy A21S", "Samsung A21S"),  # B08B8HDQB2
    ("Samsung Galaxy Note 20", "Note 20"),  # B08FRD4BLH
    ("IPhone 14/14 Plus/14 Pro/14 Pro Max/13/13 Mini", "IPhone 14 Pro Max"),  # B0BG1T7XTQ
    ("Apple 7/8/SE", "iPhone SE"),
    ("Motorola Moto G Stylus 2021 4G", "Moto G Stylus (2021)"),  # B09BB94YSK
])
def test_one_device_in_other_spellings_holds(stated, required):
    assert device_holds(stated, required)


@pytest.mark.parametrize(("stated", "required"), [
    ("Samsung Galaxy S21 Ultra", "Samsung Galaxy S21"),  # B08SFZ5LZW against B09YTJJ5P2
    ("iPhone 14 Pro Max", "IPhone 14"),  # B0BX34TZM1 against B0BBH98G25
    ("Google Pixel 3A XL", "Google Pixel 3 XL"),  # B09NZDS79T against B089SWLV8K
    ("Samsung Galaxy S23 Ultra", "Samsung S23"),  # B0BRMVSB8R against B0BZYFY69Q
    ("Galaxy S23+", "Galaxy S23"),
    ("Moto G5 Plus", "Moto G5"),  # B085YB6FJ3
    ("Samsung Galaxy S21", "Samsung Galaxy S22"),
    ("Moto G Stylus 5G 2022", "Motorola Moto G Stylus 2021 4G"),  # a letter line's year tells its models apart
    ("Moto G Power 2022", "Motorola Moto G Stylus 2021 4G"),
])
def test_another_variant_or_model_does_not_hold(stated, required):
    assert device_holds(stated, required) is False


def test_a_list_names_every_model_in_it():
    # B0BG1T7XTQ: one label, every iPhone it fits
    names = [(d.series, d.model, d.variant) for d in device_models("IPhone 14/14 Plus/14 Pro/14 Pro Max/13/13 Mini")]
    assert names == [("iphone", "14", ()), ("iphone", "14", ("plus",)), ("iphone", "14", ("pro",)),
                     ("iphone", "14", ("max", "pro")), ("iphone", "13", ()), ("iphone", "13", ("mini",))]


@pytest.mark.parametrize("value", ["OnePlus", "iPad Pro", "Personal Computer", "Cellphone", "AT&T", "12 Pro", "PC",
                                   "XS"])
def test_a_kind_a_series_or_a_carrier_names_no_device_model(value):
    assert not names_device(value)
    assert device_holds("OnePlus 10 Pro", value) is None  # matched as words, not as a device


def test_a_value_and_its_normalised_form_name_the_same_devices(shared):
    """The checker reads a page's value, the answer-set filters its normalised form: they must agree."""
    import json

    values = set()
    with (shared / "meta_electronics_beauty_office.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            details = json.loads(line).get("details") or {}
            values |= {v for k, v in details.items() if k in ("Compatible Phone Models", "Compatible Devices")
                       and isinstance(v, str)}
    assert len(values) > 300
    differ = [v for v in values if device_models(spell_plus(v)) != device_models(normalize(spell_plus(v)))]
    assert differ == []


def test_a_maker_without_its_series_takes_the_series_its_labels_name(shared):
    import json

    values = []
    with (shared / "meta_electronics_beauty_office.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            details = json.loads(line).get("details") or {}
            values += [v for k, v in details.items() if k == "Compatible Phone Models" and isinstance(v, str)]
    learned = learn_maker_series(values)
    for maker in ("samsung", "google", "motorola", "apple"):
        assert learned[maker].most_common(1)[0][0] == MAKER_SERIES[maker]


@pytest.mark.parametrize(("value", "model"), [
    # MightySkins "Skin Compatible with HP Spectre x360 2-in-1 13.3\" (2015)" (B013RMY6OS): read as the models "x" and
    # "360", no device, its task never named the laptop (negative_constraint-4a6f6cf8e476, read unpublishable)
    ("HP Spectre x360", "x360"),
    ("ThinkPad X220", "x220"),
    ("iPhone X", "x"),
    ("iPhone X 256GB", "x"),
])
def test_a_letter_model_before_a_long_number_opens_a_model(value, model):
    assert [d.model for d in device_models(value)] == [model]


@pytest.mark.parametrize("value", ["1920x1080", "FHD 1920x1080 LCD LED Display", "1440x900"])
def test_a_resolution_opens_no_model_at_its_x(value):
    # "Screen Replacement for N156HGE-EAL Rev C1 FHD 1920x1080" (B07W9FHM55)
    assert not any(d.model.startswith("x") and d.model[1:].isdigit() for d in device_models(value))


@pytest.mark.parametrize(("value", "line", "variant"), [
    ("Nintendo Switch", "switch", ()),  # B0748NBHP5's label
    ("Apple Watch 38mm", "watch", ()),  # B07LB62ZD5's label: the band's size names no model
    ("LG Tribute Royal", "tribute royal", ()),  # B083G65M25's label
    ("Apple AirPods Pro", "airpod", ("pro",)),
    ("Samsung Galaxy Buds+", "galaxy bud", ("plus",)),
])
def test_a_makers_line_named_without_a_number_is_a_device(value, line, variant):
    assert device_models(value) == (DeviceModel(line, line, variant),)
    assert names_device(value) and not names_model(value)


@pytest.mark.parametrize(("stated", "required"), [
    ("Apple AirPods Pro", "Apple AirPods"),  # B0811QZXPD's case fits the Pro, not the AirPods 1 and 2
    ("Apple AirPods 2", "Apple AirPods Pro"),
    ("Apple AirPods", "Apple AirPods 2"),
    ("Nintendo Switch Lite", "Nintendo Switch"),
    ("Apple Watch", "Samsung Galaxy Watch"),
])
def test_a_line_is_neither_another_variant_nor_a_numbered_model_of_it(stated, required):
    assert device_holds(stated, required) is False


def test_a_line_holds_in_any_spelling():
    assert device_holds("Apple AirPod Pro", "Apple AirPods PRO")
    assert device_holds("Samsung Galaxy Buds Plus", "Samsung Galaxy Buds+")


@pytest.mark.parametrize("value", [
    "2019 Airpod Pro",  # B099QV6HRM's label: no maker names the line
    "Samsung Galaxy", "Apple iPhone", "Google Pixel",  # a maker's numbered series
    "Sony E",  # B00IDV455Y's "Compatible Mountings" label: a lens mount, a letter
    "Samsung Android",  # a system
    "Apple Watch Magnetic Charging Dock",  # B0C36M43V1's label: a description, not a line
    "Huawei and all phones.| Apple iPhone",  # a part of B092W3XDV5's label
])
def test_words_after_a_maker_that_name_no_line_are_no_device(value):
    assert not names_device(value)


def test_a_count_after_a_number_is_no_model():
    # B07M5QDL2H: "ALXCD Earbud Cover Replacement for AirPods Pro, 4 Pairs ..."
    assert device_models("AirPods Pro 4 Pairs") == ()
    assert device_models("Galaxy S10 2 Pack") == (DeviceModel("galaxy", "s10", ()),)
