"""Ctrl-C during a long call into the C core: :func:`stoppable` and
:class:`Interrupted`.

A long C call (a pipeline run, a benchmark loop, a corrected record of a big
array) holds the main thread inside C, and Python runs its SIGINT handler
only once the call returns: Ctrl-C would wait for the whole call.  Inside
``with stoppable():`` a SIGINT sets the core's stop flag (``csrc/stop.h``) at
once, from a C handler; every long C loop polls that flag and ends early with
what it measured so far.  The code in the block then calls :func:`check`,
which raises :class:`Interrupted` (a ``KeyboardInterrupt``) carrying that
partial result.  A second Ctrl-C in the same block raises
``KeyboardInterrupt`` at once, wherever Python is.

Outside a ``stoppable()`` block the flag is always clear and SIGINT behaves
as Python's default.  Blocks nest (only the outermost installs and restores
the handlers); in a thread other than the main one a block does nothing
(only the main thread receives Python's signals), and so it does where
SIGINT is ignored (a job started in the background keeps ignoring it).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lowlat.core._lib import lib
from lowlat.core.errors import check_status


class Interrupted(KeyboardInterrupt):
    """A long call ended early on Ctrl-C.  ``what`` says what stopped and how
    far it got; ``partial`` holds what was measured before the stop (a result
    object, a dict of numbers, or None)."""

    def __init__(self, what: str, partial: Any = None) -> None:
        super().__init__(what)
        self.what = what
        self.partial = partial

    def __str__(self) -> str:
        return f"interrupted (Ctrl-C): {self.what}"


_depth = 0  # nesting of stoppable() blocks in the main thread
_sigints = 0  # SIGINTs seen by the outermost block


def requested() -> bool:
    """True once Ctrl-C asked the current ``stoppable()`` block to stop."""
    return bool(lib.ll_stop_requested())


def check(what: str, partial: Any = None) -> None:
    """Raises :class:`Interrupted` (``what``, ``partial``) if a stop was requested."""
    if lib.ll_stop_requested():
        raise Interrupted(what, partial)


def _on_sigint(signum: int, frame: Any) -> None:
    global _sigints
    lib.ll_stop_request()  # the C handler did it already; a SIGINT raised from Python only comes here
    _sigints += 1
    if _sigints > 1:
        raise KeyboardInterrupt("Ctrl-C twice: stopping at once")


@contextmanager
def stoppable() -> Iterator[None]:
    """Ctrl-C inside the block stops the core's long loops at once (see the
    module's docstring).  On leaving the block the handlers are restored and
    the flag cleared; if a stop was requested and nothing raised,
    :class:`Interrupted` is raised then, so a Ctrl-C is never lost."""
    global _depth, _sigints
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return
    if _depth > 0:
        _depth += 1
        try:
            yield
        finally:
            _depth -= 1
        return
    previous = signal.getsignal(signal.SIGINT)
    lib.ll_stop_clear()
    _sigints = 0
    _depth = 1
    try:
        if previous is not None:  # None: a handler Python did not install; leave it to the C chain
            signal.signal(signal.SIGINT, _on_sigint)
        check_status(lib.ll_stop_sigint_attach(), "attaching the SIGINT handler")
        try:
            yield
        finally:
            check_status(lib.ll_stop_sigint_detach(), "restoring the SIGINT handler")
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        stopped = requested()
    finally:
        _depth = 0
        lib.ll_stop_clear()
    if stopped:
        raise Interrupted("stopped before the end of the run")


__all__ = ["Interrupted", "check", "requested", "stoppable"]
