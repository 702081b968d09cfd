"""What the operating system says about the CPUs this process may use:
physical cores and their SMT siblings, NUMA nodes, a CPU quota (cgroup v1 or
v2), cache-line and page size, and the load other processes put on the
machine.  Pure reads of ``/sys``, ``/proc`` and ``sysconf``; every reader
takes a ``root`` so the tests can hand it a fake tree.

Nothing here pins or measures; :mod:`lowlat.core.affinity` chooses CPUs from it
and :mod:`lowlat.machine` prints it.
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The CPU quota and the load other processes put on the machine live in their own module; importable from here too.
from lowlat.machine.contention import Load, Quota, cpu_quota, load, root_path

# The highest CPU number a CPU list may name: Linux's own limit (CONFIG_NR_CPUS) is 8,192; a list
# naming more is not the kernel's, and a range as long as "0-99999999999" would exhaust memory.
MAX_CPU = 65_535


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def parse_cpu_list(text: str) -> list[int]:
    """``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]`` (the kernel's list
    format).  ValueError for anything else: a range that runs backwards
    (``"3-1"``), a CPU above :data:`MAX_CPU`."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a CPU list such as '0-3,8', got {type(text).__name__} {text!r}")
    out: set[int] = set()
    for part in text.replace("\n", ",").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not (lo.isascii() and lo.isdigit()) or (hi and not (hi.isascii() and hi.isdigit())):
            raise ValueError(f"text is not a CPU list: {text!r}")
        first, last = int(lo), int(hi or lo)
        if last < first:
            raise ValueError(f"text is not a CPU list: {text!r} (the range {part!r} runs backwards)")
        if last > MAX_CPU:
            raise ValueError(f"text is not a CPU list: {text!r} (CPU {last} is above {MAX_CPU:,})")
        out.update(range(first, last + 1))
    return sorted(out)


def _cpu_infos(cpu_list: Any, name: str = "cpu_list") -> list[Cpu]:
    if isinstance(cpu_list, (str, bytes)) or not hasattr(cpu_list, "__iter__"):
        raise TypeError(f"{name} must be a list of Cpu (from cpus()), got {type(cpu_list).__name__} {cpu_list!r:.60}")
    out = list(cpu_list)
    for c in out:
        if not isinstance(c, Cpu):
            raise TypeError(f"{name} must hold Cpu objects (from cpus()), got {type(c).__name__} {c!r:.60}")
    return out


def _cpu_numbers(usable: Any, name: str = "usable") -> list[int]:
    """CPU numbers: ints (numpy ints too, never bools or strings), >= 0."""
    if isinstance(usable, (str, bytes)) or not hasattr(usable, "__iter__"):
        raise TypeError(f"{name} must be a list of CPU numbers, got {type(usable).__name__} {usable!r:.60}")
    out = []
    for c in usable:
        if isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 0:
            raise TypeError(f"{name} must hold CPU numbers (ints >= 0), got {type(c).__name__} {c!r}")
        out.append(int(c))
    return out


@dataclass(frozen=True)
class Cpu:
    """One logical CPU: ``core`` and ``package`` as the kernel numbers them,
    ``siblings`` the logical CPUs sharing its physical core (itself included),
    ``node`` its NUMA node (0 where there is one node or none is reported),
    ``llc`` the logical CPUs sharing its last-level cache (itself included;
    empty where the OS does not say)."""

    cpu: int
    core: int
    package: int
    node: int
    siblings: tuple[int, ...]
    llc: tuple[int, ...] = ()


def cpus(root: str | Path = "/") -> list[Cpu]:
    """Every CPU the kernel lists under ``sys/devices/system/cpu`` (empty
    where there is no sysfs, e.g. macOS)."""
    base = root_path(root) / "sys/devices/system/cpu"
    present = _read(base / "online") or _read(base / "present")
    if present is None:
        return []
    nodes = _numa_nodes(root_path(root))
    out = []
    for c in parse_cpu_list(present):
        topo = base / f"cpu{c}" / "topology"
        core = _read(topo / "core_id")
        pkg = _read(topo / "physical_package_id")
        sib = _read(topo / "thread_siblings_list") or _read(topo / "core_cpus_list")
        out.append(
            Cpu(
                cpu=c,
                core=int(core) if core and core.lstrip("-").isdigit() else c,
                package=int(pkg) if pkg and pkg.lstrip("-").isdigit() else 0,
                node=nodes.get(c, 0),
                siblings=tuple(parse_cpu_list(sib)) if sib else (c,),
                llc=_llc(base / f"cpu{c}" / "cache"),
            )
        )
    return out


def _llc(cache: Path) -> tuple[int, ...]:
    """The CPUs sharing the highest cache level listed under ``cache``."""
    best, shared = 0, ""
    for idx in cache.glob("index[0-9]*"):
        level, cpus_text = _read(idx / "level"), _read(idx / "shared_cpu_list")
        if level and level.isdigit() and cpus_text and int(level) > best:
            best, shared = int(level), cpus_text
    try:
        return tuple(parse_cpu_list(shared))
    except ValueError:
        return ()


def _numa_nodes(root: Path) -> dict[int, int]:
    base = root / "sys/devices/system/node"
    out: dict[int, int] = {}
    if not base.is_dir():
        return out
    for d in sorted(base.glob("node[0-9]*")):
        listed = _read(d / "cpulist")
        if listed:
            for c in parse_cpu_list(listed):
                out[c] = int(d.name[4:])
    return out


def physical_cores(cpu_list: list[Cpu]) -> int:
    """Distinct physical cores among ``cpu_list``."""
    cpu_list = _cpu_infos(cpu_list)
    return len({(c.package, c.core) for c in cpu_list})


def pick_pair(usable: list[int], cpu_list: list[Cpu]) -> tuple[int, int] | None:
    """Two usable CPUs for a producer/consumer pair, on two different
    physical cores when such a pair exists (never SMT siblings then), the
    same NUMA node preferred; None when fewer than two CPUs are usable."""
    usable = sorted(set(_cpu_numbers(usable)))
    cpu_list = _cpu_infos(cpu_list)
    if len(usable) < 2:
        return None
    info = {c.cpu: c for c in cpu_list}
    allowed = sorted(usable)
    best: tuple[int, int] | None = None
    best_rank = (9, 9)
    for i, a in enumerate(allowed):
        for b in allowed[i + 1 :]:
            ca, cb = info.get(a), info.get(b)
            same_core = (
                ca is not None
                and cb is not None
                and (b in ca.siblings or (ca.package, ca.core) == (cb.package, cb.core))
            )
            other_node = ca is not None and cb is not None and ca.node != cb.node
            rank = (int(same_core), int(other_node))
            if rank < best_rank:
                best, best_rank = (a, b), rank
    return best


def same_core(a: Cpu, b: Cpu) -> bool:
    """Whether two logical CPUs are SMT siblings of one physical core."""
    _cpu_infos((a, b), "a and b")
    return a.cpu != b.cpu and (b.cpu in a.siblings or (a.package, a.core) == (b.package, b.core))


def numa_nodes(cpu_list: list[Cpu]) -> list[int]:
    """The NUMA nodes of ``cpu_list``, sorted ([0] on a one-node machine)."""
    cpu_list = _cpu_infos(cpu_list)
    return sorted({c.node for c in cpu_list})


# The kinds of CPU pair a cache line can travel between, nearest first.
PAIR_KINDS = ("SMT siblings", "two cores, one LLC", "two LLC groups", "two NUMA nodes")


def pair_kind(a: Cpu, b: Cpu) -> str:
    """Which of :data:`PAIR_KINDS` the pair ``a``, ``b`` is: a line handed
    between SMT siblings stays in one core's caches; between two cores it
    passes through their shared last-level cache (LLC); between LLC groups
    (AMD's CCXs, Intel's sub-NUMA clusters) or NUMA nodes over the on-chip or
    inter-socket links.  Two cores whose LLC the OS does not report count as
    one LLC."""
    _cpu_infos((a, b), "a and b")
    if same_core(a, b):
        return PAIR_KINDS[0]
    if a.node != b.node or a.package != b.package:
        return PAIR_KINDS[3]
    if a.llc and b.llc and b.cpu not in a.llc:
        return PAIR_KINDS[2]
    return PAIR_KINDS[1]


def placement_pairs(usable: list[int], cpu_list: list[Cpu]) -> dict[str, tuple[int, int]]:
    """One usable CPU pair per kind of :data:`PAIR_KINDS` this machine has
    (the lowest-numbered such pair), in that order; empty with fewer than two
    usable CPUs or no topology (macOS)."""
    usable = _cpu_numbers(usable)
    info = {c.cpu: c for c in _cpu_infos(cpu_list)}
    allowed = sorted(c for c in usable if c in info)
    found: dict[str, tuple[int, int]] = {}
    for i, a in enumerate(allowed):
        for b in allowed[i + 1 :]:
            found.setdefault(pair_kind(info[a], info[b]), (a, b))
    return {k: found[k] for k in PAIR_KINDS if k in found}


def table(cpu_list: list[Cpu], usable: list[int], roles: dict[int, str] | None = None, limit: int = 32) -> list[str]:
    """Lines like ``lscpu -e``'s, from sysfs: each CPU's core, socket, NUMA
    node, SMT siblings, the CPUs sharing its last-level cache, whether this
    process may run on it (its affinity mask) and its ``roles`` (e.g.
    producer); at most ``limit`` rows, then a line counting the rest."""
    cpu_list = _cpu_infos(cpu_list)
    usable = _cpu_numbers(usable)
    if roles is not None and not isinstance(roles, dict):
        raise TypeError(f"roles must map CPU numbers to role names, or be None, got {type(roles).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 0:
        raise TypeError(f"limit must be an int >= 0 (rows), got {type(limit).__name__} {limit!r}")
    roles = roles or {}

    def cpus_text(xs: tuple[int, ...]) -> str:
        return (
            ",".join(map(str, xs))
            if len(xs) <= 4
            else f"{xs[0]}-{xs[-1]}"
            if xs == tuple(range(xs[0], xs[-1] + 1))
            else f"{len(xs)} CPUs"
        )

    out = [f"{'CPU':>4} {'CORE':>5} {'SOCKET':>7} {'NODE':>5}  {'SIBLINGS':<9} {'LLC SHARED':<11} {'USABLE':<7} ROLE"]
    for c in cpu_list[:limit]:
        out.append(
            f"{c.cpu:>4} {c.core:>5} {c.package:>7} {c.node:>5}  {cpus_text(c.siblings):<9} "
            f"{cpus_text(c.llc) if c.llc else '?':<11} {'yes' if c.cpu in usable else 'no':<7} {roles.get(c.cpu, '')}".rstrip()
        )
    if len(cpu_list) > limit:
        out.append(f"... and {len(cpu_list) - limit:,} more CPUs")
    return out


def numa_node_from_maps(addr: int, root: str | Path = "/") -> int:
    """The NUMA node holding the memory at ``addr`` in this process, read
    from ``/proc/self/numa_maps`` (the fallback where the get_mempolicy
    system call is refused): -1 when the mapping is not found, has no page
    placed yet, or spreads over several nodes."""
    if isinstance(addr, bool) or not isinstance(addr, numbers.Integral) or addr < 0:
        raise TypeError(f"addr must be an address (an int >= 0), got {type(addr).__name__} {addr!r}")
    r = root_path(root)
    start = None
    for line in (_read(r / "proc/self/maps") or "").splitlines():
        lo, _, rest = line.partition("-")
        hi = rest.split(" ", 1)[0]
        try:
            if int(lo, 16) <= addr < int(hi, 16):
                start = int(lo, 16)
                break
        except ValueError:
            continue
    if start is None:
        return -1
    for line in (_read(r / "proc/self/numa_maps") or "").splitlines():
        fields = line.split()
        if not fields or int(fields[0], 16) != start:
            continue
        nodes = {int(f[1:].split("=")[0]) for f in fields[2:] if f.startswith("N") and f[1:].split("=")[0].isdigit()}
        return nodes.pop() if len(nodes) == 1 else -1
    return -1


def page_size() -> int:
    """The OS's page size in bytes (4 KiB on most x86 Linux, 16 KiB on Apple Silicon)."""
    return int(os.sysconf("SC_PAGE_SIZE")) if hasattr(os, "sysconf") else 4096


def line_size(root: str | Path = "/") -> int:
    """The L1 data cache line in bytes, from sysconf or sysfs; 64 when the
    OS does not say (128 on Apple M-series, which macOS reports through
    ``hw.cachelinesize``)."""
    try:
        v = int(os.sysconf("SC_LEVEL1_DCACHE_LINESIZE"))
        if v > 0:
            return v
    except (ValueError, OSError, AttributeError):
        pass
    for idx in sorted((root_path(root) / "sys/devices/system/cpu/cpu0/cache").glob("index*")):
        if _read(idx / "level") == "1" and _read(idx / "type") in ("Data", "Unified"):
            text = _read(idx / "coherency_line_size")
            if text and text.isdigit():
                return int(text)
    if os.uname().sysname == "Darwin":
        import subprocess

        try:
            out = subprocess.run(["sysctl", "-n", "hw.cachelinesize"], capture_output=True, text=True, timeout=5)
            return int(out.stdout.strip())
        except (OSError, ValueError, subprocess.SubprocessError):
            pass
    return 64


__all__ = [
    "MAX_CPU",
    "PAIR_KINDS",
    "Cpu",
    "Load",
    "Quota",
    "cpu_quota",
    "cpus",
    "line_size",
    "load",
    "numa_node_from_maps",
    "numa_nodes",
    "page_size",
    "pair_kind",
    "parse_cpu_list",
    "physical_cores",
    "pick_pair",
    "placement_pairs",
    "same_core",
    "table",
]
