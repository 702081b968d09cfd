"""The decision rule of the pipeline demonstrations (chapters 04a, 05, 05b):
a comparison is called an effect only when its per-round ratios clear a
threshold derived from the same run's A/A band (two identical runs per
round), and every reading prints that threshold.

:func:`aa_threshold` turns A/A ratios into the threshold; :func:`read`
reads an effect with :func:`lowlat.method.readings.compare` at that
threshold and appends it.  Ratios are unitless (> 1: the expected winner
won); the threshold is at least :data:`MIN_THRESHOLD`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from lowlat.method.readings import Reading, compare

MIN_THRESHOLD = 1.05  # even a silent A/A band leaves a 5% margin


def aa_threshold(a: Sequence[float], a_again: Sequence[float]) -> float:
    """The threshold an effect must clear: the widest ratio (either way)
    between two identical runs of the same round, ``a`` and ``a_again``
    (positive finite numbers, one per round), and at least
    :data:`MIN_THRESHOLD`.  With a handful of rounds the widest, not a
    quartile: few rounds say little about a quartile."""
    if len(a) != len(a_again) or not a:
        raise ValueError(f"a and a_again must be non-empty and of equal length, got {len(a)} and {len(a_again)}")
    worst = MIN_THRESHOLD
    for x, y in zip(a, a_again):
        if not (math.isfinite(x) and math.isfinite(y) and x > 0 and y > 0):
            raise ValueError(f"A/A values must be positive finite numbers, got {x!r} and {y!r}")
        worst = max(worst, x / y, y / x)
    return worst


def read(
    what: str,
    expected_better: tuple[str, Sequence[float]],
    other: tuple[str, Sequence[float]],
    threshold: float,
    *,
    unit: str = "us",
    reasons: Sequence[str] = (),
) -> Reading:
    """:func:`lowlat.method.readings.compare` (lower is better) at the A/A
    ``threshold``, its text ending with the threshold it used."""
    r = compare(what, expected_better, other, unit=unit, threshold=threshold, reasons=reasons)
    text = (
        f"{r.text}\n  (threshold {threshold:.2f}x: the widest A/A ratio of identical runs, at least {MIN_THRESHOLD}x)"
    )
    return Reading(text, r.ratio, r.low, r.high, r.shown, list(r.reasons))


def clamp_us(ns: float) -> float:
    """A latency in us, at least 0.001 (a histogram's 0 would not divide)."""
    return max(float(ns) / 1e3, 0.001)


__all__ = ["MIN_THRESHOLD", "aa_threshold", "clamp_us", "read"]
