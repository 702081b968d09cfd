"""The C toolchain, in one place: which compiler, which flags, which
sanitizer environment.  The grader, the C demos and the test suite all build
through :func:`compile_c`, so a flag changes here and nowhere else.

Paths are the course repository's: ``csrc/`` (the core, its shared headers in
``csrc/common/``), ``csrc/demos/`` (stand-alone demo programs).  An installed
wheel carries the same tree as package data, ``lowlat/core/csrc/`` (copied by
setup.py's build step), and :data:`CSRC` is that copy when it exists.  The core's
source list itself is owned by the cffi build script (``lowlat/core/_build.py``);
:func:`core_sources` reads it from there.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_PACKAGED = Path(__file__).resolve().parent / "csrc"  # in a wheel (setup.py copies it there)
CSRC = _PACKAGED if _PACKAGED.is_dir() else ROOT / "csrc"
COMMON = CSRC / "common"
DEMOS = CSRC / "demos"

STD = "-std=c11"
WARNINGS = ("-Wall", "-Wextra")
SANITIZERS = ("thread", "address")  # "address" means AddressSanitizer + UBSan
# Exit codes the sanitizers are told to use, so a report is never mistaken
# for the program's own failure.
TSAN_EXIT = 66
ASAN_EXIT = 67


def compiler_words(cc: object, name: str = "cc") -> list[str]:
    """A compiler command line (``"gcc"``, ``"gcc -O3"``, ``"ccache gcc"``)
    split as a shell would (:func:`shlex.split`): the program, then its
    arguments.  ValueError for an empty or unbalanced one."""
    if not isinstance(cc, str):
        raise TypeError(f"{name} must be a compiler command (a string such as 'gcc'), got {type(cc).__name__} {cc!r}")
    try:
        words = shlex.split(cc)
    except ValueError as exc:
        raise ValueError(f"{name} is not a command line ({exc}): {cc!r}") from None
    if not words:
        raise ValueError(f"{name} must name a compiler, got {cc!r}")
    return words


def c_compiler() -> str | None:
    """The C compiler the course uses, as a command line: $CC if set (it may
    carry arguments, ``CC="gcc -O3"``: every build through :func:`compile_c`
    passes them), else cc, gcc or clang, whichever is found first on PATH;
    None when there is none.  A $CC that names no program on PATH is
    refused with a RuntimeError that says so (rather than building silently
    with another compiler)."""
    env = os.environ.get("CC", "")
    if env.strip():
        words = compiler_words(env, "$CC")
        if shutil.which(words[0]) is None:
            raise RuntimeError(f"$CC is {env!r}, but {words[0]!r} is not a program on PATH: fix CC or unset it")
        return env
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    return None


def require_compiler(what: str = "this") -> str:
    """:func:`c_compiler`, or a RuntimeError saying what needs one."""
    cc = c_compiler()
    if cc is None:
        raise RuntimeError(f"no C compiler found (cc, gcc or clang): {what} needs one")
    return cc


def core_sources() -> list[Path]:
    """The core's ``.c`` files, as the cffi build compiles them."""
    from lowlat.core._build import SOURCES  # the build script owns the list

    return [CSRC / s for s in SOURCES]


def include_dirs() -> list[Path]:
    """Include directories of the core: ``csrc/`` and ``csrc/common/``."""
    return [CSRC, COMMON]


def opt_flags(sanitizer: str | None = None) -> list[str]:
    """Optimisation and instrumentation flags: ``-O2`` for a plain build;
    ``-O1 -g`` plus the sanitizer for ``"thread"`` or ``"address"``
    (AddressSanitizer and UBSan, every UB report fatal).  ``"undefined"``
    (UBSan alone) is for builds AddressSanitizer cannot run, such as a static
    ARM64 binary under qemu-user (the portability tests); exercise specs
    choose from :data:`SANITIZERS`."""
    if sanitizer is None:
        return ["-O2"]
    if sanitizer == "thread":
        return ["-O1", "-g", "-fsanitize=thread"]
    if sanitizer == "undefined":
        return ["-O1", "-g", "-fsanitize=undefined", "-fno-sanitize-recover=undefined"]
    if sanitizer == "address":
        return [
            "-O1",
            "-g",
            "-fno-omit-frame-pointer",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=undefined",
        ]
    raise ValueError(f"sanitizer must be None, 'thread', 'address' or 'undefined', got {sanitizer!r}")


def sanitizer_env(sanitizer: str | None, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a sanitized program runs in: halt on the first report
    with a known exit code.  Leak detection only on Linux (Apple's ASan
    rejects ``detect_leaks``)."""
    env = dict(os.environ if base is None else base)
    if sanitizer == "thread":
        env.setdefault("TSAN_OPTIONS", f"halt_on_error=1 exitcode={TSAN_EXIT} report_signal_unsafe=0")
    elif sanitizer == "address":
        leaks = " detect_leaks=1" if sys.platform.startswith("linux") else ""
        env.setdefault("ASAN_OPTIONS", f"exitcode={ASAN_EXIT} abort_on_error=0{leaks}")
        env.setdefault("UBSAN_OPTIONS", f"halt_on_error=1 exitcode={ASAN_EXIT} print_stacktrace=1")
    elif sanitizer == "undefined":
        env.setdefault("UBSAN_OPTIONS", f"halt_on_error=1 exitcode={ASAN_EXIT} print_stacktrace=1")
    return env


def compile_c(
    sources: Sequence[str | Path],
    out: Path,
    *,
    sanitizer: str | None = None,
    werror: bool = False,
    extra: Sequence[str] = (),
    includes: Sequence[str | Path] = (),
    cwd: Path | None = None,
    cc: str | None = None,
    timeout_s: float = 300,
    compile_only: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Compiles and links ``sources`` into the executable ``out`` with the
    course's flags (C11, all warnings, ``-Werror`` if asked, the sanitizer's
    flags, the core's include directories after ``includes``).  With
    ``compile_only`` (or ``-c`` in ``extra``) ``out`` is an object file,
    compiled as the cffi build compiles the core: no ``-pthread``, no library
    named (clang's ``-Werror`` refuses unused linker inputs).
    ``cc`` may be a cross compiler (``aarch64-linux-gnu-gcc``) and may carry
    arguments (split with :func:`shlex.split`).  Returns the
    finished process; the caller decides what a failure means (its
    ``stderr`` holds the compiler's own ``file:line`` messages).  Messages are
    in plain ASCII (``LC_ALL=C``)."""
    compiler = compiler_words(cc if cc is not None else require_compiler("compiling C"))
    link = not compile_only and "-c" not in extra
    # -pthread only when linking: it also defines _REENTRANT, which makes
    # glibc declare POSIX functions a file did not ask for (the cffi build,
    # which compiles the core, does not pass it either).
    flags = [STD, *WARNINGS, *(["-Werror"] if werror else []), *opt_flags(sanitizer), *(["-pthread"] if link else [])]
    incs = [f"-I{d}" for d in [*includes, *include_dirs()]]
    objs = [*extra, *([] if link or "-c" in extra else ["-c"]), *(str(s) for s in sources)]
    cmd = [*compiler, *flags, *incs, *objs, "-o", str(out), *(["-lm"] if link else [])]
    env = dict(os.environ, LC_ALL="C")
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=timeout_s, env=env
    )  # a non-UTF-8 byte in a learner's file reaches the compiler's messages: replace it, never die on it


__all__ = [
    "ASAN_EXIT",
    "COMMON",
    "CSRC",
    "DEMOS",
    "ROOT",
    "SANITIZERS",
    "STD",
    "TSAN_EXIT",
    "WARNINGS",
    "c_compiler",
    "compile_c",
    "compiler_words",
    "core_sources",
    "include_dirs",
    "opt_flags",
    "require_compiler",
    "sanitizer_env",
]
