"""Authoring: ``exercises/`` is generated from ``solutions/``, never edited
by hand.

In a solution file, the parts the learner must write are marked:

C::

    /* BEGIN SOLUTION */
    ...the answer...
    /* END SOLUTION */
    /* BEGIN STUB
    return NULL;          <- what the learner gets instead (optional)
    END STUB */

Python::

    # BEGIN SOLUTION
    ...the answer...
    # END SOLUTION
    # BEGIN STUB           <- optional; without it the region becomes
    # return []               raise NotImplementedError(...)
    # END STUB

The generator drops each solution region, puts the stub (uncommented) in its
place, and copies every other file (notebooks, READMEs) unchanged.
``python -m tools exercises`` writes ``exercises/``; ``--check`` only
compares and fails when it is out of date.  It runs only where
``solutions/`` exists, never deletes a file, and never overwrites a file
someone edited (``--force`` does).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_SUFFIXES = {".c", ".h", ".py"}
SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints"}

_C = {
    "begin": re.compile(r"^\s*/\* BEGIN SOLUTION \*/\s*$"),
    "end": re.compile(r"^\s*/\* END SOLUTION \*/\s*$"),
    "stub_begin": re.compile(r"^\s*/\* BEGIN STUB\s*$"),
    "stub_end": re.compile(r"^\s*END STUB \*/\s*$"),
}
_PY = {
    "begin": re.compile(r"^\s*# BEGIN SOLUTION\s*$"),
    "end": re.compile(r"^\s*# END SOLUTION\s*$"),
    "stub_begin": re.compile(r"^\s*# BEGIN STUB\s*$"),
    "stub_end": re.compile(r"^\s*# END STUB\s*$"),
}


class MarkerError(ValueError):
    pass


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def make_stub(text: str, suffix: str, name: str = "<file>") -> str:
    """The learner's version of one solution file."""
    m = _C if suffix in (".c", ".h") else _PY
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not m["begin"].match(line):
            if m["end"].match(line) or m["stub_begin"].match(line):
                raise MarkerError(f"{name}:{i + 1}: marker without BEGIN SOLUTION")
            out.append(line)
            i += 1
            continue
        indent, start = _indent(line), i
        i += 1
        while i < len(lines) and not m["end"].match(lines[i]):
            if m["begin"].match(lines[i]):
                raise MarkerError(f"{name}:{i + 1}: nested BEGIN SOLUTION (region opened at line {start + 1})")
            i += 1
        if i == len(lines):
            raise MarkerError(f"{name}:{start + 1}: BEGIN SOLUTION without END SOLUTION")
        i += 1
        stub: list[str] | None = None
        if i < len(lines) and m["stub_begin"].match(lines[i]):
            j = i + 1
            stub = []
            while j < len(lines) and not m["stub_end"].match(lines[j]):
                s = lines[j]
                if m is _PY:
                    s = re.sub(r"^(\s*)# ?", r"\1", s, count=1)
                stub.append(s)
                j += 1
            if j == len(lines):
                raise MarkerError(f"{name}:{i + 1}: BEGIN STUB without END STUB")
            i = j + 1
        if m is _C:
            out.append(f"{indent}/* YOUR CODE HERE (see README.md) */\n")
            out.extend(stub or [])
        else:
            out.append(f"{indent}# YOUR CODE HERE (see README.md)\n")
            out.extend(stub if stub is not None else [f'{indent}raise NotImplementedError("see README.md")\n'])
    return "".join(out)


def expected_exercises(solutions: Path) -> dict[Path, bytes]:
    """Relative path -> bytes of every file exercises/ should contain."""
    files: dict[Path, bytes] = {}
    for p in sorted(solutions.rglob("*")):
        if p.is_dir() or any(part in SKIP_DIRS for part in p.parts):
            continue
        rel = p.relative_to(solutions)
        if p.suffix in SOURCE_SUFFIXES:
            files[rel] = make_stub(p.read_text(), p.suffix, str(p.relative_to(solutions.parent))).encode()
        else:
            files[rel] = p.read_bytes()
    return files


class AuthoringError(RuntimeError):
    """The generator refused to run (no solutions/, or learner work in the way)."""


def _solutions(root: Path) -> Path:
    sol = root / "solutions"
    if not sol.is_dir():
        raise AuthoringError(
            f"{sol} not found: exercises/ is generated from solutions/, which only the author's checkout has "
            "(a student release has none). Nothing was changed."
        )
    return sol


def _generated_files(root: Path) -> dict[Path, bytes]:
    """Relative path -> bytes of every file under exercises/ (caches skipped)."""
    ex = root / "exercises"
    if not ex.exists():
        return {}
    return {
        p.relative_to(ex): p.read_bytes()
        for p in ex.rglob("*")
        if p.is_file() and not any(part in SKIP_DIRS for part in p.parts)
    }


def _committed(root: Path, rel: str) -> bytes | None:
    """The file's bytes in the last commit, or None (not committed, no git)."""
    try:
        res = subprocess.run(["git", "show", f"HEAD:{rel}"], cwd=root, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout if res.returncode == 0 else None


def _committed_stub(root: Path, rel: Path) -> bytes | None:
    """What the committed solution generated for ``exercises/rel``."""
    src = _committed(root, f"solutions/{rel.as_posix()}")
    if src is None or rel.suffix not in SOURCE_SUFFIXES:
        return src
    try:
        return make_stub(src.decode(), rel.suffix, f"solutions/{rel}").encode()
    except (MarkerError, UnicodeDecodeError):
        return None


def check(root: Path = ROOT) -> list[str]:
    """Differences between exercises/ and what solutions/ generates (empty
    when up to date)."""
    want = expected_exercises(_solutions(root))
    have = _generated_files(root)
    problems = [f"exercises/{rel} is missing" for rel in sorted(set(want) - set(have))]
    problems += [f"exercises/{rel} has no source in solutions/" for rel in sorted(set(have) - set(want))]
    problems += [
        f"exercises/{rel} differs from what solutions/{rel} generates"
        for rel in sorted(set(want) & set(have))
        if want[rel] != have[rel]
    ]
    return problems


def edited_by_hand(root: Path = ROOT) -> list[Path]:
    """Files of exercises/ that differ from what would be written AND from
    what the generator wrote last (the committed stub): someone's work, which
    :func:`write` leaves alone unless forced."""
    want = expected_exercises(_solutions(root))
    have = _generated_files(root)
    out = []
    for rel in sorted(set(want) & set(have)):
        if have[rel] == want[rel]:
            continue
        previous = {_committed(root, f"exercises/{rel.as_posix()}"), _committed_stub(root, rel)} - {None}
        if have[rel] not in previous:
            out.append(rel)
    return out


def write(root: Path = ROOT, *, force: bool = False) -> list[Path]:
    """Regenerates exercises/ from solutions/; returns the files written.

    Never deletes a file, and never overwrites one that differs both from
    what it is about to write and from what the generator wrote last (a
    learner's finished exercise, an author's experiment) unless ``force``:
    it raises :class:`AuthoringError` naming them instead, having changed
    nothing.  Files in exercises/ with no source in solutions/ are left in
    place (``check`` reports them)."""
    want = expected_exercises(_solutions(root))
    if not force:
        mine = edited_by_hand(root)
        if mine:
            names = ", ".join(f"exercises/{rel}" for rel in mine)
            raise AuthoringError(
                f"{names}: changed since the generator wrote it; nothing was written. Save that work elsewhere, "
                "or regenerate anyway with --force (it overwrites those files)."
            )
    ex = root / "exercises"
    written = []
    for rel, data in want.items():
        dst = ex / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if not dst.exists() or dst.read_bytes() != data:
            dst.write_bytes(data)
            written.append(dst)
    return written
