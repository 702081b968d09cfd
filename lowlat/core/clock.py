"""Clock helpers over ``csrc/clock.c``.  All results in ns.

Reading a clock from Python costs a function call (~50-100 ns) on top of the
read itself, so these are for stamping coarse events and for reporting; the
nanosecond-scale measurements happen inside the C loops.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

from lowlat.core._lib import ffi, lib
from lowlat.core.validate import int_arg

# enum ll_tsc_kind (csrc/clock.h): which counter stamps the core's timed loops.
TSC_KINDS = {
    lib.LL_TSC_NONE: "none",
    lib.LL_TSC_X86_RDTSCP: "x86 rdtsc",
    lib.LL_TSC_ARM64: "arm64 cntvct_el0",
    lib.LL_TSC_X86_LFENCE: "x86 rdtsc (lfence-ordered: no RDTSCP)",
    lib.LL_TSC_X86_VARIABLE: "none (x86 TSC not invariant)",
}


def now_ns() -> int:
    """The monotonic clock in ns, read by the core (CLOCK_MONOTONIC;
    CLOCK_UPTIME_RAW on macOS, whose CLOCK_MONOTONIC steps in microseconds)."""
    return int(lib.ll_now_ns())


def tsc_available() -> bool:
    """True when the CPU has a user-readable, constant-rate counter (on x86:
    CPUID reports an invariant TSC)."""
    return bool(lib.ll_tsc_available())


def tsc_choice() -> str:
    """What stamps the core's timed loops and why, in one sentence: the
    counter and how its ordered reads are made, or the monotonic clock and
    the reason (no counter, a TSC that is not invariant)."""
    return ffi.string(lib.ll_tsc_choice()).decode()


def tsc_read() -> int:
    """Raw counter ticks (0 without a counter)."""
    return int(lib.ll_tsc_read())


def tsc_ticks_per_ns() -> float:
    """Counter ticks per ns, calibrated once against the monotonic clock
    (0.0 when :func:`tsc_available` is False)."""
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
    tsc_choice: str

    def as_dict(self) -> dict:
        return asdict(self)


def stamp_step_ns(reads: int = 2_000) -> float:
    """The step of the stamps that time single operations in the core's
    loops (ns), at least 1 ns (they are recorded in whole ns).  On a counter:
    the greatest common divisor of the tick differences of ``reads``
    successive reads (a hypervisor may advance the counter many ticks at a
    time), in ns; without one, the monotonic clock's smallest step."""
    reads = int_arg(reads, "reads", minimum=1)
    tpn = tsc_ticks_per_ns()
    if tpn <= 0:
        return max(1.0, clock_info(10_000).monotonic_resolution_ns)
    read = lib.ll_tsc_read
    prev, ticks = int(read()), 0
    for _ in range(reads):
        now = int(read())
        ticks = math.gcd(ticks, now - prev)
        prev = now
        if ticks == 1:
            break
    return max(1.0, max(ticks, 1) / tpn)


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
        tsc_choice=tsc_choice(),
    )
