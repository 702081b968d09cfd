"""``python -m lowlat bench --peers DIR``: the core's ring beside rigtorp's
SPSCQueue, the single-producer queue engineers cite, in one process.

The learner brings the queue (``git clone https://github.com/rigtorp/SPSCQueue``);
the course ships only its own loops (``peers_rigtorp.cpp``), compiled here
with the system's C++ compiler, the core's ``-O2`` and asserts off
(``-DNDEBUG``, as the core's build has them).  The same loops run
both queues: records 1..n pushed and checked in order, a full or empty queue
retried after one pause, both threads pinned to the bench's two CPUs.  The
rounds are interleaved and each key is a median of per-round ratios with its
90% band, as in the main bench."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from cffi import FFI

from lowlat.bench.measures import checked, ratio
from lowlat.bench.results import BenchResults
from lowlat.core.affinity import usable_cpus
from lowlat.core.clock import tsc_ticks_per_ns
from lowlat.experiments.common import pins
from lowlat.experiments.queues import c2c_one_way_ns, spsc_rtt, spsc_throughput
from lowlat.method.interleave import interleave, median

SHIM = Path(__file__).with_name("peers_rigtorp.cpp")
# Where a clone of rigtorp/SPSCQueue keeps its header, then the older layout.
HEADER_PLACES = (Path("include/rigtorp/SPSCQueue.h"), Path("SPSCQueue.h"))
CAPACITY = 1024
CDEF = """
int ll_peer_spsc_throughput(uint64_t items, uint64_t capacity, int cpu_producer, int cpu_consumer,
                            double *items_per_s, uint64_t *errors);
int ll_peer_spsc_rtt(uint64_t round_trips, uint64_t capacity, int cpu_a, int cpu_b, double ticks_per_ns,
                     uint64_t *rtt_ns, uint64_t *errors);
"""
# The core's paths each round runs beside rigtorp's queue: name -> the
# ``api`` of :func:`lowlat.experiments.queues.spsc_throughput` / ``spsc_rtt``.
CORE_PATHS: dict[str, bool | str] = {"inline": False, "u64": "u64", "api": "record"}
PEER_KEYS: dict[str, tuple[str, str]] = {
    "rigtorp_items_per_s": (
        "items/s",
        "rigtorp SPSCQueue<uint64_t>, cap 1024, one record per call, retried after one pause",
    ),
    "core_items_per_s": ("items/s", "the core's ring, the same loop, inlined (lowlat's spsc_plain_items_per_s)"),
    "spsc_inline_vs_rigtorp": ("x", "the core inlined / rigtorp, throughput (above 1: the core moves more)"),
    "spsc_u64_call_vs_rigtorp": ("x", "the core's exported u64 calls / rigtorp, throughput"),
    "spsc_api_vs_rigtorp": ("x", "the core's public record API / rigtorp, throughput"),
    "rigtorp_rtt_p50_ns": ("ns", "rigtorp, round trip over two queues, P50"),
    "core_rtt_p50_ns": ("ns", "the core, the same round trip, inlined, P50"),
    "spsc_rtt_vs_rigtorp": ("x", "the core's round-trip P50 / rigtorp's (below 1: the core is quicker)"),
    "spsc_u64_rtt_vs_rigtorp": ("x", "the same through the core's exported u64 calls"),
    "spsc_api_rtt_vs_rigtorp": ("x", "the same through the core's public record API"),
    "c2c_one_way_ns": ("ns", "core-to-core one-way latency, median of the samples taken between rounds"),
}


class PeerError(Exception):
    """Why the peers cannot be compared here: one line for the command line."""


@dataclass(frozen=True)
class Peer:
    """The compiled loops: ``lib`` (cffi, ABI mode) and the ``ffi`` that owns its types."""

    ffi: FFI
    lib: Any


def find_header(where: str | os.PathLike[str]) -> Path:
    """The SPSCQueue.h named by ``where``: the header itself, or a folder
    holding it at ``include/rigtorp/`` (a clone) or at its top; PeerError
    saying where it looked otherwise."""
    if not str(where).strip():
        raise PeerError("--peers needs a folder: your clone of rigtorp/SPSCQueue")
    p = Path(where).expanduser()
    if p.is_file():
        return p.resolve()
    if not p.is_dir():
        raise PeerError(f"--peers: {where}: no such folder or file")
    for rel in HEADER_PLACES:
        if (p / rel).is_file():
            return (p / rel).resolve()
    looked = " or ".join(str(r) for r in HEADER_PLACES)
    raise PeerError(
        f"--peers: no {looked} under {where} (git clone https://github.com/rigtorp/SPSCQueue, then --peers SPSCQueue)"
    )


def compiler() -> list[str]:
    """The C++ compiler's command: $CXX split as a shell would ("ccache g++"),
    else c++, g++ or clang++ on the PATH; PeerError when none."""
    cxx = os.environ.get("CXX", "").strip() or next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), "")
    try:
        words = shlex.split(cxx)
    except ValueError as exc:
        raise PeerError(f"--peers: CXX={cxx!r} is not a command: {exc}") from None
    if not words:
        raise PeerError("--peers needs a C++17 compiler: set CXX, or install g++ or clang++")
    return words


def build(header: Path, folder: Path) -> Peer:
    """The loops compiled around ``header`` into ``folder``, loaded (cffi, ABI
    mode); PeerError with the compiler's first error line when it fails."""
    so = folder / "lowlat_peer_rigtorp.so"
    # -include: the header goes in front of the loops by its path, whatever
    # characters the path holds.  -DNDEBUG: rigtorp's asserts off, as in its
    # own release builds and in the core's build (Python's flags carry it).
    cmd = [*compiler(), "-std=c++17", "-O2", "-DNDEBUG", "-shared", "-fPIC", "-pthread", "-include", str(header)]
    cmd += [str(SHIM), "-o", str(so)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PeerError(f"--peers: could not run {cmd[0]}: {exc}") from None
    if done.returncode != 0:
        first = next((ln for ln in done.stderr.splitlines() if "error" in ln), done.stderr.strip()[:200])
        raise PeerError(f"--peers: {header} did not compile with {cmd[0]} -std=c++17: {first.strip()}")
    ffi = FFI()
    ffi.cdef(CDEF)
    return Peer(ffi, ffi.dlopen(str(so)))


def _peer_throughput(peer: Peer, items: int, cpus: tuple[int, int]) -> float:
    rate, errors = peer.ffi.new("double *"), peer.ffi.new("uint64_t *")
    rc = peer.lib.ll_peer_spsc_throughput(items, CAPACITY, cpus[0], cpus[1], rate, errors)
    _check(rc, errors[0], "throughput")
    return float(rate[0])


def _peer_rtt_p50(peer: Peer, round_trips: int, cpus: tuple[int, int]) -> float:
    ffi = peer.ffi
    out = np.zeros(round_trips, dtype=np.uint64)
    errors = ffi.new("uint64_t *")
    # The counter's rate, as the core's round trip reads it; 0 where there is
    # none, and both loops then stamp with the monotonic clock.
    tpn = tsc_ticks_per_ns()
    rc = peer.lib.ll_peer_spsc_rtt(
        round_trips, CAPACITY, cpus[0], cpus[1], tpn, ffi.from_buffer("uint64_t[]", out), errors
    )
    _check(rc, errors[0], "round trip")
    return float(np.median(out))


def _check(rc: int, errors: int, what: str) -> None:
    if rc == -2:
        raise PeerError(f"--peers: the {what} loop could not pin its threads")
    if rc != 0:
        raise PeerError(f"--peers: the {what} loop failed (code {rc})")
    if errors:
        raise PeerError(f"--peers: rigtorp's queue delivered {errors} records out of order")


def compare(peer: Peer, *, quick: bool = False, progress: Callable[[str], None] | None = None) -> BenchResults:
    """The interleaved comparison (:data:`PEER_KEYS`); needs two usable CPUs
    (PeerError otherwise: two threads on one CPU hand over only at a time
    slice, which compares the scheduler, not the queues)."""
    if len(usable_cpus()) < 2:
        raise PeerError("--peers compares two threads on two CPUs; this process can use one")
    cpus = pins(True)
    rounds, items, trips = (5, 1_000_000, 20_000) if quick else (11, 2_000_000, 50_000)
    say = progress or (lambda _msg: None)
    c2c: list[float] = []

    def core(api: bool | str) -> Callable[[], float]:
        return checked(lambda: spsc_throughput(CAPACITY, items, wait="spin", api=api).items_per_s)

    say(f"[peers] throughput: {rounds} interleaved rounds of {items:,} records")
    tp = interleave(
        {"rigtorp": checked(lambda: _peer_throughput(peer, items, cpus))}
        | {name: core(api) for name, api in CORE_PATHS.items()},
        rounds,
        between=lambda: c2c.append(c2c_one_way_ns(20_000)),
    )
    say(f"[peers] round trip: {rounds} interleaved rounds of {trips:,}")

    def core_rtt(api: bool | str) -> Callable[[], float]:
        def run() -> float:
            out = spsc_rtt(CAPACITY, trips, wait="spin", api=api)
            return float(out.rtt.percentile(50)) if out.rtt is not None else float("nan")

        return checked(run)

    rt = interleave(
        {"rigtorp": checked(lambda: _peer_rtt_p50(peer, trips, cpus))}
        | {name: core_rtt(api) for name, api in CORE_PATHS.items()},
        rounds,
    )
    r: dict[str, float] = {
        "rigtorp_items_per_s": median(tp["rigtorp"]),
        "core_items_per_s": median(tp["inline"]),
        **ratio("spsc_inline_vs_rigtorp", tp["inline"], tp["rigtorp"]),
        **ratio("spsc_u64_call_vs_rigtorp", tp["u64"], tp["rigtorp"]),
        **ratio("spsc_api_vs_rigtorp", tp["api"], tp["rigtorp"]),
        "rigtorp_rtt_p50_ns": median(rt["rigtorp"]),
        "core_rtt_p50_ns": median(rt["inline"]),
        **ratio("spsc_rtt_vs_rigtorp", rt["inline"], rt["rigtorp"]),
        **ratio("spsc_u64_rtt_vs_rigtorp", rt["u64"], rt["rigtorp"]),
        **ratio("spsc_api_rtt_vs_rigtorp", rt["api"], rt["rigtorp"]),
        "c2c_one_way_ns": median(c2c),
    }
    bands = {k: (r[f"{k}@lo"], r[f"{k}@hi"]) for k in PEER_KEYS if f"{k}@lo" in r}
    return BenchResults({k: r[k] for k in PEER_KEYS}, [], bands)


def run_peers(where: str, *, quick: bool = False, progress: Callable[[str], None] | None = None) -> BenchResults:
    """Finds the header under ``where``, builds the loops around it in a
    temporary folder and compares (:func:`compare`); PeerError for anything
    that stops it before a measurement."""
    header = find_header(where)
    with tempfile.TemporaryDirectory(prefix="lowlat-peers-") as tmp:
        return compare(build(header, Path(tmp)), quick=quick, progress=progress)


__all__ = ["PEER_KEYS", "Peer", "PeerError", "build", "compare", "compiler", "find_header", "run_peers"]
