"""Collectives on a real cluster: which links a group of ranks crosses, and what that costs.

Ranks are numbered tensor-parallel fastest, then context, then data, then pipeline (Megatron's
order), so a group whose members sit `stride` ranks apart packs gpus_per_node / stride of them
into a node. A group inside one node runs on NVLink (or PCIe). A group across nodes runs one of:

- "ring": one flat ring; its slowest hop is a NIC, so the bandwidth term runs at one NIC's
  speed per GPU. Latency follows NCCL's model: NVLink steps inside nodes, network steps across.
- "tree": the same bandwidth, latency growing with log2 of the group instead of its size.
- "hierarchical": reduce-scatter on NVLink, all-reduce of the 1/g shard across nodes with every
  GPU on its own NIC (rails in parallel), all-gather on NVLink.
"""

from __future__ import annotations

import math

from labs.core.collectives import CollectiveCost, ZERO_COST, collective_cost
from labs.core.hardware import NCCL_BASE_LATENCY_S, Cluster
from labs.core.validation import check_choice

DP_ALGORITHMS = ("ring", "tree", "hierarchical")


def ranks_per_node(cluster: Cluster, n: int, stride: int) -> int:
    """How many members of a group of n ranks, `stride` apart, share one node."""
    per_node = max(1, cluster.gpus_per_node // stride) if stride < cluster.gpus_per_node else 1
    return min(n, per_node)


def group_cost(op: str, nbytes: float, cluster: Cluster, n: int, stride: int = 1, algorithm: str = "ring") -> CollectiveCost:
    """One collective of `nbytes` over a group of n ranks spaced `stride` apart."""
    check_choice("algorithm", algorithm, DP_ALGORITHMS)
    if n <= 1 or nbytes == 0:
        return ZERO_COST
    g = ranks_per_node(cluster, n, stride)
    nodes = math.ceil(n / g)
    base = CollectiveCost(NCCL_BASE_LATENCY_S, 0.0)
    intra, inter_bw, inter_lat = cluster.intra, cluster.inter_bytes_per_s_per_gpu, cluster.inter.latency_s
    if nodes == 1:
        tree_or_ring = "tree" if algorithm == "tree" else "ring"
        return base + collective_cost(op, nbytes, n, intra.effective_bytes_per_s, intra.latency_s, tree_or_ring)
    if algorithm == "hierarchical" and op in ("all_reduce", "reduce_scatter", "all_gather") and g > 1:
        return base + _hierarchical(op, nbytes, g, nodes, cluster)
    flat = collective_cost(op, nbytes, n, inter_bw, 0.0, "tree" if algorithm == "tree" else "ring")
    if algorithm == "tree":
        latency = 2 * math.ceil(math.log2(n)) * inter_lat
    else:
        network_steps = {"all_reduce": 2 * (nodes - 1), "p2p": 1}.get(op, nodes - 1)
        all_steps = {"all_reduce": 2 * (n - 1), "p2p": 1}.get(op, n - 1)
        latency = (all_steps - network_steps) * intra.latency_s + network_steps * inter_lat
    return base + CollectiveCost(latency, flat.bandwidth_s)


def _hierarchical(op: str, nbytes: float, g: int, nodes: int, cluster: Cluster) -> CollectiveCost:
    intra_bw, intra_lat = cluster.intra.effective_bytes_per_s, cluster.intra.latency_s
    inter_bw, inter_lat = cluster.inter_bytes_per_s_per_gpu, cluster.inter.latency_s
    inside = collective_cost("reduce_scatter", nbytes, g, intra_bw, intra_lat)
    across = collective_cost(op, nbytes / g, nodes, inter_bw, inter_lat)
    if op == "all_reduce":
        return inside + across + inside
    return inside + across

