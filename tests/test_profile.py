"""Profiles: folding perf script stacks, the flame graph, and the paths
where perf or py-spy is missing or refused (no exception, a reason)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lowlat.method import profiling as profile

# perf script -F comm,pid,tid,ip,sym, trimmed: a main thread, a consumer that
# yields (its caller lost: no frame pointers), a consumer sample in its own loop,
# a producer, and a frame with no symbol.
SCRIPT = """\
python 100/100
\t    7f00001 _PyEval_EvalFrameDefault
\t    7f00002 Py_RunMain

python 100/101
\tffffffff81000001 __schedule
\tffffffff81000002 do_sched_yield
\t    7f00003 __sched_yield
\t    7f00004 [unknown]

python 100/101
\t    7f00005 consumer_main
\t    7f00004 [unknown]

python 100/101
\tffffffff81000001 __schedule
\tffffffff81000002 do_sched_yield
\t    7f00003 __sched_yield
\t    7f00004 [unknown]

python 100/102
\t    7f00006 __vdso_clock_gettime
\t    7f00007 producer_main+0x1f
\t    7f00004 [unknown]

python 100/102
\t    7f00008 0x7f00008
"""

NAMES = ("producer_main", "consumer_main")


def test_collapse_names_threads_and_marks_kernel_frames() -> None:
    folded = profile.collapse_perf_script(SCRIPT, NAMES)
    assert folded == {
        "python;main thread;Py_RunMain;_PyEval_EvalFrameDefault": 1,
        "python;consumer_main;[chain truncated];__sched_yield;do_sched_yield_[k];__schedule_[k]": 2,
        "python;consumer_main": 1,
        "python;producer_main;__vdso_clock_gettime": 1,
        "python;producer_main;[chain truncated]": 1,  # no known frame at all
    }
    assert sum(folded.values()) == 6  # every sample kept
    assert profile.share(folded, "sched_yield") == pytest.approx(2 / 6)
    assert profile.leaves(folded, 1) == [("__schedule_[k]", pytest.approx(2 / 6))]
    kept = profile.collapse_perf_script(SCRIPT, NAMES, keep_unknown=True)
    assert sum(kept.values()) == 6 and any("[unknown]" in s for s in kept)


def test_folded_text_round_trip() -> None:
    folded = profile.collapse_perf_script(SCRIPT, NAMES)
    text = "\n".join(f"{s} {n}" for s, n in sorted(folded.items()))
    assert profile.parse_folded(text + "\nnot a stack line\n") == folded


def test_flamegraph_is_valid_deterministic_svg() -> None:
    folded = profile.collapse_perf_script(SCRIPT, NAMES)
    svg = profile.flamegraph_svg(folded, "test <graph>", highlight="sched_yield")
    assert svg == profile.flamegraph_svg(folded, "test <graph>", highlight="sched_yield")
    root = ET.fromstring(svg)  # well-formed XML, title escaped
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text or "" for t in root.iter(f"{ns}title")]
    # one rectangle per distinct frame position: all, python, 3 threads, and their frames (two truncated chains' marks)
    assert len(titles) == 13
    assert any(t.startswith("all (6 samples") for t in titles)
    assert any(t.startswith("consumer_main (3 samples, 50.00%)") for t in titles)
    assert "rgb(120,90,220)" in svg  # the highlighted sched_yield frames
    # widths scale with samples: the root spans the drawing (960 px less 10 px margins)
    rect = root.find(f"{ns}g/{ns}rect")
    assert rect is not None and float(rect.get("width", 0)) == pytest.approx(960 - 20 - 0.5)


def test_timehist_sums_per_thread_of_one_process() -> None:
    text = """\
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
     224.580636 [0000]  python[200]                         0.017      0.000      7.602
     224.588652 [0001]  python[201/200]                     4.005      0.100      4.010
     224.600627 [0001]  python[201/200]                     1.000      2.000      7.985
     224.612628 [0000]  other[300]                          3.996      0.000      8.004
"""
    threads = profile.parse_timehist(text, 200)
    assert [t.tid for t in threads] == [201, 200]
    t = threads[0]
    assert t.runs == 2 and t.run_ms == pytest.approx(11.995)
    assert t.off_cpu_ms == pytest.approx(7.105) and t.longest_off_ms == pytest.approx(4.105)
    assert t.delay_ms == pytest.approx(2.0)


def test_missing_tools_give_reasons_not_exceptions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(profile.sys, "executable", "/nonexistent/python")  # no py-spy beside it either
    assert profile.perf_path() is None
    acc = profile.probe()
    assert acc.perf is None and not acc.sampling and "perf" in acc.summary()
    p = profile.record(["true"])
    assert not p.available and "perf" in p.reason and "py-spy" in p.reason and p.samples == 0
    s = profile.sched(["true"])
    assert not s.available and "perf" in s.reason


def test_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="cmd must be"):
        profile.record("python -c pass")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="frequency"):
        profile.record(["true"], frequency=0)
    with pytest.raises(ValueError, match="tool"):
        profile.record(["true"], tool="gprof")
    with pytest.raises(TypeError, match="code"):
        profile.python_child("")


def test_paranoid_is_read_or_none() -> None:
    p = profile.paranoid()
    assert p is None or isinstance(p, int)


def test_a_real_short_record_where_perf_may_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ~0.3 s child under perf (or py-spy where perf is refused): its
    samples land in the child's own frames, and perf leaves nothing in the
    user's build-id cache (~/.debug).  Skipped where neither works."""
    monkeypatch.setenv("HOME", str(tmp_path))
    code = "import time\nt = time.perf_counter()\nwhile time.perf_counter() - t < 0.3:\n    sum(range(1000))\n"
    p = profile.record(profile.python_child(code), frequency=499)
    if not p.available:
        pytest.skip(p.reason)
    # 0.3 s at 499 Hz is ~150 samples on the main thread; a busy machine delays, never adds
    assert p.samples >= 20, p.reason
    assert all(n > 0 for n in p.folded.values())
    if p.tool == "perf":
        assert profile.share(p.folded, r"^main thread$") > 0.5
        assert p.report  # perf report --stdio printed its table
    svg = profile.flamegraph_svg(p.folded, "child")
    assert ET.fromstring(svg) is not None and re.search(r"samples", svg)
    assert not (tmp_path / ".debug").exists(), "perf filled the build-id cache (perf record without -N)"


def test_pyspy_path_where_installed() -> None:
    """The fallback a learner without perf gets: py-spy's folded stacks."""
    code = "import time\nt = time.perf_counter()\nwhile time.perf_counter() - t < 0.3:\n    sum(range(1000))\n"
    p = profile.record(profile.python_child(code), frequency=199, tool="py-spy")
    if not p.available:
        pytest.skip(p.reason)
    assert p.tool == "py-spy" and p.samples >= 10
    assert profile.share(p.folded, r"<module>") > 0.3  # the child's own Python frame


def test_doctor_reports_perf(monkeypatch: pytest.MonkeyPatch) -> None:
    from lowlat.machine import doctor

    rep = doctor.diagnose()
    perf = dict(rep.facts)["perf"]
    assert "perf_event_paranoid" in perf and ("software events" in perf or perf.startswith("no:"))
    missing = profile.PerfAccess(None, 2, False, reason="perf is not installed")
    monkeypatch.setattr(doctor.profile, "probe", lambda: missing)
    rep = doctor.diagnose()
    assert dict(rep.facts)["perf"].startswith("no: perf is not installed (perf_event_paranoid 2, not root)")
    assert any(n.startswith("No perf:") for n in rep.notes)


def test_record_names_the_pipeline_threads_by_their_c_symbols() -> None:
    import inspect

    names = inspect.signature(profile.record).parameters["thread_names"].default
    header = (Path(__file__).resolve().parents[1] / "csrc" / "pipeline_impl.h").read_text()
    assert names and all(re.search(rf"\b{n}\(", header) for n in names)
