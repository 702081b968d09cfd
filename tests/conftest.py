"""Shared fixtures: where the C sources are, and helpers that build and run a
C test harness with the course's one toolchain (:mod:`lowlat.toolchain`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lowlat import toolchain

ROOT = toolchain.ROOT
CSRC = toolchain.CSRC
DEMOS = toolchain.DEMOS
# The library's sources, as the cffi build compiles them (lowlat/_build.py owns the list).
CORE_SOURCES = [str(p) for p in toolchain.core_sources()]


@pytest.fixture(scope="session")
def cc() -> str:
    name = toolchain.c_compiler()
    if name is None:
        pytest.fail("no C compiler found (cc/gcc/clang): the core and its tests need one")
    return name


def build(cc: str, out: Path, sources: list[str], sanitizer: str | None = None) -> Path:
    """Compiles ``sources`` plus the core into ``out`` (warnings are errors,
    ``sanitizer`` as :func:`lowlat.toolchain.opt_flags` takes it); fails the
    test with the compiler's own messages on error."""
    res = toolchain.compile_c([*sources, *CORE_SOURCES], out, sanitizer=sanitizer, werror=True, cc=cc)
    if res.returncode != 0:
        pytest.fail(f"compiling {', '.join(Path(s).name for s in sources)} failed:\n{res.stdout}{res.stderr}")
    return out


def run_sanitized(binary: Path, args: list[str], sanitizer: str | None, timeout: int) -> subprocess.CompletedProcess:
    """Runs ``binary`` in the sanitizer's environment
    (:func:`lowlat.toolchain.sanitizer_env`: halt on the first report)."""
    return subprocess.run(
        [str(binary), *args], capture_output=True, text=True, timeout=timeout, env=toolchain.sanitizer_env(sanitizer)
    )
