"""What comes back from a learner's Python process: the exceptions a call can
end in, and the unpickler that accepts plain data only."""

from __future__ import annotations

import builtins
import io
import pickle
from typing import Any

# ---- what a learner's call can end in -------------------------------------------------------


class LearnerRaised(Exception):
    """The learner's code raised; also an instance of the builtin exception
    class it derives from (see :func:`raised_from`)."""

    type_name: str = "Exception"
    where: str = ""
    frames: list[str]
    module: str | None = None  # the module an ImportError names

    hint: str = ""

    def reason(self) -> str:
        at = f" ({self.where})" if self.where else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"raised {self.type_name}: {self}{at}{hint}"


class LearnerStopped(Exception):
    """The learner's process stopped answering: it hung past the check's
    time, crashed, exited, or hit a limit.  The message says which."""


class LearnerMutated(Exception):
    """A learner's function changed an argument in place."""


class HostError(Exception):
    """The child could not do what the grader asked (not the learner's code)."""


_raised_classes: dict[str, type[LearnerRaised]] = {}


def raised_from(info: dict[str, Any]) -> LearnerRaised:
    base_name = info.get("base", "Exception")
    cls = _raised_classes.get(base_name)
    if cls is None:
        base = getattr(builtins, base_name, None)
        cls = LearnerRaised
        if isinstance(base, type) and issubclass(base, BaseException) and base not in (BaseException, Exception):
            try:
                cls = type(f"Learner{base_name}", (LearnerRaised, base), {})
            except TypeError:  # an exception class whose layout cannot be mixed in
                cls = LearnerRaised
        _raised_classes[base_name] = cls
    exc = cls(info.get("message", ""))
    exc.type_name = info.get("type", base_name)
    exc.where = info.get("where", "")
    exc.frames = list(info.get("frames", []))
    module = info.get("module")
    exc.module = module if isinstance(module, str) else None
    return exc


# ---- receiving values: only data ------------------------------------------------------------

_SAFE_GLOBALS = {
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "bytearray"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"),
    ("_codecs", "encode"),
}


class _DataUnpickler(pickle.Unpickler):
    """Unpickles plain data only: a pickle that names any other class or
    function (and would run it) is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"the learner's process sent a {module}.{name}, which is not data")


def loads(data: bytes) -> Any:
    return _DataUnpickler(io.BytesIO(data)).load()
