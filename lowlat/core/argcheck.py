"""Argument checks for plain Python values (numbers, flags, text, functions),
beside :mod:`lowlat.core.validate`'s integers and arrays: each refuses a
wrong value where it enters, with a one-line message that names the
parameter, says what was given and what is allowed.  A NaN or an inf would
flow through the arithmetic and come out as a confident-looking nonsense
answer, so numbers are finite unless a caller says otherwise."""

from __future__ import annotations

import math
import numbers
import re
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
    """``value`` as a finite float (numpy numbers too), refusing bools,
    non-numbers (complex included), NaN and infinities, values below
    ``minimum`` (or <= 0 with ``positive``) and above ``maximum``."""
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
    return v + 0.0  # -0.0 becomes 0.0: one zero, one key


def bool_arg(value: Any, name: str) -> bool:
    """A real bool (numpy's too): never a string such as 'no', which is true."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def str_arg(value: Any, name: str, *, empty: bool = True) -> str:
    """A str (non-empty unless ``empty``), without NUL characters."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__} {value!r}")
    if not empty and not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if "\0" in value:
        raise ValueError(f"{name} must not contain a NUL character, got {value!r}")
    return value


def callable_arg(value: Any, name: str) -> Any:
    """A function (or any callable) to call."""
    if not callable(value):
        raise TypeError(f"{name} must be a function to call, got {type(value).__name__} {value!r}")
    return value


def regex_arg(value: Any, name: str) -> re.Pattern[str]:
    """A regular expression, compiled; its syntax error named as ``name``'s."""
    if isinstance(value, re.Pattern):
        return value
    str_arg(value, name)
    try:
        return re.compile(value)
    except re.error as exc:
        raise ValueError(f"{name} is not a valid regular expression ({exc}), got {value!r}") from None


__all__ = ["bool_arg", "callable_arg", "real_arg", "regex_arg", "str_arg"]


def finite_arg(value: object, name: str, *, positive: bool = False) -> float:
    """A finite real number >= 0 (> 0 with ``positive``); NaN, inf,
    negatives and non-numbers are refused, naming ``name``."""
    allowed = "a finite number > 0" if positive else "a finite number >= 0"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {allowed}, got {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return v


def function_arg(fn: object, name: str) -> None:
    """A function the caller will call with no arguments."""
    if not callable(fn):
        raise TypeError(f"{name} must be a function to call (no arguments), got {type(fn).__name__} {fn!r}")
