"""The course's method carried over to ML training (chapter 06), on a CPU:

- :mod:`lowlat.train.batching` - per-row vs batched numpy, single vs batched calls into the C core;
- :mod:`lowlat.train.loader` - a heavy-tailed data source, :class:`PrefetchLoader`, a simulated
  accelerator step and the idle time ("bubbles") it sees;
- :mod:`lowlat.train.roofline` - this machine's FLOP/s and bandwidth, and kernels placed under them;
- :mod:`lowlat.train.precision` - float32 against float64 on the roofline: twice the intensity, and the error;
- :mod:`lowlat.train.stragglers` - synchronous steps with real worker processes, then simulated fan-out;
- :mod:`lowlat.train.overlap` - a data-parallel step's all-reduce hidden behind backward, with real threads;
- :mod:`lowlat.train.checkpoint` - goodput against checkpoint interval under random failures.
"""

from lowlat.train.batching import batch_sweep, compare_row_norms, ffi_costs
from lowlat.train.checkpoint import daly_interval, expected_goodput, simulate_goodput, sweep, young_interval
from lowlat.train.loader import EpochStats, HeavyTailSource, PrefetchLoader, SimulatedStep, depth_sweep, train_epoch
from lowlat.train.stragglers import WorkerModel, fan_out, run_sync_steps, simulate_steps, slow_step_probability

__all__ = [
    "EpochStats",
    "HeavyTailSource",
    "PrefetchLoader",
    "SimulatedStep",
    "WorkerModel",
    "batch_sweep",
    "compare_row_norms",
    "daly_interval",
    "depth_sweep",
    "expected_goodput",
    "fan_out",
    "ffi_costs",
    "run_sync_steps",
    "simulate_goodput",
    "simulate_steps",
    "slow_step_probability",
    "sweep",
    "train_epoch",
    "young_interval",
]
