"""Memory experiments (chapters 01, 02, 04), run by ``csrc/bench/bench_alloc.c``:
malloc/free against the pool, on a steady or a fragmented heap, mean and
per-op tails; and what a first-touch page fault costs.  All times in ns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lowlat.core._lib import ffi, lib
from lowlat.core.clock import stamp_step_ns
from lowlat.core.errors import check_status
from lowlat.core.hist import Histogram
from lowlat.core.validate import int_arg
from lowlat.machine import topology
from lowlat.method.interleave import interleave, median, ratios

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
    check_status(lib.ll_bench_alloc(cfg, hist.c_handle if hist is not None else ffi.NULL, out), "alloc benchmark")
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
    figures come from all rounds' per-op histograms merged.  ``*_rounds_ns``:
    each round's batch-timed mean (ns per operation), in round order, for
    :func:`lowlat.method.readings.compare`; ``*_tail_rounds``: each round's
    P99.9 / P50 of the timed loop, each percentile taken as at least one
    step of the stamps (``timer_step_ns``, the least they resolve)."""

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
    malloc_rounds_ns: list[float] = field(default_factory=list)
    pool_rounds_ns: list[float] = field(default_factory=list)
    malloc_tail_rounds: list[float] = field(default_factory=list)
    pool_tail_rounds: list[float] = field(default_factory=list)
    timer_step_ns: float = 1.0


def compare_alloc(mode: str = "fragmented", *, ops: int = 200_000, rounds: int = 5, seed: int = 1) -> AllocComparison:
    """mode "steady": alloc/free pairs of 64 B.  mode "fragmented": a holed
    heap, 1,024 live blocks of 16..4,096 B, random victims.  Each round runs
    malloc then pool (then the next round pool first, to cancel order effects:
    :func:`lowlat.method.interleave.interleave`) on the same random sequence."""
    shape: dict[str, Any]
    if mode == "steady":
        shape = {"live": 1, "min_size": 64, "max_size": 64}
    elif mode == "fragmented":
        shape = {"live": 1024, "min_size": 16, "max_size": 4096}
    else:
        raise ValueError(f"mode must be 'steady' or 'fragmented', got {mode!r}")
    int_arg(rounds, "rounds", minimum=1)
    round_no = -1
    step = stamp_step_ns()
    tails: dict[str, list[float]] = {"malloc": [], "pool": []}

    def next_round() -> None:
        nonlocal round_no
        round_no += 1

    def side(allocator: str, into: Histogram) -> Callable[[], AllocRun]:
        def run() -> AllocRun:
            r = alloc_run(allocator, ops=ops, seed=seed + round_no, **shape)
            assert r.hist is not None  # per_op=True
            s = r.hist.summary()
            tails[allocator].append(max(s["p99.9"], step) / max(s["p50"], step))
            into.merge(r.hist)
            r.hist = None  # merged: one histogram per allocator, not per round
            return r

        return run

    heap = FragmentedHeap(seed=seed) if mode == "fragmented" else None
    try:
        mh, ph = Histogram(1, 10**10, 3), Histogram(1, 10**10, 3)
        runs = interleave({"malloc": side("malloc", mh), "pool": side("pool", ph)}, rounds, between=next_round)
    finally:
        if heap is not None:
            heap.release()
    mm = [r.mean_ns for r in runs["malloc"]]
    pm = [r.mean_ns for r in runs["pool"]]
    return AllocComparison(
        mode=mode,
        rounds=rounds,
        malloc_mean_ns=median(mm),
        pool_mean_ns=median(pm),
        speedup=median(ratios(mm, pm)),
        malloc=mh.summary(),
        pool=ph.summary(),
        timer_overhead_ns=median(r.timer_overhead_ns for r in runs["pool"]),
        failed=sum(r.failed for rs in runs.values() for r in rs),
        malloc_hist=mh,
        pool_hist=ph,
        malloc_rounds_ns=mm,
        pool_rounds_ns=pm,
        malloc_tail_rounds=tails["malloc"],
        pool_tail_rounds=tails["pool"],
        timer_step_ns=step,
    )


# ---- page faults -----------------------------------------------------------------


@dataclass
class PageFaults:
    pages: int
    page_size: int
    first_touch_ns: float
    prefaulted_ns: float
    minor_faults: int  # during the first touch
    second_faults: int = 0  # during the second touch: none expected


FAULT_BYTES = 64 * 2**20  # the page-fault test's default size, whatever the page size


def page_faults(pages: int | None = None, *, nbytes: int | None = None) -> PageFaults:
    """Touches fresh memory one page at a time (each touch a minor fault),
    then touches it again (no faults).  Sized in bytes: ``nbytes``, by default
    64 MiB (16,384 pages of 4 KiB, 4,096 of 16 KiB, 1,024 of 64 KiB), rounded
    up to whole pages of this machine (:func:`lowlat.machine.topology.page_size`).
    ``pages`` counts pages instead (the older form): pages differ 16x in size
    between machines, so a count that is 64 MiB on x86 is 1 GiB on an ARM64
    kernel with 64 KiB pages; prefer ``nbytes``."""
    if pages is not None and nbytes is not None:
        raise ValueError(f"give pages or nbytes, not both (got pages={pages!r}, nbytes={nbytes!r})")
    if pages is None:
        size = int_arg(FAULT_BYTES if nbytes is None else nbytes, "nbytes", minimum=1)
        page = topology.page_size()
        pages = -(-size // page)
    out = ffi.new("ll_fault_result *")
    check_status(lib.ll_bench_page_faults(int_arg(pages, "pages", minimum=1), out), "page-fault benchmark")
    return PageFaults(
        int(out.pages),
        int(out.page_size),
        out.first_touch_ns,
        out.prefaulted_ns,
        int(out.minor_faults),
        int(out.second_faults),
    )


__all__ = [
    "FAULT_BYTES",
    "AllocComparison",
    "AllocRun",
    "FragmentedHeap",
    "PageFaults",
    "alloc_run",
    "compare_alloc",
    "page_faults",
]
