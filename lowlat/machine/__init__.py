"""The machine model: what this machine is (CPUs, quota, SMT siblings, line
and page size, timer, VM, counters, perf, load), detected once and consulted
by every experiment (``model``); the topology read from ``/sys`` and
``/proc`` (``topology``); where threads and memory go (``placement``); and
``python -m lowlat doctor`` (``doctor``)."""

from lowlat.machine.model import Machine, compiler, machine, machine_label, perf_counters

__all__ = ["Machine", "compiler", "machine", "machine_label", "perf_counters"]
