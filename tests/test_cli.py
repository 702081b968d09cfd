"""The command line: doctor, tour, usage errors."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lowlat", *args], capture_output=True, text=True, timeout=timeout)


def test_doctor_reports_every_probe() -> None:
    res = run("doctor")
    assert res.returncode == 0, res.stdout + res.stderr
    for label in (
        "C compiler",
        "core build",
        "CPU",
        "CPUs",
        "pinning",
        "perf counters",
        "clock_gettime",
        "TSC",
        "perf_counter_ns",
        "What this means for the course:",
    ):
        assert label in res.stdout


def test_doctor_adapts_its_advice_to_the_cpu_count() -> None:
    from lowlat.machine import doctor

    rep = doctor.diagnose()
    text = rep.format()
    assert any(("CPU" in n) for n in rep.notes), text


def test_one_cpu_advice_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from lowlat.machine import Machine, doctor, machine

    fake = Machine(**{**machine().as_dict(), "cpus": 1, "usable_cpus": 1})
    monkeypatch.setattr(doctor, "machine", lambda: fake)
    text = " ".join(doctor.diagnose().format().split())  # unwrapped
    assert "1 usable CPU: the two-thread demos" in text and "core-to-core latency as unavailable" in text


@pytest.mark.slow
@pytest.mark.slow
def test_tour_runs_and_points_onwards() -> None:
    res = run("tour")
    assert res.returncode == 0, res.stderr
    assert "lowlat doctor" in res.stdout and "spsc_items_per_s" in res.stdout
    assert "jupyter lab from the repository root" in res.stdout and "chapters/00_start_here.ipynb" in res.stdout


def test_usage_errors_are_argparse_errors() -> None:
    res = run("frobnicate")
    assert res.returncode == 2 and "invalid choice" in res.stderr
    res = run()
    assert res.returncode == 2


def test_tour_prefetch_verb_follows_the_numbers() -> None:
    from lowlat.__main__ import _prefetch_line

    assert _prefetch_line(0.386, 0.014).startswith("prefetching cut") and "38.6%" in _prefetch_line(0.386, 0.014)
    assert _prefetch_line(0.25, 0.20).startswith("prefetching only trimmed")
    busy = _prefetch_line(0.25, 0.251)
    assert busy.startswith("prefetching did not lower") and "25.0%" in busy and "25.1%" in busy
