"""Checks of the log-linear index exercise, run one per process by
``lowlat.grading.pyharness``.  The reference is the C core's histogram
(``csrc/hist.c``)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np

from lowlat._lib import lib
from lowlat.grading.pyharness import refuses_reference
from lowlat.hist import Histogram

FORBIDDEN = ["lowlat", "hdrh"]
ADVICE = "write it with numpy only (the grader compares against them)"


def _core(sig: int) -> Histogram:
    return Histogram(1, 2**62, sig)


def _edges(sig: int) -> list[int]:
    s = 1 << (2 * 10**sig - 1).bit_length()
    out = {0, 1, 2, s // 2 - 1, s // 2, s - 1, s, s + 1, 2 * s - 1, 2 * s, 2 * s + 1}
    for k in range(1, 62):
        out |= {(1 << k) - 1, 1 << k, (1 << k) + 1, 3 << (k - 1) if k > 1 else 3}
    return sorted(out)


def check_no_reference(mod: ModuleType, path: str) -> str | None:
    return refuses_reference(path, FORBIDDEN, ADVICE)


def check_small(mod: ModuleType, path: str) -> str | None:
    for sig in (1, 2, 3):
        s = 1 << (2 * 10**sig - 1).bit_length()
        for v in range(0, s, max(1, s // 64)):
            if mod.index_of(v, sig) != v:
                return f"sig_figs={sig}: below S={s} every value has its own counter: index_of({v}) must be {v}"
    return None


def check_edges(mod: ModuleType, path: str) -> str | None:
    for sig in (1, 2, 3, 4):
        h = _core(sig)
        for v in _edges(sig):
            got, want = mod.index_of(v, sig), h.index_of(v)
            if got != want:
                return f"sig_figs={sig}: index_of({v:,}) = {got:,}, expected {want:,}"
    return None


def check_inverse(mod: ModuleType, path: str) -> str | None:
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


def check_error(mod: ModuleType, path: str) -> str | None:
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
                return (
                    f"sig_figs={sig}: the counter of {v:,} spans [{lo:,}, {hi:,}): relative error "
                    f"{(hi - 1 - lo) / v:.2e} > {bound:g}"
                )
    return None


CHECKS: dict[str, Callable[[ModuleType, str], str | None]] = {
    "no_reference": check_no_reference,
    "small": check_small,
    "edges": check_edges,
    "inverse": check_inverse,
    "error": check_error,
}
