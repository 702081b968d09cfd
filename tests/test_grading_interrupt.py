"""Ctrl-C while the grader waits for a learner's program: the program runs in
a session of its own (so the terminal's SIGINT never reaches it), and the
grader must kill it on the way out instead of leaving it to spin until its
CPU limit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = r"""
import sys
from lowlat.grading import engine as core
pidfile = sys.argv[1]
# The "learner's program": records its pid, then spins like a livelocked queue.
prog = f"import os; open({pidfile!r}, 'w').write(str(os.getpid())); exec('while True: pass')"
core.run_child([sys.executable, "-c", prog], timeout_s=60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes (its parent, the grader, is gone too).
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_sigint_during_a_check_kills_the_learners_program(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    grader = subprocess.Popen([sys.executable, "-c", SCRIPT, str(pidfile)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pidfile.exists(), "the learner's program never started"
    child = int(pidfile.read_text())
    assert _alive(child)
    grader.send_signal(signal.SIGINT)
    _, err = grader.communicate(timeout=30)
    assert b"KeyboardInterrupt" in err
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the learner's program outlived the grader"
