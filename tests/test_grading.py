"""The grader, both directions: every generated stub is rejected, every
solution accepted, deliberately broken MPMC queues are each rejected for the
right reason, and crashes, hangs and compile errors become FAIL lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lowlat import authoring
from lowlat.grading import EXERCISES, grade
from lowlat.grading.core import run_child

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = {
    "budget": ROOT / "solutions/01_budgets/budget_report.py",
    "handle_pool": ROOT / "solutions/02_pool/handle_pool.c",
    "ring": ROOT / "solutions/03_spsc/ring.c",
    "mpmc": ROOT / "solutions/03_spsc/mpmc.c",
    "prefetch": ROOT / "solutions/06_training/prefetch.py",
    "co_correct": ROOT / "solutions/04_measurement/co_correct.py",
    "loglinear": ROOT / "solutions/04_measurement/loglinear.py",
    "recorder": ROOT / "solutions/05_pipeline/recorder.c",
}


def test_every_exercise_has_a_solution_and_a_stub() -> None:
    assert set(SOLUTION) == set(EXERCISES)
    for name, path in SOLUTION.items():
        stub = ROOT / "exercises" / path.relative_to(ROOT / "solutions")
        assert stub.exists(), f"{stub} missing: run python -m lowlat exercises"
        assert EXERCISES[name].filename == path.name


def test_exercises_are_generated_from_solutions() -> None:
    assert authoring.check() == [], "exercises/ is out of date: run `python -m lowlat exercises`"


def test_stubs_contain_no_solution() -> None:
    for path in SOLUTION.values():
        stub = (ROOT / "exercises" / path.relative_to(ROOT / "solutions")).read_text()
        assert "BEGIN SOLUTION" not in stub and "END STUB" not in stub
        assert "YOUR CODE HERE" in stub


def test_marker_errors_are_reported_with_line_numbers() -> None:
    with pytest.raises(authoring.MarkerError, match="f.c:1: BEGIN SOLUTION without END SOLUTION"):
        authoring.make_stub("/* BEGIN SOLUTION */\nint x;\n", ".c", "f.c")
    with pytest.raises(authoring.MarkerError, match="f.py:2: marker without BEGIN SOLUTION"):
        authoring.make_stub("x = 1\n# END SOLUTION\n", ".py", "f.py")
    py = authoring.make_stub("def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n", ".py")
    assert py == 'def f():\n    # YOUR CODE HERE (see README.md)\n    raise NotImplementedError("see README.md")\n'


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SOLUTION))
def test_solution_is_accepted(name: str) -> None:
    report = grade(name, SOLUTION[name])
    assert report.ok, str(report)
    assert report.verdict() == f"{name}: {len(EXERCISES[name].checks)}/{len(EXERCISES[name].checks)} checks passed"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SOLUTION))
def test_generated_stub_is_rejected(name: str) -> None:
    stub = ROOT / "exercises" / SOLUTION[name].relative_to(ROOT / "solutions")
    report = grade(name, stub)
    assert not report.ok
    assert all(r.reason for r in report.results if not r.passed), "every FAIL says why"


# Deliberately broken MPMC queues, each a small edit of the solution, and the
# check that must catch it.
BROKEN_MPMC = {
    "lost item": (
        "bool mpmc_try_push(mpmc_queue *q, uint64_t value)\n{\n",
        "bool mpmc_try_push(mpmc_queue *q, uint64_t value)\n{\n    if (value % 1000 == 999)\n"
        "        return true; /* claims success, stores nothing */\n",
        "never arrived (lost",
    ),
    "duplicated item": (
        "bool mpmc_try_push(mpmc_queue *q, uint64_t value)\n{\n",
        "static _Thread_local int again;\nbool mpmc_try_push(mpmc_queue *q, uint64_t value)\n{\n"
        "    if (value % 1000 == 500 && !again) {\n        again = 1;\n        mpmc_try_push(q, value); "
        "/* a second copy */\n        again = 0;\n    }\n",
        "arrived more than once",
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
    ),
    "off-by-one capacity": (
        "    size_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);\n",
        "    size_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);\n    if (pos - atomic_load_explicit("
        "&q->head, memory_order_acquire) >= q->mask)\n        return false; /* full one slot early */\n",
        "must hold",
    ),
    "relaxed publish": (
        "    atomic_store_explicit(&c->seq, pos + 1, memory_order_release);\n",
        "    atomic_store_explicit(&c->seq, pos + 1, memory_order_relaxed);\n",
        "ThreadSanitizer reports a data race",
    ),
    "item claimed but never published": (
        "    c->value = value;\n",
        "    if (value % 1000 == 999)\n        return true; /* ticket taken, cell never filled: a hang */\n"
        "    c->value = value;\n",
        "no progress for 3 s",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(BROKEN_MPMC))
def test_broken_mpmc_is_rejected(bug: str, tmp_path: Path) -> None:
    old, new, expected_reason = BROKEN_MPMC[bug]
    src = SOLUTION["mpmc"].read_text()
    assert src.count(old) >= 1, f"the solution changed: cannot apply the '{bug}' edit"
    broken = tmp_path / "mpmc.c"
    broken.write_text(src.replace(old, new, 1))
    report = grade("mpmc", broken)
    assert not report.ok, f"'{bug}' was accepted:\n{report}"
    assert expected_reason in str(report), str(report)


# Deliberately broken prefetch loaders: (old, new) edits of the solution, and
# the check that must catch each, with words from its reason.
BROKEN_PREFETCH = {
    "unbounded queue": (
        [("queue.Queue(maxsize=self.depth)", "queue.Queue()")],
        "the producer reads ahead, but never more than depth", "at most 3 may wait",
    ),
    "exception swallowed": (
        [("            _put(q, (_ERROR, exc), stop)\n", "            _put(q, (_END, None), stop)\n")],
        "the source's exception reaches the consumer", "the loop ended normally",
    ),
    "exception re-wrapped": (
        [("                    raise payload  #", "                    raise ValueError(str(payload))  #")],
        "the source's exception reaches the consumer", "without the source's traceback",
    ),
    "no stop on break": (
        [("        finally:  # runs on exhaustion", "        except GeneratorExit:  # not on an early break\n"
          "            raise\n        else:  # runs on exhaustion")],
        "an early break stops the producer", "thread(s) still alive",
    ),
    "depth 0 still threads": (
        [("        if self.depth == 0:\n            return iter(self.iterable)\n", "")],
        "depth=0 reads on the caller's thread", "",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(BROKEN_PREFETCH))
def test_broken_prefetch_is_rejected(bug: str, tmp_path: Path) -> None:
    edits, check_text, reason = BROKEN_PREFETCH[bug]
    src = SOLUTION["prefetch"].read_text()
    for old, new in edits:
        assert old in src, f"the solution changed: cannot apply the '{bug}' edit ({old!r})"
        src = src.replace(old, new, 1)
    broken = tmp_path / "prefetch.py"
    broken.write_text(src)
    report = grade("prefetch", broken)
    failed = [r for r in report.results if not r.passed]
    assert any(check_text in r.check.text and reason in r.reason for r in failed), str(report)


# Deliberately broken recorders and broken corrections, each caught by the named check.
BROKEN_OTHERS = {
    "recorder: plain counter read by the monitor": (
        "recorder", [("    _Atomic uint64_t count;\n", "    uint64_t count;\n"),
                     ("return atomic_load_explicit(&r->count, memory_order_relaxed);", "return r->count;"),
                     ("    uint64_t n = atomic_load_explicit(&r->count, memory_order_relaxed);\n    r->ring",
                      "    uint64_t n = r->count;\n    r->ring"),
                     ("atomic_store_explicit(&r->count, n + 1, memory_order_relaxed);", "r->count = n + 1;")],
        "ThreadSanitizer: no data race", "data race"),
    "recorder: grows an array on the hot path": (
        "recorder", [("    r->ring[n % r->keep] = latency_ns;\n",
                      "    r->ring[n % r->keep] = latency_ns;\n    static uint64_t *all;\n"
                      "    all = realloc(all, (n + 1) * sizeof *all);\n    all[n] = latency_ns;\n")],
        "never allocates", "allocated 1000000 times"),
    "recorder: newest in the wrong order": (
        "recorder", [("out[i] = r->ring[(n - k + i) % r->keep];", "out[k - 1 - i] = r->ring[(n - k + i) % r->keep];")],
        "oldest first", "oldest first"),
    "co_correct: one value short per stall": (
        "co_correct", [("np.maximum(v // interval_ns - 1, 0)", "np.maximum(v // interval_ns - 2, 0)")],
        "as many corrected values", "record_corrected counts"),
    "loglinear: bucket off by one": (
        "loglinear", [("b = max(0, value.bit_length() - (s.bit_length() - 1))",
                       "b = max(0, value.bit_length() - s.bit_length())")],
        "matches the core on bucket edges", "expected"),
}


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(BROKEN_OTHERS))
def test_other_broken_solutions_are_rejected(bug: str, tmp_path: Path) -> None:
    name, edits, check_text, reason = BROKEN_OTHERS[bug]
    src = SOLUTION[name].read_text()
    for old, new in edits:
        assert old in src, f"the solution changed: cannot apply the '{bug}' edit ({old!r})"
        src = src.replace(old, new, 1)
    broken = tmp_path / SOLUTION[name].name
    broken.write_text(src)
    report = grade(name, broken)
    failed = [r for r in report.results if not r.passed]
    assert any(check_text in r.check.text and reason in r.reason for r in failed), str(report)


@pytest.mark.slow
def test_compile_errors_show_the_compilers_lines(tmp_path: Path) -> None:
    bad = tmp_path / "mpmc.c"
    bad.write_text(SOLUTION["mpmc"].read_text().replace("c->value = value;", "c->value = valu;"))
    report = grade("mpmc", bad)
    text = str(report)
    assert "The compiler says:" in text
    assert "mpmc.c:" in text and "error:" in text and "valu" in text
    assert "Traceback" not in text and str(tmp_path) not in text
    assert report.verdict() == "mpmc: 0/7 checks passed"
    assert all(r.reason == "not run: the file does not compile" for r in report.results)


@pytest.mark.slow
def test_a_crash_names_the_function(tmp_path: Path) -> None:
    bad = tmp_path / "mpmc.c"
    bad.write_text(SOLUTION["mpmc"].read_text().replace(
        "    *out = c->value;\n", "    *out = c->value;\n    if (*out == 3)\n        *(volatile int *)0 = 1;\n", 1))
    report = grade("mpmc", bad)
    assert "crashed with SIGSEGV in mpmc_try_pop" in str(report), str(report)


def test_child_outcomes_cover_every_ending() -> None:
    py = sys.executable
    hang = run_child([py, "-c", "import time; time.sleep(30)"], timeout_s=1)
    assert not hang.passed and hang.reason.startswith("timed out after 1 s")
    segv = run_child([py, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"], timeout_s=20)
    assert not segv.passed and segv.reason == "crashed with SIGSEGV in an unknown place"
    abort = run_child([py, "-c", "import sys; sys.stderr.write('GRADE_CRASH_IN mpmc_try_push\\n'); import os; "
                               "os.abort()"], timeout_s=20)
    assert abort.reason == "crashed with SIGABRT in mpmc_try_push"
    silent = run_child([py, "-c", "print('hello')"], timeout_s=20)
    assert not silent.passed and "without a result" in silent.reason
    ok = run_child([py, "-c", "print('INFO x=2.5'); print('RESULT PASS')"], timeout_s=20)
    assert ok.passed and ok.info == {"x": 2.5}
    fail = run_child([py, "-c", "print('RESULT FAIL it broke')"], timeout_s=20)
    assert not fail.passed and fail.reason == "it broke"


def test_grade_rejects_unknown_names_and_missing_files() -> None:
    with pytest.raises(ValueError, match="unknown exercise 'nope'; known: budget, co_correct, handle_pool, loglinear, mpmc, "
                                         "prefetch, recorder, ring"):
        grade("nope", "x.c")
    with pytest.raises(FileNotFoundError, match="no such file \\(the exercise file is mpmc.c\\)"):
        grade("mpmc", "/nonexistent/mpmc.c")


@pytest.mark.slow
def test_cli_grade_prints_lines_and_sets_the_exit_code() -> None:
    ok = subprocess.run([sys.executable, "-m", "lowlat", "grade", "mpmc", str(SOLUTION["mpmc"])],
                        capture_output=True, text=True, timeout=600)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    lines = ok.stdout.splitlines()
    assert lines[:7] == [f"PASS: {c.text}" for c in EXERCISES["mpmc"].checks]
    assert lines[7] == "mpmc: 7/7 checks passed"
    assert "the mutex reference" in ok.stdout and "(reported, not graded)" in ok.stdout
    stub = subprocess.run([sys.executable, "-m", "lowlat", "grade", "mpmc", str(ROOT / "exercises/03_spsc/mpmc.c")],
                          capture_output=True, text=True, timeout=600)
    assert stub.returncode == 1 and "mpmc: 0/7 checks passed" in stub.stdout
    unknown = subprocess.run([sys.executable, "-m", "lowlat", "grade", "nope", "x.c"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "unknown exercise" in unknown.stderr
