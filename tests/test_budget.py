"""lowlat.experiments.budget: the end-to-end percentile is the verdict; the stages'
percentiles only locate an overrun, and their sum is labelled as what it is."""

from __future__ import annotations

import numpy as np
import pytest

from lowlat.experiments.budget import OVER_BUDGET, RESERVE, Budget, attribute

N = 10_000


def _disjoint_tails(share: float, slow_ns: float = 100_000.0, fast_ns: float = 1_000.0) -> dict[str, np.ndarray]:
    """Two stages, each slow on its own ``share`` of the messages (the two
    slow sets do not overlap)."""
    k = int(share * N)
    a, b = np.full(N, fast_ns), np.full(N, fast_ns)
    a[:k] = slow_ns
    b[k : 2 * k] = slow_ns
    return {"a": a, "b": b}


def test_sum_of_stage_percentiles_can_exceed_the_end_to_end_one() -> None:
    # each stage slow on 1.5% of messages: each stage's P99 is slow, but no message is slow twice
    rep = Budget(150, [("a", 60), ("b", 60)]).report(_disjoint_tails(0.015), 99)
    assert rep.sum_of_stage_p_us == pytest.approx(200.0)
    assert rep.end_to_end_p_us == pytest.approx(101.0)
    assert rep.within_budget is True
    assert rep.overran == ["a", "b"]  # both stages over their allotment: located, yet the budget holds


def test_sum_of_stage_percentiles_can_fall_short_of_the_end_to_end_one() -> None:
    # each stage slow on 0.8% of messages (its P99 is fast), 1.6% of messages slow end to end
    rep = Budget(50, [("a", 20), ("b", 20)]).report(_disjoint_tails(0.008), 99)
    assert rep.sum_of_stage_p_us == pytest.approx(2.0)
    assert rep.end_to_end_p_us == pytest.approx(101.0)
    assert rep.overran == []  # every stage within its allotment at P99 ...
    assert rep.within_budget is False  # ... and still over budget end to end
    assert "OVER the 50 us budget by 51.0 us" in rep.verdict()


def test_format_leads_with_the_verdict_and_labels_the_sum() -> None:
    text = Budget(150, [("a", 60), ("b", 60)]).report(_disjoint_tails(0.015), 99).format()
    lines = text.splitlines()
    assert lines[0] == "verdict: end-to-end P99 101.0 us: within the 150 us budget (49.0 us to spare)"
    assert "sum of stage P99s (not a percentile): 200.0 us" in lines
    assert not any(line.startswith("total") for line in lines)  # no additive "total" row posing as a P99
    assert "a overran its 60 us by 40.0 us at P99" in text


def test_no_verdict_without_one_sample_per_message() -> None:
    rep = Budget(100, [("a", 40), ("b", 40)]).report({"a": np.full(100, 1e3), "b": np.full(50, 1e3)}, 99)
    assert rep.end_to_end_p_us is None and rep.within_budget is None
    assert rep.verdict().startswith("no verdict: the stages have different sample counts")
    assert rep.format().splitlines()[0].startswith("verdict: no verdict")


def test_plot_shows_the_end_to_end_percentile_beside_the_stages() -> None:
    plt = pytest.importorskip("matplotlib.pyplot")
    fig, ax = plt.subplots()
    try:
        Budget(150, [("a", 60), ("b", 60)]).report(_disjoint_tails(0.015), 99).plot(ax)
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels == ["allotments", "stage P99s, stacked\n(not a percentile)", "end-to-end P99\n(the verdict)"]
        widths = [p.get_width() for p in ax.patches if abs(p.get_y() + p.get_height() / 2 - 2) < 1e-9]
        assert widths == [pytest.approx(101.0)]
    finally:
        plt.close(fig)


def test_plot_without_end_to_end_has_two_bars() -> None:
    plt = pytest.importorskip("matplotlib.pyplot")
    fig, ax = plt.subplots()
    try:
        Budget(100, [("a", 40), ("b", 40)]).report({"a": np.full(10, 1e3), "b": np.full(5, 1e3)}, 99).plot(ax)
        assert len(ax.get_yticklabels()) == 2
    finally:
        plt.close(fig)


def test_attribution_rule_by_hand() -> None:
    stages = [("parse", 10.0, 8.0), ("features", 20.0, 27.0), ("inference", 40.0, 35.0)]
    assert attribute(stages, total_us=75) == [(), (("inference", 5.0), ("parse", 2.0)), ()]
    assert attribute([("x", 10.0, 20.0)], total_us=14) == [((RESERVE, 4.0), (OVER_BUDGET, 6.0))]


def test_reallocate_refusal_says_quantiles_do_not_add() -> None:
    rep = Budget(150, [("a", 60), ("b", 60)]).report(_disjoint_tails(0.015), 99)
    with pytest.raises(ValueError, match="the end-to-end percentile may still be within it"):
        Budget(150, [("a", 60), ("b", 60)]).reallocated(rep)


def test_an_overruns_shares_add_up_to_it_as_shown() -> None:
    from lowlat.experiments.shares import rounded_shares as _shown

    ate = [("inference", 4.34), ("risk", 0.24), ("encode", 0.26), ("recv", 2.14), ("parse", 0.46), (RESERVE, 2.16)]
    shown = _shown(ate, 9.6)
    assert round(sum(us for _, us in shown), 1) == 9.6
    assert [who for who, _ in shown] == [who for who, _ in ate]
    assert all(abs(us - exact) < 0.1 + 1e-9 for (_, us), (_, exact) in zip(shown, ate))
    assert _shown([], 0.0) == []
    rep = Budget(20, [("x", 10.0)]).report({"x": np.full(100, 14.26e3)}, 99)  # 4.26 us over: 4.3 shown
    assert rep.sentences() == ["x overran its 10 us by 4.3 us at P99, eating 4.3 us of the reserve"]
