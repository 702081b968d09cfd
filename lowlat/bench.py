"""The benchmarks: each C measurement loop wrapped as a function returning a
dataclass, and ``run_all`` that runs the suite behind ``python -m lowlat
bench``.

Method (the machine is assumed noisy): variants that are compared run
interleaved (A B A B ...) inside one run, several times; results are medians
and ratios of medians, and the core-to-core latency is sampled between queue
runs so the regime the machine was in is on record.  All times in ns.
"""

from __future__ import annotations

import json
import queue
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from lowlat._check import int_arg, power_of_two
from lowlat._lib import ffi, lib
from lowlat.affinity import bench_cpus, cpu_count
from lowlat.clock import clock_info
from lowlat.errors import check_status
from lowlat.hist import Histogram
from lowlat.spsc import SpscQueue

WAIT_POLICIES = {"spin": 0, "yield": 1, "spin_yield": 2}


def default_wait() -> str:
    """Spinning needs a CPU per spinning thread; with fewer than 2 CPUs two
    spinners take turns at scheduler speed, so yield instead."""
    return "spin" if cpu_count() >= 2 else "yield"


def _wait_code(wait: str) -> int:
    if wait not in WAIT_POLICIES:
        raise ValueError(f"wait must be one of {sorted(WAIT_POLICIES)}, got {wait!r}")
    return WAIT_POLICIES[wait]


def _pins(pin: bool) -> tuple[int, int]:
    return bench_cpus() if pin else (-1, -1)


# ---- allocation ----------------------------------------------------------------


@dataclass
class AllocRun:
    """One pass of the allocation loop.  ``mean_ns`` is batch-timed (no timer
    in the loop); ``hist`` holds every op timed one by one (timer included:
    ``timer_overhead_ns`` is the cost of that stamp pair)."""

    allocator: str
    mean_ns: float
    timer_overhead_ns: float
    ops: int
    failed: int
    hist: Histogram | None = field(repr=False, default=None)


def alloc_run(
    allocator: str,
    *,
    ops: int = 200_000,
    live: int = 1,
    min_size: int = 64,
    max_size: int = 64,
    seed: int = 1,
    per_op: bool = True,
) -> AllocRun:
    """``ops`` operations of "free a random live block, allocate a new one"
    with ``allocator`` = "malloc" or "pool"; ``live`` blocks stay allocated;
    sizes uniform in [min_size, max_size] bytes (the pool's blocks are
    max_size)."""
    if allocator not in ("malloc", "pool"):
        raise ValueError(f"allocator must be 'malloc' or 'pool', got {allocator!r}")
    cfg = ffi.new(
        "ll_alloc_bench_cfg *",
        {
            "ops": int_arg(ops, "ops", minimum=1),
            "live": int_arg(live, "live", minimum=1, maximum=2**32 - 1),
            "min_size": int_arg(min_size, "min_size", minimum=1),
            "max_size": int_arg(max_size, "max_size", minimum=1, maximum=2**32 - 1),
            "seed": int_arg(seed, "seed", minimum=0, maximum=2**64 - 1),
            "use_pool": 1 if allocator == "pool" else 0,
        },
    )
    if max_size < min_size:
        raise ValueError(f"max_size must be >= min_size = {min_size}, got {max_size}")
    hist = Histogram(1, 10**10, 3) if per_op else None
    out = ffi.new("ll_alloc_bench_result *")
    check_status(lib.ll_bench_alloc(cfg, hist._h if hist is not None else ffi.NULL, out), "alloc benchmark")
    return AllocRun(allocator, out.mean_ns, out.timer_overhead_ns, int(out.ops), int(out.failed), hist)


class FragmentedHeap:
    """A heap left full of holes: ``blocks`` random-size allocations, a random
    half of them freed.  Use as a context manager; released on exit."""

    def __init__(self, blocks: int = 100_000, min_size: int = 16, max_size: int = 4096, seed: int = 7) -> None:
        self._f = lib.ll_heap_fragment(
            int_arg(blocks, "blocks", minimum=1), int_arg(min_size, "min_size", minimum=1), max_size, seed
        )
        if self._f == ffi.NULL:
            raise MemoryError("could not fragment the heap (bad sizes or out of memory)")

    def release(self) -> None:
        if self._f is not None:
            lib.ll_heap_fragment_release(self._f)
            self._f = None

    def __enter__(self) -> FragmentedHeap:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        self.release()


@dataclass
class AllocComparison:
    """malloc vs pool, interleaved.  Means are medians over rounds; the tail
    figures come from all rounds' per-op histograms merged."""

    mode: str
    rounds: int
    malloc_mean_ns: float
    pool_mean_ns: float
    speedup: float  # median over rounds of malloc_mean / pool_mean
    malloc: dict
    pool: dict
    timer_overhead_ns: float
    failed: int
    malloc_hist: Histogram = field(repr=False)
    pool_hist: Histogram = field(repr=False)


def compare_alloc(mode: str = "fragmented", *, ops: int = 200_000, rounds: int = 5, seed: int = 1) -> AllocComparison:
    """mode "steady": alloc/free pairs of 64 B.  mode "fragmented": a holed
    heap, 1,024 live blocks of 16..4,096 B, random victims.  Each round runs
    malloc then pool (then the next round pool first, to cancel order effects)
    on the same random sequence."""
    if mode == "steady":
        shape = {"live": 1, "min_size": 64, "max_size": 64}
    elif mode == "fragmented":
        shape = {"live": 1024, "min_size": 16, "max_size": 4096}
    else:
        raise ValueError(f"mode must be 'steady' or 'fragmented', got {mode!r}")
    int_arg(rounds, "rounds", minimum=1)
    heap = FragmentedHeap(seed=seed) if mode == "fragmented" else None
    try:
        mh, ph = Histogram(1, 10**10, 3), Histogram(1, 10**10, 3)
        mm, pm, ratios, ovh, failed = [], [], [], [], 0
        for r in range(rounds):
            order = ("malloc", "pool") if r % 2 == 0 else ("pool", "malloc")
            runs = {a: alloc_run(a, ops=ops, seed=seed + r, **shape) for a in order}
            m, p = runs["malloc"], runs["pool"]
            mm.append(m.mean_ns)
            pm.append(p.mean_ns)
            ratios.append(m.mean_ns / p.mean_ns if p.mean_ns > 0 else float("inf"))
            ovh.append(p.timer_overhead_ns)
            failed += m.failed + p.failed
            mh.merge(m.hist)
            ph.merge(p.hist)
    finally:
        if heap is not None:
            heap.release()
    return AllocComparison(
        mode=mode,
        rounds=rounds,
        malloc_mean_ns=statistics.median(mm),
        pool_mean_ns=statistics.median(pm),
        speedup=statistics.median(ratios),
        malloc=mh.summary(),
        pool=ph.summary(),
        timer_overhead_ns=statistics.median(ovh),
        failed=failed,
        malloc_hist=mh,
        pool_hist=ph,
    )


# ---- SPSC ------------------------------------------------------------------------


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


def _spsc_cfg(capacity: int, items: int, padded: bool, cached: bool, pin: bool, wait: str | None, batch: int,
              cpus: tuple[int, int] | None = None):
    if cpus is not None:
        n = cpu_count()
        for c in cpus:
            int_arg(c, "cpu", minimum=-1, maximum=n - 1)
        prod, cons = cpus
    else:
        prod, cons = _pins(pin)
    return ffi.new(
        "ll_spsc_bench_cfg *",
        {
            "capacity": power_of_two(capacity),
            "items": int_arg(items, "items", minimum=1),
            "flags": (0 if padded else lib.LL_SPSC_UNPADDED) | (0 if cached else lib.LL_SPSC_NO_CACHE),
            "producer_cpu": prod,
            "consumer_cpu": cons,
            "wait": _wait_code(wait or default_wait()),
            "batch": int_arg(batch, "batch", minimum=0),
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
) -> SpscRun:
    """Two C threads move 1..items (uint64) through one ring; the consumer
    checks order.  batch=0: one try_push/try_pop per record; batch=n:
    push_many/pop_many of n.  ``cpus=(p, c)`` pins producer and consumer to
    those CPUs (-1: unpinned; the same CPU twice puts both on one core) and
    overrides ``pin``."""
    cfg = _spsc_cfg(capacity, items, padded, cached, pin, wait, batch, cpus)
    out = ffi.new("ll_spsc_bench_result *")
    check_status(lib.ll_bench_spsc_throughput(cfg, out), "SPSC throughput benchmark")
    return SpscRun(
        int(cfg.items), out.seconds, out.items_per_s, int(out.errors), int(out.full_waits), int(out.empty_waits),
        out.producer_pinned == 0 and out.consumer_pinned == 0,
    )


def spsc_rtt(
    capacity: int = 1024, round_trips: int = 100_000, *, pin: bool = True, wait: str | None = None
) -> SpscRun:
    """Ping-pong over two rings; every round trip timed into ``rtt``."""
    cfg = _spsc_cfg(capacity, round_trips, True, True, pin, wait, 0)
    h = Histogram(1, 10**10, 3)
    out = ffi.new("ll_spsc_bench_result *")
    check_status(lib.ll_bench_spsc_rtt(cfg, h._h, out), "SPSC round-trip benchmark")
    return SpscRun(
        int(cfg.items), out.seconds, out.items_per_s, int(out.errors), int(out.full_waits), int(out.empty_waits),
        out.producer_pinned == 0 and out.consumer_pinned == 0, out.mean_rtt_ns, h,
    )


def c2c_one_way_ns(round_trips: int = 50_000, *, pin: bool = True, wait: str | None = None) -> float:
    """One-way core-to-core latency: a cache line bounced between two
    threads, half the mean round trip (ns)."""
    a, b = _pins(pin)
    r = lib.ll_bench_c2c(int_arg(round_trips, "round_trips", minimum=1), a, b, _wait_code(wait or default_wait()))
    check_status(int(r) if r < 0 else 0, "core-to-core benchmark")
    return float(r)


def spsc_python_batches(items: int = 5_000_000, batch: int = 8192, capacity: int = 65536) -> float:
    """Two *Python* threads move ``items`` uint64 through :class:`SpscQueue`
    with push_many/pop_many of ``batch``; returns items/s (checked: every
    batch arrives in order)."""
    q = SpscQueue(capacity)
    data = np.arange(items, dtype=np.uint64)
    errors: list[str] = []

    def produce() -> None:
        sent = 0
        while sent < items:
            k = q.push_many(data[sent : sent + batch])
            if k == 0:
                time.sleep(0)
            sent += k

    def consume() -> None:
        buf = np.empty(batch, np.uint64)
        got = 0
        while got < items:
            k = q.pop_many(buf)
            if k == 0:
                time.sleep(0)
                continue
            if buf[0] != got or buf[k - 1] != got + k - 1:
                errors.append(f"batch at {got} out of order")
            got += k

    return _two_threads(produce, consume, items, errors)


def python_queue(items: int = 200_000, kind: str = "Queue") -> float:
    """Two Python threads move ``items`` ints through ``queue.Queue`` or
    ``queue.SimpleQueue`` (unbounded), one put/get per item; items/s."""
    q = {"Queue": queue.Queue, "SimpleQueue": queue.SimpleQueue}[kind]()
    errors: list[str] = []

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

    return _two_threads(produce, consume, items, errors)


def _two_threads(produce: Callable[[], None], consume: Callable[[], None], items: int, errors: list[str]) -> float:
    tc = threading.Thread(target=consume)
    tp = threading.Thread(target=produce)
    t0 = time.perf_counter()
    tc.start()
    tp.start()
    tp.join()
    tc.join()
    dt = time.perf_counter() - t0
    if errors:
        raise AssertionError(errors[0])
    return items / dt


# ---- hidden taxes ----------------------------------------------------------------


@dataclass
class PageFaults:
    pages: int
    page_size: int
    first_touch_ns: float
    prefaulted_ns: float
    minor_faults: int


def page_faults(pages: int = 4096) -> PageFaults:
    """Touch ``pages`` fresh pages (each a minor fault), then again (none)."""
    out = ffi.new("ll_fault_result *")
    check_status(lib.ll_bench_page_faults(int_arg(pages, "pages", minimum=1), out), "page-fault benchmark")
    return PageFaults(int(out.pages), int(out.page_size), out.first_touch_ns, out.prefaulted_ns, int(out.minor_faults))


def _ns(value: float, what: str) -> float:
    check_status(int(value) if value < 0 else 0, what)
    return float(value)


def mutex_ns(iterations: int = 1_000_000, *, contended: bool = False, pin: bool = True) -> float:
    """One pthread mutex lock+unlock (ns); contended: two threads on it."""
    a, b = _pins(pin)
    return _ns(lib.ll_bench_mutex(int_arg(iterations, "iterations", minimum=1), int(contended), a, b), "mutex benchmark")


def syscall_ns(iterations: int = 200_000) -> float:
    """One trivial system call (getppid), ns."""
    return _ns(lib.ll_bench_syscall(int_arg(iterations, "iterations", minimum=1)), "syscall benchmark")


def chase_ns(nbytes: int, steps: int = 2_000_000, seed: int = 3) -> float:
    """ns per dependent load while chasing a random cycle through ``nbytes``."""
    int_arg(nbytes, "nbytes", minimum=128)
    return _ns(lib.ll_bench_chase(nbytes, int_arg(steps, "steps", minimum=1), seed), "pointer-chase benchmark")


def hist_record_ns(n: int = 10_000_000) -> float:
    """ns per ``ll_hist_record`` in a C loop (values spread over 4 decades)."""
    h = Histogram()
    return _ns(lib.ll_bench_hist_record(h._h, int_arg(n, "n", minimum=1), 5), "histogram benchmark")


# ---- the suite -----------------------------------------------------------------------

# Every key `run_all` writes, with its unit and meaning (the table's rows).
KEYS: dict[str, tuple[str, str]] = {
    "pool_alloc_free_ns": ("ns", "pool free+alloc pair, steady state (mean)"),
    "malloc_free_ns": ("ns", "malloc free+alloc pair, steady state (mean)"),
    "pool_vs_malloc_speedup_steady": ("x", "malloc / pool time, steady state"),
    "pool_frag_ns": ("ns", "pool op, fragmented heap (mean)"),
    "malloc_frag_ns": ("ns", "malloc op, fragmented heap, random sizes (mean)"),
    "pool_vs_malloc_speedup": ("x", "malloc / pool time, fragmented heap"),
    "pool_p99_ns": ("ns", "pool op P99, fragmented (incl. timer)"),
    "malloc_p99_ns": ("ns", "malloc op P99, fragmented (incl. timer)"),
    "pool_p999_ns": ("ns", "pool op P99.9, fragmented (incl. timer)"),
    "malloc_p999_ns": ("ns", "malloc op P99.9, fragmented (incl. timer)"),
    "pool_max_ns": ("ns", "pool op max, fragmented"),
    "malloc_max_ns": ("ns", "malloc op max, fragmented"),
    "per_op_timer_ns": ("ns", "cost of the TSC stamp pair around each op"),
    "spsc_items_per_s": ("items/s", "SPSC, cap 1024, per-item calls, padded+cached"),
    "spsc_unpadded_items_per_s": ("items/s", "the same, cursors in one line"),
    "spsc_uncached_items_per_s": ("items/s", "the same, no cached remote index"),
    "spsc_padded_vs_unpadded": ("x", "padded / unpadded throughput"),
    "spsc_cached_vs_uncached": ("x", "cached / uncached throughput"),
    "spsc_c_batch_items_per_s": ("items/s", "SPSC, push_many/pop_many of 256 inside C"),
    "spsc_rtt_ns": ("ns", "SPSC ping-pong round trip (P50)"),
    "spsc_rtt_p99_ns": ("ns", "SPSC ping-pong round trip (P99)"),
    "c2c_one_way_ns": ("ns", "core-to-core one-way (median of samples)"),
    "c2c_one_way_min_ns": ("ns", "core-to-core one-way (best sample)"),
    "c2c_one_way_max_ns": ("ns", "core-to-core one-way (worst sample)"),
    "spsc_batch_items_per_s": ("items/s", "SpscQueue from 2 Python threads, batches of 8192"),
    "py_queue_items_per_s": ("items/s", "queue.Queue, 2 Python threads, per item"),
    "py_simplequeue_items_per_s": ("items/s", "queue.SimpleQueue, 2 Python threads, per item"),
    "spsc_batch_vs_py_queue": ("x", "SpscQueue batches / queue.Queue"),
    "spsc_batch_vs_py_simplequeue": ("x", "SpscQueue batches / SimpleQueue"),
    "hist_record_ns": ("ns", "one histogram record (C loop)"),
    "clock_read_ns": ("ns", "clock_gettime(CLOCK_MONOTONIC)"),
    "clock_coarse_read_ns": ("ns", "clock_gettime(CLOCK_MONOTONIC_COARSE)"),
    "tsc_read_ns": ("ns", "rdtsc / cntvct_el0"),
    "tsc_ordered_read_ns": ("ns", "rdtscp / isb+cntvct_el0"),
    "py_perf_counter_ns": ("ns", "time.perf_counter_ns() in a Python loop"),
    "mutex_uncontended_ns": ("ns", "pthread mutex lock+unlock, one thread"),
    "mutex_contended_ns": ("ns", "the same, two threads on one mutex"),
    "syscall_ns": ("ns", "getppid() system call"),
    "chase_l1_ns": ("ns", "dependent load, 16 KiB working set"),
    "chase_dram_ns": ("ns", "dependent load, DRAM-sized working set"),
    "page_fault_ns": ("ns", "first touch of a fresh 4 KiB page"),
    "prefaulted_touch_ns": ("ns", "touch of an already-mapped page"),
    "page_faults_counted": ("faults", "minor faults seen by getrusage in that test"),
    "batch_vs_row_speedup": ("x", "numpy row norms: one call per row / one call for all"),
    "ffi_call_ns": ("ns", "one bare cffi call into the core (ll_hist_record)"),
    "ffi_batched_item_ns": ("ns", "per item of one batched call (record_many)"),
    "prefetch_bubble_fraction_depth0": ("fraction", "accelerator idle share of an epoch, no prefetch"),
    "prefetch_bubble_fraction_best": ("fraction", "the same, best prefetch depth"),
    "prefetch_best_depth": ("", "the depth that gave it"),
    "pipeline_p50_ns": ("ns", "pipeline tick latency P50, open loop, best settings"),
    "pipeline_p99_ns": ("ns", "the same, P99"),
    "pipeline_p999_ns": ("ns", "the same, P99.9"),
    "pipeline_max_ns": ("ns", "the same, max"),
    "pipeline_seed_p50_ns": ("ns", "pipeline P50, the source article's settings"),
    "pipeline_seed_p99_ns": ("ns", "the same, P99"),
    "pipeline_seed_max_ns": ("ns", "the same, max"),
    "pipeline_c2c_ns": ("ns", "core-to-core one-way, sampled between the pipeline runs"),
    "pipeline_p50_over_c2c": ("x", "pipeline P50 / that core-to-core floor"),
    "cpus": ("", "online CPUs"),
    "pinned": ("", "1 if the two-thread runs were pinned"),
    "spin": ("", "1 if the waits spun, 0 if they yielded"),
    "quick": ("", "1 for --quick"),
    "bench_seconds": ("s", "wall time of the whole suite"),
}


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def run_all(quick: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """Runs every benchmark; returns the flat dict of :data:`KEYS` (numbers)."""
    say = progress or (lambda s: None)
    t_start = time.perf_counter()
    reps = 3 if quick else 7
    steps = 11
    r: dict[str, float] = {}
    pin_cpus = bench_cpus()
    pinned = pin_cpus[0] >= 0
    wait = default_wait()

    say(f"[1/{steps}] clocks")
    ci = clock_info(200_000 if quick else 1_000_000)
    r.update(
        clock_read_ns=ci.monotonic_read_ns, clock_coarse_read_ns=ci.coarse_read_ns, tsc_read_ns=ci.tsc_read_ns,
        tsc_ordered_read_ns=ci.tsc_ordered_read_ns, py_perf_counter_ns=ci.python_perf_counter_ns,
    )

    say(f"[2/{steps}] malloc vs pool, steady state")
    ops = 100_000 if quick else 400_000
    steady = compare_alloc("steady", ops=ops, rounds=reps)
    r.update(
        pool_alloc_free_ns=steady.pool_mean_ns, malloc_free_ns=steady.malloc_mean_ns,
        pool_vs_malloc_speedup_steady=steady.speedup,
    )

    say(f"[3/{steps}] malloc vs pool, fragmented heap")
    frag = compare_alloc("fragmented", ops=ops, rounds=reps)
    r.update(
        pool_frag_ns=frag.pool_mean_ns, malloc_frag_ns=frag.malloc_mean_ns, pool_vs_malloc_speedup=frag.speedup,
        pool_p99_ns=frag.pool["p99"], malloc_p99_ns=frag.malloc["p99"],
        pool_p999_ns=frag.pool["p99.9"], malloc_p999_ns=frag.malloc["p99.9"],
        pool_max_ns=frag.pool["max"], malloc_max_ns=frag.malloc["max"], per_op_timer_ns=frag.timer_overhead_ns,
    )

    say(f"[4/{steps}] SPSC throughput: padded/unpadded, cached/uncached, interleaved x{reps}")
    items = 3_000_000 if quick else 10_000_000
    c2c: list[float] = []
    tp: dict[str, list[float]] = {"best": [], "unpadded": [], "uncached": [], "batch": []}
    pad_ratio, cache_ratio = [], []
    variants = {"best": {}, "unpadded": {"padded": False}, "uncached": {"cached": False}, "batch": {"batch": 256}}
    for _ in range(reps):
        c2c.append(c2c_one_way_ns(20_000 if quick else 50_000, wait=wait))
        rep = {}
        for name, kw in variants.items():
            run = spsc_throughput(1024, items, wait=wait, **kw)
            if run.errors:
                raise AssertionError(f"SPSC benchmark delivered {run.errors} records out of order ({name})")
            rep[name] = run.items_per_s
            tp[name].append(run.items_per_s)
        pad_ratio.append(rep["best"] / rep["unpadded"])
        cache_ratio.append(rep["best"] / rep["uncached"])
    r.update(
        spsc_items_per_s=_median(tp["best"]), spsc_unpadded_items_per_s=_median(tp["unpadded"]),
        spsc_uncached_items_per_s=_median(tp["uncached"]), spsc_c_batch_items_per_s=_median(tp["batch"]),
        spsc_padded_vs_unpadded=_median(pad_ratio), spsc_cached_vs_uncached=_median(cache_ratio),
    )

    say(f"[5/{steps}] SPSC round trip")
    rtt = spsc_rtt(1024, 20_000 if quick else 100_000, wait=wait)
    c2c.append(c2c_one_way_ns(20_000 if quick else 50_000, wait=wait))
    r.update(spsc_rtt_ns=rtt.rtt.percentile(50), spsc_rtt_p99_ns=rtt.rtt.percentile(99))
    r.update(c2c_one_way_ns=_median(c2c), c2c_one_way_min_ns=min(c2c), c2c_one_way_max_ns=max(c2c))

    say(f"[6/{steps}] queues between Python threads")
    n_batch = 2_000_000 if quick else 10_000_000
    r["spsc_batch_items_per_s"] = _median([spsc_python_batches(n_batch) for _ in range(3)])
    r["py_queue_items_per_s"] = _median([python_queue(50_000 if quick else 200_000, "Queue") for _ in range(3)])
    r["py_simplequeue_items_per_s"] = _median(
        [python_queue(200_000 if quick else 1_000_000, "SimpleQueue") for _ in range(3)]
    )
    r["spsc_batch_vs_py_queue"] = r["spsc_batch_items_per_s"] / r["py_queue_items_per_s"]
    r["spsc_batch_vs_py_simplequeue"] = r["spsc_batch_items_per_s"] / r["py_simplequeue_items_per_s"]

    say(f"[7/{steps}] histogram record")
    r["hist_record_ns"] = _median([hist_record_ns(2_000_000 if quick else 10_000_000) for _ in range(reps)])

    say(f"[8/{steps}] hidden taxes: mutex, syscall, pointer chase")
    r["mutex_uncontended_ns"] = _median([mutex_ns(500_000) for _ in range(reps)])
    r["mutex_contended_ns"] = _median([mutex_ns(200_000 if quick else 1_000_000, contended=True) for _ in range(reps)])
    r["syscall_ns"] = _median([syscall_ns(100_000) for _ in range(reps)])
    r["chase_l1_ns"] = _median([chase_ns(16 * 1024, 2_000_000) for _ in range(reps)])
    r["chase_dram_ns"] = chase_ns((128 if quick else 256) * 2**20, 1_000_000 if quick else 3_000_000)

    say(f"[9/{steps}] page faults")
    pf = page_faults(4096 if quick else 16384)
    r.update(page_fault_ns=pf.first_touch_ns, prefaulted_touch_ns=pf.prefaulted_ns, page_faults_counted=pf.minor_faults)

    say(f"[10/{steps}] training: batching, calls into C, prefetching")
    r.update(_training(quick, reps))

    say(f"[11/{steps}] pipeline: the source's settings vs the best, interleaved x{1 if quick else 3}")
    r.update(_pipeline(quick, wait))

    r.update(cpus=cpu_count(), pinned=int(pinned), spin=int(wait == "spin"), quick=int(quick))
    r["bench_seconds"] = time.perf_counter() - t_start
    return {k: float(r[k]) for k in KEYS}


def _training(quick: bool, reps: int) -> dict[str, float]:
    """Chapter 06's figures: batching at two levels and the prefetch sweep."""
    from lowlat.train import batching, loader

    norms = batching.compare_row_norms(1000 if quick else 2000, 256, repeats=reps)
    if not norms.equal:
        raise AssertionError(f"batched row norms differ from per-row ones (max relative {norms.max_rel_diff:.2e})")
    ffi_c = batching.ffi_costs(50_000 if quick else 100_000, repeats=reps)
    src = loader.HeavyTailSource(n=150 if quick else 300)
    depths = (0, 4, 16) if quick else (0, 1, 2, 4, 8, 16, 32)
    sweep = loader.depth_sweep(src, depths, loader.SimulatedStep(2.0))
    best = min((d for d in depths if d > 0), key=lambda d: sweep[d].bubble_fraction)
    return {
        "batch_vs_row_speedup": norms.speedup, "ffi_call_ns": ffi_c.call_ns,
        "ffi_batched_item_ns": ffi_c.batched_item_ns,
        "prefetch_bubble_fraction_depth0": sweep[0].bubble_fraction,
        "prefetch_bubble_fraction_best": sweep[best].bubble_fraction, "prefetch_best_depth": best,
    }


def _pipeline(quick: bool, wait: str) -> dict[str, float]:
    """Chapter 05's table, its two ends: medians over interleaved runs, with
    the core-to-core floor sampled between them."""
    from lowlat import pipeline

    ticks = 50_000 if quick else 200_000
    runs: dict[str, list[dict[str, float]]] = {"best": [], "seed": []}
    c2c = []
    for _ in range(1 if quick else 3):
        c2c.append(c2c_one_way_ns(20_000, wait=wait))
        for name, cfg in (("best", pipeline.best_config(ticks)), ("seed", pipeline.seed_config(ticks))):
            res = pipeline.run(cfg)
            if res.lost:
                raise AssertionError(f"the pipeline lost {res.lost} ticks ({name})")
            runs[name].append(res.summary())
    med = {name: {k: _median([x[k] for x in xs]) for k in xs[0]} for name, xs in runs.items()}
    floor = _median(c2c)
    return {
        "pipeline_p50_ns": med["best"]["p50"], "pipeline_p99_ns": med["best"]["p99"],
        "pipeline_p999_ns": med["best"]["p99.9"], "pipeline_max_ns": med["best"]["max"],
        "pipeline_seed_p50_ns": med["seed"]["p50"], "pipeline_seed_p99_ns": med["seed"]["p99"],
        "pipeline_seed_max_ns": med["seed"]["max"], "pipeline_c2c_ns": floor,
        "pipeline_p50_over_c2c": med["best"]["p50"] / floor,
    }


def _fmt(value: float, unit: str) -> str:
    if unit == "items/s":
        return f"{value / 1e6:,.1f} M/s"
    if unit == "x":
        return f"{value:,.2f} x"
    if unit == "fraction":
        return f"{value * 100:,.1f} %"
    if unit in ("", "faults"):
        return f"{value:,.0f}"
    if unit == "s":
        return f"{value:,.1f} s"
    return f"{value:,.1f} ns"


def format_table(results: dict[str, float]) -> str:
    """The results as an aligned text table, one key per line."""
    lines = [f"{'key':32} {'value':>14}  meaning", "-" * 90]
    for k, (unit, meaning) in KEYS.items():
        if k in results:
            lines.append(f"{k:32} {_fmt(results[k], unit):>14}  {meaning}")
    return "\n".join(lines)


def write_json(results: dict[str, float], path: str) -> None:
    with open(path, "w") as f:
        json.dump(results, f, indent=2, sort_keys=True)
        f.write("\n")


def progress_to_stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


__all__ = [
    "AllocComparison", "AllocRun", "FragmentedHeap", "KEYS", "PageFaults", "SpscRun", "alloc_run", "c2c_one_way_ns",
    "chase_ns", "compare_alloc", "format_table", "hist_record_ns", "mutex_ns", "page_faults", "python_queue",
    "run_all", "spsc_python_batches", "spsc_rtt", "spsc_throughput", "syscall_ns", "write_json",
]
