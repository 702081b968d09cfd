"""For instructors: a student release of the course.

``python -m tools release DIR [--ref REF]`` writes commit REF (default HEAD;
never the working copy) without ``solutions/``, ``tools/``, CI and the
grader's broken implementations (``tests/broken/``) into DIR, a new folder
outside the repository.  Every Markdown file loses its authors-only parts
(between ``<!-- authors-only -->`` and ``<!-- /authors-only -->`` lines: the
instructors' schedule, the authors' commands).  It refuses while
``exercises/`` is out of date with ``solutions/`` or holds a solution marker,
while a notebook holds an error or a machine path, and while a student's
README would still name ``solutions/`` or ``python -m tools``.

REF is resolved to one commit id first (``git rev-parse --verify``); only
that id reaches ``git archive``, so a REF such as ``--output=FILE`` is a
ref that does not exist, never an option.
"""

from __future__ import annotations

import importlib.util
import io
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from tools import authoring, notebooks

ROOT = Path(__file__).resolve().parent.parent
# Left out of a student release: the answers, and what only authors run.
EXCLUDED_TOP = {"solutions", "tools", ".ci", ".git", ".pre-commit-config.yaml", "CONTRIBUTING.md"}
# ... and these folders: the grader's broken implementations are answers but for one defect.
EXCLUDED_DIRS = ("tests/broken",)
# Markdown parts for authors and instructors are fenced by these lines; a
# student's copy of the file is the same file without them.
AUTHOR_BEGIN, AUTHOR_END = "<!-- authors-only -->", "<!-- /authors-only -->"
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN STUB", "END STUB")
# What a student's README must not name once its authors-only parts are gone.
STUDENT_READMES = ("README.md", "exercises/README.md")
AUTHOR_ONLY_TEXT = ("solutions/", "python -m tools")
# The modules the release needs beyond lowlat's own dependencies, and the extra that installs them.
INSTRUCTOR_MODULES = ("nbformat",)
INSTRUCTOR_EXTRA = 'pip install -e ".[instructor]"'
_COMMIT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def excluded(rel: Path) -> bool:
    """``rel`` (a path in the repository) is left out of a student release."""
    return rel.parts[0] in EXCLUDED_TOP or any(rel.as_posix().startswith(d + "/") for d in EXCLUDED_DIRS)


def require_instructor_extra(command: str = "release") -> None:
    """Raises ValueError naming the extra to install when a module the
    instructor tools need is missing (checked before anything runs)."""
    missing = [m for m in INSTRUCTOR_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise ValueError(
            f"{command} needs {', '.join(missing)}, which this environment lacks: install the instructor extra "
            f'with `{INSTRUCTOR_EXTRA}` (or `pip install -e ".[test]"`) and rerun'
        )


def resolve_ref(root: Path, ref: str) -> str:
    """The commit id ``ref`` names in the repository at ``root``; ValueError
    (naming --ref) for anything else.  A ref starting with '-' is refused
    before git sees it."""
    if not isinstance(ref, str) or not ref.strip():
        raise ValueError(f"--ref {ref!r}: give a branch, tag or commit id")
    if ref.startswith("-") or any(ord(c) < 32 or ord(c) == 127 for c in ref):
        raise ValueError(f"--ref {ref!r}: not a branch, tag or commit id (a ref cannot start with '-')")
    cmd = ["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"]
    try:
        res = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ValueError(f"git is needed to build a release from a commit ({exc})") from None
    commit = res.stdout.strip()
    if res.returncode != 0 or not _COMMIT_ID.fullmatch(commit):
        raise ValueError(f"--ref {ref!r}: no such commit in {root}")
    return commit


def _committed_tree(root: Path, commit: str, into: Path) -> None:
    """Extracts ``commit`` (an id from :func:`resolve_ref`) into ``into``."""
    if not _COMMIT_ID.fullmatch(commit):
        raise ValueError(f"{commit!r} is not a commit id")
    try:
        res = subprocess.run(["git", "archive", "--format=tar", commit], cwd=root, capture_output=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ValueError(f"git is needed to build a release from a commit ({exc})") from None
    if res.returncode != 0:
        raise ValueError(f"cannot read commit {commit} of {root}: {res.stderr.decode(errors='replace').strip()}")
    with tarfile.open(fileobj=io.BytesIO(res.stdout)) as tar:
        tar.extractall(into, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(into)


def student_readme(text: str) -> str:
    """A Markdown text without its authors-only parts (see AUTHOR_BEGIN);
    ValueError for markers that do not pair up."""
    out, skipping = [], False
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        mark = line.strip()
        if mark == AUTHOR_BEGIN:
            if skipping:
                raise ValueError(f"line {n}: {AUTHOR_BEGIN} inside another authors-only part")
            skipping = True
        elif mark == AUTHOR_END:
            if not skipping:
                raise ValueError(f"line {n}: {AUTHOR_END} without {AUTHOR_BEGIN}")
            skipping = False
        elif not skipping:
            out.append(line)
    if skipping:
        raise ValueError(f"{AUTHOR_BEGIN} is never closed")
    return "".join(out)


def release_problems(tree: Path) -> list[str]:
    """Why the tree at ``tree`` must not be handed out (empty when fine)."""
    found = [f"{p} (run `python -m tools exercises` and commit)" for p in authoring.check(tree)]
    for p in sorted((tree / "exercises").rglob("*")):
        if p.is_file() and p.suffix in authoring.SOURCE_SUFFIXES:
            text = p.read_text(errors="replace")
            found += [f"{p.relative_to(tree)} contains a solution marker ({m})" for m in MARKERS if m in text]
    for nb in sorted(list((tree / "chapters").rglob("*.ipynb")) + list((tree / "exercises").rglob("*.ipynb"))):
        found += [f"{nb.relative_to(tree)}: {p}" for p in notebooks.problems(nb) if "not normalised" not in p]
    for md in sorted(p for p in tree.rglob("*.md") if not excluded(p.relative_to(tree))):
        rel = md.relative_to(tree).as_posix()
        try:
            text = student_readme(md.read_text(errors="replace"))
        except ValueError as exc:
            found.append(f"{rel}: {exc}")
            continue
        if rel in STUDENT_READMES:
            for n, line in enumerate(text.splitlines(), 1):
                found += [
                    f"{rel}:{n}: names `{t}` outside an {AUTHOR_BEGIN} part" for t in AUTHOR_ONLY_TEXT if t in line
                ]
    return found


def _check_dest(out: Path, root: Path) -> Path:
    """The release folder's absolute path; ValueError/FileExistsError when it
    exists, when its parent is not a folder, or when it lies in the repository."""
    if out.exists() or out.is_symlink():
        raise FileExistsError(f"{out} exists; give a new folder for the release")
    if not out.parent.is_dir():
        raise ValueError(f"cannot create the release folder {out}: {out.parent} is not a folder (create it first)")
    where = out.parent.resolve() / out.name
    repo = root.resolve()
    if where == repo or repo in where.parents:
        inside = where.relative_to(repo).parts[:1]
        part = f" (in its {inside[0]}/)" if inside and (repo / inside[0]).is_dir() else ""
        raise ValueError(
            f"{out} is inside the repository {repo}{part}: a release goes outside it, e.g. ../lowlat-course-student"
        )
    return where


def release(dest: str | Path, root: Path = ROOT, ref: str = "HEAD") -> list[Path]:
    """Writes a student release of commit ``ref`` into ``dest`` (a new folder
    outside the repository); returns the files written.  Raises ValueError
    with every reason when the commit must not be released; on any failure
    the folder is removed again."""
    require_instructor_extra()
    out = Path(dest)
    _check_dest(out, root)
    commit = resolve_ref(root, ref)
    try:
        out.mkdir()  # before the slow part: a folder that cannot be made is known at once
    except OSError as exc:
        raise ValueError(f"cannot create the release folder {out} ({exc.strerror or exc})") from None
    try:
        with tempfile.TemporaryDirectory(prefix="lowlat-release-") as tmp:
            tree = Path(tmp)
            _committed_tree(root, commit, tree)
            problems = release_problems(tree)
            if problems:
                raise ValueError(f"not releasing {ref} ({commit[:12]}):\n  " + "\n  ".join(problems))
            return _copy_release(tree, out)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise


def _copy_release(tree: Path, out: Path) -> list[Path]:
    written = []
    for src in sorted(p for p in tree.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = src.relative_to(tree)
        if excluded(rel):
            continue
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.suffix == ".md":
            text = src.read_text(errors="surrogateescape")
            dst.write_text(student_readme(text), errors="surrogateescape")
            shutil.copymode(src, dst)
        else:
            shutil.copy2(src, dst)
        written.append(dst)
    return written
