# cffi has no declarative form for its extension, and the wheel needs the C
# sources as package data: those two things live here; everything else is in
# pyproject.toml.
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithCsrc(build_py):
    """Copies ``csrc/**/*.c|h`` into the built package as
    ``lowlat/core/csrc/``: an installed wheel builds the sanitizer demos,
    the build variants and the graded exercises' core sources from there
    (``lowlat.core.toolchain.CSRC``).  An editable install reads ``csrc/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        src = Path(__file__).resolve().parent / "csrc"
        dst = Path(self.build_lib) / "lowlat" / "core" / "csrc"
        for path in sorted(src.rglob("*")):
            if path.is_file() and path.suffix in (".c", ".h"):
                target = dst / path.relative_to(src)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)


setup(cffi_modules=["lowlat/core/_build.py:ffibuilder"], cmdclass={"build_py": BuildPyWithCsrc})
