"""lowlat: low-latency engineering measured on your own machine.

The hot paths are a C11 core (``csrc/``, compiled into ``lowlat.core._core``
by cffi at install time).  The package's layers are its folders, each
importing only the ones below it:

- ``lowlat.__main__`` - the learner's command line: ``python -m lowlat doctor | bench | tour | grade | soak``
- :mod:`lowlat.bench` - the suite: every experiment, one table and one JSON
- :mod:`lowlat.experiments`, :mod:`lowlat.train`, :mod:`lowlat.grading` - the chapters'
  experiments, the method carried over to ML training, and the grader
- :mod:`lowlat.method` - interleaved A/B rounds, readings with their threshold, plots, profiles
- :mod:`lowlat.machine` - the machine model: CPUs, quota, SMT, caches, timer, VM, counters, placement
- :mod:`lowlat.core` - the C core's wrappers, one per C concept, its build and its toolchain

The names below are the ones a learner meets first: :class:`Pool`,
:class:`SpscQueue`, :class:`Histogram` and the errors they raise.
"""

from lowlat.core.errors import (
    CoreError,
    DoubleFreeError,
    ForeignPointerError,
    LowlatError,
    PoolError,
    PoolExhaustedError,
)
from lowlat.core.hist import Histogram
from lowlat.core.pool import Block, Pool, PoolStats
from lowlat.core.spsc import SpscQueue
from lowlat.machine.model import machine_label

__version__ = "0.1.0"

__all__ = [
    "Block",
    "CoreError",
    "DoubleFreeError",
    "ForeignPointerError",
    "Histogram",
    "LowlatError",
    "Pool",
    "PoolError",
    "PoolExhaustedError",
    "PoolStats",
    "SpscQueue",
    "machine_label",
]
