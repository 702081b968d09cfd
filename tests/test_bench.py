"""The experiments return sane numbers and check their own work; the suite
writes every key.  The only timing assertions compare two things measured
in the same run, with wide margins."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from lowlat import bench
from lowlat.bench import keys as bench_keys
from lowlat.core.affinity import usable_cpus
from lowlat.experiments import alloc, queues, taxes

# The rest of the source: memory orders, topology, payload, the cold path, build flags.
ISSUE12_KEYS = [
    "seq_cst_store_ns",
    "release_store_ns",
    "smt_sibling_c2c_ns",
    "ring_struct64_items_per_s",
    "ring_index_items_per_s",
    "log_sync_p99_ns",
    "log_async_p99_ns",
    "log_async_dropped",
    "o3_native_batch_items_per_s",
]
ISSUE_KEYS = [
    "pool_alloc_free_ns",
    "malloc_free_ns",
    "pool_vs_malloc_speedup",
    "pool_p999_ns",
    "malloc_p999_ns",
    "spsc_items_per_s",
    "spsc_rtt_ns",
    "spsc_padded_vs_unpadded",
    "spsc_adjacent_vs_spread",
    "spsc_cached_vs_uncached",
    "spsc_batch_items_per_s",
    "py_queue_items_per_s",
    "py_simplequeue_items_per_s",
    "spsc_c_batch_items_per_s",
    "hist_record_ns",
    "clock_read_ns",
    "tsc_read_ns",
    "c2c_one_way_ns",
    "batch_vs_row_speedup",
    "ffi_call_ns",
    "ffi_batched_item_ns",
    "prefetch_bubble_fraction_depth0",
    "prefetch_bubble_fraction_best",
    "pipeline_p50_ns",
    "pipeline_p99_ns",
    "pipeline_p999_ns",
    "pipeline_max_ns",
    "pipeline_seed_p50_ns",
    "pipeline_seed_p99_ns",
    "pipeline_seed_max_ns",
    "pipeline_floor_p50_ns",
    "pipeline_p50_over_floor",
    "spsc_api_items_per_s",
    "spsc_api_rtt_ns",
    "hist_record_inline_ns",
    "spsc_c2c_ns",
    "spsc_rtt_c2c_ns",
    "spsc_op_ns",
    "spsc_api_op_ns",
    "spsc_api_op_over_inline",
    "spsc_plain_items_per_s",
    "spsc_refill_vs_plain",
    "spsc_api_vs_inline",
    "spsc_u64_call_vs_inline",
    "spsc_bare_call_vs_inline",
    "spsc_bare_op_ns",
    "spsc_api_rtt_vs_inline",
    "o3_native_vs_o2_item",
    "ratios_inconclusive",
]


def test_alloc_run_counts_every_op() -> None:
    for allocator in ("malloc", "pool"):
        r = alloc.alloc_run(allocator, ops=5000, live=16, min_size=16, max_size=512)
        assert r.failed == 0 and r.ops == 5000 and r.mean_ns > 0
        assert r.hist is not None and r.hist.count == 5000
    with pytest.raises(ValueError, match="allocator must be 'malloc' or 'pool', got 'jemalloc'"):
        alloc.alloc_run("jemalloc")
    with pytest.raises(ValueError, match="max_size must be >= min_size = 64, got 8"):
        alloc.alloc_run("pool", min_size=64, max_size=8)
    with pytest.raises(ValueError, match="live must be >= 1"):
        alloc.alloc_run("pool", live=0)


def test_pool_beats_malloc_on_a_fragmented_heap_same_run() -> None:
    c = alloc.compare_alloc("fragmented", ops=50_000, rounds=3)
    assert c.failed == 0
    # Measured here ~25-35x; the margin allows for a very noisy machine.
    assert c.speedup > 2, c
    # each round's batch means, in round order, for readings.compare (chapter 02)
    assert len(c.malloc_rounds_ns) == len(c.pool_rounds_ns) == 3
    assert c.pool_mean_ns == sorted(c.pool_rounds_ns)[1] and min(c.malloc_rounds_ns) > 0
    # each round's P99.9 / P50, both at least one step of the stamps: a ratio of 1 or more
    assert len(c.malloc_tail_rounds) == len(c.pool_tail_rounds) == 3 and c.timer_step_ns >= 1
    assert min(c.malloc_tail_rounds + c.pool_tail_rounds) >= 1
    with pytest.raises(ValueError, match="mode must be 'steady' or 'fragmented'"):
        alloc.compare_alloc("chaotic")


def test_spsc_benchmarks_check_order_and_report() -> None:
    run = queues.spsc_throughput(1024, 200_000)
    assert run.errors == 0 and run.items_per_s > 0
    rtt = queues.spsc_rtt(64, 2_000)
    assert rtt.errors == 0 and rtt.rtt is not None and rtt.rtt.count == 2_000
    c2c = queues.c2c_one_way_ns(2_000)
    assert c2c > 0 if len(usable_cpus()) >= 2 else math.isnan(c2c)  # one CPU: unavailable, said as NaN
    # A producer that waits for room: for a stretch, for the whole ring (it
    # must still finish), on a ring smaller than the stretch's default.
    for refill, cap in ((128, 1024), (1024, 1024), (8, 8)):
        run = queues.spsc_throughput(cap, 50_000, refill=refill)
        assert run.errors == 0 and run.items == 50_000 and run.items_per_s > 0
    with pytest.raises(ValueError, match="refill must be <= 64, got 65"):
        queues.spsc_throughput(64, 10, refill=65)
    # One thread, both paths, and a record count that ends inside a burst.
    assert queues.spsc_op_ns(1_000) > 0 and queues.spsc_op_ns(1_001, api=True) > 0
    assert queues.spsc_op_ns(1_001, api="record") > 0 and queues.spsc_op_ns(1_001, api="u64") > 0
    assert queues.spsc_op_ns(1_001, api="bare") > 0
    for api in ("u64", "record", "bare"):  # the exported calls, both kinds, and the empty call, two threads
        assert queues.spsc_throughput(1024, 50_000, refill=128, api=api).errors == 0
        assert queues.spsc_rtt(64, 1_000, api=api).errors == 0
    with pytest.raises(ValueError, match="api must be False, True or one of 'inline', 'u64', 'record', 'bare'"):
        queues.spsc_op_ns(10, api="fast")
    with pytest.raises(ValueError, match="items must be >= 1"):
        queues.spsc_op_ns(0)
    with pytest.raises(ValueError, match="wait must be one of"):
        queues.spsc_throughput(wait="sleepy")
    with pytest.raises(ValueError, match="capacity must be a power of two"):
        queues.spsc_throughput(capacity=100)


def test_python_side_queues() -> None:
    assert queues.spsc_python_batches(200_000, batch=1000, capacity=4096) > 0
    assert queues.python_queue(10_000, "Queue") > 0
    assert queues.python_queue(10_000, "SimpleQueue") > 0


def test_batched_ring_beats_queue_queue_same_run() -> None:
    ring = queues.spsc_python_batches(500_000)
    q = queues.python_queue(50_000, "Queue")
    assert ring > 5 * q  # measured here: >1000x


def test_hidden_taxes() -> None:
    assert taxes.mutex_ns(10_000) > 0
    assert taxes.mutex_ns(10_000, contended=True) > 0
    assert taxes.syscall_ns(1000) > 0
    assert taxes.chase_ns(16 * 1024, 10_000) > 0
    with pytest.raises(ValueError, match="nbytes must be >= 128"):
        taxes.chase_ns(64)
    pf = alloc.page_faults(256)
    assert pf.pages == 256 and pf.first_touch_ns > 0
    assert taxes.hist_record_ns(100_000) > 0


@pytest.mark.slow
def test_cli_bench_quick_writes_every_key(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    res = subprocess.run(
        [sys.executable, "-m", "lowlat", "bench", "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    data = json.loads(out.read_text())
    # one usable CPU: the keys that need two are left out of the JSON and say "unavailable" in the table
    absent = bench_keys.NEEDS_TWO_CPUS if len(usable_cpus()) < 2 else frozenset()
    missing = [k for k in ISSUE_KEYS if k not in data and k not in absent]
    assert not missing, f"bench JSON lacks {missing}"
    assert set(data) == set(bench.KEYS) - absent
    # Numbers; only the keys that may have nothing to measure here may be null.
    assert all(isinstance(v, (int, float)) or (v is None and k in bench_keys.MAY_BE_NULL) for k, v in data.items())
    for k in set(ISSUE12_KEYS) - absent:
        assert k in data and (data[k] is not None or k in bench_keys.MAY_BE_NULL), k
    assert data["log_async_dropped"] >= 0 and data["seq_cst_store_ns"] > 0
    assert "[9/14] page faults" in res.stderr and "[10/14] pipeline" in res.stderr  # progress goes to stderr
    for k in ISSUE_KEYS:
        assert k in res.stdout  # and every key is in the table


def test_a_python_worker_that_dies_is_reported_not_hung(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception in the producer thread reaches the caller (it used to
    leave the consumer blocked in get() forever)."""
    import queue as stdqueue

    class Broken(stdqueue.SimpleQueue):  # type: ignore[type-arg]
        def put(self, item: object, block: bool = True, timeout: float | None = None) -> None:
            if item == 5:
                raise MemoryError("no room for item 5")
            super().put(item, block, timeout)

    monkeypatch.setattr(queues.queue, "SimpleQueue", Broken)
    with pytest.raises(MemoryError, match="item 5"):
        queues.python_queue(100, "SimpleQueue")


def test_a_failing_step_is_reported_and_the_others_are_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A step that raises (here the build-flags step, as on an installed wheel
    without csrc/) is reported in the table and the JSON, its keys null with
    the reason, and every other step's keys are kept and written."""
    from lowlat.bench import suite

    keys = list(bench.KEYS)
    first, lost, last = keys[:10], keys[10:15], keys[15:]

    def fake_steps(quick: bool, step, r: dict) -> None:  # type: ignore[no-untyped-def]
        step(1, "one", lambda: {k: 1.0 for k in first})

        def broken() -> dict[str, float]:
            raise FileNotFoundError("csrc/common/ll_common.h")

        step(2, "build flags", broken)
        step(3, "three", lambda: {k: 3.0 for k in last})

    monkeypatch.setattr(suite, "_steps", fake_steps)
    said: list[str] = []
    res = suite.run_all(quick=True, progress=said.append)
    assert [f.step for f in res.failures] == [2] and set(res.failures[0].keys) == set(lost)
    assert any("FAILED" in s and "FileNotFoundError" in s for s in said)
    table = bench.format_table(res)
    assert "FAILED: step 2 (build flags) failed: FileNotFoundError: csrc/common/ll_common.h" in table
    out = tmp_path / "bench.json"
    bench.write_json(res, str(out))
    data = json.loads(out.read_text())
    assert all(data[k] == 1.0 for k in first) and all(data[k] == 3.0 for k in last)
    assert all(k in data and data[k] is None for k in lost)
    (failure,) = data["failed_steps"]
    assert failure["step"] == 2 and failure["reason"] == "FileNotFoundError: csrc/common/ll_common.h"
    assert set(failure["keys"]) == set(lost)


def test_a_suite_without_failures_writes_no_failure_entry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from lowlat.bench import suite

    monkeypatch.setattr(suite, "_steps", lambda quick, step, r: step(1, "all", lambda: dict.fromkeys(bench.KEYS, 2.0)))
    res = suite.run_all()
    assert not res.failures and res["spsc_items_per_s"] == 2.0
    out = tmp_path / "bench.json"
    bench.write_json(res, str(out))
    assert set(json.loads(out.read_text())) == set(bench.KEYS)
    monkeypatch.setattr(suite, "_steps", lambda quick, step, r: step(1, "few", lambda: {"spsc_op_ns": 1.0}))
    with pytest.raises(AssertionError, match="did not measure"):
        suite.run_all()


def test_ratio_keys_carry_a_band_and_say_when_it_is_too_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ratio key comes with the 90% band of its median; the table says
    "inconclusive" when the band reaches beyond +-15% of the value, and
    ``ratios_inconclusive`` counts those keys."""
    from lowlat.bench import suite
    from lowlat.bench.measures import ratio
    from lowlat.method.interleave import median_band

    assert median_band([5.0, 1.0, 3.0]) == (1.0, 5.0)  # too few rounds for a narrower one
    assert median_band(range(1, 16)) == (4.0, 12.0)
    steady = ratio("spsc_api_vs_inline", [1.0] * 9, [1.0, 1.01, 0.99] * 3)
    noisy = ratio("spsc_u64_call_vs_inline", [1.0] * 9, [0.5, 1.0, 2.0] * 3)

    def fake_steps(quick: bool, step, r: dict) -> None:  # type: ignore[no-untyped-def]
        step(1, "all", lambda: {**dict.fromkeys(bench.KEYS, 2.0), **steady, **noisy})
        r["ratios_inconclusive"] = sum(suite.inconclusive(r[k], band) for k, band in suite.bands(r).items())

    monkeypatch.setattr(suite, "_steps", fake_steps)
    res = suite.run_all()
    assert set(res) == set(bench.KEYS) and res.inconclusive() == ["spsc_u64_call_vs_inline"]
    assert res["ratios_inconclusive"] == 1
    table = bench.format_table(res)
    line = next(ln for ln in table.splitlines() if ln.startswith("spsc_u64_call_vs_inline"))
    assert "[inconclusive, 90% band 0.50-2.00]" in line
    line = next(ln for ln in table.splitlines() if ln.startswith("spsc_api_vs_inline "))
    assert "[90% band 0.99-1.01]" in line and "inconclusive" not in line
