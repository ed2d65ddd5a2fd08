"""The product type is what the product is (stages/product_type.py), on the real accessories of issue #12."""

from __future__ import annotations

import json

import pytest

from ecombench.stages.product_type import head_segments, product_type
from ecombench.tables.fields import load_field_table
from tests.conftest import SHARED

FILES = [SHARED / "meta_electronics_beauty_office.jsonl", SHARED / "meta_home_toys_sports.jsonl",
         SHARED / "meta_hf_form_sample.jsonl", SHARED / "with-reviews" / "meta_electronics_with_reviews.jsonl"]


@pytest.fixture(scope="module")
def real():
    """parent_asin -> raw real record (title, categories) of the shared files."""
    if not all(f.is_file() for f in FILES):
        pytest.skip("shared real data not found")
    out = {}
    for f in FILES:
        with f.open(encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                out.setdefault(rec["parent_asin"], rec)
    return out


def typed(real, asin):
    return product_type(real[asin], load_field_table().fields["title"].placeholders)


def test_replacement_earpads_are_earpads_not_wireless_headphones(real):
    # "Studio 2/3 Replacement Earpads, JARMOR Memory Foam Ear Cushion Pads Cover for Beats Studio ..."
    assert real["B074H1KSG7"]["categories"] == ["Wireless Headphones"]
    assert typed(real, "B074H1KSG7") == "Earpads"


def test_a_watch_band_is_a_watch_band_not_a_smartwatch(real):
    # "ANCOOL Compatible with Fenix 5 Band Easy Fit 22mm Width Soft Silicone Watch Bands Replacement for ..."
    assert real["B0792VNG1N"]["categories"] == ["Smartwatches"]
    assert typed(real, "B0792VNG1N") == "Watch Bands"


def test_a_toothbrush_charger_base_is_not_typed_as_toothbrushes(real):
    # "Replacement Charger Base Charging Induction Cover/Stand for Philip Electric Toothbrush, ..."
    kind = typed(real, "B0B5DHNYT7")
    assert real["B0B5DHNYT7"]["categories"] == ["Toothbrushes"]
    assert kind == "Cover Stand"  # the head's last noun run; never the device it charges


def test_a_tablet_filed_under_gaming_mice_is_a_tablet(real):
    # "Tablet 10.1 inch | Android 11 4G Phone Call Phablet ..." sits under "Gaming Mice".
    assert typed(real, "B0C49M9KPL") == "Tablet"


def test_a_wall_mount_for_a_mesh_router_is_a_wall_mount_not_systems(real):
    # "PETIMETI Wall Mount for EERO 6 Mesh WiFi System, ..." under "Whole Home & Mesh Wi-Fi Systems".
    assert typed(real, "B0922GNQRL") == "Wall Mount"


def test_an_earbud_case_is_a_case(real):
    # "MRPLUM Earbud Carrying Case Small Compatible with AirPods ..." under "Wireless Headphones".
    assert typed(real, "B07SCLKCRY") == "Carrying Case"


def test_a_category_naming_the_head_noun_is_kept(real):
    # "Garmin Forerunner 245, GPS Running Smartwatch with ..." : the head's noun is the category's.
    smartwatch = next(a for a, r in real.items() if (r.get("title") or "").startswith("Garmin Forerunner 245, GPS"))
    assert typed(real, smartwatch) == "Smartwatches"


def test_a_title_naming_no_product_has_no_type(real):
    funko = next(a for a, r in real.items() if (r.get("title") or "").startswith("Funko Pop! Marvel: Luchadores"))
    assert typed(real, funko) is None


def test_the_head_ends_before_for_and_compatible_with():
    assert head_segments("PETIMETI Wall Mount for EERO 6 Mesh WiFi System")[:2] == ["PETIMETI Wall Mount",
                                                                                   "EERO 6 Mesh WiFi System"]


def test_a_product_line_before_a_colon_is_not_the_type(real):
    # B075R8PDHC "Funko POP! TV: Marvel Vs Capcom - Captain Marvel Vs Chun-Li Collectible Figure" was asked for
    # as "a TV" in a build of issue #12's first version.
    assert typed(real, "B075R8PDHC") == "Figures"  # the head's noun, in the wording of its "Action Figures" category


@pytest.mark.parametrize("asin, before, after", [
    # "MJL Furniture ... Bedroom Headboard Contemporary Styled Bedroom Décor, Noah Series Headboard, Blush Finish, ..."
    # (colour Blush): the shared build could ask for "blush".
    ("B017I4GJGO", "Blush", "Headboards"),
    # "beukei (3 Pack) for Huawei Y7 ... Screen Protector Tempered Glass, ..." (material Glass)
    ("B07RYLBG8H", "Glass", "Screen Protectors"),
    # "Mason Cash Forest Oval Pie 18cm, Ceramic, Cream" (colour Cream): no product noun is left, so no type.
    ("B09XB3PY9K", "Cream", None),
    # A hyphen joins a brand or a variant to the noun: "Case-Mate - iPhone XR Case - ...", "... Mouse-color: ...",
    # "Nemesis Now Ghost Leather Wallet-Gold, Black, 11cm", "Forum Novelties 73802 Mesh Wig Cap-Black, ..."
    ("B07H9Z7XRF", "Case-Mate", "Cases"), ("B079P4Z97Y", "Mouse-color", "Mice"),
    ("B07WVSYFV7", "Wallet-Gold", "Wallets"), ("B013JCMQI4", "Wig Cap-Black", "Wig Cap"),
])
def test_a_colour_material_or_hyphenated_suffix_is_not_the_product_type(real, asin, before, after):
    assert before in real[asin]["title"]
    assert typed(real, asin) == after


def test_glass_names_a_wine_glass_when_its_category_does(full_catalog):
    # "Lawyer Gifts – (2 Sided) Funny Unique Novelty Stemless Wine Glass ..." (material Glass once ingested: the raw
    # record's fused key "Material Glass"; category Wine Glasses).
    row = full_catalog.product("B07H817S8B")
    assert {"key": "Material", "value": "Glass"}.items() <= next(d for d in row["details"]
                                                                  if d["key"] == "Material").items()
    assert product_type(row, load_field_table().fields["title"].placeholders) == "Glass"


def test_a_run_of_search_terms_takes_the_category_it_states(real):
    # "Gray Antelope Pillow Cover ... Accent Pillow Throw Pillow Cover Pillow Cushion 18 x 18 inch" (category Throw
    # Pillow Covers): the shared build asked for "a pillow throw pillow cover pillow cushion".
    assert typed(real, "B0CB9XYR1W") == "Throw Pillow Covers"
    assert typed(real, "B07RXQ77G5") == "Mouse Pads"  # "... Blue Mouse Pad Mouse Mat for Computer Desk ..."
    # "... Portable Dust-proof Toothbrush Cases Toothbrushes Holder ..." (category Toothbrushes): the run ends in the
    # repeated word's category, so the run stays.
    assert typed(real, "B0C5D7FXSR") == "Toothbrush Cases Toothbrushes Holder"
