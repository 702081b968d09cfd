"""Memory orders (lowlat.experiments.memory_orders, csrc/bench/bench_orders.c,
csrc/demos/seqlock_demo.c): the loops' arguments checked, the instruction
each order compiles to, a seq_cst store dearer than a release store on x86
(measured in the same run), the benchmark loops clean under
ThreadSanitizer, and the seqlock demo: the correct one clean and never
torn, the racy one reported, the unchecked one silent under TSan."""

from __future__ import annotations

import math
import platform
from pathlib import Path

import pytest

from conftest import CSRC, ROOT, run_sanitized
from lowlat.core import toolchain
from lowlat.experiments import memory_orders as orders
from lowlat.method.interleave import median

X86 = platform.machine().lower() in ("x86_64", "amd64")


@pytest.mark.parametrize(
    ("call", "exc"),
    [
        (lambda: orders.store_ns("acquire"), ValueError),  # acquire is not a store order
        (lambda: orders.load_ns("release"), ValueError),
        (lambda: orders.store_ns("seq_cst", 0), ValueError),
        (lambda: orders.load_ns("relaxed", 1.5), TypeError),
        (lambda: orders.store_contended_ns("sequential"), ValueError),
        (lambda: orders.seqlock_demo("fast", sanitize=False), ValueError),
        (lambda: orders.assembly("riscv"), ValueError),
    ],
)
def test_bad_arguments_are_refused_before_c(call, exc) -> None:
    with pytest.raises(exc):
        call()


def test_every_order_times_a_positive_cost() -> None:
    for order in orders.STORE_ORDERS:
        assert 0 < orders.store_ns(order, 10_000) < 1e6
    for order in orders.LOAD_ORDERS:
        assert 0 < orders.load_ns(order, 10_000) < 1e6
    c = orders.store_contended_ns("seq_cst", 10_000)
    assert math.isnan(c) or c > 0


@pytest.mark.skipif(not X86, reason="x86 only: on ARMv8 both stores are stlr")
def test_seq_cst_store_costs_more_than_release_on_x86() -> None:
    """xchg (a locked read-modify-write that drains the store buffer) against
    a plain mov: many times dearer on every x86 measured; 1.5x is the margin."""
    r = orders.measure(rounds=9, iterations=100_000)
    assert median(r["seq_cst store"]) > 1.5 * median(r["release store"]), r


def test_bench_keys_are_numbers() -> None:
    keys = orders.bench_keys(quick=True)
    assert {"seq_cst_store_ns", "release_store_ns", "seq_cst_load_ns", "acquire_load_ns"} <= set(keys)
    assert all(isinstance(v, float) for v in keys.values())
    assert all(v > 0 for k, v in keys.items() if "contended" not in k)


@pytest.mark.skipif(toolchain.c_compiler() is None, reason="needs a C compiler")
def test_native_assembly_shows_each_order() -> None:
    asm = orders.assembly("native")
    assert asm, asm.reason
    text = {k: " ".join(v) for k, v in asm.functions.items()}
    assert set(text) >= {"ll_orders_store_release", "ll_orders_store_seq_cst", "ll_orders_load_acquire"}
    if X86:
        assert "xchg" in text["ll_orders_store_seq_cst"] or "mfence" in text["ll_orders_store_seq_cst"]
        assert "xchg" not in text["ll_orders_store_release"] and "fence" not in text["ll_orders_store_release"]
        assert "fence" not in text["ll_orders_load_seq_cst"]  # a plain mov: the cost sits on the store side


def test_aarch64_assembly_uses_stlr_and_ldar() -> None:
    asm = orders.assembly("aarch64")
    if not asm:
        pytest.skip(asm.reason)
    text = {k: " ".join(v) for k, v in asm.functions.items()}
    assert "stlr" in text["ll_orders_store_release"] and "stlr" not in text["ll_orders_store_relaxed"]
    assert "ldar" in text["ll_orders_load_acquire"] or "ldapr" in text["ll_orders_load_acquire"]
    assert "ldar" not in text["ll_orders_load_relaxed"]


@pytest.mark.slow
def test_order_loops_under_thread_sanitizer(cc: str, tmp_path: Path) -> None:
    """The benchmark loops, the contended one's two threads included."""
    srcs = [ROOT / "tests/c/orders_check.c", *(CSRC / s for s in ("bench/bench_orders.c", "bench/orders_loops.c"))]
    srcs += [CSRC / "clock.c", CSRC / "affinity.c"]
    exe = tmp_path / "orders_check"
    res = toolchain.compile_c(srcs, exe, sanitizer="thread", werror=True, cc=cc)
    assert res.returncode == 0, res.stderr
    run = run_sanitized(exe, [], "thread", timeout=120)
    out = run.stdout + run.stderr
    assert "ThreadSanitizer" not in out and run.returncode == 0, out[-4000:]
    assert "OK: 0 errors" in run.stdout


@pytest.mark.slow
def test_correct_seqlock_is_clean_and_never_torn() -> None:
    plain = orders.seqlock_demo("correct", sanitize=False, snapshots=200_000)
    assert plain.returncode == 0 and plain.snapshots == 200_000 and plain.torn == 0
    tsan = orders.seqlock_demo("correct", sanitize=True, snapshots=20_000)
    assert not tsan.race_reported and not any("ThreadSanitizer" in ln for ln in tsan.report), tsan.report[:20]
    assert tsan.torn == 0 and tsan.snapshots == 20_000


@pytest.mark.slow
def test_racy_seqlock_is_reported_by_thread_sanitizer() -> None:
    """Plain data and no fences: TSan names the writer's store and the reader's load."""
    tsan = orders.seqlock_demo("racy", sanitize=True, snapshots=20_000)
    assert tsan.race_reported, tsan.report[:20]
    text = "\n".join(tsan.report)
    assert "write_racy" in text and "read_snapshot" in text


@pytest.mark.slow
def test_unchecked_seqlock_has_no_data_race() -> None:
    """Atomic data and no re-check: no race for TSan to see, which is why its
    silence is not the proof (the torn-read count is: see the chapter)."""
    tsan = orders.seqlock_demo("unchecked", sanitize=True, snapshots=20_000)
    assert not tsan.race_reported, tsan.report[:20]
