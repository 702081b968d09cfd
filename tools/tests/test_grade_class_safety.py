"""grade-class against a hostile or careless class: links, FIFOs, folders
named like the file, bytes that are not text and includes out of the
exercise fail one student alone, with the reason in their report; every row
of the table is a real student; nothing from outside a submission reaches a
report."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.classroom import class_report, grade_class
from tools.submissions import include_problem, own_compiler_lines, shown

ROOT = Path(__file__).resolve().parents[2]
RING_SOLUTION = ROOT / "solutions/03_spsc/ring/ring.c"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    p = tmp_path / "passwd"
    p.write_text("root:x:0:0:SECRET-LINE:/root:/bin/bash\n")
    return p


def _class(tmp_path: Path, secret: Path) -> Path:
    subs = tmp_path / "subs"
    (subs / "aaa").mkdir(parents=True)
    (subs / "aaa/ring.c").write_bytes(bytes(range(128, 256)) * 4)  # not UTF-8
    (subs / "bob").mkdir()
    (subs / "bob/ring.c").symlink_to(RING_SOLUTION)  # the course's own answer
    (subs / "carl").symlink_to(ROOT / "solutions/03_spsc/ring")  # a student folder that is a link
    (subs / "dana").mkdir()
    os.mkfifo(subs / "dana/ring.c")  # would block a plain open()
    (subs / "eve/ring.c").mkdir(parents=True)  # a folder named like the file
    (subs / "fay").mkdir()
    (subs / "fay/ring.c").write_text(f'#include "{secret}"\n')
    (subs / "gus").mkdir()
    (subs / "gus/exercises").symlink_to(ROOT / "solutions")  # a link on the way to the file
    (subs / "hal").mkdir()
    (subs / "hal/ring.c").symlink_to(secret)
    (subs / "ida").mkdir()
    (subs / "ida/ring.c").write_text('#line 1 "/etc/passwd"\nint x = ;\n')
    (subs / "mal\nicious  FAIL  9 of 1").mkdir()  # would forge a row
    for not_a_student in ("solutions", ".git", "reports"):
        (subs / not_a_student).mkdir()
        (subs / not_a_student / "ring.c").write_text(RING_SOLUTION.read_text())
    return subs


def test_each_bad_submission_fails_its_student_alone(tmp_path: Path, secret: Path) -> None:
    subs = _class(tmp_path, secret)
    log = io.StringIO()
    done = grade_class(subs, subs / "reports", only=["ring"], log=log)  # every file is refused before compiling
    names = sorted(p.stem for p in done.reports)
    assert names == ["aaa", "bob", "carl", "dana", "eve", "fay", "gus", "hal", "ida"]
    assert len(done.not_graded) == 1 and "mal\\nicious" in done.not_graded[0] and "\n" not in done.not_graded[0]
    reasons = {p.stem: p.read_text() for p in done.reports}
    expected = {
        "aaa": "not UTF-8 text",
        "bob": "symbolic link",
        "carl": "folder is a symbolic link",
        "dana": "is a FIFO",
        "eve": "is a folder, not a regular file",
        "fay": "an absolute path",
        "gus": "exercises/ is a symbolic link",
        "hal": "symbolic link",
        "ida": "#line",
    }
    for student, why in expected.items():
        assert why in reasons[student], (student, reasons[student])
        assert "SECRET-LINE" not in reasons[student] and "BEGIN SOLUTION" not in reasons[student]
    rep = class_report(list(done.reports))
    rows = rep.table().splitlines()[2:]
    assert [r.split()[0] for r in rows] == list(expected) and all(r.split()[1:] == ["FAIL", "0/1"] for r in rows)
    assert "reports" not in reasons and "solutions" not in reasons and "skipped solutions/" in log.getvalue()


@pytest.mark.slow  # one real grading run (a Python exercise, a few seconds on a busy machine)
def test_one_bad_file_does_not_stop_the_others_being_graded(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    (subs / "aaa").mkdir(parents=True)
    (subs / "aaa/loglinear.py").write_bytes(b"\xff\xfe" * 50)
    (subs / "zed").mkdir()
    (subs / "zed/loglinear.py").write_text((ROOT / "solutions/04_measurement/loglinear/loglinear.py").read_text())
    done = grade_class(subs, tmp_path / "reports", only=["loglinear"])
    rep = class_report(list(done.reports))
    rows = [r.split() for r in rep.table().splitlines()[2:]]
    assert rows == [["aaa", "FAIL", "0/1"], ["zed", "PASS", "1/1"]]
    assert "byte 0xff at offset 0" in (tmp_path / "reports/aaa.xml").read_text()


def test_bad_calls_are_refused_before_grading(tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tools", "grade-class", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
        )

    (tmp_path / "subs/alice").mkdir(parents=True)
    res = cli(str(tmp_path / "subs"), "--report", str(tmp_path / "r"), "--exercise", "nope")
    assert res.returncode == 2 and "nope" in res.stderr and "known: " in res.stderr and "ring" in res.stderr
    assert not (tmp_path / "r").exists()
    with pytest.raises(ValueError, match="--report"):
        grade_class(tmp_path / "subs", "")
    with pytest.raises(ValueError, match="course checkout"):
        grade_class(ROOT, tmp_path / "r")


@pytest.mark.parametrize(
    "source",
    [
        '#include "/etc/passwd"\n',
        "#include </etc/passwd>\n",
        '#include "../../../../etc/passwd"\n',
        "#include <../../../etc/passwd>\n",
        '#inc\\\nlude "/etc/passwd"\n',
        '#/* a comment */include "/etc/passwd"\n',
        '??=include "/etc/passwd"\n',
        '%:include "/etc/passwd"\n',
        '#define F "/etc/passwd"\n#include F\n',
        '#include "checks.c"\n',
        '#include_next "ring.h"\n',
        '#embed "/etc/passwd"\n',
        '#line 1 "/etc/passwd"\n',
        '# 1 "/etc/passwd"\n',
        '#pragma GCC dependency "/etc/passwd"\n',
        '_Pragma("GCC dependency \\"/etc/passwd\\"")\n',
        '#if __has_include("/proc/self/environ")\n#endif\n',
    ],
)
def test_an_include_out_of_the_exercise_is_refused(source: str) -> None:
    assert include_problem(source, {"ring.h", "ll_common.h"}) is not None


def test_the_solutions_own_includes_pass() -> None:
    assert include_problem(RING_SOLUTION.read_text(), {"ring.h", "ll_common.h"}) is None
    ok = '#include <stdatomic.h>\n#include "ring.h"\n// #include "/etc/passwd"\nconst char *s = "#include /x";\n'
    assert include_problem(ok, {"ring.h"}) is None


def test_compiler_messages_are_cut_to_the_students_file() -> None:
    gcc = (
        "In file included from ring.c:1:\n"
        "/etc/passwd:1:5: error: expected identifier\n"
        "    1 | root:x:0:0:SECRET-LINE:/root:/bin/bash\n"
        "      |     ^\n"
        "ring.c:3:9: error: expected expression\n"
        "    3 | int x = ;\n"
        "      |         ^\n"
    )
    out = own_compiler_lines(gcc, "ring.c")
    assert "SECRET-LINE" not in out and "/etc/passwd" not in out
    assert "ring.c:3:9: error" in out and "int x = ;" in out and "not shown" in out


def test_class_report_skips_and_escapes(tmp_path: Path) -> None:
    case = '<testcase classname="exercises.03_spsc.ring.ring.ipynb" name="Cell {i}">{body}</testcase>'
    skipped = "".join(case.format(i=i, body="<skipped/>") for i in range(2))
    passed = case.format(i=0, body="")
    (tmp_path / "only_skipped.xml").write_text(f"<testsuites><testsuite>{skipped}</testsuite></testsuites>")
    (tmp_path / "ok.xml").write_text(f"<testsuites><testsuite>{skipped}{passed}</testsuite></testsuites>")
    odd = tmp_path / "x\nzz  PASS  1 of 1.xml"
    odd.write_text(f"<testsuites><testsuite>{passed}</testsuite></testsuites>")
    rep = class_report([tmp_path / "only_skipped.xml", tmp_path / "ok.xml", odd])
    lines = rep.table().splitlines()
    assert len(lines) == 5
    assert lines[3].split() == ["only_skipped", "SKIP", "0/1"] and lines[2].split() == ["ok", "PASS", "1/1"]
    assert lines[4].startswith(shown("x\nzz")) and "\\n" in lines[4]
