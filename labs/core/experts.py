"""Mixture-of-experts layers: the experts' GEMMs under expert parallelism, and the all-to-alls
that move tokens to them (array-valued, like labs.core.step).

Expert parallelism (EP) spreads the routed experts over ep ranks of the data-parallel group
(Megatron-Core's expert_tensor_parallel_size = 1: experts are not split by TP). Each token is
routed to experts_per_token (k) experts; with balanced routing (DeepSeek-V3's auxiliary-loss-free
balancing) every local expert receives ep x tokens x k / experts tokens, so its GEMMs shrink as
experts multiply: grouped GEMMs of small M run below the large-GEMM rate (labs.core.gemm's
fixed cost per call). A capacity factor c pads every expert to c times the balanced load (and
drops what exceeds it), so the experts compute c times the balanced work.

Dispatch and combine (Lepikhin et al. 2020; DeepSeek-V3 Sec. 3.2.2): each token's hidden state
goes to the k experts' ranks and their outputs come back, once each in forward and again, as
gradients, in backward. Across nodes a token is sent once per destination node and fanned out
over NVLink there; node-limited routing caps the destination nodes at M (DeepSeek-V3: 4 of 8).
With k experts spread over N nodes a token reaches N (1 - (1 - 1/N)^k) distinct nodes on average.
The network part runs on each GPU's own NIC (every GPU of the node sends at once), the
NVLink part on NVLink; the slower sets the time. Not modelled: DualPipe's overlap of these
all-to-alls with compute (DeepSeek-V3 Sec. 3.2.1), so the engine exposes them all.
"""

from __future__ import annotations

import numpy as np

from labs.core.gemm import gemm_time
from labs.core.hardware import NCCL_BASE_LATENCY_S, Cluster
from labs.core.models import Model
from labs.core.topology import members_per_node


def ffn_forward_time(model: Model, cluster: Cluster, tokens, tp, ep, capacity, fp8):
    """Forward seconds of one layer's FFN (averaged over dense and MoE layers) on one GPU."""
    gpu, h = cluster.gpu, model.hidden
    dense = (gemm_time(gpu, tokens, model.ffn * (2 if model.gated_ffn else 1) / tp, h, fp8=fp8)
             + gemm_time(gpu, tokens, h, model.ffn / tp, fp8=fp8))
    if not model.experts:
        return dense
    local = tokens / tp  # each TP rank dispatches its sequence-parallel share
    per_expert = local * model.experts_per_token * ep / model.experts * np.where(capacity > 0, capacity, 1.0)
    local_experts = model.experts / ep
    f = model.expert_ffn
    routed = gemm_time(gpu, per_expert, 2 * f, h, local_experts, fp8) + gemm_time(gpu, per_expert, h, f, local_experts, fp8)
    shared_width = model.shared_experts * f
    shared = np.where(shared_width > 0, gemm_time(gpu, local, 2 * shared_width, h, fp8=fp8) + gemm_time(gpu, local, h, shared_width, fp8=fp8), 0.0)
    router = gemm_time(gpu, local, model.experts, h)
    return (1 - model.moe_share) * dense + model.moe_share * (routed + shared + router)


def destination_nodes(model: Model, nodes, max_nodes):
    """Distinct nodes a token's routed experts sit on, on average, capped by node-limited routing."""
    nodes = np.asarray(nodes, dtype=float)
    spread = nodes * (1 - (1 - 1 / nodes) ** model.experts_per_token)
    return np.where(max_nodes > 0, np.minimum(spread, max_nodes), spread)


def all_to_all_time(model: Model, cluster: Cluster, tokens, tp, ep, max_nodes, dispatch_bytes):
    """Seconds of one layer's dispatch + combine on one GPU (averaged over the layers), for
    `tokens` of this GPU's micro-batch; dispatch_bytes per element (1 in FP8, 2 in BF16),
    combine in BF16."""
    if not model.experts:
        return np.zeros_like(np.asarray(tokens, dtype=float))
    h, k = model.hidden, model.experts_per_token
    local = tokens / tp
    g = members_per_node(cluster, ep, tp)
    nodes = np.ceil(ep / g)
    remote = destination_nodes(model, nodes, max_nodes) * (nodes - 1) / nodes
    nic = cluster.inter_bytes_per_s_per_gpu
    nvlink = cluster.intra.effective_bytes_per_s
    total = 0.0
    for element in (dispatch_bytes, 2.0):  # dispatch, then combine
        network = local * remote * h * element / nic
        inside = local * k * h * element * np.where(g > 1, (g - 1) / g, 0.0) / nvlink
        latency = np.where(nodes > 1, cluster.inter.latency_s, cluster.intra.latency_s) + NCCL_BASE_LATENCY_S
        total = total + np.where(ep > 1, np.maximum(network, inside) + latency, 0.0)
    return model.moe_share * total
