"""Shared fixtures: where the C sources are, and helpers that build and run a
C test harness with the course's one toolchain (:mod:`lowlat.core.toolchain`)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from lowlat.core import toolchain

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
