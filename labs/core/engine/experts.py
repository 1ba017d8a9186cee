"""Mixture-of-experts layers: the experts' GEMMs under expert parallelism, and the all-to-alls
that move tokens to them (array-valued, like labs.core.engine.step).

Expert parallelism (EP) spreads the routed experts over ep ranks of the data-parallel group
(Megatron-Core's expert_tensor_parallel_size = 1: experts are not split by TP). Each token is
routed to experts_per_token (k) experts; with balanced routing (DeepSeek-V3's auxiliary-loss-free
balancing) every local expert receives ep x tokens x k / experts tokens, so its GEMMs shrink as
experts multiply. The local experts run as one grouped GEMM (labs.core.engine.gemm.grouped_gemm_time:
their tiles share the waves, each expert's M pads to the tile and each reads its own weights, so
at a few hundred tokens an expert the weights' bytes, not the FLOPs, set the time). A capacity
factor c pads every expert to c times the balanced load (and drops what exceeds it), so the
experts compute c times the balanced work. Without one (dropless), `skew` is the busiest rank's
expert load over the balanced one (Plan.expert_skew; 1: balanced, as the published recipes
force-balance; the step waits for the busiest rank, in its GEMMs and in its dispatch and combine).

Around the experts run memory-bound kernels (moe_pass_time), counted from Megatron-Core's
MoEAlltoAllTokenDispatcher (megatron/core/transformer/moe/token_dispatcher.py and moe_utils.py,
2024-25): the router's softmax and top-k over the experts' fp32 logits (about three passes, 12
bytes an expert), the permute that copies each token's hidden state to its k slots (read 2, write
2k bytes an element), after the dispatch a sort of the received chunks by local expert when a rank
holds more than one (read 2k, write 2k), and on the way back the unsort (2k + 2k) and the
unpermute that sums the k expert outputs weighted by the router's probabilities (read 2k, write
2). The backward moves the same bytes. The router, the permute and the unpermute run over the
rank's own tokens, which every rank holds alike; the sort and unsort run over the chunks the
rank received, so on the busiest rank they scale with its load (received_load: Plan.expert_skew,
capped by a capacity factor as the dispatch is), as its experts' GEMMs and its dispatch do.

Dispatch and combine (Lepikhin et al. 2020; DeepSeek-V3 Sec. 3.2.2): each token's hidden state
goes to the k experts' ranks and their outputs come back, once each in forward and again, as
gradients, in backward. Across nodes a token is sent once per destination node and fanned out
over NVLink there; node-limited routing caps the destination nodes at M (DeepSeek-V3: 4 of 8).
With k experts spread over N nodes a token reaches N (1 - (1 - 1/N)^k) distinct nodes on average.
"Node" here is the scale-up (NVLink) domain (Cluster.domain_gpus: EP 64 inside one NVL72 rack
stays on NVLink; node-limited routing across racks counts racks). The network part runs on each
GPU's own NIC (every GPU of the domain sends at once), the NVLink part on NVLink; the slower sets
the time. The step exposes them all, except under the
DualPipe schedule (DeepSeek-V3 Sec. 3.2.1), whose overlapped forward-and-backward pairs hide
each pass's all-to-alls behind the other pass's compute (labs.core.engine.stages.pipe).
"""

from __future__ import annotations

import numpy as np

from labs.core.engine.gemm import GROUPED_LAUNCH_SHARE, gemm_time, grouped_gemm_time
from labs.core.engine.hardware import NCCL_BASE_LATENCY_S, Cluster
from labs.core.engine.models import Model
from labs.core.engine.stages.xp import NUMPY
from labs.core.engine.topology import members_per_domain, scale_up_bytes_per_s
from labs.core.engine.validation import check_positive

# A stack that runs its experts as a loop of GEMM calls (Era.grouped_gemm "per_expert": the grouped_gemm
# library's cuBLAS backend, TE's GroupedLinear) leaves the GPU idle between the small GEMMs beside each
# kernel's own fixed cost (labs.core.engine.gemm.GemmKernel.fixed_s): the loop's host work. Fitted on the one
# row that times such a loop, tgale96/grouped_gemm PR #37's cuBLAS backend on H100 at Qwen3-30B-A3B's
# up-projection (ggemm_h100_qwen3_upproj_cublas_base_uniform: 128 calls of 512 x 1,536 x 2,048 at 129.5
# TFLOP/s, 24.9 us a call, against the engine's kernel alone, 17.8 us): 7.1 us a call, taken for every
# GPU and precision (unconfirmed: no second row times a per-expert loop).
PER_EXPERT_CALL_S = 7.1e-6


def ffn_forward_time(model: Model, cluster: Cluster, tokens, tp, ep, capacity, fp8, xp=NUMPY, skew=1.0, grouped="grouped", dense_gemms=None):
    """Forward seconds of one layer's FFN (averaged over dense and MoE layers) on one GPU: the
    busiest rank's, whose experts receive `skew` times the balanced load when nothing caps it;
    its local experts as the stack runs them (`grouped`: Era.grouped_gemm): one grouped launch at
    its kernel's share (gemm.GROUPED_LAUNCH_SHARE), or ("per_expert") a GEMM call each with the
    loop's PER_EXPERT_CALL_S beside it.
    dense_gemms: dense_ffn_gemm_times, when the caller has them."""
    gpu, h = cluster.gpu, model.hidden
    fc1, fc2 = dense_ffn_gemm_times(model, cluster, tokens, tp, fp8, xp) if dense_gemms is None else dense_gemms
    dense = fc1 + fc2
    if not model.experts:
        return dense
    local = tokens / tp  # each TP rank dispatches its sequence-parallel share
    per_expert = local * model.experts_per_token * ep / model.experts * xp.where(capacity > 0, capacity, skew)
    local_experts = model.experts / ep
    f = model.expert_ffn
    if grouped != "per_expert":
        routed = (grouped_gemm_time(gpu, per_expert, 2 * f, h, local_experts, fp8, xp)
                  + grouped_gemm_time(gpu, per_expert, h, f, local_experts, fp8, xp)) / GROUPED_LAUNCH_SHARE[grouped]
    else:
        routed = (gemm_time(gpu, per_expert, 2 * f, h, local_experts, fp8, xp) + gemm_time(gpu, per_expert, h, f, local_experts, fp8, xp)
                  + 2 * local_experts * PER_EXPERT_CALL_S)
    shared_width = model.shared_experts * f
    shared = xp.where(shared_width > 0, gemm_time(gpu, local, 2 * shared_width, h, fp8=fp8, xp=xp) + gemm_time(gpu, local, h, shared_width, fp8=fp8, xp=xp), 0.0)
    router = gemm_time(gpu, local, model.experts, h, xp=xp)
    return (1 - model.moe_share) * dense + model.moe_share * (routed + shared + router)


def dense_ffn_gemm_times(model: Model, cluster: Cluster, tokens, tp, fp8, xp=NUMPY):
    """Forward seconds of a dense FFN's two GEMMs on one GPU: (the column-parallel first, gate and
    up for SwiGLU; the row-parallel second)."""
    gpu, h = cluster.gpu, model.hidden
    return (gemm_time(gpu, tokens, model.ffn * (2 if model.gated_ffn else 1) / tp, h, fp8=fp8, xp=xp),
            gemm_time(gpu, tokens, h, model.ffn / tp, fp8=fp8, xp=xp))


def received_load(capacity, skew, xp=NUMPY):
    """The busiest EP rank's received tokens over the balanced count: `skew` (Plan.expert_skew),
    less what a capacity factor drops before the dispatch (Megatron-Core drops over capacity in
    the router, before the all-to-all)."""
    return xp.where(capacity > 0, xp.minimum(skew, capacity), skew)


def moe_pass_bytes(model: Model, tokens, tp, ep, xp=NUMPY, load=1.0):
    """HBM bytes one GPU's router, permute, sort and unpermute kernels move in one layer's forward
    (averaged over the layers; the backward moves as many): the module docstring's count, the sort
    and unsort of the received chunks at `load` (received_load) times the balanced tokens."""
    if not model.experts:
        return xp.full_like(tokens, 0.0)
    h, k = model.hidden, model.experts_per_token
    local = tokens / tp
    # received chunks sorted by local expert (sort_chunks_by_idxs with sort_input_by_local_experts, read
    # 2k, write 2k) and unsorted on the way back (restore_output_by_local_experts, 2k + 2k)
    sort = xp.where((ep > 1) & (ep < model.experts), (2.0 + 2.0) * k + (2.0 + 2.0) * k, 0.0) * load
    per_token = 12.0 * model.experts + (2.0 + 2.0 * k) * h + (2.0 * k + 2.0) * h + sort * h
    return model.moe_share * local * per_token


def moe_pass_time(model: Model, cluster: Cluster, tokens, tp, ep, xp=NUMPY, load=1.0):
    """Seconds of moe_pass_bytes at the GPU's streaming HBM rate."""
    gpu = cluster.gpu
    return moe_pass_bytes(model, tokens, tp, ep, xp, load) / (gpu.hbm_bytes_per_s * gpu.hbm_efficiency)


def destination_nodes(model: Model, nodes, max_nodes, xp=NUMPY):
    """Distinct nodes a token's routed experts sit on, on average, capped by node-limited routing."""
    nodes = xp.floats(nodes)
    spread = nodes * (1 - (1 - 1 / nodes) ** model.experts_per_token)
    return xp.where(max_nodes > 0, xp.minimum(spread, max_nodes), spread)


def all_to_all_time(model: Model, cluster: Cluster, tokens, tp, ep, max_nodes, dispatch_bytes, stride=None):
    """Seconds of one layer's dispatch + combine on one GPU (averaged over the layers), for
    `tokens` of this GPU's micro-batch; dispatch_bytes per element (1 in FP8, 2 in BF16),
    combine in BF16. `stride`: ranks between the EP group's members (None: tp, Megatron's
    order; labs.core.engine.layout.axis_strides for another)."""
    return all_to_all_cost(model, cluster, tokens, tp, ep, max_nodes, dispatch_bytes, stride)[0]


def _routes(model: Model, cluster: Cluster, tp, ep, max_nodes, stride=None, xp=NUMPY):
    """(NVLink domains the EP group spans, copies of a token's vector sent over the NICs, copies
    forwarded over NVLink inside the domain), per token: one network copy per other destination domain
    (DeepSeek-V3 Sec. 3.2.2: IB to the same-index GPU, then NVLink to the experts' GPUs), and
    the k experts' copies fanned out to the node's other members."""
    g = members_per_domain(cluster, ep, tp if stride is None else stride, xp)
    nodes = xp.ceil(ep / g)
    remote = destination_nodes(model, nodes, max_nodes, xp) * (nodes - 1) / nodes
    return nodes, remote, model.experts_per_token * xp.where(g > 1, (g - 1) / g, 0.0)


def all_to_all_network_share(model: Model, cluster: Cluster, tp, ep, max_nodes, stride=None):
    """Share of the dispatch and combine bytes one GPU sends that crosses the NICs; the rest is
    NVLink forwarding inside its node (all_to_all_cost sums both)."""
    _, remote, fan_out = _routes(model, cluster, tp, ep, max_nodes, stride)
    both = remote + fan_out
    return np.where(both > 0, remote / np.where(both > 0, both, 1.0), 0.0)


def all_to_all_cost(model: Model, cluster: Cluster, tokens, tp, ep, max_nodes, dispatch_bytes, stride=None, xp=NUMPY, link_share=(1.0, 1.0)):
    """(seconds, bytes sent) of one layer's dispatch + combine on one GPU, averaged over the
    layers: all_to_all_time's terms, with the bytes the GPU puts on the NICs and on NVLink.
    `link_share`: (NVLink, NIC) rate of the stack's kernels over the link's achieved one
    (labs.core.engine.eras: a2a_link_share)."""
    if not model.experts:
        zero = xp.full_like(tokens, 0.0)
        return zero, zero
    h = model.hidden
    local = tokens / tp
    nodes, remote, fan_out = _routes(model, cluster, tp, ep, max_nodes, stride, xp)
    nic = cluster.inter_bytes_per_s_per_gpu * link_share[1]
    # NVLink through a switch; on a full mesh (xGMI) the g - 1 links to the domain's other members
    nvlink = scale_up_bytes_per_s(cluster, members_per_domain(cluster, ep, tp if stride is None else stride, xp), xp) * link_share[0]
    total = sent = 0.0
    for element in (dispatch_bytes, 2.0):  # dispatch, then combine
        network_bytes = local * remote * h * element
        inside_bytes = local * fan_out * h * element
        latency = xp.where(nodes > 1, cluster.inter.latency_s, cluster.intra.latency_s) + NCCL_BASE_LATENCY_S
        total = total + xp.where(ep > 1, xp.maximum(network_bytes / nic, inside_bytes / nvlink) + latency, 0.0)
        sent = sent + xp.where(ep > 1, network_bytes + inside_bytes, 0.0)
    return model.moe_share * total, model.moe_share * sent


# ---- capacity factor and dropping (Lepikhin et al. 2020, GShard Sec. 2.2; Fedus et al. 2021,
# Switch Transformer Sec. 2.2: expert capacity = c x tokens x k / experts) --------------------
def tokens_per_expert(model: Model, tokens: float, ep: int) -> float:
    """Tokens each routed expert receives from one micro-batch of `tokens` tokens per EP rank
    under balanced routing: ep x tokens x k / experts (the expert sees all ep ranks' tokens)."""
    if not isinstance(model, Model):
        raise ValueError(f"model must be a Model, got {model!r}")
    check_positive("tokens", tokens, maximum=1e12)
    check_positive("ep", ep, integer=True, maximum=1 << 20)
    if not model.experts:
        raise ValueError(f"tokens_per_expert needs a mixture-of-experts model; {model.name} is dense")
    return ep * tokens * model.experts_per_token / model.experts


def poisson_drop_fraction(mean_tokens: float, capacity_factor: float) -> float:
    """Share of routed tokens an expert drops when its load is Poisson with mean lambda (a router
    balanced in expectation, each token's choice independent) and it keeps at most
    floor(c lambda): E[max(X - C, 0)] / lambda = 1 - (C P(X > C) + sum_{x <= C} x P(x)) / lambda."""
    from math import exp, floor, lgamma, log, sqrt

    check_positive("mean_tokens", mean_tokens, maximum=1e6)
    check_positive("capacity_factor", capacity_factor, maximum=1024)
    if capacity_factor < 1:
        raise ValueError(f"capacity_factor must be at least 1 (1: exactly the balanced load), got {capacity_factor!r}")
    cap = floor(capacity_factor * mean_tokens)
    if cap >= mean_tokens + 40 * sqrt(mean_tokens) + 100:  # beyond 40 standard deviations: nothing is dropped
        return 0.0
    kept, below = 0.0, 0.0
    for x in range(cap + 1):
        p = exp(x * log(mean_tokens) - mean_tokens - lgamma(x + 1))
        kept += x * p
        below += p
    kept += cap * max(0.0, 1.0 - below)
    return max(0.0, 1.0 - kept / mean_tokens)
