"""Sampling profiles and scheduler traces of a child process (chapter 04b):
``perf record -g`` on the ``cpu-clock`` software event, folded stacks, a
flame graph drawn as SVG, ``perf report --stdio``, ``perf sched timehist``,
and py-spy where perf is missing or refused.  Times are in ms unless a name
says otherwise.

Why a flame-graph renderer of our own: the reference renderer
(``flamegraph.pl``) is a Perl script that is packaged neither on PyPI nor
in every distribution the course supports, and ``py-spy`` renders only
the stacks it samples itself, not ``perf script``'s.  Folding stacks and
drawing one rectangle per frame is about a hundred lines, so the course
carries them (:func:`collapse_perf_script`, :func:`flamegraph_svg`) instead
of a dependency a learner might not be able to install.

Nothing here raises because a tool is missing or refused: every function
returns a result whose ``available`` is False and whose ``reason`` says why
(perf not installed, ``perf_event_paranoid`` too strict, not root...).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

SOFTWARE_EVENTS = ("task-clock", "context-switches", "cpu-migrations", "page-faults")
HARDWARE_EVENTS = ("cycles", "instructions", "cache-misses", "branch-misses")
PARANOID_FILE = Path("/proc/sys/kernel/perf_event_paranoid")
KERNEL_SUFFIX = "_[k]"  # appended to kernel frames in folded stacks (the flamegraph.pl convention)
UNKNOWN = "[unknown]"


def _install_hint() -> str:
    if sys.platform == "darwin":
        return "perf is Linux only; on macOS use py-spy, Instruments or dtrace"
    return "perf is not installed (Debian: apt-get install linux-perf; Ubuntu: linux-tools-generic)"


def perf_path() -> str | None:
    """The ``perf`` program on PATH, or None."""
    return shutil.which("perf")


def paranoid() -> int | None:
    """``/proc/sys/kernel/perf_event_paranoid`` (None where absent: not
    Linux, or no perf events in this kernel).  -1: everything allowed; 0:
    no raw tracepoints for users; 1: users see kernel and user code of
    their own processes; 2: users see only user-space code of their own
    processes; above 2 (some distributions): users may not use perf at all."""
    try:
        return int(PARANOID_FILE.read_text().strip())
    except (OSError, ValueError):
        return None


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass
class PerfAccess:
    """What ``perf`` can do here, for this user.  ``counted``: events
    ``perf stat`` counted; ``sampling``: whether ``perf record -e
    cpu-clock`` works."""

    perf: str | None
    paranoid: int | None
    root: bool
    counted: list[str] = field(default_factory=list)
    not_counted: list[str] = field(default_factory=list)
    sampling: bool = False
    reason: str = ""

    @property
    def software(self) -> list[str]:
        return [e for e in self.counted if e in SOFTWARE_EVENTS]

    @property
    def hardware(self) -> list[str]:
        return [e for e in self.counted if e in HARDWARE_EVENTS]

    def summary(self) -> str:
        """One line for the doctor."""
        who = "root" if self.root else "not root"
        par = "absent" if self.paranoid is None else str(self.paranoid)
        if self.perf is None:
            return f"no: {self.reason} (perf_event_paranoid {par}, {who})"
        sw = ", ".join(self.software) or "none"
        hw = ", ".join(self.hardware) or "none"
        samp = "allowed" if self.sampling else "refused"
        return (
            f"{self.perf}; software events: {sw}; hardware events: {hw}; sampling (perf record -e cpu-clock): "
            f"{samp}; perf_event_paranoid {par}, {who}" + (f"; {self.reason}" if self.reason else "")
        )


def _stat_counts(perf: str, events: tuple[str, ...], cmd: list[str], timeout_s: float) -> tuple[dict[str, str], str]:
    """``perf stat -x,`` of ``cmd``: event -> value (or "<not supported>"),
    and the last line of stderr."""
    try:
        res = subprocess.run(
            [perf, "stat", "-x", ",", "-e", ",".join(events), "--", *cmd],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {}, str(exc)
    out = {}
    for line in res.stderr.splitlines():
        parts = line.split(",")
        if len(parts) >= 3:
            name = parts[2].split(":")[0]
            if name in events:
                out[name] = parts[0]
    return out, (res.stderr.strip().splitlines() or ["no output"])[-1]


def probe(timeout_s: float = 10.0, *, sample: bool = False) -> PerfAccess:
    """Asks perf which software and hardware events ``perf stat`` counts for
    a trivial command (about 0.05 s).  Sampling a software event needs the
    same permission as counting it, so ``sampling`` is inferred from
    ``cpu-clock``'s sibling ``task-clock`` being counted; with ``sample``,
    one ``perf record -e cpu-clock`` of a trivial command checks it for real
    (about 1 s: perf record's own start-up)."""
    perf = perf_path()
    acc = PerfAccess(perf, paranoid(), is_root())
    if perf is None:
        acc.reason = _install_hint()
        return acc
    true = shutil.which("true") or "/bin/true"
    counts, tail = _stat_counts(perf, SOFTWARE_EVENTS + HARDWARE_EVENTS, [true], timeout_s)
    acc.counted = [e for e, v in counts.items() if not v.startswith("<")]
    acc.not_counted = [e for e in SOFTWARE_EVENTS + HARDWARE_EVENTS if e not in acc.counted]
    if not counts:
        acc.reason = f"perf stat refused: {tail}"
    acc.sampling = "task-clock" in acc.counted
    if sample:
        with tempfile.TemporaryDirectory(prefix="lowlat-probe-") as tmp:
            try:
                res = subprocess.run(
                    [perf, "record", "-q", "-e", "cpu-clock", "-o", f"{tmp}/p.data", "--", true],
                    capture_output=True,
                    text=True,
                    timeout=timeout_s,
                )
                acc.sampling = res.returncode == 0 and Path(f"{tmp}/p.data").exists()
                if not acc.sampling and not acc.reason:
                    acc.reason = "perf record refused: " + (res.stderr.strip().splitlines() or ["no output"])[-1]
            except (OSError, subprocess.TimeoutExpired) as exc:
                acc.sampling = False
                acc.reason = f"perf record failed: {exc}"
    if acc.counted and not acc.hardware:
        acc.reason = acc.reason or "no hardware events (usual in VMs and containers)"
    if acc.sampling and not acc.root and (acc.paranoid or 0) >= 2:
        acc.reason = (acc.reason + "; " if acc.reason else "") + (
            "as a user with perf_event_paranoid >= 2: user-space frames only, no kernel frames, no perf sched"
        )
    return acc


# ---- folded stacks --------------------------------------------------------------------------

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


def collapse_perf_script(text: str, thread_names: tuple[str, ...] = (), keep_unknown: bool = False) -> dict[str, int]:
    """Folds ``perf script`` output (with ``-F comm,pid,tid,ip,sym``) into
    ``"root;caller;...;leaf" -> samples``.  Each stack starts with the
    process's name, then its thread: a thread whose samples contain one of
    ``thread_names`` (e.g. ``producer_main``) is named after it and its
    frames start below that frame (code built without frame pointers
    loses the frames above); the thread whose id is the process id is
    ``main thread``; any other is named after its most frequent outermost
    known frame.  ``[unknown]`` frames (no symbol, or a broken frame-pointer
    chain) are dropped unless ``keep_unknown``; kernel frames end in ``_[k]``."""
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
        if not keep_unknown:
            chain = [f for f in chain if f != UNKNOWN]
        folded[";".join([comm or "?", name, *chain])] += 1
    return dict(folded)


def parse_folded(text: str) -> dict[str, int]:
    """Folded-stack text (``a;b;c 12`` per line, as py-spy's ``-f raw`` and
    stackcollapse scripts write it) -> stack -> samples."""
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
    total = sum(folded.values())
    if not total:
        return 0.0
    rx = re.compile(pattern)
    return sum(n for s, n in folded.items() if any(rx.search(f) for f in s.split(";"))) / total


def leaves(folded: dict[str, int], n: int = 10) -> list[tuple[str, float]]:
    """The ``n`` frames with the most *self* samples (the stack's leaf), as
    (frame, fraction of all samples): where the CPU was when sampled."""
    total = sum(folded.values()) or 1
    c: Counter[str] = Counter()
    for s, k in folded.items():
        c[s.rsplit(";", 1)[-1]] += k
    return [(f, k / total) for f, k in c.most_common(n)]


def by_thread(folded: dict[str, int]) -> dict[str, float]:
    """Each thread's share of the samples (0..1), from the second frame of
    the stacks :func:`collapse_perf_script` folds (process;thread;...);
    py-spy's stacks start with ``thread (tid): name`` and are grouped by that."""
    total = sum(folded.values()) or 1
    c: Counter[str] = Counter()
    for s, n in folded.items():
        parts = s.split(";")
        c[parts[1] if len(parts) > 1 and not parts[0].startswith("thread (") else parts[0]] += n
    return {k: v / total for k, v in c.most_common()}


def only(folded: dict[str, int], thread_pattern: str) -> dict[str, int]:
    """The stacks whose thread (second frame) matches ``thread_pattern``."""
    rx = re.compile(thread_pattern)
    return {s: n for s, n in folded.items() if len(s.split(";")) > 1 and rx.search(s.split(";")[1])}


def child_result(output: str) -> dict[str, object] | None:
    """The last line of ``output`` that parses as a JSON object (what
    :func:`pipeline_child` prints), or None."""
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
    frame shows its samples and share.  Deterministic for a given input."""
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
    hl = re.compile(highlight) if highlight else None
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


# ---- recording ------------------------------------------------------------------------------


@dataclass
class Profile:
    """A sampling profile of one child process.  ``folded``: stack ->
    samples; ``report``: the top of ``perf report --stdio`` (perf only);
    ``user_only``: perf sampled user space only (a user at
    ``perf_event_paranoid`` >= 2, or no kernel frame in any stack), so the
    time spent inside system calls is missing from the shares."""

    available: bool
    reason: str
    tool: str = ""  # "perf" or "py-spy"
    folded: dict[str, int] = field(default_factory=dict)
    report: str = ""
    frequency: int = 0  # samples per second per thread
    child_output: str = ""
    user_only: bool = False

    @property
    def samples(self) -> int:
        return sum(self.folded.values())


def _cmd_ok(cmd: object) -> list[str]:
    if isinstance(cmd, (str, bytes)) or not isinstance(cmd, (list, tuple)) or not cmd:
        raise TypeError(f"cmd must be a non-empty list of strings (a program and its arguments), got {cmd!r}")
    if not all(isinstance(c, str) for c in cmd):
        raise TypeError(f"cmd must be a list of strings, got {cmd!r}")
    return list(cmd)


def _freq(frequency: object) -> int:
    if isinstance(frequency, bool) or not isinstance(frequency, int) or not 1 <= frequency <= 10_000:
        raise ValueError(f"frequency must be an int in [1, 10000] samples per second, got {frequency!r}")
    return frequency


def python_child(code: str) -> list[str]:
    """The command that runs ``code`` in a new Python process with this
    interpreter and this process's ``sys.path`` (so it imports the same lowlat)."""
    if not isinstance(code, str) or not code.strip():
        raise TypeError(f"code must be a non-empty string of Python, got {code!r}")
    paths = [p for p in sys.path if p]
    prelude = f"import sys; sys.path[:0] = {paths!r}\n"
    return [sys.executable, "-c", prelude + code]


def pipeline_child(**changes: object) -> list[str]:
    """A child that runs ``lowlat.pipeline.run(best_config(), **changes)``
    and prints one line of JSON: its P50/P99/max (ns), its stalls
    (``troubleshoot.stalls``) and its process id."""
    code = (
        "import json, os\n"
        "from lowlat import pipeline as pl, troubleshoot as ts\n"
        f"r = pl.run(pl.best_config(), **{changes!r})\n"
        "s = r.summary()\n"
        "print(json.dumps({'pid': os.getpid(), 'p50': s['p50'], 'p99': s['p99'], 'max': s['max'], "
        "'seconds': r.seconds, 'consumed': r.consumed, 'lost': r.lost, 'stalls': ts.stalls(r, 20)}))\n"
    )
    return python_child(code)


def record(
    cmd: list[str],
    *,
    frequency: int = 999,
    thread_names: tuple[str, ...] = ("producer_main", "consumer_main"),
    tool: str = "auto",
    report_lines: int = 25,
    timeout_s: float = 120.0,
) -> Profile:
    """Samples ``cmd`` and every thread it starts, ``frequency`` times per
    second per thread: ``perf record -e cpu-clock -g`` (frame-pointer
    call graphs; the software clock works in VMs without hardware
    counters), folded with :func:`collapse_perf_script`; with
    ``tool="py-spy"``, or ``"auto"`` when perf is missing or refused,
    ``py-spy record --native`` instead (Python frames and the C they call;
    only threads that run Python, so threads a C library starts itself are
    not in its profile).  Never raises for a missing or refused tool: ``available`` is False and
    ``reason`` says why."""
    cmd = _cmd_ok(cmd)
    frequency = _freq(frequency)
    if tool not in ("auto", "perf", "py-spy"):
        raise ValueError(f"tool must be 'auto', 'perf' or 'py-spy', got {tool!r}")
    why: list[str] = []
    if tool in ("auto", "perf"):
        prof = _record_perf(cmd, frequency, thread_names, report_lines, timeout_s)
        if prof.available or tool == "perf":
            return prof
        why.append(prof.reason)
    prof = _record_pyspy(cmd, frequency, timeout_s)
    if why and not prof.available:
        prof.reason = "; ".join([*why, prof.reason])
    elif why:
        prof.reason = f"py-spy instead of perf ({why[0]})"
    return prof


def _record_perf(
    cmd: list[str], frequency: int, thread_names: tuple[str, ...], report_lines: int, timeout_s: float
) -> Profile:
    perf = perf_path()
    if perf is None:
        return Profile(False, _install_hint(), "perf")
    with tempfile.TemporaryDirectory(prefix="lowlat-perf-") as tmp:
        data = f"{tmp}/perf.data"
        try:
            res = subprocess.run(
                [perf, "record", "-q", "-e", "cpu-clock", "-F", str(frequency), "-g", "-o", data, "--", *cmd],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Profile(False, f"perf record failed: {exc}", "perf")
        if res.returncode != 0 or not Path(data).exists():
            tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
            par = paranoid()
            return Profile(
                False,
                f"perf record refused or failed (exit {res.returncode}: {tail}; perf_event_paranoid "
                f"{par if par is not None else 'absent'}, {'root' if is_root() else 'not root'})",
                "perf",
            )
        script = subprocess.run(
            [perf, "script", "-i", data, "-F", "comm,pid,tid,ip,sym"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        rep = subprocess.run(
            [perf, "report", "-i", data, "--stdio", "--no-children", "-g", "none", "--percent-limit", "1"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    folded = collapse_perf_script(script.stdout, thread_names)
    if not folded:
        return Profile(False, "perf recorded no samples", "perf", child_output=res.stdout)
    top = [ln.rstrip() for ln in rep.stdout.splitlines() if ln.strip() and not ln.startswith("#")]
    user_only = (not is_root() and (paranoid() or 0) >= 2) or share(folded, r"_\[k\]$") == 0.0
    return Profile(
        True,
        f"perf record -e cpu-clock -F {frequency} -g",
        "perf",
        folded,
        "\n".join(top[:report_lines]),
        frequency,
        res.stdout,
        user_only,
    )


def _record_pyspy(cmd: list[str], frequency: int, timeout_s: float) -> Profile:
    spy = shutil.which("py-spy") or (
        str(Path(sys.executable).with_name("py-spy")) if Path(sys.executable).with_name("py-spy").exists() else None
    )
    if spy is None:
        return Profile(False, "py-spy is not installed (pip install py-spy)", "py-spy")
    with tempfile.TemporaryDirectory(prefix="lowlat-spy-") as tmp:
        out = f"{tmp}/stacks.txt"
        try:
            res = subprocess.run(
                [
                    spy,
                    "record",
                    "--native",
                    "--threads",
                    "--nolineno",
                    "-r",
                    str(frequency),
                    "-f",
                    "raw",
                    "-o",
                    out,
                    "--",
                    *cmd,
                ],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Profile(False, f"py-spy failed: {exc}", "py-spy")
        text = Path(out).read_text() if Path(out).exists() else ""
    folded = parse_folded(text)
    if not folded:
        tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
        return Profile(False, f"py-spy recorded nothing (exit {res.returncode}: {tail})", "py-spy")
    return Profile(True, f"py-spy record --native -r {frequency}", "py-spy", folded, "", frequency, res.stdout)


# ---- perf sched ----------------------------------------------------------------------------------


@dataclass
class ThreadSched:
    """One thread of the child, from ``perf sched timehist`` (ms):
    ``runs`` times it was switched in; ``off_cpu_ms`` the time it spent
    switched out (waiting to run, or asleep); ``longest_off_ms`` the longest
    such stretch; ``delay_ms`` the longest scheduling delay (runnable but
    not running: preempted, or woken and not yet on a CPU)."""

    tid: int
    run_ms: float
    runs: int
    off_cpu_ms: float
    longest_off_ms: float
    delay_ms: float


@dataclass
class Sched:
    available: bool
    reason: str
    pid: int = 0
    threads: list[ThreadSched] = field(default_factory=list)
    child_output: str = ""


def sched(cmd: list[str], *, timeout_s: float = 120.0) -> Sched:
    """``perf sched record`` of ``cmd`` (all CPUs: every switch), then
    ``perf sched timehist`` summed per thread of the child, busiest first.
    The child must print ``{"pid": ...}`` as JSON on its first stdout line
    (as :func:`pipeline_child` does), so its threads can be told from other
    processes'.  Needs root or a permissive ``perf_event_paranoid`` (it
    reads scheduler tracepoints); never raises for a missing or refused perf."""
    cmd = _cmd_ok(cmd)
    perf = perf_path()
    if perf is None:
        return Sched(False, _install_hint())
    with tempfile.TemporaryDirectory(prefix="lowlat-sched-") as tmp:
        data = f"{tmp}/sched.data"
        try:
            res = subprocess.run(
                [perf, "sched", "record", "-q", "-o", data, "--", *cmd],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Sched(False, f"perf sched record failed: {exc}")
        if res.returncode != 0 or not Path(data).exists():
            tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
            return Sched(
                False,
                f"perf sched record refused or failed (exit {res.returncode}: {tail}; it needs the scheduler "
                f"tracepoints: root, or perf_event_paranoid -1)",
                child_output=res.stdout,
            )
        th = subprocess.run([perf, "sched", "timehist", "-i", data], capture_output=True, text=True, timeout=timeout_s)
    m = re.search(r'"pid":\s*(\d+)', res.stdout)
    if m is None:
        return Sched(False, "the child did not print its pid as JSON", child_output=res.stdout)
    pid = int(m.group(1))
    return Sched(True, "perf sched record + timehist", pid, parse_timehist(th.stdout, pid), res.stdout)


_TIMEHIST = re.compile(
    r"^\s*[\d.]+\s+\[\d+\]\s+(?P<name>.+?)\[(?P<tid>\d+)(?:/(?P<pid>\d+))?\]\s+"
    r"(?P<wait>[\d.]+)\s+(?P<delay>[\d.]+)\s+(?P<run>[\d.]+)"
)


def parse_timehist(text: str, pid: int) -> list[ThreadSched]:
    """Sums ``perf sched timehist`` lines (time, cpu, task[tid/pid], wait,
    sch delay, run time, all ms) per thread of process ``pid`` (the main
    thread shows as ``[pid]``), busiest first."""
    acc: dict[int, list[float]] = {}
    for line in text.splitlines():
        m = _TIMEHIST.match(line)
        if m is None:
            continue
        tid = int(m.group("tid"))
        owner = int(m.group("pid")) if m.group("pid") else tid
        if owner != pid:
            continue
        wait, delay, run = float(m.group("wait")), float(m.group("delay")), float(m.group("run"))
        a = acc.setdefault(tid, [0.0, 0, 0.0, 0.0, 0.0])
        a[0] += run
        a[1] += 1
        a[2] += wait + delay
        a[3] = max(a[3], wait + delay)
        a[4] = max(a[4], delay)
    out = [ThreadSched(t, a[0], int(a[1]), a[2], a[3], a[4]) for t, a in acc.items()]
    return sorted(out, key=lambda t: -t.run_ms)


__all__ = [
    "HARDWARE_EVENTS",
    "SOFTWARE_EVENTS",
    "PerfAccess",
    "Profile",
    "Sched",
    "ThreadSched",
    "by_thread",
    "child_result",
    "collapse_perf_script",
    "flamegraph_svg",
    "leaves",
    "only",
    "paranoid",
    "parse_folded",
    "parse_timehist",
    "perf_path",
    "pipeline_child",
    "probe",
    "python_child",
    "record",
    "sched",
    "share",
]
