"""A catalog's device lines named without a number, learned from its titles (ecombench.catalog.device_lines).

The titles are the shared files' own; the lines learned are those of the snapshot of every shared file.
"""

from __future__ import annotations

import polars as pl
import pytest

from ecombench.catalog.device_lines import DeviceLine, line_mentions


def _mentions(title: str) -> list[tuple[str, str, str, bool, bool, str]]:
    found = line_mentions(pl.Series([title]))
    return [(r["maker"], r["words"], r["spelling"], r["opened"], r["numbered"], r["continued"])
            for r in found.iter_rows(named=True)]


@pytest.mark.parametrize(("title", "mention"), [
    # B06XQYBZZ8: the line after the maker, after an opener
    ("MightySkins Skin Compatible with Apple AirPods - Floral Lace | Protective, Durable, and Unique Vinyl Decal wrap "
     "Cover | Easy to Apply, Remove, and Change Styles | Made in The USA",
     ("apple", "airpod", "AirPods", True, False, "")),
    # B0913F9PD5: the earbuds themselves; the maker's own series opens a line of two words
    ("Samsung Galaxy Buds Pro, True Wireless Earbuds w/Active Noise Cancelling (Wireless Charging Case Included), "
     "Phantom Black (International Version)", ("samsung", "galaxy bud", "Galaxy Buds", False, False, "")),
    # B08K36D8SK: a model follows a word that continues the line's name into another line's
    ("Compatible with Garmin Venu Sq 2 bands, YOUkei Stainless Steel Metal Replacement Strap Bracelet",
     ("garmin", "venu", "Venu", True, True, "sq")),
])
def test_a_title_names_a_line_after_its_maker(title, mention):
    assert mention in _mentions(title)


def test_a_makers_numbered_series_is_no_line():
    # B0C36M43V1: "Apple MFi" is a line mention (no opener before it), "Apple iPhone" none
    title = ("iPhone Charger Fast Charging 3Pack Apple MFi Certified USB C Charger Lightning Cable USB-C Wall Charger "
             "20W with 6ft USB C to Lightning Cable for iPhone 14 13 12 11 Pro XR XS Max X 8 Plus iPad AirPods")
    assert [(m[1], m[3]) for m in _mentions(title)] == [("mfi", False)]


@pytest.fixture(scope="module")
def lines(catalog_lines) -> dict[str, DeviceLine]:
    return {line.name: line for line in catalog_lines}


def test_the_catalog_learns_its_lines(lines):
    # AirPods, iPad: names in the catalog's text; "watch", "switch": common nouns there; "TV": a kind's abbreviation
    assert {name: line.bare for name, line in lines.items()
            if name in ("Apple AirPods", "Apple iPad", "Apple Watch", "Nintendo Switch", "Apple TV")} == {
        "Apple AirPods": True, "Apple iPad": True, "Apple Watch": False, "Nintendo Switch": False, "Apple TV": False}
    assert "Samsung Galaxy Buds" in lines and lines["Garmin Venu"].continued == ("sq",)


@pytest.mark.parametrize("name", ["Apple MFi", "Amazon Exclusive", "Microsoft Wireless", "Samsung Galaxy",
                                  "Apple iPhone"])
def test_words_after_a_maker_no_product_is_for_are_no_line(lines, name):
    # "Apple MFi Certified", "Amazon Exclusive", "Microsoft Wireless Mouse": in several titles, never after "for"
    assert name not in lines
