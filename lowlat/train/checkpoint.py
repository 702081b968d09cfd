"""Checkpointing: on a large job failures are normal events.  A job
checkpoints every ``T`` of work at a cost ``C``; failures arrive at random
(exponential, mean time between failures ``M``) and throw away the work
since the last checkpoint, plus a restart cost ``R``.  Checkpoint too often
and the checkpoints eat the time; too rarely and the failures do.  Young's
and Daly's formulas give the interval in between; the Monte Carlo
simulation here finds it without them.  One unit of time throughout (the
chapter uses minutes)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lowlat.core.validate import int_arg
from lowlat.train._args import real_arg

# The most checkpoint segments one simulated job may have (work / interval).
MAX_SEGMENTS = 10**9
# The most simulated jobs per interval (each may draw up to EXACT_FAILS failures one by one).
MAX_RUNS = 10**5


def _positive(**kw: float) -> list[float]:
    return [real_arg(v, k, positive=True) for k, v in kw.items()]


def _non_negative(**kw: float) -> list[float]:
    return [real_arg(v, k, minimum=0.0) for k, v in kw.items()]


def young_interval(cost: float, mtbf: float) -> float:
    """Young (1974): T = sqrt(2 C M)."""
    cost, mtbf = _positive(cost=cost, mtbf=mtbf)
    return math.sqrt(2.0 * cost * mtbf)


def daly_interval(cost: float, mtbf: float) -> float:
    """Daly (2006), the higher-order estimate: for C < 2M,
    T = sqrt(2 C M) [1 + (1/3) sqrt(C / 2M) + (1/9) (C / 2M)] - C; else M."""
    cost, mtbf = _positive(cost=cost, mtbf=mtbf)
    if cost >= 2.0 * mtbf:
        return mtbf
    r = cost / (2.0 * mtbf)
    return math.sqrt(2.0 * cost * mtbf) * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - cost


def expected_goodput(interval: float, cost: float, mtbf: float, restart: float = 0.0) -> float:
    """Useful work / wall time for an endless job, exactly: a segment of
    length tau = T + C takes (M + R)(e^(tau/M) - 1) on average."""
    interval, mtbf = _positive(interval=interval, mtbf=mtbf)
    cost, restart = _non_negative(cost=cost, restart=restart)
    try:
        return interval / ((mtbf + restart) * math.expm1((interval + cost) / mtbf))
    except OverflowError:  # a segment far longer than the MTBF never completes: goodput 0
        return 0.0


# Expected failures per run from which a run's wasted time is drawn as the sum's normal limit (the
# central limit theorem) instead of one draw per failure, its failure count as a Gamma-Poisson mixture
# (exactly the negative binomial): memory and time stay bounded however rarely a segment completes.
EXACT_FAILS = 1000


def _segments_wall(
    tau: float, segments: int, mtbf: float, restart: float, runs: int, rng: np.random.Generator
) -> np.ndarray:
    """Wall time of ``segments`` back-to-back segments of length ``tau`` per
    run.  Failures are memoryless, so each attempt at a segment fails with
    probability 1 - e^(-tau/M); the failures before ``segments`` successes
    are negative-binomial; each failure wastes the time it struck at
    (exponential, truncated at tau) plus the restart.  Where a run expects
    more than :data:`EXACT_FAILS` failures, its failure count is drawn as
    a Gamma-Poisson mixture and its wasted time from its normal limit;
    where a segment can practically never complete (e^(-tau/M) underflows),
    the wall time is infinite (goodput 0)."""
    if segments == 0 or tau <= 0:
        return np.zeros(runs)
    q = math.exp(-tau / mtbf)  # the chance that one attempt at a segment completes
    if q <= 1e-300:
        return np.full(runs, math.inf)
    p_fail = -math.expm1(-tau / mtbf)
    mean_fails = segments * p_fail / q
    # one failure's lost time: Exp(M) truncated to [0, tau), its mean and variance
    lost_mean = mtbf - tau * q / p_fail
    lost_var = max(mtbf * mtbf - tau * tau * q / (p_fail * p_fail), 0.0)
    if mean_fails > EXACT_FAILS:
        # a negative binomial is a Poisson whose rate is Gamma(segments, p_fail / q): drawn that way, with
        # the Poisson's own spread added as a normal once the rate is beyond numpy's Poisson
        lam = rng.gamma(segments, p_fail / q, runs)
        small = lam < 1e15
        fails_f = np.where(
            small, rng.poisson(np.where(small, lam, 0.0)), lam + np.sqrt(lam) * rng.standard_normal(runs)
        )
        fails_f = np.maximum(fails_f.astype(np.float64), 0.0)
        wasted_f = fails_f * lost_mean + np.sqrt(fails_f * lost_var) * rng.standard_normal(runs)
        return segments * tau + np.maximum(wasted_f, 0.0) + fails_f * restart
    fails = rng.negative_binomial(segments, q, size=runs)
    total = int(fails.sum())
    u = rng.random(total)
    lost = -mtbf * np.log1p(-u * p_fail)  # inverse CDF of Exp(M) truncated to [0, tau)
    wasted = np.bincount(np.repeat(np.arange(runs), fails), weights=lost, minlength=runs)
    return segments * tau + wasted + fails * restart


def simulate_goodput(
    interval: float, cost: float, mtbf: float, work: float, *, restart: float = 0.0, runs: int = 200, seed: int = 0
) -> np.ndarray:
    """Goodput (work / wall time) of ``runs`` simulated jobs of ``work``
    units, one value per run (0 where a segment practically never
    completes).  Memory and time are bounded: at most
    ``runs x EXACT_FAILS`` failures are drawn one by one."""
    interval, mtbf, work = _positive(interval=interval, mtbf=mtbf, work=work)
    runs = int_arg(runs, "runs", minimum=1, maximum=MAX_RUNS)
    cost, restart = _non_negative(cost=cost, restart=restart)
    if work / interval > MAX_SEGMENTS:
        raise ValueError(
            f"work / interval = {work / interval:.3g} checkpoint segments; at most {MAX_SEGMENTS:.0e} can be simulated "
            "(a longer interval or less work)"
        )
    rng = np.random.default_rng(int_arg(seed, "seed", minimum=0))  # the same stream for every interval: smoother curves
    full = int(work // interval)
    rest = work - full * interval
    wall = _segments_wall(interval + cost, full, mtbf, restart, runs, rng)
    wall += _segments_wall(rest, 1 if rest > 0 else 0, mtbf, restart, runs, rng)  # the end needs no checkpoint
    return work / wall


@dataclass
class CheckpointSweep:
    """Mean simulated goodput per interval, the exact expectation, and the
    formulas' optima."""

    intervals: np.ndarray
    goodput: np.ndarray  # mean over runs
    goodput_lo: np.ndarray  # 5th percentile over runs
    goodput_hi: np.ndarray  # 95th percentile over runs
    expected: np.ndarray
    young: float
    daly: float

    @property
    def best(self) -> float:
        """The interval with the highest simulated mean goodput."""
        return float(self.intervals[int(np.argmax(self.goodput))])


def sweep(
    cost: float,
    mtbf: float,
    work: float,
    intervals: np.ndarray | None = None,
    *,
    restart: float = 0.0,
    runs: int = 200,
    seed: int = 0,
) -> CheckpointSweep:
    """Simulates every interval (default: 40 log-spaced around Young's, at
    most 10,000 intervals)."""
    young, daly = young_interval(cost, mtbf), daly_interval(cost, mtbf)
    (work,) = _positive(work=work)
    (restart,) = _non_negative(restart=restart)
    runs = int_arg(runs, "runs", minimum=1, maximum=MAX_RUNS)
    if intervals is None:
        intervals = np.geomspace(young / 8, min(young * 8, work), 40)
    else:
        if isinstance(intervals, (str, bytes)) or not hasattr(intervals, "__len__"):
            raise TypeError(f"intervals must be a sequence of numbers > 0, got {type(intervals).__name__}")
        intervals = np.asarray(intervals, dtype=object)
        if intervals.ndim != 1 or intervals.size == 0 or intervals.size > 10_000:
            raise ValueError(
                f"intervals must be a 1-D sequence of 1 to 10,000 numbers > 0, got shape {intervals.shape}"
            )
        for i, t in enumerate(intervals.tolist()):
            real_arg(t, f"intervals[{i}]", positive=True)
    sims = [simulate_goodput(float(t), cost, mtbf, work, restart=restart, runs=runs, seed=seed) for t in intervals]
    return CheckpointSweep(
        np.asarray(intervals, dtype=float),
        np.array([s.mean() for s in sims]),
        np.array([np.percentile(s, 5) for s in sims]),
        np.array([np.percentile(s, 95) for s in sims]),
        np.array([expected_goodput(float(t), cost, mtbf, restart) for t in intervals]),
        young,
        daly,
    )


__all__ = [
    "EXACT_FAILS",
    "MAX_RUNS",
    "CheckpointSweep",
    "daly_interval",
    "expected_goodput",
    "simulate_goodput",
    "sweep",
    "young_interval",
]
