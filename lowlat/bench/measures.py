"""The bench suite's measurements that are more than one call: chapter 03's
rings, chapter 03b's orders and placements, chapter 05's pipeline, chapter
06's training figures, and the core-to-core samples taken beside them.  Each
returns a flat dict of :data:`lowlat.bench.keys.KEYS` (numbers; times in ns).
Run by :func:`lowlat.bench.suite.run_all`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from lowlat.bench.keys import NEEDS_TWO_CPUS
from lowlat.core.spsc import default_layout
from lowlat.core.stop import check
from lowlat.experiments import memory_orders as orders
from lowlat.experiments import payload, queues
from lowlat.experiments.queues import c2c_one_way_ns, spsc_throughput
from lowlat.method.interleave import interleave, median, median_band, ratios

# The SPSC step's refilling producer: after finding the 1,024-slot ring full
# it waits for an eighth of it (16 lines of uint64) before pushing again.
REFILL = 128
T = TypeVar("T")


def checked(fn: Callable[[], T]) -> Callable[[], T]:
    """``fn`` with a stop check before it (so nothing new starts after a
    Ctrl-C) and after it (so a measurement a stop cut short is never used)."""

    def run() -> T:
        check("stopped between two measurements")
        out = fn()
        check("stopped during a measurement")
        return out

    return run


def ratio(key: str, numerator: list[float], denominator: list[float]) -> dict[str, float]:
    """``key``: the median of the per-round ratios of two interleaved
    series, with its 90% band as ``key@lo`` / ``key@hi`` (not keys of the
    JSON: :func:`lowlat.bench.suite.run_all` keeps them as the results'
    ``bands``, and the table prints them)."""
    r = ratios(numerator, denominator)
    lo, hi = median_band(r)
    return {key: median(r), f"{key}@lo": lo, f"{key}@hi": hi}


def spsc_throughput_keys(quick: bool, reps: int, wait: str, c2c: list[float]) -> dict[str, float]:
    """Chapter 03's rings (the default, the other cursor placement, unpadded, uncached, batched,
    through the exported calls, with an empty call per record, a producer that retries a full ring at once,
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
        "api": {"api": "record", **r},
        "u64": {"api": "u64", **r},
        "bare": {"api": "bare", **r},
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
        {name: checked(ring(name, kw)) for name, kw in variants.items()},
        reps,
        between=c2c_sampler(c2c, wait, 20_000 if quick else 50_000),
    )
    adjacent = tp["best"] if other == "spread" else tp["adjacent"]
    spread = tp["spread"] if other == "spread" else tp["best"]
    out: dict[str, float] = {
        "spsc_items_per_s": median(tp["best"]),
        "spsc_api_items_per_s": median(tp["api"]),
        **ratio("spsc_api_vs_inline", tp["api"], tp["best"]),
        **ratio("spsc_u64_call_vs_inline", tp["u64"], tp["best"]),
        **ratio("spsc_bare_call_vs_inline", tp["bare"], tp["best"]),
        "spsc_unpadded_items_per_s": median(tp["unpadded"]),
        "spsc_uncached_items_per_s": median(tp["uncached"]),
        "spsc_c_batch_items_per_s": median(tp["batch"]),
        **ratio("spsc_padded_vs_unpadded", tp["best"], tp["unpadded"]),
        "spsc_spread_items_per_s": median(spread),
        "spsc_adjacent_items_per_s": median(adjacent),
        **ratio("spsc_adjacent_vs_spread", adjacent, spread),
        "spsc_default_spread": float(other == "adjacent"),
        **ratio("spsc_cached_vs_uncached", tp["best"], tp["uncached"]),
        "spsc_plain_items_per_s": median(tp["plain"]),
        **ratio("spsc_refill_vs_plain", tp["best"], tp["plain"]),
    }
    if "backoff" in tp:
        out["spsc_backoff_items_per_s"] = median(tp["backoff"])
        out.update(ratio("spsc_backoff_vs_spin", tp["backoff"], tp["best"]))
    out.update(c2c_keys("spsc", c2c[first:]))  # the regime these rounds ran in
    return out


def c2c_sampler(into: list[float], wait: str, round_trips: int = 20_000) -> Callable[[], None]:
    """A ``between`` for :func:`interleave`: one core-to-core sample (ns, NaN
    with one usable CPU; over ``round_trips``) appended to ``into`` before
    each round."""
    return checked(lambda: into.append(c2c_one_way_ns(round_trips, wait=wait)))


def c2c_keys(prefix: str, samples: list[float]) -> dict[str, float]:
    """``<prefix>_c2c_ns`` / ``_min_ns`` / ``_max_ns``: the median and range
    of the core-to-core samples taken beside a group of two-core figures;
    none with one usable CPU (the keys are then left out)."""
    good = finite(samples)
    if not good:
        return {}
    return {f"{prefix}_c2c_ns": median(good), f"{prefix}_c2c_min_ns": min(good), f"{prefix}_c2c_max_ns": max(good)}


def known(values: dict[str, float]) -> dict[str, float]:
    """``values`` without the keys that need two usable CPUs and have no
    value here (they are left out, as everywhere in the suite); keys that
    may be null keep their NaN."""
    return {k: v for k, v in values.items() if not (k in NEEDS_TWO_CPUS and math.isnan(v))}


def orders_topology_keys(quick: bool, wait: str) -> dict[str, float]:
    """Chapter 03b's store and load costs, chapter 03's SMT-sibling hand-off
    and its ring of 64-byte records against a ring of indices; the
    core-to-core latency sampled before each round of the two-core figures
    (``ring_c2c_*``)."""
    c2c: list[float] = []
    out = orders.bench_keys(quick, between=c2c_sampler(c2c, wait))
    out.update(payload.bench_keys(quick, between=c2c_sampler(c2c, wait)))
    out.update(queues.bench_keys(quick))
    out.update(c2c_keys("ring", c2c))
    return known(out)


def training_keys(quick: bool, reps: int) -> dict[str, float]:
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


def pipeline_keys(quick: bool, wait: str) -> dict[str, float]:
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
            "best": checked(run("best", best)),
            "floor": checked(floor),
            "seed": checked(run("seed", pipeline.seed_config(ticks))),
        },
        7 if quick else 9,
        between=c2c_sampler(c2c, wait),
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
        **ratio("pipeline_p50_over_floor", [x["p50"] for x in runs["best"]], [x["p50"] for x in runs["floor"]]),
    }
    out.update(c2c_keys("pipeline", c2c))
    if "pipeline_c2c_ns" in out:  # no core-to-core floor on one usable CPU
        out["pipeline_p50_over_c2c"] = med["best"]["p50"] / out["pipeline_c2c_ns"]
    return out


def finite(xs: list[float]) -> list[float]:
    """The core-to-core samples that exist (NaN = no second usable CPU)."""
    return [x for x in xs if math.isfinite(x) and x > 0]


__all__ = [
    "REFILL",
    "c2c_keys",
    "c2c_sampler",
    "checked",
    "finite",
    "known",
    "orders_topology_keys",
    "pipeline_keys",
    "ratio",
    "spsc_throughput_keys",
    "training_keys",
]
