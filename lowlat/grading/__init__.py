"""The grader used by every exercise.

An exercise is a folder with an ``exercise.toml`` (see
:mod:`lowlat.grading.spec`); the grader finds the folders, there is no
registry.  ``grade(name, path)`` grades a private copy of the learner's file
and returns a :class:`Report`: one line per check (``PASS: ...`` /
``FAIL: ...``) and a deterministic verdict (``mpmc: 9/9 checks passed``).
C files are compiled to an object, inspected and refused when they could
write the verdict themselves (:mod:`lowlat.grading.objcheck`), then linked
with the checks, which report on a pipe with a per-run nonce
(:mod:`lowlat.grading.engine`).  Python checks run here, calling the learner's
module in a child over a pipe (:mod:`lowlat.grading.pyharness`).  Every
child runs under limits in a fresh directory (:mod:`lowlat.grading.sandbox`).
Timings are gathered separately and are never part of the verdict.
``python -m lowlat grade NAME FILE`` prints the same lines and exits 0 only
if every check passed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lowlat.grading.engine import CheckResult, GradeFailed, Report, exercise, grade, report_timing
from lowlat.grading.sandbox import Limits
from lowlat.grading.spec import Check, Exercise, SpecError, discover


def exercises(root: Path | None = None) -> dict[str, Exercise]:
    """Every exercise, by name, found from its folder (see :func:`discover`)."""
    return discover(root)


def __getattr__(name: str) -> Any:
    # EXERCISES: the exercises found now (kept for `from lowlat.grading import EXERCISES`).
    if name == "EXERCISES":
        return discover()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EXERCISES",
    "Check",
    "CheckResult",
    "Exercise",
    "GradeFailed",
    "Limits",
    "Report",
    "SpecError",
    "discover",
    "exercise",
    "exercises",
    "grade",
    "report_timing",
]
