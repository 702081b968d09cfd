"""``python -m tools lessons``: lessons, words, paragraphs and stated vs
computed time, read from small synthetic notebooks written to a temp folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tools import lessons, notebooks
from tools.__main__ import main

TOP = "# Chapter 99 — A test\n\n**Time:** about 10 minutes.\n"
LESSONS = "## Lessons\n\n1. tails, not means;\n2. one rule for every reading;\n3. a continued\n   lesson.\n"
EXERCISES = (
    "## Exercises\n\n**Graded:** the big one (30 min).\n\n**Ungraded:**\n\n1. Warm pages (2 min).\n"
    "2. A longer stall (3 minutes).\n"
)


def md(text: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def code(src: str, run_s: float | None = 1.5) -> dict[str, Any]:
    meta = {} if run_s is None else {"run_s": run_s}
    return {"cell_type": "code", "metadata": meta, "source": src, "outputs": [], "execution_count": 1}


def write(folder: Path, name: str, cells: list[dict[str, Any]]) -> Path:
    path = folder / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_a_notebook_within_budget_reports_its_lessons_words_and_times(tmp_path: Path) -> None:
    p = write(tmp_path, "ok.ipynb", [md(TOP), md(LESSONS), code("x = 1"), code("y = 2", 3.0), md(EXERCISES)])
    r = lessons.report(p)
    assert r.lessons == ["tails, not means;", "one rule for every reading;", "a continued lesson."]
    assert not r.objectives and r.stated_min == 10 and r.run_s == pytest.approx(4.5)
    assert r.exercise_min == 5  # the ungraded ones only: the graded (30 min) is not the chapter's time
    prose = "".join(lessons.prose(t) for t in (TOP, LESSONS, EXERCISES))
    assert r.words == lessons.words(prose)
    assert r.computed_min == pytest.approx(r.words / 200 + 4.5 / 60)  # the exercises come on top
    assert r.problems == []
    out = lessons.table([r], root=tmp_path)
    assert "ok.ipynb" in out and "lessons:" in out and "1. tails, not means;" in out and "OVER" not in out


def test_words_count_prose_only(tmp_path: Path) -> None:
    text = (
        "A `ring` and [the pool](http://example.com/very/long/path) hold P99.9 and 1.5 don't.\n\n"
        "```python\nnot = counted + at_all\n```\n\n| a | table | row |\n|---|---|---|\n"
        "<!-- a comment of several words -->\n![an image](fig.png) <b>bold</b> end"
    )
    assert lessons.words(lessons.prose(text)) == 12  # A ring and the pool hold P99.9 and 1.5 don't bold end
    assert lessons.words("延迟预算 budget") == 2


def test_paragraphs_are_blocks_and_list_items(tmp_path: Path) -> None:
    paras = lessons.paragraphs("one two\nthree\n\n- four five\n- six\n  seven\n\n1. eight")
    assert [lessons.words(p) for p in paras] == [3, 2, 2, 1]


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("**Time:** about 45 minutes (the notebook runs in a minute)", 45),
        ("Time: 40-50 min", 50),
        ("Time: 1.5 h", 90),
        ("Time ~ 20 min", 20),
        ("its runtime: 5 min", None),
        ("no time here", None),
    ],
)
def test_the_stated_time_is_parsed(text: str, minutes: float | None) -> None:
    assert lessons.stated_minutes(text) == minutes


def test_over_budget_notebooks_are_listed_and_check_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long_para = " ".join(["word"] * 130)
    many = "## Lessons\n\n" + "".join(f"{i}. lesson {i}\n" for i in range(1, 7))
    body = [md(" ".join(["prose"] * 100)) for _ in range(26)]
    p = write(tmp_path, "long.ipynb", [md("# Long\n\nTime: 1 min"), md(many), md(long_para), *body, code("x")])
    r = lessons.report(p)
    found = "\n".join(r.problems)
    for words in ("6 lessons (at most 5)", "words (at most 2,500)", "a paragraph of 130 words", "stated 1 min"):
        assert words in found, found
    assert main(["lessons", str(p)]) == 0  # without --check: a report, not a verdict
    assert main(["lessons", "--check", str(p)]) == 1
    assert "over budget" in capsys.readouterr().out


def test_missing_lessons_time_and_run_times_are_reported(tmp_path: Path) -> None:
    top = "# Chapter\n\n**You will learn to**\n- read a tail;\n- gate a change\n  on its P99.\n\nMore text."
    p = write(tmp_path, "bare.ipynb", [md(top), code("x", run_s=None), code("   ", run_s=None)])
    r = lessons.report(p)
    assert r.objectives and r.lessons == ["read a tail;", "gate a change on its P99."]
    assert r.run_s is None and r.stated_min is None
    found = "\n".join(r.problems)
    assert "no '## Lessons' numbered list" in found and "no stated time" in found and "no recorded cell run" in found
    out = lessons.table([r], root=tmp_path)
    assert "2 (objectives)" in out and "+?" in out and "none" in out


def test_the_start_page_needs_no_lessons_list(tmp_path: Path) -> None:
    (tmp_path / "chapters").mkdir()
    (tmp_path / "other").mkdir()
    cells = [md(TOP), code("x = 1")]
    start = lessons.report(write(tmp_path / "chapters", "00_start_here.ipynb", cells))
    assert not start.lessons and not start.problems
    for folder, name in (("chapters", "00_other.ipynb"), ("other", "00_start_here.ipynb")):
        assert "no '## Lessons' numbered list" in lessons.report(write(tmp_path / folder, name, cells)).problems


def test_the_course_word_budget(tmp_path: Path) -> None:
    big = [md(" ".join(["w"] * 2_400))]
    reports = [lessons.report(write(tmp_path, f"n{i}.ipynb", big)) for i in range(8)]
    assert any("course: 19,200 words (at most 18,000)" in p for p in lessons.course_problems(reports))
    assert "over the course budget" in lessons.table(reports, root=tmp_path)


def test_bad_paths_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.ipynb").write_text("not json")
    (tmp_path / "empty").mkdir()
    for arg in (str(tmp_path / "none.ipynb"), str(tmp_path / "bad.ipynb"), str(tmp_path / "empty")):
        assert main(["lessons", arg]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("python -m tools lessons: "), err


def test_every_chapter_notebook_is_read() -> None:
    found = lessons.chapter_notebooks()
    assert found and all(p.suffix == ".ipynb" and p.parent.parent.name == "chapters" for p in found)


def test_the_executor_keeps_each_cells_run_time() -> None:
    timing = {"iopub.execute_input": "2024-01-01T00:00:00.250Z", "shell.execute_reply": "2024-01-01T00:00:02.500Z"}
    nb = {
        "cells": [
            {"cell_type": "code", "metadata": {"execution": timing, "tags": ["x"]}, "source": "", "outputs": []},
            {"cell_type": "code", "metadata": {"run_s": 1.234}, "source": "", "outputs": []},
            {"cell_type": "markdown", "metadata": {"run_s": 9}, "source": ""},
            # re-executed: the fresh record wins over the run_s an earlier execution left
            {"cell_type": "code", "metadata": {"run_s": 13.05, "execution": timing}, "source": "", "outputs": []},
            # a malformed record leaves the earlier run_s
            {"cell_type": "code", "metadata": {"run_s": 3, "execution": {"x": 1}}, "source": "", "outputs": []},
        ],
        "metadata": {},
    }
    cells = notebooks.normalize(nb)["cells"]
    assert [c["metadata"] for c in cells] == [
        {"tags": ["x"], "run_s": 2.25},
        {"run_s": 1.23},
        {},
        {"run_s": 2.25},
        {"run_s": 3.0},
    ]


def test_the_readme_chapter_table_states_each_notebooks_own_time() -> None:
    """The README's chapter table and each notebook's ``Time:`` agree
    (chapter 00 prints the notebooks' times; the README must say the same)."""
    import re

    readme = (lessons.ROOT / "README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith("| ") and ".ipynb)" in line]
    assert rows, "the README has a chapter table"
    seen = 0
    for row in rows:
        links = re.findall(r"\]\((chapters/[^)]+\.ipynb)\)", row.split(" | ")[0] + " | " + row.split(" | ")[1])
        minutes = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?)", row.rstrip(" |").rsplit("|", 1)[-1])]
        if not links or len(minutes) != len(links):
            continue
        for link, stated in zip(links, minutes):
            r = lessons.report(lessons.ROOT / link)
            assert r.stated_min == stated, f"README says {stated:g} min for {link}, the notebook {r.stated_min}"
            seen += 1
    assert seen >= 10, f"only {seen} chapter notebooks found in the README's table"
