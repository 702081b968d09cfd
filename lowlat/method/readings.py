"""Readings: the sentence a learner reads after an experiment, computed from
that run's numbers, never written in advance.

A chapter's prose explains the mechanism and *predicts*; the outcome is
printed by :func:`compare` (two contenders measured interleaved, their
per-round ratio and its band, the threshold the band had to clear and where
that threshold came from, and the verdict of chapter 04a's rule,
:mod:`lowlat.method.rule`: an effect, the opposite, none beyond the
threshold, or "cannot decide" with what would decide it) or by
:func:`check_guess` (the learner's own prediction against the result).
:func:`conditions` names what on this machine, during this run, can hide
or inflate an effect: one usable CPU, a CPU quota, SMT siblings, other
load, a hypervisor's steal, a core-to-core regime change.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowlat.core.argcheck import bool_arg, real_arg, str_arg
from lowlat.machine import Machine, machine
from lowlat.machine.topology import Load
from lowlat.method.interleave import median, ratios
from lowlat.method.rule import (
    EFFECT,
    MARGIN,
    NONE,
    OPPOSITE,
    UNDECIDED,
    AABand,
    Band,
    Threshold,
    aa_band,
    decide,
    fixed_threshold,
    own_threshold,
)

ONE_CPU = "only one usable CPU"  # how conditions() begins that sentence; a reading then names two CPUs


def _fmt(x: float, unit: str) -> str:
    if math.isnan(x):
        return "n/a"
    if abs(x) >= 1e15 or (0 < abs(x) < 1e-6):  # beyond what digits can say readably
        return f"{x:.3g} {unit}".rstrip()
    if (unit in ("ns", "us", "ms") and abs(x) >= 10) or abs(x) >= 100:
        return f"{x:,.0f} {unit}".rstrip()
    return f"{x:.3g} {unit}".rstrip()


def _n(r: float) -> str:
    """A ratio without its x: two decimals, or three significant digits."""
    return f"{r:,.2f}" if r < 1e6 else f"{r:.3g}"


def _x(r: float) -> str:
    """A ratio: two decimals, thousands separated (2,503.75x); beyond a
    million times, three significant digits (1.2e+09x)."""
    return f"{r:,.2f}x" if r < 1e6 else f"{r:.3g}x"


TIME_UNITS = ("ns", "us", "ms", "s")


def _word(unit: str, lower_is_better: bool) -> str:
    """How the winner reads: "faster" for a time (ns, ns/op) or a rate
    (M records/s), "better" for a bare ratio, else "lower"/"higher" (a count:
    ticks, MiB), the direction that won."""
    if unit in ("", "x"):
        return "better"
    if unit.split("/")[0] in TIME_UNITS or unit.endswith("/s"):
        return "faster"
    return "lower" if lower_is_better else "higher"


def _series(value: Any, name: str, what: str) -> tuple[str, list[float]]:
    """A contender: a (name, values) pair, the values positive finite real numbers."""
    if not (isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], str)):
        raise TypeError(
            f"{what}: {name} must be a (name, values) pair such as ('spin', [812.0, 790.5]), got {type(value).__name__} "
            f"{value!r:.80}"
        )
    label, xs = value
    if isinstance(xs, (str, bytes, Mapping)) or not hasattr(xs, "__len__") or not hasattr(xs, "__iter__"):
        raise TypeError(
            f"{what}: {name}: the values of {label!r} must be a sequence of numbers, got {type(xs).__name__}"
        )
    out = []
    for i, x in enumerate(xs):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
            raise TypeError(f"{what}: {name}: value {i} of {label!r} must be a number, got {type(x).__name__} {x!r}")
        if not (math.isfinite(float(x)) and float(x) > 0):
            raise ValueError(f"{what}: {name}: value {i} of {label!r} must be a positive finite number, got {x!r}")
        out.append(float(x))
    return label, out


def conditions(
    m: Machine | None = None,
    *,
    before: Load | None = None,
    after: Load | None = None,
    c2c_ns: Sequence[float] = (),
    two_threads: bool = True,
) -> list[str]:
    """What about this machine and this run can hide or distort a
    two-thread or timing effect; empty when nothing is known to."""
    if m is not None and not isinstance(m, Machine):
        raise TypeError(f"m must be a Machine (lowlat.machine.machine()) or None, got {type(m).__name__}")
    for name, load in (("before", before), ("after", after)):
        if load is not None and not isinstance(load, Load):
            raise TypeError(
                f"{name} must be a Load (lowlat.machine.topology.load()) or None, got {type(load).__name__}"
            )
    if isinstance(c2c_ns, (str, bytes)) or not hasattr(c2c_ns, "__iter__"):
        raise TypeError(f"c2c_ns must be a sequence of core-to-core latencies (ns), got {type(c2c_ns).__name__}")
    c2c_ns = list(c2c_ns)
    for x in c2c_ns:
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
            raise TypeError(f"c2c_ns must hold numbers of ns, got {type(x).__name__} {x!r}")
    two_threads = bool_arg(two_threads, "two_threads")
    m = m or machine()
    out = []
    if two_threads and m.usable_cpus < 2:
        out.append(f"{ONE_CPU}: both threads took turns on it")
    if two_threads and math.isfinite(m.quota_cpus) and m.quota_cpus < 2:
        out.append(f"a CPU quota of {m.quota_cpus:g} CPU throttled the threads")
    for when, load in (("before", before), ("during", after)):
        if load is not None and load.busy(m.usable_cpus):
            out.append(f"other work was running {when} the run ({load.describe()})")
    good = [c for c in c2c_ns if math.isfinite(c) and c > 0]
    if len(good) >= 2 and max(good) > 3 * min(good):
        out.append(
            f"the core-to-core latency changed regime during the run ({min(good):.0f}-{max(good):.0f} ns): "
            "the host moved the vCPUs"
        )
    return out  # a VM alone is no reason: its pauses land in maxima, which medians ignore


@dataclass(frozen=True)
class Reading:
    """What a comparison showed: ``ratio`` is how many times better
    ``expected_better`` was (median of per-round ratios; < 1: worse),
    ``low``/``high`` the middle half of the rounds, ``shown`` whether the
    rule called the predicted effect, ``threshold`` the factor the band had
    to clear and ``origin`` where it came from, ``verdict`` the rule's
    kind (``effect``, ``opposite``, ``none``, ``undecided``)."""

    text: str
    ratio: float
    low: float
    high: float
    shown: bool
    reasons: list[str] = field(default_factory=list)
    threshold: float = math.nan
    origin: str = ""
    verdict: str = ""

    @property
    def decided(self) -> bool:
        return self.verdict != UNDECIDED

    def __str__(self) -> str:
        return self.text


def _aa(aa: Any, margin: float) -> AABand:
    if isinstance(aa, AABand):
        return aa
    if isinstance(aa, (tuple, list)) and len(aa) == 2:
        return aa_band(aa[0], aa[1], margin=margin)
    raise TypeError(
        f"aa must be an A/A band (lowlat.method.interleave.interleave_aa) or a pair (A rounds, A' rounds), "
        f"got {type(aa).__name__} {aa!r:.60}"
    )


# Noise at which more rounds cannot help: the A/A band reaching 2x from 1 is a property of the machine and
# the metric (a P99 a preemption can double), which more rounds measure better but do not narrow.
HOPELESS_NOISE = 1.0


def _decider(n: int, reasons: Sequence[str], thr: Threshold, why: str, band: Band, margin: float) -> str:
    """What would decide an undecided comparison, as the end of a sentence."""
    if any(r.startswith(ONE_CPU) for r in reasons):
        return "two usable CPUs would decide."
    # Every round on one side of 1, all within the margin: no threshold (never under 1 + margin) is
    # cleared by a difference this small, and a band that holds no 1 is not "none" either.
    inside = 1 / (1 + margin) < band.low <= band.high < 1 + margin
    if why == "below the threshold" and inside and not band.low <= 1 <= band.high:
        return (
            f"a steady difference inside the rule's {margin:.0%} margin: no number of rounds makes it an effect, "
            "it is too small for this rule to count."
        )
    if thr.noise >= HOPELESS_NOISE and not why.startswith(("only", "a noise estimate")):
        return (
            f"at this noise (±{thr.noise:.0%}) this machine cannot decide it: more rounds measure the noise, "
            "they do not narrow it."
        )
    return f"{max(2 * n, 9)}+ or longer rounds would decide."


def compare(
    what: str,
    expected_better: tuple[str, Sequence[float]],
    other: tuple[str, Sequence[float]],
    *,
    unit: str = "ns",
    lower_is_better: bool = True,
    aa: AABand | tuple[Sequence[float], Sequence[float]] | None = None,
    margin: float = MARGIN,
    threshold: float | None = None,
    reasons: Sequence[str] = (),
    expect_effect: bool = True,
) -> Reading:
    """Reads two interleaved series (one value per round, same rounds) by
    chapter 04a's rule (:mod:`lowlat.method.rule`): ``expected_better`` is
    the contender the chapter predicts to win.  The predicted effect is
    shown when the middle half of the per-round ratios clears the
    threshold and the two series' medians point the same way.

    The threshold comes from ``aa``, this run's A/A band (an
    :class:`~lowlat.method.rule.AABand` from
    :func:`lowlat.method.interleave.interleave_aa`, or the pair
    ``(A rounds, A' rounds)``): 1 + its reach from 1 + ``margin``.  Without
    ``aa``, from the comparison's own rounds (their reach from their median,
    + ``margin``).  ``threshold`` (a number >= 1) is the old form: kept for
    the chapters that still pass one, printed as fixed by the caller.  The
    reading always prints its threshold and origin; when it cannot decide
    it says what would.  ``reasons``: this run's conditions
    (:func:`conditions`), named when the effect did not show.
    ``expect_effect=False``: the chapter predicts no effect beyond the
    threshold; then that verdict is the one shown "as predicted"."""
    str_arg(what, "what")
    name_a, a = _series(expected_better, "expected_better", what)
    name_b, b = _series(other, "other", what)
    str_arg(unit, "unit")
    lower_is_better = bool_arg(lower_is_better, "lower_is_better")
    expect_effect = bool_arg(expect_effect, "expect_effect")
    margin = real_arg(margin, "margin", minimum=0.0, maximum=1.0)
    if threshold is not None and aa is not None:
        raise ValueError(f"{what}: give aa (the A/A band) or threshold, not both: the A/A band sets the threshold")
    if (
        isinstance(reasons, (str, bytes))
        or not hasattr(reasons, "__iter__")
        or not all(isinstance(r, str) for r in reasons)
    ):
        raise TypeError(f"reasons must be a list of sentences (strings), got {reasons!r:.80}")
    reasons = list(reasons)
    if len(a) != len(b) or not a:
        raise ValueError(
            f"{what}: expected_better and other must be non-empty series of equal length, got {len(a)} and {len(b)}"
        )
    # how many times better the predicted winner was, round by round
    per_round = ratios(b, a) if lower_is_better else ratios(a, b)
    if not all(math.isfinite(r) and r > 0 for r in per_round):
        raise ValueError(
            f"{what}: a round's ratio of the two series overflows (values {min(a + b):g} to {max(a + b):g}): "
            "give them in a unit that keeps them within a factor of 1e300"
        )
    band = Band.of(per_round)
    if aa is not None:
        thr = _aa(aa, margin).threshold
    elif threshold is not None:
        thr = fixed_threshold(threshold)
    else:
        thr = own_threshold(band, margin=margin)
    med_a, med_b = median(a), median(b)
    # The medians of the two series must point the same way as the per-round
    # ratios: when they do not, a few rounds in another regime decided one of them.
    a_won = med_a < med_b if lower_is_better else med_a > med_b
    b_won = med_b < med_a if lower_is_better else med_b > med_a
    agree = a_won if band.median > 1 else (b_won if band.median < 1 else None)
    v = decide(band, thr, medians_agree=agree)
    word = _word(unit, lower_is_better)
    measured = f"{what}: {name_a} {_fmt(med_a, unit)}, {name_b} {_fmt(med_b, unit)} (medians, {len(a)} rounds)"
    lead, shown_band = (name_a, band) if band.median >= 1 else (name_b, band.inverted())
    # the lead is chosen by the median per-round ratio; where the two medians point the other way, say so
    a_lost = med_a > med_b if lower_is_better else med_a < med_b
    b_lost = med_b > med_a if lower_is_better else med_b < med_a
    other_way = a_lost if band.median > 1 else (b_lost if band.median < 1 else False)
    how = " (median per-round ratio; the medians disagree)" if other_way else ""
    seen = f"{lead} {_x(shown_band.median)} {word}{how} [{_n(shown_band.low)}-{_n(shown_band.high)}], {thr.describe()}"
    words = (
        {EFFECT: "an effect, as predicted.", NONE: "no effect beyond it, not as predicted."}
        if expect_effect
        else {EFFECT: "an effect, where none was predicted.", NONE: "no effect beyond it, as predicted."}
    )
    verdict = {**words, OPPOSITE: "an effect, against the prediction."}.get(
        v.kind
    ) or f"cannot decide ({v.why}); {_decider(len(a), reasons, thr, v.why, band, margin)}"
    shown = v.kind == (EFFECT if expect_effect else NONE)
    if not shown and reasons:
        verdict += " Likely because " + "; ".join(reasons) + "."
    return Reading(
        f"{measured}\n  -> {seen}: {verdict}",
        band.median,
        band.low,
        band.high,
        shown,
        reasons,
        thr.factor,
        thr.origin,
        v.kind,
    )


def check_guess(guess: float | None, measured: float, what: str, unit: str = "") -> str:
    """The learner's prediction (``my_guess = ...`` before the experiment)
    against the measured value (a finite number >= 0; numpy numbers too):
    within 2x is "close".  A guess that is not a positive number is
    answered with a sentence that says so (the learner's input), a wrong
    ``measured``, ``what`` or ``unit`` raises (the chapter's)."""
    measured = real_arg(measured, "measured", minimum=0.0)
    str_arg(what, "what")
    str_arg(unit, "unit")
    shown = _fmt(measured, unit)
    if guess is None:
        return f"{what}: measured {shown} (you left your guess empty: write one before the next experiment)"
    if (
        isinstance(guess, (bool, np.bool_))
        or not isinstance(guess, numbers.Real)
        or not (math.isfinite(guess) and guess > 0)
    ):
        return f"{what}: measured {shown}; your guess {guess!r} is not a positive number"
    guessed = _fmt(float(guess), unit)
    if measured == 0:
        return f"{what}: measured {shown}, you guessed {guessed}: the result is zero, below any positive guess"
    # in logarithms: a ratio of 1e308 to 5e-324 overflows a float, its logarithm does not
    log_factor = math.log(measured) - math.log(float(guess))
    if abs(log_factor) <= math.log(2):
        return f"{what}: measured {shown}, you guessed {guessed}: close (within 2x)"
    direction = "higher" if log_factor > 0 else "lower"
    times = abs(log_factor)
    text = f"{math.exp(times):,.1f}x" if times < math.log(1e6) else f"about 10^{times / math.log(10):.0f}x"
    return f"{what}: measured {shown}, you guessed {guessed}: the result is {text} {direction}"


__all__ = ["ONE_CPU", "AABand", "Reading", "aa_band", "check_guess", "compare", "conditions"]
