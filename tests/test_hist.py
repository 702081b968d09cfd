"""Histogram: layout, exactness rules, coordinated-omission correction,
merge, export, bad input, and a cross-check against the `hdrhistogram`
package and numpy's exact percentiles."""

from __future__ import annotations

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from lowlat import Histogram
from lowlat.core.hist import HOUR_NS

PERCENTILES = [0, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100]


def test_layout_matches_hdrhistogram() -> None:
    h = Histogram(1, HOUR_NS, 3)
    assert h.layout.sub_bucket_count == 2048
    assert h.layout.counts_len == 33_792
    assert h.layout.memory_bytes == 33_792 * 8
    assert Histogram(1, HOUR_NS, 2).layout.counts_len == 4_608
    ref = HdrHistogram(1, HOUR_NS, 3)
    assert ref.counts_len == h.layout.counts_len


def test_equivalent_ranges_follow_the_reference_example() -> None:
    h = Histogram(1, HOUR_NS, 3)
    assert h.lowest_equivalent(123456) == 123456
    assert h.highest_equivalent(123456) == 123519
    h.record(1234567)
    assert h.percentile(100) == 1234567  # HdrHistogram's 1234943 (the counter's top) clamped to the max
    assert h.highest_equivalent(1234567) == 1234943
    assert h.max == 1234567  # the exact maximum is kept too


def test_relative_error_bound_everywhere() -> None:
    h = Histogram(1, 10**12, 3)
    for v in np.unique(np.logspace(0, 12, 2000).astype(np.int64)):
        lo, hi = h.lowest_equivalent(int(v)), h.highest_equivalent(int(v))
        assert lo <= v <= hi
        assert hi - lo <= max(1, v * 1e-3)


def test_summary_statistics_are_exact() -> None:
    h = Histogram()
    vals = [5, 100, 1_000_000, 7]
    h.record_many(np.array(vals, dtype=np.uint64))
    assert (h.count, h.min, h.max) == (4, 5, 1_000_000)
    assert h.mean == pytest.approx(sum(vals) / 4)
    h.reset()
    assert (h.count, h.min, h.max) == (0, 0, 0)
    # An empty histogram has no percentile (it used to answer 0, as if 0 ns had been measured).
    with pytest.raises(ValueError, match="P50 of an empty histogram: no value has been recorded"):
        h.percentile(50)
    with pytest.raises(ValueError, match="empty histogram"):
        h.summary()


def test_record_corrected_backfills_like_the_c_library() -> None:
    h = Histogram(1, 10**6, 3)
    h.record_corrected(105, 10)  # 105, 95, ..., 15
    assert h.count == 10
    h.record_corrected(5, 10)  # below the interval: only itself
    h.record_corrected(50, 0)  # no interval: only itself
    assert h.count == 12
    ref = HdrHistogram(1, 10**6, 3)
    for v in range(10, 1000, 10):  # multiples of the interval: both agree exactly
        ref.record_corrected_value(v * 10, 100)
    ours = Histogram(1, 10**6, 3)
    ours.record_many_corrected(np.arange(10, 1000, 10) * 10, 100)
    assert ours.count == ref.get_total_count()
    for p in PERCENTILES:
        assert ours.percentile(p) == min(ref.get_value_at_percentile(p), ours.max)  # clamped to the max


def _one_by_one(lo: int, hi: int, sf: int, v: int, iv: int) -> Histogram:
    """record_corrected's definition, one value at a time (the reference)."""
    h = Histogram(lo, hi, sf)
    h.record(v)
    if iv and v > iv:
        backfill = np.arange(v - iv, iv - 1, -iv, dtype=np.int64)
        h.record_many(backfill[backfill >= iv])
    return h


@pytest.mark.parametrize("lo, hi, sf", [(1, HOUR_NS, 3), (1, 10**8, 2), (1000, 10**10, 3), (1, 10**8, 5)])
def test_backfill_by_counter_equals_one_value_at_a_time(lo: int, hi: int, sf: int) -> None:
    rng = np.random.default_rng(sf + lo)
    cases = [(105, 10), (5, 10), (50, 0), (10**6, 3), (10**6, 1), (2**20 + 7, 13), (999_999, 1000), (10**7, 7)]
    cases += [(int(v), int(rng.integers(0, v + 5))) for v in rng.integers(1, 10**7, 60)]
    for v, iv in cases:
        ours, ref = Histogram(lo, hi, sf), _one_by_one(lo, hi, sf, v, iv)
        ours.record_corrected(v, iv)
        assert (ours.count, ours.min, ours.max, ours.mean) == (ref.count, ref.min, ref.max, ref.mean), (v, iv)
        assert np.array_equal(ours.counts(), ref.counts()), (v, iv)


def test_huge_backfill_is_immediate_and_its_mean_exact() -> None:
    """record_corrected(10**12, 1) used to loop 10**12 times (minutes, deaf
    to Ctrl-C); by counter it is one pass over the counters.  The raw sum
    (5 * 10**23) would wrap a 64-bit counter: the mean stays exact."""
    h = Histogram()
    h.record_corrected(10**12, 1)
    assert (h.count, h.min, h.max) == (10**12, 1, 10**12)
    assert h.mean == pytest.approx((10**12 + 1) / 2, rel=1e-12)
    assert h.equivalent(h.percentile(50), 5 * 10**11)


def test_the_sum_carries_past_64_bits_exactly() -> None:
    """The raw sum is kept as two words, the low one carrying into the high
    one: single records, repeated records and a merge that cross 2**64 leave
    the mean exact (Python's integers give the exact answer)."""
    big = 2**62 + 12345
    a, b = Histogram(1, 2**63 - 1, 2), Histogram(1, 2**63 - 1, 2)
    for _ in range(5):
        a.record(big)  # the fifth record carries: 5 * 2**62 > 2**64
    a.record(big - 1, 7)  # a product above 2**64 in one call
    b.record(3 * 2**61 + 1, 2**20)
    assert a.mean == pytest.approx((5 * big + 7 * (big - 1)) / 12, rel=1e-15)
    a.merge(b)
    exact = (5 * big + 7 * (big - 1) + 2**20 * (3 * 2**61 + 1)) / (12 + 2**20)
    assert (a.count, a.mean) == (12 + 2**20, pytest.approx(exact, rel=1e-15))


def test_coordinated_omission_example_from_the_reference() -> None:
    """10,000 samples at 1 ms plus one 100 s stall: raw, ~99.99% <= 1 ms;
    corrected for a 10 ms interval, about half the samples are stall."""
    raw, fixed = Histogram(1, 10**12, 3), Histogram(1, 10**12, 3)
    samples = np.full(10_000, 1_000_000, dtype=np.uint64)
    samples[5000] = 100 * 10**9
    raw.record_many(samples)
    fixed.record_many_corrected(samples, 10_000_000)
    assert raw.percentile(99.99) <= 1_001_000
    assert fixed.percentile(50) > 1_001_000


def test_merge_keeps_everything() -> None:
    a, b = Histogram(), Histogram()
    a.record_many(np.arange(1, 1001))
    b.record_many(np.arange(1001, 3001))
    a.merge(b)
    assert (a.count, a.min, a.max) == (3000, 1, 3000)
    assert a.mean == pytest.approx(1500.5)
    small = Histogram(1, 1000, 3)  # trackable up to 2047
    with pytest.raises(ValueError, match="holds values up to 3000, above this histogram's range"):
        small.merge(a)
    with pytest.raises(TypeError, match="merge\\(\\) takes a Histogram"):
        a.merge([1, 2])  # type: ignore[arg-type]


def test_export_to_numpy() -> None:
    h = Histogram(1, 10**6, 2)
    h.record(10, 3)
    h.record(5000)
    values, counts = h.to_numpy()
    assert list(values) == [10, h.lowest_equivalent(5000)]
    assert list(counts) == [3, 1]
    full = h.counts()
    assert full.dtype == np.uint64 and full.sum() == 4 and len(full) == h.layout.counts_len
    bv = h.bucket_values()
    assert len(bv) == len(full) and np.all(np.diff(bv.astype(np.int64)) > 0)


@pytest.mark.parametrize(
    "kwargs, exc, msg",
    [
        (dict(lowest=0), ValueError, "lowest must be >= 1, got 0"),
        (dict(sig_figs=0), ValueError, "sig_figs must be 1..5, got 0"),
        (dict(sig_figs=6), ValueError, "sig_figs must be 1..5, got 6"),
        (dict(lowest=10, highest=15), ValueError, "highest must be >= 2 \\* lowest = 20, got 15"),
        (dict(highest=2**64), ValueError, "highest must be <="),
        (dict(lowest=2**61, highest=2**63 - 1, sig_figs=5), ValueError, "lowest is too large for that precision"),
        (dict(highest=2**64 - 1), ValueError, "highest must be in \\[2 \\* lowest, 9223372036854775807\\]"),
        (dict(lowest=1.5), TypeError, "lowest must be an integer, got float"),
    ],
)
def test_bad_construction(kwargs: dict, exc: type, msg: str) -> None:
    with pytest.raises(exc, match=msg):
        Histogram(**kwargs)


def test_bad_values_and_percentiles() -> None:
    h = Histogram(1, 1000, 3)
    top = h.highest_trackable
    h.record(top)
    with pytest.raises(
        ValueError, match=f"value {top + 1} is above the histogram's range \\(highest trackable {top}\\)"
    ):
        h.record(top + 1)
    with pytest.raises(ValueError, match="value must be >= 0, got -1"):
        h.record(-1)
    with pytest.raises(TypeError, match="value must be an integer, got float"):
        h.record(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="above the histogram's range"):
        h.record_many(np.array([1, top + 1]))
    with pytest.raises(ValueError, match="values must be >= 0"):
        h.record_many(np.array([1, -5]))
    with pytest.raises(TypeError, match="values must be an integer array \\(ns\\), got dtype float64"):
        h.record_many(np.array([1.0, 2.0]))
    for bad in (-0.1, 100.5, float("nan")):
        with pytest.raises(ValueError, match="percentile must be in \\[0, 100\\]"):
            h.percentile(bad)
    with pytest.raises(TypeError, match="percentile must be a number"):
        h.percentile("50")  # type: ignore[arg-type]
    assert h.count == 1  # nothing refused was recorded


def _distributions() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(42)
    n = 50_000
    bimodal = np.concatenate([rng.normal(2_000, 200, n - 500), rng.normal(2_000_000, 100_000, 500)])
    return {
        "uniform": rng.uniform(100, 1_000_000, n),
        "lognormal": rng.lognormal(8, 1.5, n),
        "bimodal_far_tail": bimodal,
    }


@pytest.mark.parametrize("name", list(_distributions()))
@pytest.mark.parametrize("sig_figs", [2, 3])
def test_percentiles_agree_with_hdrhistogram_and_numpy(name: str, sig_figs: int) -> None:
    values = np.clip(_distributions()[name], 1, None).astype(np.uint64)
    ours = Histogram(1, 10**10, sig_figs)
    ours.record_many(values)
    ref = HdrHistogram(1, 10**10, sig_figs)
    for v in values.tolist():
        ref.record_value(v)
    err = 10.0**-sig_figs
    exact = np.sort(values)
    for p in PERCENTILES:
        a, b = ours.percentile(p), ref.get_value_at_percentile(p)
        assert ref.values_are_equivalent(a, b), f"{name} p{p}: lowlat {a} vs hdrhistogram {b}"
        # The exact order statistic at the same rank (int(p/100*n + 0.5), as
        # HdrHistogram) lies within the stated relative error of our answer.
        rank = max(1, int(p / 100 * len(values) + 0.5))
        x = int(exact[rank - 1])
        assert abs(a - x) <= x * err + 1, f"{name} p{p}: lowlat {a} vs exact {x}"
        # numpy's own exact percentile, where its rank rule picks the same sample.
        if rank == max(1, int(np.ceil(p / 100 * len(values)))):
            y = float(np.percentile(values, p, method="inverted_cdf"))
            assert abs(a - y) <= y * err + 1, f"{name} p{p}: lowlat {a} vs numpy {y}"


# ---- the contract on every path (issue 28) ----------------------------------------------------------------------


def test_a_value_below_lowest_is_never_reported_above_the_max() -> None:
    """lowest=1000: 0..511 share the first counter; its top (511) is clamped into [min, max]."""
    h = Histogram(1000, 10**9, 3)
    h.record(5)
    assert (h.min, h.max, h.percentile(50), h.percentile(100)) == (5, 5, 5, 5)
    h.record(7)
    assert all(5 <= h.percentile(p) <= 7 for p in PERCENTILES)


def test_percentiles_stay_within_min_and_max_on_random_layouts() -> None:
    rng = np.random.default_rng(28)
    for lowest, sig in ((1, 1), (1000, 2), (4096, 3), (3, 5)):
        h = Histogram(lowest, 10**9, sig)
        h.record_many(rng.integers(0, 20_000, 50))
        assert all(h.min <= h.percentile(p) <= h.max for p in PERCENTILES)


def test_merge_of_a_value_below_lowest_keeps_it() -> None:
    coarse = Histogram(1000, 10**9, 3)
    coarse.record(5)
    fine = Histogram()
    fine.merge(coarse)  # one value in [0, 511]: exactly 5, the min says so
    assert (fine.count, fine.min, fine.max, fine.percentile(50)) == (1, 5, 5, 5)


def test_merge_into_a_finer_layout_is_refused_and_changes_nothing() -> None:
    coarse, fine = Histogram(1, 10**6, 2), Histogram(1, 10**6, 3)
    coarse.record_many([990, 999])  # one coarse counter, two values: where each lies is unknown
    fine.record(7)
    with pytest.raises(ValueError, match="cannot merge exactly.*nothing was merged"):
        fine.merge(coarse)
    assert (fine.count, fine.max) == (1, 7)
    coarse.merge(fine)  # the other way is exact: every fine counter lies in one coarse counter
    assert (coarse.count, coarse.max, coarse.min, coarse.percentile(100)) == (3, 999, 7, 999)


def test_merge_of_the_same_layout_is_exact() -> None:
    a, b = Histogram(), Histogram()
    a.record_many(np.arange(1, 5000))
    b.merge(a)
    assert np.array_equal(a.counts(), b.counts()) and (b.min, b.max) == (a.min, a.max)


def test_counts_never_wrap() -> None:
    h = Histogram()
    h.record(5, 2**63)
    with pytest.raises(ValueError, match="past 2\\*\\*64 - 1.*nothing was merged"):
        h.merge(h)
    with pytest.raises(ValueError, match="past 2\\*\\*64 - 1"):
        h.record(5, 2**63)
    h.record(5, 2**63 - 1)  # exactly to 2**64 - 1
    assert h.count == 2**64 - 1
    for call in (
        lambda: h.record(5),
        lambda: h.record_corrected(10, 1),
        lambda: h.record_many([1]),
        lambda: h.record_many_corrected(np.array([10]), 3),
    ):
        with pytest.raises(ValueError, match="past 2\\*\\*64 - 1"):
            call()
    assert h.count == 2**64 - 1
    with pytest.raises(ValueError, match="past 2\\*\\*64 - 1"):
        h.record_many([1])
    assert h.count == 2**64 - 1


def test_highest_trackable_is_at_least_the_one_asked() -> None:
    for lowest, highest, sig in ((1, 2**63 - 1, 3), (1, 2**62 + 1, 1), (1000, 2**63 - 1, 5), (7, 10**18, 2)):
        h = Histogram(lowest, highest, sig)
        assert h.highest_trackable >= highest
        h.record(highest)
        assert h.max == highest


def test_c_handle_is_the_histogram_the_c_functions_record_into() -> None:
    from lowlat.core._lib import lib

    h = Histogram()
    lib.ll_hist_record(h.c_handle, 42)
    assert (h.count, h.max) == (1, 42)
