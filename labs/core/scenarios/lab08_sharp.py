"""Lab 08's SHARP section: an all-reduce across DGX H100 nodes with the scale-out switches adding
(InfiniBand SHARP, NCCL's CollNet) and without, and seed 002's "SHARP halves all-reduce traffic"
(review X2) checked against the engine: halved on the wire, halved in time only where the NIC is
what limits."""

from __future__ import annotations

from labs.core.engine.collectives import bytes_sent_per_rank
from labs.core.engine.hardware import Cluster
from labs.core.engine.topology import bus_bandwidth, group_cost, members_per_domain

SHARP_PLATFORM = "dgx-h100"  # 8 H100 a node, one NDR NIC per GPU (rail-optimised)
SHARP_FABRIC = "ib-ndr-sharp"  # the same NICs behind Quantum-2 switches with SHARPv3 (hardware.LINKS)
SHARP_NODES = 16
SHARP_BYTES = 4 * 2**30
# CoreWeave's 8 nodes x 8 H100 over InfiniBand with SHARP, nccl-tests all_reduce_perf busbw at 4 GiB
# (coreweave/nccl-tests README, H100 SHARP MPIJob example log; tests/data/kernel_benchmarks_v4.json
# nccl_h100_64gpu_sharp_allreduce_4294967296, held equal by tests/test_lab08_sharp.py)
SHARP_MEASURED_BUSBW = 383.23e9
SHARP_MEASURED_NODES = 8
SHARP_MEASURED_SOURCE = "CoreWeave nccl-tests, 8 x 8 H100 over InfiniBand with SHARP"


def sharp_clusters(nodes: int = SHARP_NODES) -> tuple[Cluster, Cluster]:
    """The platform's nodes on their plain fabric, and on the same NICs behind SHARP switches."""
    plain = Cluster.get(SHARP_PLATFORM, nodes)
    return plain, plain.with_fabric(SHARP_FABRIC)


def sharp_rows(nbytes: float = SHARP_BYTES, nodes: int = SHARP_NODES) -> list[dict]:
    """Two all-reduce groups over `nodes` nodes, each with SHARP off and on: the bytes each NIC sends
    (the group's bytes per rank over the NICs its members hold in a node) and the time NCCL's pick takes."""
    plain, sharp = sharp_clusters(nodes)
    groups = (("DP behind TP = 8: one GPU a node, one NIC", nodes, plain.gpus_per_node),
              (f"whole nodes: {plain.gpus} GPUs, {plain.rails} NICs a node", plain.gpus, 1))
    rows = []
    for label, n, stride in groups:
        g = float(members_per_domain(plain, n, stride))
        nics = plain.rails * g / plain.gpus_per_node
        off, on = (group_cost("all_reduce", nbytes, c, n, stride, "auto").total_s for c in (plain, sharp))
        rows.append({"label": label, "n": n, "stride": stride, "nics_per_node": nics,
                     "nic_bytes_off": bytes_sent_per_rank("all_reduce", nbytes, n) / nics,
                     "nic_bytes_on": bytes_sent_per_rank("all_reduce", nbytes, n, "in_network") / nics,
                     "time_off_s": off, "time_on_s": on, "speedup": off / on})
    return rows


def sharp_measured(nbytes: float = SHARP_BYTES) -> dict:
    """CoreWeave's SHARP figure beside the engine's bus bandwidth for the same 64 GPUs, with and without SHARP."""
    plain, sharp = sharp_clusters(SHARP_MEASURED_NODES)
    n = plain.gpus
    return {"measured": SHARP_MEASURED_BUSBW, "engine_on": bus_bandwidth("all_reduce", nbytes, sharp, n),
            "engine_off": bus_bandwidth("all_reduce", nbytes, plain, n), "gpus": n, "nodes": SHARP_MEASURED_NODES,
            "source": SHARP_MEASURED_SOURCE}


def sharp_fabric_name() -> str:
    return sharp_clusters(1)[1].inter.name
