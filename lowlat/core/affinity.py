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

from lowlat.core._lib import lib
from lowlat.core.validate import int_arg


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


def cpu_arg(value: Any, name: str = "cpu") -> int:
    """``value`` checked as a CPU this process may run on: an int (numpy
    ints too, never a bool) in its affinity mask; None means "not pinned"
    and gives -1, the C core's value for it.  One rule and one message for
    every wrapper that takes a CPU."""
    if value is None:
        return -1
    c = int_arg(value, name, minimum=0)
    usable = usable_cpus()
    if c not in usable:
        raise ValueError(f"{name} {c} is outside this process's affinity mask (usable: {_cpu_list(usable)})")
    return c


def cpu_pair(value: Any, name: str = "cpus", roles: tuple[str, str] = ("producer", "consumer")) -> tuple[int, int]:
    """``value`` checked as a pair of CPUs for two threads (``roles`` name
    them in messages): None, or (-1, -1) (the C core's value), gives
    (-1, -1), not pinned; otherwise a tuple or list of two CPUs as
    :func:`cpu_arg` accepts them, both given (one pinned and one not would
    measure neither placement).  The two may be equal: the caller decides
    whether two threads may share a CPU.  The one check of a CPU pair."""
    if value is None:
        return (-1, -1)
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name} must be a ({roles[0]}, {roles[1]}) pair or None (not pinned), got {value!r}")
    unpinned = [v is None or (isinstance(v, int) and not isinstance(v, bool) and v == -1) for v in value]
    if all(unpinned):
        return (-1, -1)
    pair = tuple(
        -1 if off else cpu_arg(v, f"{name}[{i}] ({roles[i]} CPU)") for i, (v, off) in enumerate(zip(value, unpinned))
    )
    if any(unpinned):
        raise ValueError(f"{name} must name both CPUs or neither (None: not pinned), got {value!r}")
    return (pair[0], pair[1])
