"""lowlat.train: the loader's contract (order, errors, stopping, threads),
the simulations against closed forms and published figures, and argument
checks.  Timing assertions only compare two things measured in one run."""

from __future__ import annotations

import math
import os
import statistics
import threading
import time

import numpy as np
import pytest

from lowlat.train import batching, checkpoint, loader, overlap, precision, roofline, stragglers
from lowlat.train.loader import HeavyTailSource, PrefetchLoader


def _wait_threads(baseline: int, timeout_s: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while threading.active_count() > baseline:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


# ---- the source and the loader ----------------------------------------------------------


def test_source_is_seeded_and_checked() -> None:
    a, b = HeavyTailSource(n=1000, seed=3), HeavyTailSource(n=1000, seed=3)
    assert np.array_equal(a.read_times_s(), b.read_times_s())
    t = a.read_times_s()
    stalls = t > a.stall_ms / 1e3
    assert 0.005 < stalls.mean() < 0.04  # stall_prob 0.02
    assert abs(np.median(t[~stalls]) * 1e3 - a.median_ms) < 0.1
    fast = HeavyTailSource(n=5, median_ms=0, stall_prob=0)
    assert [int(x[0]) for x in fast] == [0, 1, 2, 3, 4] and len(fast) == 5
    with pytest.raises(ValueError, match=r"stall_prob must be in \[0, 1\], got 2"):
        HeavyTailSource(stall_prob=2)
    with pytest.raises(ValueError, match="median_ms must be >= 0"):
        HeavyTailSource(median_ms=-1)
    with pytest.raises(ValueError, match="index must be <= 4, got 5"):
        fast[5]


@pytest.mark.parametrize("depth", [0, 1, 3, 100])
def test_loader_keeps_order_and_counts(depth: int) -> None:
    ld = PrefetchLoader(range(500), depth)
    assert list(ld) == list(range(500))
    assert ld.produced == ld.consumed == 500
    assert list(ld) == list(range(500))  # a second epoch
    assert not ld.running


def test_loader_bad_depth() -> None:
    with pytest.raises(ValueError, match="depth must be >= 0, got -1"):
        PrefetchLoader([], -1)
    with pytest.raises(TypeError, match="depth must be an integer, got float 1.5"):
        PrefetchLoader([], 1.5)


def _failing():
    yield 1
    yield 2
    raise KeyError("record 3 is corrupt")


@pytest.mark.parametrize("depth", [0, 2])
def test_loader_reraises_the_producers_exception_with_its_traceback(depth: int) -> None:
    baseline = threading.active_count()
    got = []
    with pytest.raises(KeyError, match="record 3 is corrupt") as info:
        for x in PrefetchLoader(_failing(), depth):
            got.append(x)
    assert got == [1, 2]
    assert any(entry.name == "_failing" for entry in info.traceback)
    assert _wait_threads(baseline)


def test_break_and_close_stop_the_producer() -> None:
    baseline = threading.active_count()
    reads = []

    def endless():
        i = 0
        while True:
            reads.append(i)
            yield i
            i += 1

    for x in PrefetchLoader(endless(), 4):
        if x == 10:
            break
    assert _wait_threads(baseline), "the producer outlived an early break"
    n = len(reads)
    assert n <= 11 + 4 + 1  # bounded read-ahead
    time.sleep(0.1)
    assert len(reads) == n

    ld = PrefetchLoader(endless(), 2)
    it = iter(ld)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    assert ld.running
    ld.close()
    assert not ld.running and _wait_threads(baseline)
    with PrefetchLoader(range(100), 3) as ld2:
        next(iter(ld2))
    assert _wait_threads(baseline)


@pytest.mark.parametrize("depth", [0, 2])
def test_an_ended_pass_raises_instead_of_skipping_or_hanging(depth: int) -> None:
    """After close(), next() on the old iterator used to skip the queued
    items and then wait forever; a second iter() did the same to the first."""
    baseline = threading.active_count()
    ld = PrefetchLoader(range(10), depth)
    it = iter(ld)
    assert next(it) == 0
    ld.close()
    with pytest.raises(RuntimeError, match="has ended: the loader was closed"):
        next(it)
    a = iter(ld)
    assert next(a) == 0
    b = iter(ld)  # one pass at a time: this ends a's
    assert list(b) == list(range(10))
    with pytest.raises(RuntimeError, match="a newer iter\\(\\) over the same loader started another pass"):
        next(a)
    assert list(ld) == list(range(10))  # the loader itself is still usable
    del a, it
    assert _wait_threads(baseline)


def test_prefetch_hides_read_stalls_same_run() -> None:
    src = HeavyTailSource(n=120, median_ms=0.5, stall_prob=0.05, stall_ms=8, seed=1)
    step = loader.SimulatedStep(1.0)
    res = loader.depth_sweep(src, [0, 16], step)
    assert res[0].steps == res[16].steps == 120
    assert res[0].wait_ms.shape == res[0].step_ms.shape == (120,)
    assert np.all(res[0].step_ms >= res[0].wait_ms)
    # Measured here: ~0.35 vs ~0.01; the margin allows for a very noisy machine.
    assert res[16].bubble_fraction < res[0].bubble_fraction
    assert set(res[0].percentiles()) == {"p50", "p99", "max"}


def test_torch_epoch_says_none_without_torch() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        assert loader.torch_epoch(HeavyTailSource(n=3), loader.SimulatedStep(0.5)) is None
    else:  # pragma: no cover - only where torch is installed
        stats = loader.torch_epoch(HeavyTailSource(n=20, seed=2), loader.SimulatedStep(0.5))
        assert stats is not None and stats.steps == 20


# ---- batching ---------------------------------------------------------------------------------


def test_batched_norms_equal_per_row_and_are_faster_same_run() -> None:
    r = batching.compare_row_norms(400, 64, repeats=3)
    assert r.equal and r.max_rel_diff < 1e-12
    assert r.speedup > 1.5  # measured here ~9x
    with pytest.raises(ValueError, match="rows must be >= 1"):
        batching.compare_row_norms(0)


def test_ffi_costs_and_sweep_same_run() -> None:
    f = batching.ffi_costs(20_000, repeats=3)
    assert f.call_ns > 0 and f.c_item_ns > 0
    assert f.batched_item_ns < f.call_ns  # one crossing for all beats one per item (measured here ~30x)
    s = batching.batch_sweep(sizes=(1, 64, 4096), total=8192, repeats=2)
    assert list(s.sizes) == [1, 64, 4096]
    assert s.item_ns[0] > s.item_ns[-1]
    assert s.knee in (64, 4096)
    with pytest.raises(ValueError, match="total must be >= 4096"):
        batching.batch_sweep(sizes=(4096,), total=100)


# ---- roofline -----------------------------------------------------------------------------------


def test_roofline_places_kernels() -> None:
    roof = roofline.measure(matmul_sizes=(32, 256), vector_n=1_000_000, repeats=2, peak_n=384, stream_bytes=16 << 20)
    assert roof.peak_flops > 0 and roof.bandwidth > 0
    names = [k.name for k in roof.kernels]
    assert names == ["vector add", "reduction (sum)", "matmul 32", "matmul 256"]
    add = roof.kernels[0]
    assert math.isclose(add.intensity, 1 / 24) and roof.bound(add) == "bandwidth-bound"
    assert math.isclose(roof.kernels[3].intensity, 256 / 12)
    assert "bandwidth-bound" in roof.table()
    o = roofline.out_vs_temporaries(100_000, repeats=3)
    assert o.equal and o.temp_ms > 0 and o.out_ms > 0
    assert len(o.temp_rounds_ms) == len(o.out_rounds_ms) == 3
    assert o.temp_ms == sorted(o.temp_rounds_ms)[1] and o.out_ms == sorted(o.out_rounds_ms)[1]


def test_roofline_roofs_are_measured_apart_from_the_kernels() -> None:
    roof = roofline.measure(matmul_sizes=(32,), vector_n=100_000, repeats=2, peak_n=384, stream_bytes=16 << 20)
    assert roof.peak_kernel is not None and roof.peak_kernel.name == "matmul 384"
    assert roof.peak_flops == roof.peak_kernel.flops_per_s
    assert roof.peak_kernel.name not in [k.name for k in roof.kernels]
    assert [s.name for s in roof.stream] == ["copy 16 MiB", "add 16 MiB", "sum 16 MiB"]
    assert roof.bandwidth == max(s.bytes_per_s for s in roof.stream)
    copy = roof.stream[0]
    assert copy.bytes == 2 * 16 << 20  # read + write
    assert all(k.spread >= 0 for k in [*roof.kernels, *roof.stream, roof.peak_kernel])
    assert "compute roof:" in roof.roofs() and "bandwidth roof:" in roof.roofs()


def test_roofline_blas_capped_to_one_thread_while_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    seen: list[int] = []
    real = roofline.matmul_kernel

    def spy(n: int, repeats: int = 5) -> roofline.Kernel:
        seen.extend(p["num_threads"] for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas")
        return real(n, repeats)

    monkeypatch.setattr(roofline, "matmul_kernel", spy)
    roof = roofline.measure(matmul_sizes=(32,), vector_n=10_000, repeats=1, peak_n=64, stream_bytes=1 << 20)
    assert roof.blas_one_thread and seen and set(seen) == {1}


def _roof(peak: float = 100e9, bw: float = 10e9, *kernels: roofline.Kernel) -> roofline.Roofline:
    return roofline.Roofline(peak, bw, list(kernels))


def test_roofline_bound_by_intensity_only_with_share_apart() -> None:
    # ridge at 10 FLOP/byte; a kernel right of it at 20% of the peak is still "compute-bound" by intensity,
    # and its reading says how far below the roof it ran
    slow_mm = roofline.Kernel("matmul 32", flops=2e9, bytes=1e8, seconds=0.1)  # 20 FLOP/B, 20 GFLOP/s
    roof = _roof(100e9, 10e9, slow_mm)
    assert roof.ridge == 10 and roof.bound(slow_mm) == "compute-bound"
    assert math.isclose(roof.share(slow_mm), 0.2)
    assert "compute-bound by intensity; at 20% of its compute roof, far below it" in roof.reading(slow_mm)
    row = roof.table().splitlines()[1]
    assert row.split()[-2:] == ["20%", "compute-bound"]


def test_roofline_reading_says_when_a_kernel_is_above_its_roof() -> None:
    fast_add = roofline.Kernel("vector add", flops=1e9, bytes=24e9, seconds=2.0)  # 12 GB/s under a 10 GB/s roof
    noisy_add = roofline.Kernel("vector add", flops=1e9, bytes=24e9, seconds=2.0, spread=0.22)
    near_add = roofline.Kernel("vector add", flops=1e9, bytes=24e9, seconds=2.3)  # 10.4 GB/s
    assert "more than the measurements' spread (5%) allows: the roof is mis-measured" in _roof(
        100e9, 10e9, fast_add
    ).reading(fast_add)
    assert "on its bandwidth roof (120%, within the measurements' spread of 22%)" in _roof(
        100e9, 10e9, noisy_add
    ).reading(noisy_add)
    assert "on its bandwidth roof (104%" in _roof(100e9, 10e9, near_add).reading(near_add)


def _streams() -> list[roofline.Kernel]:
    # copy 20 GB/s (the roof), add 10 GB/s, sum 8 GB/s, on 192 MiB arrays
    return [
        roofline.Kernel("copy 192 MiB", 0.0, 20e9, 1.0, 0.02, "copy"),
        roofline.Kernel("add 192 MiB", 1e9, 10e9, 1.0, 0.02, "add"),
        roofline.Kernel("sum 192 MiB", 1e9, 8e9, 1.0, 0.02, "sum"),
    ]


def test_roofline_reading_compares_a_stream_kernel_with_its_own_stream() -> None:
    streams = _streams()
    roof = roofline.Roofline(60e9, 20e9, [], None, streams)
    add = roofline.Kernel("vector add", 4e6, 96e6, 96e6 / 9.9e9, 0.02, "add")  # 9.9 GB/s: its own stream's rate
    text = roof.reading(add)
    assert "at 50% of its bandwidth roof (the best stream, copy 192 MiB" in text
    assert "at 99% of its own stream's rate (add 192 MiB, 10.0 GB/s)" in text
    assert "bandwidth-bound at its own access pattern" in text and "not per-call overhead" in text
    assert "per-call overhead and small-size" not in text
    slow_sum = roofline.Kernel("reduction (sum)", 4e6, 32e6, 32e6 / 2e9, 0.02, "sum")  # 2 GB/s, 16 ms a call
    text = roof.reading(slow_sum)
    assert "far below even its own stream" in text and "per-call overhead does not explain it" in text
    part = roofline.Kernel("reduction (sum)", 4e6, 32e6, 32e6 / 7.2e9, 0.02, "sum")  # 90% of its stream's 8 GB/s
    assert "most of its distance below the roof is the gap between the streams; the rest, 10%" in roof.reading(part)
    cached = roofline.Kernel("vector add", 4e6, 96e6, 96e6 / 14e9, 0.02, "add")
    assert "partly stayed in a cache" in roof.reading(cached)
    # the best stream's own pattern, or no pattern: the plain roof comparison
    copy = roofline.Kernel("copy", 0.0, 1e6, 1e6 / 5e9, 0.02, "copy")
    assert roof.own_stream(copy) is None and roof.own_stream(roofline.Kernel("x", 1, 1, 1)) is None
    assert roof.ridge_text == "3" and "ridge: 3 FLOP/byte" in roof.roofs()


def test_roofline_names_per_call_overhead_only_for_short_calls() -> None:
    tiny = roofline.Kernel("matmul 32", flops=65536, bytes=24576, seconds=4e-6)  # 16 GFLOP/s of 100: lost 3.4 us
    text = _roof(100e9, 100e9, tiny).reading(tiny)  # ridge at 1: compute-bound, at 16% of its roof
    assert "likely per-call overhead and small-size inefficiency" in text
    long_mm = roofline.Kernel("matmul 512", flops=2.7e8, bytes=6.3e6, seconds=0.01)  # 27 GFLOP/s of 100, 10 ms
    text = _roof(100e9, 10e9, long_mm).reading(long_mm)
    assert "per-call overhead does not explain it" in text and "suits the BLAS worse" in text


def test_depth_against_estimate_uses_the_grid() -> None:
    grid = [0, 1, 2, 4, 8, 16, 32]
    assert loader.depth_against_estimate(grid, 16, 7.8) == ("as predicted", 8, 16)
    assert loader.depth_against_estimate(grid, 8, 7.8)[0] == "as predicted"
    assert loader.depth_against_estimate(grid, 4, 7.8)[0] == "close"
    assert loader.depth_against_estimate(grid, 32, 7.8)[0] == "close"
    assert loader.depth_against_estimate(grid, 2, 7.8)[0] == "not"
    assert loader.depth_against_estimate(grid, 32, 40.0) == ("close", 32, 32)  # beyond the grid
    with pytest.raises(ValueError, match="found must be one of the depths"):
        loader.depth_against_estimate(grid, 3, 7.8)


# ---- stragglers ------------------------------------------------------------------------------


def test_fan_out_probability_matches_the_published_figure() -> None:
    assert round(stragglers.slow_step_probability(100, 0.01), 2) == 0.63
    fo = stragglers.fan_out((1, 100, 1000), steps=5000)
    assert abs(fo.slow_share[1] - 0.634) < 0.03
    assert fo.slow_share[2] > 0.99
    assert fo.p50[0] < fo.p50[1] < fo.p50[2]
    model = stragglers.WorkerModel()
    assert fo.p50[2] > model.percentile(99)  # the step's median passes one worker's P99


def test_backup_workers_cut_the_tail() -> None:
    plain = stragglers.simulate_steps(100, 4000)
    three = stragglers.simulate_steps(100, 4000, backups=3)
    six = stragglers.simulate_steps(100, 4000, backups=6)
    # ~1 slow worker per step among 100: 3 spares fix the median, 6 the P99 too.
    assert np.percentile(three, 50) < np.percentile(plain, 50) / 2
    assert np.percentile(six, 99) < np.percentile(plain, 99) / 2
    with pytest.raises(ValueError, match="backups must be >= 0"):
        stragglers.simulate_steps(10, backups=-1)
    with pytest.raises(ValueError, match=r"slow_prob must be in \[0, 1\]"):
        stragglers.WorkerModel(slow_prob=1.5)


@pytest.mark.slow
def test_real_synchronous_steps_wait_for_the_slowest() -> None:
    model = stragglers.WorkerModel(base_ms=1.0, slow_prob=0.0)
    run = stragglers.run_sync_steps(3, 30, model, slow_worker=1, slow_factor=4.0)
    assert run.worker_ms.shape == (3, 30) and run.step_ms.shape == (30,)
    # The injected straggler is the slowest in (nearly) every step, and every step waited for it.
    assert np.mean(run.worker_ms.argmax(axis=0) == 1) > 0.9
    assert np.median(run.step_ms) >= np.median(run.worker_ms[1]) * 0.95
    with pytest.raises(ValueError, match="slow_worker must be <= 2"):
        stragglers.run_sync_steps(3, 5, slow_worker=3)


# ---- checkpointing ------------------------------------------------------------------------------


def test_young_and_daly_match_dalys_figures() -> None:
    assert round(checkpoint.young_interval(5, 24 * 60)) == 120
    assert round(checkpoint.daly_interval(5, 24 * 60)) == 117
    assert round(checkpoint.daly_interval(5, 6 * 60)) == 57
    assert checkpoint.daly_interval(100, 40) == 40  # C >= 2M: checkpoint every M
    with pytest.raises(ValueError, match="mtbf must be > 0"):
        checkpoint.young_interval(5, 0)


def test_simulation_agrees_with_the_closed_form_and_finds_the_optimum() -> None:
    c, m = 5.0, 24 * 60.0
    sim = checkpoint.simulate_goodput(120, c, m, work=200_000, runs=50)
    assert abs(sim.mean() - checkpoint.expected_goodput(120, c, m)) < 0.005
    sw = checkpoint.sweep(c, m, work=30 * 24 * 60, runs=200)
    assert sw.daly / 1.6 < sw.best < sw.daly * 1.6
    assert np.all(sw.goodput_lo <= sw.goodput) and np.all(sw.goodput <= sw.goodput_hi)
    best_expected = sw.intervals[np.argmax(sw.expected)]
    assert sw.daly / 1.2 < best_expected < sw.daly * 1.2


def test_roofline_reading_refuses_to_place_a_kernel_in_a_noisy_run() -> None:
    slow_mm = roofline.Kernel("matmul 32", flops=2e9, bytes=1e8, seconds=0.1, spread=0.9)
    text = _roof(100e9, 10e9, slow_mm).reading(slow_mm)
    assert "compute-bound by intensity" in text and "too noisy to say how close to its roof it ran" in text


# ---- float32 against float64 -------------------------------------------------------------------


def test_precision_counts_give_float32_twice_the_intensity() -> None:
    for kernel, n in (("add", 1000), ("matmul", 64)):
        assert precision.kernel_flops(kernel, n) > 0
        assert precision.intensity(kernel, n, "float32") == 2 * precision.intensity(kernel, n, np.float64)
    assert precision.kernel_bytes("add", 1000, "float32") == 3 * 1000 * 4
    assert precision.kernel_bytes("copy", 1000, "float64") == 2 * 1000 * 8
    assert precision.kernel_flops("copy", 10) == 0
    assert precision.intensity("add", 10, "float64") == 1 / 24
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got float16"):
        precision.kernel_bytes("add", 10, "float16")
    with pytest.raises(ValueError, match="kernel must be one of matmul, copy, add, got 'fma'"):
        precision.kernel_flops("fma", 10)


def test_precision_measures_both_dtypes() -> None:
    run = precision.measure(peak_n=128, stream_n=200_000, rounds=3)
    assert run.rounds == 3
    for kernel in precision.KERNELS:
        for d in precision.DTYPES:
            ts = run.seconds[kernel][d]
            assert len(ts) == 3 and all(t > 0 for t in ts)
        assert len(run.speedups(kernel)) == 3 and all(s > 0 for s in run.speedups(kernel))
    r32, r64 = run.roofline("float32"), run.roofline("float64")
    assert r32.peak_flops > 0 and r64.peak_flops > 0 and r32.bandwidth > 0 and r64.bandwidth > 0
    add32, add64 = r32.kernels[0], r64.kernels[0]
    assert add32.intensity == 2 * add64.intensity  # from the byte counts, not the clock
    assert add32.flops == add64.flops and add32.bytes * 2 == add64.bytes
    assert run.blas_one_thread == _has_threadpoolctl()
    assert len(run.bandwidth_ratios()) == 3 and run.ms("add", "float32")[0] == run.seconds["add"]["float32"][0] * 1e3
    only = precision.measure(stream_n=1000, rounds=1, kernels=("add",))
    assert set(only.seconds) == {"add"}
    with pytest.raises(ValueError, match="kernels must be a non-empty tuple"):
        precision.measure(stream_n=1000, rounds=1, kernels=())


def _has_threadpoolctl() -> bool:
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        return False
    return True


def test_float32_loses_precision_as_its_epsilon_says() -> None:
    c = precision.numeric_check(n_matmul=64, n_sum=100_000)
    assert c.eps32 == 2.0**-23 and c.eps64 == 2.0**-52
    assert 0 < c.matmul_rel < 1e-4  # a few float32 epsilons, far from float64's
    assert c.sum_rel < 1e-4
    assert c.running_sum_rel > c.sum_rel  # one accumulator, in order, rounds at every add


def test_precision_bench_key_quick() -> None:
    keys = precision.bench_keys(quick=True)
    assert set(keys) == {"roofline_f32_over_f64"}
    assert math.isfinite(keys["roofline_f32_over_f64"]) and keys["roofline_f32_over_f64"] > 0


# ---- communication/compute overlap ---------------------------------------------------------------


def test_overlap_model() -> None:
    assert overlap.predict_step_ms(30, 20, 0) == 50
    assert overlap.predict_step_ms(30, 20, 0.5) == 40
    assert overlap.predict_step_ms(30, 20, 1) == 30  # max(compute, comm)
    assert overlap.predict_step_ms(20, 30, 1) == 30
    assert overlap.predict_step_ms(10, 40, 0.5) == 20 + 20  # the hidden half outlasts compute
    steps = [overlap.predict_step_ms(30, 20, f) for f in overlap.FRACTIONS]
    assert steps == sorted(steps, reverse=True)
    with pytest.raises(ValueError, match=r"fraction must be in \[0, 1\], got 1.5"):
        overlap.predict_step_ms(1, 1, 1.5)
    with pytest.raises(ValueError, match="compute_ms must be >= 0"):
        overlap.predict_step_ms(-1, 1, 0)


def test_overlap_schedule_keeps_the_last_bucket_exposed() -> None:
    # 8 buckets of 2.5 ms: below full overlap it agrees with the simple model
    for f in (0.0, 0.25, 0.5, 0.75):
        assert overlap.schedule_step_ms(30, 20, f, 8) == pytest.approx(overlap.predict_step_ms(30, 20, f))
    assert overlap.schedule_step_ms(30, 20, 1.0, 8) == pytest.approx(30 + 20 / 8)  # the last bucket: after backward
    assert overlap.schedule_step_ms(30, 20, 1.0, 1) == 50  # one bucket: nothing can overlap
    assert overlap.schedule_step_ms(10, 40, 1.0, 4) == pytest.approx(10 / 4 + 40)  # link-bound: comm from bucket 1 on
    assert overlap.overlapped_buckets(0.75, 8) == 6
    with pytest.raises(ValueError, match="fraction must be a multiple of 1/buckets = 1/8, got 0.3"):
        overlap.schedule_step_ms(30, 20, 0.3, 8)


@pytest.mark.parametrize("mode", overlap.MODES)
def test_overlap_runs_and_leaves_no_thread(mode: str) -> None:
    baseline = threading.active_count()
    run = overlap.run_overlap(mode, compute_ms=4.0, comm_ms=2.0, buckets=4, rounds=2)
    assert run.fractions == overlap.FRACTIONS and run.buckets == 4 and run.mode == mode
    for f in run.fractions:
        assert len(run.step_ms[f]) == 2 and all(t > 0 for t in run.step_ms[f])
        assert run.scheduled(f) <= run.serial() + 1e-9 and run.predicted(f) <= run.serial() + 1e-9
    assert len(run.compute_ms) == len(run.comm_ms) == 2 and run.compute > 0 and run.comm > 0
    assert run.threads_left == 0 and _wait_threads(baseline)
    with pytest.raises(ValueError, match="mode must be one of sleep, copy"):
        overlap.run_overlap("dma")
    with pytest.raises(ValueError, match="multiple of 1/buckets"):
        overlap.run_overlap(mode, buckets=3, fractions=(0.5,))


def test_overlap_transfers_run_inside_backward_only_when_overlapped() -> None:
    # An invariant of the schedule, not a speed: without overlap every transfer is queued after
    # backward ends, so none ran inside it; with full overlap the first bucket is queued after the
    # first of 8 chunks and the link runs it while the other 7 compute (on a busy machine the link
    # thread may wake late, so only the median round is asked to show it).
    run = overlap.run_overlap("sleep", compute_ms=16.0, comm_ms=8.0, buckets=8, fractions=(0.0, 1.0), rounds=3)
    assert run.hidden_ms[0.0] == [0.0, 0.0, 0.0]
    assert len(run.hidden_ms[1.0]) == 3 and statistics.median(run.hidden_ms[1.0]) > 0
    assert all(h <= s for h, s in zip(run.hidden_ms[1.0], run.step_ms[1.0]))


@pytest.mark.skipif(not overlap.can_pin(), reason="no sched_setaffinity: threads cannot be put on one CPU")
def test_overlap_on_one_cpu_restores_the_mask() -> None:
    mask = os.sched_getaffinity(0)
    cpu = min(mask)
    run = overlap.run_overlap("copy", compute_ms=2.0, comm_ms=1.0, buckets=2, fractions=(0.0, 1.0), rounds=1, cpu=cpu)
    assert run.cpu == cpu and os.sched_getaffinity(0) == mask
    with pytest.raises(ValueError, match="is outside this process's affinity mask"):
        overlap.run_overlap("sleep", rounds=1, cpu=max(mask) + 1000)
    assert os.sched_getaffinity(0) == mask


_SUSPECTS = [None, "x", -1, 0, float("nan"), float("inf"), 1.5, True, 10**30, [], (1, 2)]


@pytest.mark.parametrize(
    "name, call",
    [
        ("kernel", lambda b: precision.kernel_flops(b, 10)),
        ("n", lambda b: precision.kernel_bytes("add", b, "float32")),
        ("dtype", lambda b: precision.intensity("add", 10, b)),
        ("peak_n", lambda b: precision.measure(peak_n=b, stream_n=100, rounds=1, kernels=("matmul",))),
        ("stream_n", lambda b: precision.measure(stream_n=b, rounds=1, kernels=("add",))),
        ("rounds", lambda b: precision.measure(stream_n=100, rounds=b, kernels=("add",))),
        ("kernels", lambda b: precision.measure(stream_n=100, rounds=1, kernels=b)),
        ("n_matmul", lambda b: precision.numeric_check(n_matmul=b, n_sum=10)),
        ("compute_ms", lambda b: overlap.predict_step_ms(b, 1, 0.5)),
        ("fraction", lambda b: overlap.schedule_step_ms(1, 1, b, 4)),
        ("buckets", lambda b: overlap.schedule_step_ms(1, 1, 0.0, b)),
        ("mode", lambda b: overlap.run_overlap(b, compute_ms=1.0, comm_ms=1.0, rounds=1)),
        ("comm_ms", lambda b: overlap.run_overlap("sleep", compute_ms=1.0, comm_ms=b, buckets=4, rounds=1)),
        ("fraction", lambda b: overlap.run_overlap("sleep", compute_ms=1.0, comm_ms=1.0, fractions=b, rounds=1)),
        ("cpu", lambda b: overlap.run_overlap("sleep", compute_ms=1.0, comm_ms=1.0, buckets=4, rounds=1, cpu=b)),
    ],
)
def test_new_training_functions_refuse_bad_arguments_by_name(name: str, call: object) -> None:
    """Each suspect argument either works or raises an error that names the
    parameter (never a bare numpy or Python error)."""
    assert callable(call)
    for b in _SUSPECTS:
        try:
            call(b)
        except (TypeError, ValueError, RuntimeError) as exc:
            assert name.lower() in str(exc).lower(), f"{b!r}: {type(exc).__name__}: {exc}"
