"""TP, CP and EP stage: the communication inside one layer, per micro-batch.

- TP: two collectives of b s h activations per pass (all-reduces, or all-gather + reduce-scatter
  under SP); under SP Megatron's and TE's backward all-gathers the column-parallel linears' inputs
  once more for their weight gradients (SP_BACKWARD_REGATHERS, beside the input-gradient GEMM).
  Megatron-LM 2021-22 ran the others on the critical path; from late 2022 Megatron's and TE's
  column-parallel linears run the backward's input-gradient collective beside their
  weight-gradient GEMM (Era.dgrad_comm_behind_wgrad). With tp_comm_overlap (Transformer Engine
  userbuffers, inside an NVLink domain, with SP) the all-gathers hide behind their GEMMs by ring
  exchange, the pipelined reduce-scatters expose one of TP_OVERLAP_SPLITS chunks, and the
  overlapped GEMMs lose TP_OVERLAP_SMS of the GPU's SMs (TE's defaults,
  transformer_engine/pytorch/module/base.py initialize_ub; NeMo communication_overlap.rst).
- CP: Transformer Engine's ring, Llama 3's all-gather, or DeepSpeed-Ulysses' all-to-alls.
- EP: the routed tokens' dispatch and combine (labs.core.engine.experts), exposed in full here;
  labs.core.engine.stages.pipe hides part of them under the DualPipe schedule.
"""

from __future__ import annotations

from types import SimpleNamespace

from labs.core.engine.context import ulysses_qkv_bytes
from labs.core.engine.experts import all_to_all_cost, received_load
from labs.core.engine.gemm import GEMM_FIXED_S
from labs.core.engine.topology import collective_columns, members_per_domain

ACTIVATION_BYTES = 2  # bf16 activations sent between TP ranks and pipeline stages
# Transformer Engine userbuffers defaults: pipelined reduce-scatter in 4 chunks on 16 SMs, bulk
# overlaps on 16 SMs with set_sm_margin (the GEMM runs on the rest); ring-exchange all-gathers on
# the copy engines. About half the layer's GEMM time runs beside a communication kernel (forward
# proj and fc2, backward QKV and fc1 dgrad/wgrad).
TP_OVERLAP_SPLITS = 4
TP_OVERLAP_SMS = 16
TP_OVERLAPPED_GEMM_SHARE = 0.5
# Overlap is not free for NCCL either: each channel of a collective runs one CTA on an SM of its
# own, which compute kernels do not share while it runs (sjeaugey, NVIDIA/nccl #689). A ring
# across DGX H100 nodes runs 16 channels ("Channel 05/16", NVIDIA/nccl #1453); send/recv runs
# NCCL_NCHANNELS_PER_NET_PEER = 2 (NVIDIA/nccl #1424). Compute that runs beside a DP/ZeRO
# collective, or beside the CP ring's K/V hops, loses those SMs, as TP overlap loses its 16.
# EP's all-to-all runs beside compute only under DualPipe (labs.core.engine.stages.pipe charges it).
NCCL_COLLECTIVE_SMS = 16
# Under SP Megatron's column-parallel linear (megatron/core/tensor_parallel/layers.py,
# LinearWithGradAccumulationAndAsyncCommunication) saves only its sequence shard of the input, and
# its backward all-gathers it again for the weight gradient: launched async before the
# input-gradient GEMM ("we rely on CUDA_DEVICE_MAX_CONNECTIONS=1 to ensure that the gather is
# scheduled before the input gradient computation"), waited for before the weight-gradient GEMM.
# Two a dense layer: attention's QKV and the MLP's first linear (TE's LayerNormLinear the same,
# ub_bulk_dgrad under userbuffers). An MoE layer's routed experts receive their tokens by the
# dispatch and keep them: its FFN re-gathers nothing (Era.sp_regathers_input: which stacks).
SP_BACKWARD_REGATHERS = 2
NCCL_P2P_SMS = 2
# ... and HBM: a collective reads and writes the bytes it moves in the HBM the compute beside it
# reads (a ring step reads the local chunk, the received one, and writes the sum), which slows the
# memory-bound kernels running with it (norms, activations, optimizer, attention's softmax parts).
# Measured, as a whole: Lee et al. 2025 (arXiv:2507.03114, "Characterizing Compute-Communication
# Overlap in GPU-Accelerated Distributed Deep Learning", 4x A100, H100, MI250, MI210, GPT and
# LLaMA layers beside NCCL/RCCL collectives) find compute 18.9% slower on average while a
# collective runs beside it (40.0% at most). The SMs above account for 16/(132-16) = 13.8% of it
# on an H100; the remaining 5% of the hidden time is charged here as HBM contention. Unconfirmed:
# the paper does not split its slowdown into SMs, HBM and clocks, nor is its NCCL's channel count
# the 16 assumed above; the rest is charged as HBM, a small, bounded share, for every GPU alike.
OVERLAP_HBM_SLOWDOWN = 0.189 - 16 / (132 - 16)  # = 0.051 of the hidden seconds


def overlap_contention(sms, hidden_s, taken):
    """Extra compute time when `hidden_s` of communication ran beside compute on `taken` of the
    GPU's `sms` SMs: that compute ran at (sms - taken) / sms of its speed, and lost
    OVERLAP_HBM_SLOWDOWN of the hidden seconds to the HBM traffic of the communication."""
    return hidden_s * (sms / (sms - taken) - 1 + OVERLAP_HBM_SLOWDOWN)


def _seconds(op, nbytes, cluster, n, stride, xp):
    """Latency plus bandwidth seconds of one collective (labs.core.engine.topology.collective_columns)."""
    latency, bandwidth = collective_columns(op, nbytes, cluster, n, stride, xp=xp)
    return latency + bandwidth


def _context_parallel(model, cluster, p, attn_f, attn_b, xp):
    """CP's terms per layer and micro-batch: the ring's K/V block and its hop (kv_block,
    step_p2p), the all-gather's K and V (kv, gather_f, gather_b), Ulysses' blocks and pass
    (qkv_block, out_block, ulysses_pass), and the seconds the step waits for (cp_total)."""
    gpu, tp, cp, b, s, s_cp, redo = cluster.gpu, p.tp, p.cp, p.b, p.s, p.s_cp, p.redo
    # Context parallelism, causal load-balanced (each rank holds two mirrored chunks): either
    # Transformer Engine's ring, passing K and V blocks to the next rank while attention runs on
    # the current one (backward passes dK and dV too), or Llama 3's all-gather of K and V before
    # attention (and a reduce-scatter of their gradients after), exposed.
    kv_block = 2 * b * s * model.kv_dim / tp * ACTIVATION_BYTES
    step_p2p = _seconds("p2p", xp.where(p.cp_ring & (cp > 1), kv_block, 0.0), cluster, 2, s_cp, xp)
    ring_f = (cp - 1) * xp.maximum(step_p2p - attn_f / cp, 0.0)
    ring_b = (cp - 1) * xp.maximum(2 * step_p2p - attn_b / cp, 0.0)
    # the hops' hidden time (behind attention) slows that attention: it runs without NCCL's SMs
    ring_f = ring_f + overlap_contention(gpu.sms, (cp - 1) * xp.minimum(step_p2p, attn_f / cp), NCCL_P2P_SMS)
    ring_b = ring_b + overlap_contention(gpu.sms, (cp - 1) * xp.minimum(2 * step_p2p, attn_b / cp), NCCL_P2P_SMS)
    kv = 2 * b * p.s_full * model.kv_dim / tp * ACTIVATION_BYTES
    gather_f = _seconds("all_gather", kv, cluster, cp, s_cp, xp)
    gather_b = _seconds("reduce_scatter", kv, cluster, cp, s_cp, xp)
    # DeepSpeed-Ulysses (Jacobs et al. 2023): an all-to-all of Q, K and V from s/cp tokens x all
    # heads to s tokens x heads/cp before attention and one of the output back, exposed; the
    # backward runs the same two on the gradients. Q and the output are score_dim wide.
    qkv_block = ulysses_qkv_bytes(model, b * s, tp, cp, ACTIVATION_BYTES, xp)  # K/V repeated where a TP rank has fewer K/V heads than cp
    out_block = b * s * model.score_dim / tp * ACTIVATION_BYTES
    ulysses_pass = _seconds("all_to_all", qkv_block, cluster, cp, s_cp, xp) + _seconds("all_to_all", out_block, cluster, cp, s_cp, xp)
    cp_f = xp.where(cp > 1, xp.where(p.cp_ulysses, ulysses_pass, xp.where(p.cp_ring, ring_f, gather_f)), 0.0)
    cp_b = xp.where(cp > 1, xp.where(p.cp_ulysses, ulysses_pass, xp.where(p.cp_ring, ring_b, gather_b)), 0.0)
    return kv_block, step_p2p, kv, gather_f, gather_b, qkv_block, out_block, ulysses_pass, cp_f + cp_b + redo * cp_f


def layer_communication(model, cluster, stack, p, layer, xp) -> SimpleNamespace:
    """Per layer and micro-batch: TP's collectives and what of them the step waits for
    (tp_exposed), CP's (cp_total), EP's all-to-alls (layer_a2a), and their sum (layer_comm);
    with the message sizes the communication map counts."""
    gpu, h = cluster.gpu, model.hidden
    tp, cp, b, s, s_tp, s_cp, redo = p.tp, p.cp, p.b, p.s, p.s_tp, p.s_cp, p.redo
    t = SimpleNamespace()
    t.act = p.tokens * h * ACTIVATION_BYTES
    # A collective is priced on the bytes of the rows that use it, on none elsewhere: the same
    # numbers, and one plan skips what it does not run (collective_columns returns 0 for 0 bytes).
    all_reduce = _seconds("all_reduce", xp.where(p.sp, 0.0, t.act), cluster, tp, s_tp, xp)
    sp_act = xp.where(p.sp, t.act, 0.0)
    gather = _seconds("all_gather", sp_act, cluster, tp, s_tp, xp)
    scatter = _seconds("reduce_scatter", sp_act, cluster, tp, s_tp, xp)
    gather_scatter = gather + scatter
    t.tp_pass = 2 * xp.where(p.sp, gather_scatter, all_reduce)
    # SP's backward re-gathers (SP_BACKWARD_REGATHERS): QKV's input in every layer, the FFN's in
    # the dense ones, each beside its own input-gradient GEMM (as long as the forward GEMM), whose
    # SMs NCCL's kernel shares; what outlasts the GEMM the weight-gradient GEMM waits for.
    dense_share = 1.0 - model.moe_share
    t.regathers = xp.where(p.sp & (tp > 1), SP_BACKWARD_REGATHERS - model.moe_share, 0.0) if stack.sp_regathers_input else 0.0 * tp
    t.regather_s = t.regathers * gather
    regather_hidden = xp.minimum(gather, layer.qkv_f) + dense_share * xp.minimum(gather, layer.fc1_f)
    regather_exposed = (xp.maximum(gather - layer.qkv_f, 0.0) + dense_share * xp.maximum(gather - layer.fc1_f, 0.0)
                        + overlap_contention(gpu.sms, regather_hidden, NCCL_COLLECTIVE_SMS))
    regather_exposed = xp.where(t.regathers > 0, regather_exposed, 0.0)
    # The column-parallel linears' backward (Era.dgrad_comm_behind_wgrad: Megatron's
    # LinearWithGradAccumulationAndAsyncCommunication.backward, TE's "Overlap dgrad-RS/AR with
    # wgrad") launches its input gradient's all-reduce (reduce-scatter under SP) async and runs the
    # weight-gradient GEMM (as long as the forward GEMM) meanwhile: QKV's in every layer, the FFN's
    # first in the dense ones (an MoE layer's tokens leave through its dispatcher, waited for). What
    # outlasts the GEMM is waited for; what hid slowed the GEMM beside it (NCCL's SMs, HBM).
    if stack.dgrad_comm_behind_wgrad:
        dgrad_comm = xp.where(p.sp, scatter, all_reduce)
        dgrad_hidden = xp.minimum(dgrad_comm, layer.qkv_f) + dense_share * xp.minimum(dgrad_comm, layer.fc1_f)
        dgrad_saved = dgrad_hidden - overlap_contention(gpu.sms, dgrad_hidden, NCCL_COLLECTIVE_SMS)
    else:
        dgrad_saved = 0.0 * tp
    t.tp_total = t.tp_pass * (2 + redo) + t.regather_s
    # Context parallelism, run only where cp > 1 (elsewhere its terms are 0: _context_parallel)
    (t.kv_block, t.step_p2p, t.kv, t.gather_f, t.gather_b, t.qkv_block, t.out_block, t.ulysses_pass, t.cp_total) = xp.only_if(
        cp > 1, _context_parallel, (model, cluster, p, layer.attn_f, layer.attn_b, xp), (0.0,) * 9)
    tp_in_node = members_per_domain(cluster, tp, s_tp, xp) >= tp  # the TP group inside one NVLink domain
    t.overlap = p.tp_overlap & p.sp & (tp > 1) & tp_in_node
    gemm_f = layer.gemm_f
    gemm_all = gemm_f * (3 + redo)
    contention = gemm_all * TP_OVERLAPPED_GEMM_SHARE * (gpu.sms / (gpu.sms - TP_OVERLAP_SMS) - 1)
    # userbuffers: the re-gathers are bulk overlaps (ub_bulk_dgrad), only the pipelined reduce-scatters leave a chunk exposed
    t.tp_exposed = xp.where(t.overlap, xp.maximum(t.tp_total - gemm_all, 0.5 * (t.tp_total - t.regather_s) / TP_OVERLAP_SPLITS) + contention,
                            t.tp_total - t.regather_s + regather_exposed - dgrad_saved)
    if stack.tp_overlap_kind == "async_tp":
        # PyTorch's AsyncTP (torch.distributed._symmetric_memory, applied by a torch.compile pass
        # to the forward graph's all-gather -> matmul and matmul -> reduce-scatter patterns) splits
        # each into tp steps on the copy engines, taking no SMs: the first step waits, and each GEMM
        # runs as tp smaller ones, each paying its launch (labs.core.engine.gemm.GEMM_FIXED_S). Its
        # authors report forward-pass gains (PyTorch dev-discuss, "Introducing Async Tensor
        # Parallelism", 2024); the engine leaves the backward's collectives exposed (unconfirmed).
        forward_tp = t.tp_pass * (1 + redo)
        split_gemms = 4 * (1 + redo) * (tp - 1) * GEMM_FIXED_S
        hidden_forward = xp.maximum(forward_tp - gemm_f * (1 + redo), forward_tp / tp) + split_gemms
        t.tp_exposed = xp.where(t.overlap, hidden_forward + (t.tp_total - forward_tp), t.tp_total)
    # The busiest rank receives p.expert_skew times the balanced dispatch and sends as much back,
    # and every rank waits for it; a capacity factor drops what exceeds it before the dispatch.
    load = received_load(p.capacity, p.expert_skew, xp)
    a2a, t.a2a_sent = all_to_all_cost(model, cluster, p.tokens * load, tp, p.ep, p.max_nodes, xp.where(p.fp8, 1.0, 2.0), p.s_cp, xp, stack.a2a_link_share)
    t.layer_a2a = a2a * (2 + redo)  # dispatch + combine, forward and backward (and the re-run forward)
    t.layer_comm = t.tp_exposed + t.cp_total + t.layer_a2a
    return t

