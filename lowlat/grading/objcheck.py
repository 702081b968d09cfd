"""What a learner's C file may contain, checked before it is linked with the
grader's checks.

Learner C code is linked into the same process as the checks, so the grader
looks at what the learner's file *is* before running it:

- the source, preprocessed (comments gone, macros expanded), may not contain
  inline assembly (``asm``, ``__asm__``) or switch sanitizers off
  (``no_sanitize``...), and must preprocess to the same code in the plain and
  the sanitized builds (no ``#ifdef __SANITIZE_THREAD__``);
- the compiled object (read as ELF by :func:`read_elf`) may not have
  constructors or destructors (``.init_array``, ``.fini_array``, ``.ctors``,
  ``.dtors``, ``.preinit_array``, ``.init``, ``.fini``) or ifunc resolvers:
  code that would run before or after the checks;
- it may reference only the functions on an allowlist (:data:`ALLOWED`:
  allocation, memory and string functions, ``qsort``, libm, atomics,
  ``sched_yield``, pthread mutexes and spinlocks, the compiler's helpers)
  plus what the exercise's
  header declares: not ``printf``, ``write``, ``exit``, ``syscall``,
  ``getenv``, ``open``, ``fork``, ``dlsym``...;
- it may define only the functions its header declares and helpers named
  with the API's prefix (``mpmc_``): a file that defines ``write`` or
  ``main`` would replace the harness's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from lowlat.grading.objread import ObjectInfo, Refused, read_elf, read_object, read_with_nm

#: Every entry point of the allocator a learner's file may call (and the
#: recorder exercise counts, through ``--wrap``).
ALLOCATORS = (
    "malloc",
    "calloc",
    "realloc",
    "reallocarray",
    "aligned_alloc",
    "posix_memalign",
    "memalign",
    "valloc",
    "free",
)
_MEMORY = ("memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp", "strncmp")
_PURE = (  # functions of their arguments only: sorting, searching, libm
    "qsort",
    "bsearch",
    "abs",
    "labs",
    "llabs",
    *(
        f"{fn}{suffix}"
        for fn in ("sqrt", "cbrt", "exp", "exp2", "log", "log2", "log10", "pow", "floor", "ceil", "round", "trunc")
        + ("fabs", "fmod", "fmin", "fmax", "lround", "llround", "ldexp", "frexp")
        for suffix in ("", "f")
    ),
)
_THREADS = tuple(
    f"pthread_{kind}_{op}"
    for kind, ops in (
        ("mutex", ("init", "destroy", "lock", "trylock", "unlock")),
        ("spin", ("init", "destroy", "lock", "trylock", "unlock")),
    )
    for op in ops
)
_RUNTIME = (
    "sched_yield",
    "abort",
    "__assert_fail",  # glibc's assert()
    "__assert_rtn",  # macOS's
    "__assert",
    "__stack_chk_fail",
    "__stack_chk_guard",
    "__tls_get_addr",
    "_GLOBAL_OFFSET_TABLE_",
)
#: The names a learner's object may reference (besides those its header declares).
ALLOWED = frozenset(ALLOCATORS + _MEMORY + _PURE + _THREADS + _RUNTIME)
#: ... and these families: atomics the compiler turns into library calls,
#: ARM64's outline atomics, integer helpers of libgcc, fortified memcpy.
ALLOWED_PATTERNS = (
    re.compile(r"__atomic_\w+"),
    re.compile(r"__sync_\w+"),
    re.compile(r"__aarch64_\w+"),
    re.compile(
        r"__(u?divti3|u?modti3|multi3|udivmod[dt]i4|(popcount|clz|ctz|ffs|parity)[sdt]i2|bswap[sd]i2|mul[ov][dt]i4)"
    ),
    re.compile(r"__(mem(cpy|move|set)|strn?cpy|strn?cat)_chk"),
)
#: What the compiler's instrumentation references in a sanitized object (and
#: nothing a learner could call to silence a report: no annotations, no
#: ``__sanitizer_set_report_path``).
SANITIZER_PATTERNS = {
    "address": (
        re.compile(
            r"__asan_(report_\w+|load\w*|store\w*|init|version_mismatch_check_v\d+|(un)?register_(elf_)?globals"
            r"|option_detect_stack_use_after_return|stack_(malloc|free)(_always)?_\d+|handle_no_return"
            r"|(before|after)_dynamic_init|mem(cpy|set|move)|allocas?_(un)?poison|set_shadow_\w+"
            r"|shadow_memory_dynamic_address|exp_\w+|(un)?poison_stack_memory)"
        ),
        re.compile(r"__ubsan_handle_\w+"),
    ),
    "thread": (
        re.compile(
            r"__tsan_((unaligned_)?(read|write)\d*|(read|write)_range|volatile_(read|write)\d+|func_(entry|exit)"
            r"|init|atomic\d+_\w+|atomic_(thread|signal)_fence|mem(cpy|set|move)|vptr_\w+)"
        ),
    ),
}
_FORBIDDEN_SECTIONS = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors", ".init", ".fini")
_FORBIDDEN_TOKENS = {
    "asm": "inline assembly",
    "__asm": "inline assembly",
    "__asm__": "inline assembly",
    "no_sanitize": "an attribute that switches a sanitizer off",
    "no_sanitize_address": "an attribute that switches a sanitizer off",
    "no_sanitize_thread": "an attribute that switches a sanitizer off",
    "no_sanitize_undefined": "an attribute that switches a sanitizer off",
    "__no_sanitize_address__": "an attribute that switches a sanitizer off",
    "__no_sanitize_thread__": "an attribute that switches a sanitizer off",
    "no_address_safety_analysis": "an attribute that switches a sanitizer off",
    "disable_sanitizer_instrumentation": "an attribute that switches a sanitizer off",
}


# ---- the source ----------------------------------------------------------------------


def learner_lines(preprocessed: str, filename: str) -> str:
    """The lines of ``cc -E`` output that come from ``filename`` (the
    learner's file, given to the compiler by its bare name)."""
    out: list[str] = []
    mine = False
    for line in preprocessed.splitlines():
        m = re.match(r'#\s*\d+\s+"([^"]*)"', line)
        if m:
            mine = Path(m.group(1)).name == filename and not m.group(1).startswith("<")
            continue
        if mine and line.strip():
            out.append(line)
    return "\n".join(out)


_INSTRUMENTATION_OFF = re.compile(
    r"no_sanitize\w*|no_address_safety_analysis|disable_sanitizer_instrumentation|no_instrument_function"
    r"|no_profile_instrument_function|no_stack_protector|no_split_stack|naked"
)
#: Attributes (spelled ``x`` or ``__x__``) that place code or data where the
#: grader does not look, or make the compiler emit it differently.
_PLACEMENT = {"section", "alias", "ifunc", "target_clones", "symver"}  # constructors: the object check


def _attribute_texts(lines: str) -> list[str]:
    """What every ``__attribute__((...))`` (any spelling, any line breaks),
    ``[[...]]`` and ``__declspec(...)`` in the lines holds."""
    out = []
    for m in re.finditer(r"\b(__attribute__|__attribute|__declspec)\s*\(|\[\s*\[", lines):
        depth, i = 0, m.end() - 1
        close = "]" if lines[i] == "[" else ")"
        opening = lines[i]
        for j in range(i, len(lines)):
            if lines[j] == opening:
                depth += 1
            elif lines[j] == close:
                depth -= 1
                if depth == 0:
                    out.append(lines[i + 1 : j])
                    break
        else:
            out.append(lines[i + 1 :])
    return out


def _attribute_name(token: str) -> str:
    """``__no_sanitize__`` and ``no_sanitize`` alike: GCC accepts both spellings."""
    m = re.fullmatch(r"__(\w+?)__", token)
    return m.group(1) if m else token


def check_source(lines: str, filename: str) -> None:
    """Refuses inline assembly, sanitizer switches (every spelling), section
    and other placement attributes, and ``#pragma``/``_Pragma`` lines in the
    learner's own preprocessed lines (so neither a comment nor a header trips
    it, and no macro hides it)."""
    if re.search(r"^\s*#\s*pragma\b|\b_Pragma\b|\b__pragma\b", lines, flags=re.M):
        raise Refused(f"{filename} uses a #pragma (or _Pragma): not allowed in a graded file")
    attributes = " ".join(_attribute_texts(lines))
    for token in re.findall(r"\b\w+\b", lines):
        if token in _FORBIDDEN_TOKENS:
            advice = (
                " (use a builtin such as __builtin_ia32_pause, or C11 atomics)"
                if "assembly" in _FORBIDDEN_TOKENS[token]
                else ""
            )
            raise Refused(f"{filename} uses {_FORBIDDEN_TOKENS[token]} ({token}){advice}")
        if re.fullmatch(
            r"_*no_sanitize\w*|_*no_address_safety_analysis_*|_*disable_sanitizer_instrumentation_*", token
        ):
            raise Refused(
                f"{filename} uses an attribute that switches a sanitizer off, or other instrumentation ({token})"
            )
    for token in re.findall(r"\b\w+\b", attributes):
        name = _attribute_name(token)
        if _INSTRUMENTATION_OFF.fullmatch(name):
            raise Refused(
                f"{filename} uses an attribute that switches a sanitizer off, or other instrumentation ({token})"
            )
        if name in _PLACEMENT:
            raise Refused(
                f"{filename} uses the attribute {token}: placing code or data in sections of its own, aliases and "
                "the like are not allowed in a graded file"
            )


def check_same_code(plain: str, other: str, sanitizer: str, filename: str) -> None:
    if plain != other:
        raise Refused(
            f"{filename} compiles to different code when the {sanitizer} sanitizer is on (it tests a "
            "sanitizer's macro): the checks must see the same code in every build"
        )


# ---- the header: what the exercise's API declares ------------------------------------------


def api_names(header: str) -> tuple[set[str], set[str]]:
    """(functions, variables) that a C header declares: the names before the
    first ``(`` of each file-scope declaration, and the names of ``extern``
    variables.  Preprocessor lines, comments, typedefs and bodies are
    skipped."""
    text = re.sub(r"/\*.*?\*/", " ", header, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"\\\n", " ", text)
    text = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    while re.search(r"\{[^{}]*\}", text):
        text = re.sub(r"\{[^{}]*\}", " ", text)
    functions: set[str] = set()
    variables: set[str] = set()
    for decl in text.split(";"):
        decl = " ".join(decl.split())
        if not decl or decl.startswith("typedef"):
            continue
        decl = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", decl)
        m = re.search(r"(\w+)\s*\(", decl)
        if m:
            functions.add(m.group(1))
        elif decl.startswith("extern"):
            v = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", decl)
            if v:
                variables.add(v.group(1))
    return functions, variables


def api_prefix(functions: Iterable[str]) -> str:
    """The prefix shared by the API's functions, up to its last ``_``
    (``mpmc_``), or "" when they share none."""
    names = sorted(functions)
    if not names:
        return ""
    first, last = names[0], names[-1]
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    common = first[:n]
    return common[: common.rfind("_") + 1] if "_" in common else ""


# ---- the object ---------------------------------------------------------------------------


def _allowed(sym: str, extra: set[str], sanitizer: str | None) -> bool:
    if sym in ALLOWED or sym in extra:
        return True
    if any(p.fullmatch(sym) for p in ALLOWED_PATTERNS):
        return True
    return sanitizer is not None and any(p.fullmatch(sym) for p in SANITIZER_PATTERNS.get(sanitizer, ()))


def check_object(
    info: ObjectInfo,
    filename: str,
    *,
    api_functions: set[str],
    api_variables: set[str],
    extra_allowed: Iterable[str] = (),
    sanitizer: str | None = None,
) -> None:
    """Raises :class:`Refused` with the first reason the object may not be
    linked.  A sanitized object (``sanitizer`` set) is checked for its
    symbols only: its constructors are the instrumentation's own (the source
    is the same as the plain build's, whose object has none)."""
    if sanitizer is None:
        for name in info.sections:
            base = re.sub(r"^\.rela?(?=\.)", "", name)
            if any(base == s or base.startswith(s + ".") for s in _FORBIDDEN_SECTIONS):
                raise Refused(
                    f"{filename} defines a constructor or destructor (section {name}): code that runs before or "
                    "after the checks is not allowed"
                )
        if info.ifuncs:
            raise Refused(f"{filename} defines an ifunc ({', '.join(sorted(info.ifuncs))}): not allowed")
    extra = set(extra_allowed) | api_functions | api_variables
    bad = sorted(s for s in info.undefined if not _allowed(s, extra, sanitizer))
    if bad:
        shown = ", ".join(bad[:6]) + (", ..." if len(bad) > 6 else "")
        raise Refused(
            f"{filename} uses {shown}, which the grader does not allow: a learner's file may use memory "
            "allocation (malloc, calloc, realloc, aligned_alloc, free, ...), memory and string functions, math, "
            "C11 atomics, sched_yield, pthread mutexes and what the exercise's header declares; no output "
            "(remove debugging printf before grading), no system calls"
        )
    prefix = api_prefix(api_functions)
    foreign = sorted(s for s in info.defined if s not in api_functions and not (prefix and s.startswith(prefix)))
    if foreign:
        shown = ", ".join(foreign[:6]) + (", ..." if len(foreign) > 6 else "")
        hint = f" or name them {prefix}..." if prefix else ""
        raise Refused(
            f"{filename} defines {shown}, which is not in the exercise's API: make helpers static{hint} "
            "(a global of another name could replace one of the grader's own)"
        )


__all__ = [
    "ALLOWED",
    "ObjectInfo",
    "Refused",
    "api_names",
    "api_prefix",
    "check_object",
    "check_same_code",
    "check_source",
    "learner_lines",
    "read_elf",
    "read_object",
    "read_with_nm",
]
