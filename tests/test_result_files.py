"""Result files (lowlat.core.outfile): a path is checked before the run (a
regular file or a new name in a writable folder; links written through;
never a folder, device, FIFO, ``-``, a name too long, nor another output of
the same run), written atomically, and nothing but a regular file the user
named is ever replaced.  Used by soak, ``bench --json`` and AsyncLog."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lowlat.__main__ import main
from lowlat.bench import write_json
from lowlat.core import outfile
from lowlat.core.logring import AsyncLog
from lowlat.core.outfile import OutputPathError


def _tmps(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_new_name_and_a_regular_file_are_written_atomically(tmp_path: Path) -> None:
    new = tmp_path / "new.json"
    outfile.write_text(new, "one\n", "--json")
    assert new.read_text() == "one\n"
    new.chmod(0o640)
    outfile.write_text(new, "two\n", "--json")  # replaced, keeping its permission bits
    assert new.read_text() == "two\n" and (new.stat().st_mode & 0o777) == 0o640
    assert _tmps(tmp_path) == []


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: os.mkfifo(p), "is a FIFO \\(named pipe\\), not a regular file"),
        (lambda p: p.mkdir(), "is a folder; give a file name in it"),
        (lambda p: p.symlink_to(p.parent / "nowhere"), "symbolic link that leads nowhere"),
        (lambda p: p.symlink_to(p.parent), "symbolic link to a folder"),
    ],
)
def test_what_is_not_a_regular_file_is_refused_before_anything(tmp_path: Path, make: object, message: str) -> None:
    p = tmp_path / "out.json"
    make(p)  # type: ignore[operator]
    with pytest.raises(OutputPathError, match=f"--json {p} .*{message}"):
        outfile.check(p, "--json")
    with pytest.raises(OutputPathError, match=message):
        outfile.write_text(p, "x", "--json")
    assert _tmps(tmp_path) == []


@pytest.mark.parametrize(
    "path, exc, message",
    [
        ("-", OutputPathError, "'-' is not supported"),
        ("", OutputPathError, "needs a file name"),
        ("   ", OutputPathError, "needs a file name"),
        ("a\0b", OutputPathError, "NUL"),
        (5, TypeError, "must be a path \\(str or os.PathLike\\), got int 5"),
        (b"x.json", TypeError, "got bytes"),
        ("/dev/null", OutputPathError, "is a device, not a regular file"),
        ("/no/such/folder/x.json", OutputPathError, "the folder /no/such/folder does not exist"),
        ("somewhere/", OutputPathError, "names a folder"),
    ],
)
def test_bad_paths_are_one_line_errors_naming_the_option(path: object, exc: type, message: str) -> None:
    with pytest.raises(exc, match=message) as info:
        outfile.check(path, "--json")
    assert "\n" not in str(info.value)


def test_a_name_too_long_for_the_file_system_is_refused(tmp_path: Path) -> None:
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    outfile.check(tmp_path / ("x" * limit), "--json")  # exactly the limit: fine
    with pytest.raises(OutputPathError, match=f"longer than the {limit} this file system allows"):
        outfile.check(tmp_path / ("x" * (limit + 1)), "--json")


def test_a_link_is_written_through_to_its_regular_file(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    checked = outfile.write_text(link, "new", "--json")
    assert link.is_symlink() and real.read_text() == "new" and checked.target == real.resolve()


def test_two_outputs_that_are_the_same_file_are_refused(tmp_path: Path) -> None:
    a = outfile.check(tmp_path / "r.json", "--json")
    (tmp_path / "real").write_text("")
    (tmp_path / "l1").symlink_to(tmp_path / "real")
    (tmp_path / "l2").symlink_to(tmp_path / "real")
    with pytest.raises(OutputPathError, match="is the same file as --json"):
        outfile.check(tmp_path / "r.json", "the plot", distinct_from=(a,))
    with pytest.raises(OutputPathError, match="is the same file as"):
        outfile.check(tmp_path / "l2", "the plot", distinct_from=(outfile.check(tmp_path / "l1", "--json"),))


def test_a_failed_write_leaves_the_file_and_no_temporary(tmp_path: Path) -> None:
    p = tmp_path / "keep.json"
    p.write_text("kept")
    with pytest.raises(RuntimeError), outfile.atomic(p, "--json") as f:
        f.write(b"half")
        raise RuntimeError("the writer failed")
    assert p.read_text() == "kept" and _tmps(tmp_path) == []


def test_a_path_swapped_for_a_fifo_during_the_run_is_not_replaced(tmp_path: Path) -> None:
    p = tmp_path / "out.json"
    with pytest.raises(OutputPathError, match="FIFO"), outfile.atomic(p, "--json") as f:
        f.write(b"x")
        os.mkfifo(p)  # appears between the check and the replace
    assert p.is_fifo() and _tmps(tmp_path) == []


def test_read_only_file_and_folder_are_refused(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write anywhere")
    ro = tmp_path / "ro.json"
    ro.write_text("x")
    ro.chmod(0o444)
    with pytest.raises(OutputPathError, match="cannot write there \\(the file is read-only\\)"):
        outfile.check(ro, "--json")


@pytest.mark.parametrize("path", ["/proc/version", "/sys/lowlat-result.json", "/proc/lowlat-new.json"])
def test_a_place_that_refuses_writes_is_found_by_trying(path: str) -> None:
    """Permission bits do not tell for root or pseudo file systems: the check tries."""
    with pytest.raises(OutputPathError, match=f"--json {path}: cannot write there"):
        outfile.check(path, "--json")


# ---- the users: bench --json, AsyncLog, soak ------------------------------------------------------------------


def test_bench_write_json_is_atomic_and_refuses_a_fifo(tmp_path: Path) -> None:
    p = tmp_path / "b.json"
    write_json({"a": 1.0, "b": float("nan"), "c": float("inf")}, p)
    assert json.loads(p.read_text()) == {"a": 1.0, "b": None, "c": None}
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError, match="FIFO"):
        write_json({"a": 1.0}, fifo)


@pytest.mark.parametrize("kind", ["fifo", "dir", "dash", "device"])
def test_bench_json_bad_targets_exit_2_before_running(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = {"fifo": tmp_path / "f", "dir": tmp_path, "dash": Path("-"), "device": Path("/dev/null")}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    assert main(["bench", "--quick", "--json", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "--json" in captured.err


def test_asynclog_refuses_a_fifo_and_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "log"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError, match="target .* is a FIFO"):
        AsyncLog(fifo)
    with pytest.raises(OutputPathError, match="is a folder; give a file name"):
        AsyncLog(tmp_path)
    with pytest.raises(ValueError, match="target must be <= 2147483647"):
        AsyncLog(10**30)


def test_asynclog_writes_through_a_link_and_truncates_in_place(tmp_path: Path) -> None:
    real = tmp_path / "real.log"
    real.write_text("old text that must go\n" * 10)
    link = tmp_path / "link.log"
    link.symlink_to(real)
    with AsyncLog(link, idle_ns=50_000) as log:
        log.log(1, 2, "hello")
    assert link.is_symlink() and real.read_text().split()[-1] == "hello" and "old" not in real.read_text()


def test_outfile_is_usable_with_str_paths(tmp_path: Path) -> None:
    """The authors' tools pass plain strings."""
    p = str(tmp_path / "README.md")
    outfile.write_text(p, "table\n", "--readme")
    assert Path(p).read_text() == "table\n"
