"""Files a person can read: no Python or C file of the package, the core or
the author's tools is longer than 400 lines (a longer one is two files)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 400
FOLDERS = ("lowlat", "csrc", "tools")  # tools/ is in the author's checkout only
GENERATED = {ROOT / "lowlat/core/_core.c"}  # cffi's source for the core module, written by an in-place build


def test_no_source_file_is_longer_than_400_lines() -> None:
    files = [
        p
        for d in FOLDERS
        for p in sorted((ROOT / d).rglob("*"))
        if p.suffix in (".py", ".c", ".h") and p not in GENERATED
    ]
    assert files, "no source files found"
    lines = {p: p.read_bytes().count(b"\n") for p in files}
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p, n in lines.items() if n > MAX_LINES]
    assert not long, f"longer than {MAX_LINES} lines (split each in two):\n" + "\n".join(long)
