"""Readings say what the run showed, including when it did not show the
predicted effect, and why."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from lowlat.machine import machine
from lowlat.machine.topology import Load
from lowlat.method import readings


def test_a_clear_effect_is_read_as_shown() -> None:
    r = readings.compare("ring", ("padded", [10, 11, 10, 12, 10]), ("unpadded", [31, 33, 30, 35, 32]))
    assert r.shown and r.ratio == pytest.approx(3.0, rel=0.05)
    assert "padded 3.00x faster" in r.text and "an effect, as predicted" in r.text and "5 rounds" in r.text
    assert "threshold 1.08x from its rounds' spread" in r.text and r.threshold == pytest.approx(1 + 0.1 / 3 + 0.05)


def test_no_effect_is_said_plainly_with_the_reasons() -> None:
    r = readings.compare(
        "ring", ("padded", [10, 11, 10]), ("unpadded", [10, 10, 11]), reasons=["only one usable CPU: x"]
    )
    assert not r.shown
    assert r.verdict == "none" and "no effect beyond it" in r.text and "Likely because only one usable CPU" in r.text


def test_a_reversed_effect_is_said_to_be_against_the_prediction() -> None:
    r = readings.compare("alloc", ("pool", [30, 31, 29]), ("malloc", [10, 10, 11]))
    assert not r.shown and "malloc 3" in r.text and "against the prediction" in r.text and r.decided


def test_higher_is_better_throughput() -> None:
    r = readings.compare(
        "ring",
        ("cached", [200e6, 210e6, 205e6]),
        ("uncached", [70e6, 72e6, 71e6]),
        unit="items/s",
        lower_is_better=False,
    )
    assert r.shown and r.ratio == pytest.approx(2.88, rel=0.05)


@pytest.mark.parametrize("bad", [[], [1.0, math.nan], [0.0, 1.0], [-1.0, 2.0]])
def test_bad_series_are_refused(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="ring"):
        readings.compare("ring", ("a", bad), ("b", [1.0] * len(bad)))


def test_conditions_name_one_cpu_a_quota_load_and_a_regime_change() -> None:
    m = replace(machine(), usable_cpus=1, quota_cpus=0.5)
    busy = Load(load1=4.0, running=6, steal_pct=0.0)
    found = "\n".join(readings.conditions(m, before=busy, c2c_ns=[25, 240]))
    for words in ("one usable CPU", "quota of 0.5", "other work was running before", "changed regime"):
        assert words in found, found
    quiet = replace(machine(), usable_cpus=2, quota_cpus=math.inf)
    assert readings.conditions(quiet, before=Load(0.1, 1, 0.0), c2c_ns=[25, 30]) == []


@pytest.mark.parametrize(
    ("guess", "words"),
    [(None, "left your guess empty"), (100, "close"), (10, "10.0x higher"), (1000, "10.0x lower"), ("x", "not a")],
)
def test_a_guess_is_checked(guess: object, words: str) -> None:
    assert words in readings.check_guess(guess, 100, "round trip", "ns")  # type: ignore[arg-type]


def test_a_median_win_with_disagreeing_rounds_is_not_called_an_effect() -> None:
    r = readings.compare("t", ("a", [1, 1, 1, 10, 10]), ("b", [8, 8, 8, 1, 1]))
    assert not r.shown and "cannot decide (rounds disagree)" in r.text


def test_rounds_and_medians_that_point_different_ways_are_not_called_an_effect() -> None:
    # A won six rounds of seven by 2x, yet B has the higher median: three of
    # the rounds ran in a faster regime, where B's values sit above A's slow ones.
    a = [10.0, 10.0, 10.0, 10.0, 100.0, 100.0, 100.0]
    b = [5.0, 5.0, 5.0, 30.0, 50.0, 50.0, 50.0]
    r = readings.compare(
        "pinned vs unpinned", ("pinned", a), ("unpinned", b), unit="M records/s", lower_is_better=False
    )
    assert not r.shown and "cannot decide (the medians disagree)" in str(r) and "as predicted" not in str(r)


def test_a_median_loss_with_disagreeing_rounds_is_not_called_against_the_prediction() -> None:
    r = readings.compare(
        "pinned vs unpinned",
        ("pinned", [10, 30, 10, 30, 10]),
        ("unpinned", [14, 20, 14, 20, 14]),
        unit="M records/s",
        lower_is_better=False,
    )
    assert not r.shown and "unpinned 1.40x faster" in str(r) and "cannot decide (rounds disagree)" in str(r)
    assert r.verdict == "undecided" and "against" not in str(r)


def test_large_ratios_carry_separators() -> None:
    r = readings.compare("t", ("a", [1, 1, 1]), ("b", [2500, 2500, 2500]))
    assert "2,500.00x" in r.text and "[2,500.00-2,500.00]" in r.text


# ---- the one decision rule (chapter 04a's), its printed threshold ------------------------------

A = [100.0, 102.0, 98.0, 101.0, 99.0, 100.0, 103.0]
A_QUIET = [101.0, 101.0, 99.0, 102.0, 98.0, 100.0, 102.0]  # A'/A within about +-2%
A_NOISY = [130.0, 75.0, 120.0, 80.0, 125.0, 70.0, 100.0]  # A'/A reaching about +-25%


def test_a_reading_prints_the_threshold_of_its_aa_band() -> None:
    b = [x * 1.42 for x in A]
    r = readings.compare("ring", ("padded", A), ("unpadded", b), aa=(A, A_QUIET))
    aa = readings.aa_band(A, A_QUIET)
    assert r.shown and r.origin == "the A/A band" and r.threshold == pytest.approx(aa.threshold.factor)
    assert f"threshold {aa.threshold.factor:.2f}x from the A/A band ±{aa.noise:.0%} + 5% margin" in r.text
    assert "padded 1.42x faster [1.42-1.42]" in r.text and "an effect, as predicted" in r.text


def test_a_reach_below_one_percent_prints_one_decimal() -> None:
    aa = readings.aa_band([100.0] * 9, [100.0, 100.3, 99.8, 100.1, 100.2, 99.9, 100.3, 100.0, 100.1])
    assert aa.noise == pytest.approx(0.002, abs=1e-9)
    assert aa.threshold.describe() == "threshold 1.05x from the A/A band ±0.2% + 5% margin"
    assert readings.aa_band(A, A_QUIET).threshold.describe().endswith("±1% + 5% margin")


def test_without_aa_the_fallback_threshold_comes_from_the_rounds_and_is_printed() -> None:
    r = readings.compare("ring", ("padded", [10, 11, 10, 12, 10]), ("unpadded", [31, 33, 30, 35, 32]))
    assert "from its rounds' spread" in r.text and r.origin == "its rounds' spread"
    old = readings.compare("step", ("a", [10, 10, 10]), ("b", [11, 11, 11]), threshold=1.05)
    assert "threshold 1.05x, fixed by the caller (no A/A band)" in old.text and old.shown


def test_an_aa_band_wider_than_the_effect_cannot_decide() -> None:
    b = [x * f for x, f in zip(A, [1.10, 1.12, 1.15, 1.11, 1.13, 1.14, 1.12])]
    r = readings.compare("hot path", ("sync", A), ("async", b), aa=(A, A_NOISY))
    assert not r.shown and not r.decided and r.verdict == "undecided"
    assert "cannot decide (below the threshold)" in r.text and "14+ or longer rounds would decide" in r.text
    # the same effect against a quiet A/A band is an effect
    assert readings.compare("hot path", ("sync", A), ("async", b), aa=(A, A_QUIET)).shown


def test_a_steady_difference_inside_the_margin_is_not_sent_to_more_rounds() -> None:
    """Every round 2-4% apart: under any threshold the rule can set (never below 1 + its margin),
    and no 1 in the band for "none": more rounds cannot decide it, and the reading says so."""
    b = [x * f for x, f in zip(A, [1.02, 1.03, 1.04, 1.03, 1.02, 1.04, 1.03])]
    r = readings.compare("step", ("fast", A), ("slow", b), aa=(A, A_QUIET))
    assert not r.decided and "cannot decide (below the threshold)" in r.text
    assert "inside the rule's 5% margin: no number of rounds makes it an effect" in r.text
    assert "rounds would decide" not in r.text
    # the same the other way round (the predicted winner 2-4% slower)
    r = readings.compare("step", ("slow", b), ("fast", A), aa=(A, A_QUIET))
    assert not r.decided and "inside the rule's 5% margin" in r.text
    # a band reaching past the margin, under this run's threshold: a quieter run could decide it
    c = [x * f for x, f in zip(A, [1.05, 1.06, 1.07, 1.06, 1.05, 1.07, 1.06])]
    r = readings.compare("step", ("fast", A), ("slow", c), aa=(A, A_NOISY))
    assert not r.decided and "below the threshold" in r.text and "rounds would decide" in r.text


def test_what_would_decide_is_two_cpus_when_the_run_had_one() -> None:
    b = [x * 1.1 for x in A]
    why = ["only one usable CPU: both threads took turns on it"]
    r = readings.compare("ring", ("padded", A), ("unpadded", b), aa=(A, A_NOISY), reasons=why)
    assert "two usable CPUs would decide" in r.text and "Likely because only one usable CPU" in r.text


@pytest.mark.parametrize("n", [1, 2])
def test_too_few_rounds_cannot_decide(n: int) -> None:
    r = readings.compare("t", ("a", [1.0] * n), ("b", [9.0] * n))
    assert not r.shown and f"cannot decide (only {n} round" in r.text and "9+ or longer rounds" in r.text
    short_aa = readings.compare("t", ("a", A), ("b", [x * 3 for x in A]), aa=(A[:n], A_QUIET[:n]))
    assert not short_aa.shown and "noise estimate from only" in short_aa.text


def test_an_aa_band_reaching_2x_says_more_rounds_would_not_decide() -> None:
    wild = [100.0, 900.0, 30.0, 400.0, 100.0, 25.0, 700.0]  # A'/A reaching several times from 1
    r = readings.compare("P99", ("spin", A), ("yield", [x * 2 for x in A]), aa=(A, wild))
    assert not r.decided and "this machine cannot decide it" in r.text and "rounds would decide" not in r.text


def test_medians_pointing_the_other_way_label_the_per_round_ratio() -> None:
    # per round b/a is above 1 in most rounds, but one huge a drags a's median above b's: the medians disagree
    a = [10.0, 10.0, 10.0, 1000.0, 1000.0, 1000.0, 1000.0]
    b = [20.0, 20.0, 20.0, 20.0, 2000.0, 2000.0, 2000.0]
    r = readings.compare("P99", ("a", a), ("b", b))
    assert "(median per-round ratio; the medians disagree)" in r.text, r.text
    assert "median per-round ratio" not in readings.compare("t", ("a", A), ("b", [x * 2 for x in A])).text


def test_a_predicted_null_reads_as_predicted_when_no_effect() -> None:
    r = readings.compare("t", ("a", A), ("b", A_QUIET), aa=(A, A_QUIET), expect_effect=False)
    assert r.shown and "no effect beyond it, as predicted" in r.text
    r = readings.compare("t", ("a", A), ("b", [x * 3 for x in A]), aa=(A, A_QUIET), expect_effect=False)
    assert not r.shown and "an effect, where none was predicted" in r.text


def test_no_effect_is_decided_only_with_the_median_near_one() -> None:
    same = readings.compare("t", ("a", A), ("b", A_QUIET), aa=(A, A_QUIET))
    assert same.verdict == "none" and "no effect beyond it" in same.text


def test_the_same_numbers_give_the_same_verdict_everywhere() -> None:
    from lowlat.method.gate import MetricGate
    from lowlat.method.interleave import ratios
    from lowlat.method.rule import Band, decide

    words = {"effect": "REGRESSION", "opposite": "IMPROVEMENT", "none": "no change beyond noise"}
    for f, aa in [(1.42, A_QUIET), (1.12, A_NOISY), (1.12, A_QUIET), (0.7, A_QUIET), (1.0, A_QUIET)]:
        b = [x * f * (1 + 0.01 * (i % 3)) for i, x in enumerate(A)]
        r = readings.compare("x", ("A", A), ("B", b), aa=(A, aa))
        g = MetricGate("p99", np.array(ratios(b, A)), np.array(ratios(aa, A)), 0.05)
        kind = decide(Band.of(ratios(b, A)), readings.aa_band(A, aa).threshold).kind
        assert r.verdict == kind and g.verdict == words.get(kind, "cannot decide"), (f, r.text, g.format())
        assert g.threshold + 1 == pytest.approx(r.threshold)
        # higher-is-better rates (1/cost) of the same rounds read the same
        rate = readings.compare(
            "x", ("A", [1 / x for x in A]), ("B", [1 / x for x in b]), aa=(A, aa), lower_is_better=False
        )
        assert rate.verdict == kind and rate.ratio == pytest.approx(r.ratio)
        # the contenders swapped: the mirrored verdict, the same fallback threshold
        swapped = readings.compare("x", ("B", b), ("A", A))
        plain = readings.compare("x", ("A", A), ("B", b))
        assert swapped.threshold == pytest.approx(plain.threshold)
        assert {plain.verdict, swapped.verdict} in ({"effect", "opposite"}, {"none"}, {"undecided"})


def test_a_printed_reading_is_at_most_40_words() -> None:
    cases = [
        readings.compare("hot-path P99 per event", ("asynchronous", A), ("synchronous", A_NOISY), aa=(A, A_QUIET)),
        readings.compare("ring hand-off", ("padded", A), ("unpadded", [x * 1.1 for x in A]), aa=(A, A_NOISY)),
        readings.compare("y = a * b + c", ("out= preallocated", A), ("numpy allocates", A_QUIET), unit="ms"),
        readings.compare("step 6", ("counter", A), ("clock", [x * 0.5 for x in A]), threshold=1.05),
    ]
    for r in cases:
        assert len(r.text.replace("->", "").split()) <= 40, r.text


def test_aa_and_threshold_are_checked() -> None:
    with pytest.raises(ValueError, match="aa .* or threshold"):
        readings.compare("t", ("a", A), ("b", A), aa=(A, A), threshold=1.1)
    with pytest.raises(TypeError, match="aa must be"):
        readings.compare("t", ("a", A), ("b", A), aa=[1.0, 2.0, 3.0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one value per round"):
        readings.compare("t", ("a", A), ("b", A), aa=(A, A[:3]))
    with pytest.raises(ValueError, match="positive finite"):
        readings.compare("t", ("a", A), ("b", A), aa=(A, [math.nan] * len(A)))
    with pytest.raises(ValueError, match="margin"):
        readings.compare("t", ("a", A), ("b", A), margin=-0.1)


def test_interleave_aa_measures_the_band_in_the_same_rounds() -> None:
    from lowlat.method.interleave import interleave_aa

    calls: list[str] = []

    def cost(name: str, value: float):  # type: ignore[no-untyped-def]
        return lambda: calls.append(name) or value

    got, aa = interleave_aa({"A": cost("A", 10.0), "B": cost("B", 20.0)}, 4, baseline="A")
    assert set(got) == {"A", "B"} and got["B"] == [20.0] * 4 and aa.band.ratios == (1.0,) * 4
    assert calls.count("A") == 8 and aa.noise == 0 and aa.threshold.factor == pytest.approx(1.05)
    with pytest.raises(ValueError, match="baseline must name"):
        interleave_aa({"A": cost("A", 1.0)}, 3, baseline="Z")


def test_the_winner_reads_faster_for_times_and_rates_lower_or_higher_for_counts() -> None:
    lo, hi = [10, 11, 10, 12, 10], [31, 33, 30, 35, 32]
    assert "a 3.00x faster" in readings.compare("t", ("a", lo), ("b", hi), unit="ns/op").text
    assert (
        "b 3.00x faster" in readings.compare("r", ("b", hi), ("a", lo), unit="M records/s", lower_is_better=False).text
    )
    assert "a 3.00x lower" in readings.compare("w", ("a", lo), ("b", hi), unit="ticks").text
    assert "a 3.00x lower" in readings.compare("w", ("b", hi), ("a", lo), unit="ticks").text  # the other won
    assert "b 3.00x higher" in readings.compare("w", ("b", hi), ("a", lo), unit="MiB", lower_is_better=False).text
