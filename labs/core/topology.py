"""Where a group's collective runs, and what it costs: NVLink, rails, pods.

Ranks are numbered tensor-parallel fastest, then context, then data, then pipeline (Megatron's
order, the default; a Plan's rank_order picks another, labs.core.layout gives each axis's stride),
so a group whose members sit `stride` ranks apart packs g = G / stride of them into a node of G
GPUs (one when stride >= G).

- Inside one node a group runs on NVLink at NCCL's measured bus bandwidth.
- Across nodes NCCL runs one ring per channel and crosses each node boundary on a different NIC
  (rails). With every group of the node communicating at once, a group with g members per node
  owns g/G of the node's NICs: on a rail-optimised DGX (one NIC per GPU) that is g NICs, so a
  ring over whole nodes moves about 8 x 47 GB/s of bus bandwidth, capped by NVLink's, and a group
  with one member per node (DP behind TP=8) has one NIC. Evidence: nccl-tests #119 (3 nodes x
  4 HDR: 84.8 of 100 GB/s), #309 (2 x 8 H100 with 8 NDR NICs: up to ~400 GB/s), #283 (1,984
  H200s: ~350 GB/s); tests/data/nccl_busbw.json.
- A group spanning more GPUs than a pod crosses the oversubscribed tier above it: its NIC share
  runs at 1/oversubscription (Llama 3: 3,072-GPU pods, 1:7 above; arXiv:2407.21783 Sec. 3.3.1).

Algorithms: "ring" (one ring per channel, latency growing with the group), "tree" (NCCL's double
binary tree: the same bandwidth, latency growing with log2 of the group), "nvls" (NVLink SHARP:
the switch reduces, ~480 instead of ~370 GB/s of busbw on 8 H100s, nccl-tests #212; only on
NVLink generations that have it), and "auto", NCCL's own choice: whichever of these its cost
model predicts fastest for the collective at hand (src/graph/tuning.cc). The latency
(alpha) term is NCCL's own cost model, so small messages reach a fraction of peak busbw as in the
nccl-tests curves. Everything here is array-valued: scalars and numpy columns broadcast.
"""

from __future__ import annotations

import numpy as np

from labs.core.collectives import CollectiveCost
from labs.core.hardware import NCCL_BASE_LATENCY_S, Cluster
from labs.core.validation import check_choice, check_positive

DP_ALGORITHMS = ("auto", "ring", "tree", "nvls")
_REDUCTIONS = ("all_reduce", "reduce_scatter", "all_gather")
# Ring steps per member for each op: all-reduce is a reduce-scatter then an all-gather.
_RING_SHARE = {"all_reduce": 2.0, "reduce_scatter": 1.0, "all_gather": 1.0, "all_to_all": 1.0}


def members_per_node(cluster: Cluster, n, stride):
    """How many members of a group of n ranks, `stride` apart, share one node."""
    gpn = cluster.gpus_per_node
    stride = np.asarray(stride, dtype=float)
    packed = np.where(stride < gpn, np.maximum(1.0, np.floor(gpn / np.maximum(stride, 1.0))), 1.0)
    return np.minimum(np.asarray(n, dtype=float), packed)


def group_bus_bandwidth(cluster: Cluster, n, stride, algorithm: str = "ring", op: str = "all_reduce"):
    """Bus bandwidth (bytes/s) one collective of the group reaches at large message sizes."""
    n = np.asarray(n, dtype=float)
    g = members_per_node(cluster, n, stride)
    nodes = np.ceil(n / g)
    intra = cluster.intra.effective_bytes_per_s
    if algorithm == "nvls" and op in _REDUCTIONS and cluster.intra.nvls_bytes_per_s:
        intra = cluster.intra.nvls_bytes_per_s
    nics = cluster.rails * g / cluster.gpus_per_node
    span = n * np.asarray(stride, dtype=float)
    tier = np.where(span > cluster.pod_gpus, 1.0 / cluster.oversubscription, 1.0) if cluster.pod_gpus else 1.0
    across = np.minimum(intra, nics * cluster.inter.effective_bytes_per_s * tier)
    return np.where(nodes > 1, across, intra)


def collective_columns(op: str, nbytes, cluster: Cluster, n, stride=1, algorithm: str = "ring"):
    """(latency seconds, bandwidth seconds) of one collective of `nbytes` over groups of n ranks
    spaced `stride` apart; every argument but op, cluster and algorithm may be an array."""
    if algorithm == "auto" and op != "p2p":
        options = [collective_columns(op, nbytes, cluster, n, stride, a) for a in ("ring", "tree")]
        if cluster.intra.nvls_bytes_per_s and op in _REDUCTIONS:
            options.append(collective_columns(op, nbytes, cluster, n, stride, "nvls"))
        pick = np.argmin(np.stack([np.broadcast_to(lat + bw, np.broadcast(lat, bw).shape) for lat, bw in options]), axis=0)
        return np.choose(pick, [lat for lat, _ in options]), np.choose(pick, [bw for _, bw in options])
    n = np.asarray(n, dtype=float)
    nbytes = np.asarray(nbytes, dtype=float)
    if op == "p2p":
        g = members_per_node(cluster, 2, stride)
        bw = np.where(g >= 2, cluster.intra.effective_bytes_per_s, cluster.inter_bytes_per_s_per_gpu)
        lat = np.where(g >= 2, cluster.intra.latency_s, cluster.inter.latency_s)
        active = nbytes > 0
        return np.where(active, lat, 0.0), np.where(active, nbytes / bw, 0.0)
    share = _RING_SHARE[op]
    g = members_per_node(cluster, n, stride)
    nodes = np.ceil(n / g)
    busbw = group_bus_bandwidth(cluster, n, stride, algorithm, op)
    bandwidth = share * (n - 1) / np.maximum(n, 1.0) * nbytes / busbw
    if algorithm == "tree":
        latency = share * np.ceil(np.log2(np.maximum(n, 1.0))) * np.where(nodes > 1, cluster.inter.latency_s, cluster.intra.latency_s)
    else:
        network_steps = share * (nodes - 1)
        latency = (share * (n - 1) - network_steps) * cluster.intra.latency_s + network_steps * cluster.inter.latency_s
    active = (n > 1) & (nbytes > 0)
    return np.where(active, latency + NCCL_BASE_LATENCY_S, 0.0), np.where(active, bandwidth, 0.0)


def check_algorithm(cluster: Cluster, algorithm: str) -> None:
    check_choice("dp_algorithm", algorithm, DP_ALGORITHMS)
    if algorithm == "nvls" and not cluster.intra.nvls_bytes_per_s:
        raise ValueError(f"dp_algorithm='nvls' needs NVLink SHARP, which {cluster.intra.name} does not have; use 'ring' or 'tree'")


def group_cost(op: str, nbytes: float, cluster: Cluster, n: int, stride: int = 1, algorithm: str = "auto") -> CollectiveCost:
    """One collective of `nbytes` over a group of n ranks spaced `stride` apart."""
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a Cluster from labs.core.hardware, got {cluster!r}")
    check_choice("op", op, tuple(_RING_SHARE) + ("p2p",))
    check_positive("nbytes", nbytes, allow_zero=True, maximum=1e18)
    check_positive("n", n, integer=True)
    check_positive("stride", stride, integer=True)
    check_algorithm(cluster, algorithm)
    if n > 1 << 20:
        raise ValueError(f"n must be at most {1 << 20} ranks, got {n}")
    latency, bandwidth = collective_columns(op, nbytes, cluster, n, stride, algorithm)
    return CollectiveCost(float(latency), float(bandwidth))


def bus_bandwidth(op: str, nbytes: float, cluster: Cluster, n: int, stride: int = 1, algorithm: str = "auto") -> float:
    """nccl-tests' busbw (doc/PERFORMANCE.md) the model predicts for one collective: the bytes
    each rank moves over the time it takes."""
    cost = group_cost(op, nbytes, cluster, n, stride, algorithm)
    if cost.total_s == 0:
        return 0.0
    if op == "p2p":  # nccl-tests: busbw = algbw for point-to-point
        return nbytes / cost.total_s
    return _RING_SHARE[op] * (n - 1) / n * nbytes / cost.total_s
