"""Exceptions raised by lowlat.  Each subclasses the built-in exception a
caller would naturally catch (ValueError, RuntimeError), so generic code keeps
working, and names the precise failure for code that cares."""

from __future__ import annotations

from lowlat.core._lib import ffi


class LowlatError(Exception):
    """Base class of every lowlat-specific exception."""


class PoolError(LowlatError, ValueError):
    """Misuse of a :class:`lowlat.Pool` detected by its checked mode."""


class DoubleFreeError(PoolError):
    """A block was returned to the pool twice."""


class ForeignPointerError(PoolError):
    """A block (or address) that this pool never handed out was freed."""


class PoolExhaustedError(LowlatError, RuntimeError):
    """``Pool.alloc()`` found every block in use."""


class CoreError(LowlatError, RuntimeError):
    """The C core returned an error status where none was expected."""


# What each status of ``enum ll_status`` (csrc/common/ll_common.h) means, by
# name.  The names and their values come from the compiled core.
EXPLANATIONS = {
    "LL_ENOMEM": "out of memory",
    "LL_EINVAL": "invalid argument",
    "LL_EDOUBLE": "double free",
    "LL_EFOREIGN": "foreign pointer",
    "LL_ENOTSUP": "not supported on this platform",
    "LL_ERANGE": "value out of range",
    "LL_ESYS": "operating-system call failed",
    "LL_EMISMATCH": "incompatible layouts",
}


def _status_names() -> dict[int, str]:
    return {
        int(value): f"{name} ({EXPLANATIONS[name]})" if name in EXPLANATIONS else name
        for value, name in ffi.typeof("enum ll_status").elements.items()
    }


# value -> "LL_EINVAL (invalid argument)"
STATUS_NAMES: dict[int, str] = _status_names()


def check_status(rc: int, what: str) -> int:
    """Raises :class:`CoreError` naming ``what`` when ``rc`` is an error."""
    if rc < 0:
        raise CoreError(f"{what} failed: {STATUS_NAMES.get(int(rc), rc)}")
    return rc
