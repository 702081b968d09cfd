"""What the checks of every Python exercise share, and the one entry point
that runs them.

An exercise's ``checks.py`` (in its folder) defines ``CHECKS``, a dict of
check id -> ``fn(module, path)``: ``module`` is the learner's file, imported;
``path`` its path.  A check returns None when it passes, else the reason it
fails; it may print ``INFO key=value`` lines (timings: reported, never
graded).  The grader runs one check per process::

    python -m lowlat.grading.pyharness CHECKS_PY LEARNER_FILE CHECK

which prints ``RESULT PASS`` or ``RESULT FAIL reason`` and ends the process
itself (a thread the learner's code leaked cannot keep it alive).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

CheckFn = Callable[[ModuleType, str], "str | None"]


def load(path: str | os.PathLike[str], name: str) -> ModuleType:
    """Imports the file at ``path`` as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses and pickling look their module up here
    spec.loader.exec_module(mod)
    return mod


def where(exc: BaseException, path: str) -> str:
    """``file.py:LINE in function`` of the innermost frame in the learner's file."""
    tb = traceback.extract_tb(exc.__traceback__)
    return next(
        (
            f"{Path(f.filename).name}:{f.lineno} in {f.name}"
            for f in reversed(tb)
            if Path(f.filename).resolve() == Path(path).resolve()
        ),
        "",
    )


# ---- refusing the reference ------------------------------------------------------------


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def imported_modules(source: str) -> set[str]:
    """Every module the source imports, by its full dotted name: ``import a.b``
    and ``from a.b import c`` (as ``a.b`` and ``a.b.c``, since ``c`` may be a
    submodule; ``from a import *`` as ``a.*``), ``importlib.import_module`` and
    ``__import__`` called with a literal name, and attribute chains such as
    ``a.b.c`` on a name bound by ``import a``."""
    tree = ast.parse(source)
    found: set[str] = set()
    aliases: dict[str, str] = {}  # local name -> module, from `import a.b [as x]`
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                found.add(a.name)
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
            if name in ("import_module", "__import__") and node.args:
                target = _literal(node.args[0])
                package = _literal(node.args[1]) if len(node.args) > 1 else None
                for kw in node.keywords:
                    if kw.arg == "name":
                        target = _literal(kw.value)
                    elif kw.arg == "package":
                        package = _literal(kw.value)
                if target and target.startswith(".") and package:
                    target = package + target
                if target:
                    found.add(target)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = _dotted(node)
            if chain is not None:
                head, _, rest = chain.partition(".")
                if head in aliases:
                    found.add(aliases[head] + "." + rest)
    return found


def _is_within(module: str, forbidden: str) -> bool:
    """``module`` is ``forbidden``, one of its submodules, or a star import of
    a package that holds it."""
    if module == forbidden or module.startswith(forbidden + "."):
        return True
    if module.endswith(".*"):
        return forbidden.startswith(module[:-1])
    return False


def refuses_reference(path: str | os.PathLike[str], forbidden: Sequence[str], advice: str) -> str | None:
    """The ``no_reference`` check of every Python exercise: None when the
    learner's file imports none of the ``forbidden`` modules (each with its
    submodules) in any way :func:`imported_modules` sees, else the reason
    ``the file imports A or B: <advice>``."""
    try:
        modules = imported_modules(Path(path).read_text())
    except SyntaxError:
        return None  # loading the file reports it, in every check
    if any(_is_within(m, f) for m in modules for f in forbidden):
        return f"the file imports {' or '.join(forbidden)}: {advice}"
    return None


# ---- the entry point ---------------------------------------------------------------------


def run(checks_path: str, learner_path: str, check: str) -> str | None:
    """Runs one check; None when it passed, else why not."""
    checks = load(checks_path, f"lowlat_checks_{Path(checks_path).parent.name}")
    table: dict[str, CheckFn] = checks.CHECKS
    if check not in table:
        return f"unknown check '{check}'"
    try:
        mod = load(learner_path, f"learner_{Path(learner_path).stem}")
        return table[check](mod, learner_path)
    except NotImplementedError:
        return "not implemented yet (the function raises NotImplementedError)"
    except Exception as exc:  # the learner's code raised: show where, briefly
        at = where(exc, learner_path)
        return f"raised {type(exc).__name__}: {exc}" + (f" ({at})" if at else "")


def main(argv: list[str]) -> None:
    """``argv = [CHECKS_PY, LEARNER_FILE, CHECK]``: runs one check, prints its
    result line, and ends the process (``os._exit``: a non-daemon thread the
    learner's code left running must not keep it alive)."""
    if len(argv) != 3:
        print("usage: python -m lowlat.grading.pyharness CHECKS_PY LEARNER_FILE CHECK", file=sys.stderr)
        sys.stdout.flush()
        os._exit(2)
    problem = run(*argv)
    print("RESULT PASS" if problem is None else f"RESULT FAIL {problem}")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
