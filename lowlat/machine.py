"""What machine this is: the facts every result is printed with, and the
probes the doctor reports (compiler, pinning, counters, timers)."""

from __future__ import annotations

import platform
import subprocess
import sys
from dataclasses import asdict, dataclass
from functools import lru_cache

from lowlat._lib import ffi, lib
from lowlat.affinity import cpu_count, probe_pinning, usable_cpus
from lowlat.toolchain import c_compiler


def cpu_model() -> str:
    """The CPU's marketing name, or the architecture when the OS hides it."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
            )
            if out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine()


def virtualization() -> str:
    """ "KVM VM", "VM" or "" (bare metal / unknown), from /proc/cpuinfo and DMI."""
    try:
        with open("/proc/cpuinfo") as f:
            hyper = any(" hypervisor" in line for line in f if line.startswith("flags"))
    except OSError:
        return ""
    if not hyper:
        return ""
    for path in ("/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"):
        try:
            with open(path) as f:
                v = f.read().strip()
            if v:
                return f"VM ({v})"
        except OSError:
            continue
    return "VM"


def compiler() -> str:
    """First line of the compiler's ``--version``, or "" when none is found."""
    name = c_compiler()
    if name is None:
        return ""
    try:
        out = subprocess.run([name, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return name
    return out.stdout.splitlines()[0] if out.stdout else name


@dataclass(frozen=True)
class PerfCounters:
    works: bool
    reason: str


def perf_counters() -> PerfCounters:
    """Whether hardware counters (instructions, cycles) can be read here."""
    r = ffi.new("ll_perf_probe_result *")
    lib.ll_perf_probe(r)
    if r.status == lib.LL_OK:
        return PerfCounters(True, f"hardware counters work ({r.instructions} instructions counted in a probe loop)")
    if sys.platform != "linux":
        return PerfCounters(False, "perf counters are a Linux facility; not available on this OS")
    if r.status == lib.LL_ENOTSUP:
        return PerfCounters(
            False,
            "no hardware counters exposed (usual in VMs and containers); use getrusage, cachegrind and timing instead",
        )
    return PerfCounters(
        False, f"perf_event_open refused (errno {r.os_errno}); check /proc/sys/kernel/perf_event_paranoid"
    )


@dataclass(frozen=True)
class Machine:
    cpu_model: str
    cpus: int
    usable_cpus: int
    arch: str
    os: str
    virtualization: str
    python: str

    def label(self) -> str:
        """One line for plot titles and result headers."""
        vm = f", {self.virtualization}" if self.virtualization else ""
        return f"{self.cpu_model}, {self.cpus} CPU{'s' if self.cpus != 1 else ''}, {self.os} {self.arch}{vm}"

    def as_dict(self) -> dict:
        return asdict(self)


@lru_cache(maxsize=1)
def machine() -> Machine:
    """Facts about this machine (cached: they do not change in a session)."""
    return Machine(
        cpu_model=cpu_model(),
        cpus=cpu_count(),
        usable_cpus=len(usable_cpus()),
        arch=platform.machine(),
        os=platform.system(),
        virtualization=virtualization(),
        python=platform.python_version(),
    )


def machine_label() -> str:
    return machine().label()


__all__ = [
    "Machine",
    "PerfCounters",
    "c_compiler",
    "compiler",
    "cpu_model",
    "machine",
    "machine_label",
    "perf_counters",
    "probe_pinning",
    "virtualization",
]
