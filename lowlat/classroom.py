"""For instructors: a student release of the course, and a class report
from graded submissions.

``python -m lowlat release DIR`` copies the course without ``solutions/``
(nor the author-side tests and CI) into DIR, ready to hand out.
``python -m lowlat class-report REPORT.xml ...`` turns one JUnit XML report
per student (``pytest --nbval exercises/ --junitxml=reports/NAME.xml``) into
a table of students x exercises.
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Left out of a student release: the answers, and what only authors run.
EXCLUDED_TOP = {"solutions", "tests", ".ci", ".git"}


def _tracked_files(root: Path) -> list[Path]:
    """Files under version control (or, outside a git checkout, every file
    except build products)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, text=True).stdout
        return [root / p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        skip = {"__pycache__", "build", ".ipynb_checkpoints", ".pytest_cache", ".hypothesis"}
        return [p for p in root.rglob("*") if p.is_file() and not skip & set(p.parts) and p.suffix not in (".so", ".o")]


def release(dest: str | Path, root: Path = ROOT) -> list[Path]:
    """Writes a student release of the course into ``dest`` (which must not
    exist yet); returns the files written."""
    out = Path(dest)
    if out.exists():
        raise FileExistsError(f"{out} exists; give a new folder for the release")
    written = []
    for src in _tracked_files(root):
        rel = src.relative_to(root)
        if rel.parts[0] in EXCLUDED_TOP:
            continue
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        written.append(dst)
    return written


@dataclass
class ClassReport:
    exercises: list[str] = field(default_factory=list)
    students: dict[str, dict[str, bool]] = field(default_factory=dict)

    def table(self) -> str:
        w = max([len("student")] + [len(s) for s in self.students])
        head = f"{'student':<{w}}  " + "  ".join(f"{e:>{max(len(e), 4)}}" for e in self.exercises) + "  passed"
        lines = [head, "-" * len(head)]
        for student, res in sorted(self.students.items()):
            cells = "  ".join(f"{('PASS' if res.get(e) else ('FAIL' if e in res else '-')):>{max(len(e), 4)}}"
                              for e in self.exercises)
            lines.append(f"{student:<{w}}  {cells}  {sum(res.values())}/{len(self.exercises)}")
        return "\n".join(lines)


def _exercise_of(testcase: ET.Element) -> str | None:
    """'exercises/03_spsc/mpmc.ipynb' -> '03_spsc/mpmc' (nbval's classname
    is the notebook's path with dots for slashes)."""
    cls = testcase.get("classname", "") or testcase.get("file", "")
    cls = cls.replace("/", ".")
    if not cls.endswith(".ipynb"):
        return None
    parts = cls[: -len(".ipynb")].split(".")
    for top in ("exercises", "solutions"):  # a solved copy maps to the same exercise
        if top in parts:
            return "/".join(parts[parts.index(top) + 1 :])
    return None  # a chapter, not an exercise


def class_report(paths: list[str | Path]) -> ClassReport:
    """One JUnit XML per student (the file's stem is the student's name).
    An exercise passes when every cell of its notebook passed."""
    rep = ClassReport()
    seen: set[str] = set()
    for p in paths:
        path = Path(p)
        try:
            tree = ET.parse(path)
        except (ET.ParseError, OSError) as exc:
            raise ValueError(f"{path}: not a JUnit XML report ({exc})") from exc
        res: dict[str, bool] = {}
        for tc in tree.iter("testcase"):
            ex = _exercise_of(tc)
            if ex is None:
                continue
            ok = not any(child.tag in ("failure", "error") for child in tc)
            res[ex] = res.get(ex, True) and ok
            seen.add(ex)
        rep.students[path.stem] = res
    rep.exercises = sorted(seen)
    return rep
