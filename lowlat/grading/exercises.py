"""The exercises and their checks.  The text of each check is part of the
stored expected output of its grading notebook: change it and re-execute the
notebooks."""

from __future__ import annotations

from lowlat.grading.core import Check, Exercise


def _mpmc_timing(info: dict[str, float]) -> str:
    return (f"your queue: {info['yours_items_per_s'] / 1e6:.1f} M items/s; the mutex reference: "
            f"{info['mutex_items_per_s'] / 1e6:.1f} M items/s (2 producers x 2 consumers)")


MPMC = Exercise(
    name="mpmc",
    kind="c",
    filename="mpmc.c",
    harness="mpmc_harness.c",
    checks=(
        Check("bad_capacity", "bad capacities give NULL, powers of two >= 2 give a queue"),
        Check("fifo_capacity", "one thread: capacity N holds N items, FIFO, across wrap-around"),
        Check("pc_1x3", "1 producer x 3 consumers: every value exactly once, per-producer order", 30),
        Check("pc_3x1", "3 producers x 1 consumer: every value exactly once, per-producer order", 30),
        Check("pc_2x2", "2 producers x 2 consumers: every value exactly once, per-producer order", 30),
        Check("pc_4x4", "4 producers x 4 consumers (more threads than cores): exactly once, in order", 45),
        Check("pc_2x2", "ThreadSanitizer: no data race with 2 producers x 2 consumers", 60, "thread", "20000"),
    ),
    timing=Check("timing", "timing", 120),
    timing_text=_mpmc_timing,
)

def _hpool_timing(info: dict[str, float]) -> str:
    return (f"alloc+get+free: {info['hpool_ns']:.1f} ns with your pool; malloc+free of 64 B: "
            f"{info['malloc_ns']:.1f} ns")


HANDLE_POOL = Exercise(
    name="handle_pool",
    kind="c",
    filename="handle_pool.c",
    harness="handle_pool_harness.c",
    checks=(
        Check("create_args", "hpool_create refuses 0 and overflowing sizes"),
        Check("exhaust", "count distinct nonzero handles, then 0; blocks do not overlap"),
        Check("free_reuse", "freed blocks are handed out again"),
        Check("double_free", "a double free returns -1 and changes nothing"),
        Check("stale", "a stale handle (its block was reused) is refused by get and free"),
        Check("foreign", "handle 0 and another pool's handles are refused"),
        Check("all", "AddressSanitizer/UBSan: no memory error in any of the above", 60, "address"),
    ),
    timing=Check("timing", "timing", 60),
    timing_text=_hpool_timing,
)

def _ring_timing(info: dict[str, float]) -> str:
    return (f"your ring: {info['yours_items_per_s'] / 1e6:.1f} M items/s; without the cache: "
            f"{info['uncached_items_per_s'] / 1e6:.1f} M items/s "
            f"({info['yours_items_per_s'] / info['uncached_items_per_s']:.1f}x)")


RING = Exercise(
    name="ring",
    kind="c",
    filename="ring.c",
    harness="ring_harness.c",
    cflags=("-include", "remote_load.h"),
    checks=(
        Check("create_args", "ring_create refuses capacities that are not powers of two >= 2"),
        Check("fifo_capacity", "one thread: capacity N holds N items, FIFO, across wrap-around"),
        Check("cached", "the other side's cursor is read about once per lap, not once per call"),
        Check("stress", "two threads, 5,000,000 items: every item once, in order", 30),
        Check("stress", "ThreadSanitizer: no data race between producer and consumer", 60, "thread", "200000"),
    ),
    timing=Check("timing", "timing", 120),
    timing_text=_ring_timing,
)

BUDGET = Exercise(
    name="budget",
    kind="python",
    filename="budget_report.py",
    harness="lowlat.grading.py_budget",
    checks=(
        Check("no_reference", "written here, not imported from lowlat.budget"),
        Check("percentiles", "each stage's P50/P99/P99.9 in us"),
        Check("overruns", "how far each stage overran its allotment"),
        Check("attribution", "whose allotment each overrun ate (downstream, upstream, reserve, over budget)"),
        Check("within", "a run within budget reports no overrun"),
        Check("reallocate", "reallocation gives each stage its need plus a proportional share of the slack"),
        Check("impossible", "reallocation refuses needs above the total (ValueError)"),
    ),
)

def _prefetch_timing(info: dict[str, float]) -> str:
    return (f"the accelerator sat idle {info['bubble_depth0'] * 100:.0f}% of the epoch without prefetching, "
            f"{info['bubble_depth16'] * 100:.1f}% with your loader at depth 16")


PREFETCH = Exercise(
    name="prefetch",
    kind="python",
    filename="prefetch.py",
    harness="lowlat.grading.py_prefetch",
    checks=(
        Check("no_reference", "written here, not imported from lowlat.train"),
        Check("order", "every item once, in order, at depths 0..64, twice in a row"),
        Check("depth0", "depth=0 reads on the caller's thread and starts none"),
        Check("bounded", "the producer reads ahead, but never more than depth items (+1 in hand)"),
        Check("exception", "the source's exception reaches the consumer, with its traceback, no thread left"),
        Check("close", "close() stops the producer: no more reads, its thread ends, the source is closed"),
        Check("break", "an early break stops the producer the same way, without close()"),
        Check("bad_depth", "a negative or non-integer depth is refused"),
    ),
    timing=Check("timing", "timing", 60),
    timing_text=_prefetch_timing,
)

CO_CORRECT = Exercise(
    name="co_correct",
    kind="python",
    filename="co_correct.py",
    harness="lowlat.grading.py_measurement",
    checks=(
        Check("co_no_reference", "written with numpy, not imported from lowlat or hdrh"),
        Check("co_expansion", "corrected() adds v - I, v - 2I, ... while >= I, on edge cases"),
        Check("co_count", "as many corrected values as the core's record_corrected counts"),
        Check("co_percentiles", "percentiles equivalent to the core's histogram on held-back cases"),
        Check("co_hdrh", "percentiles equivalent to the hdrhistogram package's"),
        Check("co_readme", "the HdrHistogram README's stall: P50 1 ms, P75 about 50 s"),
    ),
)

LOGLINEAR = Exercise(
    name="loglinear",
    kind="python",
    filename="loglinear.py",
    harness="lowlat.grading.py_measurement",
    checks=(
        Check("ll_no_reference", "written here, not imported from lowlat"),
        Check("ll_small", "below S, every value has its own counter"),
        Check("ll_edges", "index_of matches the core on bucket edges, 1..4 significant figures"),
        Check("ll_inverse", "lowest_value matches the core and inverts index_of"),
        Check("ll_error", "every value lies in its counter, within 10^-sig_figs relative error"),
    ),
)

def _recorder_timing(info: dict[str, float]) -> str:
    return (f"your recorder: {info['yours_ns']:.1f} ns per record, worst single record {info['yours_worst_ns']:,.0f} ns; "
            f"a vector grown on the hot path: {info['vector_ns']:.1f} ns, worst {info['vector_worst_ns']:,.0f} ns "
            "(its reallocations)")


RECORDER = Exercise(
    name="recorder",
    kind="c",
    filename="recorder.c",
    harness="recorder_harness.c",
    cflags=("-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc",),
    checks=(
        Check("create_args", "recorder_create refuses keep = 0; a new recorder counts 0"),
        Check("buckets", "every record counted, in the bucket of its bit length (0..64)"),
        Check("ring_wrap", "the newest keep samples, oldest first, across wrap-around"),
        Check("no_alloc", "recorder_record never allocates (1,000,000 records)"),
        Check("monitor", "one thread records 5,000,000 while a monitor reads: no lost count", 30),
        Check("monitor", "ThreadSanitizer: no data race between the recorder and the monitor", 60, "thread",
              "200000"),
    ),
    timing=Check("timing", "timing", 60),
    timing_text=_recorder_timing,
)

EXERCISES: dict[str, Exercise] = {ex.name: ex for ex in (BUDGET, CO_CORRECT, HANDLE_POOL, LOGLINEAR, MPMC, PREFETCH,
                                                         RECORDER, RING)}
