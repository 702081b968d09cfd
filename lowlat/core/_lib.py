"""Loads the compiled core, ``lowlat.core._core``, with a clear message when the
package was installed without it (or the build failed)."""

from __future__ import annotations

try:
    from lowlat.core import _core
except ImportError as exc:  # pragma: no cover - exercised only on broken installs
    raise ImportError(
        "lowlat's C core (lowlat.core._core) is not built. Install the package with "
        "`python -m pip install -e .` from the repository root; that compiles csrc/ "
        "with your C compiler (gcc or clang). Run `python -m lowlat doctor` afterwards. "
        f"Original error: {exc}"
    ) from exc

ffi = _core.ffi
lib = _core.lib

__all__ = ["ffi", "lib"]
