"""Argument checks shared by the training chapter's modules: numbers that
must be real and finite (a NaN or an inf would flow through the arithmetic
and come out as a confident-looking nonsense answer), with messages that
say what was wrong and what is allowed.  Integers: :func:`lowlat.core.validate.int_arg`;
real numbers: :func:`lowlat.core.argcheck.real_arg` (re-exported here)."""

from __future__ import annotations

from typing import Any

from lowlat.core.argcheck import real_arg


def probability_arg(value: Any, name: str) -> float:
    """A probability: a finite number in [0, 1]."""
    v = real_arg(value, name)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return v


__all__ = ["probability_arg", "real_arg"]
