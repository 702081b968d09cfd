"""lowlat: low-latency engineering measured on your own machine.

The hot paths are a C11 core (``csrc/``, compiled into ``lowlat._core`` by
cffi at install time); this package is its Python face:

- :class:`Pool` - fixed-size block pool (``csrc/pool.c``)
- :class:`SpscQueue` - single-producer single-consumer ring (``csrc/spsc.c``)
- :class:`Histogram` - log-linear latency histogram (``csrc/hist.c``)
- :mod:`lowlat.clock`, :mod:`lowlat.affinity` - clocks, CPUs, pinning
- :mod:`lowlat.machine`, :mod:`lowlat.topology`, :mod:`lowlat.doctor` - the machine model: usable CPUs,
  quota, SMT siblings, line and page size, load; what it means for the course
- :mod:`lowlat.toolchain` - the C compiler, flags and sanitizers (the grader, the demos, the tests)
- :mod:`lowlat.wait` - the wait policies of the C loops (spin, yield, ...)
- :mod:`lowlat.experiments` - the measurement loops (run in C, ``csrc/bench/``), one module per concept
- :mod:`lowlat.interleave` - the A B A B comparison method every experiment uses
- :mod:`lowlat.measure` - timers, tails, coordinated omission, counters, the decision path, a gate
- :mod:`lowlat.pipeline` - producer -> ring -> consumer in C threads (``csrc/pipeline.c``)
- :mod:`lowlat.train` - the method carried over to ML training
- :mod:`lowlat.demos` - the stand-alone C demos (``csrc/demos/``), built on the spot
- :mod:`lowlat.bench` - the suite: every experiment, one table (``python -m lowlat bench``)
- :mod:`lowlat.grading` - the grader: finds each exercise by its folder, runs every check in a child process
- ``python -m lowlat doctor | bench | tour | grade`` - the learner's command line (author and
  instructor commands are in the repository's ``tools/``)
"""

from lowlat.errors import (
    CoreError,
    DoubleFreeError,
    ForeignPointerError,
    LowlatError,
    PoolError,
    PoolExhaustedError,
)
from lowlat.hist import Histogram
from lowlat.machine import machine, machine_label
from lowlat.pool import Block, Pool, PoolStats
from lowlat.spsc import SpscQueue

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
    "machine",
    "machine_label",
]
