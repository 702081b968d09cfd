"""Readings say what the run showed, including when it did not show the
predicted effect, and why."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from lowlat.machine import machine
from lowlat.machine.topology import Load
from lowlat.method import readings


def test_a_clear_effect_is_read_as_shown() -> None:
    r = readings.compare("ring", ("padded", [10, 11, 10, 12, 10]), ("unpadded", [31, 33, 30, 35, 32]))
    assert r.shown and r.ratio == pytest.approx(3.0, rel=0.05)
    assert "padded was 3.00x faster" in r.text and "the predicted effect" in r.text and "5 interleaved rounds" in r.text


def test_no_effect_is_said_plainly_with_the_reasons() -> None:
    r = readings.compare(
        "ring", ("padded", [10, 11, 10]), ("unpadded", [10, 10, 11]), reasons=["only one usable CPU: x"]
    )
    assert not r.shown
    assert "did not show" in r.text and "likely because only one usable CPU" in r.text


def test_a_reversed_effect_is_said_to_be_against_the_prediction() -> None:
    r = readings.compare("alloc", ("pool", [30, 31, 29]), ("malloc", [10, 10, 11]))
    assert not r.shown and "malloc was 3" in r.text and "against the prediction" in r.text
    assert "Nothing unusual was detected" in r.text


def test_higher_is_better_throughput() -> None:
    r = readings.compare(
        "ring", ("cached", [200e6, 210e6]), ("uncached", [70e6, 72e6]), unit="items/s", lower_is_better=False
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
    assert not r.shown and "rounds disagree" in r.text


def test_rounds_and_medians_that_point_different_ways_are_not_called_an_effect() -> None:
    # A won six rounds of seven by 2x, yet B has the higher median: three of
    # the rounds ran in a faster regime, where B's values sit above A's slow ones.
    a = [10.0, 10.0, 10.0, 10.0, 100.0, 100.0, 100.0]
    b = [5.0, 5.0, 5.0, 30.0, 50.0, 50.0, 50.0]
    r = readings.compare(
        "pinned vs unpinned", ("pinned", a), ("unpinned", b), unit="M records/s", lower_is_better=False
    )
    assert not r.shown and "point the other way" in str(r) and "predicted effect." not in str(r)


def test_a_median_loss_with_disagreeing_rounds_is_not_called_against_the_prediction() -> None:
    r = readings.compare(
        "pinned vs unpinned",
        ("pinned", [10, 30, 10, 30, 10]),
        ("unpinned", [14, 20, 14, 20, 14]),
        unit="M records/s",
        lower_is_better=False,
    )
    assert not r.shown and "unpinned was" in str(r) and "rounds disagree" in str(r) and "against" not in str(r)


def test_large_ratios_carry_separators() -> None:
    r = readings.compare("t", ("a", [1, 1, 1]), ("b", [2500, 2500, 2500]))
    assert "2,500.00x" in r.text
