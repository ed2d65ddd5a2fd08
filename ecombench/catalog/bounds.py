"""Bounds of shares estimated from a sample of products."""

from __future__ import annotations

import polars as pl


def wilson_bound(share: pl.Expr, n: pl.Expr, z: float, *, upper: bool) -> pl.Expr:
    """The Wilson score bound of a share estimated from `n` products, `z` standard errors above or below it.

    (share + z^2/2n +- z * sqrt(share (1 - share) / n + z^2/4n^2)) / (1 + z^2/n); z = 0 gives the share itself.
    Wilson, "Probable inference, the law of succession, and statistical inference", JASA 22 (1927).
    """
    z2n = z * z / n
    centre = (share + z2n / 2) / (1 + z2n)
    half = z * (share * (1 - share) / n + z2n / (4 * n)).sqrt() / (1 + z2n)
    return centre + half if upper else centre - half
