"""Checks of the two chapter-04 exercises (co_correct, loglinear), one per
process: ``python -m lowlat.grading.py_measurement FILE CHECK``.  The
references are the C core's histogram and, for the correction, the
``hdrhistogram`` package; the cases are generated here, seeded."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable

import numpy as np

from lowlat._lib import lib
from lowlat.grading import pyharness
from lowlat.hist import Histogram

HOUR_NS = 3_600_000_000_000
PS = (0, 25, 50, 90, 99, 99.9, 99.99, 100)


def _no_lowlat(path: str) -> str | None:
    if re.search(r"^\s*(from\s+lowlat|import\s+lowlat|from\s+hdrh|import\s+hdrh)", Path(path).read_text(), re.M):
        return "the file imports lowlat or hdrh: write it with numpy only (the grader compares against them)"
    return None


# ---- co_correct --------------------------------------------------------------------------


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


def check_co_no_reference(mod: ModuleType, path: str) -> str | None:
    return _no_lowlat(path)


def check_co_expansion(mod: ModuleType, path: str) -> str | None:
    for name, values, interval in _cases()[2:] + [("a short mix", np.array([5, 25, 20, 10, 31, 0]), 10),
                                                  ("empty", np.array([], dtype=np.int64), 10)]:
        got = np.sort(np.asarray(mod.corrected(values, interval), dtype=np.int64))
        want = np.sort(np.array(_expand([int(v) for v in values], interval), dtype=np.int64))
        if got.shape != want.shape or not np.array_equal(got, want):
            return (f"case {name!r} (interval {interval}): {len(got)} values, expected {len(want)}; first "
                    f"difference: got {got[:8].tolist()}..., expected {want[:8].tolist()}...")
    return None


def check_co_count(mod: ModuleType, path: str) -> str | None:
    for name, values, interval in _cases():
        h = Histogram(1, HOUR_NS, 3)
        h.record_many_corrected(values.astype(np.uint64), interval)
        n = len(mod.corrected(values, interval))
        if n != h.count:
            return f"case {name!r}: {n} corrected values, the core's record_corrected counts {h.count}"
    return None


def check_co_percentiles(mod: ModuleType, path: str) -> str | None:
    for name, values, interval in _cases():
        h = Histogram(1, HOUR_NS, 3)
        h.record_many_corrected(values.astype(np.uint64), interval)
        got = mod.corrected_percentiles(values, interval, PS)
        for p in PS:
            want = h.percentile(p)
            if not h.equivalent(int(got[p]), want):
                return (f"case {name!r}, P{p:g}: got {int(got[p]):,}, the core's histogram says {want:,} "
                        f"(equivalent values: {h.lowest_equivalent(want):,}..{h.highest_equivalent(want):,})")
    return None


def check_co_hdrh(mod: ModuleType, path: str) -> str | None:
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


def check_co_readme(mod: ModuleType, path: str) -> str | None:
    values = np.array([1_000_000] * 10_000 + [100_000_000_000])
    got = mod.corrected_percentiles(values, 10_000_000, (50, 75, 99.99))
    if not (990_000 <= got[50] <= 1_001_000):
        return f"10,000 x 1 ms + a 100 s stall, interval 10 ms: P50 should be 1 ms, got {got[50]:,} ns"
    if not got[75] > 40_000_000_000:
        return f"... P75 should be about 50 s (half the requests met the stall), got {got[75]:,} ns"
    return None


# ---- loglinear ---------------------------------------------------------------------------


def _core(sig: int) -> Histogram:
    return Histogram(1, 2**62, sig)


def _edges(sig: int) -> list[int]:
    s = 1 << (2 * 10**sig - 1).bit_length()
    out = {0, 1, 2, s // 2 - 1, s // 2, s - 1, s, s + 1, 2 * s - 1, 2 * s, 2 * s + 1}
    for k in range(1, 62):
        out |= {(1 << k) - 1, 1 << k, (1 << k) + 1, 3 << (k - 1) if k > 1 else 3}
    return sorted(out)


def check_ll_no_reference(mod: ModuleType, path: str) -> str | None:
    return _no_lowlat(path)


def check_ll_small(mod: ModuleType, path: str) -> str | None:
    for sig in (1, 2, 3):
        s = 1 << (2 * 10**sig - 1).bit_length()
        for v in range(0, s, max(1, s // 64)):
            if mod.index_of(v, sig) != v:
                return f"sig_figs={sig}: below S={s} every value has its own counter: index_of({v}) must be {v}"
    return None


def check_ll_edges(mod: ModuleType, path: str) -> str | None:
    for sig in (1, 2, 3, 4):
        h = _core(sig)
        for v in _edges(sig):
            got, want = mod.index_of(v, sig), h.index_of(v)
            if got != want:
                return f"sig_figs={sig}: index_of({v:,}) = {got:,}, expected {want:,}"
    return None


def check_ll_inverse(mod: ModuleType, path: str) -> str | None:
    for sig in (1, 2, 3, 4):
        h = _core(sig)
        n = h.layout.counts_len
        for i in list(range(0, 4 * h.layout.sub_bucket_count)) + list(range(0, n, 37)) + [n - 1]:
            got, want = mod.lowest_value(i, sig), int(lib.ll_hist_value_at_index(h._h, i))
            if got != want:
                return f"sig_figs={sig}: lowest_value({i:,}) = {got:,}, expected {want:,}"
            if mod.index_of(got, sig) != i:
                return f"sig_figs={sig}: index_of(lowest_value({i})) = {mod.index_of(got, sig)}, not {i}"
    return None


def check_ll_error(mod: ModuleType, path: str) -> str | None:
    rng = np.random.default_rng(11)
    for sig in (1, 2, 3):
        bound = 10.0**-sig
        for v in np.unique(np.exp(rng.uniform(0, np.log(2**50), 5000)).astype(np.int64)):
            v = int(v)
            i = mod.index_of(v, sig)
            lo, hi = mod.lowest_value(i, sig), mod.lowest_value(i + 1, sig)
            if not lo <= v < hi:
                return f"sig_figs={sig}: {v:,} is outside its counter's range [{lo:,}, {hi:,})"
            if (hi - 1 - lo) / max(v, 1) > bound:
                return (f"sig_figs={sig}: the counter of {v:,} spans [{lo:,}, {hi:,}): relative error "
                        f"{(hi - 1 - lo) / v:.2e} > {bound:g}")
    return None


CHECKS: dict[str, Callable[[ModuleType, str], str | None]] = {
    "co_no_reference": check_co_no_reference,
    "co_expansion": check_co_expansion,
    "co_count": check_co_count,
    "co_percentiles": check_co_percentiles,
    "co_hdrh": check_co_hdrh,
    "co_readme": check_co_readme,
    "ll_no_reference": check_ll_no_reference,
    "ll_small": check_ll_small,
    "ll_edges": check_ll_edges,
    "ll_inverse": check_ll_inverse,
    "ll_error": check_ll_error,
}


if __name__ == "__main__":
    sys.exit(pyharness.main(sys.argv[1:], CHECKS, "learner_measurement"))
