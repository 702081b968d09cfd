"""Exceptions raised by lowlat.  Each subclasses the built-in exception a
caller would naturally catch (ValueError, RuntimeError), so generic code keeps
working, and names the precise failure for code that cares."""

from __future__ import annotations


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


STATUS_NAMES = {
    0: "LL_OK",
    -1: "LL_ENOMEM (out of memory)",
    -2: "LL_EINVAL (invalid argument)",
    -3: "LL_EDOUBLE (double free)",
    -4: "LL_EFOREIGN (foreign pointer)",
    -5: "LL_ENOTSUP (not supported on this platform)",
    -6: "LL_ERANGE (value out of range)",
    -7: "LL_ESYS (operating-system call failed)",
    -8: "LL_EMISMATCH (incompatible layouts)",
}


def check_status(rc: int, what: str) -> int:
    """Raises :class:`CoreError` naming ``what`` when ``rc`` is an error."""
    if rc < 0:
        raise CoreError(f"{what} failed: {STATUS_NAMES.get(int(rc), rc)}")
    return rc
