# BROKEN: a parenthesised multi-line import of the reference. EXPECT no_reference: the file imports lowlat.experiments.budget
# ruff: noqa: I001
"""Takes reallocate from the reference, through a parenthesised multi-line import."""

from __future__ import annotations

import numpy as np

from lowlat.experiments.budget import (
    Budget,  # noqa: F401
    reallocate as _reference_reallocate,
)


def build_report(samples_ns: dict, allotments_us: dict, total_us: float, percentile: float = 99.0) -> list[dict]:
    stages = list(allotments_us)
    p = {s: float(np.percentile(np.asarray(samples_ns[s], dtype=float), percentile)) / 1e3 for s in stages}
    spare = {s: max(0.0, allotments_us[s] - p[s]) for s in stages}
    reserve = max(0.0, total_us - sum(allotments_us.values()))
    rows = []
    for i, s in enumerate(stages):
        over = max(0.0, p[s] - allotments_us[s])
        left, ate = over, []
        for other in stages[i + 1 :] + stages[:i]:
            take = min(left, spare[other])
            if take > 0:
                ate.append((other, take))
                spare[other] -= take
                left -= take
        if left > 0 and reserve > 0:
            take = min(left, reserve)
            ate.append(("reserve", take))
            reserve -= take
            left -= take
        if left > 0:
            ate.append(("over budget", left))
        rows.append({"stage": s, "allotment_us": float(allotments_us[s]), "p_us": p[s], "over_us": over, "ate": ate})
    return rows


def reallocate(measured_us: dict, total_us: float) -> dict:
    return _reference_reallocate(measured_us, total_us)
