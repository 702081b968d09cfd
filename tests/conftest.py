"""Shared fixtures: where the C sources are, and a helper that builds a C
test harness with the system compiler (sanitizer builds)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lowlat.machine import c_compiler

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
# The library's sources: every csrc/*.c except stand-alone demo programs.
CORE_SOURCES = sorted(str(p) for p in CSRC.glob("*.c") if not p.name.endswith("_demo.c"))


@pytest.fixture(scope="session")
def cc() -> str:
    name = c_compiler()
    if name is None:
        pytest.fail("no C compiler found (cc/gcc/clang): the core and its tests need one")
    return name


def build(cc: str, out: Path, sources: list[str], flags: list[str]) -> Path:
    """Compiles ``sources`` (plus the core) into ``out``; fails the test with
    the compiler's own messages on error."""
    cmd = [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{CSRC}", *flags, *sources, *CORE_SOURCES,
           "-o", str(out), "-lpthread", "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        pytest.fail(f"compiling failed:\n{' '.join(cmd)}\n{res.stdout}{res.stderr}")
    return out
