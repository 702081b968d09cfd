"""Where learner code runs: a child process with limits, a fresh working
directory and a small environment.

Every process that runs learner code (a C exercise's checks binary, the
Python host that imports a learner's module) is started through
:func:`spawn`, which sets in the child, before it runs anything:

- ``RLIMIT_CPU``: CPU seconds (SIGXCPU, then SIGKILL a second later);
- ``RLIMIT_FSIZE``: the largest file it may write (C: SIGXFSZ; Python: an
  ``OSError`` "File too large");
- ``RLIMIT_CORE`` = 0: no core files;
- ``RLIMIT_NPROC``: the tasks (processes and threads) the user may have, set
  to the user's current count (read from /proc; not set where there is none)
  plus a margin.  The kernel does not apply it to root (or to a process with
  CAP_SYS_ADMIN or CAP_SYS_RESOURCE): there it limits nothing;
- ``RLIMIT_AS`` (address space) for plain runs only: AddressSanitizer and
  ThreadSanitizer reserve terabytes of shadow memory, so sanitized runs get
  no memory cap;
- a working directory of its own (a fresh temporary directory, removed
  afterwards), standard input from /dev/null, a new session (the whole group
  is killed on a timeout), and an environment of PATH, the locale, HOME and
  TMPDIR pointing at that directory, and one-thread BLAS settings.

The caller enforces the wall-clock limit (it kills the group).  This is not a
container: the child runs as the same user and can read what that user can
read; see exercises/README.md, "What the grader isolates".
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MB = 1 << 20
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT")


@dataclass(frozen=True)
class Limits:
    """What a child running learner code may use.  ``cpu_s=None`` derives
    the CPU limit from the check's timeout (every usable CPU busy for the
    whole timeout, plus a margin); ``memory_bytes`` caps the address space of
    plain runs (None: no cap)."""

    cpu_s: float | None = None
    memory_bytes: int | None = 2048 * MB
    file_bytes: int = 64 * MB
    extra_tasks: int = 256  # RLIMIT_NPROC: the user's tasks now + this many

    def cpu_limit(self, timeout_s: float) -> int:
        if self.cpu_s is not None:
            return max(1, round(self.cpu_s))
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return int(timeout_s * max(1, cpus)) + 5

    def describe(self, timeout_s: float, sanitizer: str | None) -> str:
        mem = (
            "no memory cap (a sanitizer's shadow memory needs the address space)"
            if sanitizer
            else (f"{self.memory_bytes // MB} MB of address space" if self.memory_bytes else "no memory cap")
        )
        return (
            f"{timeout_s:g} s wall, {self.cpu_limit(timeout_s)} s CPU, files up to {self.file_bytes // MB} MB, "
            f"{mem}, no core files"
        )


DEFAULT_LIMITS = Limits()

_tasks_cache: tuple[float, int] | None = None


def user_tasks() -> int:
    """How many tasks (threads of every process) the current user has now
    (Linux; 0 where /proc does not tell).  Cached for a minute."""
    global _tasks_cache
    now = time.monotonic()
    if _tasks_cache is not None and now - _tasks_cache[0] < 60:
        return _tasks_cache[1]
    uid, total = os.getuid(), 0
    proc = Path("/proc")
    if proc.is_dir():
        for d in proc.iterdir():
            if not d.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                fields = dict(line.split(":", 1) for line in (d / "status").read_text().splitlines() if ":" in line)
                if int(fields["Uid"].split()[0]) == uid:
                    total += int(fields.get("Threads", "1"))
    _tasks_cache = (now, total)
    return total


def _preexec(limits: Limits, timeout_s: float, sanitizer: str | None) -> Callable[[], None]:
    cpu = limits.cpu_limit(timeout_s)
    tasks = user_tasks()
    nproc = tasks + limits.extra_tasks if tasks else None  # unknown (no /proc): not set
    memory = None if sanitizer else limits.memory_bytes

    def setup() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        if nproc is not None and hasattr(resource, "RLIMIT_NPROC"):
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if memory is not None and hasattr(resource, "RLIMIT_AS"):
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return setup


def child_env(workdir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a child running learner code: PATH and the locale
    from ours, HOME and TMPDIR in its working directory, BLAS on one thread;
    nothing else of ours (no tokens, no LD_PRELOAD) unless ``extra`` says."""
    env = {k: os.environ[k] for k in _ENV_KEEP if k in os.environ}
    env.update(
        HOME=str(workdir),
        TMPDIR=str(workdir),
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(extra or {})
    return env


@contextlib.contextmanager
def workdir(prefix: str = "lowlat-run-") -> Iterator[Path]:
    """A fresh, empty working directory, removed afterwards with whatever
    the child left in it."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def spawn(
    cmd: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    limits: Limits,
    timeout_s: float,
    sanitizer: str | None = None,
    pass_fds: Sequence[int] = (),
    stdout: int | object = subprocess.DEVNULL,
    stderr: int | object = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """Starts ``cmd`` under ``limits`` in its own session (kill it with
    :func:`kill_group`)."""
    return subprocess.Popen(
        list(cmd),
        stdin=subprocess.DEVNULL,
        stdout=stdout,  # type: ignore[arg-type]
        stderr=stderr,  # type: ignore[arg-type]
        cwd=cwd,
        env=env,
        pass_fds=tuple(pass_fds),
        start_new_session=True,
        preexec_fn=_preexec(limits, timeout_s, sanitizer),
        close_fds=True,
    )


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kills the child and everything in its session, then reaps it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def limit_death(rc: int, limits: Limits, timeout_s: float) -> str | None:
    """What a death by signal ``-rc`` says about the limits, or None when
    it is not a limit's signal."""
    if rc >= 0:
        return None
    sig = -rc
    if sig == getattr(signal, "SIGXCPU", -1):
        return f"stopped by the CPU-time limit ({limits.cpu_limit(timeout_s)} s of CPU): an endless loop?"
    if sig == getattr(signal, "SIGXFSZ", -1):
        return f"stopped by the file-size limit ({limits.file_bytes // MB} MB): it wrote a file that large"
    return None


def read_capped(path: Path, cap: int = 4 * MB) -> str:
    """The first ``cap`` bytes of a child's output file, as text."""
    try:
        with open(path, "rb") as f:
            return f.read(cap).decode("utf-8", "replace")
    except OSError:
        return ""
