"""The learner's command line: ``python -m lowlat {doctor,bench,tour,grade}``.

Author and instructor commands are in the repository's ``tools/``
(``python -m tools --help``)."""

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
    from lowlat.grading import exercises, grade, report_timing

    known = exercises()
    if args.name not in known:
        print(f"unknown exercise {args.name!r}; known: {', '.join(sorted(known))}", file=sys.stderr)
        return 2
    try:
        report = grade(args.name, args.file)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 2
    report.print()
    if report.ok and known[args.name].timing is not None and not args.no_timing:
        print(report_timing(args.name, args.file))
    return 0 if report.ok else 1


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
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in MOVED:  # whatever options follow: nothing runs, nothing is touched
        return _moved(argv[0])
    p = argparse.ArgumentParser(prog="python -m lowlat", description="lowlat: low-latency engineering, measured here.")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("doctor", help="what this machine can show (compiler, CPUs, pinning, counters, timers)")
    b = sub.add_parser("bench", help="run every benchmark, print a table, optionally write JSON")
    b.add_argument("--quick", action="store_true", help="fewer repetitions and items (~20 s instead of ~1 min)")
    b.add_argument("--json", metavar="FILE", help="write the results as one flat JSON object")
    sub.add_parser("tour", help="doctor + a quick bench + where to go next")
    g = sub.add_parser("grade", help="grade one exercise file: a PASS/FAIL line per check and a verdict")
    g.add_argument("name", help="the exercise (e.g. mpmc)")
    g.add_argument("file", help="your file (e.g. exercises/03_spsc/mpmc/mpmc.c)")
    g.add_argument("--no-timing", action="store_true", help="skip the (ungraded) timing run")
    for name in MOVED:  # listed in --help; handled above
        sub.add_parser(name, help=f"authors/instructors: moved to `{MOVED[name]}`")
    args = p.parse_args(argv)
    handlers = {"doctor": _doctor, "bench": _bench, "tour": _tour, "grade": _grade}
    return handlers[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
