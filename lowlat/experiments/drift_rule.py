"""The soak's drift rule (chapter 05b): does a per-interval series (P99 in
us, RSS in MiB...) trend over the run by more than its interval-to-interval
noise?  Chapter 04a's one rule (:mod:`lowlat.method.rule`), applied to
intervals instead of rounds:

- the **trend band**: interval ``j`` of the run's second half over interval
  ``j`` of its first half (the middle interval of an odd count left out),
  one ratio per pair: all above 1 when the series grows;
- the **noise**: a clean run's consecutive intervals, interval ``j+1`` over
  interval ``j``, read as an A/A band (identical work, measured one after
  the other); the threshold is 1 + its reach from 1 + 5% margin.  Without a
  clean run (a soak alone), the run's own consecutive intervals stand in:
  a slow drift moves each step little, so the steps are mostly noise.

Drift is called when the trend band clears the threshold (the rule's
"effect"); a series that falls is "the opposite"; otherwise no drift beyond
the threshold, or cannot decide (fewer than 6 intervals: 3 pairs and 3
steps are the least the rule reads).  Values must be positive (a P99 of 0
is passed as a small positive number by the caller).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lowlat.method.rule import EFFECT, UNDECIDED, AABand, Band, Threshold, Verdict, aa_band, decide

MIN_INTERVALS = 6  # 3 late/early pairs, and 3+ consecutive steps for the noise


def trend_band(values: Sequence[float], name: str = "values") -> Band:
    """Second half over first half, interval by interval (positive values, >= 2)."""
    xs = list(values)
    if len(xs) < 2:
        raise ValueError(f"{name} must hold at least 2 intervals for a trend, got {len(xs)}")
    h = len(xs) // 2
    late = xs[len(xs) - h :]  # an odd count leaves the middle interval out
    return Band.of([b / a for a, b in zip(xs[:h], late)], f"{name}: late/early ratios")


def interval_noise(values: Sequence[float], name: str = "values") -> AABand:
    """The A/A band of consecutive intervals (interval j+1 over j) of a run
    (positive values, >= 2 intervals)."""
    xs = list(values)
    if len(xs) < 2:
        raise ValueError(f"{name} must hold at least 2 intervals for a noise estimate, got {len(xs)}")
    return aa_band(xs[:-1], xs[1:])


def _num(x: float) -> str:
    """4 significant digits, never in e-notation (62,060 rather than 6.206e+04)."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


@dataclass(frozen=True)
class DriftReading:
    """One series read by the drift rule: ``band`` (late/early per pair),
    ``threshold`` (its factor and origin), ``verdict``; ``drift`` when the
    rule called an effect (the series grew)."""

    what: str
    unit: str
    values: tuple[float, ...]
    band: Band
    threshold: Threshold
    verdict: Verdict

    @property
    def drift(self) -> bool:
        return self.verdict.kind == EFFECT

    def text(self) -> str:
        """One line: the trend, the threshold and its origin, the verdict."""
        first, last = self.values[0], self.values[-1]
        word = {
            "effect": "DRIFT",
            "opposite": "falling (not a drift upward)",
            "none": "no drift beyond the threshold",
        }.get(self.verdict.kind, f"cannot decide ({self.verdict.why}; longer runs, more intervals would decide)")
        return (
            f"{self.what}: {_num(first)} -> {_num(last)} {self.unit} over {len(self.values)} intervals; late/early "
            f"{self.band.median:.2f}x [{self.band.low:.2f}-{self.band.high:.2f}], {self.threshold.describe()}: {word}"
        )


def read_drift(
    what: str, values: Sequence[float], *, unit: str = "", noise: AABand | None = None, origin: str = ""
) -> DriftReading:
    """Reads ``values`` (one positive number per interval, in time order)
    by the drift rule; ``noise`` the clean run's :func:`interval_noise`
    (None: the series' own consecutive intervals), ``origin`` how to name it
    in the threshold (e.g. "the clean run's interval-to-interval band")."""
    xs = tuple(float(v) for v in values)
    band = trend_band(xs, what)
    aa = noise if noise is not None else interval_noise(xs, what)
    thr = aa.threshold
    label = origin or ("its own interval-to-interval band" if noise is None else "the clean run's interval band")
    thr = Threshold(thr.factor, thr.noise, thr.margin, label, thr.rounds)
    if len(xs) < MIN_INTERVALS:
        return DriftReading(what, unit, xs, band, thr, Verdict(UNDECIDED, f"only {len(xs)} intervals"))
    return DriftReading(what, unit, xs, band, thr, decide(band, thr))


__all__ = ["MIN_INTERVALS", "DriftReading", "interval_noise", "read_drift", "trend_band"]
