"""``python -m lowlat doctor``: what this machine can and cannot show, and
what that means for the course."""

from __future__ import annotations

import math
import platform
import shutil
import subprocess
import textwrap
from dataclasses import dataclass, field

import lowlat.core._core as _core
from lowlat.core.affinity import probe_pinning, usable_cpus
from lowlat.core.clock import clock_info
from lowlat.machine import compiler, machine, perf_counters, topology
from lowlat.machine import perf as profile


@dataclass
class Report:
    facts: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ok: bool = True

    def format(self, width: int = 100) -> str:
        """The report, wrapped at word boundaries to ``width`` columns (a
        notebook's output area breaks long lines anywhere, even mid-word)."""
        w = max(len(k) for k, _ in self.facts)
        lines = ["lowlat doctor", ""]
        for k, v in self.facts:
            lines += textwrap.wrap(v, width, initial_indent=f"  {k:<{w}}  ", subsequent_indent=" " * (w + 4)) or [k]
        lines += ["", "What this means for the course:"]
        for n in self.notes:
            lines += textwrap.wrap(n, width, initial_indent="  - ", subsequent_indent="    ")
        return "\n".join(lines)


CJK_HINT = (
    "install one and restart JupyterLab (Debian/Ubuntu: sudo apt-get install fonts-wqy-microhei; "
    "Fedora: sudo dnf install google-noto-sans-cjk-fonts; macOS and Windows ship one)"
)


def cjk_font(timeout_s: float = 10.0) -> tuple[bool | None, str]:
    """Whether a font that draws Chinese is installed (``fc-list :lang=zh``):
    every chapter's objectives carry Chinese glosses, shown as empty boxes
    without one.  (True, its name), (False, why) or (None, why it cannot be
    told: no fc-list; macOS ships CJK fonts)."""
    fc = shutil.which("fc-list")
    if fc is None:
        if platform.system() == "Darwin":
            return True, "macOS ships CJK fonts"
        return None, "cannot tell (no fc-list; fontconfig is not installed)"
    try:
        res = subprocess.run([fc, ":lang=zh", "family"], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot tell (fc-list failed: {exc})"
    families = sorted({line.split(",")[0].strip() for line in res.stdout.splitlines() if line.strip()})
    if families:
        return True, ", ".join(families[:3]) + (f" and {len(families) - 3} more" if len(families) > 3 else "")
    return False, "none found"


def diagnose() -> Report:
    """Probes the machine (about 0.3 s) and explains the findings."""
    rep = Report()
    m = machine()
    cc = compiler()
    rep.facts.append(("C compiler", cc or "NOT FOUND"))
    rep.facts.append(("core build", _core.__file__))
    rep.facts.append(("CPU", m.cpu_model))
    quota = f", a CPU quota of {m.quota_cpus:g} CPU" if math.isfinite(m.quota_cpus) else ", no CPU quota"
    rep.facts.append(("CPUs", f"{m.cpus} online, {m.usable_cpus} usable by this process{quota}"))
    rep.facts.append(("topology", m.topology_line()))
    busy = topology.load(0.2)
    rep.facts.append(("load", busy.describe()))
    rep.facts.append(
        ("platform", f"{m.os} {m.arch}, Python {m.python}" + (f", {m.virtualization}" if m.virtualization else ""))
    )
    cpus = usable_cpus()
    pin = probe_pinning(cpus[0] if cpus else 0)
    rep.facts.append(("pinning", ("works: " if pin.works else "no: ") + pin.reason))
    pc = perf_counters()
    rep.facts.append(("perf counters", ("yes: " if pc.works else "no: ") + pc.reason))
    pa = profile.probe()
    rep.facts.append(("perf", pa.summary()))
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
    rep.facts.append(("counter choice", ci.tsc_choice))
    if ci.tsc_available and ci.tsc_ticks_per_ns > 0 and 1 / ci.tsc_ticks_per_ns > 5:
        rep.notes.append(
            f"The timestamp counter ticks every {1 / ci.tsc_ticks_per_ns:.0f} ns: single-operation histograms are "
            "quantised to that step; time batches of operations for anything shorter."
        )
    rep.facts.append(("perf_counter_ns", f"{ci.python_perf_counter_ns:.1f} ns per call from a Python loop"))
    has_cjk, fonts = cjk_font()
    rep.facts.append(("CJK font", fonts))
    if has_cjk is False:
        rep.notes.append(
            "No font for the Chinese glosses found (fc-list :lang=zh): every chapter's objectives would show "
            f"empty boxes; {CJK_HINT}."
        )
    elif has_cjk is None:
        rep.notes.append(f"Could not check for a CJK font ({fonts}): if the objectives show empty boxes, {CJK_HINT}.")

    if not cc:
        rep.ok = False
        rep.notes.append(
            "No C compiler: the core could not be rebuilt and the C exercises cannot be graded. "
            "Install one (Debian/Ubuntu: apt-get install build-essential; macOS: xcode-select --install)."
        )
    if m.usable_cpus < 2:
        rep.notes.append(
            f"{m.usable_cpus} usable CPU: the two-thread demos (SPSC ring, ping-pong, contended mutex, "
            "pipeline) run both threads on it, taking turns. The benchmarks and chapters switch to yielding "
            "waits and report the core-to-core latency as unavailable; read their numbers as 'what one core "
            "does', not as queue speed."
        )
    elif m.usable_cpus == 2:
        rep.notes.append("2 CPUs: every two-thread demo runs, one thread per core.")
    else:
        rep.notes.append(f"{m.usable_cpus} CPUs: every demo has the cores it needs.")
    if math.isfinite(m.quota_cpus) and m.quota_cpus < min(2.0, m.usable_cpus):
        rep.notes.append(
            f"A CPU quota of {m.quota_cpus:g} CPU (a container or cgroup limit): two threads cannot both run "
            "all the time, so spinning waits are throttled and two-thread ratios come out inflated. The "
            "benchmarks switch to yielding waits; read ratios as this container's, not the hardware's."
        )
    if m.smt:
        rep.notes.append(
            "SMT siblings: two logical CPUs share a physical core. Pinned pairs go to two different "
            "physical cores where there are any; a pair of siblings shares its L1 and shows a shorter hand-off."
        )
    if busy.busy(m.usable_cpus):
        rep.notes.append(
            f"Other work is running ({busy.describe()}): every timing will be noisier and tails longer. "
            "Close what you can, or read the numbers as this busy machine's."
        )
    if not pin.works:
        rep.notes.append(
            "No pinning: threads may move between cores mid-run, so two-thread results vary more; "
            "the pinned-vs-unpinned comparison shows no difference here."
        )
    if m.virtualization:
        rep.notes.append(
            f"A virtual machine ({m.virtualization}): the host can pause or move the vCPUs, so every max "
            "can hold a stall of milliseconds and the core-to-core latency can jump between regimes. Compare "
            "variants interleaved and read medians; the benchmarks do."
        )
    if not pc.works:
        rep.notes.append(
            "No hardware counters: chapter 04 uses getrusage (faults, context switches), cachegrind "
            "(simulated cache misses) and careful timing instead of perf stat's hardware events (cycles, "
            "instructions, cache misses)."
        )
    if pa.perf is None:
        rep.notes.append(
            "No perf: chapter 04b's flame graph falls back to py-spy (Python frames and the C they call) and "
            "its perf sched section to the pipeline's own stall detection."
        )
    elif not pa.sampling:
        rep.notes.append(
            f"perf is installed but may not sample here (perf_event_paranoid {pa.paranoid}): chapter 04b falls "
            "back to py-spy; as root, or with a lower perf_event_paranoid, perf record works."
        )
    elif not pa.root:
        rep.notes.append(
            "perf samples as this user, but without root (perf_event_paranoid "
            f"{pa.paranoid}) flame graphs hold user-space frames only and perf sched is refused: chapter 04b "
            "says so and uses the pipeline's own stall detection."
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
