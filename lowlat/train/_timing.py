"""The one timing loop the training benchmarks share."""

from __future__ import annotations

import time
from typing import Callable


def interleaved(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Runs each function once per round, the rounds in A B A B ... order
    (so a change in the machine's state hits every variant alike); returns
    each function's times in seconds."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t0 = time.perf_counter_ns()
            fn()
            times[k].append((time.perf_counter_ns() - t0) / 1e9)
    return times
