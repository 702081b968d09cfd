"""``python -m tools new-exercise CHAPTER NAME --lang c|py``: a new exercise
folder, ``solutions/CHAPTER/NAME/``, complete and gradable at once.

It writes the task (``README.md``: task, time, expected effect), the
learner's file with one solution region and its stub, for C the API header,
the checks (one graded property, plus an AddressSanitizer run for C), the
``exercise.toml`` (the one list of check ids, with title and time for the
index tables) and the grading notebook (unexecuted: ``python -m tools sync``
executes it).  The grader discovers the folder at once; ``python -m tools
exercises`` puts it in the tables and generates ``exercises/``; the stub it
generates fails the checks and the solution passes them.  Then replace the
placeholder task, file and checks with the real ones.
"""

from __future__ import annotations

import json
import keyword
import re
import sys
from pathlib import Path

from lowlat.grading.spec import discover
from tools import notebooks

CHAPTER = re.compile(r"^[0-9]{2}_[a-z][a-z0-9_]*$")
NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
LANGS = {"c": "c", "py": "python"}


class ScaffoldError(ValueError):
    """The call cannot make the folder; nothing was written."""


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a TOML basic string


def _files_c(name: str, title: str, minutes: int) -> dict[str, str]:
    guard = f"{name.upper()}_H"
    return {
        f"{name}.h": (
            f"/* The API of exercise {name}: included by {name}.c and by the checks. */\n"
            f"#ifndef {guard}\n#define {guard}\n\n"
            f"/* Twice x. (Replace with the exercise's API, units and ownership in a comment.) */\n"
            f"long {name}_twice(long x);\n\n#endif\n"
        ),
        f"{name}.c": (
            f'#include "{name}.h"\n\nlong {name}_twice(long x)\n{{\n'
            "    /* BEGIN SOLUTION */\n    return 2 * x;\n    /* END SOLUTION */\n"
            "    /* BEGIN STUB\n    (void)x;\n    return 0;\n    END STUB */\n}\n"
        ),
        "checks.c": (
            f'#include "{name}.h"\n#include "grade.h"\n\n'
            "static int check_twice(const char *arg)\n{\n    (void)arg;\n"
            f"    long got = GRADE_CALL({name}_twice, 21);\n"
            f'    return got == 42 ? grade_pass() : grade_fail("{name}_twice(21) returned %ld, not 42", got);\n}}\n\n'
            "static int check_all(const char *arg)\n{\n    return check_twice(arg);\n}\n\n"
            'GRADE_CHECKS({"twice", check_twice}, {"all", check_all})\n'
        ),
        "exercise.toml": _toml(name, "c", f"{name}.c", "checks.c", title, minutes)
        + '\n[[check]]\nid = "all"\ntext = "AddressSanitizer/UBSan: no memory error in the above"\n'
        'timeout = 60\nsanitizer = "address"\n',
    }


def _files_py(name: str, title: str, minutes: int) -> dict[str, str]:
    return {
        f"{name}.py": (
            f'"""Exercise {name}: the file the learner edits (the task is in README.md)."""\n\n\n'
            "def twice(x: int) -> int:\n"
            '    """Twice ``x``. (Replace with the exercise\'s functions.)"""\n'
            "    # BEGIN SOLUTION\n    return 2 * x\n    # END SOLUTION\n"
        ),
        "checks.py": (
            f'"""Checks of exercise {name}: they run in the grader\'s process; the learner\'s\n'
            'module runs in a child (see ``lowlat.grading.pyharness``)."""\n\n'
            "from __future__ import annotations\n\nfrom typing import Any\n\n"
            "from lowlat.grading.pyharness import no_reference\n\n"
            'FORBIDDEN = ["lowlat"]\nADVICE = "write it yourself"\n\n\n'
            "def check_no_reference(mod: Any, path: str) -> str | None:\n"
            "    return no_reference(mod, path, FORBIDDEN, ADVICE)\n\n\n"
            "def check_twice(mod: Any, path: str) -> str | None:\n"
            "    got = mod.twice(21)\n"
            '    return None if got == 42 else f"twice(21) returned {got!r}, not 42"\n\n\n'
            'CHECKS = {"no_reference": check_no_reference, "twice": check_twice}\n'
        ),
        "exercise.toml": _toml(name, "python", f"{name}.py", "checks.py", title, minutes, no_reference=True),
    }


def _toml(name: str, kind: str, file: str, checks: str, title: str, minutes: int, no_reference: bool = False) -> str:
    head = (
        "# The grader discovers this exercise by this file (see lowlat/grading/spec.py); the check ids\n"
        f"# are declared here and must match the table in {checks}.\n"
        f"name = {_toml_str(name)}\nkind = {_toml_str(kind)}\nfile = {_toml_str(file)}\n"
        f"checks_file = {_toml_str(checks)}\ntitle = {_toml_str(title)}\nminutes = {minutes}\n"
    )
    if no_reference:
        head += '\n[[check]]\nid = "no_reference"\ntext = "written here, not imported from lowlat"\n'
    return head + '\n[[check]]\nid = "twice"\ntext = "twice(21) is 42"\n'


def _readme(name: str, chapter: str, lang: str, file: str, title: str, minutes: int, n_checks: int) -> str:
    language = "C" if lang == "c" else "Python"
    return (
        f"# Exercise {chapter[:2]} — {title[0].upper() + title[1:]} ({language})\n\n"
        f"**Time:** about {minutes} minutes. **The one file to edit:** `{file}`.\n"
        f"**Check it:** `python -m lowlat grade {name} {file}` from this folder (or run `{name}.ipynb`).\n\n"
        "## The task\nTODO: what to write, the rules it must keep, and why it matters for latency.\n\n"
        f"## Expected effect\n`{name}: {n_checks}/{n_checks} checks passed`; TODO: what changes in the "
        "learner's numbers, and how they see it.\n"
    )


def _notebook(name: str, file: str) -> str:
    nb = {
        "cells": [
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": (
                    f"# Exercise {name}: grade your file\n\nEdit `{file}` in this folder (the task is in "
                    "`README.md`), then run this notebook. The next cell prints one line per check and a "
                    "verdict, and raises when any check fails."
                ),
            },
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {"tags": ["nbval-ignore-output"]},
                "outputs": [],
                "source": (
                    f'from lowlat.grading import grade\n\ngrade("{name}", "{file}").require()  '
                    "# raises when a check fails"
                ),
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(notebooks.normalize(nb), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def new_exercise(root: Path, chapter: str, name: str, lang: str, *, title: str = "", minutes: int = 30) -> list[Path]:
    """Writes ``solutions/CHAPTER/NAME/``; returns the files written.  Every
    argument is checked before anything is written."""
    if not isinstance(chapter, str) or not CHAPTER.match(chapter):
        raise ScaffoldError(f"CHAPTER must read NN_name (two digits, lower case), e.g. 03_spsc; got {chapter!r}")
    if not isinstance(name, str) or not NAME.match(name) or keyword.iskeyword(name):
        raise ScaffoldError(
            f"NAME must be a lower-case identifier of at most 32 characters (letters, digits, _), got {name!r}"
        )
    if name in sys.stdlib_module_names or name in ("checks", "grade", "lowlat", "numpy"):
        raise ScaffoldError(f"NAME {name!r} would shadow a module of the same name; choose another")
    if lang not in LANGS:
        raise ScaffoldError(f"--lang must be one of {', '.join(LANGS)}, got {lang!r}")
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not 0 < minutes <= 600:
        raise ScaffoldError(f"--minutes must be a whole number in 1..600, got {minutes!r}")
    title = " ".join(str(title).split()) or f"TODO: one line on what the learner writes in {name}"
    if "|" in title:
        raise ScaffoldError("--title cannot contain '|' (it goes into markdown tables)")
    solutions = root / "solutions"
    if not solutions.is_dir():
        raise ScaffoldError(f"{solutions} not found: new exercises are made in the author's checkout")
    folder = solutions / chapter / name
    if folder.exists():
        raise ScaffoldError(f"{folder} already exists")
    taken = discover(root)
    if name in taken:
        raise ScaffoldError(f"the name {name!r} is taken by {taken[name].folder / 'exercise.toml'}")
    files = _files_c(name, title, minutes) if lang == "c" else _files_py(name, title, minutes)
    file = f"{name}.{lang}"
    n_checks = files["exercise.toml"].count("[[check]]")
    files["README.md"] = _readme(name, chapter, lang, file, title, minutes, n_checks)
    files[f"{name}.ipynb"] = _notebook(name, file)
    folder.mkdir(parents=True)
    written = []
    for rel, text in files.items():
        (folder / rel).write_text(text, encoding="utf-8")
        written.append(folder / rel)
    return written
