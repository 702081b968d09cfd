"""Command line: ``python -m lowlat {doctor,bench,tour}``."""

from __future__ import annotations

import argparse
import sys


def _bench(args: argparse.Namespace) -> int:
    from lowlat.bench import format_table, progress_to_stderr, run_all, write_json
    from lowlat.machine import machine_label

    print(f"lowlat bench on {machine_label()}" + (" (quick)" if args.quick else ""), flush=True)
    results = run_all(quick=args.quick, progress=progress_to_stderr)
    print(format_table(results))
    if args.json:
        write_json(results, args.json)
        print(f"\nwrote {len(results)} keys to {args.json}")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from lowlat.doctor import main

    return main()


def _tour(args: argparse.Namespace) -> int:
    from lowlat.bench import format_table, progress_to_stderr, run_all
    from lowlat.doctor import diagnose

    rep = diagnose()
    print(rep.format())
    print("\nA short benchmark (python -m lowlat bench for the full one):", flush=True)
    r = run_all(quick=True, progress=progress_to_stderr)
    print(format_table(r))
    print(
        "\nWhat these say, in one line each:\n"
        f"  - the pool's free+alloc on a fragmented heap is {r['pool_vs_malloc_speedup']:.0f}x faster than malloc's, "
        f"and its P99.9 is {r['pool_p999_ns']:.0f} ns against {r['malloc_p999_ns']:.0f} ns;\n"
        f"  - the C ring moves {r['spsc_items_per_s'] / 1e6:.0f} M items/s between two threads; the same ring from two "
        f"Python threads, in batches, {r['spsc_batch_vs_py_queue']:.0f}x queue.Queue;\n"
        f"  - one cache line takes {r['c2c_one_way_ns']:.0f} ns to go from one core to the other: the floor under "
        "every cross-thread hand-off;\n"
        f"  - the whole pipeline's P50 is {r['pipeline_p50_ns']:.0f} ns on a schedule, {r['pipeline_p50_over_c2c']:.1f}x "
        f"that floor, and {r['pipeline_seed_p50_ns'] / 1e3:.0f} us with the source article's closed loop (queueing);\n"
        f"  - prefetching cut a simulated accelerator's idle time from {r['prefetch_bubble_fraction_depth0']:.0%} "
        f"to {r['prefetch_bubble_fraction_best']:.1%} of an epoch.\n"
        "\nWhere to go next: jupyter lab chapters/"
    )
    return 0 if rep.ok else 1


def _grade(args: argparse.Namespace) -> int:
    from lowlat.grading import EXERCISES, grade, report_timing

    if args.name not in EXERCISES:
        print(f"unknown exercise {args.name!r}; known: {', '.join(sorted(EXERCISES))}", file=sys.stderr)
        return 2
    try:
        report = grade(args.name, args.file)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 2
    report.print()
    if report.ok and EXERCISES[args.name].timing is not None and not args.no_timing:
        print(report_timing(args.name, args.file))
    return 0 if report.ok else 1


def _exercises(args: argparse.Namespace) -> int:
    from lowlat import authoring

    if args.check:
        problems = authoring.check()
        for p in problems:
            print(p)
        if problems:
            print("exercises/ is out of date: run `python -m lowlat exercises` to regenerate it from solutions/")
            return 1
        print("exercises/ is up to date with solutions/")
        return 0
    written = authoring.write()
    print(f"regenerated exercises/ from solutions/ ({len(written)} files changed)")
    return 0


def _notebooks(args: argparse.Namespace) -> int:
    from pathlib import Path

    from lowlat import notebooks

    paths = [Path(p) for p in args.paths] or notebooks.all_notebooks()
    bad = 0
    for p in paths:
        if args.check:
            found = notebooks.problems(p)
            for f in found:
                print(f"{p}: {f}")
            bad += bool(found)
        else:
            print(f"{p}: executed in {notebooks.execute(p.resolve()):.1f} s", flush=True)
    if args.check:
        print(f"{len(paths) - bad} of {len(paths)} notebooks are clean")
    return 1 if bad else 0


def _release(args: argparse.Namespace) -> int:
    from lowlat.classroom import release

    files = release(args.dest)
    print(f"wrote a student release ({len(files)} files, no solutions/) to {args.dest}")
    return 0


def _class_report(args: argparse.Namespace) -> int:
    from lowlat.classroom import class_report

    print(class_report(args.reports).table())
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lowlat", description="lowlat: low-latency engineering, measured here.")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("doctor", help="what this machine can show (compiler, CPUs, pinning, counters, timers)")
    b = sub.add_parser("bench", help="run every benchmark, print a table, optionally write JSON")
    b.add_argument("--quick", action="store_true", help="fewer repetitions and items (~20 s instead of ~1 min)")
    b.add_argument("--json", metavar="FILE", help="write the results as one flat JSON object")
    sub.add_parser("tour", help="doctor + a quick bench + where to go next")
    g = sub.add_parser("grade", help="grade one exercise file: a PASS/FAIL line per check and a verdict")
    g.add_argument("name", help="the exercise (e.g. mpmc)")
    g.add_argument("file", help="your file (e.g. exercises/03_spsc/mpmc.c)")
    g.add_argument("--no-timing", action="store_true", help="skip the (ungraded) timing run")
    e = sub.add_parser("exercises", help="regenerate exercises/ from solutions/ (authors)")
    e.add_argument("--check", action="store_true", help="only report whether exercises/ is up to date")
    n = sub.add_parser("notebooks", help="re-execute notebooks in place and normalise them (authors)")
    n.add_argument("paths", nargs="*", help="notebooks (default: every one in chapters/, exercises/, solutions/)")
    n.add_argument("--check", action="store_true", help="only check the committed notebooks")
    r = sub.add_parser("release", help="instructors: copy the course without solutions/ into DEST")
    r.add_argument("dest")
    c = sub.add_parser("class-report", help="instructors: a students x exercises table from JUnit XML reports")
    c.add_argument("reports", nargs="+", help="one report per student, e.g. reports/alice.xml")
    args = p.parse_args(argv)
    handler = {"doctor": _doctor, "bench": _bench, "tour": _tour, "grade": _grade, "exercises": _exercises,
               "notebooks": _notebooks, "release": _release, "class-report": _class_report}[args.cmd]
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
