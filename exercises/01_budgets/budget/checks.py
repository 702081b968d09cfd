"""Checks of the budget exercise.  They run in the grader's process with the
reference, :mod:`lowlat.experiments.budget` (see ``lowlat.grading.pyharness``); the
learner's module runs in a child and gets copies of the arguments, so it
cannot disturb the cases or the reference.  The cases are generated here,
seeded."""

from __future__ import annotations

import math

import numpy as np

from lowlat.experiments import budget as ref
from lowlat.grading.pyharness import Learner, LearnerRaised, no_reference, type_name

FORBIDDEN = ["lowlat.experiments.budget"]
ADVICE = "write the logic yourself (the grader compares against it)"
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


# The pipeline's order is the allotments' order, whatever order the samples
# come in: the checks also give both dicts shuffled, each differently.
ALLOT_ORDER = ["features", "nic", "encode", "parse", "risk", "inference"]
SAMPLES_ORDER = ["risk", "parse", "inference", "nic", "features", "encode"]


def _shuffled(samples: dict, allot: dict) -> tuple[dict, dict]:
    return {k: samples[k] for k in SAMPLES_ORDER}, {k: allot[k] for k in ALLOT_ORDER}


def _reference(samples, allot, total, pct=99.0):
    rep = ref.Budget(total, list(allot.items())).report(samples, pct)
    return {s.stage: s for s in rep.stages}


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def _rows(mod: Learner, samples, allot, total, pct: float | None = 99.0) -> dict[str, dict]:
    """The learner's rows by stage; ``pct=None`` leaves the percentile to its default."""
    rows = mod.build_report(samples, allot, total) if pct is None else mod.build_report(samples, allot, total, pct)
    if not isinstance(rows, list) or len(rows) != len(allot):
        size = f" of {len(rows)}" if isinstance(rows, (list, tuple, dict)) else ""
        raise AssertionError(f"build_report must return a list of {len(allot)} rows, got a {type_name(rows)}{size}")
    if not all(isinstance(r, dict) for r in rows):
        raise AssertionError(f"build_report's rows must be dicts, got {[type_name(r) for r in rows][:3]}...")
    names = [r.get("stage") for r in rows]
    if names != list(allot):
        which = " (the samples' order)" if names == list(samples) and list(samples) != list(allot) else ""
        raise AssertionError(
            f"rows must follow the allotments' order (the pipeline's), {list(allot)}, whatever the samples' order; "
            f"got {names}{which}"
        )
    return {r["stage"]: r for r in rows}


def check_no_reference(mod: Learner, path: str) -> str | None:
    return no_reference(mod, path, FORBIDDEN, ADVICE)


def check_percentiles(mod: Learner, path: str) -> str | None:
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
    samples, allot = _shuffled(*CASES["downstream"][:2])
    total = CASES["downstream"][2]
    mine, theirs = _rows(mod, samples, allot, total, None), _reference(samples, allot, total, 99.0)
    for k in allot:
        if not _close(float(mine[k]["p_us"]), theirs[k].p_us):
            return (
                f"build_report without a percentile argument, P of {k!r}: got {mine[k]['p_us']!r} us, expected "
                f"{theirs[k].p_us:.4f} us: the default percentile is 99.0 (README)"
            )
    return None


def _all_cases() -> list[tuple[str, dict, dict, float]]:
    """Every case as given, then each with both dicts shuffled (differently)."""
    out = [(name, s, a, t) for name, (s, a, t) in CASES.items()]
    return out + [(f"{name}, dicts shuffled", *_shuffled(s, a), t) for name, s, a, t in out]


def check_overruns(mod: Learner, path: str) -> str | None:
    for name, samples, allot, total in _all_cases():
        mine, theirs = _rows(mod, samples, allot, total), _reference(samples, allot, total)
        for k in allot:
            if not _close(float(mine[k]["over_us"]), theirs[k].over_us):
                return f"case {name!r}, stage {k!r}: over_us {mine[k]['over_us']!r}, expected {theirs[k].over_us:.4f}"
    return None


def check_attribution(mod: Learner, path: str) -> str | None:
    for name, samples, allot, total in _all_cases():
        if name.startswith("within"):
            continue
        mine, theirs = _rows(mod, samples, allot, total), _reference(samples, allot, total)
        for k in allot:
            got = [(w, float(us)) for w, us in mine[k]["ate"]]
            want = [(w, float(us)) for w, us in theirs[k].ate]
            problem = _ate_difference(got, want)
            if problem:
                return f"case {name!r}, stage {k!r}: {problem}"
    return None


def _ate_difference(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> str | None:
    """What differs between two ``ate`` lists, said precisely (None if they
    agree within the tolerance)."""
    fmt = lambda xs: "[" + ", ".join(f"({w!r}, {us:.6f})" for w, us in xs) + "]"  # noqa: E731
    for i, (g, w) in enumerate(zip(got, want)):
        if g[0] != w[0]:
            return f"entry {i + 1} of ate names {g[0]!r}, expected {w[0]!r}: ate {fmt(got)}, expected {fmt(want)}"
        if not _close(g[1], w[1]):
            return (
                f"entry {i + 1} of ate takes {g[1]:.9f} us from {g[0]!r}, expected {w[1]:.9f} us (a difference of "
                f"{g[1] - w[1]:+.3g} us; the grader allows 1e-6 relative): ate {fmt(got)}, expected {fmt(want)}"
            )
    if len(got) != len(want):
        return f"ate has {len(got)} entries, expected {len(want)}: ate {fmt(got)}, expected {fmt(want)}"
    return None


def check_within(mod: Learner, path: str) -> str | None:
    samples, allot, total = CASES["within"]
    for k, r in _rows(mod, samples, allot, total).items():
        if r["over_us"] != 0 or list(r["ate"]):
            return f"every stage fits in case 'within', but {k!r} has over_us={r['over_us']!r}, ate={r['ate']!r}"
    return None


def check_reallocate(mod: Learner, path: str) -> str | None:
    cases = [
        ({"a": 10.0, "b": 30.0, "c": 20.0}, 100.0),
        ({"x": 1.0}, 5.0),
        ({"p": 40.0, "q": 60.0}, 100.0),
        ({"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0}, 100.0),  # no stage needs anything: split evenly (README)
    ]
    for measured, total in cases:
        want = ref.reallocate(dict(measured), total)
        try:
            got = mod.reallocate(measured, total)
        except ZeroDivisionError as exc:
            said = exc.reason() if isinstance(exc, LearnerRaised) else f"raised ZeroDivisionError: {exc}"
            return (
                f"reallocate({measured}, {total}) {said}: when every need is 0 the README says to split the "
                f"total evenly, {want}"
            )
        if not isinstance(got, dict):
            return f"reallocate({measured}, {total}) returned a {type_name(got)}, expected a dict such as {want}"
        if set(got) != set(want) or any(not _close(float(got[k]), want[k]) for k in want):
            return f"reallocate({measured}, {total}) returned {got}, expected {want}"
        if not _close(sum(got.values()), total):
            return f"reallocate({measured}, {total}) sums to {sum(got.values())}, not {total}"
    return None


def check_impossible(mod: Learner, path: str) -> str | None:
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
