"""The memory-ordering lint: ordering bugs that neither x86 nor
ThreadSanitizer can show, found in the learner's source.

An all-relaxed queue (the slot itself an atomic, written and read relaxed)
has no data race for TSan to report, and runs correctly on x86, whose
hardware orders every store and load the way release/acquire asks; only a
weakly ordered machine (ARM64, POWER) or a compiler reordering breaks it.  No
run on the course's x86 machines can catch it, so the rule is checked on the
source instead:

- the file is preprocessed with a ``stdatomic.h`` of our own that defines
  nothing (:data:`FAKE_STDATOMIC`), so every ``atomic_*`` call, ``__atomic_*``
  builtin and ``memory_order_*`` name stays as written, with the learner's
  own macros expanded (``REMOTE_LOAD`` included);
- each of the exercise's hot functions (its API less create, destroy and the
  debug hooks), with the file's static helpers it calls spliced in where
  they are called, is a list of atomic accesses in source order; a location
  is named by the member it reaches (``&q->cells[i].seq`` is ``seq``);
- a *write* to a location that another hot function reads must be release,
  acq_rel or seq_cst, or be carried by one: a release fence before it, or a
  release write or fence after it in the same function (the data written
  before the flag); a *read* of a location another hot function writes must
  be acquire, acq_rel or seq_cst, or come after an acquire read or fence, or
  before an acquire fence, in the same function (the data read after the flag).

So a thread's own cursor (written and read by the same function) and ticket
counters (taken with a CAS no other function touches) may stay relaxed, as
the exercises' headers say.  What it does not prove: that the orders are
placed where they pair (that is what the stress and TSan runs are for), or
anything about plain (non-atomic) accesses (TSan's part)."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The header put first on the lint's include path: with it, atomic calls
#: survive preprocessing as written.
FAKE_STDATOMIC = "/* the ordering lint's stdatomic.h: defines nothing */\n"

_ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")
_RELEASE = {"release", "acq_rel", "seq_cst"}
_ACQUIRE = {"acquire", "acq_rel", "seq_cst", "consume"}
_COLD = re.compile(r"create|destroy|debug|init")
# Locks order their critical sections on their own (a mutex-based queue is
# judged by its runs, not by this lint).
_LOCKS = re.compile(r"\b(pthread_mutex_(?:timed)?lock|pthread_spin_lock|pthread_rwlock_\w+lock|mtx_lock)\s*\(")

# name -> (kind, index of the order argument or None for seq_cst); the pointer is argument 0.
_OPS: dict[str, tuple[str, int | None]] = {
    "atomic_store_explicit": ("store", 2),
    "atomic_load_explicit": ("load", 1),
    "atomic_exchange_explicit": ("rmw", 2),
    "atomic_compare_exchange_strong_explicit": ("rmw", 3),
    "atomic_compare_exchange_weak_explicit": ("rmw", 3),
    "atomic_flag_test_and_set_explicit": ("rmw", 1),
    "atomic_flag_clear_explicit": ("store", 1),
    "atomic_store": ("store", None),
    "atomic_load": ("load", None),
    "atomic_exchange": ("rmw", None),
    "atomic_compare_exchange_strong": ("rmw", None),
    "atomic_compare_exchange_weak": ("rmw", None),
    "atomic_flag_test_and_set": ("rmw", None),
    "atomic_flag_clear": ("store", None),
    "atomic_thread_fence": ("fence", 0),
    "__atomic_load_n": ("load", 1),
    "__atomic_load": ("load", 2),
    "__atomic_store_n": ("store", 2),
    "__atomic_store": ("store", 2),
    "__atomic_exchange_n": ("rmw", 2),
    "__atomic_exchange": ("rmw", 3),
    "__atomic_compare_exchange_n": ("rmw", 4),
    "__atomic_compare_exchange": ("rmw", 4),
    "__atomic_test_and_set": ("rmw", 1),
    "__atomic_clear": ("store", 1),
    "__atomic_thread_fence": ("fence", 0),
    "__c11_atomic_store": ("store", 2),
    "__c11_atomic_load": ("load", 1),
    "__c11_atomic_exchange": ("rmw", 2),
    "__c11_atomic_compare_exchange_strong": ("rmw", 3),
    "__c11_atomic_compare_exchange_weak": ("rmw", 3),
    "__c11_atomic_thread_fence": ("fence", 0),
}
for _op in ("add", "sub", "or", "xor", "and", "nand"):
    _OPS[f"atomic_fetch_{_op}_explicit"] = ("rmw", 2)
    _OPS[f"atomic_fetch_{_op}"] = ("rmw", None)
    _OPS[f"__atomic_fetch_{_op}"] = ("rmw", 2)
    _OPS[f"__atomic_{_op}_fetch"] = ("rmw", 2)
    _OPS[f"__c11_atomic_fetch_{_op}"] = ("rmw", 2)


@dataclass(frozen=True)
class Access:
    kind: str  # "load", "store", "rmw" or "fence"
    where: str  # the member it reaches ("seq"), "" for a fence
    order: str  # one of _ORDERS, or "?" when the lint cannot read it
    text: str  # the call as written, shortened
    function: str  # the function it is written in


def _order(arg: str | None) -> str:
    if arg is None:
        return "seq_cst"
    a = re.sub(r"\(\s*(memory_order|int|unsigned)\s*\)", "", arg)
    a = a.replace("(", " ").replace(")", " ").strip()
    m = re.fullmatch(r"(?:memory_order_|__ATOMIC_)(\w+)", a, flags=re.I)
    if m and m.group(1).lower() in _ORDERS:
        return m.group(1).lower()
    if re.fullmatch(r"[0-5]", a):
        return _ORDERS[int(a)]
    return "?"


def _location(arg: str) -> str:
    a = arg.strip()
    while True:  # drop trailing subscripts: &r->slots[i & mask] reaches slots
        b = re.sub(r"\[[^\[\]]*\]\s*$", "", a)
        if b == a:
            break
        a = b
    names = re.findall(r"[A-Za-z_]\w*", a)
    return names[-1] if names else a


def _split_args(text: str, start: int) -> tuple[list[str], int]:
    """The top-level arguments of the call whose '(' is at ``start``, and the
    index after its ')'."""
    depth, args, cur = 0, [], start + 1
    i = start
    while i < len(text):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[cur:i])
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(text[cur:i])
            cur = i + 1
        i += 1
    return args, len(text)


def functions(source: str) -> dict[str, str]:
    """The bodies of the functions defined in ``source`` (preprocessed C, its
    strings and character literals already harmless), by name."""
    text = re.sub(r'"(\\.|[^"\\])*"', '""', source)
    text = re.sub(r"'(\\.|[^'\\])*'", "' '", text)
    out: dict[str, str] = {}
    depth, i = 0, 0
    while i < len(text):
        c = text[i]
        if c == "{":
            if depth == 0:
                head = text[max(0, i - 400) : i].rstrip()
                m = re.search(r"([A-Za-z_]\w*)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*$", head)
                end = _matching_brace(text, i)
                if m and m.group(1) not in ("if", "while", "for", "switch"):
                    out[m.group(1)] = text[i:end]
                i = end
                continue
            depth += 1
        elif c == "}":
            depth -= 1
        i += 1
    return out


def _matching_brace(text: str, i: int) -> int:
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def _events(name: str, bodies: dict[str, str], seen: tuple[str, ...] = ()) -> list[Access]:
    """The atomic accesses of ``name`` in source order, with those of the
    file's functions it calls spliced in at the call."""
    body = bodies[name]
    found: list[tuple[int, list[Access]]] = []
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", body):
        fn = m.group(1)
        if fn in _OPS:
            kind, oi = _OPS[fn]
            args, end = _split_args(body, m.end() - 1)
            order_arg = args[oi] if oi is not None and oi < len(args) else None
            if oi is not None and oi >= len(args):
                order = "?"
            else:
                order = _order(order_arg)
            where = "" if kind == "fence" else _location(args[0] if args else "")
            text = " ".join(body[m.start() : end].split())
            found.append((m.start(), [Access(kind, where, order, text[:90], name)]))
        elif fn in bodies and fn != name and fn not in seen:
            found.append((m.start(), _events(fn, bodies, (*seen, name))))
    return [a for _, group in sorted(found, key=lambda x: x[0]) for a in group]


def lint(source: str, hot: list[str], filename: str) -> list[str]:
    """The ordering problems of ``source`` (the learner's preprocessed lines,
    atomics unexpanded), one sentence each; ``hot`` are the API functions
    that run concurrently (push and pop)."""
    bodies = functions(source)
    roots = [f for f in hot if f in bodies and not _COLD.search(f)]
    events = {f: _events(f, bodies) for f in roots}
    writes: dict[str, set[str]] = {}
    reads: dict[str, set[str]] = {}
    for f, evs in events.items():
        for a in evs:
            if a.kind in ("store", "rmw"):
                writes.setdefault(a.where, set()).add(f)
            if a.kind in ("load", "rmw"):
                reads.setdefault(a.where, set()).add(f)
    problems: list[str] = []
    if roots and not any(events.values()) and not _LOCKS.search(source):
        # A stub, or a queue that shares nothing between its threads: no
        # order to judge is not an order that is right.
        problems.append(
            f"{filename}: {', '.join(roots)} use no atomic operation and no lock: nothing orders what one "
            "thread hands to another"
        )
    for f, evs in events.items():
        for i, a in enumerate(evs):
            if a.kind == "fence":
                continue
            if a.order == "?":
                problems.append(
                    f"{filename}: in {f}, the memory order of `{a.text}` is not a memory_order_... name the "
                    "grader can read: write it out"
                )
                continue
            others_read = sorted(reads.get(a.where, set()) - {f})
            others_write = sorted(writes.get(a.where, set()) - {f})
            if a.kind in ("store", "rmw") and others_read and a.order not in _RELEASE:
                # Published after all: a release fence before it, or a release
                # write (or fence) after it that carries it (the data before a flag).
                fenced = any(e.kind == "fence" and e.order in _RELEASE for e in evs[:i])
                carried = any(e.kind != "load" and e.order in _RELEASE for e in evs[i + 1 :])
                if not (fenced or carried):
                    problems.append(
                        f"{filename}: in {f}, `{a.text}` writes `{a.where}` with memory_order_{a.order}, but "
                        f"{others_read[0]} reads it: a publication must be memory_order_release (or seq_cst, or "
                        "follow a release fence); x86 and ThreadSanitizer cannot show this, ARM64 can"
                    )
            if a.kind in ("load", "rmw") and others_write and a.order not in _ACQUIRE:
                # Consumed after all: an acquire fence after it, or an acquire
                # read (or fence) before it that it depends on (the data after a flag).
                fenced = any(e.kind == "fence" and e.order in _ACQUIRE for e in evs[i + 1 :])
                carried = any(e.kind != "store" and e.order in _ACQUIRE for e in evs[:i])
                if not (fenced or carried):
                    problems.append(
                        f"{filename}: in {f}, `{a.text}` reads `{a.where}` with memory_order_{a.order}, but "
                        f"{others_write[0]} writes it: a load that consumes what another thread published must be "
                        "memory_order_acquire (or seq_cst, or come before an acquire fence); x86 and "
                        "ThreadSanitizer cannot show this, ARM64 can"
                    )
    return problems


def uses_fences(source: str) -> bool:
    """True when the learner's source orders with fences
    (``atomic_thread_fence``): GCC's ThreadSanitizer does not model them."""
    return bool(re.search(r"\b(atomic_thread_fence|__atomic_thread_fence|__c11_atomic_thread_fence)\s*\(", source))


__all__ = ["FAKE_STDATOMIC", "Access", "functions", "lint", "uses_fences"]
