"""The hidden taxes of chapter 01, each measured by a C loop
(``csrc/bench/bench_taxes.c``): a mutex, a system call, a dependent load from
L1 to DRAM, one histogram record.  The clock reads are
:func:`lowlat.core.clock.clock_info`; the page fault is
:func:`lowlat.experiments.alloc.page_faults`.  All times in ns."""

from __future__ import annotations

from lowlat.core._lib import lib
from lowlat.core.blas import quiet_blas
from lowlat.core.hist import Histogram
from lowlat.core.validate import int_arg
from lowlat.experiments.common import ns, pins


def mutex_ns(iterations: int = 1_000_000, *, contended: bool = False, pin: bool = True) -> float:
    """One pthread mutex lock+unlock (ns); contended: two threads on it."""
    a, b = pins(pin)
    n = int_arg(iterations, "iterations", minimum=1)
    with quiet_blas():
        return ns(lib.ll_bench_mutex(n, int(contended), a, b), "mutex benchmark")


def syscall_ns(iterations: int = 200_000) -> float:
    """One trivial system call (getppid), ns."""
    return ns(lib.ll_bench_syscall(int_arg(iterations, "iterations", minimum=1)), "syscall benchmark")


def chase_ns(nbytes: int, steps: int = 2_000_000, seed: int = 3) -> float:
    """ns per dependent load while chasing a random cycle through ``nbytes``."""
    int_arg(nbytes, "nbytes", minimum=2 * int(lib.LL_CACHELINE))  # at least two line-sized nodes
    return ns(lib.ll_bench_chase(nbytes, int_arg(steps, "steps", minimum=1), seed), "pointer-chase benchmark")


def hist_record_ns(n: int = 10_000_000, *, exported: bool = True) -> float:
    """ns per record in a C loop (values spread over 4 decades): through the
    exported ``ll_hist_record`` (a function call, as a library user pays),
    or, ``exported=False``, the inlined record the core's own loops use."""
    h = Histogram()
    return ns(lib.ll_bench_hist_record(h.c_handle, int_arg(n, "n", minimum=1), 5, int(exported)), "histogram benchmark")


__all__ = ["chase_ns", "hist_record_ns", "mutex_ns", "syscall_ns"]
