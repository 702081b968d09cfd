"""What ``python -m lowlat bench`` returns: the flat dict of numbers (one per
:data:`lowlat.bench.keys.KEYS` key measured) and the steps that failed, each
with its reason and the keys it left unmeasured (NaN in the dict, null in
the JSON)."""

from __future__ import annotations

from dataclasses import dataclass

from lowlat.bench.keys import RATIO_BAND


@dataclass(frozen=True)
class StepFailure:
    """A step of the suite that raised: its number and title, the reason
    (``ExceptionType: message``), and the keys left without a value
    (those no other step measured; shared when several steps failed)."""

    step: int
    title: str
    reason: str
    keys: tuple[str, ...] = ()

    def line(self) -> str:
        """One line for a person: which step, why."""
        return f"step {self.step} ({self.title}) failed: {self.reason}"


def inconclusive(value: float, band: tuple[float, float]) -> bool:
    """True when a ratio key's 90% band for its median reaches beyond
    :data:`~lowlat.bench.keys.RATIO_BAND` of ``value`` either way: a rerun
    may move it that much, so one run does not settle it."""
    lo, hi = band
    return not (value * (1 - RATIO_BAND) <= lo and hi <= value * (1 + RATIO_BAND))


class BenchResults(dict[str, float]):
    """The suite's numbers (a plain ``dict[str, float]``: key -> value, NaN
    where a key has no value), plus ``failures``: the steps that raised, in
    order (empty when every step ran), and ``bands``: for the ratio keys
    (medians of per-round ratios), the 90% band of the median, by key."""

    def __init__(
        self,
        values: dict[str, float],
        failures: list[StepFailure] | None = None,
        bands: dict[str, tuple[float, float]] | None = None,
    ) -> None:
        super().__init__(values)
        self.failures: list[StepFailure] = list(failures or [])
        self.bands: dict[str, tuple[float, float]] = dict(bands or {})

    def inconclusive(self) -> list[str]:
        """The ratio keys one run does not settle (:func:`inconclusive`)."""
        return [k for k, band in self.bands.items() if k in self and inconclusive(self[k], band)]

    def reason(self, key: str) -> str | None:
        """Why ``key`` has no value (the failed step's line), or None."""
        lines = [f.line() for f in self.failures if key in f.keys]
        return "; ".join(lines) if lines else None


__all__ = ["BenchResults", "StepFailure", "inconclusive"]
