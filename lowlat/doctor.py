"""``python -m lowlat doctor``: what this machine can and cannot show, and
what that means for the course."""

from __future__ import annotations

from dataclasses import dataclass, field

import lowlat._core as _core
from lowlat.affinity import usable_cpus
from lowlat.clock import clock_info
from lowlat.machine import compiler, machine, perf_counters, probe_pinning


@dataclass
class Report:
    facts: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ok: bool = True

    def format(self) -> str:
        w = max(len(k) for k, _ in self.facts)
        lines = ["lowlat doctor", ""] + [f"  {k:<{w}}  {v}" for k, v in self.facts]
        lines += ["", "What this means for the course:"] + [f"  - {n}" for n in self.notes]
        return "\n".join(lines)


def diagnose() -> Report:
    """Probes the machine (about 0.3 s) and explains the findings."""
    rep = Report()
    m = machine()
    cc = compiler()
    rep.facts.append(("C compiler", cc or "NOT FOUND"))
    rep.facts.append(("core build", _core.__file__))
    rep.facts.append(("CPU", m.cpu_model))
    rep.facts.append(("CPUs", f"{m.cpus} online, {m.usable_cpus} usable by this process"))
    rep.facts.append(
        ("platform", f"{m.os} {m.arch}, Python {m.python}" + (f", {m.virtualization}" if m.virtualization else ""))
    )
    cpus = usable_cpus()
    pin = probe_pinning(cpus[0] if cpus else 0)
    rep.facts.append(("pinning", ("works: " if pin.works else "no: ") + pin.reason))
    pc = perf_counters()
    rep.facts.append(("perf counters", ("yes: " if pc.works else "no: ") + pc.reason))
    ci = clock_info(200_000)
    rep.facts.append(
        ("clock_gettime", f"{ci.monotonic_read_ns:.1f} ns per read, steps of {ci.monotonic_resolution_ns:.0f} ns")
    )
    if ci.tsc_available:
        rep.facts.append(
            (
                "TSC",
                f"{ci.tsc_kind}: {ci.tsc_read_ns:.1f} ns per read ({ci.tsc_ordered_read_ns:.1f} ordered), "
                f"{ci.tsc_ticks_per_ns:.3f} ticks/ns",
            )
        )
    else:
        rep.facts.append(("TSC", "none: the monotonic clock is used for every stamp"))
    rep.facts.append(("perf_counter_ns", f"{ci.python_perf_counter_ns:.1f} ns per call from a Python loop"))

    if not cc:
        rep.ok = False
        rep.notes.append(
            "No C compiler: the core could not be rebuilt and the C exercises cannot be graded. "
            "Install one (Debian/Ubuntu: apt-get install build-essential; macOS: xcode-select --install)."
        )
    if m.usable_cpus < 2:
        rep.notes.append(
            f"{m.usable_cpus} CPU: the two-thread demos (SPSC ring, ping-pong, contended mutex, "
            "pipeline) will be misleading: both threads share one core and take turns. The benchmarks "
            "switch to yielding waits; read their numbers as 'what one core does', not as queue speed."
        )
    elif m.usable_cpus == 2:
        rep.notes.append(
            "2 CPUs: every two-thread demo runs, one thread per core. Demos with more spinning threads "
            "than cores (4x4 MPMC) show the collapse on purpose."
        )
    else:
        rep.notes.append(f"{m.usable_cpus} CPUs: every demo has the cores it needs.")
    if not pin.works:
        rep.notes.append(
            "No pinning: threads may move between cores mid-run, so two-thread results vary more; "
            "the pinned-vs-unpinned comparison shows no difference here."
        )
    if m.virtualization:
        rep.notes.append(
            f"A virtual machine ({m.virtualization}): the host can pause or move the vCPUs, so every max "
            "can hold a 1-35 ms stall and the core-to-core latency can jump between regimes. Compare "
            "variants interleaved and read medians; the benchmarks do."
        )
    if not pc.works:
        rep.notes.append(
            "No hardware counters: chapter 04 uses getrusage (faults, context switches), cachegrind "
            "(simulated cache misses) and careful timing instead of perf stat."
        )
    if ci.monotonic_read_ns > 100:
        rep.notes.append(
            f"Reading the clock costs {ci.monotonic_read_ns:.0f} ns (slow clocksource?): time batches "
            "of operations, never single ones."
        )
    return rep


def main() -> int:
    rep = diagnose()
    print(rep.format())
    return 0 if rep.ok else 1
