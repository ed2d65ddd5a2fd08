"""Stage 2 and the device an accessory fits, on the real shared products that showed each defect (full_catalog).

A device accessory's compatibility option naming its device model is a requirement however few other products
fit that phone, and a series or carrier the page also names is not; a product that is no device accessory (a
mouse) gets no requirement from its compatibility labels that its type's statistics would not allow.
"""

from __future__ import annotations

import pytest

from ecombench.catalog.devices import names_device
from ecombench.hashing import rng
from ecombench.pipeline.candidate import ValueSupport
from ecombench.pipeline.config import TypeRuleSettings
from ecombench.stages.features import extract_features
from ecombench.tables.intents import load_intents
from ecombench.validation.catalog_stats import catalog_knowledge

PHONE = "details.Compatible Phone Models"
DEVICES = "details.Compatible Devices"
COMPAT = frozenset({"Compatible Phone Models", "Compatible Devices"})


@pytest.fixture(scope="module")
def knowledge(full_catalog):
    return catalog_knowledge(full_catalog.path, full_catalog.table)


@pytest.fixture(scope="module")
def stats(knowledge):
    return knowledge.type_stats.with_rules(TypeRuleSettings().rules(catalog_products=knowledge.product_types.height))


def _features(full_catalog, stats, asin, seed=0):
    rejected: dict[str, dict[str, str]] = {}
    features, _ = extract_features(full_catalog.product(asin), load_intents()["product_search"], full_catalog.table,
                                   rng(seed, "device-test", asin), value_support=ValueSupport(full_catalog.index),
                                   rejected_values=rejected, type_vocabulary=full_catalog.type_vocabulary,
                                   type_stats=stats)
    return {f.field: f.value for f in features}, rejected


@pytest.mark.parametrize(("asin", "device"), [
    ("B0BZYFY69Q", "Samsung S23"),  # ZHIYIWU Galaxy S23 case: "Samsung S23" was a rare_value
    ("B089SWLV8K", "Google Pixel 3 XL (6.3 inch)"),  # Pixel 3 XL wallet case
    ("B07DWHRM71", "Moto G6 Play"),  # OtterBox Commuter for the Moto G6 Play: two products in the catalog fit it
    ("B085YB6FJ3", "Moto G5 Plus"),  # LEECOCO wallet case: the only Moto G5 Plus product
])
def test_a_device_accessory_keeps_the_device_it_fits(full_catalog, stats, asin, device):
    features, rejected = _features(full_catalog, stats, asin)
    assert features.get(PHONE) == device, rejected.get(PHONE)


def test_a_series_beside_the_device_model_is_not_drawn(full_catalog, stats):
    # nancheng case for the OnePlus 10 Pro: "OnePlus" alone named no phone
    for seed in range(6):
        features, _ = _features(full_catalog, stats, "B09ZHDGZYJ", seed)
        drawn = [v for f, v in features.items() if f in (PHONE, DEVICES)]
        assert drawn and all(names_device(v) for v in drawn), drawn


def test_a_mouse_is_no_device_accessory(full_catalog, knowledge, stats):
    # Neises Bluetooth mouse: "iPad Pro" as a compatible phone model, "PC" as a compatible device
    asin = "B0957PJW3X"
    assert not stats.fits_devices(knowledge.type_of(asin), COMPAT)
    features, _ = _features(full_catalog, stats, asin)
    assert PHONE not in features and DEVICES not in features


@pytest.mark.parametrize("asin", ["B0BZYFY69Q", "B089SWLV8K", "B08SFZ5LZW", "B0BX34TZM1"])
def test_phone_cases_cover_screens_and_chargers_are_device_accessories(knowledge, stats, asin):
    assert stats.fits_devices(knowledge.type_of(asin), COMPAT)



def test_a_case_whose_model_name_is_its_phone_keeps_the_phone(full_catalog, stats):
    # "Samsung Galaxy S9 Case, Military Armor ...": Model Name "Samsung Galaxy S9" made the phone a model_value
    features, rejected = _features(full_catalog, stats, "B08JP7QFHN")
    assert features.get(PHONE) == "Samsung Galaxy S9", rejected.get(PHONE)


def test_the_device_is_drawn_in_its_full_spelling(full_catalog, stats):
    # LUVI Galaxy S10 wallet case: title and bullet say "S10", the label "Samsung Galaxy S10"
    features, _ = _features(full_catalog, stats, "B094HVBDNC")
    assert features.get(PHONE) == "Samsung Galaxy S10"


def test_a_fragment_beside_the_device_is_not_drawn(full_catalog, stats):
    # SAVYOU iPhone 12/12 Pro case: "12 Pro" as a compatible device beside "iPhone 12" and "iPhone 12 Pro"
    features, rejected = _features(full_catalog, stats, "B08HZ9GYFF")
    assert DEVICES not in features and rejected[DEVICES] == {"12 Pro": "not_a_device_model"}
    assert names_device(features[PHONE])


def test_the_products_own_maker_is_no_device_it_fits(full_catalog, stats):
    # "Xiaomi Watch S1 Active ..." (store Xiaomi): its title's "Xiaomi" was read as a compatible phone model, and a
    # reviewed task asked for a watch compatible with "XiaoMi".
    # The title's compatibility words outside its device part must name a device model, so "Xiaomi" is no fact
    # (ecombench.catalog.facts).
    asin = "B09S8BKKHB"
    assert not any(f["value"].lower() == "xiaomi" for f in full_catalog.product(asin)["facts"]
                   if f["field"] == "Compatible Phone Models")
    features, _ = _features(full_catalog, stats, asin)
    assert PHONE not in features
