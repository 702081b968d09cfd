"""Checks of the log-linear index exercise.  They run in the grader's
process (see ``lowlat.grading.pyharness``); the learner's module runs in a
child and is called over a pipe, many calls per round trip
(``mod.map``).  The reference is the C core's histogram (``csrc/hist.c``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lowlat.core._lib import lib
from lowlat.core.hist import Histogram
from lowlat.grading.pyharness import Learner, no_reference

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


def _ints(mod: Learner, fn: str, calls: list[tuple[int, int]]) -> list[int]:
    """``[mod.fn(*c) for c in calls]``, each result an integer."""
    out = mod.map(fn, calls)
    for c, got in zip(calls, out):
        if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
            raise AssertionError(f"{fn}{c} returned {got!r} ({type(got).__name__}), not an integer")
    return [int(x) for x in out]


def check_no_reference(mod: Learner, path: str) -> str | None:
    return no_reference(mod, path, FORBIDDEN, ADVICE)


def check_small(mod: Learner, path: str) -> str | None:
    for sig in (1, 2, 3):
        s = 1 << (2 * 10**sig - 1).bit_length()
        values = list(range(0, s, max(1, s // 64)))
        for v, got in zip(values, _ints(mod, "index_of", [(v, sig) for v in values])):
            if got != v:
                return f"sig_figs={sig}: below S={s} every value has its own counter: index_of({v}) must be {v}"
    return None


def check_edges(mod: Learner, path: str) -> str | None:
    for sig in (1, 2, 3, 4):
        h = _core(sig)
        values = _edges(sig)
        for v, got in zip(values, _ints(mod, "index_of", [(v, sig) for v in values])):
            want = h.index_of(v)
            if got != want:
                return f"sig_figs={sig}: index_of({v:,}) = {got:,}, expected {want:,}"
    return None


def check_inverse(mod: Learner, path: str) -> str | None:
    for sig in (1, 2, 3, 4):
        h = _core(sig)
        n = h.layout.counts_len
        indices = list(range(0, 4 * h.layout.sub_bucket_count)) + list(range(0, n, 37)) + [n - 1]
        lows = _ints(mod, "lowest_value", [(i, sig) for i in indices])
        for i, got in zip(indices, lows):
            want = int(lib.ll_hist_value_at_index(h._h, i))
            if got != want:
                return f"sig_figs={sig}: lowest_value({i:,}) = {got:,}, expected {want:,}"
        back = _ints(mod, "index_of", [(v, sig) for v in lows])
        for i, v, j in zip(indices, lows, back):
            if j != i:
                return f"sig_figs={sig}: index_of(lowest_value({i})) = index_of({v}) = {j}, not {i}"
    return None


def check_error(mod: Learner, path: str) -> str | None:
    rng = np.random.default_rng(11)
    for sig in (1, 2, 3):
        bound = 10.0**-sig
        values = [int(v) for v in np.unique(np.exp(rng.uniform(0, np.log(2**50), 5000)).astype(np.int64))]
        indices = _ints(mod, "index_of", [(v, sig) for v in values])
        lows = _ints(mod, "lowest_value", [(i, sig) for i in indices])
        highs = _ints(mod, "lowest_value", [(i + 1, sig) for i in indices])
        for v, lo, hi in zip(values, lows, highs):
            if not lo <= v < hi:
                return f"sig_figs={sig}: {v:,} is outside its counter's range [{lo:,}, {hi:,})"
            if (hi - 1 - lo) / max(v, 1) > bound:
                return (
                    f"sig_figs={sig}: the counter of {v:,} spans [{lo:,}, {hi:,}): relative error "
                    f"{(hi - 1 - lo) / v:.2e} > {bound:g}"
                )
    return None


CHECKS: dict[str, Callable[[Any, str], str | None]] = {
    "no_reference": check_no_reference,
    "small": check_small,
    "edges": check_edges,
    "inverse": check_inverse,
    "error": check_error,
}
