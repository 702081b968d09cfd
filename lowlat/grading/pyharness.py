"""Python exercises: the checks and the references run in the grader's
process; the learner's module runs in a child (``host.py``) and is called
over a pipe.

An exercise's ``checks.py`` (in its folder) defines

- ``CHECKS``, a dict of check id -> ``fn(module, path)``.  ``module`` is a
  :class:`Learner`: the learner's module, imported in a child process.
  ``module.build_report(samples, allot, 100.0)`` calls the learner's function
  there with copies of the arguments (pickled) and returns its value: plain
  data (numbers, strings, lists, tuples, dicts, sets, numpy arrays and
  scalars, of exact builtin types, so no learner ``__eq__`` reaches the
  checks) or a :class:`Remote` for any other object (use it as the object:
  attributes, calls, ``iter``/``next``).  When the learner's code raises, the
  call raises a :class:`LearnerRaised` that is also an instance of the
  builtin exception it derives from (``except ValueError`` works), with
  ``.type_name``, ``.where`` (``budget_report.py:12 in build_report``) and
  ``.frames`` (the traceback's function names).  A call that does not return
  within the check's time, a learner that ends its process, and a function
  that modifies its arguments in place raise :class:`LearnerStopped` and
  :class:`LearnerMutated`; the check fails with their message.
  ``module.map("index_of", [(v, 3), ...])`` makes many calls in one round
  trip; ``module.helper("CountingSource", n=20)`` creates one of the host's
  trusted helpers in the child; ``module.threads()`` counts the child's
  threads.  A check returns None when it passes, else the reason it fails;
  the ``timing`` check may return a dict of numbers (reported, never graded).
- ``FORBIDDEN``, the modules the learner may not import (each with its
  submodules), and ``ADVICE``, what to do instead.  The child refuses them at
  run time, however the import is spelled (:mod:`lowlat.grading.host`), and
  :func:`refuses_reference` refuses them early, from the source.
- ``PRELOAD`` (optional): trusted modules the timing imports in the child
  before the learner's module (``module.trusted("lowlat.train.loader",
  "train_epoch", ...)``).

Each check gets a fresh child, under the grader's limits
(:mod:`lowlat.grading.sandbox`).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib.util
import io
import json
import os
import pickle
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lowlat.grading import sandbox
from lowlat.grading.sandbox import DEFAULT_LIMITS, Limits

if TYPE_CHECKING:
    from lowlat.grading.engine import ChildOutcome, Report
    from lowlat.grading.spec import Check, Exercise

HOST = Path(__file__).resolve().parent / "host.py"
MAX_REPLY = 256 << 20  # bytes: the largest result the grader's process accepts from a child
CheckFn = Callable[[Any, str], Any]


def load(path: str | os.PathLike[str], name: str) -> ModuleType:
    """Imports the (trusted) file at ``path`` as module ``name``: an
    exercise's checks, in the grader's process."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses and pickling look their module up here
    spec.loader.exec_module(mod)
    return mod


# ---- what a learner's call can end in -------------------------------------------------------


class LearnerRaised(Exception):
    """The learner's code raised; also an instance of the builtin exception
    class it derives from (see :func:`_raised`)."""

    type_name: str = "Exception"
    where: str = ""
    frames: list[str]
    refused: list[str]

    hint: str = ""

    def reason(self) -> str:
        at = f" ({self.where})" if self.where else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"raised {self.type_name}: {self}{at}{hint}"


class LearnerStopped(Exception):
    """The learner's process stopped answering: it hung past the check's
    time, crashed, exited, or hit a limit.  The message says which."""


class LearnerMutated(Exception):
    """A learner's function changed an argument in place."""


class HostError(Exception):
    """The child could not do what the grader asked (not the learner's code)."""


_raised_classes: dict[str, type[LearnerRaised]] = {}


def _raised(info: dict[str, Any]) -> LearnerRaised:
    base_name = info.get("base", "Exception")
    cls = _raised_classes.get(base_name)
    if cls is None:
        base = getattr(builtins, base_name, None)
        cls = LearnerRaised
        if isinstance(base, type) and issubclass(base, BaseException) and base not in (BaseException, Exception):
            try:
                cls = type(f"Learner{base_name}", (LearnerRaised, base), {})
            except TypeError:  # an exception class whose layout cannot be mixed in
                cls = LearnerRaised
        _raised_classes[base_name] = cls
    exc = cls(info.get("message", ""))
    exc.type_name = info.get("type", base_name)
    exc.where = info.get("where", "")
    exc.frames = list(info.get("frames", []))
    exc.refused = list(info.get("refused", []))
    return exc


# ---- receiving values: only data ------------------------------------------------------------

_SAFE_GLOBALS = {
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "bytearray"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
    ("_codecs", "encode"),
}


class _DataUnpickler(pickle.Unpickler):
    """Unpickles plain data only: a pickle that names any other class or
    function (and would run it) is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"the learner's process sent a {module}.{name}, which is not data")


def _loads(data: bytes) -> Any:
    return _DataUnpickler(io.BytesIO(data)).load()


# ---- the child ------------------------------------------------------------------------------


def _forbidden_roots(forbidden: Sequence[str]) -> list[str]:
    """The files and folders of the forbidden modules (the child refuses to
    open them)."""
    roots: list[str] = []
    for name in forbidden:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        if spec.submodule_search_locations:
            roots += [str(p) for p in spec.submodule_search_locations]
        elif spec.origin and spec.origin not in ("built-in", "frozen"):
            roots.append(spec.origin)
    return roots


class Learner:
    """The learner's module, imported in a child process (see the module's
    docstring)."""

    def __init__(
        self,
        learner: Path,
        *,
        module_name: str,
        forbidden: Sequence[str] = (),
        advice: str = "",
        preload: Sequence[str] = (),
        timeout_s: float = 30.0,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self._path = learner
        self._deadline = time.monotonic() + timeout_s
        self._timeout_s = timeout_s
        self._limits = limits
        self._pending: list[int] = []
        self._closed = False
        self._outdir = Path(tempfile.mkdtemp(prefix="lowlat-pyout-"))
        self._cwd = Path(tempfile.mkdtemp(prefix="lowlat-run-"))
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        cfg = {
            "learner": str(learner),
            "module": module_name,
            "forbidden": list(forbidden),
            "advice": advice,
            "roots": _forbidden_roots(forbidden),
            "preload": list(preload),
            "fd_in": to_child_r,
            "fd_out": from_child_w,
        }
        self._err_path = self._outdir / "stderr"
        self._w, self._r = to_child_w, from_child_r
        self._activity = "starting"
        with open(self._outdir / "stdout", "wb") as out_f, open(self._err_path, "wb") as err_f:
            try:
                self._proc = sandbox.spawn(
                    [sys.executable, "-I", str(HOST), json.dumps(cfg)],
                    cwd=self._cwd,
                    env=sandbox.child_env(self._cwd),
                    limits=limits,
                    timeout_s=timeout_s,
                    pass_fds=(to_child_r, from_child_w),
                    stdout=out_f,
                    stderr=err_f,
                )
            except BaseException:
                for fd in (to_child_w, from_child_r):
                    os.close(fd)
                shutil.rmtree(self._outdir, ignore_errors=True)
                shutil.rmtree(self._cwd, ignore_errors=True)
                raise
            finally:
                os.close(to_child_r)
                os.close(from_child_w)

    # -- lifecycle
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fd in (self._w, self._r):
            with contextlib.suppress(OSError):
                os.close(fd)
        sandbox.kill_group(self._proc)
        shutil.rmtree(self._outdir, ignore_errors=True)
        shutil.rmtree(self._cwd, ignore_errors=True)

    def __enter__(self) -> Learner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the wire
    def _request(self, req: tuple[Any, ...], activity: str, timeout_s: float | None = None) -> tuple[Any, ...]:
        if self._closed:
            raise LearnerStopped(f"the learner's process had already stopped ({self._activity})")
        self._activity = activity
        pending, self._pending = self._pending, []
        body = pickle.dumps((pending, req), protocol=4)
        deadline = self._deadline if timeout_s is None else min(self._deadline, time.monotonic() + timeout_s)
        try:
            data = struct.pack(">I", len(body)) + body
            while data:
                k = os.write(self._w, data)
                data = data[k:]
            head = self._read(4, deadline)
            (n,) = struct.unpack(">I", head)
            if n > MAX_REPLY:
                self.close()
                raise LearnerStopped(
                    f"{activity}: the learner's process sent {n >> 20} MB, more than the {MAX_REPLY >> 20} MB a "
                    "result may take"
                )
            payload = self._read(n, deadline)
        except TimeoutError:  # (an OSError too: caught first)
            limit = timeout_s if timeout_s is not None and timeout_s < self._timeout_s else self._timeout_s
            self.close()
            raise LearnerStopped(
                f"{activity} did not return within {limit:g} s (stopped: an endless loop, or a wait for something "
                "that never happens)"
            ) from None
        except (BrokenPipeError, EOFError, OSError) as exc:
            raise self._stopped(activity) from exc
        try:
            reply = _loads(payload)
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError) as exc:
            self.close()
            raise LearnerStopped(f"{activity}: the learner's process sent something that is not data ({exc})") from exc
        if not isinstance(reply, tuple) or not reply:
            self.close()
            raise LearnerStopped(f"{activity}: the learner's process broke the grader's protocol")
        return reply

    def _read(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._r], [], [], left)
            if not ready:
                raise TimeoutError
            chunk = os.read(self._r, n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def _stopped(self, activity: str) -> LearnerStopped:
        try:
            rc = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            rc = None
        err = sandbox.read_capped(self._err_path, 1 << 20).strip().splitlines()
        tail = f"; its last words: {err[-1][:300]}" if err else ""
        self.close()
        if rc is None:
            return LearnerStopped(f"the learner's process closed the grader's channel during {activity}{tail}")
        limit = sandbox.limit_death(rc, self._limits, self._timeout_s)
        if limit:
            return LearnerStopped(f"{activity}: {limit}")
        if rc < 0:
            return LearnerStopped(f"the learner's process crashed with {sandbox.signal_name(rc)} during {activity}")
        return LearnerStopped(
            f"the learner's code ended its process (exit status {rc}) during {activity}: a check's result comes "
            f"from the grader, not from anything the learner's process prints or how it exits{tail}"
        )

    def _value(self, reply: tuple[Any, ...]) -> Any:
        kind = reply[0]
        if kind == "ok":
            return reply[1]
        if kind == "ref":
            return Remote(self, int(reply[1]), str(reply[2]))
        if kind == "raised":
            exc = _raised(reply[1])
            if exc.type_name == "MemoryError" and self._limits.memory_bytes:
                exc.hint = f"stopped by the memory limit: learner code may use {self._limits.memory_bytes >> 20} MB"
            elif "File too large" in str(exc):
                exc.hint = f"stopped by the file-size limit: learner code may write {self._limits.file_bytes >> 20} MB"
            raise exc
        if kind == "mutated":
            raise LearnerMutated(
                f"{reply[1]} changed its {' and '.join(reply[2])} in place: the caller's data must not change "
                "(work on a copy)"
            )
        if kind == "stop":
            raise StopIteration
        raise HostError(str(reply[1]) if len(reply) > 1 else repr(reply))

    @staticmethod
    def _args(args: Sequence[Any]) -> list[tuple[str, Any]]:
        return [("r", a._handle) if isinstance(a, Remote) else ("v", a) for a in args]

    @staticmethod
    def _kwargs(kwargs: dict[str, Any]) -> dict[str, tuple[str, Any]]:
        return {k: ("r", v._handle) if isinstance(v, Remote) else ("v", v) for k, v in kwargs.items()}

    # -- the API the checks use
    def load(self) -> None:
        """Imports the learner's module in the child (raises what it raised)."""
        self._value(self._request(("load",), "the import of the file"))

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.call(name, *args, **kwargs)

        call.__name__ = name
        return call

    def call(self, name: str, *args: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """``module.name(*args, **kwargs)`` in the child; ``timeout_s`` bounds
        this one call (the check's own time bounds every call)."""
        return self._value(
            self._request(
                ("call", None, name, self._args(args), self._kwargs(kwargs)), f"{name}()", timeout_s=timeout_s
            )
        )

    def get(self, name: str) -> Any:
        """The module's attribute ``name`` (data, or a Remote)."""
        return self._value(self._request(("getattr", None, name), f"reading {name}"))

    def map(self, name: str, calls: Sequence[Sequence[Any]]) -> list[Any]:
        """``[module.name(*args) for args in calls]`` in one round trip (plain
        data results only)."""
        return list(self._value(self._request(("map", name, [list(c) for c in calls]), f"{name}()")))

    def helper(self, name: str, *args: Any, **kwargs: Any) -> Remote:
        """One of the host's trusted helpers (``CountingSource``), created in
        the child."""
        out = self._value(self._request(("new", name, self._args(args), self._kwargs(kwargs)), f"creating a {name}"))
        assert isinstance(out, Remote)
        return out

    def trusted(self, module: str, name: str, *args: Any, **kwargs: Any) -> Any:
        """Calls ``module.name`` (a PRELOAD module, trusted) in the child."""
        req = ("trusted", module, name, self._args(args), self._kwargs(kwargs))
        return self._value(self._request(req, f"{module}.{name}()"))

    def threads(self) -> int:
        """How many Python threads the child runs now (its main thread included)."""
        count, _names, _main = self._value(self._request(("threads",), "counting threads"))
        return int(count)

    def thread_names(self) -> list[str]:
        return list(self._value(self._request(("threads",), "counting threads"))[1])

    def main_thread(self) -> int:
        """The ident of the child's thread that runs the grader's calls."""
        return int(self._value(self._request(("threads",), "counting threads"))[2])

    def refused(self) -> list[str]:
        """What the child refused so far (imports of the reference, ...)."""
        return list(self._value(self._request(("refused",), "asking what was refused")))


class Remote:
    """An object that lives in the learner's process (a loader, a
    generator...), used through the pipe: attributes (data or Remote), calls,
    ``iter`` and ``next``."""

    def __init__(self, owner: Learner, handle: int, type_name: str) -> None:
        self._owner, self._handle, self.type_name = owner, handle, type_name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._owner._value(
            self._owner._request(("getattr", self._handle, name), f"reading {self.type_name}.{name}")
        )

    def __call__(self, *args: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        o = self._owner
        req = ("call", self._handle, None, o._args(args), o._kwargs(kwargs))
        return o._value(o._request(req, f"{self.type_name}()", timeout_s))

    def method(self, name: str, *args: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """``obj.name(*args)`` in one round trip; ``timeout_s`` bounds it."""
        o = self._owner
        req = ("call", self._handle, name, o._args(args), o._kwargs(kwargs))
        return o._value(o._request(req, f"{self.type_name}.{name}()", timeout_s))

    def __iter__(self) -> Iterator[Any]:
        o = self._owner
        it = o._value(o._request(("iter", self._handle), f"iter({self.type_name})"))
        assert isinstance(it, Remote)
        return it

    def __next__(self) -> Any:
        return self.next()

    def next(self, timeout_s: float | None = None) -> Any:
        """``next(obj)``; ``timeout_s`` bounds this one call."""
        o = self._owner
        return o._value(o._request(("next", self._handle), f"next() on the {self.type_name}", timeout_s))

    def __repr__(self) -> str:
        return f"<the learner's {self.type_name} object>"

    def __del__(self) -> None:
        # Released with the next request: the child then drops its reference
        # (a generator dropped by a `for` loop's break is closed there).
        try:
            if not self._owner._closed:
                self._owner._pending.append(self._handle)
        except AttributeError:
            pass


def type_name(x: Any) -> str:
    """The learner-side type name of a value a check received."""
    return x.type_name if isinstance(x, Remote) else type(x).__name__


# ---- refusing the reference early, from the source ------------------------------------------


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def imported_modules(source: str) -> set[str]:
    """Every module the source imports, by its full dotted name: ``import a.b``
    and ``from a.b import c`` (as ``a.b`` and ``a.b.c``, since ``c`` may be a
    submodule; ``from a import *`` as ``a.*``), ``importlib.import_module`` and
    ``__import__`` called with a literal name, and attribute chains such as
    ``a.b.c`` on a name bound by ``import a``.  (An import spelled at run time,
    ``import_module("lowlat." + name)``, is refused by the child instead.)"""
    tree = ast.parse(source)
    found: set[str] = set()
    aliases: dict[str, str] = {}  # local name -> module, from `import a.b [as x]`
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                found.add(a.name)
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
            if name in ("import_module", "__import__") and node.args:
                target = _literal(node.args[0])
                package = _literal(node.args[1]) if len(node.args) > 1 else None
                for kw in node.keywords:
                    if kw.arg == "name":
                        target = _literal(kw.value)
                    elif kw.arg == "package":
                        package = _literal(kw.value)
                if target and target.startswith(".") and package:
                    target = package + target
                if target:
                    found.add(target)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = _dotted(node)
            if chain is not None:
                head, _, rest = chain.partition(".")
                if head in aliases:
                    found.add(aliases[head] + "." + rest)
    return found


def _is_within(module: str, forbidden: str) -> bool:
    """``module`` is ``forbidden``, one of its submodules, or a star import of
    a package that holds it."""
    if module == forbidden or module.startswith(forbidden + "."):
        return True
    if module.endswith(".*"):
        return forbidden.startswith(module[:-1])
    return False


def refuses_reference(path: str | os.PathLike[str], forbidden: Sequence[str], advice: str) -> str | None:
    """The early, static half of the ``no_reference`` check: None when the
    learner's file imports none of the ``forbidden`` modules (each with its
    submodules) in any way :func:`imported_modules` sees, else the reason
    ``the file imports A or B: <advice>``.  The child refuses the imports
    this cannot see when they run."""
    try:
        modules = imported_modules(Path(path).read_text())
    except SyntaxError:
        return None  # loading the file reports it, in every check
    if any(_is_within(m, f) for m in modules for f in forbidden):
        return f"the file imports {' or '.join(forbidden)}: {advice}"
    return None


def no_reference(mod: Learner, path: str, forbidden: Sequence[str], advice: str) -> str | None:
    """The whole ``no_reference`` check: the static look, then what the
    child refused while the module was imported."""
    early = refuses_reference(path, forbidden, advice)
    if early:
        return early
    refused = [r for r in mod.refused() if r.startswith("importing") or r.startswith("reading")]
    if refused:
        return f"the file imports {' or '.join(forbidden)} (refused when it ran: {refused[0]}): {advice}"
    return None


# ---- running one check ----------------------------------------------------------------------


def _reason(exc: BaseException) -> str:
    if isinstance(exc, LearnerRaised):
        if exc.refused and issubclass(type(exc), ImportError):
            return f"the file imports a module the grader refuses: {exc}"
        if isinstance(exc, NotImplementedError):
            return "not implemented yet (the function raises NotImplementedError)"
        return exc.reason()
    if isinstance(exc, (LearnerStopped, LearnerMutated)):
        return str(exc)
    if isinstance(exc, NotImplementedError):
        return "not implemented yet (the function raises NotImplementedError)"
    if type(exc) is AssertionError and str(exc):  # a check's way of failing from inside a helper
        return str(exc)
    # The check's own code raised on something the learner returned.
    tb = traceback.extract_tb(exc.__traceback__)
    at = f" (checks.py:{tb[-1].lineno})" if tb else ""
    return f"the checks could not use what the file returned: {type(exc).__name__}: {exc}{at}"


def run_check(
    checks: ModuleType,
    check_id: str,
    learner: Path,
    *,
    timeout_s: float,
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[bool, str, dict[str, float]]:
    """Runs check ``check_id`` of ``checks`` against the learner's file:
    (passed, reason, timing info)."""
    table: dict[str, CheckFn] = checks.CHECKS
    if check_id not in table:
        return False, f"unknown check '{check_id}'", {}
    forbidden = list(getattr(checks, "FORBIDDEN", []))
    advice = str(getattr(checks, "ADVICE", "write it yourself"))
    preload = list(getattr(checks, "PRELOAD", [])) if check_id == "timing" else []
    with Learner(
        learner,
        module_name=f"learner_{learner.stem}",
        forbidden=forbidden,
        advice=advice,
        preload=preload,
        timeout_s=timeout_s,
        limits=limits,
    ) as mod:
        try:
            try:
                mod.load()
            except LearnerRaised as exc:
                if check_id == "no_reference" and exc.refused:
                    early = refuses_reference(learner, forbidden, advice)
                    late = f"the file imports {' or '.join(forbidden)} (refused when it ran): {advice}"
                    return False, early or late, {}
                if exc.type_name in ("SyntaxError", "IndentationError", "TabError"):
                    return False, f"the file does not import: {exc.reason()}", {}
                if exc.refused:
                    return False, f"importing the file was refused: {exc}", {}
                if isinstance(exc, NotImplementedError):
                    return False, _reason(exc), {}
                return False, f"importing the file {exc.reason()}", {}
            out = table[check_id](mod, str(learner))
        except (LearnerRaised, LearnerStopped, LearnerMutated, HostError, NotImplementedError) as exc:
            return False, _reason(exc), {}
        except StopIteration:
            return False, "the learner's iterator ended early (StopIteration)", {}
        except Exception as exc:  # the checks' own code tripped over what the file returned
            return False, _reason(exc), {}
    if isinstance(out, dict):
        return True, "", {str(k): float(v) for k, v in out.items()}
    if out is None:
        return True, "", {}
    return False, str(out), {}


def runner(ex: Exercise, path: Path, workdir: Path, report: Report, limits: Limits) -> Callable[[Check], ChildOutcome]:
    """The grader's runner for a Python exercise: loads the checks here (once,
    before any learner code runs), copies the learner's file, and returns a
    function running one check in a fresh child."""
    from lowlat.grading.engine import ChildOutcome

    checks = load(ex.checks_path, f"lowlat_checks_{ex.folder.name}")
    src = workdir / "src"
    src.mkdir(parents=True, exist_ok=True)
    copy = src / ex.filename
    shutil.copyfile(path, copy)

    def run_py(check: Check) -> ChildOutcome:
        passed, reason, info = run_check(checks, check.id, copy, timeout_s=check.timeout_s, limits=limits)
        return ChildOutcome(passed, reason, info)

    return run_py
