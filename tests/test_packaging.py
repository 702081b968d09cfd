"""The set-up files agree with each other: the README's test command is what
CI runs, environment.yml names the packages pyproject.toml names, and the
sdist carries the C sources."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent.parent

# Conda-side infrastructure with no pip counterpart in pyproject.toml.
CONDA_ONLY = {"python", "pip", "setuptools", "c-compiler"}


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[;]", req.strip(), maxsplit=1)[0].lower()


def _pyproject() -> dict:
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _environment_packages() -> set[str]:
    names: set[str] = set()
    text = (ROOT / "environment.yml").read_text()
    for line in text[text.index("dependencies:") :].splitlines():
        m = re.match(r"^\s*-\s+([A-Za-z0-9_.\-]+)", line)
        if m and not line.strip().startswith("- -e") and m.group(1) != "pip:":
            names.add(_name(m.group(1)))
    return names


def test_environment_yml_names_the_pyproject_packages() -> None:
    proj = _pyproject()["project"]
    # environment.yml pins Python 3.11: back-ports for older Pythons are not wanted there.
    wanted = {_name(r) for r in proj["dependencies"] if "python_version < '3.11'" not in r}
    for name, extra in proj["optional-dependencies"].items():
        if name in ("dev", "gpu"):
            continue  # authors' lint and type tools, and torch for a CUDA GPU (optional): not in the learner's environment
        wanted |= {_name(r) for r in extra}
    have = _environment_packages()
    assert wanted - have == set(), f"environment.yml lacks {sorted(wanted - have)}"
    assert have - wanted - CONDA_ONLY == set(), f"environment.yml has extra {sorted(have - wanted - CONDA_ONLY)}"


def test_environment_yml_pins_python_and_installs_the_package() -> None:
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s*-\s+python=3\.11\s*$", text, re.M)
    assert re.search(r"^\s*-\s+-e \.\s*$", text, re.M)


@pytest.mark.slow
def test_sdist_ships_the_c_sources(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    (sdist,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as t:
        # "lowlat-0.1.0/csrc/bench/bench_spsc.c" -> "csrc/bench/bench_spsc.c"
        names = {Path(*Path(n).parts[1:]).as_posix() for n in t.getnames() if len(Path(n).parts) > 1}
    sources = [p for p in (ROOT / "csrc").rglob("*") if p.suffix in (".c", ".h")]  # not build products
    assert any(p.parent != ROOT / "csrc" for p in sources), "csrc/ has subfolders; the walk should see them"
    for src in sources:
        rel = src.relative_to(ROOT).as_posix()
        assert rel in names, f"{rel} missing from the sdist"
    assert "lowlat/core/_build.py" in names


def test_the_wheel_carries_the_c_sources(tmp_path: Path) -> None:
    """setup.py's build step copies csrc/**/*.c|h into the package
    (lowlat/core/csrc/), where toolchain.CSRC and the build script look
    first: an installed wheel builds the variants, demos and exercises' core
    sources from there."""
    res = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    shipped = tmp_path / "lowlat/core/csrc"
    sources = [p.relative_to(ROOT / "csrc") for p in (ROOT / "csrc").rglob("*") if p.suffix in (".c", ".h")]
    missing = [str(rel) for rel in sources if not (shipped / rel).is_file()]
    assert sources and not missing, f"not in the built package: {missing}"
    assert (tmp_path / "lowlat/grading/harness/grade.h").is_file()
    assert (tmp_path / "lowlat/bench/peers_rigtorp.cpp").is_file()  # bench --peers compiles it
    for module in ("lowlat/core/toolchain.py", "lowlat/core/_build.py"):
        assert '_PACKAGED = Path(__file__).resolve().parent / "csrc"' in (ROOT / module).read_text(), module


@pytest.mark.skipif(not (ROOT / ".ci/run").exists(), reason="CI's scripts are in the author's checkout only")
def test_ci_installs_a_wheel_outside_the_repository() -> None:
    ci = (ROOT / ".ci/run").read_text()
    assert "bash .ci/wheel" in ci.splitlines()
    job = (ROOT / ".ci/wheel").read_text()
    assert job.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in job
    for step in ("pip wheel", "--no-deps", "-m venv", 'cd "$work"', " doctor", "bench --quick --json", " grade "):
        assert step in job, f".ci/wheel does not run {step!r}"
    assert "pip install -e" not in job
