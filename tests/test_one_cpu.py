"""One usable CPU (as under ``taskset -c 0``, a one-CPU container or a
quota-less cgroup cpuset): the quick bench and chapters 03 and 05 finish in
minutes, report no core-to-core figure from a shared CPU, and say that one
CPU was detected.  Each runs in a child process restricted to one CPU of
this one's affinity mask (the notebook's kernel inherits the mask)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIMIT_S = 180  # each run: several times what it takes on one CPU of a 2-vCPU VM beside another test

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity (Linux)")


def _one_cpu() -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def _run(args: list[str], cwd: Path = ROOT) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.monotonic()
    out = subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=LIMIT_S + 120, preexec_fn=_one_cpu, env=dict(os.environ)
    )
    return out, time.monotonic() - t0


@pytest.mark.slow
def test_quick_bench_on_one_cpu(tmp_path: Path) -> None:
    out, took = _run([sys.executable, "-m", "lowlat", "bench", "--quick", "--json", str(tmp_path / "b.json")])
    assert out.returncode == 0, out.stderr[-3000:]
    assert took < LIMIT_S, f"the quick bench took {took:.0f} s on one CPU"
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["usable_cpus"] == 1
    assert not any(k.startswith("c2c") or k.startswith("pipeline_c2c") for k in data), sorted(data)
    assert "unavailable" in out.stdout
    assert "1 usable" in out.stderr + out.stdout


_EXECUTE = """
import sys, nbformat
from nbclient import NotebookClient
path = sys.argv[1]
nb = nbformat.read(path, as_version=4)
NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}}).execute()
for cell in nb.cells:
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            sys.stdout.write(o["text"])
        elif "text/plain" in o.get("data", {}):
            sys.stdout.write(o["data"]["text/plain"] + "\\n")
"""


@pytest.mark.slow
@pytest.mark.parametrize("chapter", ["03_spsc/03_spsc.ipynb", "05_pipeline/05_pipeline.ipynb"])
def test_chapter_on_one_cpu(chapter: str) -> None:
    path = ROOT / "chapters" / chapter
    out, took = _run([sys.executable, "-c", _EXECUTE, str(path), str(path.parent)])
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-3000:])
    assert took < LIMIT_S, f"{chapter} took {took:.0f} s on one CPU"
    text = out.stdout
    assert "1 usable" in text, "the machine line does not say one CPU is usable"
    assert "one usable CPU" in text, "no reading says that one CPU was detected"
    for line in text.splitlines():
        if "core-to-core" in line and " ns" in line and "unavailable" not in line:
            raise AssertionError(f"a core-to-core figure from a shared CPU: {line!r}")
