"""The grader used by every exercise.

``grade(name, path)`` compiles (C) or imports (Python) the learner's file in
a child process, runs each check in its own child with a timeout, and returns
a :class:`Report`: one line per check (``PASS: ...`` / ``FAIL: ...``) and a
deterministic verdict (``mpmc: 7/7 checks passed``).  Timings are gathered
separately and are never part of the verdict.  ``python -m lowlat grade
NAME FILE`` prints the same lines and exits 0 only if every check passed.
"""

from lowlat.grading.core import Check, CheckResult, Exercise, Report, grade, report_timing
from lowlat.grading.exercises import EXERCISES

__all__ = ["Check", "CheckResult", "EXERCISES", "Exercise", "Report", "grade", "report_timing"]
