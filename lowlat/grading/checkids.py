"""The check ids a checks file defines, read from its source without running
it, so that discovery can hold them against ``exercise.toml`` (the one list
of checks a learner sees: its ids, texts, timeouts).

C: the table ``GRADE_CHECKS({"id", fn}, ...)`` (``lowlat/grading/harness/
grade.h``).  Python: the module-level dict literal ``CHECKS = {"id": fn,
...}`` (``lowlat.grading.pyharness``).  Either must be written out literally,
every id a string constant, so that it can be read here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

_C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_C_TABLE = re.compile(r"\bGRADE_CHECKS\s*\(")
_C_ENTRY = re.compile(r"\{\s*\"([^\"\\]*)\"\s*,\s*[A-Za-z_]\w*\s*\}")


class CheckIdError(ValueError):
    """The checks file's table of ids cannot be read; the message says why."""


def _c_ids(text: str, name: str) -> list[str]:
    code = _C_COMMENT.sub(" ", text)
    tables = list(_C_TABLE.finditer(code))
    if len(tables) != 1:
        raise CheckIdError(f"{name} must have exactly one GRADE_CHECKS(...) table, found {len(tables)}")
    start = tables[0].end()
    depth, end = 1, start
    while end < len(code) and depth:
        depth += {"(": 1, ")": -1}.get(code[end], 0)
        end += 1
    if depth:
        raise CheckIdError(f"{name}: GRADE_CHECKS( is never closed")
    body = code[start : end - 1]
    ids = _C_ENTRY.findall(body)
    if len(ids) != body.count("{"):
        raise CheckIdError(f'{name}: every GRADE_CHECKS entry must read {{"id", function}}')
    return ids


def _py_ids(text: str, name: str) -> list[str]:
    try:
        tree = ast.parse(text, filename=name)
    except SyntaxError as exc:
        raise CheckIdError(f"{name}: cannot be parsed ({exc.msg}, line {exc.lineno})") from None
    found: list[ast.expr] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CHECKS" for t in node.targets):
            found.append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "CHECKS":
            found.extend([node.value] if node.value is not None else [])
    if len(found) != 1:
        raise CheckIdError(f"{name} must assign CHECKS = {{...}} exactly once at module level, found {len(found)}")
    table = found[0]
    if not isinstance(table, ast.Dict):
        raise CheckIdError(f'{name}: CHECKS must be a dict literal {{"id": function, ...}}')
    ids = []
    for key in table.keys:
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise CheckIdError(f"{name}: every key of CHECKS must be a string literal (the check's id)")
        ids.append(key.value)
    return ids


def defined_ids(path: Path, kind: str) -> list[str]:
    """The check ids the checks file at ``path`` defines, in order.  ``kind``
    is ``"c"`` or ``"python"``.  Raises :class:`CheckIdError` when its table
    cannot be read, or names an id twice."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckIdError(f"cannot read {path}: {exc}") from None
    ids = _c_ids(text, Path(path).name) if kind == "c" else _py_ids(text, Path(path).name)
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise CheckIdError(f"{Path(path).name} defines the check id(s) {', '.join(twice)} more than once")
    return ids


#: Checks the grader runs itself, by kind of exercise: exercise.toml lists
#: them like any other, the checks file does not define them.  "ordering" is
#: the memory-ordering lint on a C file's source (lowlat.grading.ordering).
ENGINE_CHECKS: dict[str, frozenset[str]] = {"c": frozenset({"ordering"}), "python": frozenset()}


def mismatch(
    declared: list[str], has_timing: bool, defined: list[str], checks_file: str, engine: frozenset[str] = frozenset()
) -> str | None:
    """Why the ids of ``exercise.toml`` (``declared``, plus ``timing`` when it
    has a ``[timing]`` table) and those of the checks file disagree, or None.
    ``engine``: ids the grader runs itself (:data:`ENGINE_CHECKS`), which the
    checks file must not define."""
    declared = [i for i in declared if i not in engine]
    want = set(declared) | ({"timing"} if has_timing else set())
    have = set(defined)
    problems = []
    missing = list(dict.fromkeys(i for i in [*declared, "timing"] if i in want - have))
    if missing:
        problems.append(f"{checks_file} defines no check {', '.join(repr(i) for i in missing)}")
    extra = [i for i in defined if i in have - want]
    if extra:
        what = ", ".join(repr(i) for i in extra)
        problems.append(
            f"{checks_file} defines {what}, which exercise.toml does not list (add a [[check]]"
            + (" or a [timing] table" if "timing" in extra else "")
            + ", or remove it)"
        )
    return "; ".join(problems) or None
