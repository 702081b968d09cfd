"""The early, static half of the ``no_reference`` check: which modules a
learner's Python file imports, read from its source.  (The child, where the
file runs, has no ``lowlat`` at all: an import this cannot see fails there.)
"""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from pathlib import Path


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
    ``a.b.c`` on a name bound by ``import a``.  (An import spelled at run time,
    ``import_module("lowlat." + name)``, fails in the child, where lowlat does not exist.)"""
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


def is_within(module: str, forbidden: str) -> bool:
    """``module`` is ``forbidden``, one of its submodules, or a star import of
    a package that holds it."""
    if module == forbidden or module.startswith(forbidden + "."):
        return True
    if module.endswith(".*"):
        return forbidden.startswith(module[:-1])
    return False


def refuses_reference(path: str | os.PathLike[str], forbidden: Sequence[str], advice: str) -> str | None:
    """The early, static half of the ``no_reference`` check: None when the
    learner's file imports none of the ``forbidden`` modules (each with its
    submodules) in any way :func:`imported_modules` sees, else the reason
    ``the file imports A or B: <advice>``.  The imports this cannot see
    fail when they run: the modules do not exist in the child."""
    try:
        modules = imported_modules(Path(path).read_text())
    except SyntaxError:
        return None  # loading the file reports it, in every check
    if any(is_within(m, f) for m in modules for f in forbidden):
        return f"the file imports {' or '.join(forbidden)}: {advice}"
    return None
