"""CPU count and pinning over ``csrc/affinity.c``.

Pinning from Python would pin the interpreter's own thread, which is rarely
what anyone wants, so Python only *probes*; the C benchmarks pin their own
threads.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from lowlat._check import int_arg
from lowlat._lib import lib


def cpu_count() -> int:
    """Online CPUs, as the core sees them."""
    return int(lib.ll_cpu_count())


def usable_cpus() -> list[int]:
    """CPUs this process may run on (its affinity mask where the OS has
    one, else all online CPUs)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(cpu_count()))


@dataclass(frozen=True)
class PinProbe:
    cpu: int
    works: bool
    reason: str


def probe_pinning(cpu: int = 0) -> PinProbe:
    """Pins a throwaway C thread to ``cpu`` and reports whether it worked."""
    c = int_arg(cpu, "cpu", minimum=0)
    if c >= cpu_count():
        raise ValueError(f"cpu must be in 0..{cpu_count() - 1} on this machine, got {c}")
    rc = int(lib.ll_affinity_probe(c))
    if rc == lib.LL_OK:
        return PinProbe(c, True, f"a thread pinned to CPU {c} ran there")
    if rc == lib.LL_ENOTSUP:
        why = "macOS has no thread pinning" if sys.platform == "darwin" else "this OS has no thread pinning"
        return PinProbe(c, False, why + "; the two-thread demos run unpinned")
    return PinProbe(c, False, f"the OS refused to pin to CPU {c} (a cpuset or container limit?)")


def bench_cpus() -> tuple[int, int]:
    """Two CPUs for a producer/consumer pair: two distinct usable CPUs where
    pinning works, else (-1, -1) meaning "leave them unpinned"."""
    cpus = usable_cpus()
    if len(cpus) < 2:
        return (-1, -1)
    a, b = cpus[0], cpus[1]
    if not (probe_pinning(a).works and probe_pinning(b).works):
        return (-1, -1)
    return (a, b)
