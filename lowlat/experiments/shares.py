"""Shares of a total, rounded for print so that they add up to the total
as printed (chapter 01's budget report: whose allotment an overrun ate)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def rounded_shares(ate: Sequence[tuple[str, float]], total_us: float) -> list[tuple[str, float]]:
    """An overrun's shares rounded to 0.1 us so that they add up to the
    overrun as shown (``total_us`` rounded to 0.1): each share rounded down,
    the tenths left over given to the largest remainders."""
    if not ate:
        return []
    exact = [us * 10 for _, us in ate]
    tenths = [math.floor(x) for x in exact]
    left = max(0, round(total_us * 10) - sum(tenths))
    for i in sorted(range(len(exact)), key=lambda i: tenths[i] - exact[i])[:left]:
        tenths[i] += 1
    return [(who, t / 10) for (who, _), t in zip(ate, tenths)]
