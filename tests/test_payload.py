"""The payload experiment (a ring of 64-byte messages vs a ring of uint32
indices into a pool): every message arrives in order with the payload the
producer wrote (checksums), both rings, throughput and round trip; the pool's
rotation is clean under ThreadSanitizer; the NUMA-node helper answers a valid
node or -1."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, build, run_sanitized
from lowlat.core import affinity
from lowlat.core._lib import ffi, lib
from lowlat.experiments import payload
from lowlat.machine import placement, topology


@pytest.mark.parametrize("kind", ["struct64", "index"])
@pytest.mark.parametrize("capacity", [2, 1024])
def test_every_payload_arrives_with_its_checksum(kind: str, capacity: int) -> None:
    r = payload.payload_run(kind, 50_000, capacity=capacity, wait="spin_yield")
    assert r.errors == 0 and r.moved == r.items == 50_000
    assert r.sent_sum == r.received_sum == payload.expected_sum(50_000)
    assert r.checksum_ok and r.items_per_s > 0
    assert r.pool_node == -1 if kind == "struct64" else r.pool_node >= -1


@pytest.mark.parametrize("kind", ["struct64", "index"])
def test_round_trips_carry_the_payload_and_are_timed(kind: str) -> None:
    r = payload.payload_run(kind, 2_000, round_trip=True, wait="spin_yield")
    assert r.checksum_ok and r.sent_sum == payload.expected_sum(2_000)
    assert r.rtt is not None and r.rtt.count == 2_000 and r.rtt.percentile(50) > 0


def test_both_kinds_on_one_cpu_take_turns_and_lose_nothing() -> None:
    cpu = affinity.usable_cpus()[0]
    for kind in payload.KINDS:
        r = payload.payload_run(kind, 20_000, cpus=(cpu, cpu), wait="yield")
        assert r.checksum_ok


def test_bench_keys_are_numbers() -> None:
    keys = payload.bench_keys(quick=True)
    assert set(keys) == {"ring_struct64_items_per_s", "ring_index_items_per_s"}
    assert all(isinstance(v, float) and v > 0 for v in keys.values())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"kind": "struct32"}, ValueError, "kind must be one of"),
        ({"items": 0}, ValueError, "items"),
        ({"capacity": 3}, ValueError, "power of two"),
        ({"capacity": 1 << 31}, ValueError, "at most 2\\*\\*30"),
        ({"wait": "sleep"}, ValueError, "wait must be one of"),
        ({"items": 1.5}, TypeError, "items must be an integer"),
    ],
)
def test_bad_arguments_are_refused_before_c(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        payload.payload_run(**kwargs)


def test_a_cpu_outside_the_mask_is_refused() -> None:
    outside = [c for c in range(affinity.cpu_count()) if c not in affinity.usable_cpus()]
    if not outside:
        pytest.skip("every online CPU is usable here")
    with pytest.raises(ValueError, match="affinity mask"):
        payload.payload_run("index", 10, cpus=(outside[0], -1))


def test_the_numa_node_of_memory_is_a_node_or_unknown() -> None:
    nodes = topology.numa_nodes(topology.cpus()) or [0]
    arr = np.ones(1 << 16)  # touched: its pages are placed
    node = placement.numa_node_of(arr)
    assert node == -1 or node in nodes
    assert int(lib.ll_numa_node_of(ffi.NULL)) == -1
    with pytest.raises(TypeError, match="buffer protocol"):
        placement.numa_node_of(12345)
    with pytest.raises(ValueError, match="empty"):
        placement.numa_node_of(bytearray())


def test_numa_maps_fallback_reads_a_fake_tree(tmp_path: Path) -> None:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/maps").write_text(
        "7f0000000000-7f0000100000 rw-p 00000000 00:00 0\n7f0000200000-7f0000300000 rw-p 00000000 00:00 0\n"
    )
    (tmp_path / "proc/self/numa_maps").write_text(
        "7f0000000000 default anon=16 dirty=16 N1=16 kernelpagesize_kB=4\n"
        "7f0000200000 interleave:0-1 anon=4 dirty=4 N0=2 N1=2 kernelpagesize_kB=4\n"
    )
    assert topology.numa_node_from_maps(0x7F0000000010, tmp_path) == 1
    assert topology.numa_node_from_maps(0x7F0000200000, tmp_path) == -1, "spread over two nodes"
    assert topology.numa_node_from_maps(0x10, tmp_path) == -1, "not mapped"


@pytest.mark.slow
def test_pool_rotation_under_thread_sanitizer(cc: str, tmp_path: Path) -> None:
    """Rings of 2, 4 and 64 slots: the producer reuses pool entries as soon
    as the ring's acquire/release allow; a pool of capacity entries (one
    rotation too short) is reported by this run as a data race."""
    exe = build(cc, tmp_path / "payload_stress", [str(ROOT / "tests/c/payload_stress.c")], "thread")
    res = run_sanitized(exe, ["10000"], "thread", timeout=300)
    out = res.stdout + res.stderr
    assert "ThreadSanitizer" not in out, out[-4000:]
    assert res.returncode == 0 and "OK: 0 errors" in res.stdout, out[-4000:]


# the chapter's readings, for every plausible run: fixed per-round series, no C involved
def test_a_small_consistent_lead_is_named_as_one_not_as_undecided() -> None:
    struct = [6.0, 6.2, 5.9, 7.0, 6.5]
    index = [5.5, 5.8, 5.5, 6.5, 6.0]  # index / struct 0.92-0.94: the struct ring ahead in every round
    text = payload.throughput_reading(struct, index)
    assert "struct ring ahead in most rounds, by less than 15%" in text and "within the predicted 1.5x" in text
    assert "cannot tell" not in text


@pytest.mark.parametrize(
    ("index", "expect"),
    [
        ([1.3, 1.25, 1.35, 1.3, 1.28], "index ring ahead (median round 1.30x"),
        ([2.0, 2.1, 1.9, 2.2, 2.0], "more than the 1.5x predicted: run it again"),
        ([1.05, 0.95, 1.0, 1.02, 0.97], "a tie within 15%"),
        ([1.3, 0.8, 1.2, 0.85, 1.0], "no consistent winner"),
        ([2.0, 0.4, 1.9, 0.5, 1.0], "cannot tell the two apart; run it again"),
    ],
)
def test_throughput_reading_by_shape_of_the_rounds(index: list[float], expect: str) -> None:
    assert expect in payload.throughput_reading([1.0] * 5, index)


def test_throughput_reading_on_one_cpu_expects_the_index_ring_ahead() -> None:
    assert "as predicted for one CPU" in payload.throughput_reading([1.0] * 3, [1.5, 1.4, 1.6], one_cpu=True)
    text = payload.throughput_reading([1.0] * 3, [0.7, 0.8, 0.75], one_cpu=True, reasons=["a busy machine"])
    assert "against the prediction for one CPU" in text and "likely because a busy machine" in text


def test_round_trip_extra_is_sized_in_transfers_of_this_run() -> None:
    struct = [596.0, 577.0, 629.0, 600.0, 590.0]
    index = [643.0, 626.0, 661.0, 640.0, 650.0]  # about 47 ns longer: half a transfer of ~100 ns
    text = payload.round_trip_reading(struct, index, [105.0, 88.0, 99.0, 120.0, 95.0])
    assert "within the one extra transfer predicted" in text and "0.4" in text
    assert "did not show" not in text
    about = payload.round_trip_reading(
        struct, [x + d for x, d in zip(struct, (60, 90, 110, 95, 70))], [70.0, 78.0, 80.0, 92.0, 85.0]
    )
    assert "about one transfer, the size predicted" in about
    more = payload.round_trip_reading(struct, [x + 300 for x in struct], [100.0] * 5)
    assert "more than the one extra transfer predicted" in more
    shorter = payload.round_trip_reading(struct, [x - 50 for x in struct], [100.0] * 5)
    assert "shorter in most rounds" in shorter and "against the prediction" in shorter
    mixed = payload.round_trip_reading(struct, [x + d for x, d in zip(struct, (10, -10, 5, -5, 0))], [100.0] * 5)
    assert "did not show" in mixed
    wide = payload.round_trip_reading(struct, [x + d for x, d in zip(struct, (300, -300, 200, -200, 0))], [100.0] * 5)
    assert "cannot resolve" in wide


def test_round_trip_without_a_core_to_core_latency_says_why() -> None:
    one = payload.round_trip_reading([5e6, 6e6], [5.5e6, 6e6], [float("nan")], one_cpu=True)
    assert "one usable CPU" in one and "transfer" in one
    unpinned = payload.round_trip_reading([600.0, 610.0], [640.0, 650.0], [float("nan")])
    assert "could not be measured" in unpinned


def test_readings_refuse_bad_series() -> None:
    with pytest.raises(ValueError, match="equal length"):
        payload.throughput_reading([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive finite"):
        payload.round_trip_reading([0.0], [1.0])
