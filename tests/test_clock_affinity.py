"""Clocks, CPU count, pinning probes, machine facts."""

from __future__ import annotations

import os
import time

import pytest

from lowlat.core import affinity, clock
from lowlat.core.clock import TSC_KINDS
from lowlat.machine import machine, machine_label, perf_counters


def test_monotonic_clock_agrees_with_python() -> None:
    a, p0 = clock.now_ns(), time.monotonic_ns()
    time.sleep(0.01)
    b, p1 = clock.now_ns(), time.monotonic_ns()
    assert b > a
    # Same clock (CLOCK_MONOTONIC): the two elapsed times match to well under 1 ms.
    assert abs((b - a) - (p1 - p0)) < 1_000_000


def test_tsc_calibration_converts_to_ns() -> None:
    if not clock.tsc_available():
        pytest.skip("no user-readable timestamp counter on this CPU")
    assert clock.tsc_ticks_per_ns() > 0
    t0, c0 = clock.now_ns(), clock.tsc_read()
    time.sleep(0.05)
    t1, c1 = clock.now_ns(), clock.tsc_read()
    # Calibrated counter and clock agree within 2% over 50 ms (generous: one
    # side's read may be delayed by a preemption).
    assert clock.tsc_to_ns(c1 - c0) == pytest.approx(t1 - t0, rel=0.02)
    with pytest.raises(ValueError, match="ticks must be >= 0"):
        clock.tsc_to_ns(-1)


def test_clock_info_fields() -> None:
    ci = clock.clock_info(10_000)
    assert ci.monotonic_read_ns > 0 and ci.monotonic_resolution_ns >= 0
    assert ci.python_perf_counter_ns > 0
    assert ci.tsc_kind in TSC_KINDS.values()
    with pytest.raises(ValueError, match="iterations must be >= 1"):
        clock.clock_info(0)


def test_the_stamps_step_is_a_whole_number_of_counter_ticks_or_the_clocks_step() -> None:
    step = clock.stamp_step_ns()
    assert step >= 1  # stamps are recorded in whole ns
    tpn = clock.tsc_ticks_per_ns()
    if tpn > 0:  # a whole number of ticks, at least one (a hypervisor's counter may step by many)
        ticks = step * tpn
        assert step == 1 or (ticks >= 0.999 and abs(ticks - round(ticks)) < 1e-6)
    with pytest.raises(ValueError, match="reads"):
        clock.stamp_step_ns(0)


def test_cpu_count_and_usable_cpus() -> None:
    assert affinity.cpu_count() == os.cpu_count()
    assert set(affinity.usable_cpus()) <= set(range(affinity.cpu_count()))


def test_pinning_probe_never_crashes() -> None:
    for cpu in affinity.usable_cpus():
        probe = affinity.probe_pinning(cpu)
        assert isinstance(probe.works, bool) and probe.reason
        if os.uname().sysname == "Linux":
            assert probe.works, probe.reason
    with pytest.raises(ValueError, match=r"cpu must be in 0\.\.\d+ on this machine, got 9999"):
        affinity.probe_pinning(9999)
    with pytest.raises(ValueError, match="cpu must be >= 0"):
        affinity.probe_pinning(-1)


def test_pinning_a_nonexistent_cpu_is_a_return_code() -> None:
    from lowlat.core._lib import lib

    assert lib.ll_pin_self(-1) == lib.LL_EINVAL
    assert lib.ll_affinity_probe(100_000) == lib.LL_EINVAL


def test_machine_facts() -> None:
    m = machine()
    assert m.cpus >= 1 and m.cpu_model
    assert str(m.cpus) in machine_label()
    pc = perf_counters()
    assert isinstance(pc.works, bool) and pc.reason


def test_pinning_never_leaves_the_affinity_mask() -> None:
    """A process restricted to one CPU (taskset -c N) cannot be pinned, by
    the pipeline or the ring experiments, to another CPU."""
    import os
    import subprocess
    import sys

    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        import pytest

        pytest.skip("needs sched_setaffinity and two usable CPUs")
    cpus = sorted(os.sched_getaffinity(0))
    mine, other = cpus[-1], cpus[0]
    code = f"""
import os
os.sched_setaffinity(0, {{{mine}}})
from lowlat.experiments import pipeline as pl
from lowlat.core._lib import lib
from lowlat.experiments import queues
from lowlat.core.affinity import probe_pinning
assert not probe_pinning({other}).works
for call in (lambda: pl.run(pl.PipelineConfig(ticks=1000, cpus=({other}, {mine}))),
             lambda: queues.spsc_throughput(1024, 1000, cpus=({other}, {mine}))):
    try:
        call()
    except ValueError as e:
        assert "affinity mask" in str(e), e
    else:
        raise SystemExit("pinned outside the mask")
assert lib.ll_pin_self({other}) == lib.LL_EINVAL
assert os.sched_getaffinity(0) == {{{mine}}}
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr
