"""``run_all``: the whole suite behind ``python -m lowlat bench``, built on
the experiments (:mod:`lowlat.experiments`), the pipeline and the training
chapter.

Method (the machine is assumed noisy): variants that are compared run
interleaved (A B A B ..., alternating which goes first; :mod:`lowlat.method.interleave`)
inside one run, several times; results are medians and medians of per-round
ratios, and the core-to-core latency is sampled between queue runs so the
regime the machine was in is on record.  All times in ns.

Ctrl-C stops the suite within about a second (:mod:`lowlat.core.stop`: the
C loops poll the core's stop flag, and every measurement is checked before
the next starts): :func:`run_all` then raises
:class:`~lowlat.core.stop.Interrupted` whose ``partial`` holds every key of
the steps that finished.  A step cut short contributes nothing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, TypeVar

from lowlat.bench.keys import KEYS, NEEDS_TWO_CPUS
from lowlat.core.affinity import cpu_count, usable_cpus
from lowlat.core.clock import clock_info
from lowlat.core.spsc import default_layout
from lowlat.core.stop import Interrupted, check, requested, stoppable
from lowlat.experiments import async_logging as coldlog
from lowlat.experiments import build_variants as variant
from lowlat.experiments import memory_orders as orders
from lowlat.experiments import payload, queues
from lowlat.experiments.alloc import compare_alloc, page_faults
from lowlat.experiments.queues import (
    c2c_one_way_ns,
    python_queue,
    spsc_op_ns,
    spsc_python_batches,
    spsc_rtt,
    spsc_throughput,
)
from lowlat.experiments.taxes import chase_ns, hist_record_ns, mutex_ns, syscall_ns
from lowlat.machine.placement import bench_cpus, default_wait
from lowlat.method.interleave import interleave, median, medians, ratios

STEPS = 14
# The SPSC step's refilling producer: after finding the 1,024-slot ring full
# it waits for an eighth of it (16 lines of uint64) before pushing again.
REFILL = 128
T = TypeVar("T")


def _checked(fn: Callable[[], T]) -> Callable[[], T]:
    """``fn`` with a stop check before it (so nothing new starts after a
    Ctrl-C) and after it (so a measurement a stop cut short is never used)."""

    def run() -> T:
        check("stopped between two measurements")
        out = fn()
        check("stopped during a measurement")
        return out

    return run


def run_all(quick: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """Runs every benchmark; returns the flat dict of :data:`KEYS` (numbers).
    Ctrl-C raises :class:`~lowlat.core.stop.Interrupted` within about a second;
    its ``partial`` is the dict of the keys measured before (finished steps)."""
    say = progress or (lambda s: None)
    r: dict[str, float] = {}
    done = [0, ""]  # the step running: number, title

    def step(n: int, title: str, measure: Callable[[], dict[str, float]]) -> None:
        done[:] = [n, title]
        say(f"[{n}/{STEPS}] {title}")
        try:
            values = measure()
        except Interrupted:
            raise
        except Exception as exc:  # a measurement a stop cut short can fail its own checks
            if requested():
                raise Interrupted("stopped during a measurement") from exc
            raise
        check("stopped during a measurement")
        r.update(values)

    try:
        with stoppable():
            _steps(quick, step, r)
    except Interrupted as exc:
        exc.partial = {k: float(r[k]) for k in KEYS if k in r}
        exc.what = (
            f"bench stopped during step {done[0]}/{STEPS} ({done[1]}); "
            f"{len(exc.partial)} of {len(KEYS)} keys were measured before"
        )
        raise
    missing = set(KEYS) - set(r) - NEEDS_TWO_CPUS
    if missing:  # every step fills its keys; only the core-to-core ones may be absent
        raise AssertionError(f"the bench suite did not measure {', '.join(sorted(missing))}")
    return {k: float(r[k]) for k in KEYS if k in r}


def _steps(quick: bool, step: Callable[[int, str, Callable[[], dict[str, float]]], None], r: dict[str, float]) -> None:
    """The suite's steps, in order; each ``step(n, title, measure)``
    runs ``measure`` and keeps its keys in ``r``."""
    t_start = time.perf_counter()
    reps = 3 if quick else 7
    pinned = bench_cpus()[0] >= 0
    wait = default_wait()

    def clocks() -> dict[str, float]:
        ci = clock_info(200_000 if quick else 1_000_000)
        return dict(
            clock_read_ns=ci.monotonic_read_ns,
            clock_coarse_read_ns=ci.coarse_read_ns,
            tsc_read_ns=ci.tsc_read_ns,
            tsc_ordered_read_ns=ci.tsc_ordered_read_ns,
            py_perf_counter_ns=ci.python_perf_counter_ns,
        )

    step(1, "clocks", clocks)

    ops = 100_000 if quick else 400_000

    def alloc_steady() -> dict[str, float]:
        steady = compare_alloc("steady", ops=ops, rounds=reps)
        return dict(
            pool_alloc_free_ns=steady.pool_mean_ns,
            malloc_free_ns=steady.malloc_mean_ns,
            pool_vs_malloc_speedup_steady=steady.speedup,
        )

    step(2, "malloc vs pool, steady state", alloc_steady)

    def alloc_frag() -> dict[str, float]:
        frag = compare_alloc("fragmented", ops=ops, rounds=reps)
        return dict(
            pool_frag_ns=frag.pool_mean_ns,
            malloc_frag_ns=frag.malloc_mean_ns,
            pool_vs_malloc_speedup=frag.speedup,
            pool_p99_ns=frag.pool["p99"],
            malloc_p99_ns=frag.malloc["p99"],
            pool_p999_ns=frag.pool["p99.9"],
            malloc_p999_ns=frag.malloc["p99.9"],
            pool_max_ns=frag.pool["max"],
            malloc_max_ns=frag.malloc["max"],
            per_op_timer_ns=frag.timer_overhead_ns,
        )

    step(3, "malloc vs pool, fragmented heap", alloc_frag)

    c2c: list[float] = []
    # Many short rounds rather than a few long ones: a round between two cores
    # settles into a faster or a slower rhythm of line transfers, and the
    # ratios below are medians over rounds, so they need many rounds.
    spsc_rounds = 7 if quick else 21
    step(
        4,
        f"SPSC throughput: layouts, cache, calls, waits, interleaved x{spsc_rounds}",
        lambda: _spsc_throughput(quick, spsc_rounds, wait, c2c),
    )

    def round_trip() -> dict[str, float]:
        n = 20_000 if quick else 100_000
        runs = interleave(
            {
                "inline": _checked(lambda: spsc_rtt(1024, n, wait=wait)),
                "api": _checked(lambda: spsc_rtt(1024, n, wait=wait, api=True)),
            },
            reps,
            between=_sampler(c2c, wait, 20_000 if quick else 50_000),
        )

        def rtt(kind: str, p: float) -> float:
            """Median over the rounds of each run's round-trip percentile ``p`` (ns)."""
            return median(float(r.rtt.percentile(p)) for r in runs[kind] if r.rtt is not None)

        out: dict[str, float] = dict(
            spsc_rtt_ns=rtt("inline", 50), spsc_rtt_p99_ns=rtt("inline", 99), spsc_api_rtt_ns=rtt("api", 50)
        )
        out.update(_c2c_keys("spsc_rtt", c2c[-reps:]))
        good = _finite(c2c)
        if good:  # none on one usable CPU: the keys are left out, not filled with a time slice
            out.update(
                c2c_one_way_ns=median(good),
                c2c_one_way_min_ns=min(good),
                c2c_one_way_max_ns=max(good),
            )
        return out

    step(5, "SPSC round trip", round_trip)

    def python_queues() -> dict[str, float]:
        n_batch = 2_000_000 if quick else 10_000_000
        q = medians(
            interleave(
                {
                    "spsc_batch_items_per_s": _checked(lambda: spsc_python_batches(n_batch)),
                    "py_queue_items_per_s": _checked(lambda: python_queue(50_000 if quick else 200_000, "Queue")),
                    "py_simplequeue_items_per_s": _checked(
                        lambda: python_queue(200_000 if quick else 1_000_000, "SimpleQueue")
                    ),
                },
                3,
            )
        )
        q["spsc_batch_vs_py_queue"] = q["spsc_batch_items_per_s"] / q["py_queue_items_per_s"]
        q["spsc_batch_vs_py_simplequeue"] = q["spsc_batch_items_per_s"] / q["py_simplequeue_items_per_s"]
        return q

    step(6, "queues between Python threads, interleaved x3", python_queues)

    def one_core() -> dict[str, float]:
        n = 2_000_000 if quick else 10_000_000
        m = 1_000_000 if quick else 4_000_000
        runs = interleave(
            {
                "hist_record_ns": _checked(lambda: hist_record_ns(n)),
                "hist_record_inline_ns": _checked(lambda: hist_record_ns(n, exported=False)),
                "spsc_op_ns": _checked(lambda: spsc_op_ns(m)),
                "spsc_api_op_ns": _checked(lambda: spsc_op_ns(m, api=True)),
            },
            reps,
        )
        out = medians(runs)
        out["spsc_api_op_over_inline"] = median(ratios(runs["spsc_api_op_ns"], runs["spsc_op_ns"]))
        return out

    step(7, "one core: a histogram record, a ring push+pop, exported and inlined", one_core)

    def taxes() -> dict[str, float]:
        def med(fn: Callable[[], float], times: int = reps) -> float:
            return median(_checked(fn)() for _ in range(times))

        dram = (128 if quick else 256) * 2**20
        return dict(
            mutex_uncontended_ns=med(lambda: mutex_ns(500_000)),
            mutex_contended_ns=med(lambda: mutex_ns(200_000 if quick else 1_000_000, contended=True)),
            syscall_ns=med(lambda: syscall_ns(100_000)),
            chase_l1_ns=med(lambda: chase_ns(16 * 1024, 2_000_000)),
            chase_dram_ns=med(lambda: chase_ns(dram, 1_000_000 if quick else 3_000_000), 1),
        )

    step(8, "hidden taxes: mutex, syscall, pointer chase", taxes)

    def faults() -> dict[str, float]:
        pf = page_faults(nbytes=(16 if quick else 64) * 2**20)  # bytes: pages are 4-64 KiB
        return dict(
            page_fault_ns=pf.first_touch_ns, prefaulted_touch_ns=pf.prefaulted_ns, page_faults_counted=pf.minor_faults
        )

    step(9, "page faults", faults)
    # The pipeline runs before the training step: numpy's matrix products
    # start a BLAS thread pool, and nothing pinned should run after that.
    step(
        10,
        f"pipeline: the source's settings, the best, and its floor, interleaved x{3 if quick else 5}",
        lambda: _pipeline(quick, wait),
    )
    step(11, "memory orders, topology and payload size", lambda: _orders_topology(quick, wait))
    step(12, "the cold path: a write per event against a log ring", lambda: _known(coldlog.bench_keys(quick)))

    def build_flags() -> dict[str, float]:
        c2c_here: list[float] = []
        out = variant.bench_keys(quick, between=_sampler(c2c_here, wait))
        return _known({**out, **_c2c_keys("variant", c2c_here)})

    step(13, "build flags: the -O2 core against -O3 -march=native", build_flags)
    step(14, "training: batching, calls into C, prefetching, float32", lambda: _training(quick, reps))
    r.update(
        cpus=cpu_count(), usable_cpus=len(usable_cpus()), pinned=int(pinned), spin=int(wait == "spin"), quick=int(quick)
    )
    r["bench_seconds"] = time.perf_counter() - t_start


def _spsc_throughput(quick: bool, reps: int, wait: str, c2c: list[float]) -> dict[str, float]:
    """Chapter 03's rings (the default, the other cursor placement, unpadded, uncached, batched,
    through the exported calls, a producer that retries a full ring at once,
    and backing off when spinning), interleaved
    ``reps`` times, the core-to-core latency sampled before each round
    (appended to ``c2c``)."""
    items = 1_000_000 if quick else 2_000_000
    # Every per-record ring but "plain" has the producer wait for REFILL free
    # slots after finding it full: retrying at once keeps both cores on the
    # line the consumer is reading, a cost that hides the others measured here.
    r = {"refill": REFILL}
    # The default ring has one of the two placements: only the other one
    # runs as a variant of its own.
    other = "spread" if default_layout() == "adjacent" else "adjacent"
    variants: dict[str, dict[str, Any]] = {
        "best": r,
        "unpadded": {"padded": False, **r},
        other: {other: True, **r},
        "uncached": {"cached": False, **r},
        "batch": {"batch": 256},
        "api": {"api": True, **r},
        "plain": {},
    }
    if wait == "spin":  # two spinning threads fit: also the consumer that looks less often
        variants["backoff"] = {"wait": "backoff", **r}
    first = len(c2c)

    def ring(name: str, kw: dict) -> Callable[[], float]:
        def run() -> float:
            res = spsc_throughput(1024, items, **{"wait": wait, **kw})
            if res.errors:
                raise AssertionError(f"SPSC benchmark delivered {res.errors} records out of order ({name})")
            return res.items_per_s

        return run

    tp = interleave(
        {name: _checked(ring(name, kw)) for name, kw in variants.items()},
        reps,
        between=_sampler(c2c, wait, 20_000 if quick else 50_000),
    )
    adjacent = tp["best"] if other == "spread" else tp["adjacent"]
    spread = tp["spread"] if other == "spread" else tp["best"]
    out: dict[str, float] = {
        "spsc_items_per_s": median(tp["best"]),
        "spsc_api_items_per_s": median(tp["api"]),
        "spsc_api_vs_inline": median(ratios(tp["api"], tp["best"])),
        "spsc_unpadded_items_per_s": median(tp["unpadded"]),
        "spsc_uncached_items_per_s": median(tp["uncached"]),
        "spsc_c_batch_items_per_s": median(tp["batch"]),
        "spsc_padded_vs_unpadded": median(ratios(tp["best"], tp["unpadded"])),
        "spsc_spread_items_per_s": median(spread),
        "spsc_adjacent_items_per_s": median(adjacent),
        "spsc_adjacent_vs_spread": median(ratios(adjacent, spread)),
        "spsc_default_spread": float(other == "adjacent"),
        "spsc_cached_vs_uncached": median(ratios(tp["best"], tp["uncached"])),
        "spsc_plain_items_per_s": median(tp["plain"]),
        "spsc_refill_vs_plain": median(ratios(tp["best"], tp["plain"])),
    }
    if "backoff" in tp:
        out.update(
            spsc_backoff_items_per_s=median(tp["backoff"]),
            spsc_backoff_vs_spin=median(ratios(tp["backoff"], tp["best"])),
        )
    out.update(_c2c_keys("spsc", c2c[first:]))  # the regime these rounds ran in
    return out


def _sampler(into: list[float], wait: str, round_trips: int = 20_000) -> Callable[[], None]:
    """A ``between`` for :func:`interleave`: one core-to-core sample (ns, NaN
    with one usable CPU; over ``round_trips``) appended to ``into`` before
    each round."""
    return _checked(lambda: into.append(c2c_one_way_ns(round_trips, wait=wait)))


def _c2c_keys(prefix: str, samples: list[float]) -> dict[str, float]:
    """``<prefix>_c2c_ns`` / ``_min_ns`` / ``_max_ns``: the median and range
    of the core-to-core samples taken beside a group of two-core figures;
    none with one usable CPU (the keys are then left out)."""
    good = _finite(samples)
    if not good:
        return {}
    return {f"{prefix}_c2c_ns": median(good), f"{prefix}_c2c_min_ns": min(good), f"{prefix}_c2c_max_ns": max(good)}


def _known(values: dict[str, float]) -> dict[str, float]:
    """``values`` without the keys that need two usable CPUs and have no
    value here (they are left out, as everywhere in the suite); keys that
    may be null keep their NaN."""
    return {k: v for k, v in values.items() if not (k in NEEDS_TWO_CPUS and math.isnan(v))}


def _orders_topology(quick: bool, wait: str) -> dict[str, float]:
    """Chapter 03b's store and load costs, chapter 03's SMT-sibling hand-off
    and its ring of 64-byte records against a ring of indices; the
    core-to-core latency sampled before each round of the two-core figures
    (``ring_c2c_*``)."""
    c2c: list[float] = []
    out = orders.bench_keys(quick, between=_sampler(c2c, wait))
    out.update(payload.bench_keys(quick, between=_sampler(c2c, wait)))
    out.update(queues.bench_keys(quick))
    out.update(_c2c_keys("ring", c2c))
    return _known(out)


def _training(quick: bool, reps: int) -> dict[str, float]:
    """Chapter 06's figures: batching at two levels and the prefetch sweep."""
    from lowlat.train import batching, loader, precision

    norms = batching.compare_row_norms(1000 if quick else 2000, 256, repeats=reps)
    if not norms.equal:
        raise AssertionError(f"batched row norms differ from per-row ones (max relative {norms.max_rel_diff:.2e})")
    ffi_c = batching.ffi_costs(50_000 if quick else 100_000, repeats=reps)
    src = loader.HeavyTailSource(n=150 if quick else 300)
    depths = (0, 4, 16) if quick else (0, 1, 2, 4, 8, 16, 32)
    sweep = loader.depth_sweep(src, depths, loader.SimulatedStep(2.0))
    best = min((d for d in depths if d > 0), key=lambda d: sweep[d].bubble_fraction)
    return {
        "batch_vs_row_speedup": norms.speedup,
        "ffi_call_ns": ffi_c.call_ns,
        "ffi_batched_item_ns": ffi_c.batched_item_ns,
        "prefetch_bubble_fraction_depth0": sweep[0].bubble_fraction,
        "prefetch_bubble_fraction_best": sweep[best].bubble_fraction,
        "prefetch_best_depth": best,
        **precision.bench_keys(quick),
    }


def _pipeline(quick: bool, wait: str) -> dict[str, float]:
    """Chapter 05's table, its two ends: medians over interleaved runs, with
    the core-to-core floor sampled before each round."""
    from lowlat.experiments import pipeline

    ticks = 20_000 if quick else 100_000
    c2c: list[float] = []

    def run(name: str, cfg: pipeline.PipelineConfig) -> Callable[[], dict[str, float]]:
        def go() -> dict[str, float]:
            res = pipeline.run(cfg)
            if res.lost:
                raise AssertionError(f"the pipeline lost {res.lost} ticks ({name})")
            return res.summary()

        return go

    best = pipeline.best_config(ticks)

    def floor() -> dict[str, float]:
        return {"p50": pipeline.floor(best).p50}

    runs = interleave(
        {
            "best": _checked(run("best", best)),
            "floor": _checked(floor),
            "seed": _checked(run("seed", pipeline.seed_config(ticks))),
        },
        3 if quick else 5,
        between=_sampler(c2c, wait),
    )
    med = {name: {k: median(x[k] for x in xs) for k in xs[0]} for name, xs in runs.items()}
    out: dict[str, float] = {
        "pipeline_p50_ns": med["best"]["p50"],
        "pipeline_p99_ns": med["best"]["p99"],
        "pipeline_p999_ns": med["best"]["p99.9"],
        "pipeline_max_ns": med["best"]["max"],
        "pipeline_seed_p50_ns": med["seed"]["p50"],
        "pipeline_seed_p99_ns": med["seed"]["p99"],
        "pipeline_seed_max_ns": med["seed"]["max"],
        "pipeline_floor_p50_ns": med["floor"]["p50"],
        "pipeline_p50_over_floor": median(ratios([x["p50"] for x in runs["best"]], [x["p50"] for x in runs["floor"]])),
    }
    out.update(_c2c_keys("pipeline", c2c))
    if "pipeline_c2c_ns" in out:  # no core-to-core floor on one usable CPU
        out["pipeline_p50_over_c2c"] = med["best"]["p50"] / out["pipeline_c2c_ns"]
    return out


def _finite(xs: list[float]) -> list[float]:
    """The core-to-core samples that exist (NaN = no second usable CPU)."""
    return [x for x in xs if math.isfinite(x) and x > 0]


__all__ = ["STEPS", "run_all"]
