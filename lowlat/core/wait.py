"""How a thread waits when its ring is full or empty: the wait policies of
the C core (``enum ll_wait_policy`` in ``csrc/common/ll_wait.h``), by name.

The names and their values are read from the compiled core, not restated:
``LL_WAIT_SPIN_YIELD`` becomes ``"spin_yield"``.  The benchmark loops
(:mod:`lowlat.experiments`) accept every policy but sleeping; the pipeline
(:mod:`lowlat.core.pipeline`) accepts them all.
"""

from __future__ import annotations

from lowlat.core._lib import ffi

_PREFIX = "LL_WAIT_"

# name -> C value, in the enum's order: {"spin": 0, "yield": 1, "spin_yield": 2, "sleep": 3, "backoff": 4}
WAITS: dict[str, int] = {
    name[len(_PREFIX) :].lower(): int(value)
    for name, value in sorted(ffi.typeof("enum ll_wait_policy").relements.items(), key=lambda kv: kv[1])
}
# The C benchmark loops refuse sleeping (a 1 us nap would be what they measure).
BENCH_WAITS: dict[str, int] = {k: v for k, v in WAITS.items() if k != "sleep"}


def wait_code(wait: str, allowed: dict[str, int] = BENCH_WAITS) -> int:
    """The C value of the policy ``wait``; ValueError naming the allowed
    policies for any other name."""
    if wait not in allowed:
        raise ValueError(f"wait must be one of {sorted(allowed)}, got {wait!r}")
    return allowed[wait]


__all__ = ["BENCH_WAITS", "WAITS", "wait_code"]
