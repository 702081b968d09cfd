"""The machine model's readers, on fake /sys and /proc trees: SMT siblings,
NUMA nodes, CPU quotas (cgroup v1 and v2), and the CPU pair the two-thread
experiments pin to."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from lowlat.machine import topology


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _sysfs(root: Path, siblings: dict[int, str], nodes: dict[int, str] | None = None) -> None:
    """CPUs numbered as ``siblings`` says (cpu -> its thread_siblings_list)."""
    n = max(siblings) + 1
    _write(root, "sys/devices/system/cpu/online", f"0-{n - 1}\n")
    cores: dict[str, int] = {}
    for cpu, sib in siblings.items():
        core = cores.setdefault(sib, len(cores))
        _write(root, f"sys/devices/system/cpu/cpu{cpu}/topology/core_id", f"{core}\n")
        _write(root, f"sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id", "0\n")
        _write(root, f"sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list", sib + "\n")
    for node, cpulist in (nodes or {}).items():
        _write(root, f"sys/devices/system/node/node{node}/cpulist", cpulist + "\n")


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("0", [0]), ("0-3", [0, 1, 2, 3]), ("0-1,4,6-7\n", [0, 1, 4, 6, 7]), ("", [])],
)
def test_cpu_lists_parse(text: str, cpus: list[int]) -> None:
    assert topology.parse_cpu_list(text) == cpus


def test_a_bad_cpu_list_is_refused() -> None:
    with pytest.raises(ValueError, match="not a CPU list"):
        topology.parse_cpu_list("0-x")


def test_siblings_numbered_next_to_each_other_are_never_paired(tmp_path: Path) -> None:
    # A laptop numbering: CPUs 0,1 share core 0; 2,3 share core 1.
    _sysfs(tmp_path, {0: "0-1", 1: "0-1", 2: "2-3", 3: "2-3"})
    cpus = topology.cpus(tmp_path)
    assert topology.physical_cores(cpus) == 2
    assert topology.pick_pair([0, 1, 2, 3], cpus) == (0, 2)
    assert topology.pick_pair([1, 2, 3], cpus) == (1, 2)


def test_siblings_numbered_by_half_are_never_paired(tmp_path: Path) -> None:
    # A server numbering: CPU n and n+4 share a core.
    _sysfs(tmp_path, {i: f"{i % 4},{i % 4 + 4}" for i in range(8)})
    cpus = topology.cpus(tmp_path)
    pair = topology.pick_pair(list(range(8)), cpus)
    assert pair == (0, 1)
    assert topology.pick_pair([0, 4], cpus) == (0, 4), "only siblings usable: the pair is still made"


def test_a_pair_prefers_one_numa_node(tmp_path: Path) -> None:
    _sysfs(tmp_path, {0: "0", 1: "1", 2: "2", 3: "3"}, nodes={0: "0,2", 1: "1,3"})
    assert topology.pick_pair([0, 1, 2, 3], topology.cpus(tmp_path)) == (0, 2)


def test_one_usable_cpu_gives_no_pair(tmp_path: Path) -> None:
    _sysfs(tmp_path, {0: "0", 1: "1"})
    assert topology.pick_pair([1], topology.cpus(tmp_path)) is None
    assert topology.cpus(tmp_path / "nothing") == []


def test_cgroup_v2_quota_is_read(tmp_path: Path) -> None:
    _write(tmp_path, "proc/self/cgroup", "0::/user.slice/job\n")
    _write(tmp_path, "sys/fs/cgroup/user.slice/job/cpu.max", "50000 100000\n")
    _write(tmp_path, "sys/fs/cgroup/user.slice/cpu.max", "max 100000\n")
    q = topology.cpu_quota(tmp_path)
    assert q.limited and q.cpus == pytest.approx(0.5) and q.period_us == 100_000


def test_the_tightest_quota_up_the_tree_wins(tmp_path: Path) -> None:
    _write(tmp_path, "proc/self/cgroup", "0::/a/b\n")
    _write(tmp_path, "sys/fs/cgroup/a/b/cpu.max", "300000 100000\n")
    _write(tmp_path, "sys/fs/cgroup/a/cpu.max", "150000 100000\n")
    assert topology.cpu_quota(tmp_path).cpus == pytest.approx(1.5)


def test_cgroup_v1_quota_is_read(tmp_path: Path) -> None:
    _write(tmp_path, "proc/self/cgroup", "3:cpu,cpuacct:/docker/abc\n")
    _write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "50000\n")
    _write(tmp_path, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
    assert topology.cpu_quota(tmp_path).cpus == pytest.approx(0.5)


def test_no_quota_is_unlimited(tmp_path: Path) -> None:
    _write(tmp_path, "proc/self/cgroup", "3:cpu:/\n")
    _write(tmp_path, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n")
    _write(tmp_path, "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n")
    q = topology.cpu_quota(tmp_path)
    assert not q.limited and math.isinf(q.cpus)


def test_load_and_steal_are_read(tmp_path: Path) -> None:
    _write(tmp_path, "proc/stat", "cpu  100 0 100 700 0 0 0 100 0 0\nprocs_running 5\n")
    _write(tmp_path, "proc/loadavg", "3.50 2.00 1.00 5/200 999\n")
    load = topology.load(0, tmp_path)
    assert load.load1 == 3.5 and load.running == 5
    assert load.busy(2) and "load average 3.50" in load.describe()


def test_sizes_are_powers_of_two() -> None:
    for size in (topology.line_size(), topology.page_size()):
        assert size >= 16 and size & (size - 1) == 0


def test_bench_cpus_stays_inside_the_affinity_mask() -> None:
    import os

    from lowlat.core import affinity
    from lowlat.machine import placement

    mask = sorted(os.sched_getaffinity(0))
    pair = placement.bench_cpus()
    assert pair == (-1, -1) or set(pair) <= set(mask)
    outside = [c for c in range(affinity.cpu_count()) if c not in mask]
    for c in outside:
        assert not affinity.probe_pinning(c).works


def test_one_usable_cpu_is_seen_as_one(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import os; os.sched_setaffinity(0, {max(os.sched_getaffinity(0))}); "
        "from lowlat.core import affinity; from lowlat.machine import machine, placement; "
        "print(placement.bench_cpus(), machine().usable_cpus, affinity.probe_pinning(0).works if "
        "max(os.sched_getaffinity(0)) != 0 else False)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["(-1,", "-1)", "1", "False"]


def _caches(root: Path, llc: dict[int, str]) -> None:
    """Each CPU's level-3 cache shared_cpu_list (and a private level 2)."""
    for cpu, shared in llc.items():
        base = f"sys/devices/system/cpu/cpu{cpu}/cache"
        _write(root, f"{base}/index2/level", "2\n")
        _write(root, f"{base}/index2/shared_cpu_list", f"{cpu}\n")
        _write(root, f"{base}/index3/level", "3\n")
        _write(root, f"{base}/index3/shared_cpu_list", shared + "\n")


def test_the_table_shows_siblings_nodes_and_llc_groups(tmp_path: Path) -> None:
    # Two sockets/nodes; in each, two cores of two SMT threads (n and n+4 share a core).
    _sysfs(tmp_path, {i: f"{i % 4},{i % 4 + 4}" for i in range(8)}, nodes={0: "0,1,4,5", 1: "2,3,6,7"})
    _caches(tmp_path, {i: "0-1,4-5" if i % 4 < 2 else "2-3,6-7" for i in range(8)})
    cpus = topology.cpus(tmp_path)
    lines = topology.table(cpus, usable=[0, 1, 2, 3, 4], roles={0: "producer", 1: "consumer"})
    assert lines[0].split() == ["CPU", "CORE", "SOCKET", "NODE", "SIBLINGS", "LLC", "SHARED", "USABLE", "ROLE"]
    assert lines[1].split() == ["0", "0", "0", "0", "0,4", "0,1,4,5", "yes", "producer"]
    assert lines[7].split() == ["6", "2", "0", "1", "2,6", "2,3,6,7", "no"]
    assert len(lines) == 9
    assert topology.numa_nodes(cpus) == [0, 1]
    assert "more CPUs" in topology.table(cpus, [0], limit=3)[-1]


def test_placement_pairs_name_each_kind_of_pair(tmp_path: Path) -> None:
    # One socket, one node, two LLC groups (CCXs) of two cores, each core two SMT threads.
    _sysfs(tmp_path, {i: f"{i % 4},{i % 4 + 4}" for i in range(8)})
    _caches(tmp_path, {i: "0-1,4-5" if i % 4 < 2 else "2-3,6-7" for i in range(8)})
    cpus = topology.cpus(tmp_path)
    pairs = topology.placement_pairs(list(range(8)), cpus)
    assert pairs == {"SMT siblings": (0, 4), "two cores, one LLC": (0, 1), "two LLC groups": (0, 2)}
    info = {c.cpu: c for c in cpus}
    assert topology.same_core(info[1], info[5]) and not topology.same_core(info[1], info[1])
    assert topology.placement_pairs([0, 4], cpus) == {"SMT siblings": (0, 4)}
    assert topology.placement_pairs([3], cpus) == {}


def test_placement_pairs_across_nodes_and_without_cache_info(tmp_path: Path) -> None:
    _sysfs(tmp_path, {0: "0", 1: "1", 2: "2", 3: "3"}, nodes={0: "0,1", 1: "2,3"})
    pairs = topology.placement_pairs([0, 1, 2, 3], topology.cpus(tmp_path))
    assert pairs == {"two cores, one LLC": (0, 1), "two NUMA nodes": (0, 2)}


def test_smt_sibling_c2c_is_nan_without_siblings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lowlat.experiments import queues

    _sysfs(tmp_path, {0: "0", 1: "1"})
    fake = topology.cpus(tmp_path)
    monkeypatch.setattr(queues.topology, "cpus", lambda root="/": fake)
    monkeypatch.setattr(queues, "usable_cpus", lambda: [0, 1])
    assert math.isnan(queues.bench_keys(quick=True)["smt_sibling_c2c_ns"])
    monkeypatch.setattr(queues, "usable_cpus", lambda: [0])
    assert math.isnan(queues.bench_keys(quick=True)["smt_sibling_c2c_ns"])
    assert queues.placement_c2c() == {}


def test_smt_sibling_c2c_here_is_nan_or_a_latency() -> None:
    from lowlat.core import affinity
    from lowlat.experiments import queues

    here = topology.placement_pairs(affinity.usable_cpus(), topology.cpus())
    v = queues.bench_keys(quick=True)["smt_sibling_c2c_ns"]
    assert math.isnan(v) if "SMT siblings" not in here else v > 0


def test_c2c_between_refuses_one_cpu_twice() -> None:
    from lowlat.experiments import queues

    with pytest.raises(ValueError, match="must differ"):
        queues.c2c_between(0, 0)
