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
    # YOUR CODE HERE (see README.md)
    raise NotImplementedError("see README.md")


def percentile(values: np.ndarray, p: float) -> int:
    """HdrHistogram's rule: sort; the value at rank max(1, int(p / 100 * n + 0.5))
    (1-based); 0 for an empty array."""
    # YOUR CODE HERE (see README.md)
    raise NotImplementedError("see README.md")


def corrected_percentiles(
    samples_ns: np.ndarray, interval_ns: int, percentiles: tuple[float, ...] = (50, 90, 99, 99.9, 100)
) -> dict[float, int]:
    """{p: value} of the corrected samples."""
    # YOUR CODE HERE (see README.md)
    raise NotImplementedError("see README.md")
