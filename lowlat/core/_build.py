"""cffi build script for ``lowlat.core._core`` (out-of-line API mode).

Run by setuptools through ``cffi_modules`` in setup.py during ``pip install``.
The declarations given to cffi are the public headers of ``csrc/`` themselves
(preprocessor lines dropped), so the C API is written down once.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parents[2]
# At build time the checkout's csrc/; in an installed wheel (where the
# experiments import this module for its lists and flags) the copy setup.py
# puts in the package, as lowlat.core.toolchain.CSRC.
_PACKAGED = Path(__file__).resolve().parent / "csrc"
CSRC = _PACKAGED if _PACKAGED.is_dir() else ROOT / "csrc"

# Paths are relative to csrc/.  Public headers, in dependency order: their
# declarations are the Python-visible API.  Internal headers (*_inline.h,
# common/ll_arch.h, common/ll_util.h) hold inline code and stay out of it.
PUBLIC_HEADERS = [
    "common/ll_common.h",
    "common/ll_wait.h",
    "common/ll_pair.h",
    "clock.h",
    "affinity.h",
    "perfcount.h",
    "pool.h",
    "spsc.h",
    "hist.h",
    "bench/bench_alloc.h",
    "bench/bench_spsc.h",
    "bench/bench_taxes.h",
    "bench/bench_floor.h",
    "bench/bench_orders.h",
    "bench/bench_payload.h",
    "pipeline.h",
    "stop.h",
    "logring.h",
    "bench/bench_log.h",
    "bench/lesson_sharing.h",
    "bench/lesson_litmus.h",
]
# The core's sources: the one list (lowlat.core.toolchain.core_sources and the
# tests read it from here).  Stand-alone programs live in csrc/demos/.
SOURCES = [
    "clock.c",
    "affinity.c",
    "perfcount.c",
    "pool.c",
    "spsc.c",
    "hist.c",
    "bench/bench_alloc.c",
    "bench/bench_spsc.c",
    "bench/bench_rtt.c",
    "bench/bench_call.c",
    "bench/bench_taxes.c",
    "bench/bench_floor.c",
    "bench/bench_orders.c",
    "bench/orders_loops.c",
    "bench/bench_payload.c",
    "pipeline.c",
    "pipeline_run.c",
    "stop.c",
    "logring.c",
    "bench/bench_log.c",
    "bench/lesson_sharing.c",
    "bench/lesson_litmus.c",
]
# Include directories: csrc/ and its shared headers (as lowlat.core.toolchain.include_dirs).
INCLUDE_DIRS = [CSRC, CSRC / "common"]
# `#define NAME 123` lines are kept: cffi understands integer constants.
INT_DEFINE = re.compile(r"^#define\s+[A-Z_][A-Z0-9_]*\s+\d+\b")
# Constants of the internal header common/ll_arch.h whose value depends on the
# platform (the cache line is 128 bytes on Apple arm64): the compiler fills
# them in (`#define NAME ...`), so Python reads the value C was built with.
ARCH_CONSTANTS = ["LL_CACHELINE", "LL_FALSE_SHARING_RANGE"]


def cdef_text() -> str:
    """The public headers with preprocessor lines removed, for ffi.cdef."""
    lines: list[str] = []
    for name in PUBLIC_HEADERS:
        for line in (CSRC / name).read_text().splitlines():
            if not line.lstrip().startswith("#"):
                lines.append(line)
            elif INT_DEFINE.match(line):
                lines.append(line.split("/*")[0].rstrip())
    lines += [f"#define {name} ..." for name in ARCH_CONSTANTS]
    return "\n".join(lines)


def compile_args() -> list[str]:
    """Flags for the core (gcc or clang: the core uses GNU builtins and
    inline assembly, so there is no MSVC build).  -Werror is not used here
    because the generated wrapper module is compiled with the same flags; the
    test suite compiles the core alone with -Wall -Wextra -Werror -pedantic."""
    return ["-std=c11", "-O2", "-Wall", "-Wextra"]


def link_args() -> list[str]:
    """Linker flags for the core as a shared library.  On ELF systems
    ``-Bsymbolic-functions`` binds the core's calls to its own exported
    functions inside the library: without it each one (``ll_spsc_try_push_u64``
    from the bench loops, ``ll_now_ns`` ...) jumps through the PLT, as if
    another library might replace it; measured, 0.3 ns more per call on a
    2-vCPU AMD EPYC VM.  A caller in another library still pays that jump.
    Mach-O binds calls inside a library already; its linker lacks the flag."""
    return [] if sys.platform == "darwin" else ["-Wl,-Bsymbolic-functions"]


ffibuilder = FFI()
ffibuilder.cdef(cdef_text())
ffibuilder.set_source(
    "lowlat.core._core",
    "\n".join(f'#include "{h}"' for h in [*PUBLIC_HEADERS, "common/ll_arch.h"]),
    sources=[str(Path("csrc") / s) for s in SOURCES],
    include_dirs=[str(d) for d in INCLUDE_DIRS],
    extra_compile_args=compile_args(),
    libraries=["pthread", "m"],
    extra_link_args=link_args(),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
