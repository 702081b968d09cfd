"""What ``python -m lowlat bench`` returns: the flat dict of numbers (one per
:data:`lowlat.bench.keys.KEYS` key measured) and the steps that failed, each
with its reason and the keys it left unmeasured (NaN in the dict, null in
the JSON)."""

from __future__ import annotations

from dataclasses import dataclass


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


class BenchResults(dict[str, float]):
    """The suite's numbers (a plain ``dict[str, float]``: key -> value, NaN
    where a key has no value), plus ``failures``: the steps that raised, in
    order (empty when every step ran)."""

    def __init__(self, values: dict[str, float], failures: list[StepFailure] | None = None) -> None:
        super().__init__(values)
        self.failures: list[StepFailure] = list(failures or [])

    def reason(self, key: str) -> str | None:
        """Why ``key`` has no value (the failed step's line), or None."""
        lines = [f.line() for f in self.failures if key in f.keys]
        return "; ".join(lines) if lines else None


__all__ = ["BenchResults", "StepFailure"]
