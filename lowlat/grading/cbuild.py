"""Building a learner's C file into the checks binaries: preprocess, check
the source (:mod:`lowlat.grading.objcheck`, :mod:`lowlat.grading.ordering`),
compile to an object, inspect it, and only then link it with the checks."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from lowlat.core import toolchain
from lowlat.grading import objcheck, ordering
from lowlat.grading.spec import Exercise

HARNESS_DIR = Path(__file__).resolve().parent / "harness"  # grade.h, shared by every C exercise's checks


# ---- the checks' and the core's objects, compiled once per process ------------------
#
# Every grade links the learner's object with the same checks file and core
# files; compiling those is most of a grade's build time.  Their objects are
# kept here, in this process's memory, keyed by the compiler, the flags and
# the content of every source and header that can reach them.  A grade
# writes the bytes into its own fresh folder before any learner code runs, so
# nothing a learner's program writes to disk can reach a later grade's link.

_OBJECTS: dict[tuple[str, ...], bytes] = {}
_OBJECTS_MAX = 48  # a few exercises x three modes x two or three files; at most a few MB
_OBJECTS_LOCK = threading.Lock()


def _headers_digest(dirs: list[Path]) -> str:
    """A digest of the names and contents of every header under ``dirs``."""
    h = hashlib.sha256()
    for d in dirs:
        for header in sorted(d.rglob("*.h")) if d.is_dir() else []:
            h.update(str(header).encode() + b"\0" + header.read_bytes() + b"\0")
    return h.hexdigest()


def _cached_object(key: tuple[str, ...], compile_to: Callable[[Path], None], out: Path) -> None:
    """Writes the object for ``key`` to ``out``, compiling it with
    ``compile_to(out)`` (which raises on failure) only the first time."""
    with _OBJECTS_LOCK:
        data = _OBJECTS.get(key)
    if data is None:
        compile_to(out)
        with _OBJECTS_LOCK:
            while len(_OBJECTS) >= _OBJECTS_MAX:
                del _OBJECTS[next(iter(_OBJECTS))]  # the oldest first
            _OBJECTS[key] = out.read_bytes()
        return
    out.write_bytes(data)


class CompileError(Exception):
    def __init__(self, output: str) -> None:
        super().__init__(output)
        self.output = output


def _compiler_lines(text: str, filename: str, strip: list[Path]) -> str:
    """The compiler's messages about the learner's file (all of them if none
    names it), without the checks' and the core's paths."""
    lines = text.strip().splitlines()
    mine = [ln for ln in lines if ln.startswith(filename) or ln.startswith(" ") or ln.startswith("In function")]
    keep = mine if any(ln.startswith(filename) for ln in mine) else lines
    prefixes = sorted({str(p) + os.sep for p in strip}, key=len, reverse=True)
    out = []
    for ln in keep[:40]:
        for prefix in prefixes:
            ln = ln.replace(prefix, "")
        out.append(ln)
    return "\n".join(out)


class CBuild:
    """The checks binaries of a C exercise, one per sanitizer mode, built
    from a private copy of the learner's file.

    For each mode: the learner's file is preprocessed (its own lines are
    checked: no inline assembly, no sanitizer switches, the same code in
    every mode) and compiled to an object on its own, the object is
    inspected (:func:`lowlat.grading.objcheck.check_object`), and only then
    linked with the checks (and the core files they need).  The compiler
    runs in the copy's folder and is given its bare name, so its messages
    read ``mpmc.c:42:5: error: ...``; the exercise's folder (its header) is
    on the include path, the learner's own folder is not."""

    def __init__(self, ex: Exercise, learner: Path, workdir: Path) -> None:
        self.ex, self.workdir = ex, workdir
        self.src_dir = workdir / "src"
        self.src_dir.mkdir(parents=True, exist_ok=True)
        self.source = self.src_dir / ex.filename
        shutil.copyfile(learner, self.source)
        cc = toolchain.c_compiler()
        if cc is None:
            raise CompileError("no C compiler found (cc, gcc or clang): install one to grade C exercises")
        self.cc = cc
        functions: set[str] = set()
        variables: set[str] = set()
        for header in sorted(ex.folder.glob("*.h")):
            f, v = objcheck.api_names(header.read_text())
            functions |= f
            variables |= v
        self.api_functions, self.api_variables = functions, variables
        self.binaries: dict[str | None, Path] = {}
        self._plain_lines: str | None = None
        self._headers: str | None = None  # the digest of every header the support objects can include

    def _strip(self) -> list[Path]:
        return [self.ex.folder, HARNESS_DIR, toolchain.CSRC, self.src_dir]

    def _learner_flags(self, sanitizer: str | None) -> list[str]:
        # The spec's flags that matter to a compile (-D, -I, -f, -W...); its
        # -Wl,... linker flags apply to the link only.
        return [f for f in self.ex.cflags if not f.startswith("-Wl,")]

    def _preprocess(self, sanitizer: str | None) -> str:
        flags = [toolchain.STD, *toolchain.opt_flags(sanitizer), "-pthread"]
        incs = [f"-I{d}" for d in [self.ex.folder, *toolchain.include_dirs()]]
        cmd = [self.cc, "-E", *flags, *incs, *self._learner_flags(sanitizer), self.source.name]
        res = subprocess.run(
            cmd, cwd=self.src_dir, capture_output=True, text=True, timeout=120, env=dict(os.environ, LC_ALL="C")
        )
        if res.returncode != 0:
            raise CompileError(_compiler_lines(res.stderr + res.stdout, self.source.name, self._strip()))
        return objcheck.learner_lines(res.stdout, self.source.name)

    def ordering_problems(self) -> tuple[list[str], bool]:
        """(the ordering lint's findings, whether the file uses fences):
        the learner's lines preprocessed with a ``stdatomic.h`` that defines
        nothing, so the atomic calls stay as written (see
        :mod:`lowlat.grading.ordering`)."""
        fake = self.workdir / "lint-include"
        fake.mkdir(exist_ok=True)
        (fake / "stdatomic.h").write_text(ordering.FAKE_STDATOMIC)
        flags = [toolchain.STD, "-pthread"]
        incs = [f"-I{d}" for d in [fake, self.ex.folder, *toolchain.include_dirs()]]
        cmd = [self.cc, "-E", *flags, *incs, *self._learner_flags(None), self.source.name]
        res = subprocess.run(
            cmd, cwd=self.src_dir, capture_output=True, text=True, timeout=120, env=dict(os.environ, LC_ALL="C")
        )
        if res.returncode != 0:
            raise CompileError(_compiler_lines(res.stderr + res.stdout, self.source.name, self._strip()))
        lines = objcheck.learner_lines(res.stdout, self.source.name)
        hot = sorted(self.api_functions)
        return ordering.lint(lines, hot, self.source.name), ordering.uses_fences(lines)

    def _support_objects(self, sanitizer: str | None) -> list[Path]:
        """The checks file and the core files the checks need, compiled for
        ``sanitizer`` into this build's folder (from this process's cache
        when the same compiler, flags and sources were compiled before)."""
        mode = sanitizer or "plain"
        if self._headers is None:
            self._headers = _headers_digest([self.ex.folder, HARNESS_DIR, *toolchain.include_dirs()])
        headers = self._headers
        flags = [*self._learner_flags(sanitizer), "-pthread", "-c"]
        objs = []
        for i, src in enumerate([self.ex.checks_path, *(toolchain.CSRC / s for s in self.ex.core_sources)]):
            out = self.workdir / f"support-{mode}-{i}-{src.stem}.o"
            key = (self.cc, mode, *flags, str(src), hashlib.sha256(src.read_bytes()).hexdigest(), headers)

            def compile_to(path: Path, src: Path = src) -> None:
                res = toolchain.compile_c(
                    [src],
                    path,
                    sanitizer=sanitizer,
                    extra=flags,
                    includes=[self.ex.folder, HARNESS_DIR],
                    cwd=self.src_dir,
                    cc=self.cc,
                    timeout_s=120,
                )
                if res.returncode != 0:
                    raise CompileError(_compiler_lines(res.stderr + res.stdout, src.name, self._strip()))

            _cached_object(key, compile_to, out)
            objs.append(out)
        return objs

    def build(self, sanitizer: str | None) -> Path:
        """The checks binary for ``sanitizer`` (None: plain), built once.
        Raises CompileError or :class:`~lowlat.grading.objcheck.Refused`."""
        if sanitizer in self.binaries:
            return self.binaries[sanitizer]
        name = self.source.name
        mode = sanitizer or "plain"
        lines = self._preprocess(sanitizer)
        objcheck.check_source(lines, name)
        if sanitizer is None:
            self._plain_lines = lines
        else:
            if self._plain_lines is None:
                self.build(None)
            assert self._plain_lines is not None
            objcheck.check_same_code(self._plain_lines, lines, sanitizer, name)
        obj = self.workdir / f"learner-{mode}.o"
        res = toolchain.compile_c(
            [name],
            obj,
            sanitizer=sanitizer,
            extra=[*self._learner_flags(sanitizer), "-c"],
            includes=[self.ex.folder],
            cwd=self.src_dir,
            cc=self.cc,
            timeout_s=120,
        )
        if res.returncode != 0:
            raise CompileError(_compiler_lines(res.stderr + res.stdout, name, self._strip()))
        objcheck.check_object(
            objcheck.read_object(obj),
            name,
            api_functions=self.api_functions,
            api_variables=self.api_variables,
            extra_allowed=self.ex.allow_symbols,
            sanitizer=sanitizer,
        )
        exe = self.workdir / f"checks-{mode}"
        sources: list[str | Path] = [obj, *self._support_objects(sanitizer)]
        res = toolchain.compile_c(
            sources,
            exe,
            sanitizer=sanitizer,
            extra=self.ex.cflags,
            includes=[self.ex.folder, HARNESS_DIR],
            cwd=self.src_dir,
            cc=self.cc,
            timeout_s=120,
        )
        if res.returncode != 0:
            raise CompileError(_compiler_lines(res.stderr + res.stdout, name, self._strip()))
        self.binaries[sanitizer] = exe
        return exe


def build_c(ex: Exercise, learner: Path, out: Path, sanitizer: str | None = None) -> Path:
    """The checks binary of ``learner`` for ``sanitizer``, copied to ``out``
    (see :class:`CBuild`)."""
    with tempfile.TemporaryDirectory(prefix="lowlat-build-") as tmp:
        exe = CBuild(ex, learner, Path(tmp)).build(sanitizer)
        shutil.copy2(exe, out)
    return out


__all__ = ["HARNESS_DIR", "CBuild", "CompileError", "build_c"]
