"""The child side of Python grading: imports the learner's module and answers
the grader's calls over a pipe.  The grader copies this file, with
``host_helpers.py`` and ``host_lockdown.py``, into a fresh temporary folder
with the learner's file, and runs it there as ``python -I -S host.py
CONFIG``: no site-packages, no environment of ours, a ``sys.path`` of that
folder, the standard library and the packages the grader links in (numpy).
``lowlat``, the checks and the references do not exist in this process:
nothing here needs to refuse them.  Standard library only.

Before the learner's module is imported the host locks the process down
(:mod:`host_lockdown`: seccomp against new processes, Landlock around the
file system, where the kernel has them) and tells the grader what is in
force.

Messages are length-prefixed pickles.  The grader's requests are tuples of
plain data; the host answers ``("ok", value)`` when the value is plain data
(None, numbers, strings, bytes, lists, tuples, dicts, sets, numpy arrays and
scalars, built from exact types, so no learner ``__eq__`` reaches the grader),
``("ref", handle, type name)`` for any other object (kept here, used by
handle), ``("stop",)`` when an iterator is exhausted, and ``("raised", info)``
when the learner's code raised (type, message, where in the learner's file,
the traceback's function names, the module an ImportError names).  See
:mod:`lowlat.grading.pychild` for the grader's side.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.util
import json
import os
import pickle
import struct
import sys
import threading
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in the child these are top-level modules beside this file
    from lowlat.grading import host_helpers, host_lockdown

    _BASE_PATH: list[str]
else:
    _BASE_PATH = [p for p in sys.path if p]  # the standard library's own folders (-I -S: nothing else)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import host_helpers
    import host_lockdown

_PLAIN_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_MAX_ITEMS = 20_000_000


# ---- plain data ----------------------------------------------------------------------------


def plain(x: Any, budget: list[int] | None = None) -> bool:
    """``x`` is data the grader may receive by value: exact builtin types,
    numpy arrays (of plain elements) and scalars, nested."""
    budget = budget if budget is not None else [_MAX_ITEMS]
    budget[0] -= 1
    if budget[0] < 0:
        return False
    t = type(x)
    if t in _PLAIN_SCALARS:
        return True
    if t in (list, tuple, set, frozenset):
        return all(plain(v, budget) for v in x)
    if t is dict:
        return all(plain(k, budget) and plain(v, budget) for k, v in x.items())
    np = sys.modules.get("numpy")
    if np is not None:
        if t is np.ndarray:
            if x.dtype.hasobject:
                budget[0] -= x.size
                return budget[0] >= 0 and all(plain(v, budget) for v in x.ravel().tolist())
            return True
        if isinstance(x, np.generic) and type(x).__module__ == "numpy" and not isinstance(x, np.object_):
            return True
        if t is np.dtype or isinstance(x, np.dtype):
            return True
    return False


# ---- the server ----------------------------------------------------------------------------


class Host:
    def __init__(self, cfg: dict[str, Any], rfd: int, wfd: int) -> None:
        self.cfg = cfg
        self.rfd, self.wfd = rfd, wfd
        self.objects: dict[int, Any] = {}
        self.next_handle = 1
        self.module: Any = None
        self.learner_path = os.path.realpath(cfg["learner"])
        self.guards: dict[str, str] = {}

    # -- framing
    def recv(self) -> Any:
        head = self._read(4)
        if head is None:
            return None
        (n,) = struct.unpack(">I", head)
        body = self._read(n)
        return None if body is None else pickle.loads(body)

    def _read(self, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            chunk = os.read(self.rfd, n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def send(self, msg: tuple[Any, ...]) -> None:
        try:
            body = pickle.dumps(msg, protocol=4)
        except Exception as exc:  # a value that looked plain but does not pickle
            body = pickle.dumps(("error", f"the result could not be sent: {type(exc).__name__}: {exc}"), protocol=4)
        data = struct.pack(">I", len(body)) + body
        while data:
            k = os.write(self.wfd, data)
            data = data[k:]

    # -- values
    def keep(self, obj: Any) -> tuple[Any, ...]:
        h = self.next_handle
        self.next_handle += 1
        self.objects[h] = obj
        return ("ref", h, type(obj).__name__)

    def answer(self, value: Any) -> tuple[Any, ...]:
        return ("ok", value) if plain(value) else self.keep(value)

    def resolve(self, args: Sequence[tuple[str, Any]]) -> list[Any]:
        return [self.objects[v] if kind == "r" else v for kind, v in args]

    def resolve_kw(self, kwargs: dict[str, tuple[str, Any]]) -> dict[str, Any]:
        return {k: self.objects[v] if kind == "r" else v for k, (kind, v) in kwargs.items()}

    def raised(self, exc: BaseException) -> tuple[Any, ...]:
        # lookup_lines=False: the frames' source lines are not read (no file is opened here).
        frames = traceback.StackSummary.extract(traceback.walk_tb(exc.__traceback__), lookup_lines=False)
        where = ""
        for f in reversed(frames):
            if os.path.realpath(f.filename) == self.learner_path:
                where = f"{Path(f.filename).name}:{f.lineno} in {f.name}"
                break
        base = next(
            (c.__name__ for c in type(exc).__mro__ if getattr(builtins, c.__name__, None) is c), "BaseException"
        )
        try:
            message = str(exc)
        except Exception:  # a learner's exception whose __str__ fails
            message = "(its message could not be read)"
        if isinstance(exc, SyntaxError) and not where and exc.filename:
            where = f"{Path(exc.filename).name}:{exc.lineno}"
        return (
            "raised",
            {
                "type": type(exc).__name__,
                "base": base,
                "message": message[:2000],
                "where": where,
                "frames": [f.name for f in frames],
                "module": getattr(exc, "name", None) if isinstance(exc, ImportError) else None,
            },
        )

    # -- requests
    def handle(self, req: tuple[Any, ...]) -> tuple[Any, ...]:
        op = req[0]
        if op == "load":
            return self.load()
        if op == "call":
            _, target, name, args, kwargs = req
            obj = self.module if target is None else self.objects[target]
            fn = obj if name is None else getattr(obj, name)
            return self.call(fn, name or type(obj).__name__, args, kwargs)
        if op == "getattr":
            _, target, name = req
            obj = self.module if target is None else self.objects[target]
            return self.answer(getattr(obj, name))
        if op == "iter":
            return self.keep(iter(self.objects[req[1]]))
        if op == "next":
            try:
                return self.answer(next(self.objects[req[1]]))
            except StopIteration:
                return ("stop",)
        if op == "map":
            _, name, calls = req
            fn = getattr(self.module, name)
            out = []
            for args in calls:
                try:
                    v = fn(*args)
                except BaseException as exc:  # say which call raised
                    reply = self.raised(exc)
                    reply[1]["where"] = f"{name}{tuple(args)!r}" + (
                        f", {reply[1]['where']}" if reply[1]["where"] else ""
                    )
                    return reply
                if not plain(v):
                    return ("error", f"{name}{tuple(args)!r} returned a {type(v).__name__}, not plain data")
                out.append(v)
            return ("ok", out)
        if op == "new":
            _, helper, args, kwargs = req
            return self.answer(host_helpers.HELPERS[helper](*self.resolve(args), **self.resolve_kw(kwargs)))
        if op == "threads":
            return ("ok", (threading.active_count(), [t.name for t in threading.enumerate()], threading.get_ident()))
        if op == "guards":
            return ("ok", dict(self.guards))
        return ("error", f"unknown request {op!r}")

    def call(
        self, fn: Any, name: str, args: Sequence[tuple[str, Any]], kwargs: dict[str, tuple[str, Any]]
    ) -> tuple[Any, ...]:
        values, kw = self.resolve(args), self.resolve_kw(kwargs)
        before = {i: _snapshot(v) for i, (kind, v) in enumerate(args) if kind == "v"}
        before_kw = {k: _snapshot(v) for k, (kind, v) in kwargs.items() if kind == "v"}
        result = fn(*values, **kw)
        changed = [i for i, snap in before.items() if snap is not None and _snapshot(values[i]) != snap]
        changed_kw = [k for k, snap in before_kw.items() if snap is not None and _snapshot(kw[k]) != snap]
        if changed or changed_kw:
            names = _param_names(fn, len(values))
            which = [f"argument {i + 1} ({names[i]})" if i < len(names) else f"argument {i + 1}" for i in changed]
            which += [f"argument {k}" for k in changed_kw]
            return ("mutated", name, which)
        return self.answer(result)

    def load(self) -> tuple[Any, ...]:
        spec = importlib.util.spec_from_file_location(self.cfg["module"], self.cfg["learner"])
        if spec is None or spec.loader is None:
            return ("error", f"cannot import {self.cfg['learner']}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[self.cfg["module"]] = mod  # dataclasses and pickling look their module up here
        spec.loader.exec_module(mod)
        self.module = mod
        return ("ok", None)

    def serve(self) -> None:
        while True:
            msg = self.recv()
            if msg is None:
                return
            releases, req = msg
            for h in releases:
                self.objects.pop(h, None)
            try:
                reply = self.handle(req)
            except BaseException as exc:  # the learner's code raised (anything): tell the grader
                # Release the finished frames' locals first (after a MemoryError
                # they hold what filled the memory); their names and lines stay.
                traceback.clear_frames(exc.__traceback__)
                try:
                    reply = self.raised(exc)
                except BaseException as inner:  # describing it failed (a MemoryError, a hostile __str__...)
                    reply = ("raised", {"type": type(exc).__name__, "base": "Exception", "message": repr(inner)[:200]})
            self.send(reply)


def _snapshot(v: Any) -> bytes | None:
    """The pickled value of an argument, to see whether a call changed it
    (None when it does not pickle)."""
    try:
        return pickle.dumps(v, protocol=4)
    except Exception:
        return None


def _param_names(fn: Any, n: int) -> list[str]:
    try:
        import inspect

        return list(inspect.signature(fn).parameters)[:n]
    except (TypeError, ValueError):
        return []


def main() -> None:
    cfg = json.loads(sys.argv[1])
    sys.dont_write_bytecode = True
    sys.path[:0] = list(cfg["path"])  # this folder and the linked packages
    rfd, wfd = int(cfg["fd_in"]), int(cfg["fd_out"])
    host = Host(cfg, rfd, wfd)
    for name in cfg.get("preimport", []):  # numpy: its libraries load before the file system shrinks
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    import inspect  # noqa: F401 - for _param_names, imported before the lockdown

    host.guards = host_lockdown.lock_down(cfg["own"], _BASE_PATH + list(cfg.get("read_only", [])))
    host.serve()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
