"""Memory orders (chapter 03b): what an order costs, what it compiles to,
and a sequence lock done right and done wrong.

- :func:`store_ns` / :func:`load_ns`: one atomic store or load of a 64-bit
  word per iteration, with a chosen C11 order, timed inside C
  (``csrc/bench/bench_orders.c``), ns per operation.
  :func:`store_contended_ns`: the same store loop while a thread on a
  second CPU keeps reading the word.
- :func:`assembly`: the loops (``csrc/bench/orders_loops.c``) compiled with
  ``-S``, for this CPU or for ARMv8 (clang's cross target), so the
  instruction each order becomes can be read.
- :func:`seqlock_demo`: builds and runs ``csrc/demos/seqlock_demo.c`` in a
  child process (plain or under ThreadSanitizer) and parses its counts.

The demos and the listings need the course repository (``csrc/``) and a C
compiler; the timings need only the installed core.
"""

from __future__ import annotations

import math
import os
import platform
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lowlat.core import toolchain
from lowlat.core._lib import lib
from lowlat.core.affinity import usable_cpus
from lowlat.core.argcheck import bool_arg, callable_arg, real_arg
from lowlat.core.errors import check_status
from lowlat.core.validate import int_arg
from lowlat.machine.placement import bench_cpus
from lowlat.method.interleave import interleave, median, ratios

STORE_ORDERS = {"relaxed": 0, "release": 2, "seq_cst": 3}
LOAD_ORDERS = {"relaxed": 0, "acquire": 1, "seq_cst": 3}
MAX_ITERATIONS = 100_000_000  # a seq_cst store is ~10-50 ns: at most a few seconds in C
LOOPS_SOURCE = "bench/orders_loops.c"
SEQLOCK_MODES = ("correct", "racy", "unchecked")


def _order(order: str, table: dict[str, int], what: str) -> int:
    if not isinstance(order, str) or order not in table:
        raise ValueError(f"{what} order must be one of {', '.join(table)}, got {order!r}")
    return table[order]


def _ns(value: float, what: str) -> float:
    check_status(int(value) if value < 0 else 0, what)
    return float(value)


def store_ns(order: str, iterations: int = 1_000_000) -> float:
    """ns per atomic store of a 64-bit word with ``order`` ("relaxed",
    "release" or "seq_cst"), one thread, ``iterations`` stores timed in C."""
    code = _order(order, STORE_ORDERS, "a store")
    n = int_arg(iterations, "iterations", minimum=1, maximum=MAX_ITERATIONS)
    return _ns(lib.ll_bench_atomic_store(n, code), f"{order} store loop")


def load_ns(order: str, iterations: int = 1_000_000) -> float:
    """ns per atomic load of a 64-bit word with ``order`` ("relaxed",
    "acquire" or "seq_cst"), one thread, ``iterations`` loads timed in C."""
    code = _order(order, LOAD_ORDERS, "a load")
    n = int_arg(iterations, "iterations", minimum=1, maximum=MAX_ITERATIONS)
    return _ns(lib.ll_bench_atomic_load(n, code), f"{order} load loop")


def store_contended_ns(order: str, iterations: int = 200_000) -> float:
    """ns per store (as :func:`store_ns`) while a second thread, on another
    usable CPU, keeps loading the same word.  NaN with fewer than two usable
    CPUs: the reader would only run when the writer is descheduled."""
    code = _order(order, STORE_ORDERS, "a store")
    n = int_arg(iterations, "iterations", minimum=1, maximum=MAX_ITERATIONS)
    if len(usable_cpus()) < 2:
        return math.nan
    a, b = bench_cpus()
    return _ns(lib.ll_bench_atomic_store_contended(n, code, a, b), f"contended {order} store loop")


def measure(rounds: int = 15, iterations: int = 500_000) -> dict[str, list[float]]:
    """seq_cst vs release stores and seq_cst vs acquire loads, interleaved
    ``rounds`` times (``iterations`` operations each): ns per operation, one
    value per round, keys "seq_cst store", "release store", "seq_cst load",
    "acquire load"."""
    int_arg(iterations, "iterations", minimum=1, maximum=MAX_ITERATIONS)
    return interleave(
        {
            "seq_cst store": lambda: store_ns("seq_cst", iterations),
            "release store": lambda: store_ns("release", iterations),
            "seq_cst load": lambda: load_ns("seq_cst", iterations),
            "acquire load": lambda: load_ns("acquire", iterations),
        },
        int_arg(rounds, "rounds", minimum=1, maximum=10_000),
    )


def bench_keys(quick: bool, between: Callable[[], object] | None = None) -> dict[str, float]:
    """The chapter's figures for ``python -m lowlat bench`` (ns; NaN where
    not measurable, e.g. the contended stores with one usable CPU).
    ``between`` runs before each round of the contended stores (e.g. a
    core-to-core sample)."""
    quick = bool_arg(quick, "quick")
    if between is not None:
        callable_arg(between, "between")
    rounds, n = (15, 500_000) if quick else (41, 2_000_000)
    r = measure(rounds, n)
    out = {
        "seq_cst_store_ns": median(r["seq_cst store"]),
        "release_store_ns": median(r["release store"]),
        "seq_cst_load_ns": median(r["seq_cst load"]),
        "acquire_load_ns": median(r["acquire load"]),
        "seq_cst_vs_release_store": median(ratios(r["seq_cst store"], r["release store"])),
    }
    if len(usable_cpus()) >= 2:
        c = interleave(
            {
                "seq_cst": lambda: store_contended_ns("seq_cst", n // 4),
                "release": lambda: store_contended_ns("release", n // 4),
            },
            max(3, rounds // 3),
            between=between,
        )
        out["seq_cst_store_contended_ns"] = median(c["seq_cst"])
        out["release_store_contended_ns"] = median(c["release"])
    else:
        out["seq_cst_store_contended_ns"] = out["release_store_contended_ns"] = math.nan
    return out


# ---- what each order compiles to -------------------------------------------------------


@dataclass
class Assembly:
    """The loops of ``csrc/bench/orders_loops.c`` compiled to assembly for
    ``target`` ("native" or "aarch64"): ``functions`` maps each loop's name
    to its instructions (labels and assembler directives dropped);
    ``command`` is the compiler line.  Empty ``functions`` and a ``reason``
    when it could not be made here."""

    target: str
    command: list[str] = field(default_factory=list)
    functions: dict[str, list[str]] = field(default_factory=dict)
    reason: str = ""

    def __bool__(self) -> bool:
        return bool(self.functions)


def _is_aarch64() -> bool:
    return platform.machine().lower() in ("aarch64", "arm64")


def _assembly_command(target: str) -> tuple[list[str], str]:
    """The compiler line (without source and output), or [] and why not."""
    flags = [toolchain.STD, "-O2", "-S", "-fno-asynchronous-unwind-tables"]
    if target == "native" or (target == "aarch64" and _is_aarch64()):
        cc = toolchain.c_compiler()
        return ([*toolchain.compiler_words(cc), *flags], "") if cc else ([], "no C compiler found (cc, gcc or clang)")
    if target != "aarch64":
        raise ValueError(f"target must be 'native' or 'aarch64', got {target!r}")
    for cross in ("aarch64-linux-gnu-gcc",):
        if shutil.which(cross):
            return [cross, *flags], ""
    if shutil.which("clang"):  # any clang can target ARMv8; this file needs no libc (-ffreestanding)
        return ["clang", "--target=aarch64-linux-gnu", "-ffreestanding", *flags], ""
    return [], "no compiler for ARMv8 here (clang, or aarch64-linux-gnu-gcc)"


_INSN = re.compile(r"^\s+([a-z][\w.]*)\b(.*)$")


def _functions(asm: str) -> dict[str, list[str]]:
    """Each ``ll_orders_*`` function's instruction lines."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in asm.splitlines():
        label = re.match(r"^(_?ll_orders_\w+):", line)
        if label:
            current = out.setdefault(label.group(1).lstrip("_"), [])
            continue
        if current is None:
            continue
        if re.match(r"^\S+:", line) and not line.startswith("."):  # the next global symbol
            current = None
            continue
        insn = _INSN.match(re.sub(r"(//|\s#\s|;).*$", "", line).rstrip())  # comments dropped, not "#1"
        if insn and not insn.group(1).startswith("."):
            current.append(f"{insn.group(1)}{insn.group(2)}".replace("\t", " ").strip())
        if line.strip().startswith((".size", ".Lfunc_end")):
            current = None
    return out


def assembly(target: str = "native") -> Assembly:
    """Compiles ``csrc/bench/orders_loops.c`` with ``-O2 -S`` for
    ``target``: "native" (this machine's compiler) or "aarch64" (this
    machine's compiler on ARM64, else clang's ARMv8 target or a cross gcc).
    Never raises for a missing tool: the result's ``reason`` says why."""
    if not isinstance(target, str) or target not in ("native", "aarch64"):
        raise ValueError(f"target must be 'native' or 'aarch64', got {target!r}")
    cmd, why = _assembly_command(target)
    if not cmd:
        return Assembly(target, reason=why)
    src = toolchain.CSRC / LOOPS_SOURCE
    if not src.exists():
        return Assembly(target, reason=f"{src} not found: the listing needs the course repository (csrc/)")
    with tempfile.TemporaryDirectory(prefix="lowlat-asm-") as tmp:
        out = Path(tmp) / "orders_loops.s"
        full = [*cmd, f"-I{src.parent}", str(src), "-o", str(out)]
        res = subprocess.run(full, capture_output=True, text=True, timeout=120, env=dict(os.environ, LC_ALL="C"))
        if res.returncode != 0:
            last = (res.stderr.strip().splitlines() or ["(no message)"])[-1]
            return Assembly(target, full, reason=f"the compiler failed: {last}")
        funcs = _functions(out.read_text())
    shown = [*cmd, f"csrc/{LOOPS_SOURCE}"]
    if not funcs:
        return Assembly(target, shown, reason="no ll_orders_* function found in the compiler's output")
    return Assembly(target, shown, funcs)


# ---- the seqlock demo ------------------------------------------------------------------


@dataclass
class SeqlockRun:
    """One run of ``seqlock_demo``: the reader's ``snapshots``, how many
    were ``torn`` (words not all equal), its ``retries``, the writer's
    ``writes``; ``race_reported``: ThreadSanitizer printed a data race (only
    when built with it); ``report``: the sanitizer's lines."""

    mode: str
    sanitized: bool
    snapshots: int
    torn: int
    retries: int
    writes: int
    race_reported: bool
    returncode: int
    report: list[str] = field(default_factory=list, repr=False)


_SEQLOCK_LINE = re.compile(r"seqlock (\w+): (\d+) snapshots, (\d+) torn, (\d+) retries, (\d+) writes")


def seqlock_demo(
    mode: str, *, sanitize: bool, snapshots: int = 100_000, timeout_s: float = 120, hold_ns: int = 300
) -> SeqlockRun:
    """Builds ``csrc/demos/seqlock_demo.c`` (plain ``-O2``, or with
    ``-fsanitize=thread`` when ``sanitize``) and runs it in a child process:
    the reader takes ``snapshots`` snapshots while the writer keeps
    rewriting.  ``mode``: "correct", "racy" (plain data, no fences) or
    "unchecked" (the reader never re-checks the sequence).  ``hold_ns``
    (0..100,000) stretches both sides so they overlap: each write holds the
    record half written that long, each copy pauses twice that long between
    its halves, the writer rests three times that long between writes (0:
    back to back, and the reader can run between writes untouched, so a
    correct run may show 0 retries).  The reader and the writer are pinned
    to :func:`lowlat.machine.placement.bench_cpus` where pinning works.
    RuntimeError when there is no compiler, the build fails or the program
    does not print its counts."""
    if not isinstance(mode, str) or mode not in SEQLOCK_MODES:
        raise ValueError(f"mode must be one of {', '.join(SEQLOCK_MODES)}, got {mode!r}")
    sanitize = bool_arg(sanitize, "sanitize")  # 'no' is a true string: only a real bool says what is meant
    n = int_arg(snapshots, "snapshots", minimum=1, maximum=100_000_000)
    timeout_s = real_arg(timeout_s, "timeout_s", positive=True, maximum=3600.0)
    hold = int_arg(hold_ns, "hold_ns", minimum=0, maximum=100_000)
    reader_cpu, writer_cpu = bench_cpus()
    src = toolchain.DEMOS / "seqlock_demo.c"
    if not src.exists():
        raise FileNotFoundError(f"{src} not found: this demo needs the course repository (csrc/demos/)")
    sanitizer = "thread" if sanitize else None
    with tempfile.TemporaryDirectory(prefix="lowlat-seqlock-") as tmp:
        exe = Path(tmp) / "seqlock_demo"
        cc = toolchain.require_compiler("the seqlock demo")
        build = toolchain.compile_c([src], exe, sanitizer=sanitizer, cc=cc)
        if build.returncode != 0:
            raise RuntimeError(f"building the seqlock demo failed:\n{build.stderr}")
        # exitcode=0: a report is the lesson, not a failure; the program still prints its counts.
        # history_size=7: the longest access history TSan keeps, so the reader's side of the race keeps
        # its stack even when the two threads took turns on one CPU and the read is long past.
        env = toolchain.sanitizer_env(sanitizer, base=dict(os.environ, TSAN_OPTIONS="exitcode=0 history_size=7"))
        argv = [str(exe), mode, str(n), str(hold), str(reader_cpu), str(writer_cpu)]
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env)
    found = _SEQLOCK_LINE.search(res.stdout)
    if found is None:
        raise RuntimeError(f"seqlock demo ({mode}) printed no counts (exit {res.returncode}):\n{res.stderr[-2000:]}")
    return SeqlockRun(
        mode,
        sanitize,
        int(found.group(2)),
        int(found.group(3)),
        int(found.group(4)),
        int(found.group(5)),
        "WARNING: ThreadSanitizer: data race" in res.stderr,
        res.returncode,
        [ln for ln in res.stderr.splitlines() if ln.strip()],
    )


__all__ = [
    "LOAD_ORDERS",
    "SEQLOCK_MODES",
    "STORE_ORDERS",
    "Assembly",
    "SeqlockRun",
    "assembly",
    "bench_keys",
    "load_ns",
    "measure",
    "seqlock_demo",
    "store_contended_ns",
    "store_ns",
]
