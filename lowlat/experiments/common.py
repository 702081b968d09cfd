"""Small pieces the experiments share: which CPUs a two-thread loop pins to,
and turning a C loop's "ns or negative status" result into ns or an error."""

from __future__ import annotations

from lowlat.core.errors import check_status
from lowlat.machine.placement import bench_cpus


def pins(pin: bool) -> tuple[int, int]:
    """The two CPUs of :func:`lowlat.machine.placement.bench_cpus`, or (-1, -1): not pinned."""
    return bench_cpus() if pin else (-1, -1)


def ns(value: float, what: str) -> float:
    """``value`` (ns) from a C loop that returns a negative ll_status on failure."""
    check_status(int(value) if value < 0 else 0, what)
    return float(value)
