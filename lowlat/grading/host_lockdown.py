"""The child's lockdown, applied by the host (``host.py``) after its own
imports and before the learner's module is imported.  Standard library only:
this file is copied, with ``host.py``, into the child's fresh folder and runs
there; the grader never imports it.

Two kernel mechanisms, each where the platform has it (Linux; the grader
reports which were in force):

- **seccomp** (x86-64 and AArch64): ``PR_SET_NO_NEW_PRIVS`` and a small BPF
  filter that refuses, below Python (so ``_posixsubprocess.fork_exec``,
  ``os.fork``, ctypes and machine code alike), every new process: ``fork``,
  ``vfork``, ``execve``, ``execveat``, ``clone`` without ``CLONE_THREAD``
  (``clone3`` answers ENOSYS, so the C library falls back to ``clone`` for
  threads); ``ptrace``, ``process_vm_readv/writev``; ``kill`` and ``tgkill``
  aimed at any process but this one (``tkill``, ``pidfd_send_signal``
  refused); and every system call of a foreign ABI (i386, x32).  Threads
  still start.
- **Landlock** (Linux 5.13+): the file system shrinks to this child's own
  folder (read and write), the standard library and the linked packages
  (numpy: read only, site-packages folders inside the standard library
  left out), and ``/dev/null``, ``/dev/zero``, ``/dev/urandom``.  The
  repository, the installed ``lowlat``, the checks and the references
  cannot be opened, whatever path reaches them (``/proc/<pid>/root`` too);
  from ABI 6 signals to processes outside the child are refused as well.

What remains where neither is available (macOS, an old kernel, a container
that forbids them) is said in exercises/README.md.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys
from collections.abc import Sequence

# ---- seccomp -----------------------------------------------------------------------------

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# name -> number, per architecture (asm/unistd.h); None: the call does not exist there.
_NR: dict[str, dict[str, int | None]] = {
    "x86_64": {
        "fork": 57,
        "vfork": 58,
        "execve": 59,
        "execveat": 322,
        "clone": 56,
        "clone3": 435,
        "ptrace": 101,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "kill": 62,
        "tkill": 200,
        "tgkill": 234,
        "pidfd_send_signal": 424,
    },
    "aarch64": {
        "fork": None,
        "vfork": None,
        "execve": 221,
        "execveat": 281,
        "clone": 220,
        "clone3": 435,
        "ptrace": 117,
        "process_vm_readv": 270,
        "process_vm_writev": 271,
        "kill": 129,
        "tkill": 130,
        "tgkill": 131,
        "pidfd_send_signal": 424,
    },
}
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


def _filter(arch: str, pid: int) -> list[tuple[int, int, int, int]]:
    """The BPF program (code, jt, jf, k) for ``arch``; ``pid`` is this process."""
    nr = {k: v for k, v in _NR[arch].items() if v is not None}
    deny = [nr[n] for n in ("fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv") if n in nr]
    deny += [nr["process_vm_writev"], nr["tkill"], nr["pidfd_send_signal"]]
    prog: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, 4)]  # seccomp_data.arch
    # A foreign ABI (i386 via int 0x80) is refused whole: its numbers differ.
    prog.append((_JEQ_K, 1, 0, _AUDIT_ARCH[arch]))
    prog.append((_RET_K, 0, 0, _ERRNO | _EPERM))
    prog.append((_LD_W_ABS, 0, 0, 0))  # seccomp_data.nr
    if arch == "x86_64":  # x32 calls carry bit 30
        prog.append((_JGE_K, 0, 1, 0x40000000))
        prog.append((_RET_K, 0, 0, _ERRNO | _EPERM))
    for n in deny:
        prog.append((_JEQ_K, 0, 1, n))
        prog.append((_RET_K, 0, 0, _ERRNO | _EPERM))
    prog.append((_JEQ_K, 0, 1, nr["clone3"]))
    prog.append((_RET_K, 0, 0, _ERRNO | _ENOSYS))  # glibc then starts threads with clone
    # clone: its flags are argument 0 (the low word, seccomp_data.args[0] at 16).
    prog.append((_JEQ_K, 0, 4, nr["clone"]))
    prog.append((_LD_W_ABS, 0, 0, 16))
    prog.append((_JSET_K, 1, 0, _CLONE_THREAD))
    prog.append((_RET_K, 0, 0, _ERRNO | _EPERM))
    prog.append((_RET_K, 0, 0, _ALLOW))
    # kill(pid, sig) and tgkill(tgid, tid, sig): only at this process.
    for name in ("kill", "tgkill"):
        prog.append((_JEQ_K, 0, 4, nr[name]))
        prog.append((_LD_W_ABS, 0, 0, 16))
        prog.append((_JEQ_K, 1, 0, pid & 0xFFFFFFFF))
        prog.append((_RET_K, 0, 0, _ERRNO | _EPERM))
        prog.append((_RET_K, 0, 0, _ALLOW))
    prog.append((_RET_K, 0, 0, _ALLOW))
    return prog


def seccomp(libc: ctypes.CDLL) -> str | None:
    """Installs the filter; None when it is in force, else why not."""
    arch = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)
    if arch not in _NR or sys.byteorder != "little":
        return f"no seccomp filter for {arch}"
    prog = _filter(arch, os.getpid())
    raw = b"".join(struct.pack("<HBBI", *ins) for ins in prog)
    buf = ctypes.create_string_buffer(raw, len(raw))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(prog), ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return f"seccomp refused the filter: {os.strerror(ctypes.get_errno())}"
    return None


# ---- Landlock ----------------------------------------------------------------------------

_LL_CREATE, _LL_ADD, _LL_RESTRICT = 444, 445, 446  # the same numbers on every architecture
_LL_VERSION = 1
_RULE_PATH_BENEATH = 1
_READ = (1 << 0) | (1 << 2) | (1 << 3)  # EXECUTE, READ_FILE, READ_DIR
_FILE_RW = (1 << 1) | (1 << 2)  # WRITE_FILE, READ_FILE
_DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom")


def _handled(abi: int) -> int:
    fs = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if abi >= 2:
        fs |= 1 << 13  # REFER
    if abi >= 3:
        fs |= 1 << 14  # TRUNCATE
    return fs


def _readable(paths: Sequence[str]) -> list[str]:
    """``paths`` with every folder that holds a site-packages (the standard
    library of a Python installed without a venv) replaced by its other
    entries: the packages installed there stay out of reach."""
    out: list[str] = []
    for p in paths:
        if not os.path.isdir(p):
            if os.path.exists(p):
                out.append(p)
            continue
        names = os.listdir(p)
        if any(n in ("site-packages", "dist-packages") for n in names):
            out += [os.path.join(p, n) for n in names if n not in ("site-packages", "dist-packages")]
        else:
            out.append(p)
    return out


def landlock(libc: ctypes.CDLL, own: str, read_only: Sequence[str]) -> str | None:
    """Restricts the file system to ``own`` (everything) and ``read_only``;
    None when it is in force, else why not."""
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    abi = syscall(_LL_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_LL_VERSION))
    if abi < 1:
        return f"no Landlock here ({os.strerror(ctypes.get_errno())})"
    fs = _handled(abi)
    # struct landlock_ruleset_attr: handled_access_fs, handled_access_net (ABI 4), scoped (ABI 6)
    if abi >= 6:
        attr = struct.pack("<QQQ", fs, 0, 0x2)  # LANDLOCK_SCOPE_SIGNAL
    elif abi >= 4:
        attr = struct.pack("<QQ", fs, 0)
    else:
        attr = struct.pack("<Q", fs)
    abuf = ctypes.create_string_buffer(attr, len(attr))
    rfd = syscall(_LL_CREATE, abuf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if rfd < 0:
        return f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}"
    try:
        rules = [(own, fs)] + [(p, _READ) for p in _readable(read_only)]
        rules += [(d, _FILE_RW) for d in _DEVICES if os.path.exists(d)]
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(path):
                    access &= (1 << 0) | (1 << 1) | (1 << 2) | ((1 << 14) if abi >= 3 else 0)
                rule = struct.pack("<Qi", access & fs, fd)  # struct landlock_path_beneath_attr (packed)
                rbuf = ctypes.create_string_buffer(rule, len(rule))
                if syscall(_LL_ADD, ctypes.c_int(rfd), ctypes.c_int(_RULE_PATH_BENEATH), rbuf, ctypes.c_uint32(0)):
                    return f"landlock_add_rule({path}) failed: {os.strerror(ctypes.get_errno())}"
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
        if syscall(_LL_RESTRICT, ctypes.c_int(rfd), ctypes.c_uint32(0)) != 0:
            return f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(rfd)
    return None


def lock_down(own: str, read_only: Sequence[str]) -> dict[str, str]:
    """Applies both (Landlock first: its rules need ``open``); returns what
    is in force: {"seccomp": "on" or why not, "landlock": ...}."""
    if not sys.platform.startswith("linux"):
        return {"seccomp": f"not on {sys.platform}", "landlock": f"not on {sys.platform}"}
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        return {"seccomp": f"no C library ({exc})", "landlock": f"no C library ({exc})"}
    ll = landlock(libc, own, read_only)
    sc = seccomp(libc)
    return {"seccomp": sc or "on", "landlock": ll or "on"}
