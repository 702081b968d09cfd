"""The folder a Python child runs in, and its command line.

The grader makes a fresh temporary folder per child:

- ``code/``: the host shim (``host.py``, ``host_helpers.py``,
  ``host_lockdown.py``: standard library only) and a copy of the learner's
  file, nothing else of ``lowlat``;
- ``pkgs/``: links to the third-party packages learner code may import
  (numpy, and the ``numpy.libs`` folder a wheel ships beside it), never the
  site-packages folder that holds them (nor ``lowlat``, nor its editable
  finder);
- ``work/``: the working directory, HOME and TMPDIR.

The child is ``python -I -S code/host.py CONFIG`` (isolated: no user site,
no ``PYTHON*`` variables, no ``site`` module, so no ``.pth`` file runs and
no site-packages is on the path); its ``sys.path`` is ``code/``, ``pkgs/``
and the standard library.  ``import lowlat`` fails there, and so does every
import of a reference.  Where the kernel has Landlock the child also cannot
open anything outside this folder, the standard library and the linked
packages (:mod:`lowlat.grading.host_lockdown`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

SHIM = ("host.py", "host_helpers.py", "host_lockdown.py")
CHILD_PACKAGES = ("numpy",)  # what learner code may import besides the standard library
_HERE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def linked_packages() -> tuple[tuple[str, str], ...]:
    """(name, real folder) of each :data:`CHILD_PACKAGES` entry installed
    here, and of its ``<name>.libs`` sibling (bundled shared libraries).
    Found without importing anything."""
    out: list[tuple[str, str]] = []
    for name in CHILD_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        folder = Path(next(iter(spec.submodule_search_locations))).resolve()
        out.append((name, str(folder)))
        libs = folder.parent / f"{name}.libs"
        if libs.is_dir():
            out.append((libs.name, str(libs.resolve())))
    return tuple(out)


@dataclass(frozen=True)
class ChildFolder:
    """A child's fresh folder (see the module's docstring); ``remove()``
    deletes it with whatever the child left there."""

    root: Path
    code: Path
    work: Path
    learner: Path

    def command(self, module_name: str, fd_in: int, fd_out: int) -> list[str]:
        """The child's command line: the host, isolated, with its config."""
        cfg = {
            "learner": str(self.learner),
            "module": module_name,
            "path": [str(self.code), str(self.root / "pkgs")],
            "preimport": [name for name, _ in linked_packages() if not name.endswith(".libs")],
            "own": str(self.root),
            "read_only": [real for _, real in linked_packages()],
            "fd_in": fd_in,
            "fd_out": fd_out,
        }
        return [sys.executable, "-I", "-S", str(self.code / "host.py"), json.dumps(cfg)]

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def make(learner: Path) -> ChildFolder:
    """A fresh folder for one child: the shim, a copy of ``learner``, the
    package links, an empty working directory."""
    root = Path(tempfile.mkdtemp(prefix="lowlat-child-")).resolve()
    try:
        code, pkgs, work = root / "code", root / "pkgs", root / "work"
        for d in (code, pkgs, work):
            d.mkdir()
        for name in SHIM:
            shutil.copyfile(_HERE / name, code / name)
        copy = code / learner.name
        shutil.copyfile(learner, copy)
        for name, real in linked_packages():
            os.symlink(real, pkgs / name, target_is_directory=True)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return ChildFolder(root, code, work, copy)
