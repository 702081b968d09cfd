"""The grader's side of a learner's Python process: :class:`Learner` starts
the host in a fresh folder (:mod:`lowlat.grading.pyfolder`) under the
grader's limits and calls the learner's module over a pipe; :class:`Remote`
is an object that lives there.  See :mod:`lowlat.grading.pyharness` for
what the checks see, and ``host.py`` for the child's side."""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import shutil
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from lowlat.grading import pyfolder, sandbox
from lowlat.grading.pyvalues import HostError, LearnerMutated, LearnerStopped, loads, raised_from
from lowlat.grading.sandbox import DEFAULT_LIMITS, Limits

MAX_REPLY = 256 << 20  # bytes: the largest result the grader's process accepts from a child


class Learner:
    """The learner's module, imported in a child process (see the module's
    docstring)."""

    def __init__(
        self,
        learner: Path,
        *,
        module_name: str,
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
        try:
            self._folder = pyfolder.make(learner)
        except BaseException:
            shutil.rmtree(self._outdir, ignore_errors=True)
            raise
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self._err_path = self._outdir / "stderr"
        self._w, self._r = to_child_w, from_child_r
        self._activity = "starting"
        with open(self._outdir / "stdout", "wb") as out_f, open(self._err_path, "wb") as err_f:
            try:
                self._proc = sandbox.spawn(
                    self._folder.command(module_name, to_child_r, from_child_w),
                    cwd=self._folder.work,
                    env=sandbox.child_env(self._folder.work),
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
                self._folder.remove()
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
        self._folder.remove()

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
            reply = loads(payload)
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
            exc = raised_from(reply[1])
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

    def helper(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """One of the host's helpers (``CountingSource``, ``epoch_idle_share``,
        see ``host_helpers.py``), created or called in the child: a Remote for
        an object, the value for data."""
        req = ("new", name, self._args(args), self._kwargs(kwargs))
        return self._value(self._request(req, f"creating a {name}"))

    def threads(self) -> int:
        """How many threads the child runs now (its main thread included),
        counted by the kernel (``/proc/<pid>/task``): learner code cannot
        change the count.  Where there is no /proc (macOS), the child's own
        ``threading.active_count()``, which it can."""
        if self._pending:  # objects the checks dropped (a loop left early) are released first
            self._request(("threads",), "counting threads")
        try:
            return len(os.listdir(f"/proc/{self._proc.pid}/task"))
        except OSError:
            count, _names, _main = self._value(self._request(("threads",), "counting threads"))
            return int(count)

    def thread_names(self) -> list[str]:
        """The child's Python threads' names, as the child says (for messages only)."""
        return list(self._value(self._request(("threads",), "counting threads"))[1])

    def main_thread(self) -> int:
        """The ident of the child's thread that runs the grader's calls."""
        return int(self._value(self._request(("threads",), "counting threads"))[2])

    def guards(self) -> dict[str, str]:
        """What the child's lockdown put in force: {"seccomp": "on" or why
        not, "landlock": "on" or why not}."""
        return dict(self._value(self._request(("guards",), "asking what is in force")))


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
