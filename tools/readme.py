"""The README's benchmark table, written from one run's JSON.

``python -m tools readme-bench RUN.json`` replaces what stands between the
``<!-- bench-table -->`` and ``<!-- /bench-table -->`` markers of README.md
with a table of that run's figures: every row of one run, with the machine
and the core-to-core regime beside the figures that depend on it, so the
README never mixes runs.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from lowlat.bench.keys import KEYS

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- bench-table -->", "<!-- /bench-table -->"

# (keys shown together, format, what the row means).  Formats: "ns", "M/s", "x",
# "%", "n", or one of those per key separated by spaces ("ns x").
ROWS: list[tuple[tuple[str, ...], str, str]] = [
    (("pool_alloc_free_ns", "malloc_free_ns"), "ns", "free+alloc pair, steady state: pool / malloc"),
    (("pool_vs_malloc_speedup",), "x", "malloc / pool time on a fragmented heap (16-4,096 B live blocks)"),
    (("pool_p999_ns", "malloc_p999_ns"), "ns", "P99.9 of one op on that heap (timer included): pool / malloc"),
    (
        ("spsc_items_per_s", "spsc_api_items_per_s"),
        "M/s",
        "ring of 1,024 uint64, one record per call: inlined / exported calls (a full ring refilled 128 slots at a time)",
    ),
    (
        ("spsc_api_vs_inline", "spsc_u64_call_vs_inline", "spsc_bare_call_vs_inline"),
        "x",
        "the same, calls over the inlined loop: the public `ll_spsc_try_push/try_pop` / the exported "
        "`ll_spsc_try_push_u64/try_pop_u64` / the inlined body and an empty call (a call's own price)",
    ),
    (
        ("spsc_plain_items_per_s", "spsc_refill_vs_plain"),
        "M/s x",
        "the producer retrying a full ring at once (each slot refilled as freed); refilling by 128 over that",
    ),
    (
        ("spsc_op_ns", "spsc_api_op_ns", "spsc_bare_op_ns"),
        "ns",
        "one record pushed and popped on one core, no line transfer: inlined / exported calls / the inlined body "
        "and an empty call",
    ),
    (("spsc_padded_vs_unpadded",), "x", "false sharing of the two cursors"),
    (
        ("spsc_adjacent_items_per_s", "spsc_spread_items_per_s", "spsc_adjacent_vs_spread"),
        "M/s M/s x",
        "the cursors on adjacent lines / a 128-byte pair apart, and the ratio (the default ring takes the placement "
        "`ll_spsc_default_layout` names for the CPU: a pair apart on AMD/Hygon, adjacent elsewhere)",
    ),
    (("spsc_cached_vs_uncached",), "x", "each side caching the other's cursor"),
    (("spsc_c_batch_items_per_s",), "M/s", "the same ring, batches of 256 inside C"),
    (
        ("spsc_c2c_ns", "spsc_c2c_min_ns", "spsc_c2c_max_ns"),
        "ns",
        "core-to-core one-way beside those rounds: median, lowest, highest",
    ),
    (("spsc_batch_items_per_s",), "M/s", "`SpscQueue.push_many/pop_many` from two Python threads"),
    (
        ("py_queue_items_per_s", "py_simplequeue_items_per_s"),
        "M/s",
        "`queue.Queue` / `queue.SimpleQueue`, two Python threads",
    ),
    (
        ("spsc_rtt_ns", "spsc_api_rtt_ns", "spsc_rtt_c2c_ns"),
        "ns",
        "ping-pong round trip P50: inlined / exported; core-to-core beside it",
    ),
    (("spsc_api_rtt_vs_inline",), "x", "that round trip, the public API over the inlined (>1: the calls slower)"),
    (
        ("ring_struct64_items_per_s", "ring_index_items_per_s"),
        "M/s",
        "64-byte messages through a ring: the records themselves / 32-bit indices into a pool of them",
    ),
    (
        ("o2_batch_items_per_s", "o3_native_batch_items_per_s"),
        "M/s",
        "the batched ring from the installed `-O2` core / built `-O3 -march=native`",
    ),
    (
        ("o2_item_items_per_s", "o3_native_item_items_per_s", "o3_native_vs_o2_item"),
        "M/s M/s x",
        "one record per call, the same two builds, and `-O3 -march=native` over `-O2`",
    ),
    (
        ("seq_cst_store_ns", "release_store_ns"),
        "ns",
        "one atomic store, one thread: `seq_cst` (x86 `xchg`) / `release` (`mov`)",
    ),
    (("seq_cst_load_ns", "acquire_load_ns"), "ns", "one atomic load: `seq_cst` / `acquire` (both `mov` on x86)"),
    (("smt_sibling_c2c_ns",), "ns", "core-to-core between two SMT siblings (none on a machine without them)"),
    (("hist_record_ns", "hist_record_inline_ns"), "ns", "one histogram record: exported call / inlined"),
    (("clock_read_ns", "tsc_read_ns"), "ns", "`clock_gettime(MONOTONIC)` / `rdtsc`"),
    (("mutex_uncontended_ns", "mutex_contended_ns"), "ns", "lock+unlock: one thread / two threads"),
    (("syscall_ns",), "ns", "`getppid()`"),
    (("chase_l1_ns", "chase_dram_ns"), "ns", "dependent load, 16 KiB vs 256 MiB working set"),
    (("page_fault_ns", "prefaulted_touch_ns"), "ns", "first touch of a fresh page vs a mapped one"),
    (
        ("pipeline_p50_ns", "pipeline_p99_ns", "pipeline_p999_ns", "pipeline_max_ns"),
        "ns",
        "pipeline, open loop 200k ticks/s, best settings: P50 / P99 / P99.9 / max",
    ),
    (
        ("pipeline_floor_p50_ns", "pipeline_p50_over_floor"),
        "ns x",
        "its floor (one line carrying a due time, same schedule) and the P50 over it",
    ),
    (
        ("pipeline_c2c_ns", "pipeline_p50_over_c2c"),
        "ns x",
        "core-to-core beside the pipeline runs, and the P50 over it",
    ),
    (
        ("pipeline_seed_p50_ns", "pipeline_seed_p99_ns", "pipeline_seed_max_ns"),
        "ns",
        "the source article's pipeline as written (closed loop: queueing delay): P50 / P99 / max",
    ),
    (
        ("log_sync_p99_ns", "log_async_p99_ns"),
        "ns",
        "hot-path event P99 at 200k events/s: a `write()` per event / a log ring a writer thread drains",
    ),
    (("log_async_dropped",), "n", "records that log ring dropped"),
    (("batch_vs_row_speedup",), "x", "numpy row norms: one call per row vs one call for all (answers checked equal)"),
    (
        ("ffi_call_ns", "ffi_batched_item_ns"),
        "ns",
        "one bare call from Python into the core / per item of one batched call",
    ),
    (
        ("prefetch_bubble_fraction_depth0", "prefetch_bubble_fraction_best"),
        "%",
        "accelerator idle share of a simulated epoch: no prefetch / best depth",
    ),
    (("roofline_f32_over_f64",), "x", "a vector add beyond the last-level cache: float32 / float64 FLOP/s"),
]


NA = "n/a"  # a key the run wrote as null (nothing to measure on that machine)


def _fmt(v: float | None, kind: str) -> str:
    if v is None or math.isnan(v):
        return NA
    if kind == "n":
        return f"{v:,.0f}"
    if kind == "M/s":
        return f"{v / 1e6:,.0f}" if v >= 1e7 else f"{v / 1e6:,.2f}"
    if kind == "x":
        return f"{v:,.2f}"
    if kind == "%":
        return f"{v * 100:,.1f}"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}"


def table(run: dict[str, float | None], machine: str) -> str:
    """The Markdown block for README.md (between the markers)."""
    lines = [
        f"One run of `python -m lowlat bench` on {machine}, threads pinned to two CPUs "
        f"({_seconds(run.get('bench_seconds'))}; your numbers will differ, that is the point). "
        "Figures that hang on the core-to-core latency have the samples taken beside them in the same table.",
        "",
        "| keys | value | what |",
        "|---|---:|---|",
    ]
    for keys, kind, what in ROWS:
        if not all(k in run for k in keys):
            continue
        units = {"ns": " ns", "M/s": " M/s", "x": " x", "%": " %", "n": ""}
        if " " in kind:  # one format per key, each with its unit
            shown = [(_fmt(run[k], kk), units[kk]) for k, kk in zip(keys, kind.split())]
            value = " / ".join(v if v == NA else v + u for v, u in shown)
        else:
            unit, values = units[kind], [_fmt(run[k], kind) for k in keys]
            if NA in values:  # each figure with its unit: "20.1 ns / n/a"
                value = " / ".join(v if v == NA else v + unit for v in values)
            else:
                value = " / ".join(values) + unit
        lines.append(f"| {' / '.join(f'`{k}`' for k in keys)} | {value} | {what} |")
    return "\n".join(lines)


def _seconds(v: float | None) -> str:
    return f"run time {NA}" if v is None else f"{v:,.0f} s"


def _value_problem(key: str, v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"{key} is {json.dumps(v)[:40]}, not a number or null"
    if not math.isfinite(v) or v < 0:
        return f"{key} is {v}, not a finite number >= 0 (null where nothing was measured)"
    return None


def load_run(run_json: Path) -> dict[str, float | None]:
    """The bench run in ``run_json``, validated: a JSON object written by
    ``python -m lowlat bench --json`` (``bench_seconds`` and at least one row of
    the table), every bench key's value a finite number >= 0 or null.
    ValueError (one line, naming the file) otherwise."""
    try:
        text = run_json.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{run_json}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None

    def refuse_constant(name: str) -> float:
        raise ValueError(f"{run_json}: {name} is not a number the bench writes (it writes null)")

    try:
        run = json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{run_json}: not JSON ({exc})") from None
    if not isinstance(run, dict):
        raise ValueError(f"{run_json}: a JSON {type(run).__name__}, not a bench run (an object of numbers)")
    if "bench_seconds" not in run or not any(all(k in run for k in keys) for keys, _, _ in ROWS):
        raise ValueError(
            f"{run_json}: not the JSON of `python -m lowlat bench --json` (no bench_seconds, or no row of the "
            "README's table: a soak JSON?)"
        )
    for key in sorted({k for keys, _, _ in ROWS for k in keys} | set(KEYS)):
        why = _value_problem(key, run.get(key))
        if why:
            raise ValueError(f"{run_json}: {why}")
    return run


def _machine(machine: str) -> str:
    if not isinstance(machine, str) or not machine.strip():
        raise ValueError("--machine: give one line naming the machine, e.g. '2-vCPU AMD EPYC VM (KVM)'")
    if len(machine) > 200 or any(not c.isprintable() for c in machine) or "|" in machine:
        raise ValueError("--machine: one printable line of at most 200 characters, without '|'")
    return machine.strip()


def write(run_json: Path, machine: str, readme: Path = ROOT / "README.md") -> None:
    """Replaces the table between the markers of ``readme`` (one START and one
    END, in that order) with the run's table, atomically (a temporary file in
    the README's folder, renamed over it); nothing is written unless the run
    is a valid bench JSON that fills at least one row."""
    machine = _machine(machine)
    run = load_run(Path(run_json))
    text = readme.read_text(encoding="utf-8")
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise ValueError(f"{readme}: needs one {START} line, then one {END} line")
    block = f"{START}\n{table(run, machine)}\n{END}"
    new = re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    fd, tmp = tempfile.mkstemp(prefix=f".{readme.name}.", suffix=".tmp", dir=readme.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new)
        os.chmod(tmp, readme.stat().st_mode & 0o7777)
        os.replace(tmp, readme)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
