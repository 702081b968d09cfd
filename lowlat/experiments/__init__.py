"""The course's experiments: each C measurement loop of ``csrc/bench/``
wrapped as a function that returns a dataclass or a number, one module per
concept.  Python configures a run, C runs it; variants that are compared run
interleaved (:mod:`lowlat.method.interleave`).

- :mod:`lowlat.experiments.alloc` - malloc vs the pool, fragmented heaps, page faults
- :mod:`lowlat.experiments.queues` - the SPSC ring between C threads, core to core, Python-thread queues
- :mod:`lowlat.experiments.taxes` - mutex, system call, pointer chase, histogram record

The suite that runs them all is :mod:`lowlat.bench` (which imports these,
never the other way round).
"""

from lowlat.experiments.alloc import (
    AllocComparison,
    AllocRun,
    FragmentedHeap,
    PageFaults,
    alloc_run,
    compare_alloc,
    page_faults,
)
from lowlat.experiments.queues import (
    SpscRun,
    c2c_one_way_ns,
    python_queue,
    spsc_python_batches,
    spsc_rtt,
    spsc_throughput,
)
from lowlat.experiments.taxes import chase_ns, hist_record_ns, mutex_ns, syscall_ns

__all__ = [
    "AllocComparison",
    "AllocRun",
    "FragmentedHeap",
    "PageFaults",
    "SpscRun",
    "alloc_run",
    "c2c_one_way_ns",
    "chase_ns",
    "compare_alloc",
    "hist_record_ns",
    "mutex_ns",
    "page_faults",
    "python_queue",
    "spsc_python_batches",
    "spsc_rtt",
    "spsc_throughput",
    "syscall_ns",
]
