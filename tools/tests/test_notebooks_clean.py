"""Author checks on the committed notebooks: normalised, executed top to
bottom, no errors, no machine paths.  (A learner who re-runs a chapter
changes its stored outputs; that is why these live in the author suite.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import notebooks

ROOT = notebooks.ROOT
ALL = notebooks.all_notebooks()


def test_there_are_notebooks_in_every_layer() -> None:
    for layer in notebooks.NOTEBOOK_DIRS:
        assert any(p.is_relative_to(ROOT / layer) for p in ALL), f"no notebook under {layer}/"


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_notebook_is_clean(path: Path) -> None:
    assert notebooks.problems(path) == []


def test_problems_are_detected(tmp_path: Path) -> None:
    nb = json.loads((ROOT / "chapters/01_budgets/01_budgets.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    code[1]["execution_count"] = None
    code[2]["outputs"].append({"output_type": "error", "ename": "ValueError", "evalue": "x", "traceback": []})
    code[3]["outputs"].append({"output_type": "stream", "name": "stdout", "text": "/home/alice/x\n"})
    code[4]["execution_count"] = 99
    p = tmp_path / "nb.ipynb"
    p.write_text(json.dumps(nb))
    found = "\n".join(notebooks.problems(p))
    for expected in (
        "was never executed",
        "error output (ValueError)",
        "machine-specific path",
        "execution count 99",
        "not normalised",
    ):
        assert expected in found, found
