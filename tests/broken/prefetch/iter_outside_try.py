# BROKEN: the producer calls iter(source) outside its try: an exception there never reaches the consumer. EXPECT exception: an exception from iter(source)
"""Exercise 06: a prefetching loader.  The task is in README.md; check it with
``python -m lowlat grade prefetch prefetch.py``."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

_ITEM, _END, _ERROR = "item", "end", "error"


class PrefetchLoader:
    """Iterates ``iterable`` in order while a background thread reads up to
    ``depth`` items ahead into a bounded queue; ``depth=0`` reads on the
    caller's thread.  Exceptions of the source reach the consumer; close()
    and an early break stop the producer."""

    def __init__(self, iterable: Iterable[Any], depth: int = 2) -> None:
        if isinstance(depth, bool) or not isinstance(depth, int):
            raise TypeError(f"depth must be an int, got {type(depth).__name__}")
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        self.iterable = iterable
        self.depth = depth
        self._thread: threading.Thread | None = None
        self._queue: queue.Queue | None = None
        self._stop = threading.Event()

    def __iter__(self) -> Iterator[Any]:
        self.close()
        if self.depth == 0:
            return iter(self.iterable)
        return self._consume()

    def _consume(self) -> Iterator[Any]:
        self._queue = queue.Queue(maxsize=self.depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, args=(self._queue, self._stop), daemon=True)
        self._thread.start()
        try:
            while True:
                kind, payload = self._queue.get()
                if kind == _END:
                    return
                if kind == _ERROR:
                    raise payload  # the same object: its traceback still shows the source's frames
                yield payload
        finally:  # runs on exhaustion, on an exception, and when a for loop is left early
            self.close()

    def _produce(self, q: queue.Queue, stop: threading.Event) -> None:
        it = iter(self.iterable)
        try:
            while not stop.is_set():
                try:
                    item = next(it)
                except StopIteration:
                    _put(q, (_END, None), stop)
                    return
                if not _put(q, (_ITEM, item), stop):
                    return
        except BaseException as exc:  # handed to the consumer
            _put(q, (_ERROR, exc), stop)
        finally:
            if hasattr(it, "close"):
                it.close()

    def close(self) -> None:
        """Stops the producer (if any) and waits for its thread to end."""
        if self._thread is None:
            return
        self._stop.set()
        while True:  # empty the queue so a producer blocked on put() wakes up
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if self._thread is not threading.current_thread():
            self._thread.join(5)
        self._thread = None


def _put(q: queue.Queue, msg: tuple, stop: threading.Event) -> bool:
    """put() that gives up when ``stop`` is set; True if ``msg`` was put."""
    while not stop.is_set():
        try:
            q.put(msg, timeout=0.05)
            return True
        except queue.Full:
            pass
    return False
