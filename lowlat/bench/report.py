"""The bench suite's output: an aligned text table, a JSON file, progress
lines on stderr."""

from __future__ import annotations

import json
import math
import os
import sys

from lowlat.bench.keys import KEYS, MAY_BE_NULL, NEEDS_TWO_CPUS
from lowlat.bench.results import BenchResults, inconclusive
from lowlat.core.outfile import write_text


def _fmt(value: float, unit: str) -> str:
    if unit == "items/s":
        return f"{value / 1e6:,.1f} M/s"
    if unit == "x":
        return f"{value:,.2f} x"
    if unit == "fraction":
        return f"{value * 100:,.1f} %"
    if unit in ("", "faults", "records"):
        return f"{value:,.0f}"
    if unit == "s":
        return f"{value:,.1f} s"
    return f"{value:,.1f} ns"


def format_table(results: dict[str, float], keys: dict[str, tuple[str, str]] = KEYS) -> str:
    """The results as an aligned text table, one key per line; the keys of a
    step that failed say "failed", and the failures follow, one line each.
    A ratio key with a band says it ("[90% band lo-hi]"), and "inconclusive"
    when the band reaches beyond +-15% of its value.  ``keys``: the rows, in
    order, with their units and meanings (the main bench's by default)."""
    failures = results.failures if isinstance(results, BenchResults) else []
    failed = {k for f in failures for k in f.keys}
    bands = results.bands if isinstance(results, BenchResults) else {}
    lines = [f"{'key':32} {'value':>14}  meaning", "-" * 90]
    for k, (unit, meaning) in keys.items():
        if k in failed:
            lines.append(f"{k:32} {'failed':>14}  {meaning}")
        elif k in results and k in MAY_BE_NULL and math.isnan(results[k]):
            lines.append(f"{k:32} {'unavailable':>14}  {meaning}")
        elif k in results and k in bands:
            lo, hi = bands[k]
            note = "inconclusive, 90% band" if inconclusive(results[k], bands[k]) else "90% band"
            lines.append(f"{k:32} {_fmt(results[k], unit):>14}  {meaning} [{note} {lo:,.2f}-{hi:,.2f}]")
        elif k in results:
            lines.append(f"{k:32} {_fmt(results[k], unit):>14}  {meaning}")
        elif k in NEEDS_TWO_CPUS and results:
            lines.append(f"{k:32} {'unavailable':>14}  {meaning}: needs two usable CPUs")
    lines += [f"FAILED: {f.line()}" for f in failures]
    return "\n".join(lines)


def write_json(results: dict[str, float], path: str | os.PathLike[str]) -> None:
    """The results as sorted, indented JSON at ``path``, written atomically
    by :func:`lowlat.core.outfile.write_text` (a regular file or a new name;
    links written through; never a FIFO, device or folder); a value that is
    not a finite number (NaN: nothing to measure on this machine, or its
    step failed) is written as null.  When a step failed, ``failed_steps``
    lists each one: ``step``, ``title``, ``reason`` and the ``keys`` it left
    null."""
    clean: dict[str, object] = {
        k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in results.items()
    }
    failures = results.failures if isinstance(results, BenchResults) else []
    if failures:
        clean["failed_steps"] = [
            {"step": f.step, "title": f.title, "reason": f.reason, "keys": list(f.keys)} for f in failures
        ]
    write_text(path, json.dumps(clean, indent=2, sort_keys=True, allow_nan=False) + "\n", "--json")


def progress_to_stderr(msg: str) -> None:
    """A progress callback for :func:`lowlat.bench.run_all`: one line on stderr."""
    print(msg, file=sys.stderr, flush=True)


__all__ = ["format_table", "progress_to_stderr", "write_json"]
