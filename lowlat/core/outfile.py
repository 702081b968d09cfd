"""One way to write a result file: the path checked before the run, the
bytes written atomically after it.

Every command that writes a result (``soak``'s JSON and plot, ``bench
--json``, :class:`lowlat.core.logring.AsyncLog` given a path, the authors'
tools) goes through this module, so the same mistakes are refused the same
way, before any work is done:

- :func:`check` accepts a path that names a regular file, or a new name in
  an existing folder this process can write to (tried: an empty temporary
  file is created there and removed at once).  It refuses, with one line
  naming the option: an empty name, ``-`` (standard output is not a file
  here), a name with a NUL or ending in a separator, a folder, a device, a
  FIFO, a socket, a read-only file, a name longer than the file system
  allows (``os.pathconf(folder, "PC_NAME_MAX")``), a missing or read-only
  folder, and a path that is the same file as another output of the same
  run (``distinct_from``).
- **Symbolic links are written through**: a link whose final target is an
  existing regular file is accepted, and the bytes go to that file (the
  link itself stays as it was); a link that dangles, loops or leads to
  anything but a regular file is refused.
- :func:`write_bytes` / :func:`write_text` write atomically: a temporary
  file in the target's own folder (a short hidden name, ``.lowlat-*.tmp``),
  then ``os.replace`` onto the target, so a reader sees the old file or the
  new one, never a part.  The path is checked again just before the
  replace, so nothing but a regular file (or a new name) is ever replaced;
  the temporary file is removed on any failure, Ctrl-C included.  A file
  that existed keeps its permission bits; a new one gets ``0o666 & ~umask``.
- :func:`open_stream` opens a checked path for a writer that streams (a log):
  truncated in place, never replaced, opened with ``O_NOFOLLOW`` (on the
  resolved target) and ``O_NONBLOCK`` and checked with ``fstat`` before
  anything is written, so a FIFO swapped in after the check is refused
  instead of blocking.  The caller owns the returned descriptor.

Nothing here ever opens the path without ``os.lstat``/``os.stat`` first, so
a FIFO never blocks a check.  Errors are :class:`OutputPathError` (a
``ValueError``) or ``TypeError`` for a value that is not a path.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

_TMP_PREFIX, _TMP_SUFFIX = ".lowlat-", ".tmp"


class OutputPathError(ValueError):
    """A result path that cannot be written as asked (one line, naming the option)."""


@dataclass(frozen=True)
class OutPath:
    """A checked output: ``named`` as the user gave it, ``target`` the file
    the bytes go to (``named`` itself, or the regular file a link leads to),
    ``name`` the option or parameter it came from (for messages)."""

    named: Path
    target: Path
    name: str

    def __str__(self) -> str:
        return str(self.named)

    def __fspath__(self) -> str:
        return str(self.named)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a regular file"
    return "not a regular file"


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return 255


def _too_long(name: str, text: str, p: Path) -> str:
    """The message for a name (or a component of it) longer than its file system allows."""
    for part in (p, *p.parents):
        limit = _name_max(part.parent)
        if len(os.fsencode(part.name)) > limit:
            return (
                f"{name} {text}: the name {part.name[:20]}... is {len(os.fsencode(part.name))} bytes, longer than "
                f"the {limit} this file system allows"
            )
    return f"{name} {text}: the path is longer than this file system allows"


def _as_path(path: Any, name: str) -> tuple[str, Path]:
    if isinstance(path, OutPath):
        path = path.named
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(path).__name__} {path!r}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str path, got {type(text).__name__}")
    if not text.strip():
        raise OutputPathError(f"{name} needs a file name, got an empty one")
    if text == "-":
        raise OutputPathError(
            f"{name} '-' is not supported (results are not written to standard output): give a file name"
        )
    if "\0" in text:
        raise OutputPathError(f"{name} {text!r} holds a NUL character")
    if text.endswith(os.sep) or (os.altsep and text.endswith(os.altsep)):
        raise OutputPathError(f"{name} {text} names a folder; give a file name")
    return text, Path(text)


def check(path: Any, name: str = "path", *, distinct_from: Iterable[OutPath] = ()) -> OutPath:
    """``path`` checked as a result file (see the module's docstring);
    raises :class:`OutputPathError` naming ``name`` otherwise.  Opens and
    changes nothing the user named (only a probe file, removed at once).  ``distinct_from``: the other outputs of the
    same run, which this one must not be."""
    text, p = _as_path(path, name)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise OutputPathError(_too_long(name, text, p)) from None
        raise OutputPathError(f"{name} {text}: {exc.strerror or exc}") from None
    target = p
    if st is not None and stat.S_ISLNK(st.st_mode):
        try:
            target = Path(os.path.realpath(p, strict=True))
            st = os.stat(target)
        except OSError:
            raise OutputPathError(f"{name} {text} is a symbolic link that leads nowhere (dangling or a loop)") from None
        if not stat.S_ISREG(st.st_mode):
            raise OutputPathError(f"{name} {text} is a symbolic link to {_kind(st.st_mode)}")
    elif st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputPathError(f"{name} {text} is a folder; give a file name in it, e.g. {p / 'result.json'}")
    elif st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputPathError(f"{name} {text} is {_kind(st.st_mode)}")
    folder = target.parent
    try:
        fst = os.stat(folder)
    except FileNotFoundError:
        raise OutputPathError(f"{name} {text}: the folder {folder} does not exist (create it first)") from None
    except OSError as exc:
        raise OutputPathError(f"{name} {text}: the folder {folder}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(fst.st_mode):
        raise OutputPathError(f"{name} {text}: {folder} is not a folder")
    if len(os.fsencode(target.name)) > _name_max(folder):
        raise OutputPathError(_too_long(name, text, target))
    if st is not None and not os.access(target, os.W_OK):
        raise OutputPathError(f"{name} {text}: cannot write there (the file is read-only)")
    _probe(folder, name, text)
    out = OutPath(p, target, name)
    for other in distinct_from:
        if same_file(out, other):
            raise OutputPathError(f"{name} {text} is the same file as {other.name} {other.named}: give different names")
    return out


def _probe(folder: Path, name: str, text: str) -> None:
    """Creates and removes an empty temporary file in ``folder``: the
    atomic write needs exactly that (permissions alone do not tell: root,
    read-only mounts, /proc and /sys)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=_TMP_SUFFIX, dir=folder)
    except OSError as exc:
        raise OutputPathError(f"{name} {text}: cannot write there ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(tmp)


def same_file(a: OutPath, b: OutPath) -> bool:
    """True when ``a`` and ``b`` would write the same file."""
    if os.path.realpath(a.target) == os.path.realpath(b.target):
        return True
    try:
        return os.path.samefile(a.target, b.target)
    except OSError:
        return False


def _mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextmanager
def atomic(path: Any, name: str = "path") -> Iterator[IO[bytes]]:
    """A binary file object to write the whole result into; on leaving the block
    without an exception the result replaces ``path`` (checked again first);
    on an exception (Ctrl-C included) the temporary file is removed and
    ``path`` is left as it was."""
    out = check(path, name)
    fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=_TMP_SUFFIX, dir=out.target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fchmod(f.fileno(), _mode_for(out.target))
        again = check(out.named, name)  # nothing but a regular file (or a new name) is replaced
        os.replace(tmp, again.target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_bytes(path: Any, data: bytes, name: str = "path") -> OutPath:
    """Writes ``data`` to ``path`` atomically (see :func:`atomic`); returns the checked path."""
    with atomic(path, name) as f:
        f.write(data)
    return check(path, name)


def write_text(path: Any, text: str, name: str = "path") -> OutPath:
    """Writes ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic`)."""
    return write_bytes(path, text.encode("utf-8"), name)


def open_stream(path: Any, name: str = "path") -> int:
    """A descriptor open for writing on ``path`` (checked), the file
    truncated in place (created if new); for a writer that streams.  Opened
    with ``O_NONBLOCK`` and ``O_NOFOLLOW`` on the resolved target, refused
    unless ``fstat`` says it is a regular file, then set blocking.  The
    caller owns (and closes) the descriptor."""
    out = check(path, name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(out.target, flags, _mode_for(out.target))
    except OSError as exc:
        why = "it became a symbolic link" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise OutputPathError(f"{name} {out.named}: cannot open it for writing ({why})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OutputPathError(f"{name} {out.named} is {_kind(mode)}")
        os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


__all__ = ["OutPath", "OutputPathError", "atomic", "check", "open_stream", "same_file", "write_bytes", "write_text"]
