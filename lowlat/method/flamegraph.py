"""Folded stacks and flame graphs (chapter 04b): ``perf script`` output
folded into stack -> samples, shares of a pattern, the leaves, per-thread
totals, and a flame graph drawn as SVG.

Why a renderer of our own: the reference renderer (``flamegraph.pl``) is a
Perl script that is packaged neither on PyPI nor in every distribution the
course supports, and ``py-spy`` renders only the stacks it samples itself,
not ``perf script``'s.  Folding stacks and drawing one rectangle per frame
is about a hundred lines, so the course carries them."""

from __future__ import annotations

import hashlib
import html
import json
import numbers
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowlat.core.argcheck import bool_arg, real_arg, regex_arg, str_arg
from lowlat.core.validate import int_arg

KERNEL_SUFFIX = "_[k]"  # appended to kernel frames in folded stacks (the flamegraph.pl convention)
UNKNOWN = "[unknown]"
TRUNCATED = "[chain truncated]"  # put below a named thread whose sample's call chain stopped short of its function
_HEADER = re.compile(r"^(?P<comm>\S.*?)\s+(?:(?P<pid>\d+)/)?(?P<tid>\d+)\s*(?:\[\d+\])?\s*(?:[\d.]+:)?.*$")


def _parse_samples(text: str) -> list[tuple[str, int, int, list[str]]]:
    """``perf script`` text -> (comm, pid, tid, frames innermost first).  A
    header line starts at column 0 (comm, then pid/tid or tid); frame lines
    are indented: address, symbol, and maybe ``(dso)``."""
    out: list[tuple[str, int, int, list[str]]] = []
    cur: tuple[str, int, int, list[str]] | None = None
    for line in text.splitlines():
        if not line.strip():
            if cur is not None:
                out.append(cur)
                cur = None
            continue
        if not line[0].isspace():
            if cur is not None:
                out.append(cur)
            m = _HEADER.match(line)
            if m is None:
                cur = None
                continue
            tid = int(m.group("tid"))
            pid = int(m.group("pid")) if m.group("pid") else tid
            cur = (m.group("comm").strip(), pid, tid, [])
            continue
        if cur is None:
            continue
        parts = line.split(None, 1)
        if len(parts) < 2:
            continue
        addr, rest = parts
        sym = re.sub(r"\s+\([^()]*\)$", "", rest).strip()  # drop "(dso)"
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)  # drop "+0x1f" offsets
        if sym in ("", UNKNOWN) or sym.startswith("0x"):
            sym = UNKNOWN
        elif addr.lower().startswith("ffffffff"):
            sym += KERNEL_SUFFIX
        cur[3].append(sym)
    if cur is not None:
        out.append(cur)
    return out


def _folded(folded: Any) -> dict[str, int]:
    """Folded stacks: a dict of stack text -> samples (an int >= 0)."""
    if not isinstance(folded, dict):
        raise TypeError(f"folded must be a dict of stack -> samples, got {type(folded).__name__} {folded!r:.60}")
    for stack, n in folded.items():
        if not isinstance(stack, str):
            raise TypeError(f"folded's stacks must be strings ('a;b;c'), got {type(stack).__name__} {stack!r:.60}")
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
            raise TypeError(f"folded's sample counts must be ints, got {type(n).__name__} {n!r} for {stack!r:.60}")
        if n < 0:
            raise ValueError(f"folded's sample counts must be >= 0, got {n} for {stack!r:.60}")
    return folded


def collapse_perf_script(text: str, thread_names: tuple[str, ...] = (), keep_unknown: bool = False) -> dict[str, int]:
    """Folds ``perf script`` output (with ``-F comm,pid,tid,ip,sym``) into
    ``"root;caller;...;leaf" -> samples``.  Each stack starts with the
    process's name, then its thread: a thread whose samples contain one of
    ``thread_names`` (e.g. ``producer_main``) is named after it and its
    frames start below that frame (code built without frame pointers
    loses the frames above; a sample of that thread whose chain stops
    short of the frame gets a ``[chain truncated]`` frame under the thread's
    name instead); the thread whose id is the process id is
    ``main thread``; any other is named after its most frequent outermost
    known frame.  ``[unknown]`` frames (no symbol, or a broken frame-pointer
    chain) are dropped unless ``keep_unknown``; kernel frames end in ``_[k]``."""
    str_arg(text, "text")
    if isinstance(thread_names, (str, bytes)) or not all(isinstance(n, str) for n in thread_names):
        raise TypeError(f"thread_names must be a tuple of function names, got {thread_names!r:.60}")
    bool_arg(keep_unknown, "keep_unknown")
    samples = _parse_samples(text)
    # name each thread once, from all its samples
    seen: dict[tuple[int, int], Counter[str]] = defaultdict(Counter)
    outer: dict[tuple[int, int], Counter[str]] = defaultdict(Counter)
    for _comm, pid, tid, frames in samples:
        known = [f for f in frames if f != UNKNOWN]
        seen[(pid, tid)].update(set(known))
        if known:
            outer[(pid, tid)][known[-1]] += 1
    label: dict[tuple[int, int], str] = {}
    for key in seen:
        hits = [n for n in thread_names if seen[key][n]]
        if hits:
            label[key] = max(hits, key=lambda n: seen[key][n])
        elif key[0] == key[1]:
            label[key] = "main thread"
        elif outer[key]:
            label[key] = outer[key].most_common(1)[0][0]
        else:
            label[key] = "thread"
    folded: Counter[str] = Counter()
    for comm, pid, tid, frames in samples:
        name = label.get((pid, tid), "thread")
        chain = list(reversed(frames))  # outermost first
        if name in chain:
            chain = chain[chain.index(name) + 1 :]
        elif name in thread_names:
            chain = [TRUNCATED, *chain]  # the unwinder never reached the thread's function: callers are missing
        if not keep_unknown:
            chain = [f for f in chain if f != UNKNOWN]
        folded[";".join([comm or "?", name, *chain])] += 1
    return dict(folded)


def parse_folded(text: str) -> dict[str, int]:
    """Folded-stack text (``a;b;c 12`` per line, as py-spy's ``-f raw`` and
    stackcollapse scripts write it) -> stack -> samples."""
    str_arg(text, "text")
    out: Counter[str] = Counter()
    for line in text.splitlines():
        line = line.rstrip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            out[stack] += int(count)
    return dict(out)


def share(folded: dict[str, int], pattern: str) -> float:
    """The fraction of samples (0..1) with a frame matching the regular
    expression ``pattern`` anywhere in the stack."""
    rx = regex_arg(pattern, "pattern")
    total = sum(_folded(folded).values())
    if not total:
        return 0.0
    return sum(n for s, n in folded.items() if any(rx.search(f) for f in s.split(";"))) / total


def leaves(folded: dict[str, int], n: int = 10) -> list[tuple[str, float]]:
    """The ``n`` frames with the most *self* samples (the stack's leaf), as
    (frame, fraction of all samples): where the CPU was when sampled."""
    n = int_arg(n, "n", minimum=0)
    total = sum(_folded(folded).values()) or 1
    c: Counter[str] = Counter()
    for s, k in folded.items():
        c[s.rsplit(";", 1)[-1]] += k
    return [(f, k / total) for f, k in c.most_common(n)]


def by_thread(folded: dict[str, int]) -> dict[str, float]:
    """Each thread's share of the samples (0..1), from the second frame of
    the stacks :func:`collapse_perf_script` folds (process;thread;...);
    py-spy's stacks start with ``thread (tid): name`` and are grouped by that."""
    total = sum(_folded(folded).values()) or 1
    c: Counter[str] = Counter()
    for s, n in folded.items():
        parts = s.split(";")
        c[parts[1] if len(parts) > 1 and not parts[0].startswith("thread (") else parts[0]] += n
    return {k: v / total for k, v in c.most_common()}


def only(folded: dict[str, int], thread_pattern: str) -> dict[str, int]:
    """The stacks whose thread (second frame) matches ``thread_pattern``."""
    rx = regex_arg(thread_pattern, "thread_pattern")
    return {s: n for s, n in _folded(folded).items() if len(s.split(";")) > 1 and rx.search(s.split(";")[1])}


def child_result(output: str) -> dict[str, object] | None:
    """The last line of ``output`` that parses as a JSON object (what
    :func:`pipeline_child` prints), or None."""
    str_arg(output, "output")
    for line in reversed(output.strip().splitlines()):
        if line.startswith("{"):
            try:
                out = json.loads(line)
            except ValueError:
                continue
            if isinstance(out, dict):
                return out
    return None


# ---- rendering ------------------------------------------------------------------------------


@dataclass
class _Node:
    name: str
    total: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


def _tree(folded: dict[str, int]) -> _Node:
    root = _Node("all")
    for stack, n in folded.items():
        node = root
        node.total += n
        for f in stack.split(";"):
            node = node.children.setdefault(f, _Node(f))
            node.total += n
    return root


def _colour(name: str, highlight: re.Pattern[str] | None) -> str:
    if highlight is not None and highlight.search(name):
        return "rgb(120,90,220)"
    h = int(hashlib.md5(name.encode()).hexdigest()[:4], 16) / 0xFFFF  # stable across runs (not hash())
    if name.endswith(KERNEL_SUFFIX):
        return f"rgb({220 + int(30 * h)},{130 + int(50 * h)},40)"  # kernel: orange
    return f"rgb({225 + int(30 * h)},{60 + int(120 * h)},{50 + int(20 * h)})"  # user: red to yellow


def flamegraph_svg(
    folded: dict[str, int],
    title: str = "Flame graph",
    *,
    width: int = 960,
    row: int = 17,
    min_px: float = 0.5,
    highlight: str | None = None,
    subtitle: str = "",
) -> str:
    """An SVG flame graph of ``folded`` stacks: one rectangle per frame,
    its width the frame's share of the samples (time, for a clock event),
    callers below their callees, siblings in alphabetical order (not in
    time order).  Frames matching the regular expression ``highlight`` are
    purple; kernel frames orange; user frames red to yellow.  Hovering a
    frame shows its samples and share.  Deterministic for a given input.
    ``width`` 100..100,000 px, ``row`` 4..200 px, ``min_px`` >= 0."""
    folded = _folded(folded)
    str_arg(title, "title")
    str_arg(subtitle, "subtitle")
    width = int_arg(width, "width", minimum=100, maximum=100_000)
    row = int_arg(row, "row", minimum=4, maximum=200)
    min_px = real_arg(min_px, "min_px", minimum=0.0, maximum=float(width))
    hl = regex_arg(highlight, "highlight") if highlight else None
    root = _tree(folded)
    total = max(root.total, 1)
    depth = 0
    rects: list[tuple[float, int, float, _Node]] = []
    pad_top = 44 if subtitle else 30
    scale = (width - 20) / total

    def walk(node: _Node, x: float, level: int) -> None:
        nonlocal depth
        depth = max(depth, level)
        rects.append((x, level, node.total * scale, node))
        cx = x
        for name in sorted(node.children):
            child = node.children[name]
            if child.total * scale >= min_px:
                walk(child, cx, level + 1)
            cx += child.total * scale

    walk(root, 10.0, 0)
    height = pad_top + (depth + 1) * row + 24
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="rgb(250,250,245)"/>',
        f'<text x="{width / 2:.0f}" y="18" text-anchor="middle" font-size="14">{html.escape(title)}</text>',
    ]
    if subtitle:
        out.append(
            f'<text x="{width / 2:.0f}" y="34" text-anchor="middle" font-size="11">{html.escape(subtitle)}</text>'
        )
    for x, level, w, node in rects:
        y = height - 24 - (level + 1) * row
        pct = 100 * node.total / total
        tip = html.escape(f"{node.name} ({node.total:,} samples, {pct:.2f}%)")
        fill = "rgb(200,200,200)" if level == 0 else _colour(node.name, hl)
        out.append(
            f'<g><title>{tip}</title><rect x="{x:.2f}" y="{y}" width="{max(w - 0.5, 0.1):.2f}" '
            f'height="{row - 1}" fill="{fill}" rx="1"/>'
        )
        chars = int((w - 6) / 6.6)
        if chars >= 3:
            label = node.name if len(node.name) <= chars else node.name[: chars - 2] + ".."
            out.append(f'<text x="{x + 3:.2f}" y="{y + row - 5}">{html.escape(label)}</text>')
        out.append("</g>")
    out.append(
        f'<text x="10" y="{height - 6}" font-size="10">width = share of {total:,} samples (time on CPU); '
        "bottom = outermost frame; siblings sorted by name, not by time</text>"
    )
    out.append("</svg>")
    return "\n".join(out)
