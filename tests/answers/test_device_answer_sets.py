"""Answer sets of the device an accessory fits: every spelling of the device, no other variant of it.

On the real shared catalog (full_catalog); the index's postings path, its vectorised path and a brute-force loop
with the checkers must give the same products (ecombench.catalog.devices decides for all three).
"""

from __future__ import annotations

import pytest

from ecombench.rubrics.checkers import check

PHONE = "details.Compatible Phone Models"


def _rubric(value: str, rubric_type: str = "attribute_match") -> dict:
    expected = [value] if rubric_type == "negative_attribute" else value
    return {"id": "r1", "type": rubric_type, "field": PHONE, "expected_value": expected, "info_source": "persona"}


def _brute_force(rubrics, catalog):
    return sorted(p["parent_asin"] for p in catalog.all_products()
                  if all(check(r, p, catalog.table).satisfied for r in rubrics))


@pytest.mark.parametrize(("value", "member", "not_member"), [
    # ZHIYIWU case labelled "Samsung S23": a "Samsung Galaxy S23" label is the same phone, the S23 Ultra case is not
    ("Samsung S23", "B0BZYFY69Q", "B0BRMVSB8R"),
    # Encased case for the "Samsung Galaxy S21 Ultra" is no case for the Galaxy S21
    ("Samsung Galaxy S21", "B09YTJJ5P2", "B08SFZ5LZW"),
    # Goodon case for the iPhone 14 Pro Max is no case for the iPhone 14
    ("IPhone 14", "B0BBH98G25", "B0BX34TZM1"),
    # Pixel 3 XL wallet case, spelled "Google Pixel 3 XL (6.3 inch)"; the Pixel 3a XL case is another phone
    ("Google Pixel 3 XL (6.3 inch)", "B089SWLV8K", "B09NZDS79T"),
])
def test_a_device_answer_set_holds_its_spellings_and_no_other_variant(full_catalog, value, member, not_member):
    rubrics = [_rubric(value)]
    fast = full_catalog.index.answer_set(rubrics)
    assert member in fast and not_member not in fast
    assert fast == full_catalog.index.answer_set_vectorised(rubrics) == _brute_force(rubrics, full_catalog)


def test_the_same_device_in_other_spellings_counts_towards_its_support(full_catalog):
    # "Samsung S23" is one product's spelling; "Samsung Galaxy S23" and "Galaxy S23 5G" pages fit the same phone
    assert full_catalog.index.support(_rubric("Samsung S23")) >= 3


def test_excluding_a_device_keeps_its_other_variants(full_catalog):
    rubrics = [_rubric("Samsung Galaxy S21", "negative_attribute")]
    fast = full_catalog.index.answer_set(rubrics)
    assert "B08SFZ5LZW" in fast and "B09YTJJ5P2" not in fast  # the S21 Ultra case avoids the S21
    assert fast == full_catalog.index.answer_set_vectorised(rubrics) == _brute_force(rubrics, full_catalog)
