# BROKEN: percentile sorts a float copy: values above 2^53 lose their low bits. EXPECT rank_rule: lose their low bits
"""Exercise 04a: coordinated-omission correction with numpy.  The task is in
README.md; check it with ``python -m lowlat grade co_correct co_correct.py``."""

from __future__ import annotations

import numpy as np


def corrected(samples_ns: np.ndarray, interval_ns: int) -> np.ndarray:
    """The samples plus the ones a fixed-interval load would have recorded
    while each slow request was outstanding: for every value v, also
    v - I, v - 2I, ... as long as the value is still >= I (nothing extra
    when I <= 0 or v <= I).  Any order; int64."""
    v = np.asarray(samples_ns, dtype=np.int64).ravel()
    if interval_ns <= 0 or v.size == 0:
        return v.copy()
    extra = np.maximum(v // interval_ns - 1, 0)  # how many back-filled values each sample adds
    owner = np.repeat(np.arange(v.size), extra)
    # Position of each back-filled value within its sample's run: 1, 2, ..., extra.
    step = np.arange(owner.size) - np.repeat(np.cumsum(extra) - extra, extra) + 1
    return np.concatenate([v, v[owner] - step * interval_ns])


def percentile(values: np.ndarray, p: float) -> int:
    """HdrHistogram's rule: sort; the value at rank max(1, int(p / 100 * n + 0.5))
    (1-based); 0 for an empty array."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    if v.size == 0:
        return 0
    rank = max(1, int(p / 100.0 * v.size + 0.5))
    return int(v[min(rank, v.size) - 1])


def corrected_percentiles(
    samples_ns: np.ndarray, interval_ns: int, percentiles: tuple[float, ...] = (50, 90, 99, 99.9, 100)
) -> dict[float, int]:
    """{p: value} of the corrected samples."""
    c = corrected(samples_ns, interval_ns)
    return {p: percentile(c, p) for p in percentiles}
