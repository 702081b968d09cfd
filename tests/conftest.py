"""Shared fixtures: where the C sources are, and helpers that build and run a
C test harness with the course's one toolchain (:mod:`lowlat.core.toolchain`).

And the parallel run (``pytest -n auto --dist loadgroup``, pytest-xdist): most tests run two
or more at a time, but a test that measures time, or needs the machine's CPUs
to itself (two pinned threads, one-CPU runs, signals timed against a run),
runs **alone**: the modules in :data:`ALONE_MODULES` and any test marked
``alone``.  A readers-writer lock shared by the workers (two lock files,
``flock``) does it: every test holds the lock shared, a test that runs alone
holds it exclusively, and a test waiting to run alone goes first."""

from __future__ import annotations

import fcntl
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from lowlat.core import toolchain

# A shell that starts the tests in the background (or nohup) hands them SIGINT
# ignored, and every child inherits that: the Ctrl-C tests would time out.
# Ctrl-C behaves as at a terminal instead, here and in the children.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Modules whose tests measure speed or scheduling: each runs with no other
# test beside it.  A test elsewhere that needs the CPUs to itself is marked
# @pytest.mark.alone.  (The one-CPU runs of test_one_cpu.py judge no figure,
# only what a one-CPU machine must print, and use one CPU: they share.)
ALONE_MODULES = {
    "test_bench.py",
    "test_blas.py",
    "test_grading_interrupt.py",
    "test_interrupt.py",
    "test_lessons_cpu.py",
    "test_lessons_pipeline.py",
    "test_measure.py",
    "test_orders.py",
    "test_pipeline.py",
    "test_soak.py",
    "test_train.py",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in ALONE_MODULES:
            item.add_marker(pytest.mark.alone)
        if item.get_closest_marker("alone") is not None:
            # With --dist loadgroup every test that runs alone goes to one
            # worker, one after another: the lock below is then taken once
            # for the whole run of them, not once per test.
            item.add_marker(pytest.mark.xdist_group("alone"))
    # The order (a stable sort: the same on every worker, as xdist requires):
    # the slow tests first, so that the shared part ends on short tests, then
    # the tests that run alone, which wait for the test running beside them
    # to end (a short one, then) and leave the other worker idle.
    items.sort(key=lambda item: (_alone(item), item.get_closest_marker("slow") is None))


class _CpuLock:
    """The workers' readers-writer lock (see the module's docstring): two
    lock files named after the run.  ``enter(alone)`` takes it shared or
    exclusive (a writer waiting on the turnstile keeps new readers out);
    an exclusive hold is kept across consecutive alone tests."""

    def __init__(self, uid: str) -> None:
        base = Path(tempfile.gettempdir()) / f"lowlat-pytest-{uid}"
        self.gate = open(f"{base}.turnstile", "a")  # noqa: SIM115 (held for the worker's life)
        self.cpus = open(f"{base}.cpus", "a")  # noqa: SIM115
        self.held: str | None = None  # "shared", "alone" or None

    def enter(self, alone: bool) -> None:
        want = "alone" if alone else "shared"
        if self.held == want:
            return
        self.leave()
        fcntl.flock(self.gate, fcntl.LOCK_EX)
        if alone:
            fcntl.flock(self.cpus, fcntl.LOCK_EX)  # waits for the tests running now to end
            fcntl.flock(self.gate, fcntl.LOCK_UN)
        else:
            fcntl.flock(self.gate, fcntl.LOCK_UN)
            fcntl.flock(self.cpus, fcntl.LOCK_SH)
        self.held = want

    def leave(self) -> None:
        if self.held is not None:
            fcntl.flock(self.cpus, fcntl.LOCK_UN)
            self.held = None


_LOCK: list[_CpuLock] = []


def _alone(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("alone") is not None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Every test holds the lock shared, an alone test exclusively; a
    no-op outside a parallel run (and in a pytest that a test starts)."""
    uid = getattr(item.config, "workerinput", {}).get("testrunuid")
    if not uid:
        yield
        return
    if not _LOCK:
        _LOCK.append(_CpuLock(uid))
    lock = _LOCK[0]
    lock.enter(_alone(item))
    try:
        yield
    finally:
        if lock.held == "shared" or not _alone(nextitem):
            lock.leave()  # a shared hold never outlives its test: a writer may be waiting


ROOT = toolchain.ROOT
CSRC = toolchain.CSRC
DEMOS = toolchain.DEMOS
# The library's sources, as the cffi build compiles them (lowlat/core/_build.py owns the list).
CORE_SOURCES = [str(p) for p in toolchain.core_sources()]
# Every header of the core: public, internal, shared (csrc/common) and the benchmarks'.
CORE_HEADERS = sorted(str(p) for p in CSRC.rglob("*.h"))


@pytest.fixture(scope="session")
def cc() -> str:
    name = toolchain.c_compiler()
    if name is None:
        pytest.fail("no C compiler found (cc/gcc/clang): the core and its tests need one")
    return name


def build(cc: str, out: Path, sources: list[str], sanitizer: str | None = None, extra: Sequence[str] = ()) -> Path:
    """Compiles ``sources`` plus the core into ``out`` (warnings are errors,
    ``sanitizer`` as :func:`lowlat.core.toolchain.opt_flags` takes it, ``extra``
    flags such as ``-static``; ``cc`` may be a cross compiler); fails the
    test with the compiler's own messages on error."""
    res = toolchain.compile_c([*sources, *CORE_SOURCES], out, sanitizer=sanitizer, werror=True, cc=cc, extra=extra)
    if res.returncode != 0:
        pytest.fail(f"compiling {', '.join(Path(s).name for s in sources)} failed:\n{res.stdout}{res.stderr}")
    return out


def run_sanitized(
    binary: Path, args: list[str], sanitizer: str | None, timeout: int, runner: Sequence[str] = ()
) -> subprocess.CompletedProcess:
    """Runs ``binary`` in the sanitizer's environment
    (:func:`lowlat.core.toolchain.sanitizer_env`: halt on the first report),
    through ``runner`` when given (an emulator: ``qemu-aarch64 ...``)."""
    return subprocess.run(
        [*runner, str(binary), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=toolchain.sanitizer_env(sanitizer),
    )


def warning_failures(cc: str, tmp_path: Path, std: str, extra: Sequence[str] = ()) -> list[str]:
    """Compiles (no link) every core source and demo, then every header of
    the core as the only include of an otherwise empty file, with ``cc`` at
    ``-std=STD -pedantic -Werror`` and no feature macro defined.  Returns one
    message per file that is not warning-clean (empty: all clean).  A header
    that leans on its includer for ``_GNU_SOURCE`` (nanosleep, ...) fails."""
    failures = []
    demos = sorted(str(p) for p in DEMOS.glob("*.c"))
    assert demos, f"no demo programs in {DEMOS}"
    flags = [f"-std={std}", "-pedantic", *extra]
    for src in CORE_SOURCES + demos:
        res = toolchain.compile_c([src], tmp_path / "unit.o", werror=True, cc=cc, extra=flags, compile_only=True)
        if res.returncode != 0:
            failures.append(f"{Path(src).relative_to(CSRC)}:\n{res.stderr}")
    for header in CORE_HEADERS:
        alone = tmp_path / "header_alone.c"
        alone.write_text(f'#include "{header}"\n')
        res = toolchain.compile_c([alone], tmp_path / "unit.o", werror=True, cc=cc, extra=flags, compile_only=True)
        if res.returncode != 0:
            failures.append(f"{Path(header).relative_to(CSRC)} on its own:\n{res.stderr}")
    return failures
