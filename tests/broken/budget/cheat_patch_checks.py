# BROKEN: replaces the grader's check table at import. EXPECT percentiles: not implemented yet
"""Would cheat: replaces the grader's check table at import (the checks ran in this process once)."""

from __future__ import annotations

import sys

for _m in list(sys.modules.values()):
    if isinstance(getattr(_m, "CHECKS", None), dict):
        _m.CHECKS = {k: (lambda mod, path: None) for k in _m.CHECKS}


def build_report(samples_ns: dict, allotments_us: dict, total_us: float, percentile: float = 99.0) -> list[dict]:
    raise NotImplementedError


def reallocate(measured_us: dict, total_us: float) -> dict:
    raise NotImplementedError
