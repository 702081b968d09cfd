"""Author and instructor tools for the course: generating ``exercises/``
from ``solutions/``, re-executing and checking notebooks, building a student
release, and turning graded submissions into a class report.

Never part of a student release, never imported by the ``lowlat`` package.
Run from the repository root: ``python -m tools --help``.
"""
