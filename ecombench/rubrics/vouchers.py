"""A voucher applied to a price, in integer cents: the one rule budget_match grading and budgets share.

A voucher is structured data (ecombench.schemas.models.Voucher); stage 2 sets a budget from the target's price
after its voucher (ecombench.stages.vouchers), so the target meets its budget exactly as the checker computes it.
"""

from __future__ import annotations

import math
from typing import Any


def _cents(dollars: float) -> int:
    return round(dollars * 100)


def _coupon_discount(coupon: dict[str, Any], total_cents: int) -> int:
    if coupon["discount_type"] == "fixed":
        return min(total_cents, _cents(coupon["face_value"]))
    off = total_cents * coupon["percent"] / 100
    if coupon.get("cap") is not None:
        off = min(off, _cents(coupon["cap"]))
    return min(total_cents, math.floor(off + 0.5))


def apply_voucher(voucher: dict[str, Any], price: float) -> float:
    """The total after the voucher, in dollars (exact to the cent).

    simple: the one coupon applies when the price reaches its threshold. tiered: the tier with
    the highest threshold the price reaches applies. stacked: coupons apply in order, each on
    the running total and only if that total reaches its threshold.
    """
    total = _cents(price)
    coupons = voucher["coupons"]
    if voucher["scenario"] == "tiered":
        reached = [c for c in coupons if total >= _cents(c["threshold"])]
        coupons = [max(reached, key=lambda c: c["threshold"])] if reached else []
    for coupon in coupons:
        if total >= _cents(coupon["threshold"]):
            total -= _coupon_discount(coupon, total)
    return total / 100
