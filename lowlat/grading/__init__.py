"""The grader used by every exercise.

An exercise is a folder with an ``exercise.toml`` (see
:mod:`lowlat.grading.spec`); the grader finds the folders, there is no
registry.  ``grade(name, path)`` compiles (C) or imports (Python) the
learner's file in a child process, runs each check in its own child with a
timeout, and returns a :class:`Report`: one line per check (``PASS: ...`` /
``FAIL: ...``) and a deterministic verdict (``mpmc: 7/7 checks passed``).
Timings are gathered separately and are never part of the verdict.
``python -m lowlat grade NAME FILE`` prints the same lines and exits 0 only
if every check passed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lowlat.grading.core import CheckResult, GradeFailed, Report, exercise, grade, report_timing
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
    "Report",
    "SpecError",
    "discover",
    "exercise",
    "exercises",
    "grade",
    "report_timing",
]
