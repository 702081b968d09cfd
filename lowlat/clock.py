"""Clock helpers over ``csrc/clock.c``.  All results in ns.

Reading a clock from Python costs a function call (~50-100 ns) on top of the
read itself, so these are for stamping coarse events and for reporting; the
nanosecond-scale measurements happen inside the C loops.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from lowlat._lib import ffi, lib

TSC_KINDS = {0: "none", 1: "x86 rdtsc", 2: "arm64 cntvct_el0"}


def now_ns() -> int:
    """CLOCK_MONOTONIC in ns, read by the core."""
    return int(lib.ll_now_ns())


def tsc_available() -> bool:
    """True when the CPU has a user-readable, constant-rate counter."""
    return bool(lib.ll_tsc_available())


def tsc_read() -> int:
    """Raw counter ticks (0 without a counter)."""
    return int(lib.ll_tsc_read())


def tsc_ticks_per_ns() -> float:
    """Counter ticks per ns, calibrated once against CLOCK_MONOTONIC."""
    return float(lib.ll_tsc_ticks_per_ns())


def tsc_to_ns(ticks: int) -> int:
    """A tick difference in ns."""
    if ticks < 0:
        raise ValueError(f"ticks must be >= 0, got {ticks}")
    return int(lib.ll_tsc_to_ns(ticks))


@dataclass(frozen=True)
class ClockInfo:
    """What each clock costs to read here and how finely it steps (ns)."""

    monotonic_read_ns: float
    coarse_read_ns: float
    tsc_read_ns: float
    tsc_ordered_read_ns: float
    monotonic_resolution_ns: float
    coarse_resolution_ns: float
    monotonic_getres_ns: float
    tsc_ticks_per_ns: float
    tsc_available: bool
    tsc_kind: str
    python_perf_counter_ns: float

    def as_dict(self) -> dict:
        return asdict(self)


def python_perf_counter_cost(iterations: int = 200_000) -> float:
    """ns per ``time.perf_counter_ns()`` call in a Python loop (loop included:
    that is what timing from Python costs)."""
    pc = time.perf_counter_ns
    t0 = pc()
    for _ in range(iterations):
        pc()
    return (pc() - t0) / iterations


def clock_info(iterations: int = 1_000_000) -> ClockInfo:
    """Measures every clock's read cost and resolution in C (~0.1 s)."""
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    c = ffi.new("ll_clock_info *")
    lib.ll_clock_measure(c, iterations)
    return ClockInfo(
        monotonic_read_ns=c.monotonic_read_ns,
        coarse_read_ns=c.coarse_read_ns,
        tsc_read_ns=c.tsc_read_ns,
        tsc_ordered_read_ns=c.tsc_ordered_read_ns,
        monotonic_resolution_ns=c.monotonic_resolution_ns,
        coarse_resolution_ns=c.coarse_resolution_ns,
        monotonic_getres_ns=c.monotonic_getres_ns,
        tsc_ticks_per_ns=c.tsc_ticks_per_ns,
        tsc_available=bool(c.tsc_available),
        tsc_kind=TSC_KINDS.get(c.tsc_kind, "unknown"),
        python_perf_counter_ns=python_perf_counter_cost(),
    )
