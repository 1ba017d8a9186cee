"""Collectives across NVLink domains at mid-size messages (issues 36 and 37 item 5): NVLSTree over
GB200 NVL72 racks ramps far more slowly than inside one rack, and engine v4 priced it at its
plateau from 512 MiB up: 378 GB/s of bus bandwidth over 20 racks at 512 MiB against 151 measured
(+151%), 772 against 494 over two racks (+56%).

The mechanism (labs.core.engine.collectives, domain_tree_ramp): past one domain each GPU's share of
the message, M / g after NVLS's reduce-scatter over a domain's g members, is pipelined through a
tree 1 + log2(domains) levels deep, so each rail's pipeline carries M / (g (1 + log2 domains)):
M / 144 on two racks, M / 360 on twenty. Fitted on CoreWeave's 2- and 20-rack nccl-tests rows
(tests/data/kernel_benchmarks_v4.json, NCCL 2.26.2) with the rack's scale-out plateau; every other
row below is held out of that fit and reported beside it."""

from __future__ import annotations

import inspect
import json
import math

import pytest

from conftest import DATA, report
from labs.core import Cluster
from labs.core.engine import collectives
from labs.core.engine.collectives import domain_tree_ramp, ring_ramp
from labs.core.engine.topology import bus_bandwidth, group_cost

ROWS = {r["id"]: r for r in json.loads((DATA / "kernel_benchmarks_v4.json").read_text())}
NCCL = json.loads((DATA / "nccl_busbw.json").read_text())
TOLERANCE = 0.15
GIB = 2**30


def _rack_rows(racks):
    return {k: r for k, r in ROWS.items() if k.startswith(f"nccl_gb200_nvl72_{racks}rack{'s' if racks > 1 else ''}_allreduce_")}


def _nvl72_errors(racks):
    cluster = Cluster.get("gb200-nvl72", domains=racks)
    errors = {}
    for key, row in sorted(_rack_rows(racks).items(), key=lambda kv: kv[1]["conditions"]["bytes"]):
        model = bus_bandwidth("all_reduce", row["conditions"]["bytes"], cluster, cluster.gpus) / 1e9
        errors[key] = report(f"{key} busbw GB/s", model, row["value"])
    return errors


def test_twenty_racks_at_512_mib():
    """The row engine v4 missed most: 1,440 GB200 at 512 MiB, 150.95 GB/s measured (v4: 378, +151%)."""
    cluster = Cluster.get("gb200-nvl72", domains=20)
    row = ROWS["nccl_gb200_nvl72_20racks_allreduce_536870912"]
    model = bus_bandwidth("all_reduce", row["conditions"]["bytes"], cluster, 1440) / 1e9
    assert abs(report("20 racks, 512 MiB busbw GB/s", model, row["value"])) < TOLERANCE


@pytest.mark.parametrize("racks", [2, 20])
def test_every_multi_rack_size_within_15_percent(racks):
    """The fitted rows, 512 MiB - 16 GiB: each within 15% (v4: +56% and +151% at 512 MiB)."""
    errors = _nvl72_errors(racks)
    assert len(errors) == 6
    assert all(abs(e) < TOLERANCE for e in errors.values()), errors


def test_one_rack_keeps_its_ramp():
    """Held out: one rack (one NVLink domain) is priced as before, by the ramp inside a domain."""
    errors = _nvl72_errors(1)
    assert len(errors) == 5 and all(abs(e) < TOLERANCE for e in errors.values()), errors


def test_the_ramp_by_hand_on_twenty_racks():
    """NVLSTree over 20 racks at 4 GiB, by hand: latency 25 + 2 log2i(20) x 20.9 us (tuning.cc);
    bandwidth 2 x 1439/1440 x M / the rack's scale-out plateau, stretched by domain_tree_ramp of
    M / (72 x (1 + 4))."""
    cluster = Cluster.get("gb200-nvl72", domains=20)
    nbytes = 4 * GIB
    cost = group_cost("all_reduce", nbytes, cluster, 1440)
    plateau = cluster.scale_out_bytes_per_s  # past two racks NVLSTree's network term is x 1
    assert cost.latency_s == pytest.approx((25 + 2 * 4 * 20.9) * 1e-6, rel=1e-12)
    by_hand = 2 * 1439 / 1440 * nbytes / plateau * domain_tree_ramp(nbytes / (72 * 5))
    assert cost.bandwidth_s == pytest.approx(by_hand, rel=1e-12)
    # two racks: NVLSTree's network term doubled (834 GB/s) or NVLS's rate (834.57), the lesser; the
    # slice is M / 144
    two = Cluster.get("gb200-nvl72", domains=2)
    cost = group_cost("all_reduce", nbytes, two, 144)
    busbw = min(2 * two.scale_out_bytes_per_s, two.intra.nvls_bytes_per_s)
    by_hand = 2 * 143 / 144 * nbytes / busbw * domain_tree_ramp(nbytes / 144)
    assert cost.bandwidth_s == pytest.approx(by_hand, rel=1e-12)


def test_the_ramp_is_one_curve_with_its_own_constants():
    """domain_tree_ramp is ring_ramp with the across-domain constants: 1 + excess at small slices, 1
    at large; its constants name the rows they were fitted on."""
    assert domain_tree_ramp(0.0) == pytest.approx(1 + collectives.DOMAIN_RAMP_EXCESS)
    assert domain_tree_ramp(math.inf) == 1.0
    assert domain_tree_ramp(1e7) == ring_ramp(1e7, collectives.DOMAIN_RAMP_EXCESS, collectives.DOMAIN_RAMP_HALF_BYTES)
    source = inspect.getsource(collectives)
    block = source[source.index("# The ramp across NVLink domains"):source.index("DOMAIN_RAMP_HALF_BYTES =")]
    assert "nccl_gb200_nvl72_2racks_allreduce_" in block and "nccl_gb200_nvl72_20racks_allreduce_" in block


def test_one_host_domains_keep_their_price():
    """DGX H200 over 248 nodes (nccl-tests #283, ~350 GB/s at 512 MB): an 8-GPU one-host domain has no
    across-domain ramp (the slice formula would give 268 GB/s); the other multi-node rows of
    tests/data/nccl_busbw.json (held out) within 15%."""
    for point in NCCL["points"]:
        if point["nodes"] < 2:
            continue
        overrides = {"nics_per_node": point["nics_per_node"]} if point["nics_per_node"] else {}
        cluster = Cluster.get(point["cluster"], point["nodes"], **overrides)
        model = bus_bandwidth("all_reduce", point["bytes"], cluster, point["gpus"], point.get("stride", 1), point["algorithm"]) / 1e9
        assert abs(report(f"{point['id']} busbw GB/s", model, point["busbw_gbs"])) < TOLERANCE


def test_sharp_rows_held_out():
    """CoreWeave's 8 x 8 H100 with SHARP (NVLS+SHARP across one-host domains), 512 MiB - 8 GiB:
    unchanged, within 15% (tests/test_sharp.py holds 2-8 GiB within 5%)."""
    cluster = Cluster.get("dgx-h100", 8).with_fabric("ib-ndr-sharp")
    for key, row in sorted(ROWS.items()):
        if key.startswith("nccl_h100_64gpu_sharp_allreduce_"):
            model = bus_bandwidth("all_reduce", row["conditions"]["bytes"], cluster, 64) / 1e9
            assert abs(report(f"{key} busbw GB/s", model, row["value"])) < TOLERANCE


def test_nvlink_partitions_across_ib():
    """NCCL #1801 (held out, 16 GiB, NCCL 2.27.3): three NVL4 / NVL8 partitions on different racks.
    The ring within 15%. The tree (NCCL_ALGO=TREE) is a known gap: measured 1.19-1.23x the ring,
    the engine prices it, as tuning.cc does, at 2M over 0.92 of the ring's bus bandwidth, 32% low
    (a double binary tree over 3 nodes moves 1.5 M per NIC direction, which would give 230 / 480
    GB/s: not modelled, since NCCL's pick rests on tuning.cc's price)."""
    for gpus in (4, 8):
        cluster = Cluster.get("gb200-nvl72", nodes=3 * gpus // 4, gpus_per_domain=gpus)
        for algorithm in ("ring", "tree"):
            row = ROWS[f"nccl_gb200_3xnvl{gpus}_ib_allreduce_{algorithm}"]
            model = bus_bandwidth("all_reduce", row["conditions"]["bytes"], cluster, 3 * gpus, 1, algorithm) / 1e9
            error = report(f"3 x NVL{gpus} over IB, {algorithm}, busbw GB/s", model, row["value"])
            assert abs(error) < TOLERANCE if algorithm == "ring" else -0.35 < error < 0
