"""Argument checks shared by the training chapter's modules: numbers that
must be real and finite (a NaN or an inf would flow through the arithmetic
and come out as a confident-looking nonsense answer), with messages that
say what was wrong and what is allowed.  Integers: :func:`lowlat.core.validate.int_arg`."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np


def real_arg(
    value: Any,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    positive: bool = False,
) -> float:
    """``value`` as a finite float, refusing bools, non-numbers, NaN and
    infinities, values below ``minimum`` (or <= 0 with ``positive``) and
    above ``maximum``."""
    lo = "> 0" if positive else (f">= {minimum:g}" if minimum is not None else "")
    hi = f"<= {maximum:g}" if maximum is not None else ""
    allowed = " and ".join(x for x in (lo, hi) if x)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be {' '.join(filter(None, ['a number', allowed]))}, got {type(value).__name__} {value!r}"
        )
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be {' '.join(filter(None, ['a finite number', allowed]))}, got {value!r}")
    if (positive and v <= 0) or (minimum is not None and v < minimum):
        raise ValueError(f"{name} must be {lo}, got {value!r}" + (f" (and {hi})" if hi else ""))
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be {hi}, got {value!r}" + (f" (and {lo})" if lo else ""))
    return v


def probability_arg(value: Any, name: str) -> float:
    """A probability: a finite number in [0, 1]."""
    v = real_arg(value, name)
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return v


__all__ = ["probability_arg", "real_arg"]
