"""The chapters' lessons, lengths and times (``python -m tools lessons``).

For each notebook (default: every ``chapters/*/*.ipynb``, 06b included) it
reports the lessons, the words of prose, the longest paragraph, the stated
time and the computed time, and lists what is over budget.  The conventions
it reads, so that authors can follow them:

- **Lessons**: a markdown cell holding a ``## Lessons`` heading followed by
  a numbered list (``1. ...``), at most five items.  A notebook without it
  is reported (its "You will learn to" objectives, if any, are shown
  instead, marked as such), except ``chapters/00_start_here.ipynb``, the
  course's entry page, which has none on purpose.
- **Stated time**: in the first markdown cell, ``Time: 45 min`` (bold,
  "about", "minutes", a range ``40-50 min`` (the upper end counts) or hours
  ``1.5 h`` accepted).
- **Exercises' times**: in the markdown after a heading that names
  "Exercises", every ``(N min)`` (or ``(N minutes)``) of an ungraded
  exercise, i.e. outside the paragraph that starts with ``**Graded``.
  They come on top of the stated time, which covers reading and running.
- **Run time**: the sum of the code cells' ``metadata.run_s`` (seconds),
  which ``python -m tools notebooks`` records when it executes a notebook.

**Words** count the prose a learner reads: markdown cells only, without
fenced code blocks, tables (lines starting with ``|``), HTML tags and
comments, images, and link targets (a link's text counts).  Headings, list
items and inline code count.  A word is a run of letters or digits (with
inner ``'``, ``.`` or ``-``: "don't", "1.5", "P99.9", "core-to-core" are one
word each; a run of CJK characters is one word).  A **paragraph** is a block
between blank lines, and each list item is its own paragraph.

**Computed time** (minutes) = words / 200 + run time / 60; the ungraded
exercises' minutes are reported beside it, not added.  **Budgets**: <= 2,500 words a notebook,
paragraphs <= 120 words, the course <= 18,000 words, stated time >= 90% of
the computed time, a ``## Lessons`` list of 1 to 5 items, a stated time.
``--check`` exits 1 when any budget is broken.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

WORDS_PER_MINUTE = 200
MAX_WORDS = 2_500
MAX_PARAGRAPH = 120
MAX_COURSE_WORDS = 18_000
MAX_LESSONS = 5
TIME_SLACK = 0.10  # the stated time may fall short of the computed one by 10%
NO_LESSONS = ("chapters", "00_start_here.ipynb")  # the entry page: no lessons list on purpose

_WORD = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+)*")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)")
_TIME = re.compile(
    r"\btime:?\**\s*(?:about\s+|around\s+|~\s*)?(\d+(?:\.\d+)?)(?:\s*(?:-|–|to)\s*(\d+(?:\.\d+)?))?\s*"
    r"(min(?:ute)?s?|h(?:ours?|rs?)?)\b",
    re.IGNORECASE,
)
_EXERCISE_TIME = re.compile(r"\((\d+(?:\.\d+)?)\s*min(?:ute)?s?\)", re.IGNORECASE)


def words(text: str) -> int:
    """Words in a piece of prose (see the module doc); a numbered list's
    ``1.`` is not a word."""
    return len(_WORD.findall(re.sub(r"^\s*\d+[.)]\s+", " ", text, flags=re.MULTILINE)))


def prose(markdown: str) -> str:
    """A markdown cell's prose: no fenced code, tables, HTML, images or link targets."""
    kept, fenced = [], False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith("|"):
            continue
        kept.append(line)
    text = "\n".join(kept)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.DOTALL)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)  # images
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: the text counts, not the target
    return re.sub(r"<[^>\n]+>", " ", text)  # HTML tags


def paragraphs(text: str) -> list[str]:
    """Blocks between blank lines; each list item a paragraph of its own."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        current: list[str] = []
        for line in block.splitlines():
            if _LIST_ITEM.match(line) and current:
                out.append("\n".join(current))
                current = []
            current.append(line)
        if current:
            out.append("\n".join(current))
    return [p for p in out if p.strip()]


def stated_minutes(markdown: str) -> float | None:
    """The ``Time: N min`` of a cell, in minutes (the upper end of a range)."""
    m = _TIME.search(markdown)
    if not m:
        return None
    value = float(m.group(2) or m.group(1))
    return value * 60 if m.group(3).lower().startswith("h") else value


@dataclass
class Report:
    """One notebook: its lessons (``objectives`` when they come from a
    "You will learn to" list instead of ``## Lessons``), prose words, the
    longest paragraph's words, times in minutes (None: not stated, or no
    cell run time recorded), and what is over budget."""

    path: Path
    lessons: list[str]
    objectives: bool
    words: int
    longest_paragraph: int
    stated_min: float | None
    run_s: float | None
    exercise_min: float
    problems: list[str] = field(default_factory=list)

    @property
    def computed_min(self) -> float:
        """Reading and running; the exercises' minutes come on top."""
        return self.words / WORDS_PER_MINUTE + (self.run_s or 0.0) / 60


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _list_after(lines: list[str], numbered: bool) -> list[str]:
    """The list that starts after a heading line: its items, each with its
    continuation lines; it ends at a blank line after the first item, or at
    a heading."""
    items: list[str] = []
    for x in lines:
        m = _NUMBERED.match(x) if numbered else (_BULLET.match(x) or _NUMBERED.match(x))
        if m:
            items.append(m.group(1).strip())
        elif not x.strip():
            if items:
                break
        elif x.lstrip().startswith("#"):
            break
        elif items:
            items[-1] += " " + x.strip()
    return items


def _lessons(cells: list[str]) -> tuple[list[str], bool] | None:
    """The ``## Lessons`` numbered list, or the "You will learn to" bullets
    of the first cells (second value True), or None."""
    for text in cells:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if re.match(r"^\s*#{1,6}\s*Lessons\s*$", line, re.IGNORECASE):
                return _list_after(lines[i + 1 :], numbered=True), False
    for text in cells[:3]:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if "you will learn" in line.lower():
                return _list_after(lines[i + 1 :], numbered=False), True
    return None


def _exercise_minutes(cells: list[str]) -> float:
    total, inside = 0.0, False
    for text in cells:
        for para in re.split(r"\n\s*\n", text):
            heading = re.search(r"^\s*#{1,6}\s*(.*)$", para, re.MULTILINE)
            if heading:
                inside = "exercise" in heading.group(1).lower()
            if inside and not para.lstrip().startswith("**Graded"):
                total += sum(float(x) for x in _EXERCISE_TIME.findall(para))
    return total


def report(path: Path) -> Report:
    """The lessons, words and times of one notebook (see the module doc)."""
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
        cells = nb["cells"]
        if not isinstance(cells, list):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"{path}: not a notebook (a .ipynb file is JSON with a list of cells)") from None
    md = [_source(c) for c in cells if isinstance(c, dict) and c.get("cell_type") == "markdown"]
    texts = [prose(t) for t in md]
    paras = [p for t in texts for p in paragraphs(t)]
    run = [  # an empty code cell is never executed, so it has no run time
        c.get("metadata", {}).get("run_s")
        for c in cells
        if isinstance(c, dict) and c.get("cell_type") == "code" and _source(c).strip()
    ]
    timed = [float(x) for x in run if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)]
    found = _lessons(md)
    lessons, objectives = found if found else ([], False)
    r = Report(
        Path(path),
        lessons,
        objectives,
        sum(words(t) for t in texts),
        max((words(p) for p in paras), default=0),
        stated_minutes(md[0]) if md else None,
        sum(timed) if run and len(timed) == len(run) else (0.0 if not run else None),
        _exercise_minutes(md),
    )
    r.problems = _problems(r)
    return r


def _lessons_exempt(path: Path) -> bool:
    """Whether a notebook needs no ``## Lessons`` list (the course's entry page)."""
    return (path.parent.name, path.name) == NO_LESSONS


def _problems(r: Report) -> list[str]:
    out = []
    if (not r.lessons or r.objectives) and not _lessons_exempt(r.path):
        out.append("no '## Lessons' numbered list")
    elif len(r.lessons) > MAX_LESSONS:
        out.append(f"{len(r.lessons)} lessons (at most {MAX_LESSONS})")
    if r.words > MAX_WORDS:
        out.append(f"{r.words:,} words (at most {MAX_WORDS:,})")
    if r.longest_paragraph > MAX_PARAGRAPH:
        out.append(f"a paragraph of {r.longest_paragraph} words (at most {MAX_PARAGRAPH})")
    if r.run_s is None:
        out.append("no recorded cell run times (run `python -m tools notebooks` on it)")
    if r.stated_min is None:
        out.append("no stated time ('Time: N min' in the first cell)")
    elif r.stated_min < (1 - TIME_SLACK) * r.computed_min:
        out.append(f"stated {r.stated_min:g} min, computed {r.computed_min:.0f} min")
    return out


def chapter_notebooks(root: Path = ROOT) -> list[Path]:
    """Every notebook under ``root/chapters`` (checkpoints excluded), sorted."""
    return sorted(p for p in (root / "chapters").glob("*/*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def _cut(text: str, limit: int = 110) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _minutes(x: float | None, unknown: str = "?") -> str:
    return unknown if x is None else f"{x:.0f}"


def table(reports: list[Report], root: Path = ROOT) -> str:
    """The reports as a plain-text table, each notebook's lessons and
    problems under it, and the course's total words."""
    rows = [("notebook", "lessons", "words", "longest ¶", "stated min", "computed min", "run s", "exercises min")]
    for r in reports:
        name = r.path.resolve().relative_to(root).as_posix() if r.path.resolve().is_relative_to(root) else str(r.path)
        lessons = f"{len(r.lessons)}" + (" (objectives)" if r.objectives else "")
        run = "?" if r.run_s is None else f"{r.run_s:.0f}"
        rows.append(
            (
                name,
                lessons,
                f"{r.words:,}",
                f"{r.longest_paragraph}",
                _minutes(r.stated_min, "none"),
                f"{r.computed_min:.0f}" + ("+?" if r.run_s is None else ""),
                run,
                f"{r.exercise_min:g}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))) for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    total = sum(r.words for r in reports)
    over = f" (over the course budget of {MAX_COURSE_WORDS:,})" if total > MAX_COURSE_WORDS else ""
    lines.append(
        f"course: {total:,} words{over}, computed {sum(r.computed_min for r in reports):.0f} min "
        f"+ {sum(r.exercise_min for r in reports):g} min of ungraded exercises"
    )
    for r in reports:
        lines.append("")
        lines.append(f"{r.path.name}:")
        if r.lessons:
            lines.append("  objectives (no '## Lessons' list):" if r.objectives else "  lessons:")
        lines.extend(f"    {i}. {_cut(x)}" for i, x in enumerate(r.lessons, 1))
        lines.extend(f"  OVER: {p}" for p in r.problems)
    return "\n".join(lines)


def course_problems(reports: list[Report]) -> list[str]:
    """Every notebook's problems, and the course's word budget."""
    out = [f"{r.path.name}: {p}" for r in reports for p in r.problems]
    total = sum(r.words for r in reports)
    if total > MAX_COURSE_WORDS:
        out.append(f"course: {total:,} words (at most {MAX_COURSE_WORDS:,})")
    return out


def resolve(paths: list[str], root: Path = ROOT) -> list[Path]:
    """The notebooks named (files, or folders searched for ``*.ipynb``),
    default every chapter's; a path that is neither raises ValueError."""
    if not paths:
        return chapter_notebooks(root)
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(x for x in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in x.parts)
            if not found:
                raise ValueError(f"{p}: a folder with no notebooks in it")
            out.extend(found)
        elif p.is_file() and p.suffix == ".ipynb":
            out.append(p)
        else:
            raise ValueError(f"{p}: no such notebook (give .ipynb files or folders)")
    return out


__all__ = [
    "MAX_COURSE_WORDS",
    "MAX_LESSONS",
    "MAX_PARAGRAPH",
    "MAX_WORDS",
    "WORDS_PER_MINUTE",
    "Report",
    "chapter_notebooks",
    "course_problems",
    "paragraphs",
    "prose",
    "report",
    "resolve",
    "stated_minutes",
    "table",
    "words",
]
