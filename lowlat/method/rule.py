"""The one decision rule (chapter 04a's), applied by every reading
(:mod:`lowlat.method.readings`) and every gate (:mod:`lowlat.method.gate`).

A comparison gives one ratio per interleaved round (how many times better,
or slower, one contender was than the other).  Its **band** is the middle
half of those ratios (lower to upper quartile).  Its **threshold** comes
from noise measured in the same run, never from a constant:

- with an A/A measurement (the baseline run twice in every round, A and
  A'): the noise is how far the A'/A band reaches from 1, as a factor
  either way (``max(high, 1 / low) - 1``); the threshold is
  ``1 + noise + margin`` (margin 5%, as chapter 04a teaches);
- without one (the fallback): the comparison's own rounds stand in for the
  A/A pair, the noise being how far its band reaches from its own median
  (``max(high / median, median / low) - 1``); the threshold is again
  ``1 + noise + margin``.  Reading the ratios the other way round (B/A for
  A/B) gives the same threshold and the mirrored verdict.

The comparison is **an effect** when the whole band clears the threshold
(its lower quartile above it), **the opposite effect** when the whole band
lies below ``1 / threshold``, **no effect beyond the threshold** when the
band lies within ``[1 / threshold, threshold]``, holds 1, and its median is
within the margin of 1; otherwise it **cannot decide**: the band straddles
the threshold, or the rounds agree on a direction by less than the
threshold (an effect smaller than the noise: an A/A band wider than the
effect), or they disagree (the band holds 1, the median is away from it),
or there are fewer than three rounds (of the comparison or of the A/A).
The same ratios and the same noise give the same verdict everywhere.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lowlat.core.argcheck import real_arg

MARGIN = 0.05  # added to the measured noise (chapter 04a): keeps false alarms about identical code rare
MIN_ROUNDS = 3  # below this a middle half is not a spread

EFFECT = "effect"
OPPOSITE = "opposite"
NONE = "none"
UNDECIDED = "undecided"


def _values(xs: Any, name: str) -> list[float]:
    """Positive finite real numbers, one per round."""
    if isinstance(xs, (str, bytes, dict)) or not hasattr(xs, "__iter__") or not hasattr(xs, "__len__"):
        raise TypeError(f"{name} must be a sequence of numbers (one per round), got {type(xs).__name__}")
    out = []
    for i, x in enumerate(xs):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
            raise TypeError(f"{name}: value {i} must be a number, got {type(x).__name__} {x!r}")
        v = float(x)
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name}: value {i} must be a positive finite number, got {x!r}")
        out.append(v)
    if not out:
        raise ValueError(f"{name} must hold at least one round, got none")
    return out


@dataclass(frozen=True)
class Band:
    """The per-round ratios of a comparison (dimensionless, > 0) and their
    middle half: ``low``/``high`` the quartiles, ``median`` the median."""

    ratios: tuple[float, ...]

    @classmethod
    def of(cls, ratios: Sequence[float] | np.ndarray, name: str = "ratios") -> Band:
        """A band of positive finite ratios (one per round)."""
        return cls(tuple(_values(ratios, name)))

    @property
    def rounds(self) -> int:
        return len(self.ratios)

    @property
    def median(self) -> float:
        return float(np.median(self.ratios))

    @property
    def low(self) -> float:
        return float(np.percentile(self.ratios, 25))

    @property
    def high(self) -> float:
        return float(np.percentile(self.ratios, 75))

    def inverted(self) -> Band:
        """The same rounds read the other way round (B/A instead of A/B)."""
        return Band(tuple(1 / r for r in self.ratios))


@dataclass(frozen=True)
class Threshold:
    """What a band must clear: ``factor`` (e.g. 1.12, dimensionless),
    ``noise`` and ``margin`` (fractions: 0.07 is 7%), ``origin`` (where
    the noise came from), ``rounds`` (how many rounds measured it)."""

    factor: float
    noise: float
    margin: float
    origin: str
    rounds: int

    def describe(self) -> str:
        """E.g. ``threshold 1.12x from the A/A band ±7% + 5% margin``, or
        ``threshold 1.08x from its rounds' spread ±3% + 5% margin`` (the
        fallback without an A/A run); a reach below 1% has one decimal (``±0.3%``)."""
        if math.isnan(self.noise):
            return f"threshold {self.factor:.2f}x, {self.origin}"
        noise, margin = _percent(self.noise), _percent(self.margin)
        return f"threshold {self.factor:.2f}x from {self.origin} ±{noise} + {margin} margin"


def _percent(x: float) -> str:
    """``7%``, or one decimal below 1% (``0.3%``), so a small reach never reads ``0%``."""
    return f"{x:.1%}" if 0 < abs(x) < 0.0095 else f"{x:.0%}"


def _margin(margin: Any) -> float:
    return real_arg(margin, "margin", minimum=0.0, maximum=1.0)


def _threshold(noise: float, margin: float, origin: str, rounds: int) -> Threshold:
    factor = 1 + noise + margin
    if not math.isfinite(factor):  # a band of ratios near 1e308 reaches "infinitely" far
        raise ValueError(f"{origin}: the rounds spread too far to set a threshold (noise {noise:g})")
    return Threshold(factor, noise, margin, origin, rounds)


@dataclass(frozen=True)
class AABand:
    """Identical code against itself in the same run (A'/A per round): this
    run's noise.  ``threshold`` is 1 + how far the band reaches from 1 +
    ``margin``."""

    band: Band
    margin: float = MARGIN

    @property
    def noise(self) -> float:
        """How far the A'/A middle half reaches from 1, as a factor either
        way (0.08: 8%; a low quartile of 0.94 reaches 1/0.94 = 1.064, 6%)."""
        return max(self.band.high, 1 / self.band.low, 1.0) - 1

    @property
    def threshold(self) -> Threshold:
        return _threshold(self.noise, self.margin, "the A/A band", self.band.rounds)


def aa_band(a: Sequence[float], a_prime: Sequence[float], *, margin: float = MARGIN) -> AABand:
    """The A/A band of two series of the same code measured in the same
    interleaved rounds (positive costs or rates, equal lengths)."""
    xs = _values(a, "aa: the first A series")
    ys = _values(a_prime, "aa: the second A series")
    if len(xs) != len(ys):
        raise ValueError(f"aa: the two A series must have one value per round each, got {len(xs)} and {len(ys)}")
    ratios = [y / x for x, y in zip(xs, ys)]
    return AABand(Band.of(ratios, "aa: A'/A ratios"), _margin(margin))


def own_threshold(band: Band, *, margin: float = MARGIN) -> Threshold:
    """The fallback without an A/A run: the band's own reach from its median
    stands in for the A/A noise."""
    m = band.median
    noise = max(band.high / m, m / band.low) - 1  # a factor either way: B/A and A/B give the same
    return _threshold(noise, _margin(margin), "its rounds' spread", band.rounds)


def fixed_threshold(factor: float) -> Threshold:
    """A threshold given as a number (the old call forms): printed as such."""
    factor = real_arg(factor, "threshold", minimum=1.0, maximum=1e6)
    return Threshold(factor, math.nan, 0.0, "fixed by the caller (no A/A band)", 0)


@dataclass(frozen=True)
class Verdict:
    """The rule's answer: ``kind`` is one of ``effect``, ``opposite``,
    ``none``, ``undecided``; ``why`` says why it is undecided (empty
    otherwise)."""

    kind: str
    why: str = ""

    @property
    def decided(self) -> bool:
        return self.kind != UNDECIDED


def decide(band: Band, threshold: Threshold, *, medians_agree: bool | None = None) -> Verdict:
    """Applies the rule to ``band`` (ratios > 1: the expected direction).
    ``medians_agree``: whether the two series' own medians point the same
    way as the band's median (None: not known); when they do not, a few
    rounds in another regime decided one of them and the rule cannot decide."""
    if not isinstance(band, Band) or not isinstance(threshold, Threshold):
        raise TypeError("decide needs a Band and a Threshold (lowlat.method.rule)")
    if band.rounds < MIN_ROUNDS:
        return Verdict(UNDECIDED, f"only {band.rounds} round{'s' if band.rounds != 1 else ''}")
    if 0 < threshold.rounds < MIN_ROUNDS:
        return Verdict(UNDECIDED, f"a noise estimate from only {threshold.rounds} rounds")
    t = threshold.factor
    lo, hi = band.low, band.high
    if lo > t or hi < 1 / t:
        if medians_agree is False:
            return Verdict(UNDECIDED, "the medians disagree")
        return Verdict(EFFECT if lo > t else OPPOSITE)
    if lo >= 1 / t and hi <= t:
        if lo <= 1 <= hi and 1 / (1 + MARGIN) <= band.median <= 1 + MARGIN:
            return Verdict(NONE)
        if lo <= 1 <= hi:
            return Verdict(UNDECIDED, "rounds disagree")
        return Verdict(UNDECIDED, "below the threshold")
    return Verdict(UNDECIDED, "rounds straddle the threshold")


__all__ = [
    "EFFECT",
    "MARGIN",
    "MIN_ROUNDS",
    "NONE",
    "OPPOSITE",
    "UNDECIDED",
    "AABand",
    "Band",
    "Threshold",
    "Verdict",
    "aa_band",
    "decide",
    "fixed_threshold",
    "own_threshold",
]
