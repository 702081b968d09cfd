"""The learner's command line: ``python -m lowlat {doctor,bench,tour,grade,soak}``.

Author and instructor commands are in the repository's ``tools/``
(``python -m tools --help``).

A user error (a bad argument, a file that is missing, unreadable or not
what it should be) is one line on stderr and exit status 2; ``--debug``
shows the traceback instead.  Ctrl-C stops a command within about a second
with exit status 130, after printing what was measured so far; a soak is
meant to be stopped that way, so there it exits 0 with its summary."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any

# Exit statuses: 2 for a user error (argparse's own), 130 for Ctrl-C (128 + SIGINT).
USER_ERROR, INTERRUPTED = 2, 130


class UserError(Exception):
    """A mistake in how a command was called: reported as one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors as one line (the usage is in --help)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"{message} (see {self.prog} --help)")


def writable_file(path: str, option: str = "--json", others: tuple[Any, ...] = ()) -> Any:
    """``path`` checked as a result file before any work is done
    (:func:`lowlat.core.outfile.check`: a regular file or a new name in a
    writable folder; links written through; not a folder, device, FIFO,
    ``-``, a name too long, nor the same file as ``others``); UserError
    saying why not otherwise.  Nothing is created or opened."""
    from lowlat.core.outfile import OutputPathError, check

    try:
        return check(path, option, distinct_from=others)
    except OutputPathError as exc:
        raise UserError(str(exc)) from None


def _bench(args: argparse.Namespace) -> int:
    from lowlat.bench import format_table, progress_to_stderr, run_all, write_json
    from lowlat.core.stop import Interrupted
    from lowlat.machine import machine_label

    json_out = writable_file(args.json) if args.json is not None else None
    if args.peers is not None:
        return _peers(args, json_out)
    from lowlat.machine.topology import load

    print(f"lowlat bench on {machine_label()}" + (" (quick)" if args.quick else ""), flush=True)
    before = load(0.2)
    try:
        results = run_all(quick=args.quick, progress=progress_to_stderr)
    except Interrupted as exc:
        partial = exc.partial or {}
        if partial:
            print(f"what was measured before the stop ({len(partial)} keys):")
            print(format_table(partial), flush=True)
        if args.json is not None:
            exc.what += f"; {args.json} was not written"
        raise
    print(format_table(results))
    _care(before, load(0.2))
    if json_out is not None:
        write_json(results, json_out)
        print(f"\nwrote {len(results)} keys to {args.json}")
    for failure in results.failures:  # reported, the other steps' results kept and written
        print(f"lowlat bench: {failure.line()}", file=sys.stderr)
    return 1 if results.failures else 0


def _peers(args: argparse.Namespace, json_out: Any) -> int:
    """``bench --peers DIR``: rigtorp's SPSCQueue beside the core (:mod:`lowlat.bench.peers`)."""
    from lowlat.bench import format_table, progress_to_stderr, write_json
    from lowlat.bench.peers import PEER_KEYS, PeerError, find_header, run_peers
    from lowlat.machine import machine_label

    try:
        header = find_header(args.peers)
        print(f"lowlat bench --peers on {machine_label()}: {header}" + (" (quick)" if args.quick else ""), flush=True)
        results = run_peers(str(header), quick=args.quick, progress=progress_to_stderr)
    except PeerError as exc:
        raise UserError(str(exc)) from None
    print(format_table(results, PEER_KEYS))
    if json_out is not None:
        write_json(results, json_out)
        print(f"\nwrote {len(results)} keys to {args.json}")
    return 0


def _care(before: Any, after: Any) -> None:
    """One line naming what about this run can distort its numbers (other
    load before or after it, one usable CPU, a quota), or nothing."""
    from lowlat.method.readings import conditions

    why = conditions(before=before, after=after)
    if why:
        print("\nRead these with care: " + "; ".join(why) + ".")


def _positive(text: str, option: str, *, allow_zero: bool = False) -> float:
    """``text`` as a finite number > 0; UserError (one line) otherwise."""
    try:
        x = float(text)
    except ValueError:
        raise UserError(f"{option} must be a number, got {text!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise UserError(f"{option} must be a positive number, got {text}")
    return x


def _soak(args: argparse.Namespace) -> int:
    minutes = _positive(args.minutes, "--minutes")
    rate = None if args.rate is None else _positive(args.rate, "--rate")
    interval = None if args.interval is None else _positive(args.interval, "--interval")
    from lowlat.core.outfile import OutputPathError
    from lowlat.core.pipeline import PipelineConfig
    from lowlat.experiments.soak import CLI_NAMES, check_args, output_paths, soak

    try:  # every option checked before anything runs or prints
        check_args(minutes, PipelineConfig.rate if rate is None else rate, interval, names=CLI_NAMES)
        json_out, _ = output_paths(args.json, True, names=CLI_NAMES)
    except (ValueError, TypeError, OutputPathError) as exc:
        raise UserError(str(exc)) from None
    report = soak(minutes, rate, interval, json_out.named)
    return 0 if report.lost == 0 else 1


def _doctor(args: argparse.Namespace) -> int:
    from lowlat.machine.doctor import main

    return main()


def _prefetch_line(idle0: float, idle_best: float) -> str:
    """The tour's prefetch sentence, its verb computed from the two idle
    shares (fractions of an epoch, one epoch each): "cut" only where the
    best depth at least halved the idle time, both printed alike."""
    shares = f"from {idle0:.1%} without prefetching to {idle_best:.1%} at its best depth"
    if idle_best <= idle0 / 2:
        return f"prefetching cut a simulated accelerator's idle time {shares}"
    verb = "only trimmed" if idle_best < idle0 else "did not lower"
    return (
        f"prefetching {verb} a simulated accelerator's idle time ({shares}; one epoch each): a busy machine "
        "slows the reads and the step alike, so rerun on a quiet one"
    )


def _tour(args: argparse.Namespace) -> int:
    from lowlat.bench import format_table, progress_to_stderr, run_all
    from lowlat.machine.doctor import diagnose

    rep = diagnose()
    print(rep.format())
    print("\nA short benchmark (python -m lowlat bench for the full one):", flush=True)
    from lowlat.machine.topology import load

    before = load(0.2)
    r = run_all(quick=True, progress=progress_to_stderr)
    print(format_table(r))
    lines = [
        f"the pool's free+alloc on a fragmented heap took {r['pool_frag_ns']:,.1f} ns against malloc's "
        f"{r['malloc_frag_ns']:,.1f} ns ({r['pool_vs_malloc_speedup']:,.1f}x), and its P99.9 {r['pool_p999_ns']:,.0f} ns "
        f"against {r['malloc_p999_ns']:,.0f} ns",
        f"the C ring moved {r['spsc_items_per_s'] / 1e6:,.0f} M items/s between two threads; the same ring from two "
        f"Python threads, in batches, {r['spsc_batch_vs_py_queue']:,.0f}x queue.Queue",
    ]
    if "c2c_one_way_ns" in r:
        lines += [
            f"one cache line took {r['c2c_one_way_ns']:,.0f} ns to go from one core to the other (samples "
            f"{r['c2c_one_way_min_ns']:,.0f}-{r['c2c_one_way_max_ns']:,.0f} ns): the floor under every cross-thread "
            "hand-off",
            f"the whole pipeline's P50 was {r['pipeline_p50_ns']:,.0f} ns on a schedule: "
            f"{r['pipeline_p50_over_floor']:,.2f}x its own floor (one line carrying a due time on the same "
            f"schedule: {r['pipeline_floor_p50_ns']:,.0f} ns), {r['pipeline_p50_over_c2c']:,.1f}x the core-to-core latency",
        ]
    else:
        lines += [
            "core-to-core latency: unavailable, this process has one usable CPU (two threads on one CPU hand a "
            "cache line over only when the scheduler switches them)",
            f"the whole pipeline's P50 was {r['pipeline_p50_ns']:,.0f} ns on a schedule, its two threads sharing one CPU",
        ]
    lines += [
        f"with the source article's closed loop the pipeline's P50 was {r['pipeline_seed_p50_ns'] / 1e3:,.0f} us",
        _prefetch_line(r["prefetch_bubble_fraction_depth0"], r["prefetch_bubble_fraction_best"]),
    ]
    print("\nWhat this run measured, in one line each:")
    print("\n".join(f"  - {line};" for line in lines[:-1]) + f"\n  - {lines[-1]}.")
    _care(before, load(0.2))
    print("\nWhere to go next: run jupyter lab from the repository root, then open chapters/00_start_here.ipynb")
    return 0 if rep.ok else 1


def _not_utf8(path: str) -> str:
    """Where ``path`` first holds a byte that is not UTF-8, as "line L, column C"."""
    data = Path(path).read_bytes()
    try:
        data.decode()
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return f"byte {data[exc.start]:#04x} at line {line}, column {col}"
    return "no such byte in the file itself"


def _grade(args: argparse.Namespace) -> int:
    from lowlat.grading import exercises, grade, report_timing

    known = exercises()
    if args.name not in known:
        raise UserError(f"unknown exercise {args.name!r}; known: {', '.join(sorted(known))}")
    if not os.path.isfile(args.file):
        raise UserError(f"{args.file}: no such file" + (" (it is a folder)" if os.path.isdir(args.file) else ""))
    try:
        report = grade(args.name, args.file, only=args.check or None)
    except UnicodeDecodeError:  # before ValueError, its base class
        raise UserError(
            f"{args.file} holds text that is not UTF-8 ({_not_utf8(args.file)}), and the compiler quoted it: "
            "save the file as UTF-8 (or remove that character) and grade again"
        ) from None
    except (FileNotFoundError, ValueError) as exc:  # ValueError: a --check the exercise does not have
        raise UserError(str(exc)) from None
    report.print()
    if report.ok and known[args.name].timing is not None and not args.no_timing:
        print(report_timing(args.name, args.file))
    # With --check, 0 says the chosen checks passed (the verdict says it is not a grade).
    return 0 if report.all_run_passed else 1


# Author and instructor commands live in the course repository's tools/
# (never in a student release).  Asked for here, they say where they went.
MOVED = {
    "exercises": "python -m tools exercises",
    "notebooks": "python -m tools notebooks",
    "release": "python -m tools release DIR",
    "class-report": "python -m tools class-report REPORT.xml...",
}


def _moved(cmd: str) -> int:
    print(
        f"`python -m lowlat {cmd}` is an author/instructor command: from the course repository's root, run "
        f"`{MOVED[cmd]}` (a student release does not have it; your files were not touched)",
        file=sys.stderr,
    )
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    if argv and argv[0] in MOVED:  # whatever options follow: nothing runs, nothing is touched
        return _moved(argv[0])
    cmd = next((a for a in argv if not a.startswith("-")), "")
    prog = f"python -m lowlat {cmd}".rstrip()
    try:
        return _main(argv)
    except KeyboardInterrupt as exc:  # lowlat.core.stop.Interrupted says what stopped and how far it got
        what = str(exc) if str(exc).startswith("interrupted") else "interrupted (Ctrl-C)"
        print(f"{prog}: {what}", file=sys.stderr)
        if debug:
            raise
        return INTERRUPTED
    except Exception as exc:
        if debug:
            raise
        print(f"{prog}: {_one_line(exc)}", file=sys.stderr)
        return USER_ERROR if _is_user_error(exc) else 1


def _is_user_error(exc: Exception) -> bool:
    from lowlat.core.errors import LowlatError

    return isinstance(exc, (UserError, ValueError, TypeError, OSError, LowlatError))


def _one_line(exc: Exception) -> str:
    """The exception as one line: its message (its type when that says
    more), newlines folded; a hint when it looks like a bug, not a mistake."""
    msg = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, UserError):
        return msg
    if isinstance(exc, OSError) and exc.filename is not None:
        msg = f"{exc.filename}: {exc.strerror or msg}"
    text = f"{type(exc).__name__}: {msg}"
    if not _is_user_error(exc):
        text += " (this looks like a bug: run again with --debug and report the traceback)"
    return text


def _main(argv: list[str]) -> int:
    p = _Parser(prog="python -m lowlat", description="lowlat: low-latency engineering, measured here.")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error (anywhere on the line)")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("doctor", help="what this machine can show (compiler, CPUs, pinning, counters, timers)")
    b = sub.add_parser("bench", help="run every benchmark, print a table, optionally write JSON")
    b.add_argument(
        "--quick", action="store_true", help="fewer repetitions and items (about 10 s instead of about 50 s on 2 cores)"
    )
    b.add_argument("--json", metavar="FILE", help="write the results as one flat JSON object")
    b.add_argument(
        "--peers",
        metavar="DIR",
        help="instead: compare the core's ring with rigtorp's SPSCQueue from your clone DIR (needs a C++17 compiler)",
    )
    sub.add_parser("tour", help="doctor + a quick bench + where to go next")
    g = sub.add_parser("grade", help="grade one exercise file: a PASS/FAIL line per check and a verdict")
    g.add_argument("name", help="the exercise (e.g. mpmc)")
    g.add_argument("file", help="your file (e.g. exercises/03_spsc/mpmc/mpmc.c)")
    g.add_argument("--no-timing", action="store_true", help="skip the (ungraded) timing run")
    g.add_argument(
        "--check",
        action="append",
        metavar="ID",
        help="run only this check (repeatable): quicker while working on one; the verdict is then not a grade",
    )
    s = sub.add_parser(
        "soak",
        help="run the pipeline for minutes, a progress line per interval, JSON and a drift plot",
        description=(
            "Runs the pipeline as ONE open-loop run for MINUTES, closing an interval every S seconds: per interval "
            "P50/P99/max latency (us, from each tick's due time), RSS (MiB), drops and the ring's high-watermark, "
            "as a progress line and in the JSON (rewritten after every interval). At the end: a summary and the "
            "drift plot (PNG next to the JSON). Ctrl-C stops it cleanly: exit 0, the summary so far, the JSON "
            "written."
        ),
    )
    s.add_argument("--minutes", default="10", metavar="N", help="how long, minutes (a float: 0.2 is 12 s; default 10)")
    s.add_argument(
        "--rate", metavar="R", help="ticks per second on the open-loop schedule (default the pipeline's, 200,000)"
    )
    s.add_argument(
        "--interval", metavar="S", help="seconds per progress line (default 10, or a tenth of a shorter soak)"
    )
    s.add_argument("--json", metavar="FILE", help="where the JSON goes (default ./soak-YYYYmmdd-HHMMSS.json)")
    for name in MOVED:  # listed in --help; handled above
        sub.add_parser(name, help=f"authors/instructors: moved to `{MOVED[name]}`")
    args = p.parse_args(argv)
    handlers = {"doctor": _doctor, "bench": _bench, "tour": _tour, "grade": _grade, "soak": _soak}
    return handlers[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
