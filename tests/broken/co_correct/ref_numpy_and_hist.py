# BROKEN: import numpy as np, lowlat.core.hist (the reference). EXPECT no_reference: the file imports lowlat
# ruff: noqa: E401, F401, I001
"""A correct correction that also imports the reference (lowlat.core.hist)."""

from __future__ import annotations

import numpy as np, lowlat.core.hist


def corrected(samples_ns: np.ndarray, interval_ns: int) -> np.ndarray:
    v = np.asarray(samples_ns, dtype=np.int64).ravel()
    if interval_ns <= 0:
        return v.copy()
    k = np.maximum(v // interval_ns - 1, 0)
    src = np.repeat(v, k)
    starts = np.repeat(np.cumsum(k) - k, k)
    j = np.arange(src.size) - starts + 1
    return np.concatenate([v, src - j * interval_ns])


def percentile(values: np.ndarray, p: float) -> int:
    v = np.sort(np.asarray(values, dtype=np.int64))
    if v.size == 0:
        return 0
    rank = max(1, int(p / 100.0 * v.size + 0.5))
    return int(v[min(rank, v.size) - 1])


def corrected_percentiles(samples_ns, interval_ns, percentiles=(50, 90, 99, 99.9, 100)):
    c = corrected(samples_ns, interval_ns)
    return {p: percentile(c, p) for p in percentiles}
