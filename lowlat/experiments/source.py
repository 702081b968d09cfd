"""Showing the core's own code in the chapters, so the text and the library
are one source: what a notebook prints is what the package runs."""

from __future__ import annotations

import re

from lowlat.core.toolchain import CSRC


def c_function(filename: str, name: str) -> tuple[int, str]:
    """(first line number, text) of the C function ``name`` in
    ``csrc/filename``, found by its definition line and brace matching."""
    path = CSRC / filename
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: no such file in the core's C sources")
    lines = path.read_text().splitlines()
    # Return type and qualifiers, an __attribute__((...)) among them allowed.
    pattern = re.compile(rf"^\w[\w\s\*]*(?:__attribute__\(\([\w\s,]*\)\)[\w\s\*]*)?\b{re.escape(name)}\s*\(")
    for i, line in enumerate(lines):
        if pattern.match(line) and not line.rstrip().endswith(";"):
            depth, seen = 0, False
            for j in range(i, len(lines)):
                depth += lines[j].count("{") - lines[j].count("}")
                seen = seen or "{" in lines[j]
                if seen and depth == 0:
                    return i + 1, "\n".join(lines[i : j + 1])
    raise ValueError(f"no definition of {name}() in csrc/{filename}")


def show(filename: str, name: str) -> None:
    """Prints a C function of the core with its line numbers."""
    first, text = c_function(filename, name)
    print(f"csrc/{filename}, from line {first}:")
    for k, line in enumerate(text.splitlines()):
        print(f"{first + k:4d}  {line}")
