"""CI runs what the README tells a new user to run, then the author checks."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_test_command_is_what_ci_runs() -> None:
    ci = (ROOT / ".ci/run").read_text()
    readme = (ROOT / "README.md").read_text()
    cmd = 'python -m pip install -e ".[test]" && python -m pytest'
    assert cmd in readme and cmd in ci
    ci_lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert cmd in ci_lines, "the README's command, alone on its line"
    assert "set -euo pipefail" in ci_lines  # any failing step fails CI
    for check in ("ruff check", "ruff format --check", "mypy", "lint-imports", "clang-format", "pytest tools/tests"):
        assert any(check in line for line in ci_lines), f".ci/run does not run {check}"
    assert 'python -m pip install -e ".[notebooks]" && python -m lowlat tour' in readme
