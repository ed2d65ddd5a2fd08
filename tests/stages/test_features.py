"""Stage 2, feature extraction, on real catalog products and their real dirty values (stages/features.py).

Dirty values below are copied from meta_electronics_beauty_office.jsonl / the bundled sample; the
product they come from is named beside each one.
"""

from __future__ import annotations

import pytest

from ecombench.catalog.details import clean_value, split_options
from ecombench.catalog.product_type import entity_phrase
from ecombench.hashing import rng
from ecombench.rubrics.checkers import check
from ecombench.stages.features import extract_features, price_bound, rating_bound, rating_count_bound
from ecombench.tables.intents import load_intents


@pytest.fixture(scope="module")
def table(rich_catalog):
    return rich_catalog.table


@pytest.fixture(scope="module")
def product_search():
    return load_intents()["product_search"]


def clean(table, field, value):
    return clean_value(table.fields[field], value, table)


# ---------------------------------------------------------------- cleaning rules

@pytest.mark.parametrize(("field", "value", "reason"), [
    ("Special Feature", "9_h_surface_hardness", "code"),           # B07Z8ZXDFY
    ("Form Factor", "candy_bar", "code"),                          # B012I6UBXY
    ("Color", "Aqua_Red", "code"),                                 # B097QXZC7K
    ("Compatible Phone Models", "Unspecified", "placeholder"),     # B00UWL4AU8
    ("Brand", "Generic", "placeholder"),                           # B0BG8MLDVF
    ("Color", "Multicolor", "placeholder"),                        # B00FY3LQJC
    ("Department", "Unisex-Adults", "placeholder"),                # B0BFDS7VYS (field placeholder)
    ("Color", "Color-a212", "variant_code"),                       # B08BY8TC9S
    ("Compatible Phone Models", "iPhone XR✅", "emoji"),            # B086ZM3C4R
    ("Hard Drive", "10240", "numeric_only"),                       # B06XK2FXPT
    ("Special Feature", "免提", "empty"),                           # B08KDS44WK (no Latin letters or digits)
    ("Compatible Devices", "…  See more", "empty"),                # B075XYQPYV (tail of a truncated list)
])
def test_real_dirty_values_are_dropped_with_their_reason(table, field, value, reason):
    assert clean(table, field, value) == (None, reason)


@pytest.mark.parametrize("value", ["HHR-P107", "SM-G998"])  # B0C6NFBR25; Samsung Galaxy S21 model number
def test_upper_case_model_numbers_are_not_variant_codes(table, value):
    assert clean(table, "Compatible Phone Models", value) == (value, "")


def test_html_and_see_more_are_stripped_from_a_real_blurb_which_is_then_too_long(table):
    # B00EABJUFG, Special Feature (first 120 characters of the real value, "…  See more" ending kept).
    value = ("<B>Safety Warning</B>As this is an electrical item, the item must be stored correctly…  See more")
    assert clean(table, "Brand", value) == (None, "too_long")


def test_see_more_is_stripped_from_the_last_option(table):
    # B072JRWLFP, Occasion: "... Birthday, ThanksgivingBachelorette Party, ..., Thanksgiving  See more".
    assert clean(table, "Occasion", "Thanksgiving  See more") == ("Thanksgiving", "")


def test_a_url_is_dropped(table):
    # Real value "Suoman" (B07Z8ZXDFY, Brand) changed to a URL: no field-table value in the data holds one.
    assert clean(table, "Brand", "www.suoman.com") == (None, "url")


def test_a_placeholder_is_matched_case_insensitively(table):
    # B07FTMMWTK: "Unknown" (real value, another field); "unknown" lower-case in B07GNDP9JQ.
    assert clean(table, "Color", "UNKNOWN") == (None, "placeholder")


def test_a_field_placeholder_applies_only_to_its_field(table):
    # "Adult" (B08RP9XG6K, Target Audience) is a Department placeholder but a fine Age Range value.
    assert clean(table, "Department", "Adult") == (None, "placeholder")
    assert clean(table, "Age Range (Description)", "Adult") == ("Adult", "")


def test_a_clean_real_value_is_kept_as_is(table):
    assert clean(table, "Material", "Tempered Glass") == ("Tempered Glass", "")  # B07Z8ZXDFY


# Regression: the 'sentence' rule drops real brands with initials ('C.P. Company', B00S58MT2Q;
# 'U.S. Cellular', B0B53DQG9X)
def test_a_brand_with_initials_is_kept(table):
    assert clean(table, "Brand", "C.P. Company") == ("C.P. Company", "")


# ---------------------------------------------------------------- options

def test_a_multi_option_value_is_split_into_options(table):
    assert split_options(table.fields["Color"], "Black,Blue") == ["Black", "Blue"]  # B06XKNKPMS


def test_options_are_split_on_semicolons_and_bars(table):
    assert split_options(table.fields["Operating System"], "iOS; Android|Windows") == ["iOS", "Android", "Windows"]


@pytest.mark.parametrize("value", ["IPhone 5/5s",                              # B009A4AL2O
                                   '4" X 3-1/3"-600labels',                   # B07Q87S6TJ, Color
                                   "1/4 inch"])
def test_a_slash_between_digits_does_not_split(table, value):
    assert split_options(table.fields["Color"], value) == [value]


def test_a_single_option_field_is_never_split(table):
    assert split_options(table.fields["Mounting Type"], "Phone Mount,Foldable") == ["Phone Mount,Foldable"]


def test_a_multi_option_field_yields_one_of_its_options(rich_catalog, product_search, table):
    product = rich_catalog.product("B06XKNKPMS")  # Color "Black,Blue"
    colours = {next(f.value for f in extract_features(product, product_search, table, rng(s),
                     type_vocabulary=rich_catalog.type_vocabulary)[0]
                    if f.field == "details.Color") for s in range(20)}
    assert colours == {"Black", "Blue"}


# Regression: options are split before HTML is stripped, so '</B>' splits on '/' and prose fragments
# ('Safety Warning<', 'the item must be stored correctly') become Special Feature values of B00EABJUFG
def test_a_real_html_blurb_yields_no_special_feature(rich_catalog, product_search, table):
    product = rich_catalog.product("B00EABJUFG")
    values = [f.value for s in range(5) for f in extract_features(product, product_search, table, rng(s),
                     type_vocabulary=rich_catalog.type_vocabulary)[0]
              if f.field == "details.Special Feature"]
    assert values == []


# ---------------------------------------------------------------- numeric bounds

@pytest.mark.parametrize(("asin", "price", "cap"), [("B07L23PWNG", 20.0, 25.0), ("B0BWG28M2X", 10.0, 15.0),
                                                    ("B002E6VSDQ", 5.0, 10.0)])
def test_a_price_on_a_bucket_takes_the_next_bucket(rich_catalog, asin, price, cap):
    product = rich_catalog.product(asin)
    assert product["price"] == price
    assert price_bound(product["price"]) == {"max": cap, "max_inclusive": True}


def test_a_price_on_a_bucket_passes_its_own_price_rubric(rich_catalog):
    product = rich_catalog.product("B07L23PWNG")  # price exactly 20.0
    rubric = {"id": "r1", "type": "numeric_range", "field": "price", "expected_value": price_bound(product["price"]),
              "info_source": "query", "description": ""}
    assert check(rubric, product, rich_catalog.table).satisfied


def test_a_price_between_buckets_takes_the_next_bucket():
    assert price_bound(9.99)["max"] == 10.0  # B00EABJUFG


def test_a_price_above_the_last_bucket_rounds_up_to_fifty():
    assert price_bound(4697.0) == {"max": 4700.0, "max_inclusive": True}  # B0054IQMUA
    assert price_bound(1050.0) == {"max": 1100.0, "max_inclusive": True}


def test_rating_floor_is_rounded_down_to_a_half_star():
    assert rating_bound(4.7) == {"min": 4.5, "min_inclusive": True}


def test_rating_count_floor_is_the_largest_bucket_below():
    assert rating_count_bound(250) == {"min": 200.0, "min_inclusive": True}
    assert rating_count_bound(50) == {"min": 20.0, "min_inclusive": True}  # never the target's own count
    assert rating_count_bound(10) is None and rating_count_bound(9) is None


# ---------------------------------------------------------------- entity

@pytest.mark.parametrize(("asin", "entity"), [("B012I6UBXY", "Tablets"), ("B072BS1CGB", "AC Adapters")])
def test_entity_is_the_deepest_category_stated_in_the_title(rich_catalog, asin, entity):
    assert entity_phrase(rich_catalog.product(asin)) == entity


def test_no_entity_when_the_title_states_no_category(rich_catalog):
    # B00EABJUFG: "T-Power 12V Car cigarette plug Charger ..." under "AC Adapters".
    assert entity_phrase(rich_catalog.product("B00EABJUFG")) is None


def test_a_category_joining_two_names_offers_each(rich_catalog):
    # B00FI9KXQE "Creative Teaching Press Poster A Bad Attitude is ..." under "Posters & Prints"
    assert entity_phrase(rich_catalog.product("B00FI9KXQE")) == "Posters"


def test_a_category_naming_who_a_product_is_for_is_never_the_entity(rich_catalog, table):
    product = rich_catalog.product("B00FI9KXQE")
    product["categories"] = ["Women"]  # a real category name, put on a real product
    product["title"] = product["title"] + " for Women"
    assert entity_phrase(product, table.fields["title"].placeholders) is None


# ---------------------------------------------------------------- extract_features

def test_extract_features_is_deterministic_for_the_same_seed(rich_catalog, product_search, table):
    product = rich_catalog.product("B012I6UBXY")
    runs = [extract_features(product, product_search, table, rng(7, "candidate", "x"),
                     type_vocabulary=rich_catalog.type_vocabulary) for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]


def test_extract_features_gives_one_feature_per_field(rich_catalog, product_search, table):
    # B012I6UBXY has RAM and Screen Size under two raw keys each.
    features, _ = extract_features(rich_catalog.product("B012I6UBXY"), product_search, table, rng(0),
                     type_vocabulary=rich_catalog.type_vocabulary)
    fields = [f.field for f in features]
    assert len(fields) == len(set(fields))


def test_extract_features_reports_unusable_fields_with_their_reason(rich_catalog, product_search, table):
    # B07Z8ZXDFY's Special Feature label is a code ("9_h_surface_hardness"). Read from its raw labels (a product
    # row without facts), the field is reported with that reason.
    product = rich_catalog.product("B07Z8ZXDFY")
    raw = {k: v for k, v in product.items() if k != "facts"}
    # Its compatible device "For GoPro Hero 8" is the device its phone-model label names ("GoPro Hero 8"): a
    # shopper owns one device, so the second compatibility field is no requirement.
    _, dropped = extract_features(raw, product_search, table, rng(0), type_vocabulary=rich_catalog.type_vocabulary)
    assert dropped == {"details.Special Feature": "code", "details.Compatible Devices": "one_device"}
    # Product facts drop such a label before extraction (ecombench.catalog.facts): what is left of the field is
    # what the description alone states ("Anti-Fingerprint"), no requirement to draw, and nothing to report.
    assert [f["sources"] for f in product["facts"] if f["field"] == "Special Feature"] == [["description"]]
    features, dropped = extract_features(product, product_search, table, rng(0),
                                         type_vocabulary=rich_catalog.type_vocabulary)
    assert dropped == {"details.Compatible Devices": "one_device"}
    assert [f.value for f in features if f.field == "details.Special Feature"] == []


def test_extracted_features_are_satisfied_by_their_product(rich_catalog, product_search, table):
    from ecombench.stages.rubrics import feature_rubric
    product = rich_catalog.product("B012I6UBXY")
    features, _ = extract_features(product, product_search, table, rng(0),
                     type_vocabulary=rich_catalog.type_vocabulary)
    verdicts = {f.field: check(feature_rubric(f), product, table).status for f in features}
    assert set(verdicts.values()) == {"satisfied"}


def test_numeric_features_follow_the_intents_numeric_fields(rich_catalog, table):
    intents = load_intents()
    features, _ = extract_features(rich_catalog.product("B012I6UBXY"), intents["rating_quality"], table, rng(0),
                     type_vocabulary=rich_catalog.type_vocabulary)
    assert [f.field for f in features if f.kind == "numeric"] == ["average_rating", "rating_number", "price"]
