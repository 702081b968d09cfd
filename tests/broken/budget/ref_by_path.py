# BROKEN: loads the reference by its path, found with find_spec("lowlat") (None in the child: lowlat does not exist there). EXPECT *: has no attribute
"""Takes reallocate from the reference, loaded from its file by path."""

from __future__ import annotations

import importlib.util
import os

import numpy as np

_where = os.path.join(os.path.dirname(importlib.util.find_spec("lowlat").origin), "bud" + "get.py")
_spec = importlib.util.spec_from_file_location("not_the_reference", _where)
_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ref)


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
    return _ref.reallocate(measured_us, total_us)
