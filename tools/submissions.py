"""Reading a student's submission without trusting it (for ``grade-class``).

A submitted file is taken only when it is a regular file reached from the
student's folder through real folders: a symbolic link anywhere on the way
(the file, ``exercises/``, the exercise's folder), a folder, a FIFO or a
device named like the file is refused, and so is a file over
:data:`MAX_BYTES`, one that is not UTF-8 text or that holds a NUL byte.  The
file is read through descriptors opened with ``O_NOFOLLOW`` (a link swapped
in between the look and the read is refused too) and its bytes are written
into the grading tree: nothing is ever linked.

A C file is also refused before it is compiled when it could make the
compiler read or name a file outside the exercise (:func:`include_problem`):
an ``#include`` of anything but a header of the exercise or the core (quoted)
or a system header (angle brackets, no absolute path, no ``..``), a computed
``#include``, ``#include_next``/``#import``/``#embed``, ``#line`` and line
markers (the compiler would quote the file they name), ``#pragma GCC
dependency``.  And what the compiler says is cut to its lines about the
student's own file (:func:`own_compiler_lines`)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

MAX_BYTES = 1 << 20  # 1 MiB: an exercise file is a few KiB


class Refused(ValueError):
    """Why one student's file is not graded (one line, shown in their report)."""


def shown(name: str) -> str:
    """``name`` with every unprintable character (newline, control, an
    undecodable byte) written as an escape, for a table or a log line."""
    out = []
    for c in name:
        if c.isprintable() and c != "\\":
            out.append(c)
        elif c == "\\":
            out.append("\\\\")
        elif 0xDC80 <= ord(c) <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
        else:
            out.append(c.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a student (a row and a report file), or None."""
    if not name or name.strip() != name:
        return "the folder's name is empty or starts or ends with a space"
    if shown(name) != name or "\\" in name:
        return "the folder's name holds a control character, a backslash or bytes that are not UTF-8"
    return None


_KIND = {
    stat.S_IFDIR: "a folder",
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _lstat(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _read_at(student_fd: int, parts: tuple[str, ...], shown_path: str) -> bytes | None:
    """The bytes of ``parts`` below the folder ``student_fd``; None if absent."""
    fds: list[int] = []
    fd = student_fd
    try:
        for part in parts[:-1]:
            st = _lstat(part, fd)
            if st is None or (not stat.S_ISDIR(st.st_mode) and not stat.S_ISLNK(st.st_mode)):
                return None  # no such folder here: look in the next place
            if stat.S_ISLNK(st.st_mode):
                raise Refused(f"{shown_path}: {part}/ is a symbolic link; hand in real folders and files")
            fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            fds.append(fd)
        st = _lstat(parts[-1], fd)
        if st is None:
            return None
        if not stat.S_ISREG(st.st_mode):
            kind = _KIND.get(stat.S_IFMT(st.st_mode), "not a regular file")
            raise Refused(f"{shown_path} is {kind}, not a regular file; hand in the file itself")
        if st.st_size > MAX_BYTES:
            raise Refused(f"{shown_path} is {st.st_size:,} bytes, over the {MAX_BYTES:,} an exercise file may have")
        f = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        try:
            if not stat.S_ISREG(os.fstat(f).st_mode):
                raise Refused(f"{shown_path} changed while it was read; hand in a regular file")
            data = b""
            while len(data) <= MAX_BYTES:
                chunk = os.read(f, MAX_BYTES + 1 - len(data))
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(f)
        if len(data) > MAX_BYTES:
            raise Refused(f"{shown_path} is over the {MAX_BYTES:,} bytes an exercise file may have")
        return data
    except OSError as exc:
        raise Refused(f"{shown_path}: cannot read it ({exc.strerror or exc})") from None
    finally:
        for d in fds:
            os.close(d)


def read_submission(student: Path, rel: Path, filename: str) -> tuple[str, bytes] | None:
    """(where it was found, its bytes) for the student's file of the exercise
    at ``exercises/<rel>/``, looked for as ``exercises/<rel>/<file>`` (a copy
    of the release), ``<rel>/<file>``, then ``<file>`` at the top of the
    student's folder; None when absent from all three.  Raises
    :class:`Refused` for a link, a non-regular file, a file too large or
    unreadable, or a folder that is a link (the student's own included)."""
    try:
        top = os.open(student, _DIR_FLAGS)
    except OSError as exc:
        why = "is a symbolic link" if student.is_symlink() else f"cannot be read ({exc.strerror or exc})"
        raise Refused(f"the student's folder {why}; hand in a real folder") from None
    try:
        for parts in (("exercises", *rel.parts, filename), (*rel.parts, filename), (filename,)):
            data = _read_at(top, parts, "/".join(parts))
            if data is not None:
                return "/".join(parts), data
        return None
    finally:
        os.close(top)


def decode_source(where: str, data: bytes) -> str:
    """The file's text; :class:`Refused` if it is not UTF-8 or holds a NUL."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(
            f"{where} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
        ) from None
    if "\0" in text:
        raise Refused(f"{where} holds a NUL byte (offset {text.index(chr(0))}); it is not a source file")
    return text


# ---- C: what the preprocessor may read --------------------------------------------------------

_TRIGRAPHS = {"??=": "#", "??/": "\\", "??'": "^", "??(": "[", "??)": "]", "??!": "|", "??<": "{", "??>": "}"}
_SYSTEM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./+-]*")
_LINKER = re.compile(r"\S*\bld(?:\.\w+)?: ")
_DIRECTIVE = re.compile(r"\s*#\s*([A-Za-z_]\w*|\d+)?(.*)")


def _code_lines(text: str) -> list[str]:
    """The logical lines the preprocessor sees: trigraphs replaced, lines
    spliced, comments replaced by a space, digraph ``%:`` read as ``#``."""
    for tri, ch in _TRIGRAPHS.items():
        text = text.replace(tri, ch)
    text = re.sub(r"\\[ \t\f\v]*\r?\n", "", text)
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":  # a literal: copied to its closing quote (or the line's end)
            j = i + 1
            while j < n and text[j] not in (c, "\n"):
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            out.append(" ")
            i = n if end < 0 else end + 2
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        else:
            out.append(c)
            i += 1
    return "".join(out).replace("%:", "#").splitlines()


def _include_name_problem(arg: str, headers: set[str]) -> str | None:
    arg = arg.strip()
    m = re.fullmatch(r'"([^"]*)"|<([^>]*)>', arg)
    if m is None:
        return 'a computed #include (only #include "name.h" or #include <name.h> is graded)'
    quoted, system = m.group(1), m.group(2)
    name = quoted if quoted is not None else system
    if name.startswith("/") or ".." in name.split("/") or "\\" in name:
        return f"#include of {shown(name)!r}: an absolute path or '..' reaches outside the exercise"
    if quoted is not None and name not in headers:
        return f'#include "{shown(name)}": the exercise\'s own headers are {", ".join(sorted(headers)) or "none"}'
    if system is not None and not _SYSTEM_NAME.fullmatch(name):
        return f"#include <{shown(name)}>: not a system header's name"
    return None


def include_problem(text: str, headers: Iterable[str]) -> str | None:
    """Why a C file must not be compiled (one line naming its line), or None.
    ``headers``: the names a quoted ``#include`` may name (the exercise's
    headers and the core's)."""
    allowed = set(headers)
    for n, line in enumerate(_code_lines(text), 1):
        if "__has_include" in line:
            for arg in re.findall(r"__has_include(?:_next)?\s*\(([^)]*)\)", line) or ["?"]:
                why = _include_name_problem(arg, allowed)
                if why:
                    return f"logical line {n}: __has_include: {why}"
        if "_Pragma" in line and "dependency" in line:
            return f'logical line {n}: _Pragma("GCC dependency ...") reads a file outside the exercise'
        m = _DIRECTIVE.match(line)
        if m is None:
            continue
        word, rest = m.group(1) or "", m.group(2)
        if word == "include":
            why = _include_name_problem(rest, allowed)
            if why:
                return f"logical line {n}: {why}"
        elif word in ("include_next", "import", "embed"):
            return f"logical line {n}: #{word} is not allowed in an exercise file"
        elif word == "line" or word.isdigit():
            return f"logical line {n}: #line and line markers are not allowed (they rename the file in messages)"
        elif word == "pragma" and "dependency" in rest:
            return f"logical line {n}: #pragma GCC dependency reads a file outside the exercise"
    return None


def own_compiler_lines(text: str, filename: str) -> str:
    """The compiler's messages cut to those about ``filename`` (each with its
    quoted source lines and carets); messages about any other file, and the
    lines they quote, are left out and the omission said."""
    out: list[str] = []
    keep, dropped = False, False
    for ln in text.splitlines():
        if ln[:1] in (" ", "\t", "|") or not ln.strip():
            if keep:
                out.append(ln)
            elif ln.strip():
                dropped = True
            continue
        keep = ln.startswith(f"{filename}:") or ln.startswith(("compilation terminated", "cc1: ", "collect2: "))
        keep = keep or bool(_LINKER.match(ln))  # "undefined reference to ..." quotes no file
        if keep:
            out.append(ln)
        elif not ln.startswith("In file included from"):
            dropped = True
    if dropped:
        out.append(f"(messages about files other than {filename} are not shown)")
    return "\n".join(out)
