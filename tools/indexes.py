"""The exercise index tables, generated from each exercise's
``exercise.toml`` (its ``title``, ``minutes``, ``file``, ``kind``, ``order``,
``note``; the chapter is its folder's parent): nobody keeps them by hand.

Each table sits between ``<!-- exercises:begin -->`` and
``<!-- exercises:end -->`` in:

- ``README.md``: exercise, what you write, the grade command;
- ``solutions/README.md`` (copied to ``exercises/README.md``): folder, the
  file you edit, time, the grade command;
- ``solutions/NN_chapter/README.md`` (copied to ``exercises/``): the
  chapter's heading, how many exercises, folder, what you write, time.  A
  chapter folder without one gets one.

``python -m tools exercises`` rewrites them (then generates ``exercises/``);
``--check`` and the author suite report a table that is out of date.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lowlat.grading.spec import Exercise, discover

BEGIN = "<!-- exercises:begin -->"
END = "<!-- exercises:end -->"
_NUMBERS = {1: "One", 2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six"}


class TableError(ValueError):
    """A table cannot be generated (a spec without title or minutes, a file
    without its markers); the message names the file."""


def _authored(root: Path) -> list[Exercise]:
    """The author's exercises (under solutions/), in table order."""
    found = [ex for ex in discover(root).values() if ex.folder.is_relative_to(root / "solutions")]
    for ex in found:
        if not ex.title or ex.minutes is None:
            raise TableError(
                f'{ex.folder / "exercise.toml"}: the index tables need title = "..." and minutes = N '
                f"(missing: {', '.join(k for k, v in (('title', ex.title), ('minutes', ex.minutes)) if not v)})"
            )
    return sorted(found, key=lambda ex: (ex.chapter, ex.order, ex.name))


def _grade(ex: Exercise) -> str:
    return f"`python -m lowlat grade {ex.name} {ex.filename}`"


def readme_table(exercises: list[Exercise]) -> str:
    """The table of the top README."""
    rows = ["| exercise | you write | grade with |", "|---|---|---|"]
    rows += [
        f"| `{ex.chapter}/{ex.folder.name}/{ex.filename}` | {ex.title} ({ex.language}) | {_grade(ex)} |"
        for ex in exercises
    ]
    return "\n".join(rows)


def guide_table(exercises: list[Exercise]) -> str:
    """The table of exercises/README.md."""
    rows = ["| folder | you edit | time | check it with (from the folder) |", "|---|---|---|---|"]
    for ex in exercises:
        edit = f"`{ex.filename}` ({ex.language})" + (f"; {ex.note}" if ex.note else "")
        rows.append(f"| `{ex.chapter}/{ex.folder.name}/` | {edit} | {ex.minutes} min | {_grade(ex)} |")
    return "\n".join(rows)


def chapter_block(chapter: str, exercises: list[Exercise]) -> str:
    """The heading, count and table of one chapter's README."""
    n = len(exercises)
    number = chapter.split("_", 1)[0]
    lead = (
        "One exercise, in its own folder:"
        if n == 1
        else f"{_NUMBERS.get(n, str(n))} exercises, one folder each, in this order:"
    )
    rows = [f"# Chapter {number}: the exercise{'s' if n > 1 else ''}", "", lead, ""]
    rows += ["| folder | you write | time |", "|---|---|---|"]
    rows += [
        f"| [`{ex.folder.name}/`]({ex.folder.name}/README.md) | {ex.title} ({ex.language}) | {ex.minutes} min |"
        for ex in exercises
    ]
    return "\n".join(rows)


CHAPTER_TAIL = (
    "\n\nA folder holds the task (`README.md`), the one file you edit, the grader's checks, and a\n"
    "notebook that grades your file. Grade from the folder: `python -m lowlat grade NAME FILE`\n"
    "(the command is at the top of each README).\n"
)


def _replace(path: Path, text: str, block: str) -> str:
    """``text`` with the lines between its marker lines (each alone on its
    line; a marker quoted inside prose does not count) replaced by ``block``."""
    lines = text.split("\n")
    begins = [i for i, line in enumerate(lines) if line.strip() == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if len(begins) != 1 or len(ends) != 1 or begins[0] > ends[0]:
        raise TableError(f"{path}: needs one line {BEGIN} and, below it, one line {END} around the exercise table")
    return "\n".join([*lines[: begins[0] + 1], block, *lines[ends[0] :]])


def expected(root: Path) -> dict[Path, str]:
    """Path -> the text each index file should have (only those files)."""
    exercises = _authored(root)
    wanted: dict[Path, tuple[str, Callable[[], str]]] = {
        root / "README.md": ("", lambda: readme_table(exercises)),
        root / "solutions" / "README.md": ("", lambda: guide_table(exercises)),
    }
    chapters = sorted({ex.chapter for ex in exercises})
    for ch in chapters:
        mine = [ex for ex in exercises if ex.chapter == ch]
        wanted[root / "solutions" / ch / "README.md"] = (
            f"{BEGIN}\n{END}{CHAPTER_TAIL}",
            lambda mine=mine, ch=ch: chapter_block(ch, mine),  # type: ignore[misc]
        )
    out: dict[Path, str] = {}
    for path, (fresh, block) in wanted.items():
        text = path.read_text(encoding="utf-8") if path.is_file() else fresh
        if not text:
            raise TableError(f"{path}: not found (it holds an exercise table)")
        out[path] = _replace(path, text, block())
    return out


def check(root: Path) -> list[str]:
    """The index files that are out of date, each with the command to fix it."""
    return [
        f"{path.relative_to(root)}: its exercise table is out of date (python -m tools exercises rewrites it)"
        for path, text in expected(root).items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]


def write(root: Path) -> list[Path]:
    """Rewrites the index tables that changed; returns those files."""
    changed = []
    for path, text in expected(root).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
