"""Keeping the course's notebooks tidy in git.

``python -m tools notebooks [PATH ...]`` re-executes notebooks in place
(top to bottom, a fresh ``python3`` kernel started in the notebook's folder)
and normalises their JSON; ``--check`` only verifies what is committed.
Normalised means: nbformat 4.5, cell ids ``cell-01``, ``cell-02``...,
notebook metadata reduced to the kernelspec and language, no per-cell
metadata other than ``tags`` and ``run_s`` (a code cell's run time in
seconds, two decimals, from the executor's timing record: what
``python -m tools lessons`` adds to a chapter's computed time), execution
counts 1, 2, 3... in order, and no machine paths or user names in outputs.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIRS = ("chapters", "exercises", "solutions")
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
# Machine-specific text that must never be committed in an output.
MACHINE_PATH = re.compile(r"/(?:root|home/[^/\s'\"]+|Users/[^/\s'\"]+|tmp)/")


def all_notebooks(root: Path = ROOT) -> list[Path]:
    out: list[Path] = []
    for d in NOTEBOOK_DIRS:
        out += [p for p in (root / d).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts]
    return sorted(out)


def _scrub(text: str) -> str:
    """Replaces machine paths (the repo root, the home folder, temp dirs)."""
    text = text.replace(str(ROOT), "<repo>")
    home = os.path.expanduser("~")
    if home not in ("", "/"):
        text = text.replace(home, "~")
    return re.sub(r"/tmp/[\w.\-/]+", "<tmp>", text)


def _when(stamp: object) -> datetime:
    """An ISO 8601 timestamp as nbclient writes it (``...T12:00:00.123456Z``),
    read the same on Python 3.10 (no ``Z``, at most 6 fractional digits)."""
    text = re.sub(r"(\.\d{6})\d+", r"\1", str(stamp))
    return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)


def _run_s(meta: dict[str, Any]) -> float | None:
    """A code cell's run time (s, two decimals): from nbclient's timing
    record of the execution just made (``execution``: input received ->
    reply sent), else the ``run_s`` an earlier execution left, else None.
    A fresh record wins: a re-executed cell's old ``run_s`` is stale."""
    ex = meta.get("execution")
    if isinstance(ex, dict):
        try:
            start, end = (_when(ex.get(k)) for k in ("iopub.execute_input", "shell.execute_reply"))
            seconds = (end - start).total_seconds()
        except (TypeError, ValueError):  # missing, malformed, or one with a zone and one without
            seconds = -1.0
        if 0 <= seconds < 1e6:
            return round(seconds, 2)
    kept = meta.get("run_s")
    if isinstance(kept, (int, float)) and not isinstance(kept, bool) and 0 <= kept < 1e6:
        return round(float(kept), 2)
    return None


def normalize(nb: dict[str, Any]) -> dict[str, Any]:
    """The notebook in the course's canonical form (see module doc)."""
    nb["nbformat"], nb["nbformat_minor"] = 4, 5
    lang = nb.get("metadata", {}).get("language_info", {})
    nb["metadata"] = {"kernelspec": KERNELSPEC, "language_info": {"name": "python", "pygments_lexer": "ipython3"}}
    if lang.get("version"):
        nb["metadata"]["language_info"]["version"] = ".".join(lang["version"].split(".")[:2])
    count = 0
    for i, cell in enumerate(nb["cells"], 1):
        cell["id"] = f"cell-{i:02d}"
        meta = cell.get("metadata", {})
        tags = meta.get("tags")
        run_s = _run_s(meta) if cell.get("cell_type") == "code" else None
        cell["metadata"] = ({"tags": tags} if tags else {}) | ({"run_s": run_s} if run_s is not None else {})
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
        if cell["cell_type"] != "code":
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
            continue
        if cell.get("execution_count") is not None:
            count += 1
            cell["execution_count"] = count
        for out in cell.get("outputs", []):
            if "execution_count" in out:
                out["execution_count"] = cell["execution_count"]
            out.pop("metadata", None) if out.get("output_type") == "stream" else None
            if out.get("output_type") in ("execute_result", "display_data"):
                out["metadata"] = {}
            if "text" in out:
                t = "".join(out["text"]) if isinstance(out["text"], list) else out["text"]
                out["text"] = _scrub(t)
            for key, val in list(out.get("data", {}).items()):
                if key.startswith("text/"):
                    v = "".join(val) if isinstance(val, list) else val
                    out["data"][key] = _scrub(v)
    return nb


def write(nb: dict[str, Any], path: Path) -> None:
    import nbformat

    node = nbformat.from_dict(nb)
    text = nbformat.writes(node) if hasattr(nbformat, "writes") else json.dumps(nb, indent=1)
    path.write_text(text if text.endswith("\n") else text + "\n")


# Figures shown outside the notebooks (the README): notebook -> (text that
# identifies the cell, the PNG written from that cell's plot).
FIGURES = {
    "chapters/02_pool/02_pool.ipynb": ("latency_hist(ax, c.malloc_hist", "chapters/02_pool/pool_vs_malloc.png"),
}


def export_figures(path: Path) -> list[Path]:
    """Writes the PNGs of FIGURES that come from ``path``."""
    import base64

    rel = path.resolve().relative_to(ROOT).as_posix() if path.resolve().is_relative_to(ROOT) else ""
    if rel not in FIGURES:
        return []
    marker, target = FIGURES[rel]
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and marker in "".join(cell["source"]):
            for out in cell.get("outputs", []):
                png = out.get("data", {}).get("image/png")
                if png:
                    dst = ROOT / target
                    dst.write_bytes(base64.b64decode("".join(png) if isinstance(png, list) else png))
                    return [dst]
    raise ValueError(f"{rel}: no plot found in the cell containing {marker!r}")


def execute(path: Path, timeout_s: int = 600) -> float:
    """Runs ``path`` top to bottom in place, normalises it, returns seconds."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    NotebookClient(
        nb,
        timeout=timeout_s,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        allow_errors=False,
        record_timing=True,  # metadata.execution timestamps: normalize() keeps each cell's run_s
    ).execute()
    seconds = time.perf_counter() - t0
    write(normalize(nbformat.from_dict(nb)), path)
    export_figures(path)
    return seconds


def problems(path: Path) -> list[str]:
    """What is wrong with a committed notebook (empty if nothing)."""
    text = path.read_text()
    try:
        nb = json.loads(text)
    except ValueError as exc:
        return [f"not valid JSON: {exc}"]
    found = []
    last = 0
    for i, cell in enumerate(nb.get("cells", []), 1):
        if cell.get("cell_type") != "code":
            continue
        src = "".join(cell.get("source", ""))
        n = cell.get("execution_count")
        if n is None:
            if src.strip():
                found.append(f"cell {i} was never executed")
            continue
        if n != last + 1:
            found.append(f"cell {i} has execution count {n} after {last}: run the notebook top to bottom")
        last = n
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                found.append(f"cell {i} has an error output ({out.get('ename')})")
            if MACHINE_PATH.search(json.dumps(out)):
                found.append(f"cell {i} has a machine-specific path in its output")
    import copy

    import nbformat

    node = json.loads(json.dumps(nbformat.reads(text, as_version=4)))  # lines joined, plain dicts
    if normalize(copy.deepcopy(node)) != node:
        found.append("not normalised: run `python -m tools notebooks` on it")
    return found
