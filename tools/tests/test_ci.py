"""CI runs what the README tells a new user to run, then the author checks,
then the portability job (clang, Linux ARM64 under qemu-user)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_test_command_is_what_ci_runs() -> None:
    ci = (ROOT / ".ci/run").read_text()
    readme = (ROOT / "README.md").read_text()
    cmd = 'python -m pip install -e ".[test]" && python -m pytest -n auto --dist loadgroup'
    assert cmd in readme and cmd in ci
    ci_lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert cmd in ci_lines, "the README's command, alone on its line"
    assert "set -euo pipefail" in ci_lines  # any failing step fails CI
    for check in ("ruff check", "ruff format --check", "mypy", "lint-imports", "clang-format", "pytest tools/tests"):
        assert any(check in line for line in ci_lines), f".ci/run does not run {check}"
    assert 'python -m pip install -e ".[notebooks]" && python -m lowlat tour' in readme


def test_ci_ends_with_the_portability_job() -> None:
    """.ci/run calls .ci/portability last, after the README's command and the
    author suite; the job installs its toolchains, runs the C-core tests with
    clang and the ARM64 tests, and can only skip out loud."""
    ci = (ROOT / ".ci/run").read_text()
    ci_lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert ci_lines[-1] == "bash .ci/portability", "the portability job is .ci/run's last step"
    readme_cmd = ci_lines.index('python -m pip install -e ".[test]" && python -m pytest -n auto --dist loadgroup')
    assert readme_cmd < ci_lines.index("python -m pytest tools/tests") < len(ci_lines) - 1
    job = (ROOT / ".ci/portability").read_text()
    assert job.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in job
    for package in ("clang", "gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross", "qemu-user"):
        assert package in job, f".ci/portability does not install {package}"
    assert "apt-get install" in job and "!!! PORTABILITY" in job  # installs, or says loudly what it skipped
    for part in ("CC=clang", "LOWLAT_CROSS=1", "tests/test_c_core.py", "tests/test_portability.py"):
        assert part in job, f".ci/portability does not use {part}"
