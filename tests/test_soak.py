"""Live monitoring of the pipeline and the soak: counters read while it runs
are monotone and add up, interval cuts cover every tick, the alert fires
under overload and stays silent at a low rate, and a soak (the CLI, and
in-process) writes its JSON, also when Ctrl-C stops it, leaving no thread.
No fixed times: only counts, invariants and exit statuses."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lowlat.__main__ import main
from lowlat.experiments import pipeline as pl
from lowlat.experiments import soak as sk

ROOT = Path(__file__).resolve().parent.parent
FIELDS = {"t_s", "ticks", "p50_us", "p99_us", "max_us", "rss_mib", "dropped", "dropped_total", "watermark"}


def _threads() -> int:
    """This process's OS threads (the C pipeline's included), or Python's where /proc is missing."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def test_live_snapshots_are_monotone_and_add_up_and_cuts_cover_every_tick() -> None:
    before = _threads()
    # A small ring and drops when full: every counter moves.
    cfg = pl.best_config(ticks=60_000, rate=200_000)
    run = pl.start(cfg, intervals=True, capacity=64, when_full="drop", work_ns=(0, 10_000, 0, 0), sample_capacity=0)
    snaps, cuts = [], []
    while True:
        s = run.snapshot()
        snaps.append(s)
        assert s.in_flight >= 0 and 0 <= s.watermark <= s.capacity == 64
        if not s.running:
            break
        time.sleep(0.005)
        if len(snaps) % 10 == 0:
            cuts.append(run.cut())
    res = run.join()
    cuts.append(run.cut())  # the interval still open at the end
    for a, b in itertools.pairwise(snaps):
        for f in ("produced", "consumed", "dropped_full", "dropped_pool", "watermark"):
            assert getattr(b, f) >= getattr(a, f), f"{f} went down: {a} then {b}"
    end = run.snapshot()
    assert not end.running and end.in_flight == 0
    assert (end.produced, end.consumed, end.dropped) == (
        res.produced,
        res.consumed,
        res.dropped_full + res.dropped_pool,
    )
    assert res.lost == 0 and res.produced == 60_000 and res.dropped_full > 0  # the consumer cannot keep up
    assert sum(c.latency.count for c in cuts) == res.consumed == res.intended.count
    assert max(c.watermark for c in cuts) == 64  # full, and said so exactly
    assert run.cut().latency.count == 0  # nothing is counted twice
    assert _threads() == before


def test_stop_ends_a_background_run_longer_than_run_allows() -> None:
    before = _threads()
    long = pl.best_config(ticks=1_000, rate=100_000)
    with pytest.raises(ValueError, match="at most 600 s"):
        pl.run(long, ticks=1_000_000, rate=1_000)  # 1,000 s: too long for run()
    with pytest.raises(ValueError, match="set sample_capacity"):
        pl.start(long, ticks=10**9)  # one sample per tick would not fit
    with pl.start(long, ticks=10**9, sample_capacity=0) as run:
        time.sleep(0.2)
        assert run.snapshot().running
    res = run.join()  # the with block stopped and joined it
    assert res.interrupted and res.lost == 0 and 0 < res.produced < 10**9
    assert not run.snapshot().running and _threads() == before
    with pytest.raises(ValueError, match="intervals=True"):
        run.cut()
    forgotten = pl.start(long, ticks=10**9, sample_capacity=0, intervals=True)
    del forgotten  # never joined: its threads are stopped and joined before its buffers go
    assert _threads() == before


def test_alert_fires_under_overload_and_is_silent_at_a_low_rate() -> None:
    # The consumer does 20 us per tick (50,000/s at most): 200,000/s overloads it whatever the machine.
    with pl.start(sk.alert_config(sk.OVERLOAD_RATE, 0.5), intervals=True) as over:
        hot = sk.watch(over, poll_s=0.05)
    assert hot.fired and hot.spans and hot.last is not None and hot.last.dropped > 0
    assert "FIRING" in hot.report()
    # 2,000/s is 4% of it: the ring reaches 80% only if the consumer stops for 0.4 s.
    with pl.start(sk.alert_config(sk.NORMAL_RATE, 1.0), intervals=True) as calm:
        quiet = sk.watch(calm, poll_s=0.05)
    assert not quiet.fired, quiet.report()
    assert quiet.last is not None and quiet.last.dropped == 0 and "SILENT" in quiet.report()
    assert len(quiet.windows) >= 5


def test_soak_cli_runs_writes_json_and_stops_cleanly_on_sigint(tmp_path: Path) -> None:
    """Two soaks at once: ``--minutes 0.1`` to the end, and one stopped by
    SIGINT after its first progress line (exit 0, summary, partial JSON)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "lowlat", "soak"]
    full_json, cut_json = tmp_path / "full.json", tmp_path / "cut.json"

    def popen(args: list[str]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            cmd + args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=tmp_path,
            restore_signals=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background job may ignore it
        )

    full = popen(["--minutes", "0.1", "--json", str(full_json)])
    cut = popen(["--minutes", "1", "--rate", "20000", "--interval", "0.5", "--json", str(cut_json)])
    assert cut.stdout is not None
    lines = [cut.stdout.readline() for _ in range(2)]  # the header, then the first interval
    assert lines[1].startswith("["), lines
    cut.send_signal(signal.SIGINT)
    out_cut = "".join(lines) + cut.communicate(timeout=60)[0]
    out_full = full.communicate(timeout=120)[0]

    assert cut.returncode == 0, out_cut
    assert "soak stopped by Ctrl-C" in out_cut and "0 lost" in out_cut
    d = json.loads(cut_json.read_text())
    assert d["interrupted"] and d["intervals"] and d["intervals"][-1]["partial"] and d["lost"] == 0
    assert d["summary"]["elapsed_s"] < 60 and cut_json.with_suffix(".png").is_file()

    assert full.returncode == 0, out_full
    assert "soak complete" in out_full and f"to {full_json}" in out_full
    d = json.loads(full_json.read_text())
    assert not d["interrupted"] and d["minutes"] == 0.1 and d["interval_s"] == pytest.approx(0.6)
    assert len(d["intervals"]) >= 9 and all(set(iv) >= FIELDS for iv in d["intervals"])
    assert d["lost"] == 0 and d["consumed"] + d["dropped"] == d["produced"] == round(0.1 * 60 * 200_000)
    assert sum(iv["ticks"] for iv in d["intervals"]) == d["consumed"]
    assert d["intervals"][-1]["dropped_total"] == d["dropped"]
    assert {"p99_drift", "rss_growth_mib", "dropped"} <= set(d["summary"])
    assert full_json.with_suffix(".png").stat().st_size > 1000


def test_soak_in_process_stopped_by_ctrl_c_joins_its_run(tmp_path: Path) -> None:
    before = _threads()
    lines: list[str] = []

    def out(line: str) -> None:
        lines.append(line)
        if line.startswith("[") and len(lines) == 3:
            raise KeyboardInterrupt  # as Ctrl-C would, in the monitor's loop

    rep = sk.soak(0.5, rate=20_000, interval_s=0.3, json_path=tmp_path / "s.json", plot=False, out=out)
    assert rep.interrupted and rep.lost == 0 and rep.produced == rep.consumed + rep.dropped
    assert _threads() == before  # the C threads were stopped and joined
    d = json.loads((tmp_path / "s.json").read_text())
    assert d["interrupted"] and len(d["intervals"]) == len(rep.intervals) >= 2
    assert any(line.startswith("soak stopped by Ctrl-C") for line in lines)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--minutes", "-1"], "--minutes must be a positive number, got -1"),
        (["--minutes", "0"], "--minutes must be a positive number"),
        (["--minutes", "ten"], "--minutes must be a number, got 'ten'"),
        (["--minutes", "0.1", "--rate", "0"], "--rate must be a positive number, got 0"),
        (["--minutes", "0.1", "--rate", "-5"], "--rate must be a positive number"),
        (["--minutes", "0.1", "--interval", "100"], "longer than the soak"),
        (["--minutes", "0.1", "--json", "/no/such/folder/x.json"], "does not exist"),
    ],
)
def test_soak_bad_arguments_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["soak", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("python -m lowlat soak: ")


# ---- every parameter checked where it enters (issue 28) --------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["--minutes", "1e9"], "--minutes must be in \\(0, 10080\\] minutes \\(at most a week\\), got 1e\\+09"),
        (["--minutes", "0.01", "--rate", "1e-300"], "--rate must be in \\[1, 1e\\+09\\] ticks per second"),
        (["--minutes", "0.01", "--rate", "2e9"], "--rate must be in \\[1, 1e\\+09\\]"),
        (["--minutes", "10000", "--rate", "1e9"], "ticks; at most 10,000,000,000,000 in one run"),
        (["--minutes", "0.1", "--interval", "0.001"], "--interval must be at least 0.05 s"),
        (["--minutes", "0.1", "--json", "-"], "--json '-' is not supported"),
        (["--minutes", "0.1", "--json", "/dev/null"], "--json /dev/null is a device"),
        (["--minutes", "0.1", "--json", "x" * 300 + ".json"], "longer than the"),
    ],
)
def test_soak_out_of_range_options_exit_2_before_printing(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["soak", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("python -m lowlat soak: ")
    assert re.search(message, captured.err), captured.err


def test_soak_cli_refuses_a_fifo_json_and_a_plot_that_would_be_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert main(["soak", "--minutes", "0.1", "--json", str(fifo)]) == 2
    assert "is a FIFO" in capsys.readouterr().err
    # x.json's plot would be x.png: a link x.png -> x.json makes them one file
    (tmp_path / "x.json").write_text("{}")
    (tmp_path / "x.png").symlink_to(tmp_path / "x.json")
    assert main(["soak", "--minutes", "0.1", "--json", str(tmp_path / "x.json")]) == 2
    assert "is the same file as --json" in capsys.readouterr().err
    assert (tmp_path / "x.json").read_text() == "{}"


def test_plot_path_never_is_the_json() -> None:
    assert sk.plot_path("r.json") == Path("r.png")
    assert sk.plot_path("result.png") == Path("result-drift.png")
    assert sk.plot_path("a/b.PNG") == Path("a/b-drift.png")
    assert sk.plot_path("noext") == Path("noext.png")


@pytest.mark.parametrize(
    "call, exc, message",
    [
        (lambda: sk.soak(json_path=5), TypeError, "json_path must be a path \\(str or os.PathLike\\), got int 5"),
        (lambda: sk.soak(config="best"), TypeError, "config must be a PipelineConfig .* got str"),
        (lambda: sk.soak(float("nan")), ValueError, "minutes must be a finite number, got nan"),
        (lambda: sk.soak("1"), TypeError, "minutes must be a number, got str"),
        (lambda: sk.soak(1e9), ValueError, "minutes must be in \\(0, 10080\\]"),
        (lambda: sk.soak(0.1, rate=1e-290), ValueError, "rate must be in \\[1, 1e\\+09\\]"),
        (lambda: sk.soak(0.1, rate=True), TypeError, "rate must be a number, got bool"),
        (lambda: sk.soak(0.1, interval_s=-1), ValueError, "interval_s must be at least 0.05 s"),
        (lambda: sk.soak(0.1, interval_s=600), ValueError, "interval_s 600 s is longer than the soak"),
        (lambda: sk.soak(0.1, plot="yes"), TypeError, "plot must be True or False"),
        (lambda: sk.soak(0.1, out=5), TypeError, "out must be callable"),
        (lambda: sk.soak(0.1, json_path="-"), ValueError, "json_path '-' is not supported"),
        (lambda: sk.AlertRule().reasons(0, 5, 0), ValueError, "capacity must be >= 1, got 0"),
        (lambda: sk.AlertRule().reasons(-1, 5, 10), ValueError, "dropped must be >= 0, got -1"),
        (lambda: sk.AlertRule().reasons(0, 11, 10), ValueError, "watermark must be <= 10, got 11"),
        (lambda: sk.AlertRule().reasons(0, 1.5, 10), TypeError, "watermark must be an integer"),
        (lambda: sk.AlertRule(max_fraction=2), ValueError, "max_fraction must be in \\(0, 1\\]"),
        (lambda: sk.AlertRule(max_fraction="x"), TypeError, "max_fraction must be a number"),
        (lambda: sk.alert_config(1e-300, 1), ValueError, "rate"),
        (lambda: sk.alert_config(1000, float("inf")), ValueError, "seconds must be a finite number"),
        (lambda: sk.watch(None), TypeError, "running must be a Running"),
    ],
)
def test_soak_and_alert_parameters_are_checked_where_they_enter(call: object, exc: type, message: str) -> None:
    with pytest.raises(exc, match=message) as info:
        call()  # type: ignore[operator]
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("rate", [1e-300, 1e-290, 0.5])
def test_the_pipeline_refuses_a_rate_below_one_tick_a_second(rate: float) -> None:
    with pytest.raises(ValueError, match="rate must be in \\[1, 1e\\+09\\]|would run .* s; at most"):
        pl.start(pl.best_config(ticks=10), rate=rate, sample_capacity=0)


def test_a_background_schedule_is_bounded_so_due_times_fit_in_uint64() -> None:
    from lowlat.core.pipeline import MAX_SCHEDULE_S

    with pytest.raises(ValueError, match=f"at most {MAX_SCHEDULE_S:,.0f} s is allowed"):
        pl.start(pl.best_config(ticks=10), ticks=10**9, rate=1, sample_capacity=0)


def test_a_short_soak_named_png_keeps_its_json_and_writes_the_plot_apart(tmp_path: Path) -> None:
    lines: list[str] = []
    rep = sk.soak(0.01, rate=2_000, interval_s=0.2, json_path=tmp_path / "result.png", out=lines.append)
    d = json.loads((tmp_path / "result.png").read_text())  # the JSON survived
    assert d["png_path"] == str(tmp_path / "result-drift.png") == rep.png_path
    assert (tmp_path / "result-drift.png").read_bytes()[:4] == b"\x89PNG"
    assert "so the plot goes to" in lines[0]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_summary_medians_are_of_complete_intervals_only() -> None:
    """The summary's medians are true medians (an even count averages the
    middle two) of the complete intervals; a partial one is read apart."""
    from lowlat.experiments.soak_report import SoakReport, rss_change

    def iv(t: float, p99: float, partial: bool = False) -> dict:
        return dict(
            t_s=t,
            ticks=10,
            p50_us=1.0,
            p99_us=p99,
            max_us=p99,
            rss_mib=100.0 + t / 100,
            watermark=1,
            watermark_fraction=0.01,
            alert=False,
            partial=partial,
        )

    rep = SoakReport(1.0, 1000.0, 10.0, "cfg", "m", "now", "statm")
    rep.intervals = [iv(10, 10.0), iv(20, 20.0), iv(30, 30.0), iv(40, 40.0), iv(41, 5000.0, partial=True)]
    s = rep.summary()
    assert s["p99_median_us"] == 25.0 and s["p99_last_us"] == 40.0
    assert rss_change(rep.intervals[:4]) == "+0.30 MiB over 0.5 min"
