"""lowlat.core.pipeline: nothing lost, every option reaches C, bad configs get
clear errors, and the results feed the budget API.  No fixed times."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lowlat.core.affinity import cpu_count
from lowlat.experiments import pipeline as pl

SMALL = dict(ticks=20_000)


def _accounted(r: pl.PipelineResult) -> None:
    assert r.produced == r.config.ticks
    assert r.lost == 0 and r.produced == r.consumed + r.dropped_full + r.dropped_pool
    assert r.intended.count == r.consumed and r.sent.count == r.consumed
    assert len(r.samples) + r.samples_not_kept == r.consumed
    seq = r.samples["seq"].astype(np.int64)
    assert np.all(np.diff(seq) > 0), "samples out of production order"
    assert np.all(r.latency_sent_ns >= 0) and np.all(r.latency_ns >= r.latency_sent_ns)  # sent never before due


def test_best_and_seed_configs_run_and_account_for_every_tick() -> None:
    for cfg in (pl.best_config(**SMALL), pl.seed_config(**SMALL)):
        r = pl.run(cfg)
        _accounted(r)
        assert r.dropped_full == r.dropped_pool == 0 and r.consumed == 20_000
        assert r.seconds > 0
    seed = pl.run(pl.seed_config(**SMALL))
    assert seed.sample_reallocs == 0  # the source reserves its vector
    assert seed.config.capacity == 8192 and seed.config.producer == "closed" and seed.config.cpus is None
    grown = pl.run(seed.config, samples="growing")  # the counterfactual
    _accounted(grown)
    assert grown.sample_reallocs > 5  # grown on the hot path, 16 -> 32 -> ... -> 32768


@pytest.mark.parametrize("handoff", ["cursors", "slots"])
@pytest.mark.parametrize("clock", ["monotonic", "tsc"])
def test_every_handoff_and_clock_accounts_for_every_tick(handoff: str, clock: str) -> None:
    for cfg in (
        pl.best_config(**SMALL),
        pl.seed_config(**SMALL),
        dataclasses.replace(pl.best_config(**SMALL), capacity=8, when_full="drop", rate=2_000_000.0),
    ):
        r = pl.run(cfg, handoff=handoff, clock=clock)
        _accounted(r)
        assert r.config.handoff == handoff and r.config.clock == clock
        s = r.samples
        assert np.all(s["popped_ns"] >= s["sent_ns"]) and np.all(s["stage_end_ns"][:, 3] >= s["popped_ns"])


def test_floor_runs_on_the_same_schedule_and_is_below_the_pipeline_same_run() -> None:
    from lowlat.method.interleave import interleave, median

    cfg = pl.best_config(ticks=20_000)
    f = pl.floor(cfg)
    assert f.seen + f.missed == 20_000 and f.seen > 0 and f.latency.count == f.seen
    with pytest.raises(ValueError, match="open-loop"):
        pl.floor(pl.seed_config(**SMALL))
    r = interleave({"floor": lambda: pl.floor(cfg).p50, "pipe": lambda: float(pl.run(cfg).intended.percentile(50))}, 5)
    # generous: the floor does strictly less work on the same schedule
    assert median(r["floor"]) <= 2 * median(r["pipe"])


def test_open_loop_latency_from_intended_is_at_least_from_sent() -> None:
    r = pl.run(pl.best_config(ticks=10_000, rate=100_000))
    _accounted(r)
    # The intended time is never after the send: the schedule can only be late.
    assert np.all(r.samples["sent_ns"] >= r.samples["intended_ns"])
    assert r.intended.percentile(99) >= r.sent.percentile(99)
    due = r.samples["intended_ns"].astype(np.int64)
    assert np.all(np.diff(due) >= 9_999) and np.all(np.diff(due) <= 10_001)  # 10 us apart


def test_drop_when_full_is_counted() -> None:
    r = pl.run(pl.best_config(ticks=50_000, rate=1e9), when_full="drop", capacity=2, work_ns=(0, 200, 0, 0))
    _accounted(r)
    assert r.dropped_full > 0


def test_a_pool_that_runs_dry_drops_and_counts() -> None:
    # Little's law: 500k/s x 1 ms = 500 objects in use; 64 cannot hold them.
    r = pl.run(pl.best_config(ticks=20_000, rate=500_000), pool_blocks=64, hold_ns=1_000_000)
    _accounted(r)
    assert r.dropped_pool > 0
    assert r.dropped_full == 0  # the ring waits when full: every drop is the pool's, counted as such
    # A pool large enough for the steady state can still run dry when this
    # machine is busy (the consumer falls behind, objects are held longer):
    # how many drops is load's business; that none goes uncounted is not.
    enough = pl.run(pl.best_config(ticks=20_000, rate=500_000), pool_blocks=4096, hold_ns=1_000_000)
    _accounted(enough)
    assert enough.dropped_full == 0
    assert enough.produced == enough.consumed + enough.dropped_pool


def test_bounded_samples_and_stage_times() -> None:
    r = pl.run(pl.best_config(ticks=5_000, rate=200_000), sample_capacity=1000, work_ns=(100, 300, 100, 50))
    _accounted(r)
    assert len(r.samples) == 1000 and r.samples_not_kept == 4000
    st = r.stage_ns()
    assert list(st) == ["queue", "parse", "features", "risk", "encode"]
    assert all(len(v) == 1000 and np.all(v >= 0) for v in st.values())
    assert np.median(st["features"]) >= 300  # at least the busy work asked for
    from lowlat.experiments.budget import Budget

    rep = Budget(20.0, [("queue", 5.0), ("parse", 2.0), ("features", 3.0), ("risk", 2.0), ("encode", 1.0)]).report(st)
    assert [s.stage for s in rep.stages] == list(st)


@pytest.mark.parametrize("wait", ["spin_yield", "yield", "sleep"])
def test_every_wait_policy(wait: str) -> None:
    r = pl.run(pl.best_config(ticks=2_000, rate=100_000), producer_wait=wait, consumer_wait=wait, cpus=None)
    _accounted(r)
    assert r.consumed == 2_000


@pytest.mark.parametrize(
    "change, error, message",
    [
        ({"ticks": 0}, ValueError, "ticks must be >= 1"),
        ({"producer": "bursty"}, ValueError, "producer must be one of 'closed', 'open'; got 'bursty'"),
        ({"rate": 0.0}, ValueError, r"rate must be in \(0, 1e9\] ticks per second"),
        ({"rate": "fast"}, TypeError, "rate must be a number"),
        ({"when_full": "block"}, ValueError, "when_full must be one of 'wait', 'drop'"),
        (
            {"consumer_wait": "nap"},
            ValueError,
            "consumer_wait must be one of 'spin', 'yield', 'spin_yield', 'sleep', 'backoff'",
        ),
        ({"capacity": 1000}, ValueError, "capacity must be a power of two >= 2, got 1000"),
        ({"pool_blocks": 0}, ValueError, "pool_blocks must be >= 1"),
        ({"cpus": (0, 999)}, ValueError, r"cpus\[1\] \(consumer CPU\) 999 is outside this process's affinity mask"),
        ({"cpus": (0,)}, TypeError, r"cpus must be a \(producer, consumer\) pair or None"),
        ({"cpus": (0, -1)}, ValueError, "cpus must name both CPUs or neither"),
        ({"samples": "vector"}, ValueError, "samples must be one of 'preallocated', 'growing'"),
        ({"work_ns": (1, 2)}, ValueError, "work_ns needs one value per stage"),
        ({"hold_ns": -1}, ValueError, "hold_ns must be >= 0"),
    ],
)
def test_bad_configs_are_refused_before_c(change: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        pl.run(pl.best_config(ticks=10), **change)


def test_best_config_adapts_to_the_machine() -> None:
    cfg = pl.best_config()
    if cpu_count() >= 2 and cfg.cpus is not None:
        assert cfg.producer_wait == "spin" and cfg.cpus[0] != cfg.cpus[1]
    else:
        assert cfg.producer_wait == "yield" and cfg.cpus is None
    assert "open loop" in cfg.describe() and "closed loop" in pl.seed_config().describe()


def test_sample_dtype_is_checked_against_the_c_struct() -> None:
    pl.check_sample_layout()  # the shipped dtype matches the compiled ll_pipeline_sample
    swapped = np.dtype(
        [
            ("seq", "<u8"),
            ("sent_ns", "<u8"),
            ("intended_ns", "<u8"),
            ("popped_ns", "<u8"),
            ("stage_end_ns", "<u8", (4,)),
        ]
    )
    with pytest.raises(RuntimeError, match="differ: field"):
        pl.check_sample_layout(swapped)
    with pytest.raises(RuntimeError, match="8 bytes in numpy, 64 in C"):
        pl.check_sample_layout(np.dtype([("seq", "<u8")]))


def test_wait_policies_come_from_the_core() -> None:
    from lowlat.core import pipeline as core_pipeline
    from lowlat.core._lib import lib
    from lowlat.core.wait import BENCH_WAITS, WAITS

    assert core_pipeline.WAITS is WAITS
    assert WAITS == {
        "spin": lib.LL_WAIT_SPIN,
        "yield": lib.LL_WAIT_YIELD,
        "spin_yield": lib.LL_WAIT_SPIN_YIELD,
        "sleep": lib.LL_WAIT_SLEEP,
        "backoff": lib.LL_WAIT_BACKOFF,
    }
    assert "sleep" not in BENCH_WAITS and set(BENCH_WAITS) < set(WAITS)


def test_every_cpu_pair_is_checked_by_one_rule_with_one_message() -> None:
    """The pipeline, the ring and payload benchmarks take the same forms of a
    CPU pair (a tuple or list, (-1, -1) unpinned) and refuse the same ones
    with the same message (lowlat.core.affinity.cpu_pair)."""
    from lowlat.experiments import payload, queues

    calls = {
        "pipeline": lambda cpus: pl.run(pl.best_config(ticks=10), cpus=cpus),
        "spsc": lambda cpus: queues.spsc_throughput(64, 100, cpus=cpus, wait="yield"),
        "payload": lambda cpus: payload.payload_run("index", 100, cpus=cpus, wait="yield"),
    }
    for call in calls.values():
        call([0, 0])
        call((-1, -1))
        with pytest.raises(ValueError, match=r"^cpus must name both CPUs or neither"):
            call((0, -1))
        with pytest.raises(TypeError, match=r"^cpus must be a \(producer, consumer\) pair or None"):
            call((0, 1, 2))
        with pytest.raises(ValueError, match=r"^cpus\[0\] \(producer CPU\) 4096 is outside this process's affinity"):
            call((4096, 0))


def test_floor_refuses_a_sleeping_wait_in_python() -> None:
    with pytest.raises(ValueError, match="floor\\(\\) cannot wait by sleeping"):
        pl.floor(pl.best_config(ticks=10), consumer_wait="sleep")
