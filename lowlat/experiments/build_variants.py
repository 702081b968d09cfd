"""Build variants of the C core (chapter 03b): the same sources compiled with
other optimisation flags, loaded beside the installed core, so the same
benchmark functions run from both builds, interleaved.

The installed core (``lowlat.core._core``) is built by ``pip install`` at ``-O2``
for the generic CPU of its architecture: it runs on any x86-64 (or ARM64)
machine.  :func:`build` compiles every source of the core (the list of
``lowlat/core/_build.py``) into a shared library with a variant's flags, caches
it under the user's cache folder (keyed by the sources' hash, the flags,
the compiler and its version), and loads it with cffi's ABI mode
(``ffi.dlopen``) using the same declarations as the installed core
(``_build.cdef_text()``).  A variant that cannot be built here (no
compiler, a flag this compiler or CPU does not take) comes back without a
library and with the reason; nothing raises.

The variant is a separate copy of the core: its own clock calibration, its
own stop flag (Ctrl-C reaches only the installed core's loops), its own
objects (pass it nothing created by the other).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lowlat.core import toolchain
from lowlat.core.affinity import cpu_pair
from lowlat.core.argcheck import bool_arg, callable_arg
from lowlat.core.blas import quiet_blas
from lowlat.core.errors import check_status
from lowlat.core.validate import int_arg, power_of_two
from lowlat.core.wait import wait_code
from lowlat.machine.placement import bench_cpus, default_wait
from lowlat.method.interleave import interleave, median, median_band, ratios

# name -> optimisation flags (the rest, -std=c11 -fPIC -shared ..., is common)
VARIANTS: dict[str, tuple[str, ...]] = {
    "o2": ("-O2",),  # the installed core's flags, built this way: a like-for-like control
    "o3": ("-O3",),
    "o3-native": ("-O3", "-march=native"),
}
# CPU features -march=native may use on x86-64 (in /proc/cpuinfo's flags line)
X86_FEATURES = ("sse4_2", "popcnt", "avx", "avx2", "bmi2", "fma", "avx512f", "avx512bw", "avx512vl", "avx_vnni")


def cache_dir() -> Path:
    """Where built variants are kept: ``$LOWLAT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/lowlat``, else ``~/.cache/lowlat`` (macOS:
    ``~/Library/Caches/lowlat``), with ``variants/`` under it."""
    if os.environ.get("LOWLAT_CACHE_DIR"):
        base = Path(os.environ["LOWLAT_CACHE_DIR"])
    elif os.environ.get("XDG_CACHE_HOME"):
        base = Path(os.environ["XDG_CACHE_HOME"]) / "lowlat"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches" / "lowlat"
    else:
        base = Path.home() / ".cache" / "lowlat"
    return base / "variants"


def cpu_features() -> dict[str, bool]:
    """Which of :data:`X86_FEATURES` this CPU reports (Linux x86 only:
    /proc/cpuinfo's ``flags``); empty elsewhere (ARM lists ``Features``,
    macOS has no /proc)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            have = set(value.split())
            return {f: f in have for f in X86_FEATURES}
    return {}


def _cdef() -> str:
    """The installed core's declarations, with the constants cffi fills in
    only in API mode (``#define NAME ...``) replaced by their values."""
    from lowlat.core._build import ARCH_CONSTANTS, cdef_text
    from lowlat.core._lib import lib as core

    text = cdef_text()
    for name in ARCH_CONSTANTS:
        text = text.replace(f"#define {name} ...", f"#define {name} {int(getattr(core, name))}")
    return text


def _compiler_id(cc: str) -> str:
    try:
        res = subprocess.run([*toolchain.compiler_words(cc), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return cc
    return f"{cc} {(res.stdout.splitlines() or [''])[0]}"


def _link_args() -> list[str]:
    """The installed core's linker flags (``_build.link_args``), so a variant
    differs from it by the compiler flags alone."""
    from lowlat.core._build import link_args

    return link_args()


def _key(flags: tuple[str, ...], cc: str) -> str:
    """Hash of every core source and header, the flags, the compiler and
    the machine: a change to any of them builds afresh."""
    h = hashlib.sha256()
    files = sorted({*toolchain.core_sources(), *toolchain.CSRC.glob("*.h"), *toolchain.CSRC.glob("*/*.h")})
    for p in files:
        h.update(str(p.relative_to(toolchain.CSRC)).encode())
        h.update(p.read_bytes())
    h.update(" ".join([*flags, *_link_args()]).encode())
    h.update(_compiler_id(cc).encode())
    h.update(platform.machine().encode())
    return h.hexdigest()[:16]


@dataclass
class Variant:
    """One build of the core.  ``lib``/``ffi`` are the loaded library and
    its cffi instance (None when the build is unavailable: ``reason`` says
    why); ``path`` the shared library; ``flags`` its optimisation flags.
    False in a boolean context when it has no library."""

    name: str
    flags: tuple[str, ...]
    lib: Any = None
    ffi: Any = None
    path: Path | None = None
    reason: str = ""
    cached: bool = False

    def __bool__(self) -> bool:
        return self.lib is not None

    def spsc_throughput(
        self, capacity: int = 1024, items: int = 10_000_000, *, batch: int = 0, wait: str | None = None
    ) -> float:
        """Chapter 03's ring benchmark (``ll_bench_spsc_throughput``) run by
        THIS build: two C threads move 1..items through a ring of
        ``capacity``, one record per call (``batch=0``, the inlined path) or
        push_many/pop_many of ``batch``; pinned to :func:`bench_cpus`.
        Returns items/s; RuntimeError if a record arrived out of order."""
        if self.lib is None:
            raise RuntimeError(f"variant {self.name} is not available: {self.reason}")
        capacity = power_of_two(capacity)
        prod, cons = cpu_pair(bench_cpus())  # the one CPU-pair check (a mask may have changed since)
        w = wait_code(wait or default_wait())
        cfg = self.ffi.new(
            "ll_spsc_bench_cfg *",
            {
                "capacity": capacity,
                "items": int_arg(items, "items", minimum=1, maximum=10**10),
                "flags": 0,
                "pair": {"producer_cpu": prod, "consumer_cpu": cons, "producer_wait": w, "consumer_wait": w},
                "batch": int_arg(batch, "batch", minimum=0, maximum=capacity),
                "api": 0,
            },
        )
        out = self.ffi.new("ll_spsc_bench_result *")
        with quiet_blas():
            check_status(self.lib.ll_bench_spsc_throughput(cfg, out), f"SPSC throughput ({self.name} build)")
        if out.errors:
            raise RuntimeError(f"{self.name} build: {out.errors} records arrived out of order")
        return float(out.items_per_s)


def installed() -> Variant:
    """The installed core (``lowlat.core._core``, API mode, ``-O2``) as a
    :class:`Variant`, so the same methods run on it."""
    from lowlat.core._build import compile_args
    from lowlat.core._lib import ffi, lib

    flags = tuple(f for f in compile_args() if f.startswith(("-O", "-m")))
    return Variant("installed", flags, lib, ffi, None, "", True)


def _run(cmd: list[str]) -> str:
    """Runs one compiler command; "" on success, else the reason."""
    try:
        res = subprocess.run(
            cmd, capture_output=True, text=True, errors="replace", timeout=600, env=dict(os.environ, LC_ALL="C")
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"running the compiler {cmd[0]} failed: {exc}"
    if res.returncode == 0:
        return ""
    msg = [ln for ln in res.stderr.splitlines() if "error" in ln] or res.stderr.splitlines()[-1:]
    return f"{cmd[0]} could not build it: {' '.join(msg)[:300]}"


def _compile(compiler: str, flags: tuple[str, ...], so: Path) -> str:
    """Builds the core into ``so``: each source compiled on its own (as many
    at once as there are CPUs), then linked into a temporary file renamed
    into place (atomic: a concurrent build never loads half a file); "" on
    success, else the reason."""
    folder = so.parent
    folder.mkdir(parents=True, exist_ok=True)
    incs = [f"-I{d}" for d in toolchain.include_dirs()]
    base = [*toolchain.compiler_words(compiler), toolchain.STD, *flags, *toolchain.WARNINGS, "-fPIC"]
    with tempfile.TemporaryDirectory(prefix=".build-", dir=folder) as tmp:
        objs = [Path(tmp) / f"{i}-{src.stem}.o" for i, src in enumerate(toolchain.core_sources())]
        jobs = [[*base, *incs, "-c", str(src), "-o", str(o)] for src, o in zip(toolchain.core_sources(), objs)]
        with ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1))) as pool:
            failures = [r for r in pool.map(_run, jobs) if r]
        missing = [o.name for o in objs if not o.is_file()]
        if not failures and missing:  # a "compiler" that exits 0 without compiling (cc='/bin/true')
            failures = [f"{compiler} exited 0 but wrote no object file ({missing[0]}): is it a C compiler?"]
        part = Path(tmp) / so.name
        reason = (
            failures[0]
            if failures
            else _run([*base, "-shared", "-pthread", *map(str, objs), "-o", str(part), "-lm", *_link_args()])
        )
        if not reason and not part.is_file():
            reason = f"{compiler} exited 0 but wrote no shared library: is it a C compiler?"
        if not reason:
            os.replace(part, so)
            return ""
    with contextlib.suppress(OSError):  # not empty (another process's build), or already gone
        folder.rmdir()
    return reason


def build(name: str = "o3-native", *, cc: str | None = None, cache: str | Path | None = None) -> Variant:
    """The core built with the flags of ``VARIANTS[name]`` and loaded: from
    the cache when this exact build exists (``cached=True``), else compiled
    now (all of the core's sources, a few seconds).  A variant that cannot
    be built comes back with ``lib`` None and the ``reason`` (no compiler,
    no sources, the compiler refused a flag or wrote nothing, the cache
    folder cannot be written); a wrong ``name`` is a ValueError, a ``cc``
    (a compiler command, arguments allowed) or ``cache`` (a folder) of the
    wrong type a TypeError."""
    if not isinstance(name, str) or name not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {name!r}")
    if cc is not None:
        toolchain.compiler_words(cc)  # a str naming a command: TypeError/ValueError otherwise
    if cache is not None and (not isinstance(cache, (str, os.PathLike)) or not str(cache)):
        raise TypeError(f"cache must be a folder (a str or a Path) or None, got {type(cache).__name__} {cache!r}")
    flags = VARIANTS[name]
    try:
        compiler = cc or toolchain.c_compiler()
    except RuntimeError as exc:  # $CC names no program
        return Variant(name, flags, reason=str(exc))
    if compiler is None:
        return Variant(name, flags, reason="no C compiler found (cc, gcc or clang): a build variant needs one")
    if not all(p.exists() for p in toolchain.core_sources()):
        return Variant(name, flags, reason=f"the core's sources are not in {toolchain.CSRC} (the course repository)")
    folder = (Path(cache) if cache is not None else cache_dir()) / f"{name}-{_key(flags, compiler)}"
    so = folder / ("liblowlat_core.dylib" if sys.platform == "darwin" else "liblowlat_core.so")
    cached = so.exists()
    if not cached:
        try:
            failure = _compile(compiler, flags, so)
        except OSError as exc:  # the cache folder cannot be made or written
            failure = f"cannot build in {folder}: {exc.strerror or exc}"
        if failure:
            return Variant(name, flags, reason=failure)
    from cffi import FFI

    ffi = FFI()
    ffi.cdef(_cdef())
    try:
        lib = ffi.dlopen(str(so))
    except OSError as exc:
        return Variant(name, flags, path=so, reason=f"the built library does not load: {exc}")
    return Variant(name, flags, lib, ffi, so, "", cached)


def compare(
    other: Variant,
    rounds: int = 7,
    *,
    batch_items: int = 10_000_000,
    item_items: int = 2_000_000,
    batch: int = 256,
    between: Callable[[], object] | None = None,
) -> dict[str, list[float]]:
    """The installed core against ``other``, interleaved ``rounds`` times,
    on chapter 03's ring (1,024 slots): batches of ``batch`` (push_many /
    pop_many, ``batch_items`` records) and one record per call (the inlined
    path, ``item_items`` records).  items/s per round, keys
    "installed, batch", "<name>, batch", "installed, per item",
    "<name>, per item".  ``between`` runs before each round (e.g. a
    core-to-core sample)."""
    if not isinstance(other, Variant):
        raise TypeError(
            f"other must be a Variant (from build(...)), got {type(other).__name__} {other!r:.40}"
            + (f"; use compare(build({other!r}))" if isinstance(other, str) else "")
        )
    rounds = int_arg(rounds, "rounds", minimum=1, maximum=1000)
    batch_items = int_arg(batch_items, "batch_items", minimum=1, maximum=10**10)
    item_items = int_arg(item_items, "item_items", minimum=1, maximum=10**10)
    batch = int_arg(batch, "batch", minimum=0, maximum=1024)
    if between is not None:
        callable_arg(between, "between")
    if not other:
        raise RuntimeError(f"variant {other.name} is not available: {other.reason}")
    base = installed()
    runs = {}
    for v in (base, other):
        runs[f"{v.name}, batch"] = lambda v=v: v.spsc_throughput(1024, batch_items, batch=batch)
        runs[f"{v.name}, per item"] = lambda v=v: v.spsc_throughput(1024, item_items)
    for run in runs.values():  # warm-up: each build calibrates its own clock on first use
        run()
    return interleave(runs, rounds, between=between)


def bench_keys(quick: bool, between: Callable[[], object] | None = None) -> dict[str, float]:
    """items/s of chapter 03's batched ring (and of its per-item path) from
    the installed ``-O2`` core and from the ``-O3 -march=native`` build,
    interleaved; NaN for the variant's keys where it cannot be built here.
    The two ratios (medians of per-round ratios) come with their 90% bands
    (:func:`lowlat.method.interleave.median_band`) as ``<key>@lo`` /
    ``<key>@hi``, which the bench keeps beside its keys.
    ``between`` runs before each round (and once before the installed core's
    runs when the variant cannot be built).  The first call on a machine
    compiles the variant (a few seconds; cached after)."""
    quick = bool_arg(quick, "quick")
    if between is not None:
        callable_arg(between, "between")
    # Short rounds, many of them: the ratios are medians over rounds.
    rounds, items = (21, 4_000_000) if quick else (31, 20_000_000)
    v = build("o3-native")
    keys = (
        "o3_native_batch_items_per_s",
        "o3_native_item_items_per_s",
        "o3_native_vs_o2_batch",
        "o3_native_vs_o2_item",
    )
    out: dict[str, float] = dict.fromkeys(keys, math.nan)
    if not v:
        if between is not None:
            between()
        base = installed()
        out["o2_batch_items_per_s"] = base.spsc_throughput(1024, items, batch=256)
        out["o2_item_items_per_s"] = base.spsc_throughput(1024, items // 5)
        return out
    r = compare(v, rounds, batch_items=items, item_items=items // 5, between=between)
    out.update(
        o2_batch_items_per_s=median(r["installed, batch"]),
        o2_item_items_per_s=median(r["installed, per item"]),
        o3_native_batch_items_per_s=median(r["o3-native, batch"]),
        o3_native_item_items_per_s=median(r["o3-native, per item"]),
    )
    for key, kind in (("o3_native_vs_o2_batch", "batch"), ("o3_native_vs_o2_item", "per item")):
        per_round = ratios(r[f"o3-native, {kind}"], r[f"installed, {kind}"])
        lo, hi = median_band(per_round)
        out.update({key: median(per_round), f"{key}@lo": lo, f"{key}@hi": hi})
    return out


def vector_registers(path: Path) -> dict[str, int]:
    """How many instructions of the shared library at ``path`` name a 128-,
    256- or 512-bit x86 vector register (``xmm``, ``ymm``, ``zmm``), read
    from ``objdump -d``: where -march=native let the compiler use wider
    vectors.  Empty when objdump is missing or fails (e.g. not x86)."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise TypeError(f"path must be a shared library's path (a str or a Path), got {type(path).__name__} {path!r}")
    exe = shutil.which("objdump")
    if exe is None:
        return {}
    try:
        res = subprocess.run([exe, "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return {}
    if res.returncode != 0:
        return {}
    lines = res.stdout.splitlines()
    return {reg: sum(f"%{reg}" in ln for ln in lines) for reg in ("xmm", "ymm", "zmm")}


__all__ = [
    "VARIANTS",
    "X86_FEATURES",
    "Variant",
    "bench_keys",
    "build",
    "cache_dir",
    "compare",
    "cpu_features",
    "installed",
    "vector_registers",
]
