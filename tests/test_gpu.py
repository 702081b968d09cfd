"""Chapter 06b's GPU module: the path every machine without CUDA takes (the
module imports without torch, says why it cannot measure, refuses cleanly,
validates its parameters first), and, marked ``gpu``, the effects the
chapter claims, on a machine with a CUDA GPU (``tools/gpu_run.sh``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lowlat.train import gpu, gpu_alloc, gpu_compile, gpu_compute, gpu_feed, gpu_sync

ROOT = Path(__file__).resolve().parent.parent
HAVE_GPU, WHY = gpu.available()
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason=f"needs a CUDA GPU and torch: {WHY}")
no_gpu = pytest.mark.skipif(HAVE_GPU, reason="this machine has a CUDA GPU: the no-GPU path is not taken")

# Every measuring entry point, with its default arguments.
PUBLIC: list[tuple[str, Callable[[], Any]]] = [
    ("transfers", gpu.transfers),
    ("host_timer_mistake", gpu.host_timer_mistake),
    ("device_name", gpu.device_name),
    ("sync_costs", gpu_sync.sync_costs),
    ("profile_gap", gpu_sync.profile_gap),
    ("bubbles", gpu_feed.bubbles),
    ("GpuCompute", lambda: gpu_feed.GpuCompute(1)),
    ("matmul_tflops", gpu_compute.matmul_tflops),
    ("stream_gbps", gpu_compute.stream_gbps),
    ("roofline", gpu_compute.roofline),
    ("bf16_error", gpu_compute.bf16_error),
    ("fusion", gpu_compute.fusion),
    ("run_policy", lambda: gpu_compile.run_policy("static")),
    ("compile.compare", gpu_compile.compare),
    ("churn", gpu_alloc.churn),
    ("alloc.compare", gpu_alloc.compare),
    ("empty_cache_cost", gpu_alloc.empty_cache_cost),
]


def test_the_module_imports_and_refuses_without_torch() -> None:
    """A child where torch cannot be imported: every module imports, the
    reason names torch, and a measuring call raises GpuUnavailable with it."""
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from lowlat.train import gpu, gpu_alloc, gpu_compile, gpu_compute, gpu_feed, gpu_sync\n"
        "ok, why = gpu.available(); print(ok); print(why)\n"
        "try:\n    gpu.transfers()\nexcept gpu.GpuUnavailable as e:\n    print('refused:', e)\n"
        "print('torch' in sys.modules and sys.modules['torch'] is not None)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    ok, why, refused, imported = res.stdout.strip().splitlines()
    assert ok == "False" and "torch is not installed" in why and '".[gpu]"' in why
    assert refused == f"refused: needs a CUDA GPU and torch: {why}"
    assert imported == "False"


def test_available_gives_one_line_of_reason() -> None:
    ok, why = gpu.available()
    assert isinstance(ok, bool) and why and "\n" not in why


@no_gpu
@pytest.mark.parametrize(("name", "fn"), PUBLIC, ids=[n for n, _ in PUBLIC])
def test_every_measurement_refuses_cleanly_without_cuda(name: str, fn: Callable[[], Any]) -> None:
    with pytest.raises(gpu.GpuUnavailable, match=r"^needs a CUDA GPU and torch: .+"):
        fn()


BAD: list[tuple[Callable[[], Any], type[Exception], str]] = [
    (lambda: gpu.transfers(sizes=[0]), ValueError, "size must be >= 1"),
    (lambda: gpu.transfers(sizes=[2 << 30]), ValueError, "size must be <= 1073741824"),
    (lambda: gpu.transfers(sizes="big"), TypeError, "sizes must be a sequence"),
    (lambda: gpu.transfers(sizes=[]), ValueError, "sizes must name at least one"),
    (lambda: gpu.transfers(repeats=0), ValueError, "repeats must be >= 1"),
    (lambda: gpu.transfers(repeats=10**6), ValueError, "repeats must be <= 100"),
    (lambda: gpu.host_timer_mistake(n=1 << 20), ValueError, "n must be <= 16384"),
    (lambda: gpu.host_timer_mistake(n=2.5), TypeError, "n must be an integer"),
    (lambda: gpu_sync.sync_costs(kinds=["sleep"]), ValueError, "kinds must name"),
    (lambda: gpu_sync.sync_costs(kinds="item"), TypeError, "kinds must be a sequence"),
    (lambda: gpu_sync.sync_costs(steps=10**7), ValueError, "steps must be <= 100000"),
    (lambda: gpu_sync.profile_gap("sleep"), ValueError, "kinds must name"),
    (lambda: gpu_feed.bubbles(depths=[100]), ValueError, "depth must be <= 64"),
    (lambda: gpu_feed.bubbles(depths=range(9)), ValueError, "depths must name 1 to 8"),
    (lambda: gpu_feed.bubbles(batch_mib=0), ValueError, "batch_mib must be >= 1"),
    (lambda: gpu_feed.bubbles(step_ms=float("nan")), ValueError, "step_ms must be a finite number"),
    (lambda: gpu_feed.serial_epoch([1, 2], None), TypeError, "source must be a HeavyTailSource"),  # type: ignore[arg-type]
    (lambda: gpu_feed.GpuCompute(0), ValueError, "matmuls must be >= 1"),
    (lambda: gpu_compute.matmul_tflops("fp8"), ValueError, "dtype must be one of"),
    (lambda: gpu_compute.matmul_tflops(n=32), ValueError, "n must be >= 64"),
    (lambda: gpu_compute.stream_gbps(mib=1 << 20), ValueError, "mib must be <= 8192"),
    (lambda: gpu_compute.bf16_error(n_sum=0), ValueError, "n_sum must be >= 1"),
    (lambda: gpu_compute.fusion(mib=True), TypeError, "mib must be an integer"),
    (lambda: gpu_compile.run_policy("jit"), ValueError, "policy must be one of"),
    (lambda: gpu_compile.run_policy("static", lengths=range(1, 10)), ValueError, "at most 8 distinct"),
    (lambda: gpu_compile.run_policy("static", lengths=[0]), ValueError, "length must be >= 1"),
    (lambda: gpu_compile.run_policy("bucketed", lengths=[300]), ValueError, "longer than the largest bucket 256"),
    (lambda: gpu_compile.run_policy("mark_dynamic", lengths=[1, 5]), ValueError, "lengths must be >= 2"),
    (lambda: gpu_compile.run_policy("static", calls=0), ValueError, "calls must be >= 1"),
    (lambda: gpu_compile.compare(policies=["jit"]), ValueError, "policies must name"),
    (lambda: gpu_alloc.churn(live=0), ValueError, "live must be >= 1"),
    (lambda: gpu_alloc.churn(min_mib=8, max_mib=4), ValueError, "max_mib must be >= 8"),
    (lambda: gpu_alloc.churn(live=10_000, max_mib=4096), ValueError, "live x max_mib must be <= 65,536"),
    (lambda: gpu_alloc.compare(timeout_s=0), ValueError, "timeout_s must be a number from 1 to 3600"),
    (lambda: gpu_alloc.empty_cache_cost(mib=-1), ValueError, "mib must be >= 1"),
]


@pytest.mark.parametrize(("call", "exc", "match"), BAD, ids=[m for _, _, m in BAD])
def test_parameters_are_checked_before_anything_runs(call: Callable[[], Any], exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        call()


def test_buckets_round_up() -> None:
    assert [gpu_compile.bucket_of(n, (64, 128, 256)) for n in (1, 64, 65, 256)] == [64, 64, 128, 256]


# ---- on a CUDA GPU ---------------------------------------------------------------------------


@pytest.mark.gpu
@needs_gpu
def test_pinned_is_at_least_twice_pageable_at_256_mib() -> None:
    (p,) = gpu.transfers(sizes=[256 << 20], repeats=3)
    print(f"256 MiB: pageable {p.pageable_gbps:.1f} GB/s, pinned {p.pinned_gbps:.1f} GB/s, {p.speedup:.2f}x")
    assert p.speedup >= 2.0, p


@pytest.mark.gpu
@needs_gpu
def test_prefetch_keeps_the_gpu_busy_where_serial_does_not() -> None:
    compute, serial, pre = gpu_feed.bubbles(gpu_feed.default_source(steps=100), depths=[8])
    busy = pre[8].busy
    print(f"{compute.matmuls} matmuls per step: GPU busy serial {serial.busy:.0%}, prefetch depth 8 {busy:.0%}")
    assert serial.busy < 0.4 and busy >= 0.8, (serial.busy, busy)


@pytest.mark.gpu
@needs_gpu
def test_item_every_step_costs_more_than_no_sync() -> None:
    c = gpu_sync.sync_costs(["none", "item"], steps=200, rounds=3)
    print(f"per step: no sync {c.median('none'):.1f} us, .item() {c.median('item'):.1f} us")
    assert c.median("item") > c.median("none")


@pytest.mark.gpu
@needs_gpu
def test_bf16_matmul_is_at_least_four_times_fp32() -> None:
    fp32, bf16 = gpu_compute.matmul_tflops("fp32", 8192, 3), gpu_compute.matmul_tflops("bf16", 8192, 3)
    print(f"8192^3 matmul: fp32 {fp32:.0f}, bf16 {bf16:.0f} TFLOP/s, {bf16 / fp32:.1f}x")
    assert bf16 >= 4 * fp32


@pytest.mark.gpu
@needs_gpu
def test_varying_shapes_recompile_and_buckets_compile_once_each() -> None:
    static = gpu_compile.run_policy("static", calls=12)
    bucketed = gpu_compile.run_policy("bucketed", calls=12)
    print(
        f"compiles: static {static.compiles} for {len(set(static.lengths))} lengths; "
        f"bucketed {bucketed.compiles} for {bucketed.buckets_used} buckets"
    )
    assert static.compiles > 1
    assert bucketed.compiles == bucketed.buckets_used
