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


def build_report(samples_ns: dict, allotments_us: dict, total_us: float, percentile: float = 99.0) -> list[dict]:
    # YOUR CODE HERE (see README.md)
    raise NotImplementedError("see README.md")


def reallocate(measured_us: dict, total_us: float) -> dict:
    # YOUR CODE HERE (see README.md)
    raise NotImplementedError("see README.md")
