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
        # YOUR CODE HERE (see README.md)
        raise NotImplementedError("see README.md")

    def _consume(self) -> Iterator[Any]:
        # YOUR CODE HERE (see README.md)
        raise NotImplementedError("see README.md")

    def _produce(self, q: queue.Queue, stop: threading.Event) -> None:
        # YOUR CODE HERE (see README.md)
        raise NotImplementedError("see README.md")

    def close(self) -> None:
        """Stops the producer (if any) and waits for its thread to end."""
        # YOUR CODE HERE (see README.md)
        raise NotImplementedError("see README.md")


def _put(q: queue.Queue, msg: tuple, stop: threading.Event) -> bool:
    """put() that gives up when ``stop`` is set; True if ``msg`` was put."""
    # YOUR CODE HERE (see README.md)
    raise NotImplementedError("see README.md")
