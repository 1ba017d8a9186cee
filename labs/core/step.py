"""The one step model: a training step's time and memory, over numpy columns.

`estimate()` evaluates one plan through `evaluate` (columns of length one) and `sweep()` evaluates
the whole plan space through it; no formula of the step exists anywhere else.

step time = pipeline compute with its bubble
          + exposed TP (and CP) communication
          + exposed PP send/recv
          + exposed DP / ZeRO communication
          + the optimizer step (or ZeRO-Offload's copies and CPU Adam)

One layer, one micro-batch, one GPU:
- GEMMs by shape (labs.core.gemm): QKV, attention projection, FFN in (gate and up for SwiGLU),
  FFN out; backward runs each twice (input and weight gradients).
- Attention core: without flash attention, two batched GEMMs per head plus the s x s softmax and
  dropout through HBM; with it, one fused kernel doing the causal half of the work.
- Element-wise work streams ELEMENTWISE_TRAFFIC x the activation bytes the layer writes
  (Korthikanti's count) through HBM.
- TP: two collectives of b s h activations per pass (all-reduces, or all-gather + reduce-scatter
  under SP). Megatron-LM 2021-22 ran them on the critical path; with tp_comm_overlap
  (Transformer Engine userbuffers, inside an NVLink domain, with SP) the all-gathers hide behind
  their GEMMs by ring exchange, the pipelined reduce-scatters expose one of TP_OVERLAP_SPLITS
  chunks, and the overlapped GEMMs lose TP_OVERLAP_SMS of the GPU's SMs (TE's defaults,
  transformer_engine/pytorch/module/base.py initialize_ub; NeMo communication_overlap.rst).
MFU counts model FLOPs (labs.core.models.Model.flops_per_sequence: all of attention's s^2 work
without flash attention, its causal half with it); HFU adds what is recomputed.
"""

from __future__ import annotations

import numpy as np

from labs.core.context import contiguous_imbalance_columns, ulysses_qkv_bytes
from labs.core.experts import all_to_all_cost, ffn_forward_time
from labs.core.eras import Era, kernels_per_layer, loss_bytes_per_logit, stack_of
from labs.core.gemm import GEMM_FIXED_S, flash_attention_time, gemm_time, unfused_elementwise_ratio
from labs.core.hardware import Cluster
from labs.core.memory import GRAD_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES, fp8_activation_savings, fp8_norms_up_proj_savings, in_flight_columns, layer_activation_columns, model_state_columns
from labs.core.models import ALL_RECOMPUTE_MODES, RECOMPUTE_MODES, Model
from labs.core.pipeline import SCHEDULES, idle_time, message_idle
from labs.core.layout import axis_strides
from labs.core.topology import collective_columns, members_per_node

ACTIVATION_BYTES = 2  # bf16 activations sent between TP ranks and pipeline stages
# HBM bytes the element-wise ops move per pass, per byte of activations the layer writes. Fitted
# with labs.core.gemm.LAYER_GEMM_SHARE on Korthikanti Table 4's baseline row (forward 7.7 ms,
# backward 11.9 ms): labs.core.calibration.fit_layer_constants.
ELEMENTWISE_TRAFFIC = 2.2
# Megatron-LM's mixed-precision Adam step moves, per parameter it updates: zero the fp32 main
# gradient (4), read it for the global norm (4), Adam reads master, m, v, gradient and writes
# master, m, v (28), then copies the master into the bf16 weight (4 + 2) = 42 bytes: the Megatron
# stacks' figure; others move their own (labs.core.eras.Era.optimizer_bytes_per_param).
OPTIMIZER_BYTES_PER_PARAM = 42
# CPU Adam (ZeRO-Offload) streams, per parameter of its shard: the bf16 gradient in (2), the
# master weight and both moments read and written (2 x 12 in fp32), the bf16 weight out (2).
CPU_ADAM_BYTES_PER_PARAM = GRAD_BYTES + 2 * OPTIMIZER_BYTES + WEIGHT_BYTES
# The runtime's own memory, in parts:
# - the driver and the CUDA context with lazily loaded kernels: an H100 80GB shows 81,559 MiB in
#   nvidia-smi and 79.11 GiB to torch (gpu-burn #114), 0.54 GiB the driver keeps; the context and
#   kernels took 0.47 GiB on an A100 with lazy loading, PyTorch 2.1 (stas00/ml-engineering
#   training/performance/README.md): 1.01 GiB.
CUDA_CONTEXT_BYTES = 1.01 * 2**30
# - NCCL: 688 MB per process group of more than two GPUs (4 MB all-reduce, NVIDIA/nccl #964), one
#   per parallel axis in use; NVLS buffers 16 channels x 2 x 128 KiB x 8 steps x 8 local ranks =
#   256 MiB from NCCL 2.21 (src/transport/nvls.cc).
NCCL_COMMUNICATOR_BYTES = 688 * 2**20
NCCL_NVLS_BYTES = 256 * 2**20
# - Transformer Engine userbuffers under tp_comm_overlap: 12 bf16 buffers of (s/cp x b, h)
#   (transformer_engine/pytorch/module/base.py initialize_ub, the default configuration).
TP_OVERLAP_BUFFERS = 12
# - caching-allocator fragmentation: 15% on average across eight LLM trainings on A100 80GB
#   (GMLake, ASPLOS 2024), charged on the activations, the memory the allocator churns
#   (Megatron keeps weights, gradients and optimizer state in persistent contiguous buffers).
FRAGMENTATION = 0.15
# Megatron-LM's DDP bucket: max(40M, 1M x dp) parameters (DistributedDataParallelConfig).
MEGATRON_BUCKET_PARAMS = 40_000_000
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
# Not charged: the HBM bandwidth the NCCL kernels take from memory-bound compute, and EP's
# all-to-all, which the engine exposes in full (nothing runs beside it).
NCCL_COLLECTIVE_SMS = 16
NCCL_P2P_SMS = 2


def overlap_contention(sms, hidden_s, taken):
    """Extra compute time when `hidden_s` of communication ran beside compute on `taken` of the
    GPU's `sms` SMs: that compute ran at (sms - taken) / sms of its speed."""
    return hidden_s * (sms / (sms - taken) - 1)
# ZeRO-3's all-gathers per layer and pass (labs.core.eras.Era.zero3_unit). DeepSpeed's stage 3
# gathers each weight of at least stage3_param_persistence_threshold (1e5) elements on its own:
# the four weight matrices of a Megatron layer (QKV, projection, fc1, fc2; biases and norms stay
# whole); its activation checkpointing re-runs the forward hooks, so with full recompute it
# gathers a third time. "module": the same four, asynchronous and prefetched. FSDP gathers one flat parameter per wrapped block, once in forward and
# once in backward (the recompute runs inside the backward's unsharded block).
ZERO3_GATHERS_PER_LAYER = {"parameter": 4, "module": 4, "layer": 1}

_FULL, _SELECTIVE, _NONE = (RECOMPUTE_MODES.index(x) for x in ("full", "selective", "none"))
_OPS, _NORMS_UP = (ALL_RECOMPUTE_MODES.index(x) for x in ("ops", "norms_up_proj"))


def _col(c, key, dtype=float):
    return np.asarray(c[key], dtype=dtype)


def _plus(a, b):
    return a[0] + b[0], a[1] + b[1]


def stage_layers(L, pp, v, first, last):
    """(layers, holds the embedding, holds the output layer) for the first, a middle and the last
    rank, stacked on a leading axis of 3. first/last < 0: that end takes the even share."""
    pp = np.asarray(pp, dtype=float)
    even = np.ceil(L / (pp * v)) * v
    custom = (first >= 0) | (last >= 0)
    f = np.where(first >= 0, first, np.where(pp == 2, L - np.maximum(last, 0), even))
    e = np.where(last >= 0, last, np.where(pp == 2, L - f, even))
    middle = np.where(custom, np.ceil((L - f - e) / np.maximum(pp - 2, 1)), even)
    layers = np.stack([
        np.where(pp == 1, L, np.where(custom, f, even)),
        np.where(pp == 1, L, np.where(pp == 2, np.where(custom, e, even), middle)),
        np.where(pp == 1, L, np.where(custom, e, even)),
    ])
    ones = np.ones_like(pp)
    single = np.where(pp == 1, 1.0, 0.0)
    first_rank = np.stack([ones, single, single])
    last_rank = np.stack([single, np.where(pp <= 2, 1.0, 0.0), ones])
    return layers, first_rank, last_rank


def evaluate(model: Model, cluster: Cluster, c: dict, dp_algorithm: str = "auto", stack: Era | None = None) -> dict[str, np.ndarray]:
    """Every number of an Estimate for each row of the plan columns `c` (validated upstream).

    c holds tp, pp, dp, cp, micro_batch, global_batch, zero_stage, recompute (code into
    RECOMPUTE_MODES), sequence_parallel, schedule (code into SCHEDULES), virtual_stages,
    flash_attention, tp_comm_overlap, grad_fp32, dp_overlap, pp_overlap, bucket_bytes (0: Megatron's),
    optimizer_bytes (per parameter) and offload; rank_order (code into labs.core.layout.RANK_ORDERS,
    0 when absent: Megatron's order) places every group's ranks and so picks its links.

    Besides the per-axis totals it returns each collective's own numbers (coll_<name>_calls,
    _sent_bytes, _wire_s, _exposed_s, _group, _members_per_node for tp, cp, ep, pp, dp_reduce
    and dp_gather): the communication map, from the same terms the step time adds up."""
    gpu = cluster.gpu
    stack = stack_of(None) if stack is None else stack  # the software's kernels (labs.core.eras)
    torch_compile = _col(c, "torch_compile", bool) if "torch_compile" in c else np.zeros(np.shape(c["tp"]), dtype=bool)
    # grad_sync codes index labs.core.eras.GRAD_SYNCS: 0 the ZeRO stage's own, 1 once a step, 2 every micro-batch
    grad_sync = _col(c, "grad_sync", int) if "grad_sync" in c else np.zeros(np.shape(c["tp"]), dtype=int)
    tp, pp, dp, cp, b, gb, v = (_col(c, k) for k in ("tp", "pp", "dp", "cp", "micro_batch", "global_batch", "virtual_stages"))
    zero, rc, sched = (_col(c, k, int) for k in ("zero_stage", "recompute", "schedule"))
    sp, flash, tp_overlap, grad_fp32, dp_overlap, pp_overlap, offload = (
        _col(c, k, bool) for k in ("sequence_parallel", "flash_attention", "tp_comm_overlap", "grad_fp32", "dp_overlap", "pp_overlap", "offload"))
    if not stack.pipeline_overlaps_dp:  # the stack reduces gradients after a pipeline's flush
        dp_overlap = dp_overlap & (pp == 1)
    bucket_bytes, opt_bytes = _col(c, "bucket_bytes"), _col(c, "optimizer_bytes")
    cp_ring = _col(c, "cp_ring", bool)
    # Absent columns (older callers): Ulysses off, the ring's split load-balanced.
    cp_ulysses = _col(c, "cp_ulysses", bool) if "cp_ulysses" in c else np.zeros(np.shape(tp), dtype=bool)
    cp_contiguous = _col(c, "cp_contiguous", bool) if "cp_contiguous" in c else np.zeros(np.shape(tp), dtype=bool)
    fp8 = _col(c, "fp8", bool)
    ep, capacity, max_nodes = _col(c, "ep"), _col(c, "capacity_factor"), _col(c, "max_nodes_per_token")
    # FSDP that keeps the gathered weights through the step (Llama 3: reshard_after_forward=False)
    # has ZeRO-2's memory and traffic: sharded gradients and optimizer, one weight gather a step.
    zero = np.where((zero == 3) & ~_col(c, "reshard_after_forward", bool), 2, zero)
    m = gb / (b * dp)
    order = _col(c, "rank_order", int) if "rank_order" in c else np.zeros(np.shape(tp), dtype=int)
    stride = axis_strides(order, tp, cp, dp, pp)
    s_tp, s_cp = stride["tp"], stride["cp"]  # the data-parallel group (dp x cp) starts at CP's stride
    h, a, L, V = model.hidden, model.heads, model.layers, model.vocab
    s_full = float(model.seq_len)
    s = s_full / cp
    tokens = b * s
    hbm_rate = gpu.hbm_bytes_per_s * gpu.hbm_efficiency
    full = rc == _FULL
    # Megatron's --recompute-method block --recompute-num-layers N: only the first N layers of each
    # pipeline chunk are recomputed in full, the rest keep their activations. `redo` is the share
    # of a chunk's layers re-run (1 for full recompute of every layer, 0 without full recompute).
    chunk_layers = np.ceil(model.layers / (pp * v))
    recompute_layers = _col(c, "recompute_layers") if "recompute_layers" in c else -np.ones(np.shape(tp))
    redo = np.where(full, np.where(recompute_layers >= 0, np.minimum(1.0, recompute_layers / chunk_layers), 1.0), 0.0)

    # ---- one layer, one micro-batch ----------------------------------------------------------
    if model.mla:  # down- and up-projections in, the output projection out, as two GEMMs of equal weight
        attention_gemms = gemm_time(gpu, tokens, model.attention_params / (2 * h) / tp, h, 2, fp8)
    else:
        attention_gemms = gemm_time(gpu, tokens, (h + 2 * model.kv_dim) / tp, h, fp8=fp8) + gemm_time(gpu, tokens, h, h / tp, fp8=fp8)
    gemm_f = attention_gemms + ffn_forward_time(model, cluster, tokens, tp, ep, capacity, fp8)
    # FP8 (Transformer Engine's recipe): the layer's GEMMs run in FP8, each input cast first
    # (read 2 bytes, write 1, and the amax reduction); attention, norms, the embedding and the
    # output layer stay in BF16 (DeepSeek-V3 Sec. 3.3.1 keeps the same ones in higher precision).
    gemm_inputs = tokens * (h + h / tp + h + model.ffn / tp)
    fp8_casts = np.where(fp8, 3 * gemm_inputs / hbm_rate, 0.0)
    gemm_f = gemm_f + fp8_casts
    head_dim = model.score_dim / a
    scores_f = gemm_time(gpu, s, s_full, head_dim, calls=2 * b * a / tp)
    flash_f, flash_b = flash_attention_time(gpu, 0.5 * 4 * b * s * s_full * model.score_dim / tp, stack.attention_kernel)
    attn_f = np.where(flash, flash_f, scores_f)
    attn_b = np.where(flash, flash_b, 2 * scores_f)
    # A ring over contiguous blocks waits, every step, for the rank holding the sequence's end: it
    # does 2 - 1/cp times the mean causal work (labs.core.context.causal_work).
    imbalance = np.where(cp_contiguous & (cp > 1), contiguous_imbalance_columns(cp), 1.0)
    attn_f, attn_b = attn_f * imbalance, attn_b * imbalance
    written = layer_activation_columns(model, s, b, tp, sp, np.where(flash, _SELECTIVE, _NONE))
    # Eager PyTorch moves more bytes per element-wise op than fused kernels (labs.core.gemm).
    fused = stack.fused_elementwise | torch_compile
    elementwise = ELEMENTWISE_TRAFFIC * np.where(fused, 1.0, unfused_elementwise_ratio(model)) * written / hbm_rate
    scores_elementwise = ELEMENTWISE_TRAFFIC * 5 * a * s * s_full * b / tp / hbm_rate
    fwd = gemm_f + attn_f + elementwise
    # The host issues every kernel: a layer whose kernels are shorter than the CPU's time to
    # launch them waits for the CPU (the forward launches `kernels`, the backward twice as many).
    cpu_f = np.where(torch_compile, kernels_per_layer(stack, True), kernels_per_layer(stack, False)) * stack.cpu_s_per_kernel
    fwd = np.maximum(fwd, cpu_f)
    recompute = np.where(full, redo * fwd, np.where((rc == _SELECTIVE) & ~flash, scores_f + scores_elementwise, 0.0))
    # Finer grains: op-level checkpointing re-runs the element-wise ops and half the GEMMs;
    # DeepSeek-V3's re-runs the norms and SwiGLU (element-wise) and MLA's up-projections.
    up_proj = gemm_time(gpu, tokens, model.up_projection_params / tp / max(model.q_lora_rank, 1), max(model.q_lora_rank, 1), fp8=fp8) if model.mla else 0.0
    recompute = np.where(rc == _OPS, elementwise + 0.5 * gemm_f, np.where(rc == _NORMS_UP, elementwise + up_proj, recompute))
    layer_b = gemm_f + attn_b + elementwise + recompute  # input gradients, with what is re-run
    layer_w = gemm_f  # weight gradients
    host_wait = np.maximum(1.0, 2 * cpu_f / (layer_b + layer_w))
    layer_b, layer_w = layer_b * host_wait, layer_w * host_wait

    act = tokens * h * ACTIVATION_BYTES
    all_reduce = sum(collective_columns("all_reduce", act, cluster, tp, s_tp))
    gather_scatter = sum(collective_columns("all_gather", act, cluster, tp, s_tp)) + sum(collective_columns("reduce_scatter", act, cluster, tp, s_tp))
    tp_pass = 2 * np.where(sp, gather_scatter, all_reduce)
    tp_total = tp_pass * (2 + redo)
    # Context parallelism, causal load-balanced (each rank holds two mirrored chunks): either
    # Transformer Engine's ring, passing K and V blocks to the next rank while attention runs on
    # the current one (backward passes dK and dV too), or Llama 3's all-gather of K and V before
    # attention (and a reduce-scatter of their gradients after), exposed.
    kv_block = 2 * b * s * model.kv_dim / tp * ACTIVATION_BYTES
    step_p2p = sum(collective_columns("p2p", kv_block, cluster, 2, s_cp))
    ring_f = (cp - 1) * np.maximum(step_p2p - attn_f / cp, 0.0)
    ring_b = (cp - 1) * np.maximum(2 * step_p2p - attn_b / cp, 0.0)
    # the hops' hidden time (behind attention) slows that attention: it runs without NCCL's SMs
    ring_f = ring_f + overlap_contention(gpu.sms, (cp - 1) * np.minimum(step_p2p, attn_f / cp), NCCL_P2P_SMS)
    ring_b = ring_b + overlap_contention(gpu.sms, (cp - 1) * np.minimum(2 * step_p2p, attn_b / cp), NCCL_P2P_SMS)
    kv = 2 * b * s_full * model.kv_dim / tp * ACTIVATION_BYTES
    gather_f = sum(collective_columns("all_gather", kv, cluster, cp, s_cp))
    gather_b = sum(collective_columns("reduce_scatter", kv, cluster, cp, s_cp))
    # DeepSpeed-Ulysses (Jacobs et al. 2023): an all-to-all of Q, K and V from s/cp tokens x all
    # heads to s tokens x heads/cp before attention and one of the output back, exposed; the
    # backward runs the same two on the gradients. Q and the output are score_dim wide.
    qkv_block = ulysses_qkv_bytes(model, b * s, tp, cp, ACTIVATION_BYTES)  # K/V repeated where a TP rank has fewer K/V heads than cp
    out_block = b * s * model.score_dim / tp * ACTIVATION_BYTES
    ulysses_pass = sum(collective_columns("all_to_all", qkv_block, cluster, cp, s_cp)) + sum(collective_columns("all_to_all", out_block, cluster, cp, s_cp))
    cp_f = np.where(cp > 1, np.where(cp_ulysses, ulysses_pass, np.where(cp_ring, ring_f, gather_f)), 0.0)
    cp_b = np.where(cp > 1, np.where(cp_ulysses, ulysses_pass, np.where(cp_ring, ring_b, gather_b)), 0.0)
    cp_total = cp_f + cp_b + redo * cp_f
    tp_in_node = members_per_node(cluster, tp, s_tp) >= tp  # the TP group inside one NVLink domain
    overlap = tp_overlap & sp & (tp > 1) & tp_in_node
    gemm_all = gemm_f * (3 + redo)
    contention = gemm_all * TP_OVERLAPPED_GEMM_SHARE * (gpu.sms / (gpu.sms - TP_OVERLAP_SMS) - 1)
    tp_exposed = np.where(overlap, np.maximum(tp_total - gemm_all, 0.5 * tp_total / TP_OVERLAP_SPLITS) + contention, tp_total)
    if stack.tp_overlap_kind == "async_tp":
        # PyTorch's AsyncTP (torch.distributed._symmetric_memory, applied by a torch.compile pass
        # to the forward graph's all-gather -> matmul and matmul -> reduce-scatter patterns) splits
        # each into tp steps on the copy engines, taking no SMs: the first step waits, and each GEMM
        # runs as tp smaller ones, each paying its launch (labs.core.gemm.GEMM_FIXED_S). Its
        # authors report forward-pass gains (PyTorch dev-discuss, "Introducing Async Tensor
        # Parallelism", 2024); the engine leaves the backward's collectives exposed (unconfirmed).
        forward_tp = tp_pass * (1 + redo)
        split_gemms = 4 * (1 + redo) * (tp - 1) * GEMM_FIXED_S
        hidden_forward = np.maximum(forward_tp - gemm_f * (1 + redo), forward_tp / tp) + split_gemms
        tp_exposed = np.where(overlap, hidden_forward + (tp_total - forward_tp), tp_total)
    a2a, a2a_sent = all_to_all_cost(model, cluster, tokens, tp, ep, max_nodes, np.where(fp8, 1.0, 2.0), stride=s_cp)
    layer_a2a = a2a * (2 + redo)  # dispatch + combine, forward and backward (and the re-run forward)
    layer_comm = tp_exposed + cp_total + layer_a2a

    # ---- pipeline stages: the first rank, a middle one and the last ------------------------------
    # Layers per rank: an even split (the heaviest stage holds ceil(L / (p v)) per chunk), or the
    # plan's first/last stage layers with the rest spread over the middle (Megatron-Core's
    # --decoder-first/last-pipeline-num-layers; Llama 3 405B: 7 + 14 x 8 + 7 on 16 stages). The
    # first rank also holds the input embedding, the last the output layer, logits and loss.
    layers_r, first_r, last_r = stage_layers(L, pp, v, _col(c, "first_stage_layers"), _col(c, "last_stage_layers"))
    logits = gemm_time(gpu, tokens, V / tp, h)
    # The cross entropy streams the logits through HBM (the stack's passes, fp32 in most).
    loss = tokens * V / tp * np.where(torch_compile, loss_bytes_per_logit(stack, True), loss_bytes_per_logit(stack, False)) / hbm_rate
    stage_f = layers_r * fwd + last_r * (logits + 0.5 * loss)
    stage_b = layers_r * layer_b + last_r * (logits + 0.5 * loss)
    stage_w = layers_r * layer_w + last_r * logits
    stage_comm = layers_r * layer_comm
    slowest = np.argmax(stage_f + stage_b + stage_w + stage_comm, axis=0)
    stage_f, stage_b, stage_w, stage_comm = (np.take_along_axis(x, slowest[None], 0)[0] for x in (stage_f, stage_b, stage_w, stage_comm))
    layers_slowest = np.take_along_axis(layers_r, slowest[None], 0)[0]
    stage_bwd = stage_b + stage_w
    per_mb = stage_f + stage_bwd + stage_comm
    zb = (sched == SCHEDULES.index("zb-h1")) | (sched == SCHEDULES.index("zb-h2"))
    idle = idle_time(pp, m, sched, v, stage_f, np.where(zb, stage_b, stage_bwd), np.where(zb, stage_w, 0.0))
    work = stage_f + stage_bwd
    bubble = np.where(pp > 1, idle / (m * work + idle), 0.0)
    pipeline = m * per_mb / (1 - bubble)

    # ---- pipeline send/recv: Megatron's scatter/gather sends 1/t per NIC, all-gathers on NVLink -
    pp_bytes = act  # one micro-batch's activations cross each stage boundary
    stage_stride = stride["pp"]  # neighbouring stages sit this many ranks apart (tp x cp x dp in Megatron's order)
    crosses = stage_stride >= cluster.gpus_per_node
    scatter = stack.pp_p2p == "scatter_gather"  # DeepSpeed 2021: every TP rank sends the whole activation
    hop = sum(collective_columns("p2p", pp_bytes / (tp if scatter else 1.0), cluster, 2, stage_stride))
    hop = hop + np.where(crosses & (tp > 1) & scatter, sum(collective_columns("all_gather", pp_bytes, cluster, tp, s_tp)), 0.0)
    # The messages' share of the pipeline's idle time (labs.core.pipeline.message_idle): the ramp's
    # 2 (p - 1) hops, and under interleaving a stall at each chunk change that a micro-batch group
    # N larger than p covers; without overlap every message also waits in line.
    group = _col(c, "microbatch_group_size")
    ramp = message_idle(pp, v, np.where(group > 0, group, pp), stage_f, stage_bwd, hop)
    pp_comm = np.where(pp > 1, ramp + np.where(pp_overlap, 0.0, 2 * m * v * hop), 0.0)
    pp_sent = np.where(pp > 1, 2 * m * v * pp_bytes / (tp if scatter else 1.0), 0.0)

    # ---- data parallel / ZeRO -----------------------------------------------------------------
    # Parameters on each candidate rank; the whole model when pp = 1. DP/ZeRO traffic and the
    # optimizer follow the rank with the most.
    embed = V * h
    expert_layer = model.layer_expert_params
    rank_dense = np.where(pp > 1, layers_r * (model.layer_params - expert_layer) + (first_r + last_r) * embed, float(model.params) - L * expert_layer) / tp
    rank_expert = layers_r * expert_layer / ep  # experts are split over EP ranks, not over TP
    rank_params = rank_dense + rank_expert
    heaviest = np.argmax(rank_params, axis=0)[None]
    dense_params, expert_params = (np.take_along_axis(x, heaviest, 0)[0] for x in (rank_dense, rank_expert))
    layers = np.take_along_axis(layers_r, heaviest, 0)[0]
    n = dp * cp
    # Hybrid sharding: the state is sharded over groups of `shard` ranks and replicated across the
    # n / shard groups; the replicas all-reduce their gradient shard once a step.
    shard_cols = _col(c, "shard_group_size")
    shard = np.where(shard_cols > 0, shard_cols, n)
    replicas = n / shard
    grad_bytes = np.where(grad_fp32, 4.0, 2.0)
    grads = dense_params * grad_bytes
    weights_bytes = dense_params * WEIGHT_BYTES
    expert_shard = np.maximum(shard / ep, 1.0)  # routed experts replicate over n / ep ranks only
    bucket = np.where(bucket_bytes > 0, bucket_bytes, np.maximum(MEGATRON_BUCKET_PARAMS, 1_000_000 * dp) * grad_bytes)
    calls = np.maximum(1.0, np.ceil(grads / bucket))

    def bucketed(op, nbytes, k, group=n, stride=s_cp):
        lat, bw = collective_columns(op, nbytes / k, cluster, group, stride, dp_algorithm)
        return lat * k, bw * k

    ar = bucketed("all_reduce", grads, calls)
    rs, ag = bucketed("reduce_scatter", grads, calls, shard), bucketed("all_gather", weights_bytes, calls, shard)
    across = bucketed("all_reduce", grads / shard, calls, replicas, s_cp * shard)
    rs = _plus(rs, across)
    # The routed experts' gradients reduce over the expert-data-parallel group (n / ep ranks,
    # tp x ep apart), the rest over all n.
    expert_grads, expert_weights = expert_params * grad_bytes, expert_params * WEIGHT_BYTES
    ar = _plus(ar, bucketed("all_reduce", expert_grads, calls, n / ep, s_cp * ep))
    rs = _plus(rs, bucketed("reduce_scatter", expert_grads, calls, expert_shard, s_cp * ep))
    ag = _plus(ag, bucketed("all_gather", expert_weights, calls, expert_shard, s_cp * ep))
    grads, weights_bytes = grads + expert_grads, weights_bytes + expert_weights
    module_calls = layers * ZERO3_GATHERS_PER_LAYER[stack.zero3_unit]
    module_ag = bucketed("all_gather", weights_bytes, module_calls, shard)
    per_parameter = stack.zero3_unit == "parameter"
    z3_passes = 2.0 + np.where(per_parameter, redo, 0.0)  # gathers per micro-batch
    if per_parameter:
        # DeepSpeed's 2021 stage 3 (deepspeed/runtime/zero/partition_parameters.py at c814abd,
        # _allgather_param): torch.cuda.synchronize() before every parameter's all-gather, so no
        # gather overlaps compute; a Python loop of one narrow() per rank builds the output list,
        # and torch.distributed.all_gather into a list copies the flat result out rank by rank
        # (one copy kernel each; _all_gather_base came in PyTorch 1.10). Gradients leave the same
        # way, reduce-scattered parameter by parameter from a list of per-rank views. Both cost
        # the host 2 ops per rank of the group, every call: linear in the number of GPUs.
        host = 2 * shard * stack.cpu_s_per_kernel
        module_ag = (module_ag[0] + module_calls * host, module_ag[1])
        param_rs = bucketed("reduce_scatter", grads, module_calls, shard)
        rs = np.where(zero == 3, param_rs[0] + module_calls * host, rs[0]), np.where(zero == 3, param_rs[1], rs[1])
    z0, z1, z2, z3 = (zero == k for k in range(4))
    # Sharded gradients cannot accumulate locally: from ZeRO-2 on every micro-batch's gradients
    # are reduce-scattered as its backward produces them (DeepSpeed's and FSDP's default); ZeRO-1
    # reduces once per step. grad_sync overrides it: "step" keeps whole gradients through the
    # accumulation (FSDP's no_sync) and reduces once, "microbatch" reduces every micro-batch.
    reduce_each_mb = np.where(grad_sync == 1, False, np.where(grad_sync == 2, True, zero >= 2))
    syncs = np.where(reduce_each_mb, m, 1.0)
    reduce_lat = np.where(z0, syncs * ar[0], syncs * rs[0] + np.where(z3, z3_passes * m * module_ag[0], 0.0))
    reduce_bw = np.where(z0, syncs * ar[1], syncs * rs[1] + np.where(z3, z3_passes * m * module_ag[1], 0.0))
    gather_lat = np.where(z1 | z2, ag[0], 0.0)
    gather_bw = np.where(z1 | z2, ag[1], 0.0)
    reduce_t, gather_t = reduce_lat + reduce_bw, gather_lat + gather_bw
    # What hides it: the last micro-batch's backward (ZeRO 0-1), every backward (ZeRO-2); the
    # last bucket always waits. ZeRO-3 prefetches the next module's weights behind the current
    # module's compute, pass by pass: a forward gathers, a backward gathers and reduce-scatters,
    # and the first module gather of each pass waits.
    window = np.where(reduce_each_mb, m * stage_bwd, stage_bwd)
    plain = np.where(dp_overlap, np.maximum(reduce_t - window, reduce_t / calls), reduce_t)
    gather_pass = module_ag[0] + module_ag[1]
    first = gather_pass / module_calls
    z3_forward = np.maximum(gather_pass - stage_f, first)
    backward_gathers = (z3_passes - 1) * gather_pass  # the recompute's gathers run in the backward
    z3_backward = np.maximum(backward_gathers + rs[0] + rs[1] - stage_bwd, first)
    z3_backward_only = np.maximum(backward_gathers - stage_bwd, first)  # a micro-batch that does not reduce
    z3_exposed = m * z3_forward + syncs * z3_backward + (m - syncs) * z3_backward_only
    exposed_reduce = np.where(z3, np.where(dp_overlap & (not per_parameter), z3_exposed, reduce_t), plain)
    # ZeRO-1/2 gather the updated weights bucket by bucket ahead of the next forward
    # (Megatron-LM --overlap-param-gather): only the first bucket waits in full.
    exposed_gather = np.where(dp_overlap, np.maximum(gather_t - stage_f, gather_t / calls), gather_t)
    active = n > 1
    dp_exposed = np.where(active, exposed_reduce + exposed_gather, 0.0)
    dp_total = np.where(active, reduce_t + gather_t, 0.0)
    dp_latency = np.where(active, reduce_lat + gather_lat, 0.0)
    frac, sfrac = (n - 1) / n, (shard - 1) / shard
    replica_sent = 2 * (replicas - 1) / replicas * grads / shard
    # bytes each GPU sends a step: the gradient reduction (once a step up to ZeRO-1, per
    # micro-batch from ZeRO-2) and the weight gathers (once a step, or twice per micro-batch at ZeRO-3)
    dp_reduce_sent = syncs * np.where(z0, 2 * frac * grads, sfrac * grads + replica_sent)
    dp_gather_sent = np.where(z0, 0.0, sfrac * weights_bytes * np.where(z3, z3_passes * m, 1.0))
    dp_sent = dp_reduce_sent + dp_gather_sent

    # ---- the communication map: each collective's calls, bytes and seconds per step, per GPU ----
    # The same terms as above, kept apart instead of summed per axis. Times run on the slowest
    # stage (the one that sets the pace); "wire" is before any overlap, "exposed" what the step
    # waits for. ZeRO-3's prefetch hides gathers and reduce-scatters together: its exposed time
    # is split between them in proportion to their wire time.
    tp_calls = np.where(tp > 1, m * layers_slowest * np.where(sp, 4, 2) * (2 + redo), 0.0)
    # per layer and micro-batch: (2 + full) passes of 2 all-reduces or 4 gathers/scatters of half the bytes
    tp_layer_sent = np.where(tp > 1, (8 + 4 * redo) * (tp - 1) / tp * act, 0.0)
    tp_wire = np.where(tp > 1, m * layers_slowest * tp_total, 0.0)
    cp_used = cp > 1
    cp_calls = np.where(cp_used, m * layers_slowest * np.where(cp_ulysses, 2 * (2 + redo), np.where(cp_ring, (cp - 1) * (2 + redo), 2 + redo)), 0.0)
    cp_sent = np.where(cp_used, m * layers_slowest * np.where(
        cp_ulysses, (cp - 1) / cp * (qkv_block + out_block) * (2 + redo),
        np.where(cp_ring, (cp - 1) * kv_block * (3 + redo), (cp - 1) / cp * kv * (2 + redo))), 0.0)
    cp_wire = np.where(cp_used, m * layers_slowest * np.where(
        cp_ulysses, ulysses_pass * (2 + redo), np.where(cp_ring, (cp - 1) * step_p2p * (3 + redo), gather_f * (1 + redo) + gather_b)), 0.0)
    pp_calls = np.where(pp > 1, 2 * m * v, 0.0)
    ep_used = (ep > 1) & bool(model.experts)  # dispatch + combine per pass: exposed in full (no DualPipe)
    ar_t, rs_t = ar[0] + ar[1], rs[0] + rs[1]
    reduce_only = syncs * np.where(z0, ar_t, rs_t)
    z3_gathers = z3_passes * m * (module_ag[0] + module_ag[1])
    z3_share = backward_gathers / np.maximum(backward_gathers + rs_t, 1e-300)
    z3_gather_exposed = np.where(dp_overlap & (not per_parameter), m * z3_forward + syncs * z3_backward * z3_share + (m - syncs) * z3_backward_only, z3_gathers)
    reduce_exposed = np.where(z3, exposed_reduce - z3_gather_exposed, plain)
    gather_exposed = np.where(z3, z3_gather_exposed, exposed_gather)
    # What ran hidden slowed the compute beside it (overlap_contention): charged to each collective.
    gather_wire = np.where(z3, z3_gathers, gather_t)
    reduce_exposed = reduce_exposed + overlap_contention(gpu.sms, np.maximum(reduce_only - reduce_exposed, 0.0), NCCL_COLLECTIVE_SMS)
    gather_exposed = gather_exposed + np.where(~z0, overlap_contention(gpu.sms, np.maximum(gather_wire - gather_exposed, 0.0), NCCL_COLLECTIVE_SMS), 0.0)
    dp_exposed = np.where(active, reduce_exposed + gather_exposed, 0.0)
    collectives = {
        "tp": (tp_calls, m * layers_slowest * tp_layer_sent, tp_wire,
               np.where(tp > 1, m * layers_slowest * tp_exposed, 0.0), tp, s_tp),
        "cp": (cp_calls, cp_sent, cp_wire, np.where(cp_used, m * layers_slowest * cp_total, 0.0), cp, s_cp),
        "ep": (np.where(ep_used, m * layers_slowest * 2 * (2 + redo), 0.0), np.where(ep_used, m * layers_slowest * (2 + redo) * a2a_sent, 0.0),
               np.where(ep_used, m * layers_slowest * layer_a2a, 0.0), np.where(ep_used, m * layers_slowest * layer_a2a, 0.0), ep, s_cp),
        "pp": (pp_calls, pp_sent, np.where(pp > 1, 2 * m * v * hop, 0.0), pp_comm, np.where(pp > 1, 2.0, 1.0), stage_stride),
        "dp_reduce": (np.where(active, syncs * np.where(z3 & per_parameter, module_calls, calls), 0.0),
                      np.where(active, dp_reduce_sent, 0.0),
                      np.where(active, reduce_only, 0.0), np.where(active, reduce_exposed, 0.0), np.where(z0, n, shard), s_cp),
        "dp_gather": (np.where(active & ~z0, np.where(z3, z3_passes * m * module_calls, calls), 0.0),
                      np.where(active, dp_gather_sent, 0.0),
                      np.where(active & ~z0, gather_wire, 0.0), np.where(active & ~z0, gather_exposed, 0.0), shard, s_cp),
    }
    comm_map = {}
    for key, (k, sent, wire, exposed, group, spacing) in collectives.items():
        comm_map.update({
            f"coll_{key}_calls": k, f"coll_{key}_sent_bytes": sent, f"coll_{key}_wire_s": wire, f"coll_{key}_exposed_s": exposed,
            f"coll_{key}_group": group * np.ones_like(m), f"coll_{key}_members_per_node": members_per_node(cluster, group, spacing) * np.ones_like(m),
        })

    # ---- optimizer, or ZeRO-Offload -----------------------------------------------------------
    updated = dense_params / np.where(zero >= 1, shard, 1.0) + expert_params / np.where(zero >= 1, expert_shard, 1.0)
    narrow = 2 * (OPTIMIZER_BYTES - opt_bytes)  # a narrower state is read and written once each
    optimizer = np.where(offload, 0.0, updated * (stack.optimizer_bytes_per_param - narrow) / hbm_rate)
    pcie = cluster.host_link.effective_bytes_per_s
    down = GRAD_BYTES * updated / pcie
    cpu_adam = updated * (CPU_ADAM_BYTES_PER_PARAM - narrow) / cluster.host_bytes_per_s_per_gpu
    up = WEIGHT_BYTES * updated / pcie
    offload_exposed = np.where(offload, np.where(dp_overlap, np.maximum(0.0, down - stage_bwd), down) + cpu_adam + up, 0.0)

    # ---- memory on the busiest rank ------------------------------------------------------------
    dense_state = model_state_columns(rank_dense, zero, shard, offload, opt_bytes, grad_bytes)
    expert_state = model_state_columns(rank_expert, zero, expert_shard, offload, opt_bytes, grad_bytes)
    w_mem, g_mem, o_mem = (d + e for d, e in zip(dense_state, expert_state))
    # grad_sync="step" from ZeRO-2: the accumulated gradients stay whole until the step's reduce-scatter
    g_mem = np.where(~reduce_each_mb & (zero >= 2) & ~offload, (rank_dense + rank_expert) * grad_bytes, g_mem)
    # ZeRO-3 holds the layer it computes and the one it prefetches, gathered; FP8 keeps a 1-byte
    # copy of the layers' weights between micro-batches (Transformer Engine's FP8 weight cache).
    w_mem = w_mem + np.where(zero == 3, 2 * model.layer_params / tp * WEIGHT_BYTES, 0.0)
    w_mem = w_mem + np.where(fp8, rank_params, 0.0)
    stored = np.where(flash & (rc == _NONE), _SELECTIVE, rc)
    per_layer = layer_activation_columns(model, s, b, tp, sp, stored)
    per_layer = per_layer - np.where(fp8 & (stored == _NORMS_UP), fp8_norms_up_proj_savings(model, s, b, tp),
                                     np.where(fp8 & (stored != _FULL), fp8_activation_savings(model, s, b, tp, sp), 0.0))
    rank_index = np.stack([np.zeros_like(pp), np.minimum(1.0, pp - 1), pp - 1])
    held = in_flight_columns(sched, pp, m, v, rank_index, _col(c, "microbatch_group_size"))
    working = layer_activation_columns(model, s, b, tp, sp, np.where(flash, _SELECTIVE, _NONE))
    kept_whole = working - np.where(fp8, fp8_activation_savings(model, s, b, tp, sp), 0.0)
    per_layer = np.where(full, redo * per_layer + (1 - redo) * kept_whole, per_layer)  # layers a block recompute leaves out keep everything
    activations = per_layer * layers_r * held + np.where(stored == _FULL, working, 0.0)
    activations = activations + last_r * b * s * V * 4 / tp  # fp32 logits of the micro-batch in flight
    rank_total = w_mem + g_mem + o_mem + activations
    rank_activations = activations
    busiest = np.argmax(rank_total, axis=0)
    pick = lambda x: np.take_along_axis(np.broadcast_to(x, rank_total.shape), busiest[None], 0)[0]  # noqa: E731
    w_mem, g_mem, o_mem, activations = (pick(x) for x in (w_mem, g_mem, o_mem, activations))
    computed = w_mem + g_mem + o_mem + activations
    communicators = sum(np.where(x > 1, 1.0, 0.0) for x in (tp, pp, dp, cp))
    nvls = float(bool(cluster.intra.nvls_bytes_per_s) and dp_algorithm in ("auto", "nvls"))
    buffers = (CUDA_CONTEXT_BYTES + communicators * NCCL_COMMUNICATOR_BYTES + nvls * NCCL_NVLS_BYTES * np.where((tp > 1) | (dp > 1), 1.0, 0.0)
               + np.where(overlap, TP_OVERLAP_BUFFERS * tokens * h * ACTIVATION_BYTES, 0.0) + FRAGMENTATION * activations)

    step = pipeline + pp_comm + dp_exposed + optimizer + offload_exposed
    # Memory of the first, a middle (the second, the fullest of them under 1F1B) and the last stage.
    stage_memory = rank_total + buffers - FRAGMENTATION * activations + FRAGMENTATION * rank_activations
    model_per_sequence, hardware_per_sequence = model.flops_per_sequence(rc, flash, redo)
    tp_sent = m * layers * tp_layer_sent
    return {
        "step_time_s": step,
        "compute_s": m * work,
        "bubble_s": pipeline - m * per_mb,
        "tp_comm_s": m * stage_comm - m * layers_slowest * layer_a2a,
        "ep_comm_s": m * layers_slowest * layer_a2a,
        "pp_comm_s": pp_comm,
        "dp_comm_s": dp_exposed,
        "optimizer_s": optimizer,
        "offload_s": offload_exposed,
        "bubble_fraction": bubble,
        "stage_forward_s": stage_f,
        "stage_backward_s": stage_bwd,
        "dp_total_s": dp_total,
        "dp_latency_s": dp_latency,
        "dp_exposed_latency_s": dp_exposed * np.where(dp_total > 0, dp_latency / np.where(dp_total > 0, dp_total, 1.0), 0.0),
        "weights_bytes": w_mem,
        "gradients_bytes": g_mem,
        "optimizer_bytes": o_mem,
        "activations_bytes": activations,
        "buffers_bytes": buffers,
        "memory_bytes": computed + buffers,
        "model_flops": gb * model_per_sequence,
        "hardware_flops": gb * hardware_per_sequence,
        "tp_bytes": tp_sent,
        "pp_bytes": pp_sent,
        "dp_bytes": np.where(active, dp_sent, 0.0),
        "pcie_bytes": np.where(offload, (GRAD_BYTES + WEIGHT_BYTES) * updated, 0.0),
        "offload_down_s": np.where(offload, down, 0.0),
        "offload_up_s": np.where(offload, up, 0.0),
        "cpu_adam_s": np.where(offload, cpu_adam, 0.0),
        "host_bytes_per_node": np.where(offload, (GRAD_BYTES + opt_bytes) * updated * cluster.gpus_per_node, 0.0),
        "layer_forward_s": fwd,
        "layer_backward_s": layer_b + layer_w,
        "layer_input_grad_s": layer_b,
        "layer_weight_grad_s": layer_w,
        "layer_comm_s": layer_comm,
        "layers_per_stage": layers,
        "busiest_rank": pick(rank_index),
        "microbatches": m,
        "memory_first_bytes": stage_memory[0],
        "memory_middle_bytes": stage_memory[1],
        "memory_last_bytes": stage_memory[2],
        **comm_map,
    }
