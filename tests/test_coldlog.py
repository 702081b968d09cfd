"""The cold path (lowlat.core.logring, csrc/logring.c, csrc/bench/bench_log.c):
nothing is lost silently (logged = written + dropped, the file holds exactly
the lines counted as written, each parses, ids increase), a tiny ring drops
and counts instead of blocking, arguments are refused before they reach C,
and the ring and its writer are clean under ThreadSanitizer.  No test
asserts a time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_sanitized
from lowlat.core import logring as cl
from lowlat.core import toolchain
from lowlat.core.affinity import usable_cpus
from lowlat.experiments import async_logging as al


def _no_loss(r: al.LogRun) -> None:
    assert r.logged == r.written + r.dropped + r.failed, r
    assert r.lines == r.written, r
    assert r.failed == 0, r
    assert r.accounted


@pytest.mark.parametrize("mode", ["none", "sync", "async"])
def test_every_mode_accounts_for_every_event(mode: str) -> None:
    r = al.run(mode, events=5_000, rate=0, verify=True)
    assert r.events == 5_000 and r.hist.count == 5_000
    _no_loss(r)
    assert r.file is not None and r.file.parsed and r.file.increasing, r.file
    if mode == "none":
        assert r.logged == 0 and r.lines == 0
    else:
        assert r.logged == 5_000
    if mode == "sync":
        assert r.written == 5_000 and r.dropped == 0
        assert r.file.seqs == list(range(5_000))


def test_async_at_a_fixed_rate_writes_records_intact_and_in_order() -> None:
    r = al.run("async", events=10_000, rate=200_000.0, verify=True)
    _no_loss(r)
    assert r.file is not None and r.file.parsed and r.file.increasing
    assert r.file.lines == r.written
    # the ids written are a subset of 0..N-1 in order; the missing ones were dropped and counted
    assert len(set(r.file.seqs)) == r.written and max(r.file.seqs) < 10_000
    assert r.dropped == 10_000 - r.written


def test_a_tiny_ring_drops_counts_and_never_blocks() -> None:
    """A ring of 2 behind a writer slowed to 1 ms per batch, events back to
    back: most records are dropped, every one counted, and the run ends (a
    hot path that waited for the writer would take ~N ms)."""
    events = 20_000
    r = al.run("async", events=events, rate=0, capacity=2, writer_delay_ns=1_000_000, verify=True)
    _no_loss(r)
    assert r.dropped > 0 and r.logged == events
    assert r.file is not None and r.file.parsed and r.file.increasing
    assert r.max_fill <= 2


def test_tiny_ring_run_finishes_in_a_child_process() -> None:
    """No deadlock: the tiny-ring run, in a child process with a timeout
    (generous: a busy machine), reports drops and exits."""
    code = (
        "from lowlat.experiments import async_logging as al\n"
        "r = al.run('async', events=50_000, rate=0, capacity=4, writer_delay_ns=200_000)\n"
        "print('OK', r.accounted, r.dropped > 0)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "OK True True"


def test_async_log_from_python(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    with cl.AsyncLog(path, capacity=1024) as log:
        took = [log.log(i, -i, "hello") for i in range(500)]
    st = log.stats()
    assert st.logged == 500 and st.lost == 0 and st.failed == 0
    assert st.written == sum(took) and st.dropped == 500 - sum(took)
    f = cl.read_log(path, "hello")
    assert f.parsed and f.increasing and f.lines == st.written
    assert log.close() == st  # idempotent
    with pytest.raises(ValueError, match="closed"):
        log.log(1)


def test_async_log_to_a_callers_fd_leaves_it_open(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "x.txt", os.O_WRONLY | os.O_CREAT)
    try:
        log = cl.AsyncLog(fd, capacity=64, writer_delay_ns=0)
        log.log(7, 2**63 - 1, "edge")
        log.log(8, -(2**63), "")
        st = log.close()
        assert st.written == 2 and st.lost == 0
        os.fstat(fd)  # still open
    finally:
        os.close(fd)
    lines = (tmp_path / "x.txt").read_text().splitlines()
    assert lines[0].split(" ")[0::2] == ["7", str(2**63 - 1)] and lines[0].endswith(" edge")
    assert lines[1].split(" ")[2] == str(-(2**63))


def test_control_characters_never_split_a_line(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    with cl.AsyncLog(path, capacity=8) as log:
        log.log(1, 0, "two\nlines")
    assert path.read_text().count("\n") == 1 and "two?lines" in path.read_text()


def test_read_log_finds_a_bad_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.txt"
    p.write_text("1 2 3 ok\n2 x 3 ok\n")
    f = cl.read_log(p)
    assert not f.parsed and f.first_bad == "2 x 3 ok" and f.lines == 2
    p.write_text("1 2 3 ok\n1 2 3 ok\n")
    assert not cl.read_log(p).increasing
    p.write_text("1 2 3 ok")
    assert not cl.read_log(p).parsed


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"capacity": 3}, ValueError, "power of two"),
        ({"capacity": 0}, ValueError, "power of two"),
        ({"capacity": 2.0}, TypeError, "integer"),
        ({"capacity": 1 << 25}, ValueError, "<="),
        ({"events": 0}, ValueError, "events"),
        ({"rate": -1.0}, ValueError, "rate"),
        ({"rate": float("nan")}, ValueError, "rate"),
        ({"rate": "fast"}, TypeError, "rate"),
        ({"idle_ns": -1}, ValueError, "idle_ns"),
        ({"cpus": (0,)}, TypeError, "cpus"),
        ({"cpus": (0, 4096)}, ValueError, "cpu"),
        ({"directory": "/nonexistent/dir"}, ValueError, "does not exist"),
    ],
)
def test_run_refuses_bad_arguments(kwargs: dict, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        al.run("async", **kwargs)


def test_bad_mode_and_bad_targets(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode"):
        al.run("fprintf")
    with pytest.raises(ValueError, match="mode"):
        al.compare(1, ("sync", "nope"))
    with pytest.raises(ValueError, match="not a file descriptor open for writing"):
        cl.AsyncLog(987_654)
    fd = os.open(tmp_path / "ro.txt", os.O_RDONLY | os.O_CREAT)
    try:
        with pytest.raises(ValueError, match="open for writing"):
            cl.AsyncLog(fd)
    finally:
        os.close(fd)
    with pytest.raises(ValueError, match="-1"):
        cl.AsyncLog(-1)
    with pytest.raises(TypeError, match="path or a file descriptor"):
        cl.AsyncLog(3.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="is a folder; give a file name in it"):
        cl.AsyncLog(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        cl.AsyncLog(tmp_path / "no" / "such.txt")
    with cl.AsyncLog(tmp_path / "ok.txt", capacity=2) as log:
        with pytest.raises(ValueError, match="at most 39"):
            log.log(1, 0, "x" * 40)
        with pytest.raises(TypeError, match="integer"):
            log.log(1.5)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="seq"):
            log.log(-1)


@pytest.mark.skipif(len(usable_cpus()) >= 2, reason="the one-CPU refusal needs one usable CPU")
def test_one_cpu_refuses_a_yielding_writer() -> None:
    with pytest.raises(ValueError, match="one usable CPU"):
        al.run("async", events=10, idle_ns=0)


def test_bench_keys_quick() -> None:
    keys = al.bench_keys(quick=True)
    assert set(keys) == {"log_sync_p99_ns", "log_async_p99_ns", "log_async_dropped"}
    assert all(isinstance(v, float) for v in keys.values())
    assert keys["log_sync_p99_ns"] > 0 and keys["log_async_p99_ns"] > 0 and keys["log_async_dropped"] >= 0


# The stress harness needs only these sources of the core (linking them
# alone keeps the sanitizer build to a few seconds instead of the whole core's ~15 s).
STRESS_SOURCES = ["logring.c", "bench/bench_log.c", "spsc.c", "hist.c", "clock.c", "affinity.c", "stop.c"]


@pytest.mark.slow
def test_log_ring_and_writer_under_thread_sanitizer(cc: str, tmp_path: Path) -> None:
    """A roomy ring, a retrying producer (every record through the ring), a
    ring of 2 behind a slowed writer, a yielding writer, a thread reading the
    counters meanwhile, and the benchmark loop in every mode: nothing lost,
    files intact, no race."""
    exe = tmp_path / "log_stress"
    sources = [ROOT / "tests/c/log_stress.c", *(toolchain.CSRC / s for s in STRESS_SOURCES)]
    res = toolchain.compile_c(sources, exe, sanitizer="thread", werror=True, cc=cc)
    if res.returncode != 0:
        pytest.fail(f"compiling log_stress.c failed:\n{res.stdout}{res.stderr}")
    res = run_sanitized(exe, ["30000"], "thread", timeout=300)
    out = res.stdout + res.stderr
    assert "ThreadSanitizer" not in out, out[-4000:]
    assert res.returncode == 0, out[-4000:]
    assert "OK: 0 errors" in res.stdout


def test_a_forgotten_log_is_drained_and_its_file_closed(tmp_path: Path) -> None:
    import gc

    path = tmp_path / "forgotten.txt"
    log = cl.AsyncLog(path, capacity=64)
    log.log(1, 2, "kept")
    fd = log._owned_fd
    del log
    gc.collect()
    assert path.read_text().endswith(" kept\n") and path.read_text().count("\n") == 1
    link = Path(f"/proc/self/fd/{fd}")  # Linux: the descriptor no longer names the file (its number may be reused)
    if link.parent.is_dir():
        assert not (link.exists() and os.readlink(link) == str(path))
