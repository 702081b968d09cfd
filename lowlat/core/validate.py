"""Argument checks shared by the wrappers: everything is validated in Python
before it reaches C, with a message that says what was wrong and what is
allowed."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

UINT64_MAX = 2**64 - 1


def int_arg(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as a Python int, refusing bools, floats and out-of-range values."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {v}")
    return v


def power_of_two(value: Any, name: str = "capacity") -> int:
    """A power of two >= 2 (ring capacities)."""
    v = int_arg(value, name)
    if v < 2 or v & (v - 1):
        lower = 1 << max(1, v.bit_length() - 1) if v >= 2 else 2
        raise ValueError(f"{name} must be a power of two >= 2, got {v} (nearest allowed: {lower} or {lower * 2})")
    return v


def array_arg(arr: Any, dtype: np.dtype, name: str, *, writable: bool = False) -> np.ndarray:
    """A 1-D, C-contiguous numpy array of exactly ``dtype``; never copies, so
    C sees the caller's memory."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy array of dtype {dtype}, got {type(arr).__name__}")
    if arr.dtype != dtype:
        raise TypeError(
            f"{name} must have dtype {dtype}, got {arr.dtype} (convert with arr.astype(np.{dtype}))"
            if dtype.kind != "V"
            else f"{name} must have dtype {dtype}, got {arr.dtype}"
        )
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous (a strided view was given; use np.ascontiguousarray)")
    if writable and not arr.flags.writeable:
        raise ValueError(f"{name} must be writable (it is a read-only array)")
    return arr
