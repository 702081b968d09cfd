"""Checks of the budget exercise, run one per process by
``lowlat.grading.pyharness``.  The reference answers come from
:mod:`lowlat.budget`; the cases are generated here, seeded."""

from __future__ import annotations

import math

import numpy as np

from lowlat import budget as ref
from lowlat.grading.pyharness import refuses_reference

STAGES = ["nic", "parse", "features", "inference", "risk", "encode"]


def _case(seed: int, medians_us: list[float], sigma: float = 0.3, n: int = 5000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {k: rng.lognormal(math.log(m * 1000), sigma, n) for k, m in zip(STAGES, medians_us)}


ALLOT = dict(zip(STAGES, [15.0, 10.0, 20.0, 35.0, 10.0, 5.0]))  # 95 of 100 us: 5 us reserve
CASES = {
    "downstream": (_case(1, [8, 4, 22, 18, 3, 2]), ALLOT, 100.0),
    "upstream": (_case(2, [8, 4, 10, 12, 3, 3.5], 0.25), ALLOT, 100.0),
    "reserve": (_case(3, [12, 8, 17, 31, 8, 4.5], 0.15), ALLOT, 100.0),
    "over_budget": (_case(4, [12, 8, 28, 31, 8, 4], 0.3), ALLOT, 100.0),
    "two_overruns": (_case(5, [14, 12, 22, 15, 3, 2], 0.2), ALLOT, 100.0),
    "within": (_case(6, [5, 3, 8, 14, 3, 1.5], 0.2), ALLOT, 100.0),
}


def _reference(samples, allot, total, pct=99.0):
    rep = ref.Budget(total, list(allot.items())).report(samples, pct)
    return {s.stage: s for s in rep.stages}


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def _rows(mod, samples, allot, total, pct=99.0) -> dict[str, dict]:
    rows = mod.build_report(samples, allot, total, pct)
    if not isinstance(rows, list) or len(rows) != len(allot):
        raise AssertionError(
            f"build_report must return a list of {len(allot)} rows, got {type(rows).__name__} "
            f"of {len(rows) if hasattr(rows, '__len__') else '?'}"
        )
    names = [r.get("stage") for r in rows]
    if names != list(allot):
        raise AssertionError(f"rows must be in pipeline order {list(allot)}, got {names}")
    return {r["stage"]: r for r in rows}


def check_no_reference(mod, path: str) -> str | None:
    return refuses_reference(path, ["lowlat.budget"], "write the logic yourself (the grader compares against it)")


def check_percentiles(mod, path: str) -> str | None:
    for name in ("downstream", "within", "reserve"):
        samples, allot, total = CASES[name]
        for pct in (50.0, 99.0, 99.9):
            mine, theirs = _rows(mod, samples, allot, total, pct), _reference(samples, allot, total, pct)
            for k in allot:
                if not _close(float(mine[k]["p_us"]), theirs[k].p_us):
                    return (
                        f"case {name!r}, P{pct:g} of {k!r}: got {mine[k]['p_us']!r} us, expected "
                        f"{theirs[k].p_us:.4f} us (numpy's default percentile of the ns samples, / 1000)"
                    )
    return None


def check_overruns(mod, path: str) -> str | None:
    for name, (samples, allot, total) in CASES.items():
        mine, theirs = _rows(mod, samples, allot, total), _reference(samples, allot, total)
        for k in allot:
            if not _close(float(mine[k]["over_us"]), theirs[k].over_us):
                return f"case {name!r}, stage {k!r}: over_us {mine[k]['over_us']!r}, expected {theirs[k].over_us:.4f}"
    return None


def check_attribution(mod, path: str) -> str | None:
    for name in ("downstream", "upstream", "reserve", "over_budget", "two_overruns"):
        samples, allot, total = CASES[name]
        mine, theirs = _rows(mod, samples, allot, total), _reference(samples, allot, total)
        for k in allot:
            got = [(w, float(us)) for w, us in mine[k]["ate"]]
            want = list(theirs[k].ate)
            if len(got) != len(want) or any(g[0] != w[0] or not _close(g[1], w[1]) for g, w in zip(got, want)):
                fmt = lambda xs: "[" + ", ".join(f"({w!r}, {us:.3f})" for w, us in xs) + "]"  # noqa: E731
                return f"case {name!r}, stage {k!r}: ate {fmt(got)}, expected {fmt(want)}"
    return None


def check_within(mod, path: str) -> str | None:
    samples, allot, total = CASES["within"]
    for k, r in _rows(mod, samples, allot, total).items():
        if r["over_us"] != 0 or list(r["ate"]):
            return f"every stage fits in case 'within', but {k!r} has over_us={r['over_us']!r}, ate={r['ate']!r}"
    return None


def check_reallocate(mod, path: str) -> str | None:
    cases = [({"a": 10.0, "b": 30.0, "c": 20.0}, 100.0), ({"x": 1.0}, 5.0), ({"p": 40.0, "q": 60.0}, 100.0)]
    for measured, total in cases:
        got, want = mod.reallocate(dict(measured), total), ref.reallocate(measured, total)
        if set(got) != set(want) or any(not _close(float(got[k]), want[k]) for k in want):
            return f"reallocate({measured}, {total}) returned {got}, expected {want}"
        if not _close(sum(got.values()), total):
            return f"reallocate({measured}, {total}) sums to {sum(got.values())}, not {total}"
    return None


def check_impossible(mod, path: str) -> str | None:
    try:
        got = mod.reallocate({"a": 70.0, "b": 40.0}, 100.0)
    except ValueError:
        return None
    return f"reallocate with needs of 110 us in a 100 us budget returned {got!r} instead of raising ValueError"


CHECKS = {
    "no_reference": check_no_reference,
    "percentiles": check_percentiles,
    "overruns": check_overruns,
    "attribution": check_attribution,
    "within": check_within,
    "reallocate": check_reallocate,
    "impossible": check_impossible,
}
