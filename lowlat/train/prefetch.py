"""The prefetching loader of chapter 06: a background producer thread reads
up to ``depth`` items ahead into a bounded queue while the consumer
(the training loop) takes them in order; errors arrive where they happened,
and a pass ends cleanly however the consumer leaves it.  Times in s."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

from lowlat.core.validate import int_arg
from lowlat.train._args import real_arg

T = TypeVar("T")


# ---- the loader ----------------------------------------------------------------------

_ITEM, _END, _ERROR = 0, 1, 2


class _Pass:
    """One pass (epoch) of a :class:`PrefetchLoader`: its producer's stop,
    queue and thread, and, once it has ended, why."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.queue: queue.Queue | None = None
        self.thread: threading.Thread | None = None
        self.ended: str | None = None

    def check(self) -> None:
        if self.ended is not None:
            raise RuntimeError(
                f"this pass over the PrefetchLoader has ended: {self.ended}; "
                "start a new pass with iter(loader) (or a new for loop)"
            )


class PrefetchLoader(Generic[T]):
    """Iterates ``iterable`` in order while a background thread reads up to
    ``depth`` items ahead into a bounded queue.

    - ``depth=0``: no thread; items are read on the caller's thread.
    - An exception raised by the source reaches the consumer at the point in
      the stream where it happened, as the same exception object (its
      traceback still shows the source's frames).
    - ``close()``, leaving a ``with`` block, or breaking out of a ``for``
      loop stops the producer: it reads no further item once it sees the
      stop (it finishes the read it is in) and its thread ends.
    - Each ``iter()`` starts a fresh pass (an epoch) and ends the previous one:
      one pass at a time.  An iterator whose pass has ended (``close()``, the
      end of a ``with`` block, a newer ``iter()``) raises RuntimeError when
      asked for more, rather than skip items or wait forever.

    Counters (read them after a pass): ``produced`` items read from the
    source, ``consumed`` items handed out, ``wait_s`` seconds the consumer
    spent blocked waiting for an item.
    """

    def __init__(self, iterable: Iterable[T], depth: int = 2) -> None:
        self.depth = int_arg(depth, "depth", minimum=0, maximum=1_000_000)
        if not hasattr(iterable, "__iter__") and not hasattr(iterable, "__getitem__"):
            raise TypeError(
                f"PrefetchLoader reads an iterable (a dataset, a list, a generator), got {type(iterable).__name__}"
            )
        self._iterable = iterable
        self._pass: _Pass | None = None
        self.produced = 0
        self.consumed = 0
        self.wait_s = 0.0

    def __iter__(self) -> Iterator[T]:
        self._end(self._pass, "a newer iter() over the same loader started another pass (one pass at a time)")
        self.produced = self.consumed = 0
        self.wait_s = 0.0
        run = self._pass = _Pass()
        return self._inline(run) if self.depth == 0 else self._prefetched(run)

    def _inline(self, run: _Pass) -> Iterator[T]:
        it = iter(self._iterable)
        while True:
            run.check()
            t0 = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                self.wait_s += time.perf_counter() - t0
            self.produced += 1
            self.consumed += 1
            yield item

    def _prefetched(self, run: _Pass) -> Iterator[T]:
        q: queue.Queue = queue.Queue(maxsize=self.depth)
        t = threading.Thread(target=self._produce, args=(q, run.stop), name="lowlat-prefetch", daemon=True)
        run.queue, run.thread = q, t
        t.start()
        try:
            while True:
                t0 = time.perf_counter()
                kind, payload = _get(q, run)  # raises if the pass was ended meanwhile (close(), a newer iter())
                self.wait_s += time.perf_counter() - t0
                if kind == _END:
                    return
                if kind == _ERROR:
                    raise payload
                self.consumed += 1
                yield payload
        finally:
            self._end(run, "it ended")

    def _produce(self, q: queue.Queue, stop: threading.Event) -> None:
        it: Iterator[Any] | None = None
        try:
            it = iter(self._iterable)
            while not stop.is_set():
                try:
                    item = next(it)
                except StopIteration:
                    _put(q, (_END, None), stop)
                    return
                self.produced += 1
                if not _put(q, (_ITEM, item), stop):
                    return
        except BaseException as exc:
            _put(q, (_ERROR, exc), stop)
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()  # a generator source runs its own cleanup, here, in this thread

    def close(self, timeout_s: float = 5.0) -> None:
        """Ends the current pass: stops the producer and waits up to
        ``timeout_s`` for its thread to end (a warning says so if the
        source's read outlasts that).  Its iterator then raises RuntimeError;
        ``iter()`` starts a new pass."""
        timeout_s = real_arg(timeout_s, "timeout_s", minimum=0.0, maximum=86_400.0)
        self._end(self._pass, "the loader was closed (close(), or the end of its with block)", timeout_s)

    def _end(self, run: _Pass | None, reason: str, timeout_s: float = 5.0) -> None:
        """Ends ``run`` (a no-op if it has ended already), saying why."""
        if run is None or run.ended is not None:
            return
        run.ended = reason
        run.stop.set()
        t, q = run.thread, run.queue
        if q is not None:
            _drain(q)  # unblocks a producer waiting on a full queue
        if t is not None and t is not threading.current_thread():
            t.join(timeout_s)
            if t.is_alive():
                warnings.warn(
                    f"PrefetchLoader: the producer is still inside a read after {timeout_s:g} s; "
                    "it will stop when that read returns",
                    RuntimeWarning,
                    stacklevel=3,
                )

    @property
    def running(self) -> bool:
        """True while a producer thread is alive."""
        run = self._pass
        return run is not None and run.thread is not None and run.thread.is_alive()

    def __enter__(self) -> PrefetchLoader[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self._iterable)  # type: ignore[arg-type]

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown: nothing left to report to
            self.close(timeout_s=0.5)


def _put(q: queue.Queue, msg: tuple[int, Any], stop: threading.Event) -> bool:
    """Blocking put that gives up when ``stop`` is set; True if it was put."""
    while not stop.is_set():
        try:
            q.put(msg, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def _get(q: queue.Queue, run: _Pass) -> tuple[int, Any]:
    """Blocking get that raises (``run.check()``) once ``run`` has ended."""
    while True:
        run.check()
        try:
            return q.get(timeout=0.05)
        except queue.Empty:
            continue


def _drain(q: queue.Queue) -> None:
    while True:
        try:
            q.get_nowait()
        except queue.Empty:
            return


__all__ = ["PrefetchLoader"]
