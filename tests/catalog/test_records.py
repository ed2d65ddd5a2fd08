"""Ingestion's per-record rules on real Amazon Reviews 2023 records: prices, details, lines.

Bad input is made by damaging copies of real lines, never by inventing products.
"""

from __future__ import annotations

import json

import orjson
import pytest

from ecombench.catalog.records import RecordError, normalize_product, parse_line, parse_price
from ecombench.catalog.schema import PRODUCT_SCHEMA
from ecombench.tables.fields import load_field_table


def sample_product(sample_lines: list[bytes], parent_asin: str) -> dict:
    for n, raw in enumerate(sample_lines, 1):
        obj = orjson.loads(raw)
        if obj["parent_asin"] == parent_asin:
            return normalize_product(obj, source_file="meta.jsonl.gz", source_line=n)
    raise AssertionError(f"{parent_asin} not in the sample")


# ---------------------------------------------------------------- prices

@pytest.mark.parametrize(("value", "expected"), [
    (9.99, (9.99, "9.99")),
    (59.0, (59.0, "59.0")),
    ("9.99", (9.99, "9.99")),
    ("59.0", (59.0, "59.0")),
    ("from 4.95", (4.95, "from 4.95")),
    ("$10.99 - $24.99", (10.99, "$10.99 - $24.99")),
    ("$1,299.00", (1299.0, "$1,299.00")),
    ("None", (None, None)),
    ("—", (None, None)),
    ("", (None, None)),
    ("  ", (None, None)),
    (None, (None, None)),
    ("Currently unavailable", (None, "Currently unavailable")),
])
def test_parse_price_accepts_raw_and_hugging_face_forms(value, expected):
    assert parse_price(value) == expected


@pytest.mark.parametrize("value", [True, [9.99], {"amount": 9.99}])
def test_parse_price_rejects_other_types_as_wrong_type(value):
    with pytest.raises(RecordError) as err:
        parse_price(value)
    assert err.value.reason == "wrong_type" and "price" in err.value.message

# ---------------------------------------------------------------- details

def test_detail_keys_are_canonical_and_keep_their_raw_spelling(sample_lines):
    product = sample_product(sample_lines, "B08FYG2699")
    assert {"key": "Operating System", "raw_key": "OS", "value": "IOS"} in product["details"]
    expected = load_field_table().canonical_key("Operating System")
    assert expected == "Operating System"


def test_fused_detail_keys_are_split(sample_lines):
    # Real record: "Material Stainless Steel": "" and "": "Item Weight 0.42 Pounds".
    details = sample_product(sample_lines, "B0BXJXVZY2")["details"]
    assert {"key": "Material", "raw_key": "Material", "value": "Stainless Steel"} in details
    assert {"key": "Item Weight", "raw_key": "Item Weight", "value": "0.42 Pounds"} in details
    # Real record: "": "Shape Irregular".
    shape = sample_product(sample_lines, "B00JKFALUU")["details"]
    assert any(d["key"] == "Shape" and d["value"] == "Irregular" for d in shape)
    assert all(d["key"] or d["value"] for d in details + shape)


def test_detail_values_are_text_in_source_order(shared):
    # "Best Sellers Rank" is a dict in real records; the snapshot keeps it as compact JSON text.
    with open(shared / "meta_electronics_beauty_office.jsonl", "rb") as fh:
        for n, raw in enumerate(fh, 1):  # noqa: B007 - n is the line of the record found
            obj = orjson.loads(raw)
            if isinstance(obj["details"].get("Best Sellers Rank"), dict):
                break
    row = normalize_product(obj, source_file="x", source_line=n)
    assert [d["raw_key"] for d in row["details"]] == list(obj["details"])
    rank = next(d for d in row["details"] if d["raw_key"] == "Best Sellers Rank")
    assert json.loads(rank["value"]) == obj["details"]["Best Sellers Rank"]
    assert all(isinstance(d["value"], str) for d in row["details"])


def test_product_rows_have_exactly_the_contract_keys(sample_lines):
    row = sample_product(sample_lines, "B08FYG2699")
    assert list(row) == PRODUCT_SCHEMA.names


def test_a_count_past_a_64_bit_integer_is_dropped_and_logged_not_a_crash(sample_lines):
    # Found by the native-reader work: such a count crashed the whole ingest in pyarrow (OverflowError).
    obj = next(o for o in map(orjson.loads, sample_lines) if o["parent_asin"] == "B08FYG2699")
    dropped: list[RecordError] = []
    row = normalize_product({**obj, "rating_number": 2**63}, source_file="x", source_line=1, dropped=dropped)
    assert row["rating_number"] is None and row["title"] == obj["title"]
    assert [(e.reason, e.field) for e in dropped] == [("out_of_range", "rating_number")]


# ---------------------------------------------------------------- lines

@pytest.mark.parametrize(("raw", "reason"), [
    (b'{"parent_asin": "B0', "truncated_line"),
    (b'{"parent_asin": "B0"}}', "invalid_json"),
    (b'{"title": "caf\xe9"}', "invalid_utf8"),
    (b'["B091JDCYSS"]', "not_an_object"),
])
def test_parse_line_reason_codes(raw, reason):
    with pytest.raises(RecordError) as err:
        parse_line(raw)
    assert err.value.reason == reason
