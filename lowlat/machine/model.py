"""What machine this is: the facts every result is printed with, and the
probes the doctor reports (compiler, pinning, counters, timers)."""

from __future__ import annotations

import errno
import math
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass
from functools import lru_cache

from lowlat.core._lib import ffi, lib
from lowlat.core.affinity import cpu_count, probe_pinning, usable_cpus
from lowlat.core.toolchain import c_compiler
from lowlat.machine import topology

# ARM Linux names the core by implementer and part number, not by a "model
# name" line; these are the implementers a learner's board or cloud VM has.
ARM_IMPLEMENTERS = {
    "0x41": "Arm",
    "0x42": "Broadcom",
    "0x48": "HiSilicon",
    "0x4e": "NVIDIA",
    "0x51": "Qualcomm",
    "0x61": "Apple",
    "0xc0": "Ampere",
}


def _cpuinfo() -> list[tuple[str, str]]:
    try:
        with open("/proc/cpuinfo") as f:
            return [(k.strip().lower(), v.strip()) for k, _, v in (line.partition(":") for line in f) if v]
    except OSError:
        return []


def cpu_model() -> str:
    """The CPU's marketing name, or the architecture when the OS hides it."""
    info = _cpuinfo()
    for key, value in info:
        if key in ("model name", "hardware", "cpu model"):
            return value
    fields = dict(reversed(info))  # the first CPU's values
    if "cpu implementer" in fields:
        vendor = ARM_IMPLEMENTERS.get(fields["cpu implementer"].lower(), f"implementer {fields['cpu implementer']}")
        return f"{vendor} part {fields.get('cpu part', '?')} ({platform.machine()})"
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
    """ "VM (vendor)", "VM" or "" (bare metal / unknown): the x86 hypervisor
    flag in /proc/cpuinfo, or on ARM (no flags line) /sys/hypervisor and a
    DMI vendor naming a hypervisor."""
    info = _cpuinfo()
    has_flags = any(k == "flags" for k, _ in info)
    hyper = any(k == "flags" and " hypervisor" in f" {v} " for k, v in info)
    if not has_flags:
        try:
            with open("/sys/hypervisor/type") as f:
                hyper = bool(f.read().strip())
        except OSError:
            hyper = False
        try:
            with open("/sys/class/dmi/id/sys_vendor") as f:
                vendor = f.read().strip().lower()
            hyper = hyper or any(
                v in vendor
                for v in ("qemu", "kvm", "amazon ec2", "google", "microsoft", "vmware", "xen", "innotek", "parallels")
            )
        except OSError:
            pass
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


PERF_PARANOID = "/proc/sys/kernel/perf_event_paranoid"


def _paranoid_level() -> str:
    """The kernel's perf_event_paranoid setting, or "" when it cannot be read."""
    try:
        with open(PERF_PARANOID) as f:
            return f.read().strip()
    except OSError:
        return ""


def _perf_verdict(
    status: int, os_errno: int, instructions: int, *, platform: str = sys.platform, paranoid: str | None = None
) -> PerfCounters:
    """Turns ``ll_perf_probe``'s result into a verdict and a reason a learner
    can act on.  "Not supported" (the kernel or the VM has no such counters:
    ENOSYS, ENOENT, ENODEV, EOPNOTSUPP; the core's ``ll_perf_classify_errno``
    decides) is kept apart from "refused" (EACCES, EPERM: only then is
    perf_event_paranoid, or a container's seccomp filter, the thing to check).
    ``platform`` and ``paranoid`` (the setting's text; read from the kernel
    when None) are parameters so the tests can play every case."""
    if status == lib.LL_OK:
        return PerfCounters(True, f"hardware counters work ({instructions} instructions counted in a probe loop)")
    if not platform.startswith("linux"):
        return PerfCounters(False, "perf counters are a Linux facility; not available on this OS")
    name = errno.errorcode.get(os_errno, f"errno {os_errno}")
    if status == lib.LL_ENOTSUP:
        if os_errno == errno.ENOSYS:
            return PerfCounters(
                False,
                "this kernel has no perf_event_open (ENOSYS: built without perf events, or an emulator such as "
                "qemu-user); use getrusage, cachegrind and timing instead",
            )
        if os_errno == 0:
            return PerfCounters(
                False,
                "the counters open but count nothing (usual in VMs); use getrusage, cachegrind and timing instead",
            )
        return PerfCounters(
            False,
            "no hardware counters exposed (usual in VMs and containers); use getrusage, cachegrind and timing instead",
        )
    if os_errno in (errno.EACCES, errno.EPERM):
        level = _paranoid_level() if paranoid is None else paranoid
        if level.lstrip("-").isdigit() and int(level) <= 2:
            why = (
                f"perf_event_paranoid is {level} here, which allows it: a container's seccomp profile "
                "or a security module refused it"
            )
        else:
            setting = f"is {level} here" if level else "could not be read"
            why = (
                f"check {PERF_PARANOID} ({setting}; counting your own process needs 2 or less: "
                "sudo sysctl kernel.perf_event_paranoid=2)"
            )
        return PerfCounters(False, f"perf_event_open refused ({name}): {why}")
    return PerfCounters(False, f"perf_event_open failed ({name}: {os.strerror(os_errno)})")


def perf_counters() -> PerfCounters:
    """Whether hardware counters (instructions, cycles) can be read here, and
    why not: not supported (no perf events, no such counter) or refused
    (permissions)."""
    r = ffi.new("ll_perf_probe_result *")
    lib.ll_perf_probe(r)
    return _perf_verdict(r.status, r.os_errno, r.instructions)


@dataclass(frozen=True)
class Machine:
    cpu_model: str
    cpus: int
    usable_cpus: int
    arch: str
    os: str
    virtualization: str
    python: str
    physical_cores: int = 0  # among the usable CPUs; 0 where the OS does not say
    smt: bool = False  # some usable CPU shares its physical core with another
    quota_cpus: float = math.inf  # a cgroup CPU quota, in CPUs' worth of time
    line_size: int = 64  # bytes, L1 data cache line
    page_size: int = 4096  # bytes

    def label(self) -> str:
        """One line for plot titles and result headers."""
        vm = f", {self.virtualization}" if self.virtualization else ""
        usable = f" ({self.usable_cpus} usable)" if self.usable_cpus != self.cpus else ""
        quota = f", quota {self.quota_cpus:g} CPU" if math.isfinite(self.quota_cpus) else ""
        return (
            f"{self.cpu_model}, {self.cpus} CPU{'s' if self.cpus != 1 else ''}{usable}{quota}, "
            f"{self.os} {self.arch}{vm}"
        )

    @property
    def effective_cpus(self) -> float:
        """CPUs this process can keep busy at once: its usable CPUs, or its
        quota when that is smaller."""
        return min(float(self.usable_cpus), self.quota_cpus)

    def topology_line(self) -> str:
        """Cores, SMT and sizes in one line (for the doctor and chapter headers)."""
        cores = (
            f"{self.physical_cores} physical core{'s' if self.physical_cores != 1 else ''}"
            if self.physical_cores
            else "physical cores not reported"
        )
        smt = "SMT siblings among them" if self.smt else "no SMT siblings"
        return f"{cores}, {smt}; {self.line_size} B cache lines, {self.page_size // 1024} KiB pages"

    def as_dict(self) -> dict:
        return asdict(self)


@lru_cache(maxsize=1)
def machine() -> Machine:
    """Facts about this machine (cached: they do not change in a session)."""
    usable = usable_cpus()
    mine = [c for c in topology.cpus() if c.cpu in usable]
    return Machine(
        cpu_model=cpu_model(),
        cpus=cpu_count(),
        usable_cpus=len(usable),
        arch=platform.machine(),
        os=platform.system(),
        virtualization=virtualization(),
        python=platform.python_version(),
        physical_cores=topology.physical_cores(mine) if mine else 0,
        smt=any(len(set(c.siblings) & set(usable)) > 1 for c in mine),
        quota_cpus=topology.cpu_quota().cpus,
        line_size=topology.line_size(),
        page_size=topology.page_size(),
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
