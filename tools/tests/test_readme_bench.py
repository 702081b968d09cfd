"""`python -m tools readme-bench` checks the run before it touches the
README: a bench JSON of finite, non-negative numbers (null shown as n/a),
never an empty table, written atomically."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tools import readme

ROOT = readme.ROOT
README = f"# Course\n\nbefore\n{readme.START}\nthe old table\n{readme.END}\nafter\n"
GOOD = {"bench_seconds": 34.2, "syscall_ns": 71.5, "clock_read_ns": 20.1, "tsc_read_ns": None}


def _files(tmp_path: Path, run: object, raw: str | None = None) -> tuple[Path, Path]:
    doc, js = tmp_path / "README.md", tmp_path / "run.json"
    doc.write_text(README)
    js.write_text(raw if raw is not None else json.dumps(run))
    return doc, js


def test_a_bench_run_fills_the_table(tmp_path: Path) -> None:
    doc, js = _files(tmp_path, GOOD)
    readme.write(js, "a test VM", doc)
    text = doc.read_text()
    assert "| `syscall_ns` | 71.5 ns |" in text and "| `clock_read_ns` / `tsc_read_ns` | 20.1 ns / n/a |" in text
    assert "(34 s;" in text
    assert text.startswith("# Course\n\nbefore\n") and text.endswith("after\n") and "the old table" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "run.json"]  # no temporary file left


@pytest.mark.parametrize(
    ("run", "raw", "words"),
    [
        ([1, 2], None, "a JSON list"),
        ("x", None, "a JSON str"),
        ({"summary": {"p50_ns": 1}, "intervals": []}, None, "a soak JSON?"),
        ({"bench_seconds": 3}, None, "no row"),
        ({**GOOD, "syscall_ns": -1}, None, "syscall_ns is -1"),
        ({**GOOD, "syscall_ns": "fast"}, None, "not a number or null"),
        ({**GOOD, "syscall_ns": True}, None, "not a number or null"),
        (None, '{"bench_seconds": 1, "syscall_ns": Infinity}', "Infinity"),
        (None, '{"bench_seconds": 1, "syscall_ns": NaN}', "NaN"),
        (None, '{"bench_seconds": 1, "syscall_ns": 1e999}', "inf"),
        (None, "{not json", "not JSON"),
    ],
)
def test_anything_but_a_bench_run_leaves_the_readme_alone(
    tmp_path: Path, run: object, raw: str | None, words: str
) -> None:
    doc, js = _files(tmp_path, run, raw)
    with pytest.raises(ValueError) as err:
        readme.write(js, "a test VM", doc)
    assert words in str(err.value) and "\n" not in str(err.value)
    assert doc.read_text() == README and len(list(tmp_path.iterdir())) == 2


def test_the_cli_refuses_in_one_line(tmp_path: Path) -> None:
    _, js = _files(tmp_path, [1])
    res = subprocess.run(
        [sys.executable, "-m", "tools", "readme-bench", str(js), "--machine", "vm"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "a JSON list" in res.stderr
    doc, js = _files(tmp_path, GOOD)
    for machine in ("", "two\nlines", "a | b"):
        with pytest.raises(ValueError, match="--machine"):
            readme.write(js, machine, doc)
    assert doc.read_text() == README
