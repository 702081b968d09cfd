"""The stand-alone C demo programs of ``csrc/demos/``, built on the spot with
:func:`lowlat.core.toolchain.compile_c` and run in a child process.  They need the
course repository (``csrc/``) and a C compiler."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from lowlat.core import toolchain


def demo_source(name: str) -> Path:
    """``csrc/demos/<name>``, or FileNotFoundError saying the demo needs the
    course repository."""
    path = toolchain.DEMOS / name
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: this demo needs the course repository (csrc/demos/)")
    return path


def relaxed_publish_demo(
    *, sanitize: bool, items: int = 100_000, timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    """Builds and runs ``csrc/demos/spsc_relaxed_demo.c``: the ring with its
    publish store relaxed.  ``sanitize=True`` builds it with
    ThreadSanitizer, told to let the program finish after its report.
    Returns the finished ``subprocess.CompletedProcess`` (stdout: the record
    count and how many arrived wrong; stderr: any sanitizer report)."""
    src = demo_source("spsc_relaxed_demo.c")
    sanitizer = "thread" if sanitize else None
    with tempfile.TemporaryDirectory(prefix="lowlat-relaxed-") as tmp:
        exe = Path(tmp) / "spsc_relaxed_demo"
        build = toolchain.compile_c(
            [src, toolchain.CSRC / "spsc.c"],
            exe,
            sanitizer=sanitizer,
            cc=toolchain.require_compiler("the relaxed-publish demo"),
        )
        if build.returncode != 0:
            raise RuntimeError(f"building the demo failed:\n{build.stderr}")
        # exitcode=0: the report is the lesson, not a failure; the program still prints its count.
        env = toolchain.sanitizer_env(sanitizer, base=dict(os.environ, TSAN_OPTIONS="exitcode=0"))
        return subprocess.run([str(exe), str(int(items))], capture_output=True, text=True, timeout=timeout_s, env=env)


__all__ = ["demo_source", "relaxed_publish_demo"]
