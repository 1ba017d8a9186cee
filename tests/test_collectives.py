"""Collectives: closed forms, the ring simulator, busbw, seed milestones."""

import pytest

from conftest import report
from labs.core.engine.collectives import (
    algbw_from_busbw, all_gather_time, all_reduce_time, bytes_sent_per_rank, busbw_from_algbw,
    reduce_scatter_time, simulate_ring_all_reduce,
)
from labs.core.engine.models import Model


def test_seed_milestone_4gb_ring_on_8_gpus_sends_7gb():
    assert abs(report("4 GB ring all-reduce bytes/GPU (GB)", bytes_sent_per_rank("all_reduce", 4e9, 8) / 1e9, 7.0)) < 1e-12


@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
def test_ring_simulator_reduces_everything_and_matches_closed_form(n):
    steps = simulate_ring_all_reduce(n, 1e6)
    assert len(steps) == 2 * (n - 1)
    after_rs = steps[n - 2].holds
    for r in range(n):
        assert after_rs[r][(r + 1) % n] == n  # rank r owns the full sum of chunk r+1
    assert all(c == n for row in steps[-1].holds for c in row)
    sent = sum(s.bytes_sent_per_rank for s in steps)
    assert sent == pytest.approx(bytes_sent_per_rank("all_reduce", 1e6, n))


def test_ring_alpha_beta_formula():
    M, n, B, a = 1e9, 8, 100e9, 5e-6
    assert all_reduce_time(M, n, B, a) == pytest.approx(2 * (n - 1) * a + 2 * (n - 1) / n * M / B)
    assert all_reduce_time(M, n, B, a) == pytest.approx(reduce_scatter_time(M, n, B, a) + all_gather_time(M, n, B, a))


def test_tree_latency_grows_with_log_n():
    small = 1e3
    ring = all_reduce_time(small, 1024, 50e9, 10e-6, "ring")
    tree = all_reduce_time(small, 1024, 50e9, 10e-6, "tree")
    assert report("tree/ring latency at 1024 ranks", tree / ring, 20 / 2046) == pytest.approx(0, abs=0.01)


def test_busbw_definition_from_nccl_tests():
    assert busbw_from_algbw("all_reduce", 100.0, 8) == pytest.approx(175.0)
    assert busbw_from_algbw("all_gather", 100.0, 8) == pytest.approx(87.5)
    assert algbw_from_busbw("all_reduce", 175.0, 8) == pytest.approx(100.0)


def test_seed_milestone_tensor_parallel_traffic():
    """seeds/001 week 23: batch 8, seq 512, d 512: ~4 MB per collective, 24 of them ~96 MB,
    ~3 ms at 32 GB/s (PCIe)."""
    m = Model.get("seed-12l-512")
    per = 8 * 512 * m.hidden * 2
    assert abs(report("TP message (MB)", per / 1e6, 4.19)) < 0.01
    total = 2 * m.layers * per
    assert abs(report("24 collectives (MB)", total / 1e6, 96 * 1.048576)) < 0.01
    assert abs(report("time at 32 GB/s (ms)", total / 32e9 * 1e3, 3.1)) < 0.03


@pytest.mark.parametrize("field, call", [
    ("nbytes", lambda: all_reduce_time(-1, 8, 1e9)),
    ("n", lambda: all_reduce_time(1, 0, 1e9)),
    ("bandwidth", lambda: all_reduce_time(1, 8, 0)),
    ("algorithm", lambda: all_reduce_time(1, 8, 1e9, algorithm="butterfly")),
    ("op", lambda: bytes_sent_per_rank("gossip", 1, 8)),
])
def test_bad_input_names_the_field(field, call):
    with pytest.raises(ValueError, match=field):
        call()
