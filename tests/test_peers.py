"""``python -m lowlat bench --peers DIR``: finding the learner's copy of
rigtorp's SPSCQueue, building the loops around it, comparing, and every
way it can be refused (one line, exit 2).  The runs use the stand-in header
in tests/peers (rigtorp's interface, not its queue): they check the
plumbing and that every key is a positive number, never a speed."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lowlat.bench import peers
from lowlat.bench.peers import PEER_KEYS, PeerError

STAND_IN = Path(__file__).resolve().parent / "peers"
HAS_CXX = any(shutil.which(c) for c in ("c++", "g++", "clang++"))
needs_cxx = pytest.mark.skipif(not HAS_CXX, reason="no C++ compiler on this machine")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lowlat", "bench", *args], capture_output=True, text=True, timeout=300)


def test_the_header_is_found_in_a_clone_at_its_top_or_by_name(tmp_path: Path) -> None:
    inside = STAND_IN / "include/rigtorp/SPSCQueue.h"
    assert peers.find_header(STAND_IN) == inside
    assert peers.find_header(inside) == inside
    (tmp_path / "SPSCQueue.h").write_text(inside.read_text())
    assert peers.find_header(tmp_path) == (tmp_path / "SPSCQueue.h").resolve()


def test_a_folder_without_the_header_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(PeerError, match="include/rigtorp/SPSCQueue.h or SPSCQueue.h under .*git clone"):
        peers.find_header(tmp_path)
    with pytest.raises(PeerError, match="no such folder or file"):
        peers.find_header(tmp_path / "nowhere")
    with pytest.raises(PeerError, match="needs a folder"):
        peers.find_header(" ")


def test_no_compiler_is_one_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(peers.shutil, "which", lambda _name: None)
    with pytest.raises(PeerError, match=r"needs a C\+\+17 compiler"):
        peers.compiler()
    monkeypatch.setenv("CXX", "ccache my-c++")
    assert peers.compiler() == ["ccache", "my-c++"]


@pytest.mark.parametrize("case", ["missing", "not a queue", "no compiler"])
def test_the_command_line_refuses_in_one_line(case: str, tmp_path: Path) -> None:
    import os

    env = dict(os.environ)
    where = str(tmp_path / "nowhere")
    if case == "not a queue":
        (tmp_path / "SPSCQueue.h").write_text("namespace rigtorp {}\n")
        where = str(tmp_path)
    elif case == "no compiler":
        env["CXX"] = str(tmp_path / "no-such-compiler")
        where = str(STAND_IN)
    res = subprocess.run(
        [sys.executable, "-m", "lowlat", "bench", "--peers", where],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "--peers" in lines[0] and "Traceback" not in res.stderr, res.stderr
    if case == "not a queue":
        assert "did not compile" in lines[0]


@needs_cxx
def test_a_header_path_with_quotes_and_backslashes_builds(tmp_path: Path) -> None:
    odd = tmp_path / 'a "b" c\\d'
    odd.mkdir()
    (odd / "SPSCQueue.h").write_text((STAND_IN / "include/rigtorp/SPSCQueue.h").read_text())
    peer = peers.build(peers.find_header(odd), tmp_path)
    assert hasattr(peer.lib, "ll_peer_spsc_throughput")


@needs_cxx
def test_one_cpu_is_refused_before_any_measurement(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    peer = peers.build(peers.find_header(STAND_IN), tmp_path)
    monkeypatch.setattr(peers, "usable_cpus", lambda: [0])
    with pytest.raises(PeerError, match="two CPUs"):
        peers.compare(peer, quick=True)


@needs_cxx
@pytest.mark.skipif(len(peers.usable_cpus()) < 2, reason="the comparison needs two usable CPUs")
def test_the_comparison_runs_and_writes_every_key(tmp_path: Path) -> None:
    out = tmp_path / "peers.json"
    res = cli("--peers", str(STAND_IN), "--quick", "--json", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    import json

    data = json.loads(out.read_text())
    assert set(data) == set(PEER_KEYS)
    assert all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in data.values()), data
    for key in PEER_KEYS:
        assert key in res.stdout
    assert "90% band" in res.stdout


@pytest.mark.parametrize("cxx", ["g++", "clang++"])
def test_the_loops_compile_without_a_warning(cxx: str, tmp_path: Path) -> None:
    if not shutil.which(cxx):
        pytest.skip(f"no {cxx} here")
    header = str(STAND_IN / "include/rigtorp/SPSCQueue.h")
    cmd = [cxx, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-include", header]
    res = subprocess.run([*cmd, str(peers.SHIM)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
