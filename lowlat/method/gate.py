"""The decision method (chapter 04): the decision path from a result to its
suspects (:func:`decide`), and regression gates that let a run's own noise
decide (:func:`gate`: candidate against baseline, interleaved; :func:`noise_gate`:
with an A/A pair setting the threshold per metric).  Both apply the one rule
of :mod:`lowlat.method.rule`: REGRESSION when the middle half of
candidate/baseline clears the threshold, IMPROVEMENT when it lies below its
inverse, "no change beyond noise" when it lies within and holds 1, and
"cannot decide" otherwise.  Costs are whatever the
caller measures (ns per op, a P99 in ns); ratios > 1 mean the candidate is
slower."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from lowlat.core.argcheck import finite_arg, function_arg, real_arg, str_arg
from lowlat.core.hist import Histogram
from lowlat.core.validate import int_arg
from lowlat.method import rule
from lowlat.method.interleave import interleave, ratios
from lowlat.method.rule import EFFECT, NONE, OPPOSITE, AABand, Band, Verdict, fixed_threshold

UNDECIDED_WORD = "cannot decide"


def _gate_word(v: Verdict) -> str:
    """A gate's word for the rule's verdict (ratios > 1: the candidate is slower)."""
    return {EFFECT: "REGRESSION", OPPOSITE: "IMPROVEMENT", NONE: "no change beyond noise"}.get(v.kind, UNDECIDED_WORD)


# ---- the decision path --------------------------------------------------------------------


@dataclass
class Decision:
    """What a result says, and where to look."""

    case: str
    finding: str
    suspects: list[str]
    evidence: str

    def format(self) -> str:
        return f"{self.case}: {self.finding}\n  evidence: {self.evidence}\n  suspects: " + "; ".join(self.suspects)


def decide(
    case: str,
    p50_ns: float,
    p99_ns: float,
    *,
    p50_budget_ns: float,
    p99_budget_ns: float,
    items_per_s: float | None = None,
    target_items_per_s: float | None = None,
) -> Decision:
    """The source's decision path: high P99 with a low P50 -> occasional
    slow events; a high P50 -> the work done per item; good latency but low
    throughput -> not enough parallelism, or I/O.  Every number must be
    finite (a NaN would compare as "within budget"), latencies >= 0 and
    budgets > 0, with P99 >= P50."""
    str_arg(case, "case")
    p50_ns = finite_arg(p50_ns, "p50_ns")
    p99_ns = finite_arg(p99_ns, "p99_ns")
    p50_budget_ns = finite_arg(p50_budget_ns, "p50_budget_ns", positive=True)
    p99_budget_ns = finite_arg(p99_budget_ns, "p99_budget_ns", positive=True)
    if p99_ns < p50_ns:
        raise ValueError(f"p99_ns ({p99_ns:,.0f}) is below p50_ns ({p50_ns:,.0f}): no sample has that; swapped?")
    if (items_per_s is None) != (target_items_per_s is None):
        raise ValueError("give items_per_s and target_items_per_s together (or neither)")
    if items_per_s is not None and target_items_per_s is not None:
        items_per_s = finite_arg(items_per_s, "items_per_s")
        target_items_per_s = finite_arg(target_items_per_s, "target_items_per_s", positive=True)
    ev = f"P50 {p50_ns:,.0f} ns (budget {p50_budget_ns:,.0f}), P99 {p99_ns:,.0f} ns (budget {p99_budget_ns:,.0f})"
    if items_per_s is not None and target_items_per_s is not None:
        ev += f", {items_per_s / 1e6:,.2f} M items/s (target {target_items_per_s / 1e6:,.2f} M items/s)"
    if p50_ns > p50_budget_ns:
        return Decision(
            case,
            "high P50: every item is slow",
            [
                "the work per item: algorithm, data layout, cache misses (profile the common path)",
                "per-call overhead that batching would amortise",
            ],
            ev,
        )
    if p99_ns > p99_budget_ns:
        return Decision(
            case,
            f"high P99 with a low P50 (P99/P50 = {p99_ns / max(p50_ns, 1):,.1f}x): occasional slow events",
            [
                "allocation (malloc on a fragmented heap)",
                "system calls",
                "locks and their contention",
                "page faults (first touch)",
                "preemption and interrupts",
            ],
            ev,
        )
    if items_per_s is not None and target_items_per_s is not None and items_per_s < target_items_per_s:
        return Decision(
            case,
            "latency within budget, throughput too low",
            ["parallelism: more consumers, sharding, pipelining", "I/O or hand-off costs per item: batch them"],
            ev,
        )
    return Decision(case, "within budget", ["nothing to chase: measure again under the real load"], ev)


# ---- a benchmark regression gate -----------------------------------------------------------


@dataclass
class GateResult:
    """Candidate vs baseline, measured interleaved in one run.  ``ratios``:
    candidate / baseline per round (> 1: the candidate is slower)."""

    name: str
    ratios: np.ndarray = field(repr=False)
    threshold: float

    @property
    def median(self) -> float:
        return float(np.median(self.ratios))

    @property
    def spread(self) -> tuple[float, float]:
        """The middle half of the ratios (quartiles): the run's own noise."""
        return float(np.percentile(self.ratios, 25)), float(np.percentile(self.ratios, 75))

    @property
    def decision(self) -> Verdict:
        """The rule's verdict (:mod:`lowlat.method.rule`) on candidate/baseline,
        against the fixed threshold 1 + ``threshold``."""
        return rule.decide(Band.of(self.ratios), fixed_threshold(1 + self.threshold))

    @property
    def verdict(self) -> str:
        return _gate_word(self.decision)

    def format(self) -> str:
        lo, hi = self.spread
        return (
            f"{self.name}: {self.verdict} (candidate/baseline median {self.median:.2f}x, middle half "
            f"{lo:.2f}-{hi:.2f}x, threshold {1 + self.threshold:.2f}x fixed by the caller (no A/A run: noise_gate "
            f"measures one), {len(self.ratios)} rounds)"
        )


def gate(
    name: str,
    baseline: Callable[[], float],
    candidate: Callable[[], float],
    *,
    rounds: int = 9,
    threshold: float = 0.10,
) -> GateResult:
    """Runs ``baseline`` and ``candidate`` (each returns a cost, e.g. ns per
    op) interleaved, alternating which goes first, for ``rounds`` rounds
    (:func:`lowlat.method.interleave.interleave`).
    A regression is declared only when the *lower quartile* of the ratios is
    above 1 + threshold: the candidate was slower in most rounds, by more
    than the threshold, so one lucky or unlucky round cannot decide it.
    Each call must return a finite cost > 0: a NaN, 0 or negative one raises
    (it would read as "no change" or "IMPROVEMENT")."""
    str_arg(name, "name")
    rounds = int_arg(rounds, "rounds", minimum=3, maximum=10_000)
    function_arg(baseline, "baseline")
    function_arg(candidate, "candidate")
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, numbers.Real):
        raise TypeError(f"threshold must be a number in (0, 1), got {type(threshold).__name__} {threshold!r}")
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")

    def checked(which: str, fn: Callable[[], float]) -> Callable[[], float]:
        def run() -> float:
            c = fn()
            if isinstance(c, (bool, np.bool_)) or not isinstance(c, numbers.Real) or not (math.isfinite(c) and c > 0):
                raise ValueError(f"{which} returned {c!r}: costs must be finite numbers > 0 (e.g. ns per op)")
            return float(c)

        return run

    costs = interleave(
        {"baseline": checked("baseline", baseline), "candidate": checked("candidate", candidate)}, rounds
    )
    return GateResult(name, np.array(ratios(costs["candidate"], costs["baseline"])), threshold)


@dataclass
class MetricGate:
    """One metric of a :class:`NoiseGate` (e.g. "p99"): per-round ratios
    (> 1: slower than the baseline) of the candidate and of the A/A pair,
    and the threshold the A/A spread set."""

    metric: str
    ratios: np.ndarray = field(repr=False)
    aa_ratios: np.ndarray = field(repr=False)
    margin: float

    @staticmethod
    def _q(x: np.ndarray) -> tuple[float, float]:
        return float(np.percentile(x, 25)), float(np.percentile(x, 75))

    @property
    def spread(self) -> tuple[float, float]:
        """The middle half (quartiles) of candidate / baseline."""
        return self._q(self.ratios)

    @property
    def aa_spread(self) -> tuple[float, float]:
        """The middle half of baseline / baseline: this run's noise."""
        return self._q(self.aa_ratios)

    @property
    def noise(self) -> float:
        """How far the A/A middle half reaches from 1 (0.08: 8%)."""
        return self.aa.noise

    @property
    def threshold(self) -> float:
        """The A/A noise plus the margin: what a change must exceed."""
        return self.noise + self.margin

    @property
    def aa(self) -> AABand:
        """The A/A band (A'/A) and its margin: the rule's threshold."""
        return AABand(Band.of(self.aa_ratios), self.margin)

    @property
    def decision(self) -> Verdict:
        """The rule's verdict (:mod:`lowlat.method.rule`): the same ratios and
        A/A rounds read by :func:`lowlat.method.readings.compare` give the same."""
        return rule.decide(Band.of(self.ratios), self.aa.threshold)

    @property
    def verdict(self) -> str:
        return _gate_word(self.decision)

    def format(self) -> str:
        lo, hi = self.spread
        alo, ahi = self.aa_spread
        return (
            f"{self.metric}: {self.verdict} (candidate/baseline median {float(np.median(self.ratios)):.2f}x, "
            f"middle half {lo:.2f}-{hi:.2f}x; A/A middle half {alo:.2f}-{ahi:.2f}x, so the threshold is "
            f"+{self.threshold:.0%} = noise {self.noise:.0%} + margin {self.margin:.0%}"
            + (f"; {self.decision.why})" if self.decision.why else ")")
        )


@dataclass
class NoiseGate:
    """A regression gate whose threshold comes from the run itself: the
    baseline against itself (A/A) and against the candidate, interleaved
    in the same rounds, one :class:`MetricGate` per metric."""

    name: str
    rounds: int
    metrics: dict[str, MetricGate]

    @property
    def verdict(self) -> str:
        """REGRESSION if any metric regressed; else IMPROVEMENT if any
        improved; else "cannot decide" if any metric could not be decided;
        else no change beyond noise."""
        v = [g.verdict for g in self.metrics.values()]
        for word in ("REGRESSION", "IMPROVEMENT", UNDECIDED_WORD):
            if word in v:
                return word
        return v[0]

    def format(self) -> str:
        return f"{self.name} ({self.rounds} rounds): {self.verdict}\n" + "\n".join(
            "  " + g.format() for g in self.metrics.values()
        )


def latency_percentiles(samples_ns: object, percentiles: tuple[float, ...] = (50, 99)) -> dict[str, float]:
    """``{"p50": ..., "p99": ...}`` (ns) of an array of latencies, or of a
    :class:`lowlat.core.hist.Histogram`: the input of :func:`noise_gate`.
    Samples must be finite numbers >= 0; percentiles numbers in [0, 100]."""
    if isinstance(percentiles, (str, bytes)) or not hasattr(percentiles, "__iter__"):
        raise TypeError(f"percentiles must be a tuple of numbers in [0, 100], got {percentiles!r:.60}")
    percentiles = tuple(real_arg(p, "percentile", minimum=0.0, maximum=100.0) for p in percentiles)
    if not percentiles:
        raise ValueError("percentiles must hold at least one percentile")
    if isinstance(samples_ns, Histogram):
        return {f"p{p:g}": float(samples_ns.percentile(p)) for p in percentiles}
    if isinstance(samples_ns, (str, bytes)) or not hasattr(samples_ns, "__len__"):
        raise TypeError(
            f"samples_ns must be an array of latencies (ns) or a Histogram, got {type(samples_ns).__name__}"
        )
    raw = np.asarray(samples_ns)
    if raw.size and raw.dtype.kind not in "iuf":
        raise TypeError(f"samples_ns must hold real numbers of ns, got values of type {raw.dtype}")
    arr = raw.astype(np.float64).ravel()
    if arr.size == 0:
        raise ValueError("samples_ns: no latency samples to take percentiles of")
    if not np.all(np.isfinite(arr)) or (arr < 0).any():
        raise ValueError("samples_ns must be finite numbers of ns >= 0 (a NaN, inf or negative one was given)")
    return {f"p{p:g}": float(np.percentile(arr, p)) for p in percentiles}


def noise_gate(
    name: str,
    baseline: Callable[[], dict[str, float]],
    candidate: Callable[[], dict[str, float]],
    *,
    rounds: int = 9,
    margin: float = 0.05,
) -> NoiseGate:
    """The gate CI should run on tail latency: ``baseline`` twice (A and
    A') and ``candidate`` (B), interleaved as A B A' then A' B A (A and A'
    swap the first and last place each round), for ``rounds`` rounds.  Each call returns costs by metric, e.g.
    ``{"p50": ns, "p99": ns}`` (:func:`latency_percentiles`).  For each
    metric, A'/A per round measures this run's noise; the threshold is how
    far the middle half of A'/A reaches from 1, plus ``margin``; B
    regressed on that metric when the *lower quartile* of B/A is above
    1 + threshold (slower in most rounds, by more than the noise and the
    margin).  A P99 rests on the few slowest samples of a round, so it is
    usually noisier than a P50 and its threshold is expected to come out
    wider; the A/A rounds decide, per metric and per run (a quiet run can
    give the P99 a threshold as narrow as the P50's, or narrower)."""
    str_arg(name, "name")
    rounds = int_arg(rounds, "rounds", minimum=3, maximum=10_000)
    function_arg(baseline, "baseline")
    function_arg(candidate, "candidate")
    if isinstance(margin, (bool, np.bool_)) or not isinstance(margin, numbers.Real):
        raise TypeError(f"margin must be a number in [0, 1), got {type(margin).__name__} {margin!r}")
    if not 0 <= margin < 1:
        raise ValueError(f"margin must be in [0, 1), got {margin!r}")

    def checked(which: str, fn: Callable[[], dict[str, float]]) -> Callable[[], dict[str, float]]:
        def run() -> dict[str, float]:
            out = fn()
            if not isinstance(out, dict) or not out:
                raise TypeError(f"{which} must return a dict of metric -> cost (e.g. {{'p99': ns}}), got {out!r}")
            for k, c in out.items():
                if (
                    isinstance(c, (bool, np.bool_))
                    or not isinstance(c, numbers.Real)
                    or not (math.isfinite(c) and c > 0)
                ):
                    raise ValueError(f"{which} returned {k}={c!r}: costs must be finite numbers > 0 (e.g. ns)")
            return {k: float(c) for k, c in out.items()}

        return run

    # A, B, A' then A', B, A: A and A' swap the first and the last place every
    # round, so an order effect (the first call of a round warming a cache)
    # cancels in A'/A instead of pushing the whole A/A band to one side of 1.
    got = interleave(
        {"A": checked("baseline", baseline), "B": checked("candidate", candidate), "A'": checked("baseline", baseline)},
        rounds,
    )
    keys = list(got["A"][0])
    if any(list(r) != keys for series in got.values() for r in series):
        raise ValueError(f"baseline and candidate must return the same metrics every call; first call gave {keys}")
    metrics = {
        k: MetricGate(
            k,
            np.array(ratios([r[k] for r in got["B"]], [r[k] for r in got["A"]])),
            np.array(ratios([r[k] for r in got["A'"]], [r[k] for r in got["A"]])),
            float(margin),
        )
        for k in keys
    }
    return NoiseGate(name, rounds, metrics)


__all__ = [
    "Decision",
    "GateResult",
    "MetricGate",
    "NoiseGate",
    "decide",
    "gate",
    "latency_percentiles",
    "noise_gate",
]
