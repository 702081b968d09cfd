"""The grader, both directions: every stub (generated from its solution) is
rejected, every solution accepted, deliberately broken implementations are
each rejected for the right reason (small edits of the solutions here, fresh
files in tests/broken/), no way of cheating passes (printing the result line,
ending the process early, patching the checks, importing the reference,
constructors, forbidden calls), crashes, hangs and compile errors become FAIL
lines, and learner code runs under limits.  The exercises are found from
their folders (exercise.toml), as the grader finds them: adding an exercise is
adding a folder."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lowlat.grading import discover, grade
from lowlat.grading.engine import run_child
from lowlat.grading.objcheck import api_names, api_prefix, read_elf
from lowlat.grading.pyharness import refuses_reference
from lowlat.grading.sandbox import Limits
from lowlat.grading.spec import SpecError

try:  # the generator: in tools/ (author's checkout only; a student release has neither)
    from tools import authoring
except ImportError:
    authoring = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent.parent
FOUND = discover(ROOT)  # from solutions/ in the author's checkout, else from exercises/
HAVE_SOLUTIONS = (ROOT / "solutions").is_dir() and authoring is not None
needs_solutions = pytest.mark.skipif(
    not HAVE_SOLUTIONS, reason="needs solutions/ and the generator (author's checkout)"
)
NAMES = sorted(FOUND) if HAVE_SOLUTIONS else []


def solution(name: str) -> Path:
    """The completed file of exercise ``name`` in its solutions/ folder."""
    ex = FOUND[name]
    return ex.folder / ex.filename


def stub_text(name: str) -> str:
    """What the learner is given for exercise ``name``: generated from the
    solution, never read from exercises/ (a learner's finished file there must
    not make this suite fail)."""
    path = solution(name)
    return authoring.make_stub(path.read_text(), path.suffix, str(path.relative_to(ROOT)))


@needs_solutions
def test_every_exercise_has_a_solution_and_a_stub() -> None:
    assert FOUND, "no exercise.toml found under solutions/"
    for name, ex in FOUND.items():
        assert ex.folder.is_relative_to(ROOT / "solutions"), ex.folder
        path = solution(name)
        assert path.is_file(), f"{path} missing: {ex.folder / 'exercise.toml'} names it"
        assert ex.checks_path.is_file()
        stub = ROOT / "exercises" / path.relative_to(ROOT / "solutions")
        assert stub.exists(), f"{stub} missing: run python -m tools exercises"
        assert FOUND[name].filename == path.name


@needs_solutions
def test_stubs_contain_no_solution() -> None:
    for name in FOUND:
        stub = stub_text(name)
        assert "BEGIN SOLUTION" not in stub and "END STUB" not in stub
        assert "YOUR CODE HERE" in stub


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_solution_is_accepted(name: str) -> None:
    report = grade(name, solution(name))
    assert report.ok, str(report)
    assert report.verdict() == f"{name}: {len(FOUND[name].checks)}/{len(FOUND[name].checks)} checks passed"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_generated_stub_is_rejected(name: str, tmp_path: Path) -> None:
    stub = tmp_path / FOUND[name].filename
    stub.write_text(stub_text(name))
    report = grade(name, stub)
    assert not report.ok
    assert all(r.reason for r in report.results if not r.passed), "every FAIL says why"


# Deliberately broken MPMC queues, each a small edit of the solution, the
# check that must catch it and words of its reason.  The tests grade that
# check only (grade(only=...)): each check a hang fails waits 3 s.
BROKEN_MPMC = {
    "lost item": (
        "bool mpmc_try_push(mpmc_queue *q, uint64_t value)\n{\n",
        "bool mpmc_try_push(mpmc_queue *q, uint64_t value)\n{\n    if (value % 1000 == 999)\n"
        "        return true; /* claims success, stores nothing */\n",
        "never arrived (lost",
        "pc_1x3",
    ),
    "duplicated item": (
        "bool mpmc_try_push(mpmc_queue *q, uint64_t value)\n{\n",
        "static _Thread_local int again;\nbool mpmc_try_push(mpmc_queue *q, uint64_t value)\n{\n"
        "    if (value % 1000 == 500 && !again) {\n        again = 1;\n        mpmc_try_push(q, value); "
        "/* a second copy */\n        again = 0;\n    }\n",
        "arrived more than once",
        "pc_1x3",
    ),
    "reordered per-producer stream": (
        "bool mpmc_try_push(mpmc_queue *q, uint64_t value)\n{\n",
        "#include <sched.h>\nstatic _Thread_local uint64_t held;\nstatic _Thread_local int holding;\nstatic bool push_one(mpmc_queue *q, "
        "uint64_t value);\nbool mpmc_try_push(mpmc_queue *q, uint64_t value)\n{\n    if (!holding && value % 2 == 0) {"
        "\n        held = value; /* keep it back, send it after the next one */\n        holding = 1;\n"
        "        return true;\n    }\n    if (!push_one(q, value))\n        return false;\n    if (holding) {\n"
        "        holding = 0;\n        while (!push_one(q, held))\n            sched_yield();\n    }\n    return true;\n}\n"
        "static bool push_one(mpmc_queue *q, uint64_t value)\n{\n",
        "out of order",
        "pc_1x3",
    ),
    "off-by-one capacity": (
        "    size_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);\n",
        "    size_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);\n    if (pos - atomic_load_explicit("
        "&q->head, memory_order_acquire) >= q->mask)\n        return false; /* full one slot early */\n",
        "must hold",
        "fifo_capacity",
    ),
    "relaxed publish": (
        "    atomic_store_explicit(&c->seq, pos + 1, memory_order_release);\n",
        "    atomic_store_explicit(&c->seq, pos + 1, memory_order_relaxed);\n",
        "ThreadSanitizer reports a data race",
        "pc_2x2",
    ),
    "item claimed but never published": (
        "    c->value = value;\n",
        "    if (value % 1000 == 999)\n        return true; /* ticket taken, cell never filled: a hang */\n"
        "    c->value = value;\n",
        "no progress for 3 s",
        "pc_1x3",
    ),
}


@needs_solutions
@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(BROKEN_MPMC))
def test_broken_mpmc_is_rejected(bug: str, tmp_path: Path) -> None:
    old, new, expected_reason, check = BROKEN_MPMC[bug]
    src = solution("mpmc").read_text()
    assert src.count(old) >= 1, f"the solution changed: cannot apply the '{bug}' edit"
    broken = tmp_path / "mpmc.c"
    broken.write_text(src.replace(old, new, 1))
    report = grade("mpmc", broken, only=[check])
    assert not report.ok, f"'{bug}' was accepted:\n{report}"
    assert any(not r.passed and expected_reason in r.reason for r in report.results), str(report)


def _checks_saying(name: str, text: str) -> list[str]:
    """The ids of the checks of ``name`` whose text holds ``text`` (what a
    test of a broken file grades: grade(only=...))."""
    ids = [c.id for c in FOUND[name].checks if text in c.text]
    assert ids, f"{name}: no check says {text!r}"
    return ids


# Deliberately broken prefetch loaders: (old, new) edits of the solution, and
# the check that must catch each, with words from its reason.
BROKEN_PREFETCH = {
    "unbounded queue": (
        [("queue.Queue(maxsize=self.depth)", "queue.Queue()")],
        "the producer reads ahead, but never more than depth",
        "may wait in the queue",
    ),
    "exception swallowed": (
        [("            _put(q, (_ERROR, exc), stop)\n", "            _put(q, (_END, None), stop)\n")],
        "the source's exception reaches the consumer",
        "the loop ended normally",
    ),
    "exception re-wrapped": (
        [("                    raise payload  #", "                    raise ValueError(str(payload))  #")],
        "the source's exception reaches the consumer",
        "without the source's traceback",
    ),
    "no stop on break": (
        [
            (
                "        finally:  # runs on exhaustion",
                "        except GeneratorExit:  # not on an early break\n"
                "            raise\n        else:  # runs on exhaustion",
            )
        ],
        "an early break stops the producer",
        "thread(s) still alive",
    ),
    "depth 0 still threads": (
        [("        if self.depth == 0:\n            return iter(self.iterable)\n", "")],
        "depth=0 reads on the caller's thread",
        "",
    ),
}


@needs_solutions
@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(BROKEN_PREFETCH))
def test_broken_prefetch_is_rejected(bug: str, tmp_path: Path) -> None:
    edits, check_text, reason = BROKEN_PREFETCH[bug]
    src = solution("prefetch").read_text()
    for old, new in edits:
        assert old in src, f"the solution changed: cannot apply the '{bug}' edit ({old!r})"
        src = src.replace(old, new, 1)
    broken = tmp_path / "prefetch.py"
    broken.write_text(src)
    report = grade("prefetch", broken, only=_checks_saying("prefetch", check_text))
    failed = [r for r in report.results if not r.passed]
    assert any(check_text in r.check.text and reason in r.reason for r in failed), str(report)


# Deliberately broken recorders and broken corrections, each caught by the named check.
BROKEN_OTHERS = {
    "recorder: plain counter read by the monitor": (
        "recorder",
        [
            ("    _Atomic uint64_t count;\n", "    uint64_t count;\n"),
            ("return atomic_load_explicit(&r->count, memory_order_relaxed);", "return r->count;"),
            (
                "    uint64_t n = atomic_load_explicit(&r->count, memory_order_relaxed);\n    r->ring",
                "    uint64_t n = r->count;\n    r->ring",
            ),
            ("atomic_store_explicit(&r->count, n + 1, memory_order_relaxed);", "r->count = n + 1;"),
        ],
        "ThreadSanitizer: no data race",
        "data race",
    ),
    "recorder: grows an array on the hot path": (
        "recorder",
        [
            (
                "    r->ring[n % r->keep] = latency_ns;\n",
                # a std::vector's push_back: the array doubles when full
                "    r->ring[n % r->keep] = latency_ns;\n    static uint64_t *all;\n"
                "    if ((n & (n - 1)) == 0)\n        all = realloc(all, 2 * (n + 1) * sizeof *all);\n"
                "    all[n] = latency_ns;\n",
            )
        ],
        "never allocates",
        "called the allocator 21 times",
    ),
    "recorder: newest in the wrong order": (
        "recorder",
        [("out[i] = r->ring[(n - k + i) % r->keep];", "out[k - 1 - i] = r->ring[(n - k + i) % r->keep];")],
        "oldest first",
        "oldest first",
    ),
    "co_correct: one value short per stall": (
        "co_correct",
        [("np.maximum(v // interval_ns - 1, 0)", "np.maximum(v // interval_ns - 2, 0)")],
        "as many corrected values",
        "record_corrected counts",
    ),
    "loglinear: bucket off by one": (
        "loglinear",
        [("b = max(0, value.bit_length() - (s.bit_length() - 1))", "b = max(0, value.bit_length() - s.bit_length())")],
        "matches the core on bucket edges",
        "expected",
    ),
}


@needs_solutions
@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(BROKEN_OTHERS))
def test_other_broken_solutions_are_rejected(bug: str, tmp_path: Path) -> None:
    name, edits, check_text, reason = BROKEN_OTHERS[bug]
    src = solution(name).read_text()
    for old, new in edits:
        assert old in src, f"the solution changed: cannot apply the '{bug}' edit ({old!r})"
        src = src.replace(old, new, 1)
    broken = tmp_path / solution(name).name
    broken.write_text(src)
    report = grade(name, broken, only=_checks_saying(name, check_text))
    failed = [r for r in report.results if not r.passed]
    assert any(check_text in r.check.text and reason in r.reason for r in failed), str(report)


# Fresh broken (and cheating) implementations, one file each under
# tests/broken/<exercise>/; the first line names the defect and what must
# catch it: "BROKEN: <defect>. EXPECT <check id>: <words of the reason>"
# (check id * : every check fails with those words, e.g. a refused file).
BROKEN_DIR = Path(__file__).resolve().parent / "broken"
BROKEN_LINE = re.compile(r"BROKEN: (?P<defect>.+?)\. EXPECT (?P<check>[\w*]+): (?P<words>.+?)\s*(\*/)?$")
BROKEN_FILES = sorted(p for p in BROKEN_DIR.glob("*/*") if p.suffix in (".c", ".py"))


needs_broken = pytest.mark.skipif(not BROKEN_DIR.is_dir(), reason="tests/broken/ is not in a student release")


@needs_broken
def test_every_broken_file_names_its_defect_and_expectation() -> None:
    assert BROKEN_FILES, f"no broken implementation under {BROKEN_DIR}"
    for path in BROKEN_FILES:
        first = path.read_text().splitlines()[0]
        m = BROKEN_LINE.search(first)
        assert m, f"{path}: the first line must read 'BROKEN: <defect>. EXPECT <check>: <words>', not {first!r}"
        assert path.parent.name in FOUND, f"{path}: no exercise called {path.parent.name}"
        ids = {c.id for c in FOUND[path.parent.name].checks}
        assert m["check"] == "*" or m["check"] in ids, f"{path}: no check {m['check']!r} in {sorted(ids)}"
        assert path.suffix == Path(FOUND[path.parent.name].filename).suffix, path


@pytest.mark.slow
@pytest.mark.parametrize("path", BROKEN_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_broken_file_is_rejected_for_its_defect(path: Path) -> None:
    m = BROKEN_LINE.search(path.read_text().splitlines()[0])
    assert m
    # The check named must catch it, so only it runs (a hang costs each
    # check it fails its 3 s of patience); a file every check fails (a
    # refused one) is graded whole.
    report = grade(path.parent.name, path, only=None if m["check"] == "*" else [m["check"]])
    assert not report.ok, f"{path.name} ({m['defect']}) was accepted:\n{report}"
    failed = [r for r in report.results if not r.passed]
    if m["check"] == "*":
        assert len(failed) == len(report.results), str(report)
        assert all(m["words"] in r.reason for r in failed), str(report)
    else:
        assert any(r.check.id == m["check"] and m["words"] in r.reason for r in failed), (
            f"{path.name}: no FAIL of check {m['check']!r} saying {m['words']!r}:\n{report}"
        )


def test_an_attribution_failure_says_what_differs() -> None:
    from lowlat.grading.pyharness import load

    checks = load(FOUND["budget"].checks_path, "budget_checks_for_test")
    said = checks._ate_difference([("parse", 1.3001)], [("parse", 1.3004)])
    assert "1.300100000 us from 'parse', expected 1.300400000 us" in said and "-0.0003 us" in said, said
    said = checks._ate_difference([("parse", 1.3)], [("reserve", 1.3)])
    assert "entry 1 of ate names 'parse', expected 'reserve'" in said, said
    assert checks._ate_difference([("parse", 1.3)], [("parse", 1.3)]) is None


@needs_solutions
@pytest.mark.slow
def test_compile_errors_show_the_compilers_lines(tmp_path: Path) -> None:
    bad = tmp_path / "mpmc.c"
    bad.write_text(solution("mpmc").read_text().replace("c->value = value;", "c->value = valu;"))
    report = grade("mpmc", bad)
    text = str(report)
    assert "The compiler says:" in text
    assert "mpmc.c:" in text and "error:" in text and "valu" in text
    assert "Traceback" not in text and str(tmp_path) not in text
    assert report.verdict() == f"mpmc: 0/{len(FOUND['mpmc'].checks)} checks passed"
    assert all(r.reason == "not run: the file does not compile" for r in report.results)


@needs_solutions
@pytest.mark.slow
def test_a_crash_names_the_function(tmp_path: Path) -> None:
    bad = tmp_path / "mpmc.c"
    bad.write_text(
        solution("mpmc")
        .read_text()
        .replace(
            "    *out = c->value;\n", "    *out = c->value;\n    if (*out == 3)\n        *(volatile int *)0 = 1;\n", 1
        )
    )
    report = grade("mpmc", bad)
    assert "crashed with SIGSEGV in mpmc_try_pop" in str(report), str(report)


def _reports(*lines: str, then: str = "") -> str:
    """Python code that writes ``lines`` on the grader's channel (each with
    the run's nonce, as grade.h does), then runs ``then``."""
    body = "".join(f"os.write(fd, ({line!r}.replace(' ', ' ' + n + ' ', 1) + '\\n').encode())\n" for line in lines)
    return f"import os\nfd = int(os.environ['GRADE_REPORT_FD'])\nn = os.environ['GRADE_NONCE']\n{body}{then}\n"


def test_child_outcomes_cover_every_ending() -> None:
    py = sys.executable
    hang = run_child([py, "-c", "import time; time.sleep(30)"], timeout_s=1)
    assert not hang.passed and hang.reason.startswith("timed out after 1 s")
    segv = run_child([py, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"], timeout_s=20)
    assert not segv.passed and segv.reason == "crashed with SIGSEGV in an unknown place"
    abort = run_child([py, "-c", _reports("CRASH mpmc_try_push", then="os.abort()")], timeout_s=20)
    assert abort.reason == "crashed with SIGABRT in mpmc_try_push"
    silent = run_child([py, "-c", "print('hello')"], timeout_s=20)
    assert not silent.passed and "without a result" in silent.reason
    ok = run_child([py, "-c", _reports("INFO x=2.5", "RESULT PASS")], timeout_s=20)
    assert ok.passed and ok.info == {"x": 2.5}, ok
    fail = run_child([py, "-c", _reports("RESULT FAIL it broke", then="os._exit(1)")], timeout_s=20)
    assert not fail.passed and fail.reason == "it broke"


def test_only_the_channel_with_the_nonce_and_a_clean_exit_pass() -> None:
    py = sys.executable
    printed = run_child([py, "-c", "print('RESULT PASS')"], timeout_s=20)
    assert not printed.passed and "a RESULT line printed by the program itself decides nothing" in printed.reason
    forged = run_child(
        [py, "-c", "import os; os.write(int(os.environ['GRADE_REPORT_FD']), b'RESULT 0123 PASS\\n')"], timeout_s=20
    )
    assert not forged.passed and "without a result" in forged.reason
    exit_disagrees = run_child([py, "-c", _reports("RESULT PASS", then="os._exit(3)")], timeout_s=20)
    assert not exit_disagrees.passed and "exited with status 3" in exit_disagrees.reason
    twice = run_child([py, "-c", _reports("RESULT PASS", "RESULT PASS")], timeout_s=20)
    assert not twice.passed and "reported 2 results" in twice.reason


# The cheats the grader must refuse, each proven by a file in tests/broken/.
CHEATS = {
    "a C constructor that prints RESULT PASS and exits": "mpmc/cheat_constructor.c",
    "C code that prints the result line and exits early": "mpmc/cheat_print_exit.c",
    "C code that finds the grader's channel and writes on it": "mpmc/cheat_channel.c",
    "inline assembly making a system call": "mpmc/cheat_asm.c",
    "C code that replaces write()": "mpmc/cheat_replace_write.c",
    "a race hidden from ThreadSanitizer by no_sanitize": "mpmc/cheat_no_sanitize.c",
    "code that differs when a sanitizer is on": "mpmc/cheat_sanitizer_ifdef.c",
    "Python that prints RESULT PASS and calls os._exit(0) at import": "budget/cheat_print_exit.py",
    "Python that replaces the grader's check table": "budget/cheat_patch_checks.py",
    "a parenthesised multi-line import of the reference": "budget/ref_parenthesised.py",
    "importlib.import_module with a computed name": "budget/ref_import_module.py",
    "loading the reference's file by path": "budget/ref_by_path.py",
    "import numpy as np, lowlat.core.hist": "co_correct/ref_numpy_and_hist.py",
    '__import__("lowlat.train.loader")': "prefetch/ref_dunder_import.py",
    "getattr tricks on builtins": "prefetch/ref_getattr.py",
    "a helper process (subprocess) that imports the reference": "prefetch/cheat_subprocess.py",
    "threading.active_count replaced to hide a thread close() never joins": "prefetch/cheat_active_count.py",
}


@needs_broken
def test_every_cheat_has_a_file_that_proves_it_fails() -> None:
    for cheat, rel in CHEATS.items():
        assert (BROKEN_DIR / rel).is_file(), f"{cheat}: {rel} is missing"
        assert BROKEN_DIR / rel in BROKEN_FILES


def test_the_object_inspector_reads_elf_and_the_api(tmp_path: Path) -> None:
    functions, variables = api_names((FOUND["ring"].folder / "ring.h").read_text())
    assert {"ring_create", "ring_destroy", "ring_try_push", "ring_try_pop", "ring_debug_set_position"} <= functions
    # the remote-load count is the checks' own now: ring.h declares a function, no variable
    assert variables == set() and "ring_grade_remote_load" in functions and api_prefix(functions) == "ring_"
    cc = next(c for c in ("cc", "gcc", "clang") if shutil.which(c))
    src = tmp_path / "x.c"
    src.write_text(
        '#include <stdio.h>\n__attribute__((constructor)) static void early(void) { puts("hi"); }\n'
        "int x_api(int a) { return a + 1; }\n"
    )
    subprocess.run([cc, "-c", "-O2", str(src), "-o", str(tmp_path / "x.o")], check=True)
    info = read_elf((tmp_path / "x.o").read_bytes())
    assert any(s.startswith(".init_array") for s in info.sections), info.sections
    assert "puts" in info.undefined and info.defined == {"x_api"}


def test_limits_stop_runaway_children(tmp_path: Path) -> None:
    py = sys.executable
    cpu = run_child([py, "-c", "while True: pass"], timeout_s=30, limits=Limits(cpu_s=1))
    assert not cpu.passed and "stopped by the CPU-time limit (1 s of CPU)" in cpu.reason, cpu.reason
    big = run_child(
        ["sh", "-c", "exec head -c 8000000 /dev/zero > big.bin"], timeout_s=30, limits=Limits(file_bytes=1 << 20)
    )
    assert not big.passed and "stopped by the file-size limit (1 MB)" in big.reason, big.reason
    hog = run_child(
        [py, "-c", "x = []\nwhile True: x.append(bytearray(1 << 20))"],
        timeout_s=30,
        limits=Limits(memory_bytes=256 << 20),
    )
    assert not hog.passed and "MemoryError" in hog.reason, hog.reason
    here = run_child([py, "-c", "import os; print(os.getcwd())"], timeout_s=30)
    assert "without a result" in here.reason and str(Path.cwd()) not in here.reason


RUNAWAY_PY = {
    "exercise.toml": """
        name = "runaway"
        kind = "python"
        file = "runaway.py"
        checks_file = "checks.py"

        [[check]]
        id = "spin"
        text = "spin returns"
        timeout = 30

        [[check]]
        id = "hog"
        text = "hog returns"

        [[check]]
        id = "scribble"
        text = "scribble returns"

        [[check]]
        id = "where"
        text = "where it ran"
        """,
    "runaway.py": """
        import os

        def spin():
            while True:
                pass

        def hog():
            x = []
            while True:
                x.append(bytearray(1 << 20))

        def scribble():
            with open("big.bin", "wb") as f:
                for _ in range(64):
                    f.write(b"x" * (1 << 20))

        def where():
            with open("small.bin", "wb") as f:
                f.write(b"x" * 1000)
            return os.getcwd(), os.getpid()
        """,
    "checks.py": """
        def spin(mod, path):
            mod.spin()

        def hog(mod, path):
            mod.hog()

        def scribble(mod, path):
            mod.scribble()

        def where(mod, path):
            cwd, pid = mod.where()
            return f"cwd={cwd} pid={pid}"

        CHECKS = {"spin": spin, "hog": hog, "scribble": scribble, "where": where}
        """,
}


def test_learner_code_is_stopped_by_the_limits_and_the_machine_is_unharmed(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "solutions/01_x/runaway", RUNAWAY_PY)
    limits = Limits(cpu_s=2, memory_bytes=256 << 20, file_bytes=1 << 20)
    report = grade("runaway", folder / "runaway.py", root=tmp_path, limits=limits)
    spin, hog, scribble, where = report.results
    assert "stopped by the CPU-time limit (2 s of CPU)" in spin.reason, spin.reason
    assert "raised MemoryError" in hog.reason and "memory limit: learner code may use 256 MB" in hog.reason, hog.reason
    assert "File too large" in scribble.reason and "file-size limit" in scribble.reason, scribble.reason
    m = re.search(r"cwd=(\S+) pid=(\d+)", where.reason)
    assert m, where.reason
    cwd, pid = Path(m.group(1)), int(m.group(2))
    assert not cwd.is_relative_to(tmp_path) and cwd != Path.cwd()  # a fresh directory of its own...
    assert not cwd.exists()  # ...removed with what the learner wrote there
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # and the learner's process is gone
    assert not list(folder.glob("*.bin")), "the learner's code wrote into the exercise's folder"


@pytest.mark.slow
def test_a_hang_in_c_fails_fast_and_says_where(tmp_path: Path) -> None:
    import time

    folder = _folder(tmp_path, "solutions/01_x/adder", ADDER_C)
    (folder / "adder.c").write_text(
        '#include "adder.h"\nlong add(long a, long b)\n{\n    for (volatile long i = 0;; i++)\n'
        "        (void)i;\n    return a + b;\n}\n"
    )
    t0 = time.monotonic()
    report = grade("adder", folder / "adder.c", root=tmp_path)
    took = time.monotonic() - t0
    assert [r.passed for r in report.results] == [False, False]
    assert all("add did not return within 3 s" in r.reason for r in report.results), str(report)
    assert took < 20, f"two hung checks took {took:.0f} s"


def test_grade_rejects_unknown_names_and_missing_files() -> None:
    with pytest.raises(
        ValueError,
        match="unknown exercise 'nope'; known: budget, co_correct, handle_pool, loglinear, mpmc, "
        "prefetch, recorder, ring",
    ):
        grade("nope", "x.c")
    with pytest.raises(FileNotFoundError, match="no such file \\(the exercise file is mpmc.c\\)"):
        grade("mpmc", "/nonexistent/mpmc.c")


@needs_solutions
@pytest.mark.slow
def test_cli_grade_prints_lines_and_sets_the_exit_code(tmp_path: Path) -> None:
    ok = subprocess.run(
        [sys.executable, "-m", "lowlat", "grade", "mpmc", str(solution("mpmc"))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    lines = ok.stdout.splitlines()
    n = len(FOUND["mpmc"].checks)
    assert lines[:n] == [f"PASS: {c.text}" for c in FOUND["mpmc"].checks]
    assert lines[n] == f"mpmc: {n}/{n} checks passed"
    assert "the mutex reference" in ok.stdout and "(reported, not graded)" in ok.stdout
    stub_file = tmp_path / "mpmc.c"
    stub_file.write_text(stub_text("mpmc"))
    stub = subprocess.run(
        [sys.executable, "-m", "lowlat", "grade", "mpmc", str(stub_file)], capture_output=True, text=True, timeout=600
    )
    assert stub.returncode == 1 and f"mpmc: 0/{n} checks passed" in stub.stdout
    unknown = subprocess.run([sys.executable, "-m", "lowlat", "grade", "nope", "x.c"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "unknown exercise" in unknown.stderr


@needs_solutions
def test_chosen_checks_are_never_a_grade(tmp_path: Path) -> None:
    """grade(only=...) and `lowlat grade --check`: the chosen checks run,
    the rest are named as left out, and the report is not a pass."""
    ids = [c.id for c in FOUND["ring"].checks]
    report = grade("ring", solution("ring"), only=["fifo_capacity"])
    assert [r.check.id for r in report.results] == ["fifo_capacity"] and report.passed == 1
    assert not report.ok and report.left_out == [i for i in dict.fromkeys(ids) if i != "fifo_capacity"]
    assert "1/1 chosen checks passed; not a grade" in report.verdict()
    with pytest.raises(ValueError, match="no check 'nope'"):
        grade("ring", solution("ring"), only=["nope"])
    assert grade("ring", solution("ring"), only="create_args").left_out[0] == "fifo_capacity"  # one id
    cli = [sys.executable, "-m", "lowlat", "grade", "ring"]
    one = subprocess.run([*cli, str(solution("ring")), "--check", "fifo_capacity"], capture_output=True, text=True)
    assert one.returncode == 0 and "not a grade" in one.stdout and "reported, not graded" not in one.stdout, one
    stub_file = tmp_path / "ring.c"
    stub_file.write_text(stub_text("ring"))
    failing = subprocess.run([*cli, str(stub_file), "--check", "cached"], capture_output=True, text=True)
    assert failing.returncode == 1 and "0/1 chosen checks passed" in failing.stdout, failing
    bad = subprocess.run([*cli, str(stub_file), "--check", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no check 'nope'" in bad.stderr, bad


# ---- adding an exercise is adding a folder -------------------------------------------------

ADDER_C = {
    "exercise.toml": """
        name = "adder"
        kind = "c"
        file = "adder.c"
        checks_file = "checks.c"

        [[check]]
        id = "small"
        text = "adds small numbers"

        [[check]]
        id = "big"
        text = "adds big numbers"
        sanitizer = "address"
        arg = "1000000"

        [timing]
        text = "{ns_per_add:.1f} ns per add"
        """,
    "adder.h": "#ifndef ADDER_H\n#define ADDER_H\nlong add(long a, long b);\n#endif\n",
    "adder.c": '#include "adder.h"\nlong add(long a, long b) { return a + b; }\n',
    "checks.c": """
        #include "adder.h"
        #include "grade.h"

        static int small(const char *arg)
        {
            (void)arg;
            return GRADE_CALL(add, 2, 3) == 5 ? grade_pass() : grade_fail("add(2, 3) is not 5");
        }
        static int big(const char *arg)
        {
            long n = (long)grade_arg_u64(arg, 0);
            return GRADE_CALL(add, n, n) == 2 * n ? grade_pass() : grade_fail("add(%ld, %ld) is not %ld", n, n, 2 * n);
        }
        static int timing(const char *arg)
        {
            (void)arg;
            grade_info("ns_per_add", 1.25);
            return grade_pass();
        }
        GRADE_CHECKS({"small", small}, {"big", big}, {"timing", timing})
        """,
}

ADDER_PY = {
    "exercise.toml": """
        name = "pyadder"
        kind = "python"
        file = "pyadder.py"
        checks_file = "checks.py"

        [[check]]
        id = "no_reference"
        text = "written here, not imported"

        [[check]]
        id = "adds"
        text = "adds two numbers"
        timeout = 20
        """,
    "pyadder.py": "def add(a, b):\n    return a + b\n",
    "checks.py": """
        from lowlat.grading.pyharness import refuses_reference

        def no_reference(mod, path):
            return refuses_reference(path, ["operator"], "write it yourself")

        def adds(mod, path):
            return None if mod.add(2, 3) == 5 else f"add(2, 3) returned {mod.add(2, 3)!r}"

        CHECKS = {"no_reference": no_reference, "adds": adds}
        """,
}


def _folder(root: Path, rel: str, files: dict[str, str]) -> Path:
    folder = root / rel
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    return folder


def test_adding_an_exercise_is_adding_a_folder(tmp_path: Path) -> None:
    c = _folder(tmp_path, "solutions/01_x/adder", ADDER_C)
    py = _folder(tmp_path, "solutions/01_x/pyadder", ADDER_PY)
    found = discover(tmp_path)
    assert sorted(found) == ["adder", "pyadder"]
    assert [ch.text for ch in found["adder"].checks] == ["adds small numbers", "adds big numbers"]
    assert found["adder"].checks[1].sanitizer == "address" and found["adder"].checks[1].arg == "1000000"
    assert found["pyadder"].checks[1].timeout_s == 20

    ok = grade("adder", c / "adder.c", root=tmp_path, timing=True)
    assert ok.ok, str(ok)
    assert str(ok).splitlines()[-1] == "adder: 2/2 checks passed"
    assert found["adder"].timing_line(ok.timing) == "1.2 ns per add"
    (tmp_path / "mine").mkdir()
    wrong = tmp_path / "mine/adder.c"  # the learner's copy elsewhere: the header comes from the exercise's folder
    wrong.write_text('#include "adder.h"\nlong add(long a, long b) { return a - b; }\n')
    bad = grade("adder", wrong, root=tmp_path)
    assert [r.passed for r in bad.results] == [False, False]
    assert bad.results[0].reason == "add(2, 3) is not 5"

    assert grade("pyadder", py / "pyadder.py", root=tmp_path).ok
    cheat = tmp_path / "mine/pyadder.py"
    cheat.write_text("from operator import add\n")
    report = grade("pyadder", cheat, root=tmp_path)
    assert [r.line() for r in report.results] == [
        "FAIL: written here, not imported: the file imports operator: write it yourself",
        "PASS: adds two numbers",
    ]


def test_a_release_is_graded_from_exercises(tmp_path: Path) -> None:
    # No solutions/ (a student release): the specs and checks in exercises/ are used.
    folder = _folder(tmp_path, "exercises/01_x/pyadder", ADDER_PY)
    assert discover(tmp_path)["pyadder"].folder == folder
    # With solutions/ (the author's checkout), those win over exercises/.
    _folder(tmp_path, "solutions/01_x/pyadder", ADDER_PY)
    assert discover(tmp_path)["pyadder"].folder == tmp_path / "solutions/01_x/pyadder"


def test_a_broken_spec_names_its_file(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "solutions/01_x/pyadder", ADDER_PY)
    spec = folder / "exercise.toml"
    spec.write_text(spec.read_text().replace('kind = "python"', 'kind = "rust"'))
    with pytest.raises(SpecError, match="exercise.toml: kind must be one of c, python, got 'rust'"):
        discover(tmp_path)
    spec.write_text(spec.read_text().replace('kind = "rust"', 'kind = "python"').replace("timeout = 20", "tmeout = 20"))
    with pytest.raises(SpecError, match="check 2: unknown key\\(s\\) tmeout"):
        discover(tmp_path)
    _folder(tmp_path, "solutions/02_y/pyadder", ADDER_PY)
    spec.write_text(spec.read_text().replace("tmeout", "timeout"))
    with pytest.raises(SpecError, match="the name 'pyadder' is taken"):
        discover(tmp_path)


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        ("import lowlat.experiments.budget\n", True),
        ("import lowlat.experiments.budget as b\n", True),
        ("from lowlat.experiments import budget\n", True),
        ("from lowlat.experiments.budget import Budget, reallocate\n", True),
        ("from lowlat import *\n", True),
        ("import lowlat\nx = lowlat.experiments.budget.Budget\n", True),
        ("import importlib\nb = importlib.import_module('lowlat.experiments.budget')\n", True),
        ("from importlib import import_module\nb = import_module('.budget', 'lowlat.experiments')\n", True),
        ("b = __import__('lowlat.experiments.budget')\n", True),
        ("def f():\n    import lowlat.experiments.budget\n", True),
        ("import numpy as np\nfrom lowlat import Histogram\n", False),
        ("# from lowlat.experiments.budget import Budget\ns = 'import lowlat.experiments.budget'\n", False),
        ("import lowlat_budget\n", False),
    ],
)
def test_refuses_reference_sees_every_way_of_importing(source: str, refused: bool, tmp_path: Path) -> None:
    f = tmp_path / "mine.py"
    f.write_text(source)
    reason = refuses_reference(f, ["lowlat.experiments.budget"], "write it yourself")
    assert (reason == "the file imports lowlat.experiments.budget: write it yourself") if refused else reason is None


# ---- the Python child: lowlat absent, processes refused, the file system shrunk --------------

PROBE_PY = """
import os, sys, threading

def try_(fn):
    try:
        fn()
        return "ok"
    except BaseException as exc:
        return type(exc).__name__ + ": " + str(exc)

def import_lowlat():
    import lowlat  # noqa: F401

def read(path):
    with open(path, "rb") as f:
        return f.read(16)

def load_by_path(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("not_the_reference", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

def spawn():
    import subprocess
    subprocess.run([sys.executable, "-c", "pass"])

def fork():
    if os.fork() == 0:
        os._exit(0)

def probe(reference, grader_pid):
    import numpy
    return {
        "import lowlat": try_(import_lowlat),
        "load by path": try_(lambda: load_by_path(reference)),
        "subprocess": try_(spawn),
        "fork": try_(fork),
        "signal the grader": try_(lambda: os.kill(grader_pid, 0)),
        "numpy": str(numpy.arange(3).sum()),
        "path": list(sys.path),
    }

def start_hidden_thread():
    threading.active_count = lambda: 1
    threading.Thread(target=threading.Event().wait, args=(5,), daemon=True).start()
"""


def test_the_python_child_cannot_reach_lowlat_or_start_processes(tmp_path: Path) -> None:
    import lowlat
    import lowlat.experiments.budget as reference
    from lowlat.grading.pychild import Learner

    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent(PROBE_PY))
    with Learner(probe, module_name="probe", timeout_s=30) as mod:
        mod.load()
        guards = mod.guards()
        got = mod.probe(reference.__file__, os.getpid())
        assert got["import lowlat"].startswith("ModuleNotFoundError"), got
        assert got["numpy"] == "3", got  # numpy still imports
        root = str(Path(lowlat.__file__).resolve().parent.parent)
        assert not any(p.startswith(root) or "site-packages" in p for p in got["path"]), got["path"]
        if sys.platform.startswith("linux") and guards["seccomp"] == "on":
            for what in ("subprocess", "fork", "signal the grader"):
                assert got[what].startswith("PermissionError"), (what, got[what])
        if guards["landlock"] == "on":  # without Landlock a read by path is not refused (exercises/README.md)
            assert got["load by path"].startswith("PermissionError"), got["load by path"]
        if Path(f"/proc/{os.getpid()}/task").is_dir():
            before = mod.threads()
            mod.start_hidden_thread()
            assert mod.threads() == before + 1  # counted by the kernel, not by the child's threading module


# ---- C exercises: correct files the grader once refused, and its source checks ------------
# tests/accepted/<exercise>/*.c: correct implementations in unusual styles (fence
# pairs, a block-scoped stack buffer); the first line says what each shows.
ACCEPTED_DIR = Path(__file__).resolve().parent / "accepted"
ACCEPTED_FILES = sorted(ACCEPTED_DIR.glob("*/*.c"))


@pytest.mark.slow
@pytest.mark.parametrize("path", ACCEPTED_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_correct_c_file_is_accepted(path: Path) -> None:
    report = grade(path.parent.name, path)
    assert report.ok, f"{path.name} ({path.read_text().splitlines()[0]}) was rejected:\n{report}"


def test_fence_ordered_file_is_judged_without_tsan() -> None:
    from lowlat.grading import ordering

    src = (ACCEPTED_DIR / "ring" / "fences.c").read_text()
    assert ordering.uses_fences(src)


C_SOURCE_CHEATS = {
    'static const unsigned char c[] __attribute__((section(".text.x"))) = {0xc3};': "section",
    'static const char c[] __attribute__ ((\n  __section__\n  (".text\\n.globl main"))) = {0};': "__section__",
    '[[gnu::section(".text")]] int x;': "section",
    '__attribute__((__no_sanitize__("thread"))) void f(void) {}': "switches a sanitizer off",
    "__attribute__((no_sanitize_thread)) void f(void) {}": "switches a sanitizer off",
    "__attribute__((__no_sanitize_address__)) void f(void) {}": "switches a sanitizer off",
    "__attribute__((disable_sanitizer_instrumentation)) void f(void) {}": "switches a sanitizer off",
    "__attribute__((__no_instrument_function__)) void f(void) {}": "instrumentation",
    "#pragma GCC push_options": "#pragma",
    '_Pragma("GCC optimize(\\"O0\\")") int x;': "#pragma",
}


@pytest.mark.parametrize("src", sorted(C_SOURCE_CHEATS))
def test_c_source_cheats_are_refused(src: str) -> None:
    from lowlat.grading.objcheck import Refused, check_source

    with pytest.raises(Refused, match=re.escape(C_SOURCE_CHEATS[src])):
        check_source(src, "x.c")


def test_c_source_check_allows_ordinary_names_and_attributes() -> None:
    from lowlat.grading.objcheck import check_source

    check_source("static inline __attribute__((always_inline, unused)) int f(int section) { return section; }", "x.c")


ORDERING_CASES = {
    # (source, problems expected): push publishes `tail`, pop reads it.
    "release/acquire": (
        "bool q_try_push(q *r) { atomic_store_explicit(&r->tail, 1, memory_order_release); return 1; }"
        "bool q_try_pop(q *r) { return atomic_load_explicit(&r->tail, memory_order_acquire); }",
        0,
    ),
    "relaxed publish": (
        "bool q_try_push(q *r) { atomic_store_explicit(&r->tail, 1, memory_order_relaxed); return 1; }"
        "bool q_try_pop(q *r) { return atomic_load_explicit(&r->tail, memory_order_acquire); }",
        1,
    ),
    "relaxed consume, builtin spelling": (
        "bool q_try_push(q *r) { __atomic_store_n(&r->tail, 1, 5); return 1; }"
        "bool q_try_pop(q *r) { return __atomic_load_n(&r->tail, 0); }",
        1,
    ),
    "fences": (
        "bool q_try_push(q *r) { atomic_thread_fence(memory_order_release);"
        " atomic_store_explicit(&r->tail, 1, memory_order_relaxed); return 1; }"
        "bool q_try_pop(q *r) { int t = atomic_load_explicit(&r->tail, memory_order_relaxed);"
        " atomic_thread_fence(memory_order_acquire); return t; }",
        0,
    ),
    "own cursor relaxed, helper spliced in": (
        "static int own(q *r) { return atomic_load_explicit(&r->tail, memory_order_relaxed); }"
        "bool q_try_push(q *r) { int t = own(r); atomic_store_explicit(&r->tail, t + 1, memory_order_release);"
        " return 1; }"
        "bool q_try_pop(q *r) { return atomic_load_explicit(&r->tail, memory_order_acquire); }",
        0,
    ),
    "data relaxed before a release flag": (
        "bool q_try_push(q *r) { atomic_store_explicit(&r->slot[1], 7, memory_order_relaxed);"
        " atomic_store_explicit(&r->tail, 1, memory_order_release); return 1; }"
        "bool q_try_pop(q *r) { int t = atomic_load_explicit(&r->tail, memory_order_acquire);"
        " return t + atomic_load_explicit(&r->slot[1], memory_order_relaxed); }",
        0,
    ),
}


@pytest.mark.parametrize("case", sorted(ORDERING_CASES))
def test_the_ordering_lint(case: str) -> None:
    from lowlat.grading import ordering

    src, expected = ORDERING_CASES[case]
    problems = ordering.lint(src, ["q_try_push", "q_try_pop", "q_create"], "q.c")
    assert len(problems) == expected, problems
