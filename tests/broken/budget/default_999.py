# BROKEN: the percentile's default is 99.9, not 99.0. EXPECT percentiles: the default percentile is 99.0
"""budget_report.py - build a latency-budget report and reallocate slack.

The task (README.md): given per-stage latency samples (ns) and each stage's
allotment (us), write

  build_report(samples_ns, allotments_us, total_us, percentile=99.0)
      one row per stage, in pipeline order:
      {"stage", "allotment_us", "p_us", "over_us", "ate"}
      p_us      the stage's `percentile` in us (numpy's default method)
      over_us   max(0, p_us - allotment_us)
      ate       [(whose allotment, us), ...]: the overrun is paid first from
                the slack (allotment - p_us > 0) of the stages after it, in
                order, then of the stages before it, in order, then from the
                reserve (total_us - sum of allotments) as ("reserve", us),
                and what is left as ("over budget", us).  Slack used by one
                overrun is gone for the next.

  reallocate(measured_us, total_us)
      new allotments: each stage its measured need, scaled up so that they
      sum to total_us; ValueError if the needs already exceed total_us.

Grade with
    python -m lowlat grade budget budget_report.py
"""

from __future__ import annotations

import numpy as np


def build_report(samples_ns: dict, allotments_us: dict, total_us: float, percentile: float = 99.9) -> list[dict]:
    names = list(allotments_us)
    p_us = {k: float(np.percentile(np.asarray(samples_ns[k], dtype=float), percentile)) / 1000.0 for k in names}
    slack = {k: max(0.0, allotments_us[k] - p_us[k]) for k in names}
    reserve = max(0.0, total_us - sum(allotments_us.values()))
    rows = []
    for i, k in enumerate(names):
        over = max(0.0, p_us[k] - allotments_us[k])
        need, ate = over, []
        for other in names[i + 1 :] + names[:i]:  # downstream first, then upstream
            take = min(need, slack[other])
            if take > 0:
                ate.append((other, take))
                slack[other] -= take
                need -= take
        if need > 0 and reserve > 0:
            take = min(need, reserve)
            ate.append(("reserve", take))
            reserve -= take
            need -= take
        if need > 0:
            ate.append(("over budget", need))
        rows.append({"stage": k, "allotment_us": float(allotments_us[k]), "p_us": p_us[k], "over_us": over, "ate": ate})
    return rows


def reallocate(measured_us: dict, total_us: float) -> dict:
    need = sum(measured_us.values())
    if need > total_us:
        raise ValueError(f"the stages need {need:.1f} us, more than the {total_us} us budget")
    if need == 0:
        return {k: total_us / len(measured_us) for k in measured_us}
    return {k: v * total_us / need for k, v in measured_us.items()}
