"""Checks of the coordinated-omission exercise.  They run in the grader's
process with the references, the C core's histogram and the ``hdrhistogram``
package (see ``lowlat.grading.pyharness``); the learner's module runs in a
child.  The cases are generated here, seeded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lowlat.core.hist import HOUR_NS, Histogram
from lowlat.grading.pyharness import Learner, LearnerRaised, LearnerStopped, no_reference

PS = (0, 25, 50, 90, 99, 99.9, 99.99, 100)
BIG = [2**62 + 5, 2**62 + 3, 2**62 + 1]  # above 2^53: a float cannot tell them apart
FORBIDDEN = ["lowlat", "hdrh"]
ADVICE = "write it with numpy only (the grader compares against them)"


def _expand(values: list[int], interval: int) -> list[int]:
    """The correction, spelled out as a loop (the reference for small cases)."""
    out = []
    for v in values:
        out.append(v)
        if interval > 0:
            x = v - interval
            while x >= interval:
                out.append(x)
                x -= interval
    return out


def _cases() -> list[tuple[str, np.ndarray, int]]:
    rng = np.random.default_rng(20261202)
    heavy = np.round(rng.lognormal(np.log(2_000), 0.3, 5000) + (rng.random(5000) < 0.01) * 400_000)
    return [
        ("heavy-tailed, interval 10 us", heavy.astype(np.int64), 10_000),
        ("uniform, interval 1 ms", rng.integers(1, 5_000_000, 3000), 1_000_000),
        ("one long stall", np.array([100] * 999 + [2_000_000]), 1_000),
        ("values equal to the interval", np.array([500, 1000, 1500, 2000, 999, 1001]), 500),
        ("interval 0 (no correction)", rng.integers(1, 10**6, 100), 0),
    ]


def check_no_reference(mod: Learner, path: str) -> str | None:
    return no_reference(mod, path, FORBIDDEN, ADVICE)


def _edge(call: str, readme: str, fn: Any) -> Any:
    """``fn()``, a call of the learner's on an edge case the README states:
    a hang or an exception there fails with what the README says."""
    try:
        return fn()
    except LearnerStopped as exc:
        raise AssertionError(f"{call}: {exc}; the README says: {readme}") from None
    except LearnerRaised as exc:
        raise AssertionError(f"{call} {exc.reason()}; the README says: {readme}") from None


def check_expansion(mod: Learner, path: str) -> str | None:
    short = np.array([5, 25, 20, 10, 31, 0])
    got = _edge(
        "corrected([5, 25, 20, 10, 31, 0], interval_ns=-10)",
        "nothing extra when I <= 0 (a negative interval adds no values)",
        lambda: mod.call("corrected", short, -10, timeout_s=5),
    )
    if sorted(np.asarray(got, dtype=np.int64).tolist()) != sorted(short.tolist()):
        return f"a negative interval must add nothing (README): corrected(..., -10) gave {len(got)} values, not 6"
    for name, values, interval in _cases()[2:] + [
        ("a short mix", short, 10),
        ("empty", np.array([], dtype=np.int64), 10),
        ("values above 2^53 (exact in int64, not in a float)", np.array(BIG), 2**61),
    ]:
        got = np.sort(np.asarray(mod.corrected(values, interval), dtype=np.int64))
        want = np.sort(np.array(_expand([int(v) for v in values], interval), dtype=np.int64))
        if got.shape != want.shape or not np.array_equal(got, want):
            if got.shape == want.shape and interval == 2**61:
                return (
                    f"case {name!r}: got {got.tolist()}, expected {want.tolist()}: the values lost their low bits "
                    "(a float holds integers exactly only up to 2^53; keep int64 throughout, README)"
                )
            return (
                f"case {name!r} (interval {interval}): {len(got)} values, expected {len(want)}; first "
                f"difference: got {got[:8].tolist()}..., expected {want[:8].tolist()}..."
            )
    return None


def check_count(mod: Learner, path: str) -> str | None:
    for name, values, interval in _cases():
        h = Histogram(1, HOUR_NS, 3)
        h.record_many_corrected(values.astype(np.uint64), interval)
        n = len(mod.corrected(values, interval))
        if n != h.count:
            return f"case {name!r}: {n} corrected values, the core's record_corrected counts {h.count}"
    return None


def check_rank_rule(mod: Learner, path: str) -> str | None:
    got = _edge(
        "percentile([], 50)", "0 for no values", lambda: mod.call("percentile", np.array([], dtype=np.int64), 50.0)
    )
    if got != 0:
        return f"percentile of no values returned {got!r}; the README says 0"
    empty = _edge(
        "corrected_percentiles([], 1000, (50, 99))",
        "0 for no values",
        lambda: mod.corrected_percentiles(np.array([], dtype=np.int64), 1000, (50, 99)),
    )
    if not isinstance(empty, dict) or any(empty.get(p) != 0 for p in (50, 99)):
        return f"corrected_percentiles of no samples returned {empty!r}; expected {{50: 0, 99: 0}} (README: 0)"
    values = [7, 1, 9, 3, 5, 5, 2, 8, 4, 6]
    for p in (0, 1, 10, 14.9, 15, 25, 50, 50.1, 90, 95, 99.99, 100):
        want = sorted(values)[min(max(1, int(p / 100 * len(values) + 0.5)), len(values)) - 1]
        got = mod.percentile(np.array(values, dtype=np.int64), p)
        if got != want:
            return (
                f"percentile({values}, {p:g}) returned {got!r}, expected {want} (sorted, the value at 1-based rank "
                f"max(1, int(p / 100 * n + 0.5)) = {max(1, int(p / 100 * len(values) + 0.5))})"
            )
    big = np.array(BIG, dtype=np.int64)
    got = mod.percentile(big, 50)
    if got != BIG[1]:
        return (
            f"percentile({BIG}, 50) returned {got!r}, expected {BIG[1]} exactly: values above 2^53 lose their low "
            "bits in a float (sort and index the int64 array; README)"
        )
    return None


def check_percentiles(mod: Learner, path: str) -> str | None:
    for name, values, interval in _cases():
        h = Histogram(1, HOUR_NS, 3)
        h.record_many_corrected(values.astype(np.uint64), interval)
        got = mod.corrected_percentiles(values, interval, PS)
        for p in PS:
            want = h.percentile(p)
            if not h.equivalent(int(got[p]), want):
                return (
                    f"case {name!r}, P{p:g}: got {int(got[p]):,}, the core's histogram says {want:,} "
                    f"(equivalent values: {h.lowest_equivalent(want):,}..{h.highest_equivalent(want):,})"
                )
    return None


def check_hdrh(mod: Learner, path: str) -> str | None:
    from hdrh.histogram import HdrHistogram

    rng = np.random.default_rng(7)
    interval = 5_000
    # Multiples of the interval: there the package's correction and the C library's agree exactly.
    values = rng.integers(1, 400, 3000) * interval
    ref = HdrHistogram(1, HOUR_NS, 3)
    for v in values:
        ref.record_corrected_value(int(v), interval)
    got = mod.corrected_percentiles(values, interval, PS)
    for p in PS:
        want = ref.get_value_at_percentile(p)
        if not ref.values_are_equivalent(int(got[p]), want):
            return f"P{p:g}: got {int(got[p]):,}, the hdrhistogram package says {want:,}"
    return None


def check_readme(mod: Learner, path: str) -> str | None:
    values = np.array([1_000_000] * 10_000 + [100_000_000_000])
    got = mod.corrected_percentiles(values, 10_000_000, (50, 75, 99.99))
    if not (990_000 <= got[50] <= 1_001_000):
        return f"10,000 x 1 ms + a 100 s stall, interval 10 ms: P50 should be 1 ms, got {got[50]:,} ns"
    if not got[75] > 40_000_000_000:
        return f"... P75 should be about 50 s (half the requests met the stall), got {got[75]:,} ns"
    return None


CHECKS: dict[str, Callable[[Any, str], str | None]] = {
    "no_reference": check_no_reference,
    "expansion": check_expansion,
    "rank_rule": check_rank_rule,
    "count": check_count,
    "percentiles": check_percentiles,
    "hdrh": check_hdrh,
    "readme": check_readme,
}
