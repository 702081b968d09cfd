"""The C core on its own: warning-clean under the strictest flags, and its
stress harnesses clean under ThreadSanitizer and AddressSanitizer/UBSan."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import CORE_SOURCES, CSRC, ROOT, build

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("std", ["c11", "c17"])
def test_core_compiles_warning_free(cc: str, tmp_path: Path, std: str) -> None:
    for src in CORE_SOURCES + [str(CSRC / "spsc_relaxed_demo.c")]:
        cmd = [cc, f"-std={std}", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{CSRC}", "-c", src,
               "-o", str(tmp_path / (Path(src).stem + ".o"))]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0, f"{Path(src).name} is not warning-clean:\n{res.stderr}"


def _run_sanitized(binary: Path, args: list[str], env_extra: dict[str, str], timeout: int) -> subprocess.CompletedProcess:
    env = dict(os.environ, **env_extra)
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout, env=env)


def test_spsc_stress_under_thread_sanitizer(cc: str, tmp_path: Path) -> None:
    """10^7 records through the ring (plus every variant and the benchmark
    loops); any data race report fails."""
    exe = build(cc, tmp_path / "spsc_stress", [str(ROOT / "tests/c/spsc_stress.c")],
                ["-O1", "-g", "-fsanitize=thread"])
    res = _run_sanitized(exe, ["10000000"], {"TSAN_OPTIONS": "halt_on_error=1 exitcode=66"}, timeout=600)
    out = res.stdout + res.stderr
    assert "ThreadSanitizer" not in out, out[-4000:]
    assert res.returncode == 0, out[-4000:]
    assert "OK: 0 errors" in res.stdout


def test_pool_and_hist_under_address_sanitizer(cc: str, tmp_path: Path) -> None:
    exe = build(cc, tmp_path / "pool_hist_check", [str(ROOT / "tests/c/pool_hist_check.c")],
                ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                 "-fno-sanitize-recover=undefined"])
    res = _run_sanitized(exe, [], {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
                                   "UBSAN_OPTIONS": "print_stacktrace=1"}, timeout=300)
    out = res.stdout + res.stderr
    assert "Sanitizer" not in out and "runtime error" not in out, out[-4000:]
    assert res.returncode == 0, out[-4000:]
    assert "OK: 0 failures" in res.stdout


def test_relaxed_publish_is_reported_by_thread_sanitizer() -> None:
    """The deliberately broken build (relaxed store of tail) must be caught:
    the proof that the sanitizer run above can see this kind of bug."""
    from lowlat.spsc import relaxed_publish_demo

    plain = relaxed_publish_demo(sanitize=False, items=100_000)
    assert plain.returncode == 0 and "relaxed publish: 100000 records" in plain.stdout
    tsan = relaxed_publish_demo(sanitize=True, items=100_000)
    assert "WARNING: ThreadSanitizer: data race" in tsan.stderr
    assert "ll_spsc_try_pop_u64" in tsan.stderr and "ll_spsc_try_push_u64" in tsan.stderr


@pytest.mark.parametrize("sanitizer", ["thread", "address,undefined"])
def test_pipeline_stress_under_sanitizers(cc: str, tmp_path: Path, sanitizer: str) -> None:
    """Every producer mode, full policy, wait policy and sample mode, with a
    pool that runs dry: nothing lost, samples in order, no race, no memory
    error."""
    exe = build(cc, tmp_path / "pipeline_stress", [str(ROOT / "tests/c/pipeline_stress.c")],
                ["-O1", "-g", "-fno-omit-frame-pointer", f"-fsanitize={sanitizer}"])
    env = {"TSAN_OPTIONS": "halt_on_error=1 exitcode=66", "ASAN_OPTIONS": "detect_leaks=1",
           "UBSAN_OPTIONS": "print_stacktrace=1 halt_on_error=1"}
    res = _run_sanitized(exe, ["200000"], env, timeout=600)
    out = res.stdout + res.stderr
    assert "Sanitizer" not in out and "runtime error" not in out, out[-4000:]
    assert res.returncode == 0, out[-4000:]
    assert "OK: 0 errors" in res.stdout
