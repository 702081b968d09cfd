"""Works where the learner is: the platform hazards, each where this machine
can show it, and the ARM64 half of the portability job (``.ci/portability``).

- x86 counters: the core asks CPUID for RDTSCP and an invariant TSC and falls
  back (lfence+rdtsc, or the monotonic clock); ``LOWLAT_CPUID_HIDE`` plays a
  CPU without them, in a child process (the choice is made once per process).
- perf counters: "not supported" (ENOSYS, ENOENT, ...) is kept apart from
  "refused" (EACCES, EPERM), in C and in the doctor's wording.
- sizes: the cache line is one constant that Python reads; the page-fault
  test is sized in bytes, not in pages.
- ARM64: the core cross-built with ``aarch64-linux-gnu-gcc`` at
  ``-Werror -pedantic``, the stress harnesses run under ``qemu-aarch64``
  (static), UBSan, and ThreadSanitizer through ``setarch x86_64 -R``.
  qemu-user keeps the x86 host's store order: a pass there proves that the
  core compiles and its logic holds on ARM64, not that its memory orders are
  right on ARM hardware (ThreadSanitizer checks those against the C11 model).
  These run when ``LOWLAT_CROSS=1`` (the portability job sets it and installs
  the toolchain); otherwise they skip and say so.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, build, run_sanitized, warning_failures
from lowlat.core import clock, toolchain
from lowlat.core._lib import ffi, lib
from lowlat.experiments import alloc
from lowlat.machine import model as machine
from lowlat.machine import topology

X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")

# ---- x86 counters: CPUID decides, LOWLAT_CPUID_HIDE plays the fallbacks ------------

PROBE = """
import json
from lowlat.core import clock
from lowlat.experiments import alloc
ci = clock.clock_info(20_000)
run = alloc.alloc_run("pool", ops=20_000)
print(json.dumps(dict(kind=ci.tsc_kind, available=ci.tsc_available, ticks_per_ns=ci.tsc_ticks_per_ns,
                      ordered_read_ns=ci.tsc_ordered_read_ns, choice=ci.tsc_choice, raw=clock.tsc_read(),
                      stamped=run.hist.count, ops=run.ops, overhead_ns=run.timer_overhead_ns)))
"""


def probe_clock(hide: str | None) -> dict:
    """The clock facts and one per-op-timed benchmark, in a child process
    whose CPUID check hides ``hide``."""
    env = {k: v for k, v in os.environ.items() if k != "LOWLAT_CPUID_HIDE"}
    if hide is not None:
        env["LOWLAT_CPUID_HIDE"] = hide
    res = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, f"the child died (rc {res.returncode}):\n{res.stderr[-3000:]}"
    return json.loads(res.stdout.splitlines()[-1])


def test_counter_choice_is_reported() -> None:
    choice = clock.tsc_choice()
    ci = clock.clock_info(10_000)
    assert ci.tsc_choice == choice and choice
    assert ci.tsc_kind in clock.TSC_KINDS.values()
    if ci.tsc_available:
        assert ci.tsc_ticks_per_ns > 0 and ("TSC" in choice or "timer" in choice)
    else:
        assert ci.tsc_ticks_per_ns == 0 and clock.tsc_read() == 0 and choice.startswith("monotonic clock")


@pytest.fixture(scope="module")
def real_x86_counter() -> dict:
    if not X86:
        pytest.skip(f"CPUID and RDTSCP are x86 matters; this is {platform.machine()}")
    real = probe_clock(None)
    if real["kind"] not in ("x86 rdtsc", "x86 rdtsc (lfence-ordered: no RDTSCP)"):
        pytest.skip(f"this CPU has no invariant TSC, so there is nothing to hide: {real['choice']}")
    return real


def test_without_rdtscp_ordered_reads_use_lfence(real_x86_counter: dict) -> None:
    """A VM that hides RDTSCP: the counter stays, ordered stamps come from
    lfence+rdtsc (no illegal instruction), and the choice says why."""
    p = probe_clock("rdtscp")
    assert p["kind"] == "x86 rdtsc (lfence-ordered: no RDTSCP)", p
    assert p["available"] and p["ticks_per_ns"] > 0 and p["ordered_read_ns"] > 0
    assert "lfence+rdtsc" in p["choice"] and "LOWLAT_CPUID_HIDE" in p["choice"]
    assert p["stamped"] == p["ops"] and p["overhead_ns"] > 0  # every op stamped with the counter
    assert p["ticks_per_ns"] == pytest.approx(real_x86_counter["ticks_per_ns"], rel=0.05)


def test_without_invariant_tsc_the_monotonic_clock_is_used(real_x86_counter: dict) -> None:
    """A TSC whose rate may change is not used: no counter is reported,
    calibration gives 0, and the timed loops stamp with the monotonic clock
    (their stamp-pair overhead, a counter measurement, is then 0)."""
    p = probe_clock("invtsc")
    assert p["kind"] == "none (x86 TSC not invariant)", p
    assert not p["available"] and p["ticks_per_ns"] == 0 and p["raw"] == 0 and p["ordered_read_ns"] == 0
    assert p["choice"].startswith("monotonic clock") and "LOWLAT_CPUID_HIDE" in p["choice"]
    assert p["stamped"] == p["ops"] and p["overhead_ns"] == 0
    both = probe_clock("rdtscp,invtsc")
    assert both["kind"] == "none (x86 TSC not invariant)" and both["stamped"] == both["ops"]


# ---- perf counters: not supported vs refused --------------------------------------


@pytest.mark.parametrize(
    ("err", "status"),
    [
        (errno.ENOSYS, "LL_ENOTSUP"),  # no perf events in the kernel; qemu-user
        (errno.ENOENT, "LL_ENOTSUP"),  # no such event (VMs)
        (errno.ENODEV, "LL_ENOTSUP"),
        (errno.EOPNOTSUPP, "LL_ENOTSUP"),
        (errno.EACCES, "LL_ESYS"),  # refused: perf_event_paranoid
        (errno.EPERM, "LL_ESYS"),  # refused: seccomp, capabilities
        (errno.EINVAL, "LL_ESYS"),
        (errno.EMFILE, "LL_ESYS"),
    ],
)
def test_perf_open_errors_are_classified_by_the_core(err: int, status: str) -> None:
    assert lib.ll_perf_classify_errno(err) == getattr(lib, status)


def test_perf_verdicts_send_only_a_refusal_to_perf_event_paranoid() -> None:
    def verdict(err: int, **kw: str) -> machine.PerfCounters:
        return machine._perf_verdict(lib.ll_perf_classify_errno(err), err, 0, platform="linux", **kw)

    for err in (errno.ENOSYS, errno.ENOENT, errno.ENODEV, errno.EOPNOTSUPP):
        v = verdict(err, paranoid="3")
        assert not v.works and "paranoid" not in v.reason, v.reason
    assert "ENOSYS" in verdict(errno.ENOSYS).reason and "qemu-user" in verdict(errno.ENOSYS).reason
    strict = verdict(errno.EACCES, paranoid="3")
    assert "refused (EACCES)" in strict.reason and "perf_event_paranoid" in strict.reason
    assert "is 3 here" in strict.reason and "2 or less" in strict.reason
    allowed = verdict(errno.EPERM, paranoid="1")  # the setting allows it: something else said no
    assert "refused (EPERM)" in allowed.reason and "seccomp" in allowed.reason
    assert "could not be read" in verdict(errno.EACCES, paranoid="").reason
    failed = verdict(errno.EINVAL)
    assert "failed (EINVAL" in failed.reason and "paranoid" not in failed.reason
    counted_nothing = machine._perf_verdict(lib.LL_ENOTSUP, 0, 0, platform="linux")
    assert "count nothing" in counted_nothing.reason
    assert machine._perf_verdict(lib.LL_OK, 0, 123, platform="linux").works
    assert "Linux facility" in machine._perf_verdict(lib.LL_ENOTSUP, 0, 0, platform="darwin").reason
    here = machine.perf_counters()  # whatever this machine says, in one of those words
    assert isinstance(here.works, bool) and here.reason


# ---- sizes: one cache line, page faults in bytes ----------------------------------


def test_cache_line_is_one_constant_python_reads() -> None:
    apple_arm = sys.platform == "darwin" and platform.machine().lower() in ("arm64", "aarch64")
    line = 128 if apple_arm else 64  # Apple's M-series: 128-byte lines
    assert line == lib.LL_CACHELINE
    assert lib.LL_FALSE_SHARING_RANGE == 128
    p = lib.ll_pool_create(1, 8, lib.LL_POOL_CACHE_ALIGNED)
    try:
        stats = ffi.new("ll_pool_stats *")
        lib.ll_pool_get_stats(p, stats)
        assert stats.block_size == lib.LL_CACHELINE
        blocks = [int(ffi.cast("uintptr_t", lib.ll_pool_alloc(p))) for _ in range(8)]
        assert all(b % lib.LL_CACHELINE == 0 for b in blocks)
    finally:
        lib.ll_pool_destroy(p)


def test_page_faults_are_sized_in_bytes() -> None:
    page = topology.page_size()
    pf = alloc.page_faults(nbytes=2**20)
    assert pf.page_size == page and pf.pages == -(-(2**20) // page)
    assert alloc.page_faults(nbytes=1).pages == 1
    default = alloc.page_faults()  # 64 MiB, whatever the page size
    assert default.pages * page >= alloc.FAULT_BYTES > (default.pages - 1) * page
    assert 0 <= default.second_faults < default.minor_faults  # the second touch finds the pages mapped
    assert alloc.page_faults(3).pages == 3  # the older form: a page count
    with pytest.raises(ValueError, match="give pages or nbytes, not both"):
        alloc.page_faults(3, nbytes=4096)
    with pytest.raises(ValueError, match="nbytes must be >= 1"):
        alloc.page_faults(nbytes=0)


# ---- ARM64: cross-built, run under qemu-user --------------------------------------

CROSS_CC = "aarch64-linux-gnu-gcc"
QEMU = "qemu-aarch64"
SYSROOT = Path("/usr/aarch64-linux-gnu")  # libc6-dev-arm64-cross: the dynamic loader and libtsan for -L
PACKAGES = "clang gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"


@pytest.fixture(scope="module")
def cross() -> str:
    """The ARM64 cross compiler, when this run asked for the cross tests."""
    if os.environ.get("LOWLAT_CROSS") != "1":
        pytest.skip(
            "ARM64 cross-build and qemu runs belong to the portability job: `bash .ci/portability` "
            f"(or LOWLAT_CROSS=1 with {PACKAGES} installed)"
        )
    missing = [t for t in (CROSS_CC, QEMU, "setarch") if shutil.which(t) is None]
    if missing:
        pytest.fail(f"LOWLAT_CROSS=1 but {', '.join(missing)} not found: apt-get install {PACKAGES}")
    return CROSS_CC


@pytest.mark.slow
@pytest.mark.parametrize("std", ["c11", "c17"])
def test_core_cross_compiles_for_arm64(cross: str, tmp_path: Path, std: str) -> None:
    failures = warning_failures(cross, tmp_path, std)
    assert not failures, "not warning-clean for aarch64:\n" + "\n".join(failures)


HARNESSES = [  # name, arguments, the line that says it passed; sizes keep the job short under emulation
    ("spsc_stress", ["1000000"], "OK: 0 errors"),
    ("pipeline_stress", ["100000"], "OK: 0 errors"),
    ("pool_hist_check", [], "OK: 0 failures"),
]


@pytest.mark.slow
@pytest.mark.parametrize("sanitizer", [None, "undefined"])
@pytest.mark.parametrize(("name", "args", "ok"), HARNESSES, ids=[h[0] for h in HARNESSES])
def test_stress_harness_under_qemu_arm64(
    cross: str, tmp_path: Path, name: str, args: list[str], ok: str, sanitizer: str | None
) -> None:
    """Each harness, statically linked for ARM64, plain and under UBSan
    (AddressSanitizer's leak checker cannot run under qemu-user).  qemu-user
    keeps x86 store order: this proves compilation and logic on ARM64, not
    ARM memory ordering."""
    exe = build(cross, tmp_path / name, [str(ROOT / f"tests/c/{name}.c")], sanitizer, extra=["-static"])
    res = run_sanitized(exe, args, sanitizer, timeout=300, runner=[QEMU])
    out = res.stdout + res.stderr
    assert "runtime error" not in out and res.returncode == 0, out[-4000:]
    assert ok in res.stdout


def qemu_tsan_runner() -> list[str]:
    """qemu with the cross sysroot, started with address randomisation off:
    ThreadSanitizer on ARM64 re-executes itself otherwise, which qemu-user
    cannot follow."""
    return ["setarch", "x86_64", "-R", QEMU, "-L", str(SYSROOT)]


@pytest.mark.slow
def test_spsc_under_thread_sanitizer_on_qemu_arm64(cross: str, tmp_path: Path) -> None:
    """10^5 records through every ring variant under ThreadSanitizer built for
    ARM64 (the race detector checks the C11 model, whatever the host's store
    order), and the relaxed-publish demo must be reported there: the proof
    that the detector sees this kind of bug under emulation too.  Each run
    spends ~15 s starting (qemu maps TSan's shadow memory), so the two run
    side by side."""
    probe = subprocess.run(["setarch", "x86_64", "-R", "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"setarch -R is not permitted here ({probe.stderr.strip()}): TSan cannot run under qemu-user")
    exe = build(cross, tmp_path / "spsc_stress", [str(ROOT / "tests/c/spsc_stress.c")], "thread")
    demo = tmp_path / "spsc_relaxed_demo"
    made = toolchain.compile_c(
        [toolchain.DEMOS / "spsc_relaxed_demo.c", toolchain.CSRC / "spsc.c"], demo, sanitizer="thread", cc=cross
    )
    assert made.returncode == 0, made.stderr
    # exitcode=0: the demo's report is the expected outcome, not a failure.
    env = toolchain.sanitizer_env("thread", base=dict(os.environ, TSAN_OPTIONS="exitcode=0"))
    with subprocess.Popen(
        [*qemu_tsan_runner(), str(demo), "20000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as race:
        try:
            res = run_sanitized(exe, ["100000"], "thread", timeout=300, runner=qemu_tsan_runner())
            race_out, race_err = race.communicate(timeout=300)
        finally:
            race.kill()
    out = res.stdout + res.stderr
    assert "ThreadSanitizer" not in out and res.returncode == 0, out[-4000:]
    assert "OK: 0 errors" in res.stdout
    assert "WARNING: ThreadSanitizer: data race" in race_err, (race_out + race_err)[-4000:]
    assert "ll_spsc__pop1" in race_err and "ll_spsc__push1" in race_err
    assert "relaxed publish: 20000 records" in race_out
