"""lowlat.experiments.measurement and lowlat.experiments.troubleshoot: the coordinated-omission scenario
against its closed form, the decision path's rules, the regression gate's
verdicts (on synthetic costs: no timing), and the counter tools' fallbacks."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from lowlat.experiments import measurement as measure
from lowlat.experiments import troubleshoot


def test_omission_scenario_matches_the_readme_example() -> None:
    sc = measure.omission_scenario()
    hs = sc.histograms()
    assert hs["naive"].count == 10_001
    assert hs["naive"].equivalent(hs["naive"].percentile(99.99), 1_000_000)
    # Corrected from the naive samples alone, it agrees with the truth on every percentile.
    for p in (50, 75, 90, 99, 99.9, 100):
        assert hs["truth"].equivalent(hs["corrected"].percentile(p), hs["truth"].percentile(p)), p
    assert abs(np.mean(sc.truth <= 1_000_000) - 0.5) < 0.001
    with pytest.raises(ValueError, match="interval_ns must be >= 1"):
        measure.omission_scenario(interval_ns=0)


def test_heavy_tailed_sample_has_its_tail() -> None:
    x = measure.heavy_tailed(50_000, seed=1)
    assert np.percentile(x, 99.9) > 20 * np.percentile(x, 50)
    assert np.percentile(x, 50) < x.mean() < np.percentile(x, 99.9)


@pytest.mark.parametrize(
    "p50, p99, tput, finding",
    [
        (5_000, 6_000, None, "high P50"),
        (100, 50_000, None, "high P99 with a low P50"),
        (100, 200, 1e5, "throughput too low"),
        (100, 200, 1e7, "within budget"),
    ],
)
def test_decision_path(p50: float, p99: float, tput: float | None, finding: str) -> None:
    d = measure.decide(
        "case",
        p50,
        p99,
        p50_budget_ns=1_000,
        p99_budget_ns=10_000,
        items_per_s=tput,
        target_items_per_s=1e6 if tput else None,
    )
    assert finding in d.finding and d.suspects and "case:" in d.format()


def test_the_tail_ratio_prints_one_decimal() -> None:
    d = measure.decide("malloc", 100, 450, p50_budget_ns=300, p99_budget_ns=300)
    assert "(P99/P50 = 4.5x)" in d.finding


def test_gate_verdicts_on_synthetic_costs() -> None:
    noisy = iter(np.random.default_rng(0).uniform(0.97, 1.03, 100))
    assert measure.gate("aa", lambda: 10.0, lambda: 10.0 * next(noisy)).verdict == "no change beyond noise"
    assert measure.gate("slower", lambda: 10.0, lambda: 20.0).verdict == "REGRESSION"
    assert measure.gate("faster", lambda: 10.0, lambda: 5.0).verdict == "IMPROVEMENT"
    # One bad round out of nine cannot decide it.
    costs = iter([30.0] + [10.0] * 20)
    assert measure.gate("one outlier", lambda: 10.0, lambda: next(costs)).verdict == "no change beyond noise"
    with pytest.raises(ValueError, match=r"threshold must be in \(0, 1\)"):
        measure.gate("x", lambda: 1.0, lambda: 1.0, threshold=2)
    with pytest.raises(ValueError, match="rounds must be >= 3"):
        measure.gate("x", lambda: 1.0, lambda: 1.0, rounds=1)


def test_counter_tools_say_why_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measure.shutil, "which", lambda name: None)
    assert "perf is not installed" in measure.perf_stat(["true"]).reason
    assert "valgrind is not installed" in measure.cachegrind_demo().reason


@pytest.mark.slow
def test_counter_tools_where_present() -> None:
    ps = measure.perf_stat([sys.executable, "-c", "pass"])
    if ps.available:
        assert "task-clock" in ps.counters
    cg = measure.cachegrind_demo()
    if cg.available:
        assert cg.d1_miss_rate["column"] > 2 * cg.d1_miss_rate["row"]


def test_troubleshooting_checklist_answers_every_question() -> None:
    from lowlat.experiments import pipeline as pl

    usage = troubleshoot.with_usage(lambda: pl.run(pl.best_config(ticks=5_000, rate=100_000)))
    found = troubleshoot.checklist(usage, steal_sample_s=0.05)
    questions = [f.question for f in found]
    for q in ("preempted", "pinned", "other load", "steal", "priority", "isolated", "frequency"):
        assert any(q in x for x in questions), q
    assert all(f.verdict in ("ok", "warn", "n/a") for f in found)
    assert "[" in troubleshoot.format_checklist(found)


def test_nonsense_numbers_are_refused_not_judged() -> None:
    """A NaN compares false with everything: decide() used to call it
    "within budget" and the gate "no change" (NaN) or "IMPROVEMENT" (0, < 0)."""
    nan = float("nan")
    with pytest.raises(ValueError, match="p50_ns must be a finite number >= 0, got nan"):
        measure.decide("x", nan, nan, p50_budget_ns=1_000, p99_budget_ns=10_000)
    with pytest.raises(ValueError, match="p99_budget_ns must be a finite number > 0, got inf"):
        measure.decide("x", 1, 2, p50_budget_ns=1_000, p99_budget_ns=float("inf"))
    with pytest.raises(ValueError, match=r"p99_ns \(1\) is below p50_ns \(5\)"):
        measure.decide("x", 5, 1, p50_budget_ns=1_000, p99_budget_ns=10_000)
    for bad in (nan, 0.0, -3.0, float("inf")):
        with pytest.raises(ValueError, match=f"candidate returned {bad!r}: costs must be finite numbers > 0"):
            measure.gate("g", lambda: 10.0, lambda bad=bad: bad)
    with pytest.raises(ValueError, match="baseline returned 0: costs must be"):
        measure.gate("g", lambda: 0, lambda: 1.0)


def test_perf_stat_reads_a_users_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a user, perf names its events task-clock:u: they count all the same."""
    stderr = "1.50,msec,task-clock:u,1500000,100.00,,\n3,,context-switches:u,1500000,100.00,,\n<not supported>,,cycles:u,0,100.00,,\n"
    monkeypatch.setattr(measure.shutil, "which", lambda name: "/usr/bin/perf")
    monkeypatch.setattr(
        measure.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout="", stderr=stderr)
    )
    ps = measure.perf_stat(["true"], events=("task-clock", "context-switches", "cycles"))
    assert ps.available and ps.counters == {"task-clock": "1.50", "context-switches": "3", "cycles": "<not supported>"}
    assert "cycles" in ps.reason
    assert ps.user_only and "user space only" in ps.reason


def test_noise_gate_sets_its_threshold_from_the_aa_spread() -> None:
    quiet = lambda: {"p50": 100.0, "p99": 1_000.0}  # noqa: E731
    g = measure.noise_gate("tail only", quiet, lambda: {"p50": 100.0, "p99": 1_500.0})
    assert g.metrics["p50"].threshold == pytest.approx(0.05)  # no noise: the margin alone
    assert g.metrics["p50"].verdict == "no change beyond noise"
    assert g.metrics["p99"].verdict == "REGRESSION" and g.verdict == "REGRESSION"
    assert "threshold is +5%" in g.format()
    assert measure.noise_gate("faster", quiet, lambda: {"p50": 50.0, "p99": 500.0}).verdict == "IMPROVEMENT"
    # The same 20% slower P99, against a baseline whose P99 varies +-30% from call to call: the A/A band is
    # wider than the effect, so the rule cannot decide (chapter 04a's rule, lowlat.method.rule).
    rng = np.random.default_rng(0)
    noisy = lambda: {"p99": 1_000.0 * rng.uniform(0.7, 1.3)}  # noqa: E731
    g = measure.noise_gate("noisy", noisy, lambda: {"p99": 1_200.0}, rounds=15)
    m = g.metrics["p99"]
    assert m.noise > 0.1 and m.threshold == pytest.approx(m.noise + 0.05)
    assert m.verdict == "cannot decide" and "cannot decide" in g.format()
    assert measure.latency_percentiles(np.arange(1, 101)) == {"p50": 50.5, "p99": pytest.approx(99.01)}


def test_noise_gate_refuses_bad_arguments() -> None:
    ok = lambda: {"p99": 1.0}  # noqa: E731
    with pytest.raises(ValueError, match="margin"):
        measure.noise_gate("x", ok, ok, margin=1.5)
    with pytest.raises(TypeError, match="must return a dict"):
        measure.noise_gate("x", ok, lambda: 3.0)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="finite numbers > 0"):
        measure.noise_gate("x", ok, lambda: {"p99": float("nan")})
    with pytest.raises(ValueError, match="same metrics"):
        measure.noise_gate("x", ok, lambda: {"p50": 1.0})
    with pytest.raises(ValueError, match="no latency samples"):
        measure.latency_percentiles([])


def test_noise_gate_cancels_an_order_effect_in_its_aa_band() -> None:
    # A baseline that costs twice as much whenever it opens a round (a cold cache, say): A and A' must
    # take turns at opening, so the A/A ratios alternate around 1 instead of all lying on one side of it.
    calls = {"n": 0}

    def baseline() -> dict[str, float]:
        calls["n"] += 1
        return {"t": 200.0 if calls["n"] % 3 == 1 else 100.0}

    def candidate() -> dict[str, float]:
        calls["n"] += 1
        return {"t": 100.0}

    g = measure.noise_gate("order", baseline, candidate, rounds=6)
    aa = g.metrics["t"].aa_ratios
    assert list(aa) == [0.5, 2.0] * 3
    assert list(g.metrics["t"].ratios) == [0.5, 1.0] * 3  # B always in the middle: it never opens a round


def test_one_cpu_checklist_names_the_pipelines_own_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    """On one usable CPU the involuntary switches are the producer and the
    consumer taking turns: the checklist says so before blaming other tasks,
    and its load line says the load average counts this process's threads."""
    from lowlat.experiments import pipeline as pl

    usage = troubleshoot.with_usage(lambda: pl.run(pl.best_config(ticks=2_000, rate=100_000)))
    usage = dataclasses.replace(usage, involuntary_switches=500)  # many, whatever this machine did
    monkeypatch.setattr(troubleshoot, "usable_cpus", lambda: [0])
    found = {f.question: f for f in troubleshoot.checklist(usage, steal_sample_s=0.0)}
    pre = next(f for q, f in found.items() if "preempted" in q)
    assert "own two threads taking turns" in pre.advice
    assert "other runnable tasks took the CPUs" not in pre.advice
    other = next(f for q, f in found.items() if "other load" in q)
    assert "own runnable threads included" in other.found
