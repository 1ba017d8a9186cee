"""In-network reduction in the scale-out switches (InfiniBand SHARP, NCCL's CollNet and NVLS+SHARP)
and NVLSTree past two NVLink domains (issue 36's open item, issue 38 item 5 / review X2).

Derived: an in-network all-reduce sends each byte up once and receives the reduced result once
(M each way a rank) against the ring's 2(N-1)/N M, so the bytes per NIC halve as N grows; the
time halves only where the NIC is what limits. Measured: CoreWeave's 8 x 8 H100 over InfiniBand
with SHARP, NVIDIA's CollNet figures for DGX A100 (NVIDIA/nccl #320), NVLS on 2 and 4+ H100 nodes
(NVIDIA/nccl #1221) and GB200 NVL72 racks (CoreWeave) in tests/data/kernel_benchmarks_v4.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import report
from labs.core.engine.collectives import algbw_from_busbw, bytes_sent_per_rank, collective_cost
from labs.core.engine.hardware import CLUSTERS, LINKS, Cluster, Link
from labs.core.engine.topology import bus_bandwidth, group_cost

ROWS = {r["id"]: r for r in json.loads((Path(__file__).parent / "data" / "kernel_benchmarks_v4.json").read_text())}
GIB = 2**30


def test_in_network_all_reduce_sends_each_byte_once():
    """Hand count: 64 ranks, 1 GiB. Ring: 2 x 63/64 GiB out of each rank; in the network: 1 GiB out
    (and 1 GiB back). Bytes per NIC: 64/126 of the ring's."""
    ring, sharp = (bytes_sent_per_rank("all_reduce", GIB, 64, a) for a in ("ring", "in_network"))
    assert ring == 2 * 63 / 64 * GIB and sharp == GIB
    assert abs(report("in-network / ring bytes per rank, 64 ranks", sharp / ring, 32 / 63)) < 1e-12
    cost = collective_cost("all_reduce", GIB, 64, 47e9, 10e-6, "in_network")
    assert cost.bandwidth_s == pytest.approx(GIB / 47e9) and cost.latency_s == pytest.approx(20e-6)
    assert bytes_sent_per_rank("reduce_scatter", GIB, 64, "in_network") == bytes_sent_per_rank("reduce_scatter", GIB, 64)


def test_sharp_halves_dp_behind_tp_time_on_one_nic():
    """DP behind TP = 8 on 64 DGX H100 nodes: one GPU a node, one 400G NIC each (47 GB/s). The ring
    moves 2 x 63/64 M through it, SHARP M: the bandwidth term's ratio is 32/63 by hand."""
    plain = Cluster.get("dgx-h100", 64)
    sharp = plain.with_fabric("ib-ndr-sharp")
    ring = group_cost("all_reduce", 4 * GIB, plain, 64, 8, "auto")
    innet = group_cost("all_reduce", 4 * GIB, sharp, 64, 8, "auto")
    assert abs(report("SHARP / no SHARP bandwidth seconds, DP behind TP 8", innet.bandwidth_s / ring.bandwidth_s, 32 / 63)) < 1e-9
    assert innet.bandwidth_s == pytest.approx(4 * GIB / 47e9)


def test_sharp_is_off_where_the_fabric_has_none():
    """Only the *-sharp links reduce in the network; every preset keeps its fabric, so no preset's
    price moves with SHARP."""
    assert sorted(k for k, link in LINKS.items() if link.in_network_reduction) == ["ib-hdr-sharp", "ib-ndr-sharp", "ib-xdr-sharp"]
    assert not any(c.inter.in_network_reduction for c in CLUSTERS.values())
    plain = Cluster.get("dgx-h100", 8)
    assert bus_bandwidth("all_reduce", 4 * GIB, plain, 8, 8, "auto") == pytest.approx(bus_bandwidth("all_reduce", 4 * GIB, plain, 8, 8, "ring"))


def test_sharp_on_whole_h100_nodes_against_coreweave():
    """8 x 8 H100, 8 NDR NICs a node, SHARP (CoreWeave's example log): whole nodes gain next to
    nothing at large messages, because NVLink inside the node (NVLS, then the NICs at the ring's
    bus bandwidth, as NCCL's own tuning.cc prices NVLS+SHARP) bounds it, not the NICs' bytes."""
    plain = Cluster.get("dgx-h100", 8)
    sharp = plain.with_fabric("ib-ndr-sharp")
    for size in (2**31, 2**32, 2**33):
        measured = ROWS[f"nccl_h100_64gpu_sharp_allreduce_{size}"]["value"]
        assert abs(report(f"8x8 H100 SHARP busbw GB/s at {size >> 20} MiB", bus_bandwidth("all_reduce", size, sharp, 64) / 1e9, measured)) < 0.05
        assert bus_bandwidth("all_reduce", size, sharp, 64) / bus_bandwidth("all_reduce", size, plain, 64) < 1.02


@pytest.mark.parametrize("nics, expected_algbw", [(8, 110e9), (4, 80e9)])
def test_collnet_on_dgx_a100_against_nvidia(nics, expected_algbw):
    """NVIDIA/nccl #320 (sjeaugey): CollNet on DGX A100 with HDR SHARP, ~20 GB/s a NIC; 'with 4 NICs
    ~80GB/s algorithm bandwidth, but with 8 NICs we're limited to ~110GB/s AlgBw' (NVLink carries
    ~2x the data inside the node). The ring on the same 4 NICs: about half."""
    cluster = Cluster.get("dgx-a100", 4, nics_per_node=nics).with_fabric("ib-hdr-sharp")
    algbw = 4 * GIB / group_cost("all_reduce", 4 * GIB, cluster, 32, 1, "auto").total_s
    assert abs(report(f"DGX A100 CollNet algbw, {nics} NICs", algbw, expected_algbw)) < 0.10
    ring = algbw_from_busbw("all_reduce", bus_bandwidth("all_reduce", 4 * GIB, cluster, 32, 1, "ring"), 32)
    assert algbw > ring


def test_sharp_never_slower_than_without():
    for key, nodes in (("dgx-h100", 16), ("dgx-a100", 4), ("dgx-b200", 4), ("gb200-nvl72", 36)):
        plain = Cluster.get(key, nodes)
        sharp = plain.with_fabric("ib-ndr-sharp")
        for size in (2**20, 2**26, 2**32):
            for n, stride in ((plain.gpus, 1), (nodes, plain.domain_gpus // 8 or 1)):
                assert bus_bandwidth("all_reduce", size, sharp, n, stride) >= bus_bandwidth("all_reduce", size, plain, n, stride) * (1 - 1e-12)


def test_nvlstree_halves_past_two_nodes_on_h100():
    """NVIDIA/nccl #1221: 8 x H100 a node, 8 x 400G RoCE, all_reduce_perf 4-8 GiB: NVLS raises the bus
    bandwidth from ~330 to ~430 GB/s on 2 nodes and not at all on more (~320). tuning.cc: NVLSTree's
    network bandwidth x 2 on two nodes, x 1 past. v4.3 priced both at the NICs' 376 (ratio 1)."""
    two, four = (bus_bandwidth("all_reduce", 4 * GIB, Cluster.get("meta-h100-roce", k), 8 * k) for k in (2, 4))
    assert abs(report("NVLS 2 nodes / 4 nodes busbw (H100, RoCE)", two / four, 430 / 320)) < 0.10
    assert abs(report("NVLS on 2 H100 nodes GB/s", two / 1e9, 430)) < 0.15


def test_nvl72_racks_past_two_against_coreweave():
    """GB200 NVL72, NCCL's own pick: two racks reach ~NVLS's rate (NVLSTree's doubled network term),
    twenty racks about half (fitted with the across-domain ramp on the 2- and 20-rack rows:
    Cluster.scale_out_bytes_per_s, collectives.DOMAIN_RAMP_*; tests/test_domain_ramp.py reports
    every size). v4.3 gave 819 GB/s on twenty racks at 4 GiB against 346 measured."""
    for racks, sizes in ((2, (2**32, 2**33, 2**34)), (20, (2**33, 2**34))):
        cluster = Cluster.get("gb200-nvl72", domains=racks)
        for size in sizes:
            measured = ROWS[f"nccl_gb200_nvl72_{racks}racks_allreduce_{size}"]["value"]
            model = bus_bandwidth("all_reduce", size, cluster, cluster.gpus) / 1e9
            assert abs(report(f"NVL72 x{racks} busbw GB/s at {size >> 20} MiB", model, measured)) < 0.10


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="scale_out_bytes_per_s"):
        Cluster.get("gb200-nvl72", scale_out_bytes_per_s=-1.0)
    with pytest.raises(ValueError, match="in_network_reduction"):
        Link("x", 1e9, 0.0, 1.0, "test", in_network_reduction="yes")
    with pytest.raises(ValueError, match="algorithm"):
        bytes_sent_per_rank("all_reduce", 1.0, 4, "sharp")
