"""CONTRIBUTING.md is true: every path it names exists (the backticked ones
in its prose, and every entry of its layout block), every module it names
by dotted path exists, and the lists of modules its layout block gives in
parentheses name files of that folder.  Placeholders (``NN_name``,
``NAME``, ``name``, ``EX``, ``<concept>``) and globs stand for any name."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "CONTRIBUTING.md"
pytestmark = pytest.mark.skipif(
    not DOC.is_file() or not (ROOT / "tools").is_dir(), reason="CONTRIBUTING.md is for the author's checkout"
)
FILE_SUFFIXES = (".py", ".md", ".toml", ".c", ".h", ".ipynb", ".in", ".cfg", ".txt", ".yml", ".yaml")
_PLACEHOLDERS = [
    (re.compile(r"<[^>/]+>"), "*"),
    (re.compile(r"\bNN(?=_)"), "[0-9][0-9]"),
    (re.compile(r"(?<=_)(?:name|chapter|ch)\b"), "*"),
    (re.compile(r"\b(?:NAME|EX|name)\b"), "*"),
]


def _text() -> str:
    return DOC.read_text(encoding="utf-8")


def _as_glob(path: str) -> str:
    for pattern, repl in _PLACEHOLDERS:
        path = pattern.sub(repl, path)
    return path


@functools.cache
def _names() -> frozenset[str]:
    """The names of the files in the tree (no .git, build or cache folders)."""
    out = set()
    for _, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("build", "__pycache__", "node_modules")]
        out.update(files)
    return frozenset(out)


def _exists(path: str) -> bool:
    """``path`` (relative to the root, may hold placeholders or globs) names
    something in the tree; a bare file name may be anywhere in it."""
    pattern = _as_glob(path.rstrip("/"))
    if "/" not in path:
        return any(fnmatch.fnmatchcase(n, pattern) for n in _names())
    return any(ROOT.glob(pattern)) if any(c in pattern for c in "*?[") else (ROOT / pattern).exists()


def prose_paths(text: str) -> list[str]:
    """The backticked paths outside fenced blocks."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    toks = set(re.findall(r"`([^`\n]+)`", prose))
    return sorted(
        t
        for t in toks
        if " " not in t and not t.startswith("-") and ("/" in t or (t.endswith(FILE_SUFFIXES) and t[0] != "."))
    )


def dotted_modules(text: str) -> list[str]:
    return sorted(set(re.findall(r"`(lowlat(?:\.\w+)+)", text)))


def layout(text: str) -> list[tuple[str, str]]:
    """(path, description) of each entry of the layout block."""
    m = re.search(r"## The layout.*?```\n(.*?)```", text, re.S)
    assert m, "CONTRIBUTING.md has no layout block (## The layout ... ```)"
    entries: list[tuple[str, str]] = []
    parent = ""
    for line in m.group(1).splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent > 4:  # a description's continuation
            if entries and line.strip():
                entries[-1] = (entries[-1][0], entries[-1][1] + " " + line.strip())
            continue
        name, _, desc = line.strip().partition(" ")
        if indent == 0:
            parent = name if name.endswith("/") else ""
            entries.append((name, desc.strip()))
        else:
            entries.append((parent + name, desc.strip()))
    return entries


def test_every_backticked_path_exists() -> None:
    missing = [p for p in prose_paths(_text()) if not _exists(p)]
    assert not missing, f"CONTRIBUTING.md names paths that do not exist: {missing}"


def test_every_dotted_module_exists() -> None:
    missing = []
    for dotted in dotted_modules(_text()):
        parts, here = dotted.split("."), ROOT
        for part in parts:
            if (here / part).is_dir():
                here = here / part
            elif (here / f"{part}.py").is_file() or (part == "_core" and any(here.glob("_build.py"))):
                break  # the module; what follows is a name in it (_core: the compiled extension)
            else:
                missing.append(dotted)
                break
    assert not missing, f"CONTRIBUTING.md names modules that do not exist: {missing}"


def test_the_layout_block_matches_the_tree() -> None:
    entries = layout(_text())
    assert len(entries) > 10
    missing = [path for path, _ in entries if not _exists(path)]
    assert not missing, f"CONTRIBUTING.md's layout names paths that do not exist: {missing}"
    wrong = []
    for path, desc in entries:
        folder = ROOT / path
        if not path.endswith("/") or not folder.is_dir():
            continue
        for group in re.findall(r"\(([^()]*)\)", desc):
            items = [i.strip() for i in group.split(",")]
            if not all(re.fullmatch(r"[a-z_][a-z0-9_]*", i) for i in items):
                continue  # prose in parentheses, not a list of modules
            for item in items:
                candidates = [f"{item}.py", f"{item}.c", f"bench_{item}.c", item]
                if not any((folder / c).exists() for c in candidates):
                    wrong.append(f"{path}: {item}")
    assert not wrong, f"CONTRIBUTING.md's layout lists modules that are not in their folder: {wrong}"


def test_the_checks_see_a_wrong_path() -> None:
    assert not _exists("lowlat/nowhere.py") and not _exists("chapters/NN_name/missing.ipynb")
    assert _exists("chapters/NN_name/NN_name.ipynb") and _exists("tests/test_<concept>.py")
    assert "lowlat/x.py" in prose_paths("see `lowlat/x.py` and `pip install -e .`")
    assert layout("## The layout\n\n```\na/   x\n  b.py   y (p, q)\n```\n") == [("a/", "x"), ("a/b.py", "y (p, q)")]
