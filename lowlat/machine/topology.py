"""What the operating system says about the CPUs this process may use:
physical cores and their SMT siblings, NUMA nodes, a CPU quota (cgroup v1 or
v2), cache-line and page size, and the load other processes put on the
machine.  Pure reads of ``/sys``, ``/proc`` and ``sysconf``; every reader
takes a ``root`` so the tests can hand it a fake tree.

Nothing here pins or measures; :mod:`lowlat.core.affinity` chooses CPUs from it
and :mod:`lowlat.machine` prints it.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def parse_cpu_list(text: str) -> list[int]:
    """``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]`` (the kernel's list format)."""
    out: list[int] = []
    for part in text.replace("\n", ",").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f"not a CPU list: {text!r}")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return sorted(set(out))


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
    base = Path(root) / "sys/devices/system/cpu"
    present = _read(base / "online") or _read(base / "present")
    if present is None:
        return []
    nodes = _numa_nodes(Path(root))
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
    return len({(c.package, c.core) for c in cpu_list})


def pick_pair(usable: list[int], cpu_list: list[Cpu]) -> tuple[int, int] | None:
    """Two usable CPUs for a producer/consumer pair, on two different
    physical cores when such a pair exists (never SMT siblings then), the
    same NUMA node preferred; None when fewer than two CPUs are usable."""
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
    return a.cpu != b.cpu and (b.cpu in a.siblings or (a.package, a.core) == (b.package, b.core))


def numa_nodes(cpu_list: list[Cpu]) -> list[int]:
    """The NUMA nodes of ``cpu_list``, sorted ([0] on a one-node machine)."""
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
    info = {c.cpu: c for c in cpu_list}
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
    r = Path(root)
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


@dataclass(frozen=True)
class Quota:
    """A CPU quota from the cgroup controller: ``cpus`` CPUs' worth of time
    per ``period_us`` (inf when unlimited), and where it was read."""

    cpus: float
    period_us: int
    source: str

    @property
    def limited(self) -> bool:
        return math.isfinite(self.cpus)


def _own_cgroup_paths(root: Path) -> list[Path]:
    """The cgroup directories of this process (v2 unified, then v1 cpu)."""
    text = _read(root / "proc/self/cgroup") or ""
    out = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        rel = rel.lstrip("/")
        if controllers == "":
            out.append(root / "sys/fs/cgroup" / rel)
        elif "cpu" in controllers.split(","):
            for mount in ("cpu,cpuacct", "cpu", "cpuacct,cpu"):
                out.append(root / "sys/fs/cgroup" / mount / rel)
    return out


def cpu_quota(root: str | Path = "/") -> Quota:
    """The tightest CPU quota on this process's cgroup and its parents:
    cgroup v2 ``cpu.max`` ("max 100000" or "50000 100000"), or v1
    ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (-1 is unlimited)."""
    r = Path(root)
    best = Quota(math.inf, 100_000, "no CPU quota")
    seen: set[Path] = set()
    for start in _own_cgroup_paths(r) + [r / "sys/fs/cgroup", r / "sys/fs/cgroup/cpu"]:
        d = start
        while True:
            if d in seen:
                break
            seen.add(d)
            q = _quota_in(d)
            if q is not None and q.cpus < best.cpus:
                best = q
            if d == r / "sys/fs/cgroup" or d.parent == d or not d.is_relative_to(r / "sys/fs/cgroup"):
                break
            d = d.parent
    return best


def _quota_in(d: Path) -> Quota | None:
    v2 = _read(d / "cpu.max")
    if v2:
        limit, _, per = v2.partition(" ")
        if limit == "max":
            return None
        try:
            return Quota(int(limit) / int(per or 100_000), int(per or 100_000), str(d / "cpu.max"))
        except ValueError:
            return None
    q, p = _read(d / "cpu.cfs_quota_us"), _read(d / "cpu.cfs_period_us")
    if q and p:
        try:
            quota, period = int(q), int(p)
        except ValueError:
            return None
        if quota > 0 and period > 0:
            return Quota(quota / period, period, str(d / "cpu.cfs_quota_us"))
    return None


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
    for idx in sorted((Path(root) / "sys/devices/system/cpu/cpu0/cache").glob("index*")):
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


@dataclass(frozen=True)
class Load:
    """Other work on the machine: the 1-minute load average, runnable tasks
    right now, and the share of time the hypervisor took (steal) over the
    sample (nan where the OS does not report it)."""

    load1: float
    running: int
    steal_pct: float

    def busy(self, usable_cpus: int) -> bool:
        """More runnable work than this process's CPUs can absorb (besides
        the process itself), or a hypervisor taking over 5% of the time."""
        return self.running - 1 > usable_cpus - 1 or self.steal_pct > 5

    def describe(self) -> str:
        steal = "" if math.isnan(self.steal_pct) else f", steal {self.steal_pct:.1f}%"
        return f"load average {self.load1:.2f}, {self.running} runnable now{steal}"


def _steal_ticks(stat: str) -> tuple[int, int] | None:
    """(steal ticks, all ticks) from the first line of /proc/stat's text."""
    line = stat.splitlines()[:1]
    if not line or not line[0].startswith("cpu "):
        return None
    vals = [int(v) for v in line[0].split()[1:]]
    steal = vals[7] if len(vals) > 7 else 0
    return steal, sum(vals[:8])


def load(sample_s: float = 0.1, root: str | Path = "/") -> Load:
    """Samples the load for ``sample_s`` seconds (steal needs two readings)."""
    r = Path(root)
    first = _steal_ticks(_read(r / "proc/stat") or "")
    if sample_s > 0 and first is not None:
        time.sleep(sample_s)
    stat = _read(r / "proc/stat") or ""  # the second reading serves steal and the run queue
    second = _steal_ticks(stat)
    steal = math.nan
    if first and second and second[1] > first[1]:
        steal = 100.0 * (second[0] - first[0]) / (second[1] - first[1])
    running = 0
    for line in stat.splitlines():
        if line.startswith("procs_running"):
            running = int(line.split()[1])
    try:
        load1 = os.getloadavg()[0] if str(r) == "/" else float((_read(r / "proc/loadavg") or "0").split()[0])
    except (OSError, ValueError, AttributeError):
        load1 = math.nan
    return Load(load1, running, steal)


__all__ = [
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
