# BROKEN: a negative interval loops until memory runs out (README: no correction). EXPECT expansion: I <= 0
"""Coordinated-omission correction as a loop that never ends for a negative interval."""

from __future__ import annotations

import numpy as np


def corrected(samples_ns: np.ndarray, interval_ns: int) -> np.ndarray:
    out = []
    for v in np.asarray(samples_ns, dtype=np.int64).ravel().tolist():
        out.append(v)
        if interval_ns == 0:
            continue
        x = v - interval_ns
        while x >= interval_ns:  # a negative interval: x only grows
            out.append(x)
            x -= interval_ns
    return np.array(out, dtype=np.int64)


def percentile(values: np.ndarray, p: float) -> int:
    v = np.sort(np.asarray(values, dtype=np.int64))
    if v.size == 0:
        return 0
    rank = max(1, int(p / 100.0 * v.size + 0.5))
    return int(v[min(rank, v.size) - 1])


def corrected_percentiles(samples_ns, interval_ns, percentiles=(50, 90, 99, 99.9, 100)):
    c = corrected(samples_ns, interval_ns)
    return {p: percentile(c, p) for p in percentiles}
