"""CPU count and pinning over ``csrc/affinity.c``.

Pinning from Python would pin the interpreter's own thread, which is rarely
what anyone wants, so Python only *probes*; the C benchmarks pin their own
threads.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from lowlat import topology
from lowlat._check import int_arg
from lowlat._lib import ffi, lib


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
    usable = usable_cpus()
    if c not in usable:
        return PinProbe(c, False, f"CPU {c} is outside this process's affinity mask (usable: {_cpu_list(usable)})")
    rc = int(lib.ll_affinity_probe(c))
    if rc == lib.LL_OK:
        return PinProbe(c, True, f"a thread pinned to CPU {c} ran there")
    if rc == lib.LL_ENOTSUP:
        why = "macOS has no thread pinning" if sys.platform == "darwin" else "this OS has no thread pinning"
        return PinProbe(c, False, why + "; the two-thread demos run unpinned")
    return PinProbe(c, False, f"the OS refused to pin to CPU {c} (a cpuset or container limit?)")


def _cpu_list(cpus: list[int]) -> str:
    return ", ".join(str(c) for c in cpus)


def bench_cpus() -> tuple[int, int]:
    """Two CPUs for a producer/consumer pair, inside this process's affinity
    mask, on two different physical cores whenever such a pair exists (never
    SMT siblings then: they share one core's caches and execution units), and
    only where pinning works; else (-1, -1), meaning "leave them unpinned"."""
    pair = topology.pick_pair(usable_cpus(), topology.cpus())
    if pair is None:
        return (-1, -1)
    a, b = pair
    if not (probe_pinning(a).works and probe_pinning(b).works):
        return (-1, -1)
    return (a, b)


def numa_node_of(memory: Any) -> int:
    """The NUMA node holding the first byte of ``memory``: a cffi pointer
    (e.g. a ring the caller owns) or any object with the buffer protocol
    (a numpy array, a bytearray), which the caller keeps alive.  -1 where
    the OS cannot say (macOS; a page never touched).  Asks the kernel
    (``get_mempolicy``, csrc/affinity.c) and, where a container refuses that
    call, reads ``/proc/self/numa_maps``.  0 on a machine with one node."""
    if isinstance(memory, ffi.CData):
        if ffi.typeof(memory).kind != "pointer" or memory == ffi.NULL:
            raise TypeError(f"memory must be a non-NULL cffi pointer or a buffer, got {ffi.typeof(memory).cname}")
        ptr = ffi.cast("void *", memory)
    else:
        try:
            view = memoryview(memory)
        except TypeError:
            raise TypeError(
                f"memory must be a cffi pointer or support the buffer protocol, got {type(memory).__name__}"
            ) from None
        if view.nbytes == 0:
            raise ValueError("memory is empty: no byte to locate")
        ptr = ffi.cast("void *", ffi.from_buffer(view))
    node = int(lib.ll_numa_node_of(ptr))
    if node < 0 and sys.platform.startswith("linux"):
        node = topology.numa_node_from_maps(int(ffi.cast("uintptr_t", ptr)))
    return node
