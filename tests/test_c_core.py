"""The C core on its own: warning-clean under the strictest flags, and its
stress harnesses clean under ThreadSanitizer and AddressSanitizer/UBSan.
Everything is built with :func:`lowlat.core.toolchain.compile_c`."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT, build, run_sanitized, warning_failures

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("std", ["c11", "c17"])
def test_core_compiles_warning_free(cc: str, tmp_path: Path, std: str) -> None:
    """Every source and demo, and every header on its own, with
    ``-Wall -Wextra -Werror -pedantic`` under $CC (the portability job runs
    this file with CC=clang: Debian 12's clang 14 is the strictest here)."""
    failures = warning_failures(cc, tmp_path, std)
    assert not failures, "not warning-clean:\n" + "\n".join(failures)


def test_spsc_stress_under_thread_sanitizer(cc: str, tmp_path: Path) -> None:
    """4 x 10^6 records through the headline ring (about 4,000 laps of its
    1,024 slots), a tenth of that through every variant, then the benchmark
    loops; any data race report fails."""
    exe = build(cc, tmp_path / "spsc_stress", [str(ROOT / "tests/c/spsc_stress.c")], "thread")
    res = run_sanitized(exe, ["4000000"], "thread", timeout=600)
    out = res.stdout + res.stderr
    assert "ThreadSanitizer" not in out, out[-4000:]
    assert res.returncode == 0, out[-4000:]
    assert "OK: 0 errors" in res.stdout


def test_pool_and_hist_under_address_sanitizer(cc: str, tmp_path: Path) -> None:
    exe = build(cc, tmp_path / "pool_hist_check", [str(ROOT / "tests/c/pool_hist_check.c")], "address")
    res = run_sanitized(exe, [], "address", timeout=300)
    out = res.stdout + res.stderr
    assert "Sanitizer" not in out and "runtime error" not in out, out[-4000:]
    assert res.returncode == 0, out[-4000:]
    assert "OK: 0 failures" in res.stdout


def test_relaxed_publish_is_reported_by_thread_sanitizer() -> None:
    """The deliberately broken build (relaxed store of tail) must be caught:
    the proof that the sanitizer run above can see this kind of bug."""
    from lowlat.experiments.demos import relaxed_publish_demo

    plain = relaxed_publish_demo(sanitize=False, items=100_000)
    assert plain.returncode == 0 and "relaxed publish: 100000 records" in plain.stdout
    tsan = relaxed_publish_demo(sanitize=True, items=100_000)
    assert "WARNING: ThreadSanitizer: data race" in tsan.stderr
    assert "ll_spsc__pop1" in tsan.stderr and "ll_spsc__push1" in tsan.stderr


@pytest.mark.parametrize("sanitizer", ["thread", "address"])
def test_pipeline_stress_under_sanitizers(cc: str, tmp_path: Path, sanitizer: str) -> None:
    """Every producer mode, full policy, wait policy and sample mode, with a
    pool that runs dry: nothing lost, samples in order, no race, no memory
    error ("address" is AddressSanitizer with UBSan)."""
    exe = build(cc, tmp_path / "pipeline_stress", [str(ROOT / "tests/c/pipeline_stress.c")], sanitizer)
    res = run_sanitized(exe, ["200000"], sanitizer, timeout=600)
    out = res.stdout + res.stderr
    assert "Sanitizer" not in out and "runtime error" not in out, out[-4000:]
    assert res.returncode == 0, out[-4000:]
    assert "OK: 0 errors" in res.stdout
