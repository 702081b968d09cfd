"""Author and instructor commands: ``python -m tools COMMAND`` from the
repository root.  ``python -m tools --help`` lists them.  An error is one
line on stderr (exit 2 for a mistake in the call or its files, 1 otherwise;
``--debug`` shows the traceback); Ctrl-C exits 130."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tools import authoring, indexes, notebooks, readme


def _exercises(args: argparse.Namespace) -> int:
    if args.check:
        problems = indexes.check(authoring.ROOT) + authoring.check()
        for p in problems:
            print(p)
        if problems:
            print("exercises/ is out of date: run `python -m tools exercises` to regenerate it from solutions/")
            return 1
        print("exercises/ and the exercise tables are up to date with solutions/")
        return 0
    for path in indexes.write(authoring.ROOT):  # first: solutions/ READMEs are copied into exercises/
        print(f"  rewrote the exercise table in {path.relative_to(authoring.ROOT)}")
    written = authoring.write(force=args.force)
    print(f"regenerated exercises/ from solutions/ ({len(written)} {'file' if len(written) == 1 else 'files'} changed)")
    for path in written:
        print(f"  wrote {path.relative_to(authoring.ROOT)}")
    return 0


def _new_exercise(args: argparse.Namespace) -> int:
    from tools.scaffold import new_exercise

    lang = {"python": "py"}.get(args.lang, args.lang)
    files = new_exercise(authoring.ROOT, args.chapter, args.name, lang, title=args.title or "", minutes=args.minutes)
    folder = files[0].parent.relative_to(authoring.ROOT)
    print(f"wrote {folder}/ ({', '.join(f.name for f in files)})")
    print("next: python -m tools exercises (the tables and exercises/), then replace the placeholder task,")
    print(f"      file and checks, then python -m tools sync (executes {folder}/{args.name}.ipynb)")
    return 0


def _lessons(args: argparse.Namespace) -> int:
    from tools import lessons

    reports = [lessons.report(p) for p in lessons.resolve(args.paths)]  # every path read before printing
    print(lessons.table(reports))
    problems = lessons.course_problems(reports)
    if args.check and problems:
        print(f"\nover budget: {len(problems)} {'problem' if len(problems) == 1 else 'problems'} (listed above)")
        return 1
    return 0


def _notebooks(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.paths] or notebooks.all_notebooks()
    for p in paths:  # before executing any: a bad path is known at once
        if not p.is_file():
            raise ValueError(f"{p}: no such notebook" + (" (it is a folder)" if p.is_dir() else ""))
        try:
            json.loads(p.read_text(encoding="utf-8"))
        except (ValueError, OSError) as exc:
            raise ValueError(f"{p}: not a notebook (a .ipynb file is JSON; {exc})") from None
    if args.check:
        return _report_notebook_problems(paths)
    for p in paths:
        print(f"{p}: executed in {notebooks.execute(p.resolve()):.1f} s", flush=True)
    return 0


def _report_notebook_problems(paths: list[Path]) -> int:
    bad = 0
    for p in paths:
        found = notebooks.problems(p)
        for f in found:
            print(f"{p}: {f}")
        bad += bool(found)
    print(f"{len(paths) - bad} of {len(paths)} notebooks are clean")
    return 1 if bad else 0


def _readme_bench(args: argparse.Namespace) -> int:
    readme.write(Path(args.json), args.machine)
    print(f"README.md: benchmark table written from {args.json}")
    return 0


def _sync(args: argparse.Namespace) -> int:
    """Re-execute the solutions' grading notebooks (and the chapters), then
    regenerate exercises/ from solutions/ (which copies those notebooks),
    then check everything.  The exercises' notebooks are never executed: on a
    stub they would fail, and they are generated, not edited."""
    layers = ("solutions",) + (("chapters",) if args.chapters else ())
    paths = [p for p in notebooks.all_notebooks() if p.relative_to(notebooks.ROOT).parts[0] in layers]
    for p in paths:
        print(f"1/3 {p.relative_to(notebooks.ROOT)}: executed in {notebooks.execute(p):.1f} s", flush=True)
    indexes.write(authoring.ROOT)
    written = authoring.write(force=args.force)
    print(f"2/3 regenerated exercises/ ({len(written)} {'file' if len(written) == 1 else 'files'} changed)", flush=True)
    print("3/3 checks", flush=True)
    stale = indexes.check(authoring.ROOT) + authoring.check()
    for s in stale:
        print(s)
    return max(1 if stale else 0, _report_notebook_problems(notebooks.all_notebooks()))


def _release(args: argparse.Namespace) -> int:
    from tools import release

    release.require_instructor_extra()  # before anything: the extra to install, not a ModuleNotFoundError
    files = release.release(args.dest, ref=args.ref)
    print(f"wrote a student release ({len(files)} files from {args.ref}, no solutions/) to {args.dest}")
    return 0


def _grade_class(args: argparse.Namespace) -> int:
    from tools.classroom import class_report, grade_class

    done = grade_class(args.submissions, args.report, only=args.exercise or None, log=sys.stdout)
    print(f"wrote {len(done.reports)} reports to {args.report}")
    paths: list[str | Path] = [*done.reports]
    try:
        print(class_report(paths).table())
    except ValueError:
        print("no student handed in a file of the exercises graded: the table is empty")
    for why in done.not_graded:
        print(f"python -m tools grade-class: {why}", file=sys.stderr)
    return 1 if done.not_graded else 0


def _class_report(args: argparse.Namespace) -> int:
    from tools.classroom import class_report

    rep = class_report(args.reports)
    print(rep.table())
    for w in rep.warnings:
        print(f"python -m tools class-report: warning: {w}", file=sys.stderr)
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors as one line (the usage is in --help)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{message} (see {self.prog} --help)")


class _UsageError(ValueError):
    pass


def _one_line(exc: BaseException, limit: int = 600) -> str:
    """An error message folded to one line (long ones cut: --debug has it all)."""
    text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip()).replace(":; ", ": ")
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    text = text or type(exc).__name__
    if not isinstance(exc, (ValueError, OSError, authoring.AuthoringError)):
        text = f"{type(exc).__name__}: {text}"
    return text if len(text) <= limit else text[:limit] + " ... (run with --debug for all of it)"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    cmd = next((a for a in argv if not a.startswith("-")), "")
    prog = f"python -m tools {cmd}".rstrip()
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted (Ctrl-C)", file=sys.stderr)
        if debug:
            raise
        return 130
    except Exception as exc:
        if debug:
            raise
        print(f"{prog}: {_one_line(exc)}", file=sys.stderr)
        return 2 if isinstance(exc, (ValueError, OSError, authoring.AuthoringError)) else 1


def _main(argv: list[str]) -> int:
    p = _Parser(prog="python -m tools", description="lowlat-course: author and instructor tools.")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error (anywhere on the line)")
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("exercises", help="authors: regenerate exercises/ from solutions/")
    e.add_argument("--check", action="store_true", help="only report whether exercises/ is up to date")
    e.add_argument("--force", action="store_true", help="overwrite exercise files that were edited by hand")
    ne = sub.add_parser("new-exercise", help="authors: scaffold solutions/CHAPTER/NAME/, gradable at once")
    ne.add_argument("chapter", help="the chapter's folder name, e.g. 03_spsc")
    ne.add_argument("name", help="the exercise's name: python -m lowlat grade NAME FILE")
    ne.add_argument("--lang", required=True, choices=("c", "py", "python"), help="the learner's language")
    ne.add_argument("--title", help="one line on what the learner writes (the index tables)")
    ne.add_argument("--minutes", type=int, default=30, help="the time it takes (default 30)")
    n = sub.add_parser("notebooks", help="authors: re-execute notebooks in place and normalise them")
    n.add_argument("paths", nargs="*", help="notebooks (default: every one in chapters/, exercises/, solutions/)")
    n.add_argument("--check", action="store_true", help="only check the committed notebooks")
    le = sub.add_parser("lessons", help="authors: each chapter's lessons, words and stated vs computed time")
    le.add_argument("paths", nargs="*", help="notebooks or folders (default: every one in chapters/)")
    le.add_argument("--check", action="store_true", help="exit 1 when a notebook or the course is over budget")
    s = sub.add_parser("sync", help="authors: re-execute the solution notebooks, regenerate exercises/, check all")
    s.add_argument("--chapters", action="store_true", help="re-execute the chapters too (a few minutes)")
    s.add_argument("--force", action="store_true", help="overwrite exercise files that were edited by hand")
    r = sub.add_parser("release", help="instructors: a student release (no solutions/, no tools/) in DEST")
    r.add_argument("dest")
    r.add_argument("--ref", default="HEAD", help="the commit to release (default HEAD; never the working copy)")
    g = sub.add_parser(
        "grade-class", help="instructors: grade each student's files in a fresh exercise tree, one JUnit XML each"
    )
    g.add_argument("submissions", help="a folder with one folder per student")
    g.add_argument("--report", required=True, help="where to write REPORT/<student>.xml")
    g.add_argument("--exercise", action="append", help="grade only this exercise (repeatable; default all)")
    rb = sub.add_parser("readme-bench", help="authors: the README's benchmark table from one bench run's JSON")
    rb.add_argument("json", help="the JSON of `python -m lowlat bench --json`")
    rb.add_argument("--machine", required=True, help="one line naming the machine, e.g. '2-vCPU AMD EPYC VM (KVM)'")
    c = sub.add_parser("class-report", help="instructors: a students x exercises table from JUnit XML reports")
    c.add_argument("reports", nargs="+", help="one report per student, e.g. reports/alice.xml")
    args = p.parse_args(argv)
    handler = {
        "exercises": _exercises,
        "new-exercise": _new_exercise,
        "notebooks": _notebooks,
        "lessons": _lessons,
        "sync": _sync,
        "release": _release,
        "grade-class": _grade_class,
        "class-report": _class_report,
        "readme-bench": _readme_bench,
    }[args.cmd]
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
