"""Vouchers and budgets (stages/vouchers.py) on real prices from the shared catalog."""

from __future__ import annotations

import random

import pytest

from ecombench.rubrics.checkers import check
from ecombench.rubrics.vouchers import apply_voucher
from ecombench.schemas.models import Budget
from ecombench.stages.vouchers import MIN_PRICE, budget_numbers, describe_budget, generate_budget
from ecombench.text import contains_phrase

# Real products and their catalog prices (full_catalog), asserted in `price_of`.
CLOCK = "B002HXPY4K"      # Rooster wall clock, $19.99
PEN = "B0B8XSN8B8"        # Zebra Sharbo X multi-functional pen, $25.00
SERUM = "B00116W1NG"      # Avon Anew spider vein therapy, $49.99
BAR_CART = "B07BWB686P"   # Christopher Knight Home bar cart, $100.00
STICKERS = "B00D5T6I7M"   # Carson Dellosa snowmen stickers, $4.99 (below MIN_PRICE)


def price_of(catalog, asin: str, expected: float) -> float:
    price = catalog.product(asin)["price"]
    assert price == expected, f"{asin} costs {price} in the snapshot, the test expects {expected}"
    return price


def fixed(off: float, threshold: float, who: str = "shop") -> dict:
    return {"voucher_type": who, "threshold": threshold, "discount_type": "fixed", "face_value": off,
            "percent": None, "cap": None}


def percent(pct: float, threshold: float, cap: float | None = None, who: str = "platform") -> dict:
    return {"voucher_type": who, "threshold": threshold, "discount_type": "percentage", "face_value": None,
            "percent": pct, "cap": cap}


def voucher(scenario: str, *coupons: dict) -> dict:
    return {"scenario": scenario, "coupons": list(coupons)}


def budget_rubric(budget: dict) -> dict:
    return {"id": "r1", "type": "budget_match", "field": "budget", "expected_value": budget, "info_source": "query",
            "description": ""}


# ---------------------------------------------------------------- apply_voucher

def test_a_fixed_coupon_takes_its_face_value_off_exactly_to_the_cent(full_catalog):
    price = price_of(full_catalog, CLOCK, 19.99)
    # 19.99 - 5 in floats is 14.989999999999998; the voucher works in cents.
    assert apply_voucher(voucher("simple", fixed(5, 15)), price) == 14.99


def test_a_percentage_rounds_half_cents_to_the_nearest_cent(full_catalog):
    price = price_of(full_catalog, CLOCK, 19.99)
    # 15% of 1999 cents is 299.85 cents -> 300 cents off.
    assert apply_voucher(voucher("simple", percent(15, 10, cap=10)), price) == 16.99


def test_a_percentage_is_limited_by_its_cap(full_catalog):
    price = price_of(full_catalog, SERUM, 49.99)
    # 20% would be $10.00 off; the cap allows $8.
    assert apply_voucher(voucher("simple", percent(20, 10, cap=8)), price) == 41.99


def test_a_percentage_below_its_cap_takes_the_full_percentage(full_catalog):
    price = price_of(full_catalog, SERUM, 49.99)
    assert apply_voucher(voucher("simple", percent(10, 10, cap=8)), price) == 44.99


def test_a_threshold_reached_exactly_applies_the_coupon(full_catalog):
    price = price_of(full_catalog, PEN, 25.0)
    assert apply_voucher(voucher("simple", fixed(5, 25)), price) == 20.0


def test_a_price_one_cent_below_the_threshold_gets_no_discount(full_catalog):
    price = price_of(full_catalog, CLOCK, 19.99)
    assert apply_voucher(voucher("simple", fixed(5, 20)), price) == 19.99


def test_a_fixed_coupon_larger_than_the_price_brings_it_to_zero_not_below(full_catalog):
    price = price_of(full_catalog, CLOCK, 19.99)
    assert apply_voucher(voucher("simple", fixed(30, 10)), price) == 0.0


def test_tiered_applies_only_the_lower_tier_when_the_upper_is_not_reached(full_catalog):
    price = price_of(full_catalog, SERUM, 49.99)
    assert apply_voucher(voucher("tiered", fixed(3, 20), fixed(10, 50)), price) == 46.99


def test_tiered_applies_only_the_highest_tier_reached_not_both(full_catalog):
    price = price_of(full_catalog, BAR_CART, 100.0)
    assert apply_voucher(voucher("tiered", fixed(3, 20), fixed(10, 50)), price) == 90.0


def test_tiered_picks_the_highest_threshold_whatever_the_listing_order(full_catalog):
    price = price_of(full_catalog, BAR_CART, 100.0)
    assert apply_voucher(voucher("tiered", fixed(10, 50), fixed(3, 20)), price) == 90.0


def test_stacked_checks_each_threshold_against_the_running_total(full_catalog):
    price = price_of(full_catalog, PEN, 25.0)
    # 10% first: 25.00 -> 22.50, which no longer reaches the $25 threshold of the $5 coupon.
    assert apply_voucher(voucher("stacked", percent(10, 20, cap=10), fixed(5, 25)), price) == 22.5


def test_stacked_applies_coupons_in_their_listed_order(full_catalog):
    price = price_of(full_catalog, PEN, 25.0)
    # $5 first: 25.00 -> 20.00, which still reaches $20, so 10% of 20.00 comes off.
    assert apply_voucher(voucher("stacked", fixed(5, 25), percent(10, 20, cap=10)), price) == 18.0


# ---------------------------------------------------------------- generate_budget

@pytest.fixture(scope="module")
def real_prices(full_catalog) -> list[float]:
    """Every distinct catalog price at or above MIN_PRICE."""
    prices = sorted({p for p in full_catalog.products.get_column("price").drop_nulls().to_list() if p >= MIN_PRICE})
    assert len(prices) > 1000
    return prices


@pytest.fixture(scope="module")
def generated(real_prices) -> list[tuple[float, dict]]:
    """(price, budget) for every real price and three seeds each."""
    return [(price, generate_budget(price, random.Random(f"{price}:{seed}"))) for price in real_prices
            for seed in range(3)]


def test_every_real_price_at_or_above_min_price_gets_a_budget(generated):
    assert [price for price, budget in generated if budget is None] == []


def test_the_targets_total_after_the_voucher_is_within_a_dollar_under_the_budget(generated):
    bad = []
    for price, budget in generated:
        total = apply_voucher(budget["voucher"], price)
        if not (total <= budget["max_total"] < total + 1):
            bad.append((price, total, budget["max_total"]))
    assert bad == []


def test_the_budget_is_whole_dollars(generated):
    assert [b["max_total"] for _, b in generated if b["max_total"] != int(b["max_total"])] == []


def test_the_generated_voucher_lowers_the_targets_price(generated):
    # The target reaches the voucher: otherwise the budget would just be the price.
    assert [(p, b) for p, b in generated if apply_voucher(b["voucher"], p) >= p] == []


def test_generated_budgets_match_the_budget_schema(generated):
    for _, budget in generated[::50]:
        Budget.model_validate(budget)


def test_all_three_scenarios_are_generated(generated):
    assert {b["voucher"]["scenario"] for _, b in generated} == {"simple", "tiered", "stacked"}


def test_the_target_passes_its_generated_budget_rubric(full_catalog):
    product = full_catalog.product(SERUM)
    for seed in range(20):
        budget = generate_budget(product["price"], random.Random(seed))
        assert check(budget_rubric(budget), product, full_catalog.table).satisfied, budget


def test_the_same_seed_gives_the_same_budget(full_catalog):
    price = price_of(full_catalog, SERUM, 49.99)
    assert generate_budget(price, random.Random(7)) == generate_budget(price, random.Random(7))


def test_a_price_below_min_price_gets_no_budget(full_catalog):
    price = price_of(full_catalog, STICKERS, 4.99)
    assert [generate_budget(price, random.Random(seed)) for seed in range(20)] == [None] * 20


# ---------------------------------------------------------------- budget boundary (checker)

def test_a_budget_exactly_equal_to_the_total_passes(full_catalog):
    product = full_catalog.product(PEN)  # $25.00, $5 off -> exactly $20.00
    budget = {"max_total": 20.0, "voucher": voucher("simple", fixed(5, 25))}
    assert check(budget_rubric(budget), product, full_catalog.table).satisfied


def test_a_budget_one_cent_under_the_total_fails(full_catalog):
    product = full_catalog.product(PEN)
    budget = {"max_total": 19.99, "voucher": voucher("simple", fixed(5, 25))}
    assert check(budget_rubric(budget), product, full_catalog.table).status == "not_satisfied"


# ---------------------------------------------------------------- describe_budget

def _unstated(budget: dict) -> list[str]:
    text = describe_budget(budget)
    return [n for n in budget_numbers(budget) if not contains_phrase(text, n)]


def test_describe_budget_states_every_number_of_generated_budgets(generated):
    assert [(b, _unstated(b)) for _, b in generated if _unstated(b)] == []


def test_describe_budget_states_an_uncapped_percentage(full_catalog):
    # Regression: the schema allows a percentage without a cap; describing it raised TypeError.
    budget = {"max_total": 45.0, "voucher": voucher("simple", percent(10, 20))}
    Budget.model_validate(budget)
    assert _unstated(budget) == []
    assert "at most $None" not in describe_budget(budget)


def test_describe_budget_states_every_coupon_of_a_three_coupon_stack():
    # Regression: the schema allows three coupons; the third one was silently left out.
    budget = {"max_total": 12.0,
              "voucher": voucher("stacked", percent(10, 20, cap=3), fixed(2, 15), fixed(1, 11, "brand"))}
    Budget.model_validate(budget)
    assert _unstated(budget) == []


def test_describe_budget_names_both_tiers_of_a_tiered_voucher():
    budget = {"max_total": 47.0, "voucher": voucher("tiered", fixed(3, 20), fixed(10, 50))}
    text = describe_budget(budget)
    assert "tiered" in text and "$3 off orders of $20 or more" in text and "$10 off orders of $50 or more" in text


def test_the_upper_tier_takes_more_off_than_the_lower_tier_at_its_threshold(generated):
    degenerate = []
    for price, budget in generated:
        if budget["voucher"]["scenario"] != "tiered":
            continue
        lower, upper = budget["voucher"]["coupons"]
        at = upper["threshold"]
        off = {name: at - apply_voucher(voucher("simple", c), at) for name, c in (("lower", lower), ("upper", upper))}
        if off["upper"] <= off["lower"]:
            degenerate.append((price, lower, upper))
    assert degenerate == []
