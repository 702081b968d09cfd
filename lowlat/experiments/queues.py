"""Queue experiments (chapters 03, 05), run by ``csrc/bench/bench_spsc.c``:
the SPSC ring between two C threads (throughput, round trip), one cache line
bounced between two cores (the floor under every hand-off), and, for
contrast, queues between two *Python* threads.  All times in ns."""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowlat.core._lib import ffi, lib
from lowlat.core.affinity import cpu_pair, probe_pinning, usable_cpus
from lowlat.core.blas import quiet_blas
from lowlat.core.errors import check_status
from lowlat.core.hist import Histogram
from lowlat.core.spsc import SpscQueue, ring_flags
from lowlat.core.validate import int_arg, power_of_two
from lowlat.core.wait import wait_code
from lowlat.experiments.common import ns, pins
from lowlat.machine import topology
from lowlat.machine.placement import default_wait
from lowlat.method.interleave import interleave, median

# ---- the ring between two C threads -------------------------------------------------

# How a per-record benchmark reaches the ring (``api=``): the inlined hot path,
# the exported ``ll_spsc_try_push_u64/try_pop_u64`` (True: a call per record,
# the value in a register), the public ``ll_spsc_try_push/try_pop`` (the
# record by pointer), or "bare": the inlined path, each record's result then
# passed through a call to an empty function: the price of a call alone (a
# call, a return and the reloads a call forces, with no work in them).
API_PATHS = {"inline": 0, "u64": 1, "record": 2, "bare": 3}


def api_code(api: bool | str) -> int:
    """The C benchmarks' ``api`` code of ``api`` (False/True or a name of
    :data:`API_PATHS`)."""
    if isinstance(api, bool):
        return int(api)
    if isinstance(api, str) and api in API_PATHS:
        return API_PATHS[api]
    raise ValueError(f"api must be False, True or one of {', '.join(map(repr, API_PATHS))}, got {api!r:.40}")


@dataclass
class SpscRun:
    items: int
    seconds: float
    items_per_s: float
    errors: int
    full_waits: int
    empty_waits: int
    pinned: bool
    mean_rtt_ns: float = 0.0
    rtt: Histogram | None = field(repr=False, default=None)

    @classmethod
    def from_result(cls, items: int, out: Any, rtt: Histogram | None = None) -> SpscRun:
        """From the core's ``ll_spsc_bench_result`` (``rtt`` for the ping-pong)."""
        return cls(
            items,
            out.seconds,
            out.items_per_s,
            int(out.errors),
            int(out.full_waits),
            int(out.empty_waits),
            out.producer_pinned == 0 and out.consumer_pinned == 0,
            out.mean_rtt_ns if rtt is not None else 0.0,
            rtt,
        )


def _spsc_cfg(
    capacity: int,
    items: int,
    padded: bool,
    cached: bool,
    pin: bool,
    wait: str | None,
    batch: int,
    cpus: tuple[int, int] | None = None,
    api: bool | str = False,
    spread: bool = False,
    refill: int = 0,
    adjacent: bool = False,
):
    capacity = power_of_two(capacity)
    flags = ring_flags(padded=padded, cached=cached, spread=spread, adjacent=adjacent)
    refill = int_arg(refill, "refill", minimum=0, maximum=capacity)
    prod, cons = cpu_pair(cpus) if cpus is not None else pins(pin)
    w = wait_code(wait or default_wait())
    return ffi.new(
        "ll_spsc_bench_cfg *",
        {
            "capacity": capacity,
            "items": int_arg(items, "items", minimum=1),
            "flags": flags,
            "pair": {"producer_cpu": prod, "consumer_cpu": cons, "producer_wait": w, "consumer_wait": w},
            "batch": int_arg(batch, "batch", minimum=0),
            "api": api_code(api),
            "refill": refill,
        },
    )


def spsc_throughput(
    capacity: int = 1024,
    items: int = 10_000_000,
    *,
    padded: bool = True,
    cached: bool = True,
    pin: bool = True,
    wait: str | None = None,
    batch: int = 0,
    cpus: tuple[int, int] | None = None,
    api: bool | str = False,
    spread: bool = False,
    refill: int = 0,
    adjacent: bool = False,
) -> SpscRun:
    """Two C threads move 1..items (uint64) through one ring; the consumer
    checks order.  batch=0: one try_push/try_pop per record (``api``: True or
    "u64", the exported ``ll_spsc_try_push_u64/try_pop_u64``; "record", the
    public ``ll_spsc_try_push/try_pop``: a call per record as a library user
    makes; "bare", the inlined path and an empty call per record, a call's own price;
    else the inlined path); batch=n: push_many/pop_many of n.
    ``cpus=(p, c)`` pins producer and consumer to those CPUs ((-1, -1):
    unpinned; the same CPU twice puts both on one core; checked by
    :func:`lowlat.core.affinity.cpu_pair`) and overrides ``pin``.
    ``spread`` / ``adjacent``: the padded cursors a 128-byte line pair apart
    / on adjacent lines (at most one; ignored when not ``padded``); neither:
    the placement :func:`lowlat.core.spsc.default_layout` names for this CPU.  ``refill`` (per-record
    calls, 0..capacity): a producer that finds the ring full waits until
    that many slots are free before it pushes again (0 or 1: it retries at
    once, refilling each slot as the consumer frees it)."""
    cfg = _spsc_cfg(capacity, items, padded, cached, pin, wait, batch, cpus, api, spread, refill, adjacent)
    out = ffi.new("ll_spsc_bench_result *")
    with quiet_blas():  # no spinning BLAS worker on the pinned CPUs
        check_status(lib.ll_bench_spsc_throughput(cfg, out), "SPSC throughput benchmark")
    return SpscRun.from_result(int(cfg.items), out)


def spsc_rtt(
    capacity: int = 1024,
    round_trips: int = 100_000,
    *,
    pin: bool = True,
    wait: str | None = None,
    api: bool | str = False,
) -> SpscRun:
    """Ping-pong over two rings; every round trip timed into ``rtt``
    (``api``: through the exported calls, as in :func:`spsc_throughput`,
    else the inlined path)."""
    cfg = _spsc_cfg(capacity, round_trips, True, True, pin, wait, 0, api=api)
    h = Histogram(1, 10**10, 3)
    out = ffi.new("ll_spsc_bench_result *")
    with quiet_blas():
        check_status(lib.ll_bench_spsc_rtt(cfg, h.c_handle, out), "SPSC round-trip benchmark")
    return SpscRun.from_result(int(cfg.items), out, h)


def spsc_op_ns(items: int = 2_000_000, *, api: bool | str = False) -> float:
    """One record pushed and popped by one thread (ns per record): bursts of
    64 through a ring of 1024 u64 records, on the inlined path or (``api``)
    through the exported calls or with an empty call per record (as in
    :func:`spsc_throughput`).  No cache line
    leaves the core, so the two paths differ only by the call; between two
    cores the line transfers dominate instead (:func:`spsc_throughput`)."""
    n = int_arg(items, "items", minimum=1)
    per = ffi.new("double *")
    errors = ffi.new("uint64_t *")
    check_status(lib.ll_bench_spsc_op(n, api_code(api), per, errors), "SPSC per-record benchmark")
    if errors[0]:
        raise AssertionError(f"SPSC per-record benchmark lost or reordered {errors[0]} records")
    return float(per[0])


def c2c_one_way_ns(round_trips: int = 50_000, *, pin: bool = True, wait: str | None = None) -> float:
    """One-way core-to-core latency: a cache line bounced between two
    threads, half the median of per-round-trip times (ns).

    NaN when this process has fewer than two usable CPUs: two threads that
    share one CPU hand the line over only when the scheduler switches
    between them, so the figure would be a scheduler time slice, not a
    cache-line transfer.  Callers report NaN as "unavailable"."""
    if len(usable_cpus()) < 2:
        return math.nan
    a, b = pins(pin)
    n = int_arg(round_trips, "round_trips", minimum=1)
    with quiet_blas():
        r = lib.ll_bench_c2c(n, a, b, wait_code(wait or default_wait()))
    return ns(r, "core-to-core benchmark")


def c2c_between(cpu_a: int, cpu_b: int, round_trips: int = 20_000, *, wait: str | None = None) -> float:
    """One-way latency (ns) of a cache line bounced between threads pinned
    to ``cpu_a`` and ``cpu_b`` (half the median round trip, as
    :func:`c2c_one_way_ns`).  NaN when this process has fewer than two usable
    CPUs or pinning does not work here (macOS): an unpinned figure would not
    say which pair it measured.  ValueError for the same CPU twice or a CPU
    outside this process's affinity mask."""
    a, b = cpu_pair((cpu_a, cpu_b), "(cpu_a, cpu_b)", ("a", "b"))
    if a < 0:
        raise ValueError("cpu_a and cpu_b must be CPUs: a core-to-core latency needs both ends pinned")
    if a == b:
        raise ValueError(f"cpu_a and cpu_b must differ, got {a} twice (one CPU hands nothing to another)")
    usable = usable_cpus()
    n = int_arg(round_trips, "round_trips", minimum=1)
    if len(usable) < 2 or not (probe_pinning(a).works and probe_pinning(b).works):
        return math.nan
    with quiet_blas():
        r = lib.ll_bench_c2c(n, a, b, wait_code(wait or default_wait()))
    return ns(r, "core-to-core benchmark")


def placement_c2c(rounds: int = 5, round_trips: int = 20_000) -> dict[str, tuple[tuple[int, int], list[float]]]:
    """For each kind of CPU pair this process may use (SMT siblings, two
    cores sharing one last-level cache, two LLC groups, two NUMA nodes: see
    :func:`lowlat.machine.topology.placement_pairs`), the pair measured and its
    one-way core-to-core latency per round (ns), the kinds interleaved over
    ``rounds`` rounds.  Empty with fewer than two usable CPUs or no topology."""
    rounds = int_arg(rounds, "rounds", minimum=1)
    pairs = topology.placement_pairs(usable_cpus(), topology.cpus())
    if len(usable_cpus()) < 2 or not pairs:
        return {}

    def one(ab: tuple[int, int]) -> Callable[[], float]:
        return lambda: c2c_between(ab[0], ab[1], round_trips)

    res = interleave({k: one(ab) for k, ab in pairs.items()}, rounds)
    return {k: (pairs[k], res[k]) for k in pairs}


def bench_keys(quick: bool) -> dict[str, float]:
    """``smt_sibling_c2c_ns``: one-way core-to-core latency between two SMT
    siblings of one core (ns, median of rounds); NaN without a usable sibling
    pair or with fewer than two usable CPUs.  About 0.2 s (quick) or 1 s."""
    pairs = topology.placement_pairs(usable_cpus(), topology.cpus())
    sib = pairs.get(topology.PAIR_KINDS[0])
    if sib is None or len(usable_cpus()) < 2:
        return {"smt_sibling_c2c_ns": math.nan}
    xs = [c2c_between(*sib, 10_000 if quick else 50_000) for _ in range(3 if quick else 5)]
    good = [x for x in xs if math.isfinite(x)]
    return {"smt_sibling_c2c_ns": median(good) if good else math.nan}


# ---- queues between two Python threads -------------------------------------------------


def spsc_python_batches(items: int = 5_000_000, batch: int = 8192, capacity: int = 65536) -> float:
    """Two *Python* threads move ``items`` uint64 through :class:`SpscQueue`
    with push_many/pop_many of ``batch``; returns items/s (checked: every
    batch arrives in order).  ``items`` 1..10**8 (an array of them is made
    first), ``batch`` >= 1 (0 would move nothing, forever), ``capacity`` a
    power of two."""
    items = int_arg(items, "items", minimum=1, maximum=10**8)
    batch = int_arg(batch, "batch", minimum=1, maximum=1 << 24)
    q = SpscQueue(power_of_two(capacity, "capacity"))
    data = np.arange(items, dtype=np.uint64)
    errors: list[str] = []
    failed = threading.Event()  # set when either thread dies: the other stops waiting for it

    def produce() -> None:
        sent = 0
        while sent < items:
            k = q.push_many(data[sent : sent + batch])
            if k == 0:
                if failed.is_set():
                    return
                time.sleep(0)
            sent += k

    def consume() -> None:
        buf = np.empty(batch, np.uint64)
        got = 0
        while got < items:
            k = q.pop_many(buf)
            if k == 0:
                if failed.is_set():
                    return
                time.sleep(0)
                continue
            if buf[0] != got or buf[k - 1] != got + k - 1:
                errors.append(f"batch at {got} out of order")
            got += k

    return _two_threads(produce, consume, items, errors, failed)


def python_queue(items: int = 200_000, kind: str = "Queue") -> float:
    """Two Python threads move ``items`` ints through ``queue.Queue`` or
    ``queue.SimpleQueue`` (unbounded), one put/get per item; items/s."""
    q = {"Queue": queue.Queue, "SimpleQueue": queue.SimpleQueue}[kind]()
    errors: list[str] = []
    failed = threading.Event()

    def produce() -> None:
        put = q.put
        for i in range(items):
            put(i)

    def consume() -> None:
        get = q.get
        for i in range(items):
            if get() != i:
                errors.append("out of order")
                return

    # A producer that dies leaves the consumer blocked in get(): wake it with
    # one item it cannot mistake for the next (it then stops, out of order).
    return _two_threads(produce, consume, items, errors, failed, wake_consumer=lambda: q.put(-1))


def _two_threads(
    produce: Callable[[], None],
    consume: Callable[[], None],
    items: int,
    errors: list[str],
    failed: threading.Event,
    wake_consumer: Callable[[], None] | None = None,
) -> float:
    """Runs the two workers; items/s.  An exception in either worker is not
    lost in its thread: ``failed`` is set (the other worker's waits check it),
    the consumer is woken if it may be blocked, and the exception is raised
    here, in the caller's thread, after both have ended."""
    failures: list[BaseException] = []

    def guarded(fn: Callable[[], None], producer: bool) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # re-raised in the caller's thread below
                failures.append(exc)
                failed.set()
                if producer and wake_consumer is not None:
                    wake_consumer()

        return run

    tc = threading.Thread(target=guarded(consume, False), name="lowlat-consumer")
    tp = threading.Thread(target=guarded(produce, True), name="lowlat-producer")
    t0 = time.perf_counter()
    tc.start()
    tp.start()
    tp.join()
    tc.join()
    dt = time.perf_counter() - t0
    if failures:
        raise failures[0]
    if errors:
        raise AssertionError(errors[0])
    return items / dt


__all__ = [
    "API_PATHS",
    "SpscRun",
    "api_code",
    "bench_keys",
    "c2c_between",
    "c2c_one_way_ns",
    "placement_c2c",
    "python_queue",
    "spsc_op_ns",
    "spsc_python_batches",
    "spsc_rtt",
    "spsc_throughput",
]
