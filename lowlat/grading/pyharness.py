"""What every Python exercise's checks module shares: loading the learner's
file and the child-process protocol (one check per process; prints
``RESULT PASS``, ``RESULT FAIL reason``, and ``INFO key=value`` for timings)."""

from __future__ import annotations

import importlib.util
import traceback
from pathlib import Path
from types import ModuleType
from typing import Callable

CheckFn = Callable[[ModuleType, str], "str | None"]


def load(path: str, name: str) -> ModuleType:
    """Imports the learner's file as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def where(exc: BaseException, path: str) -> str:
    """``file.py:LINE in function`` of the innermost frame in the learner's file."""
    tb = traceback.extract_tb(exc.__traceback__)
    return next((f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in reversed(tb)
                 if Path(f.filename).resolve() == Path(path).resolve()), "")


def main(argv: list[str], checks: dict[str, CheckFn], module_name: str) -> int:
    """``argv = [FILE, CHECK]``: runs one check and prints its result line."""
    path, check = argv[0], argv[1]
    try:
        mod = load(path, module_name)
        problem = checks[check](mod, path)
    except NotImplementedError:
        problem = "not implemented yet (the function raises NotImplementedError)"
    except Exception as exc:  # the learner's code raised: show where, briefly
        at = where(exc, path)
        problem = f"raised {type(exc).__name__}: {exc}" + (f" ({at})" if at else "")
    print("RESULT PASS" if problem is None else f"RESULT FAIL {problem}", flush=True)
    return 0
