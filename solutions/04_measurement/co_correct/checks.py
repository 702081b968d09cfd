"""Checks of the coordinated-omission exercise, run one per process by
``lowlat.grading.pyharness``.  The references are the C core's histogram and
the ``hdrhistogram`` package; the cases are generated here, seeded."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np

from lowlat.grading.pyharness import refuses_reference
from lowlat.hist import HOUR_NS, Histogram

PS = (0, 25, 50, 90, 99, 99.9, 99.99, 100)
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


def check_no_reference(mod: ModuleType, path: str) -> str | None:
    return refuses_reference(path, FORBIDDEN, ADVICE)


def check_expansion(mod: ModuleType, path: str) -> str | None:
    for name, values, interval in _cases()[2:] + [
        ("a short mix", np.array([5, 25, 20, 10, 31, 0]), 10),
        ("empty", np.array([], dtype=np.int64), 10),
    ]:
        got = np.sort(np.asarray(mod.corrected(values, interval), dtype=np.int64))
        want = np.sort(np.array(_expand([int(v) for v in values], interval), dtype=np.int64))
        if got.shape != want.shape or not np.array_equal(got, want):
            return (
                f"case {name!r} (interval {interval}): {len(got)} values, expected {len(want)}; first "
                f"difference: got {got[:8].tolist()}..., expected {want[:8].tolist()}..."
            )
    return None


def check_count(mod: ModuleType, path: str) -> str | None:
    for name, values, interval in _cases():
        h = Histogram(1, HOUR_NS, 3)
        h.record_many_corrected(values.astype(np.uint64), interval)
        n = len(mod.corrected(values, interval))
        if n != h.count:
            return f"case {name!r}: {n} corrected values, the core's record_corrected counts {h.count}"
    return None


def check_percentiles(mod: ModuleType, path: str) -> str | None:
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


def check_hdrh(mod: ModuleType, path: str) -> str | None:
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


def check_readme(mod: ModuleType, path: str) -> str | None:
    values = np.array([1_000_000] * 10_000 + [100_000_000_000])
    got = mod.corrected_percentiles(values, 10_000_000, (50, 75, 99.99))
    if not (990_000 <= got[50] <= 1_001_000):
        return f"10,000 x 1 ms + a 100 s stall, interval 10 ms: P50 should be 1 ms, got {got[50]:,} ns"
    if not got[75] > 40_000_000_000:
        return f"... P75 should be about 50 s (half the requests met the stall), got {got[75]:,} ns"
    return None


CHECKS: dict[str, Callable[[ModuleType, str], str | None]] = {
    "no_reference": check_no_reference,
    "expansion": check_expansion,
    "count": check_count,
    "percentiles": check_percentiles,
    "hdrh": check_hdrh,
    "readme": check_readme,
}
