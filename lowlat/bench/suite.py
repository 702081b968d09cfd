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

A step that raises (a measurement that fails its own check, a build step on
an installed wheel without a compiler) does not end the suite: it is
reported in the results (:class:`~lowlat.bench.results.BenchResults`:
``failures``, with the reason; its keys NaN, null in the JSON) and every
other step still runs and is kept.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from lowlat.bench.keys import KEYS, NEEDS_TWO_CPUS
from lowlat.bench.measures import (
    c2c_keys,
    c2c_sampler,
    checked,
    finite,
    known,
    orders_topology_keys,
    pipeline_keys,
    ratio,
    spsc_throughput_keys,
    training_keys,
)
from lowlat.bench.results import BenchResults, StepFailure, inconclusive
from lowlat.core.affinity import cpu_count, usable_cpus
from lowlat.core.clock import clock_info
from lowlat.core.stop import Interrupted, check, requested, stoppable
from lowlat.experiments import async_logging as coldlog
from lowlat.experiments import build_variants as variant
from lowlat.experiments.alloc import compare_alloc, page_faults
from lowlat.experiments.queues import (
    python_queue,
    spsc_op_ns,
    spsc_python_batches,
    spsc_rtt,
)
from lowlat.experiments.taxes import chase_ns, hist_record_ns, mutex_ns, syscall_ns
from lowlat.machine.placement import bench_cpus, default_wait
from lowlat.method.interleave import interleave, median, medians

STEPS = 14


def run_all(quick: bool = False, progress: Callable[[str], None] | None = None) -> BenchResults:
    """Runs every benchmark; returns the flat dict of :data:`KEYS` (numbers)
    as :class:`BenchResults`: a step that raised is in ``failures`` (its
    keys NaN) and the other steps' keys are all there.  Ctrl-C raises
    :class:`~lowlat.core.stop.Interrupted` within about a second; its
    ``partial`` is the dict of the keys measured before (finished steps)."""
    say = progress or (lambda s: None)
    r: dict[str, float] = {}
    failed: list[tuple[int, str, str]] = []  # step, title, reason
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
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            failed.append((n, title, reason))
            say(f"[{n}/{STEPS}] {title}: FAILED ({reason}); the other steps go on")
            return
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
    return _collect(r, failed)


def _collect(r: dict[str, float], failed: list[tuple[int, str, str]]) -> BenchResults:
    """The results in :data:`KEYS` order.  The keys no step measured (but
    those that need two usable CPUs, left out when there are not two) belong
    to the failed steps: NaN, each failure naming them.  With no failure,
    every key must be there."""
    missing = tuple(k for k in KEYS if k not in r and k not in NEEDS_TWO_CPUS)
    if missing and not failed:  # every step fills its keys; only the core-to-core ones may be absent
        raise AssertionError(f"the bench suite did not measure {', '.join(missing)}")
    values = {k: float(r[k]) for k in KEYS if k in r}
    values.update({k: math.nan for k in missing})
    failures = [StepFailure(n, title, reason, missing) for n, title, reason in failed]
    return BenchResults(values, failures, bands(r))


def bands(r: dict[str, float]) -> dict[str, tuple[float, float]]:
    """The 90% bands the steps measured for their ratio keys (``key@lo`` /
    ``key@hi`` beside ``key``), by key; only keys with a value."""
    return {
        k: (r[f"{k}@lo"], r[f"{k}@hi"])
        for k in KEYS
        if f"{k}@lo" in r and f"{k}@hi" in r and k in r and math.isfinite(r[k])
    }


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
    spsc_rounds = 31 if quick else 41
    step(
        4,
        f"SPSC throughput: layouts, cache, calls, waits, interleaved x{spsc_rounds}",
        lambda: spsc_throughput_keys(quick, spsc_rounds, wait, c2c),
    )

    # The round trips' ratio is a median over rounds too: more of them than reps.
    rtt_rounds = 21 if quick else 31

    def round_trip() -> dict[str, float]:
        n = 20_000 if quick else 100_000
        runs = interleave(
            {
                "inline": checked(lambda: spsc_rtt(1024, n, wait=wait)),
                "api": checked(lambda: spsc_rtt(1024, n, wait=wait, api="record")),
            },
            rtt_rounds,
            between=c2c_sampler(c2c, wait, 20_000 if quick else 50_000),
        )

        def rtt(kind: str, p: float) -> float:
            """Median over the rounds of each run's round-trip percentile ``p`` (ns)."""
            return median(float(r.rtt.percentile(p)) for r in runs[kind] if r.rtt is not None)

        def p50s(kind: str) -> list[float]:
            return [float(r.rtt.percentile(50)) if r.rtt is not None else math.nan for r in runs[kind]]

        out: dict[str, float] = dict(
            spsc_rtt_ns=rtt("inline", 50), spsc_rtt_p99_ns=rtt("inline", 99), spsc_api_rtt_ns=rtt("api", 50)
        )
        out.update(ratio("spsc_api_rtt_vs_inline", p50s("api"), p50s("inline")))
        out.update(c2c_keys("spsc_rtt", c2c[-rtt_rounds:]))
        good = finite(c2c)
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
                    "spsc_batch_items_per_s": checked(lambda: spsc_python_batches(n_batch)),
                    "py_queue_items_per_s": checked(lambda: python_queue(50_000 if quick else 200_000, "Queue")),
                    "py_simplequeue_items_per_s": checked(
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
                "hist_record_ns": checked(lambda: hist_record_ns(n)),
                "hist_record_inline_ns": checked(lambda: hist_record_ns(n, exported=False)),
                "spsc_op_ns": checked(lambda: spsc_op_ns(m)),
                "spsc_api_op_ns": checked(lambda: spsc_op_ns(m, api="record")),
                "spsc_bare_op_ns": checked(lambda: spsc_op_ns(m, api="bare")),
            },
            reps,
        )
        out = medians(runs)
        out.update(ratio("spsc_api_op_over_inline", runs["spsc_api_op_ns"], runs["spsc_op_ns"]))
        return out

    step(7, "one core: a histogram record, a ring push+pop, exported and inlined", one_core)

    def taxes() -> dict[str, float]:
        def med(fn: Callable[[], float], times: int = reps) -> float:
            return median(checked(fn)() for _ in range(times))

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
        f"pipeline: the source's settings, the best, and its floor, interleaved x{7 if quick else 9}",
        lambda: pipeline_keys(quick, wait),
    )
    step(11, "memory orders, topology and payload size", lambda: orders_topology_keys(quick, wait))
    step(12, "the cold path: a write per event against a log ring", lambda: known(coldlog.bench_keys(quick)))

    def build_flags() -> dict[str, float]:
        c2c_here: list[float] = []
        out = variant.bench_keys(quick, between=c2c_sampler(c2c_here, wait))
        return known({**out, **c2c_keys("variant", c2c_here)})

    step(13, "build flags: the -O2 core against -O3 -march=native", build_flags)
    step(14, "training: batching, calls into C, prefetching, float32", lambda: training_keys(quick, reps))
    r.update(
        cpus=cpu_count(), usable_cpus=len(usable_cpus()), pinned=int(pinned), spin=int(wait == "spin"), quick=int(quick)
    )
    r["ratios_inconclusive"] = sum(inconclusive(r[k], band) for k, band in bands(r).items())
    r["bench_seconds"] = time.perf_counter() - t_start


__all__ = ["STEPS", "bands", "run_all"]
