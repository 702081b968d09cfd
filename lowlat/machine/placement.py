"""Where the course's threads and memory go on this machine: the pair of
CPUs a producer/consumer experiment is pinned to, and the NUMA node that
holds a buffer.  Built on :mod:`lowlat.machine.topology` (what the OS says)
and :mod:`lowlat.core.affinity` (what pinning this process can do)."""

from __future__ import annotations

import sys
from typing import Any

from lowlat.core._lib import ffi, lib
from lowlat.core.affinity import probe_pinning, usable_cpus
from lowlat.machine import topology


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


def spinning_pairs_fit() -> bool:
    """Whether two spinning threads can each have a CPU all the time: two
    usable CPUs in this process's affinity mask and a CPU quota (cgroup) of
    at least two CPUs.  Online CPUs do not count: ``taskset -c 0`` leaves
    two online and one usable."""
    return len(usable_cpus()) >= 2 and topology.cpu_quota().cpus >= 2


def default_wait() -> str:
    """Spinning needs a CPU per spinning thread; with fewer usable CPUs (or a
    quota below two) two spinners take turns at scheduler speed, so yield
    instead."""
    return "spin" if spinning_pairs_fit() else "yield"
