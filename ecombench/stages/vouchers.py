"""Vouchers and budgets for coupon_budget tasks (paper's coupon scenarios; reference §5.2).

A voucher is structured data (ecombench.schemas.models.Voucher), applied by one function in integer
cents, so the target meets its budget exactly as the checker computes it: the budget is the
price after the voucher rounded up to a whole dollar, and a total equal to the budget passes.
Amounts are whole dollars and whole percents, as a shopper would state them.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from ecombench.rubrics.vouchers import apply_voucher
from ecombench.text import format_number

SCENARIO_WEIGHTS = {"simple": 0.5, "tiered": 0.25, "stacked": 0.25}
MIN_PRICE = 5.0


def _coupon(rng: random.Random, voucher_type: str, kind: str, price: float, threshold: float,
            fixed_share: tuple[float, float], percent: tuple[int, int], cap_share: tuple[float, float]) -> dict:
    coupon: dict[str, Any] = {"voucher_type": voucher_type, "threshold": float(max(1, math.floor(threshold))),
                              "discount_type": kind, "face_value": None, "percent": None, "cap": None}
    if kind == "fixed":
        coupon["face_value"] = float(max(1, round(price * rng.uniform(*fixed_share))))
    else:
        coupon["percent"] = float(rng.randint(*percent))
        coupon["cap"] = float(max(1, round(price * rng.uniform(*cap_share))))
    return coupon


def generate_budget(price: float, rng: random.Random) -> dict[str, Any] | None:
    """A voucher the target's price reaches and the budget it leaves, or None below MIN_PRICE.

    Returns:
        {"max_total": whole dollars, "voucher": {"scenario", "coupons": [...]}} (schemas Budget);
        the target's total after the voucher is at most max_total, by less than a dollar.
    """
    if not price or price < MIN_PRICE:
        return None
    scenario = rng.choices(list(SCENARIO_WEIGHTS), weights=list(SCENARIO_WEIGHTS.values()))[0]
    kind = rng.choice(["fixed", "percentage"])
    if scenario == "simple":
        coupons = [_coupon(rng, rng.choice(["platform", "shop", "brand"]), kind, price, price * rng.uniform(0.4, 0.8),
                           (0.05, 0.25), (5, 20), (0.1, 0.3))]
    elif scenario == "tiered":
        who = rng.choice(["platform", "shop", "brand"])
        coupons = [_coupon(rng, who, kind, price, price * rng.uniform(0.4, 0.7), (0.04, 0.10), (5, 12), (0.08, 0.18)),
                   _coupon(rng, who, kind, price, math.ceil(price * rng.uniform(1.1, 1.5)), (0.15, 0.25), (15, 25),
                           (0.25, 0.40))]
        low, high = coupons
        # Whole-dollar rounding can flatten the tiers on cheap targets; the upper tier must give more.
        if kind == "fixed":
            high["face_value"] = max(high["face_value"], low["face_value"] + 1)
        else:
            high["percent"] = max(high["percent"], low["percent"] + 5)
            high["cap"] = max(high["cap"], low["cap"] + 1)
    else:
        coupons = [_coupon(rng, rng.choice(["platform", "brand"]), "percentage", price, price * rng.uniform(0.3, 0.6),
                           (0, 0), (5, 15), (0.08, 0.20)),
                   _coupon(rng, "shop", "fixed", price, price * rng.uniform(0.2, 0.5), (0.03, 0.12), (0, 0), (0, 0))]
    voucher = {"scenario": scenario, "coupons": coupons}
    final = apply_voucher(voucher, price)
    if final <= 0 or final < price * 0.6:  # keep discounts believable (the reference capped stacks at 40%)
        return None
    return {"max_total": float(math.ceil(final)), "voucher": voucher}


# How a percentage coupon's cap and a coupon's threshold are said: one fixed wording makes five-word runs ("(at most
# $3) orders of") that recur across a split's coupon queries whenever two coupons share a cap.
CAP_WORDS = ("at most", "up to", "capped at")
ORDER_WORDS = ("orders of", "any order of", "an order of")


def _coupon_text(c: dict[str, Any], pick: Callable[[tuple[str, ...]], str]) -> str:
    if c["discount_type"] == "fixed":
        off = f"${format_number(c['face_value'])} off"
    else:
        off = f"{format_number(c['percent'])}% off"
        if c.get("cap") is not None:  # the schema allows an uncapped percentage
            off += f" ({pick(CAP_WORDS)} ${format_number(c['cap'])})"
    return f"{off} {pick(ORDER_WORDS)} ${format_number(c['threshold'])} or more"


# Wordings drawn by describe_budget; each keeps what the diligent agent reads (ecombench.sandbox.agents
# `voucher_budget`): "$N off orders of $M or more", "tiered", "what is left", "at most $N after the coupons".
HAVE = ("I have", "I've got", "I hold", "I can use", "I'm holding", "I also have", "There's", "I get")
COUPON_LINKS = ("for", "worth", "giving", "that takes")
# What a coupon is called: with the holder's words and the voucher type, a single noun would make five fixed
# words ("I have a platform coupon") that recur across a split's queries.
COUPON_NOUNS = ("coupon", "voucher", "discount code", "promo code")
STACK_TAILS = ("applied to what is left", "taken off what is left", "on what is left after that")
# How a stacked coupon follows the one before it: one fixed lead would make "or more, then a shop" recur.
STACK_LEADS = (", then", "; after that,", ", and on top of that,")
PAY_LINKS = ("and", "so", "but", "which means", "and overall")
PAY = ("I'll pay", "I'd spend", "I'll spend", "I'd pay", "I pay", "I'm spending", "I'm paying", "I spend")
PAY_TAILS = ("after the coupons", "once the coupons apply", "with the coupons")


def describe_budget(budget: dict[str, Any], rng: random.Random | None = None) -> str:
    """The voucher and budget in words.

    For example "I have a shop coupon for $5 off orders of $20 or more, and I'll pay at most $24
    after the coupons.".

    Args:
        budget: the budget rubric's value.
        rng: the verbalisation stage's generator, which draws the wording; None says the first of each.
    """
    def pick(options: tuple[str, ...]) -> str:
        return rng.choice(options) if rng is not None else options[0]

    v = budget["voucher"]
    c = v["coupons"]
    # Every coupon is stated (the schema allows one to three), in the order apply_voucher uses them.
    if v["scenario"] == "tiered":
        have = (f"a tiered {c[0]['voucher_type']} {pick(COUPON_NOUNS)}: "
                + ", or ".join(_coupon_text(x, pick) for x in c))
    else:
        first = f"a {c[0]['voucher_type']} {pick(COUPON_NOUNS)} {pick(COUPON_LINKS)} {_coupon_text(c[0], pick)}"
        have = first + "".join(
            f"{pick(STACK_LEADS)} a {x['voucher_type']} {pick(COUPON_NOUNS)} {pick(COUPON_LINKS)} "
            f"{_coupon_text(x, pick)} {pick(STACK_TAILS)}" for x in c[1:])
    total = f"${format_number(budget['max_total'])}"
    return f"{pick(HAVE)} {have}, {pick(PAY_LINKS)} {pick(PAY)} at most {total} {pick(PAY_TAILS)}."


def budget_numbers(budget: dict[str, Any]) -> list[str]:
    """Every amount the budget's text states, with its unit ("$24", "8%"), for leakage and completeness checks."""
    out = [f"${format_number(budget['max_total'])}"]
    for c in budget["voucher"]["coupons"]:
        out += [f"${format_number(c[k])}" for k in ("threshold", "face_value", "cap") if c.get(k) is not None]
        if c.get("percent") is not None:
            out.append(f"{format_number(c['percent'])}%")
    return out
