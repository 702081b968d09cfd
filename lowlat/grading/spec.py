"""Exercises are folders: each holds an ``exercise.toml`` that says what the
learner edits and how it is checked.  There is no registry; the grader finds
the folders.

Where: ``<root>/solutions/*/*/exercise.toml`` when ``solutions/`` exists (the
author's checkout: checks there cannot have been edited by a learner), else
``<root>/exercises/*/*/exercise.toml`` (a student release has no solutions/).

The spec::

    name = "mpmc"              # what `python -m lowlat grade NAME FILE` calls it
    kind = "c"                 # "c" or "python"
    file = "mpmc.c"            # the one file the learner edits
    checks_file = "checks.c"   # the checks, in the same folder
    cflags = []                # C: extra compiler flags for the checks' build
    core_sources = []          # C: files of csrc/ compiled in with the checks
    allow_symbols = []         # C: functions the learner's file may call beyond the
                               #    grader's allowlist (see lowlat.grading.objcheck)
    title = "a bounded lock-free MPMC queue"   # the index tables: what the learner writes
    minutes = 90               # the index tables: the time it takes (a whole number > 0)
    order = 2                  # optional: its place in the chapter (default 0, then by name)
    note = "do it after `ring`"   # optional: a few words after the file in exercises/README.md

    [[check]]                  # one per graded line, in order
    id = "pc_2x2"              # passed to the checks
    text = "..."               # what the learner reads (stored in the notebook)
    timeout = 60               # seconds (default 30)
    sanitizer = "thread"       # C: "thread" or "address" (default: none)
    arg = "20000"              # passed after the id (default "")

    [timing]                   # optional, reported and never graded
    timeout = 120
    arg = ""
    text = "your queue: {yours_M_items_per_s:.1f} M items/s"   # over the INFO key=value lines

The check ids are declared here, once: the checks file's table
(``GRADE_CHECKS`` in C, ``CHECKS`` in Python) must define exactly these ids
(and ``timing`` exactly when there is a ``[timing]``), which discovery checks
(:mod:`lowlat.grading.checkids`).  The chapter is the folder's parent
(``NN_chapter``).  ``title`` and ``minutes`` are optional for grading but
the author tools' index tables refuse an exercise without them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

from lowlat.core import toolchain
from lowlat.grading import checkids

SPEC = "exercise.toml"
KINDS = ("c", "python")
_TOP_KEYS = {
    *("name", "kind", "file", "checks_file", "cflags", "core_sources", "allow_symbols", "check", "timing"),
    *("title", "minutes", "order", "note"),
}
MAX_MINUTES = 600  # an exercise longer than a working day is a mistake in the spec
_CHECK_KEYS = {"id", "text", "timeout", "sanitizer", "arg"}
_TIMING_KEYS = {"timeout", "arg", "text"}


class SpecError(ValueError):
    """An exercise.toml that cannot be used; the message names the file."""


@dataclass(frozen=True)
class Check:
    """One graded property: ``id`` is passed to the checks, ``text`` is what
    the learner reads.  ``sanitizer`` runs it in a sanitized build."""

    id: str
    text: str
    timeout_s: float = 30.0
    sanitizer: str | None = None  # None, "thread" or "address"
    arg: str = ""


@dataclass(frozen=True)
class Exercise:
    name: str
    kind: str  # "c" or "python"
    filename: str  # the file the learner edits
    checks: tuple[Check, ...]
    folder: Path  # where exercise.toml, the checks and (C) the API header are
    checks_file: str = ""  # in folder
    timing: Check | None = None
    timing_text: str | None = None  # a format string over the timing run's INFO values
    cflags: tuple[str, ...] = ()  # extra compiler flags for the checks' build
    core_sources: tuple[str, ...] = ()  # files of csrc/ built in with the checks
    allow_symbols: tuple[str, ...] = ()  # C: more functions the learner's file may call
    title: str = ""  # what the learner writes, for the index tables ("" when the spec has none)
    minutes: int | None = None  # the time it takes, for the index tables
    order: int = 0  # its place in the chapter's tables (then by name)
    note: str = ""  # a few words after the file in exercises/README.md

    @property
    def chapter(self) -> str:
        """The chapter's folder name, e.g. ``03_spsc``."""
        return self.folder.parent.name

    @property
    def language(self) -> str:
        """``C`` or ``Python``, as the tables print it."""
        return "C" if self.kind == "c" else "Python"

    @property
    def checks_path(self) -> Path:
        return self.folder / self.checks_file

    def timing_line(self, info: dict[str, float]) -> str:
        """The timing text filled in with the timing run's numbers."""
        if self.timing_text is None:
            return f"{self.name}: no timing for this exercise"
        try:
            return self.timing_text.format_map(info)
        except KeyError as exc:
            return f"{self.name}: no timing: the timing run did not report {exc.args[0]}"


def _fail(path: Path, why: str) -> SpecError:
    return SpecError(f"{path}: {why}")


def _str(path: Path, table: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or (default is None and not value):
        what = "a string" if default is not None else "a non-empty string"
        raise _fail(path, f"{where}{key} must be {what}, got {value!r}")
    return value


def _strings(path: Path, table: dict[str, Any], key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, f"{key} must be a list of strings, got {value!r}")
    return tuple(value)


def _check(path: Path, table: Any, where: str, *, need_text: bool = True, default_id: str = "") -> Check:
    if not isinstance(table, dict):
        raise _fail(path, f"{where} must be a table")
    allowed = _CHECK_KEYS if need_text else _TIMING_KEYS
    unknown = set(table) - allowed
    if unknown:
        raise _fail(path, f"{where}: unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(allowed))})")
    timeout = table.get("timeout", 30)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise _fail(path, f"{where}: timeout must be a positive number of seconds, got {timeout!r}")
    sanitizer = table.get("sanitizer")
    if sanitizer is not None and sanitizer not in toolchain.SANITIZERS:
        raise _fail(path, f"{where}: sanitizer must be one of {', '.join(toolchain.SANITIZERS)}, got {sanitizer!r}")
    return Check(
        id=_str(path, table, "id", f"{where}: ") if need_text else default_id,
        text=_str(path, table, "text", f"{where}: "),
        timeout_s=float(timeout),
        sanitizer=sanitizer,
        arg=_str(path, table, "arg", f"{where}: ", default=""),
    )


def load_spec(path: Path) -> Exercise:
    """The exercise described by the ``exercise.toml`` at ``path``."""
    path = Path(path).resolve()
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise _fail(path, f"cannot read the spec: {exc}") from exc
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise _fail(path, f"unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(_TOP_KEYS))})")
    kind = data.get("kind")
    if kind not in KINDS:
        raise _fail(path, f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    folder = path.parent
    filename = _str(path, data, "file", "")
    checks_file = _str(path, data, "checks_file", "")
    if Path(filename).name != filename or Path(checks_file).name != checks_file:
        raise _fail(path, "file and checks_file are names of files in the exercise's folder, not paths")
    if not (folder / checks_file).is_file():
        raise _fail(path, f"the checks file {checks_file} is not in {folder}")
    tables = data.get("check")
    if not isinstance(tables, list) or not tables:
        raise _fail(path, "no [[check]]: an exercise needs at least one check")
    checks = tuple(_check(path, t, f"check {i + 1}") for i, t in enumerate(tables))
    timing = data.get("timing")
    timing_check = _check(path, timing, "[timing]", need_text=False, default_id="timing") if timing else None
    if timing_check is not None and timing_check.sanitizer is not None:
        raise _fail(path, "[timing] runs unsanitized")
    ids = [c.id for c in checks]
    try:
        why = checkids.mismatch(
            ids,
            timing_check is not None,
            checkids.defined_ids(folder / checks_file, kind),
            checks_file,
            checkids.ENGINE_CHECKS.get(kind, frozenset()),
        )
    except checkids.CheckIdError as exc:
        raise _fail(path, str(exc)) from None
    if why:
        raise _fail(path, f"the check ids disagree: {why}")
    minutes = data.get("minutes")
    if minutes is not None and (
        isinstance(minutes, bool) or not isinstance(minutes, int) or not 0 < minutes <= MAX_MINUTES
    ):
        raise _fail(path, f"minutes must be a whole number of minutes in 1..{MAX_MINUTES}, got {minutes!r}")
    order = data.get("order", 0)
    if isinstance(order, bool) or not isinstance(order, int) or abs(order) > 1000:
        raise _fail(path, f"order must be a whole number in -1000..1000, got {order!r}")
    return Exercise(
        name=_str(path, data, "name", ""),
        kind=kind,
        filename=filename,
        checks=checks,
        folder=folder,
        checks_file=checks_file,
        timing=timing_check,
        timing_text=timing_check.text if timing_check else None,
        cflags=_strings(path, data, "cflags"),
        core_sources=_strings(path, data, "core_sources"),
        allow_symbols=_strings(path, data, "allow_symbols"),
        title=_str(path, data, "title", "", default="").strip(),
        minutes=minutes,
        order=order,
        note=_str(path, data, "note", "", default="").strip(),
    )


def default_root() -> Path:
    """The course repository: the one this package is installed from, else
    the nearest folder at or above the working directory that has
    ``solutions/`` or ``exercises/``."""
    if (toolchain.ROOT / "solutions").is_dir() or (toolchain.ROOT / "exercises").is_dir():
        return toolchain.ROOT
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / "solutions").is_dir() or (d / "exercises").is_dir():
            return d
    return toolchain.ROOT


def exercise_folders(root: Path | None = None) -> list[Path]:
    """The folders holding an exercise.toml: under solutions/ when it exists,
    else under exercises/."""
    root = Path(root) if root is not None else default_root()
    base = root / "solutions" if (root / "solutions").is_dir() else root / "exercises"
    return sorted(p.parent for p in base.glob(f"*/*/{SPEC}"))


def discover(root: Path | None = None) -> dict[str, Exercise]:
    """Every exercise under ``root`` (default: :func:`default_root`), by name."""
    found: dict[str, Exercise] = {}
    for folder in exercise_folders(root):
        ex = load_spec(folder / SPEC)
        if ex.name in found:
            raise _fail(folder / SPEC, f"the name {ex.name!r} is taken by {found[ex.name].folder / SPEC}")
        found[ex.name] = ex
    return dict(sorted(found.items()))
