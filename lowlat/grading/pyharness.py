"""Python exercises: the checks and the references run in the grader's
process; the learner's module runs in a child (``host.py``) and is called
over a pipe.

An exercise's ``checks.py`` (in its folder) defines

- ``CHECKS``, a dict of check id -> ``fn(module, path)``.  ``module`` is a
  :class:`Learner`: the learner's module, imported in a child process.
  ``module.build_report(samples, allot, 100.0)`` calls the learner's function
  there with copies of the arguments (pickled) and returns its value: plain
  data (numbers, strings, lists, tuples, dicts, sets, numpy arrays and
  scalars, of exact builtin types, so no learner ``__eq__`` reaches the
  checks) or a :class:`Remote` for any other object (use it as the object:
  attributes, calls, ``iter``/``next``).  When the learner's code raises, the
  call raises a :class:`LearnerRaised` that is also an instance of the
  builtin exception it derives from (``except ValueError`` works), with
  ``.type_name``, ``.where`` (``budget_report.py:12 in build_report``) and
  ``.frames`` (the traceback's function names).  A call that does not return
  within the check's time, a learner that ends its process, and a function
  that modifies its arguments in place raise :class:`LearnerStopped` and
  :class:`LearnerMutated`; the check fails with their message.
  ``module.map("index_of", [(v, 3), ...])`` makes many calls in one round
  trip; ``module.helper("CountingSource", n=20)`` creates one of the host's
  helpers in the child; ``module.threads()`` counts the child's threads from
  the grader's side (``/proc/<pid>/task``).  A check returns None when it passes, else the reason it fails;
  the ``timing`` check may return a dict of numbers (reported, never graded).
- ``FORBIDDEN``, the modules the learner may not import (each with its
  submodules), and ``ADVICE``, what to do instead.  They do not exist in the
  child at all (neither does ``lowlat``: :mod:`lowlat.grading.pyfolder`), so
  any import of them fails there however it is spelled, and
  :func:`refuses_reference` names them early, from the source.

Each check gets a fresh child in a fresh folder, under the grader's limits
(:mod:`lowlat.grading.sandbox`) and, where the kernel has them, a seccomp
filter and a Landlock ruleset (``host_lockdown.py``).  The modules:
:mod:`~lowlat.grading.pychild` (the child and the pipe),
:mod:`~lowlat.grading.pyvalues` (what comes back),
:mod:`~lowlat.grading.pysource` (the static look at imports).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lowlat.grading.child import ChildOutcome
from lowlat.grading.pychild import Learner, Remote, type_name
from lowlat.grading.pysource import imported_modules, refuses_reference
from lowlat.grading.pyvalues import HostError, LearnerMutated, LearnerRaised, LearnerStopped
from lowlat.grading.sandbox import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from lowlat.grading.report import Report
    from lowlat.grading.spec import Check, Exercise

__all__ = [
    "HostError",
    "Learner",
    "LearnerMutated",
    "LearnerRaised",
    "LearnerStopped",
    "Remote",
    "imported_modules",
    "load",
    "no_reference",
    "refuses_reference",
    "run_check",
    "runner",
    "type_name",
]

CheckFn = Callable[[Any, str], Any]


def load(path: str | os.PathLike[str], name: str) -> ModuleType:
    """Imports the (trusted) file at ``path`` as module ``name``: an
    exercise's checks, in the grader's process."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses and pickling look their module up here
    spec.loader.exec_module(mod)
    return mod


# ---- the reference ----------------------------------------------------------------------------


def no_reference(mod: Learner, path: str, forbidden: Sequence[str], advice: str) -> str | None:
    """The ``no_reference`` check once the module imported: the static look
    (an import that ran at import time and failed in the child, where the
    reference does not exist, is reported by :func:`run_check`)."""
    return refuses_reference(path, forbidden, advice)


def _missing(exc: LearnerRaised, forbidden: Sequence[str]) -> str | None:
    """For an ImportError of a module absent from the child: "the reference"
    when it is (or holds) a forbidden module, else "absent"; None otherwise."""
    m = exc.module
    if not m or not isinstance(exc, ImportError):
        return None
    if any(m == f or f.startswith(m + ".") or m.startswith(f + ".") for f in forbidden):
        return "the reference"
    return "absent"


_ONLY = "learner code may import the standard library and numpy only"


# ---- running one check ----------------------------------------------------------------------


def _reason(exc: BaseException) -> str:
    if isinstance(exc, LearnerRaised):
        if exc.module and isinstance(exc, ImportError):
            return f"the file imports {exc.module}, which does not exist where learner code runs ({_ONLY}): {exc}"
        if isinstance(exc, NotImplementedError):
            return "not implemented yet (the function raises NotImplementedError)"
        return exc.reason()
    if isinstance(exc, (LearnerStopped, LearnerMutated)):
        return str(exc)
    if isinstance(exc, NotImplementedError):
        return "not implemented yet (the function raises NotImplementedError)"
    if type(exc) is AssertionError and str(exc):  # a check's way of failing from inside a helper
        return str(exc)
    # The check's own code raised on something the learner returned.
    tb = traceback.extract_tb(exc.__traceback__)
    at = f" (checks.py:{tb[-1].lineno})" if tb else ""
    return f"the checks could not use what the file returned: {type(exc).__name__}: {exc}{at}"


def run_check(
    checks: ModuleType,
    check_id: str,
    learner: Path,
    *,
    timeout_s: float,
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[bool, str, dict[str, float]]:
    """Runs check ``check_id`` of ``checks`` against the learner's file:
    (passed, reason, timing info)."""
    table: dict[str, CheckFn] = checks.CHECKS
    if check_id not in table:
        return False, f"unknown check '{check_id}'", {}
    forbidden = list(getattr(checks, "FORBIDDEN", []))
    advice = str(getattr(checks, "ADVICE", "write it yourself"))
    with Learner(learner, module_name=f"learner_{learner.stem}", timeout_s=timeout_s, limits=limits) as mod:
        try:
            try:
                mod.load()
            except LearnerRaised as exc:
                missing = _missing(exc, forbidden)
                if missing == "the reference":
                    early = refuses_reference(learner, forbidden, advice)
                    late = (
                        f"the file imports {' or '.join(forbidden)} (refused when it ran: {exc}; the reference does "
                        f"not exist where learner code runs): {advice}"
                    )
                    return False, (early or late) if check_id == "no_reference" else f"importing the file: {late}", {}
                if missing:
                    return False, f"importing the file {exc.reason()} ({_ONLY})", {}
                if exc.type_name in ("SyntaxError", "IndentationError", "TabError"):
                    return False, f"the file does not import: {exc.reason()}", {}
                if isinstance(exc, NotImplementedError):
                    return False, _reason(exc), {}
                return False, f"importing the file {exc.reason()}", {}
            out = table[check_id](mod, str(learner))
        except (LearnerRaised, LearnerStopped, LearnerMutated, HostError, NotImplementedError) as exc:
            return False, _reason(exc), {}
        except StopIteration:
            return False, "the learner's iterator ended early (StopIteration)", {}
        except Exception as exc:  # the checks' own code tripped over what the file returned
            return False, _reason(exc), {}
    if isinstance(out, dict):
        return True, "", {str(k): float(v) for k, v in out.items()}
    if out is None:
        return True, "", {}
    return False, str(out), {}


def runner(ex: Exercise, path: Path, workdir: Path, report: Report, limits: Limits) -> Callable[[Check], ChildOutcome]:
    """The grader's runner for a Python exercise: loads the checks here (once,
    before any learner code runs), copies the learner's file, and returns a
    function running one check in a fresh child."""
    checks = load(ex.checks_path, f"lowlat_checks_{ex.folder.name}")
    src = workdir / "src"
    src.mkdir(parents=True, exist_ok=True)
    copy = src / ex.filename
    shutil.copyfile(path, copy)

    def run_py(check: Check) -> ChildOutcome:
        passed, reason, info = run_check(checks, check.id, copy, timeout_s=check.timeout_s, limits=limits)
        return ChildOutcome(passed, reason, info)

    return run_py
