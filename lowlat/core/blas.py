"""Keeping numpy's BLAS thread pool out of pinned experiments.

After a parallel BLAS call (any large enough numpy matrix product) OpenBLAS
leaves its worker threads spinning for a while, waiting for more work,
before they go to sleep: about 0.1-0.2 s on the course's VM.  A worker
spinning on the CPU a pinned producer or consumer owns takes scheduler
slices (~4 ms) from it, and those slices land in the experiment's P99 and
in any core-to-core sample.  Capping the pool with ``threadpoolctl`` stops
new parallel calls from waking workers, but does not stop one that already
spins, so :func:`quiet_blas` does both: it caps the pool for the duration of
the block and first waits (bounded) until no other thread of this process
is burning CPU.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

_TASKS = "/proc/self/task"


def _cpu_ns(tid: str) -> int | None:
    """CPU time (ns) a thread of this process has used, or None if unknown."""
    try:
        with open(f"{_TASKS}/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    try:  # utime + stime in clock ticks, a coarser fallback
        with open(f"{_TASKS}/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def busy_threads(window_s: float = 0.01, share: float = 0.5) -> list[int]:
    """Thread ids of this process, other than the caller, that used more than
    ``share`` of a CPU during a ``window_s`` (s) sleep of the caller.  Empty
    where the OS does not say (no /proc)."""
    if not os.path.isdir(_TASKS):
        return []
    me = str(threading.get_native_id())
    tids = [t for t in os.listdir(_TASKS) if t != me]
    start = {t: _cpu_ns(t) for t in tids}
    t0 = time.perf_counter_ns()
    time.sleep(window_s)
    elapsed = time.perf_counter_ns() - t0
    out = []
    for t, before in start.items():
        after = _cpu_ns(t)
        if before is not None and after is not None and after - before > share * elapsed:
            out.append(int(t))
    return out


@dataclass
class Quiet:
    """What :func:`quiet_blas` did: ``capped`` whether a BLAS pool was capped
    (threadpoolctl present), ``waited_s`` (s) how long it waited for spinning
    threads, ``still_busy`` the threads still burning CPU when it gave up."""

    capped: bool = False
    waited_s: float = 0.0
    still_busy: int = 0


@contextmanager
def quiet_blas(max_wait_s: float = 1.0) -> Iterator[Quiet]:
    """Within the block, BLAS pools run one thread (threadpoolctl) and no
    other thread of this process was spinning when it began (waits up to
    ``max_wait_s`` seconds for spinners to go idle)."""
    q = Quiet()
    with ExitStack() as stack:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # optional: without it only the wait below applies
            pass
        else:
            stack.enter_context(threadpool_limits(limits=1, user_api="blas"))
            q.capped = True
        t0 = time.perf_counter()
        busy = busy_threads()
        while busy and time.perf_counter() - t0 < max_wait_s:
            busy = busy_threads()
        q.waited_s = time.perf_counter() - t0
        q.still_busy = len(busy)
        yield q


__all__ = ["Quiet", "busy_threads", "quiet_blas"]
