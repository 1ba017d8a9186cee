"""Compute stage: one layer, one micro-batch, one GPU.

- GEMMs by shape (labs.core.engine.gemm): QKV, attention projection, FFN in (gate and up for SwiGLU),
  FFN out; backward runs each twice (input and weight gradients).
- Attention core: without flash attention, two batched GEMMs per head plus the s x s softmax and
  dropout through HBM; with it, one fused kernel doing the causal half of the work.
- Element-wise work streams ELEMENTWISE_TRAFFIC x the activation bytes the layer writes
  (Korthikanti's count) through HBM.
- The host issues every kernel, and under FSDP runs its hooks around each unit (one per layer):
  a layer whose kernels are shorter than the CPU's time to launch them waits for the CPU.
- FSDP's own copies (casts, copy-in and copy-out of the gathers, the gradients' copy into the
  reduce-scatter input) stream the unit's parameters through HBM beside the GEMMs (labs.core.engine.eras).
"""

from __future__ import annotations

from types import SimpleNamespace

from labs.core.engine.context import contiguous_imbalance_columns
from labs.core.engine.eras import CUDA_GRAPH_LAUNCH_S, fp8_param_gathered, kernels_per_layer, launches_per_layer, stack_of
from labs.core.engine.experts import dense_ffn_gemm_times, ffn_forward_time, moe_pass_time, received_load
from labs.core.engine.gemm import flash_attention_time, fp8_cast_time, gemm_time, unfused_elementwise_ratio
from labs.core.engine.hardware import GPUS, Cluster
from labs.core.engine.models import ALL_RECOMPUTE_MODES, RECOMPUTE_MODES, Model
from labs.core.engine.stages.activations import layer_activation_columns
from labs.core.engine.stages.inputs import model_terms
from labs.core.engine.stages.xp import SCALAR

# HBM bytes the element-wise ops move per pass, per byte of activations the layer writes. Fitted
# with labs.core.engine.gemm.LAYER_GEMM_SHARE (A100's GEMM share, with the GEMMs by shape) on
# Korthikanti Table 4's baseline row (forward 7.7 ms, backward 11.9 ms) and Table 5's 22B run:
# labs.core.engine.calibration.fit_layer_constants (2.2 before the GEMMs by shape and NCCL's
# measured ring ramp, issue 37 items 1 and 5).
ELEMENTWISE_TRAFFIC = 1.85

_SELECTIVE, _NONE = RECOMPUTE_MODES.index("selective"), RECOMPUTE_MODES.index("none")

# HBM bytes per unit parameter per step of FSDP2's gradients when a step's backwards run with
# set_requires_gradient_sync(False) and one reduction follows the last (torch.distributed.pipelining:
# stage.py backward_maybe_with_nosync, then the post_backward it calls, or perform_reduce_grad;
# grad_sync "step"), from torch/distributed/fsdp/_fully_shard: (the first micro-batch's, each later
# one's, the reduce-scatter copy-in's), (bf16, fp32) reduce dtype. bf16: the first gradient stays
# the unsharded .grad, autograd adds each later one into it (read 2 + 2, write 2), the copy-in
# (foreach_reduce_scatter_copy_in) reads and writes it (2 + 2, Era.fsdp_grad_bytes). fp32:
# FSDPParam.to_accumulated_grad_if_needed casts the first to an fp32 accumulator (read 2, write
# 4), accumulate_unsharded_grad_if_needed adds each later one (read 4 + 2, write 4), the copy-in
# reads and writes fp32 (4 + 4).
FSDP2_UNREDUCED_GRAD_BYTES = ((0.0, 2 + 2 + 2, 2 + 2), (2 + 4, 4 + 2 + 4, 4 + 4))
# FSDP1's under no_sync (grad_sync "step"), from torch/distributed/fsdp (PyTorch 2.1,
# use_orig_params=True): every backward writes the unit's flat gradient by torch.cat of its views'
# gradients (read 2, write 2); the first becomes flat_param.grad, autograd's AccumulateGrad adds
# each later one into it in place (read 2 + 2, write 2), in the bf16 param dtype
# (Era.accumulated_grad_dtype "param": _post_backward_hook returns before any cast when not
# _sync_gradients); the reducing backward then runs the rest of Era.fsdp_grad_bytes beyond the cat
# (bf16: the pre-divide, 2 + 2; fp32: the cast, 2 + 4, and the pre-divide, 4 + 4).
FSDP1_UNREDUCED_GRAD_BYTES = ((2 + 2, 2 + 2 + 2 + 2 + 2, 2 + 2), (2 + 2, 2 + 2 + 2 + 2 + 2, 2 + 4 + 4 + 4))
_OPS, _NORMS_UP = ALL_RECOMPUTE_MODES.index("ops"), ALL_RECOMPUTE_MODES.index("norms_up_proj")


def block_parameters(model) -> float:
    """Original parameters (nn.Parameters) of one transformer block as the eager stacks write it
    (torchtitan, HF Llama): q, k, v and o (MLA: wq_a, q_norm, wq_b, wkv_a, kv_norm, wkv_b, wo), the
    FFN's w1, w2, w3 (fc1, fc2 ungated), two norms; an MoE layer's FFN is the router, three grouped
    expert weights (torchtitan's GroupedExperts) and the shared experts' w1, w2, w3. Averaged over
    the layers; biases are not in the model and not counted."""
    attention = 7 if model.mla else 4
    dense_ffn = 3 if model.gated_ffn else 2
    moe_ffn = 1 + 3 + (3 if model.shared_experts else 0)
    return attention + 2 + (1 - model.moe_share) * dense_ffn + model.moe_share * moe_ffn


def layer_compute(model, cluster, stack, p, xp, kernels=None) -> SimpleNamespace:
    """Seconds of one layer's forward (fwd), input-gradient (layer_b, with what is re-run) and
    weight-gradient (layer_w) passes for one micro-batch, and the parts later stages overlap
    communication with (gemm_f, attn_f, attn_b): the layer's kernels (layer_kernels, or
    `kernels` when computed already) with what FSDP adds on the host and in HBM copies."""
    k = layer_kernels(model, cluster, stack, p, xp) if kernels is None else kernels
    hbm_rate = cluster.gpu.hbm_bytes_per_s * cluster.gpu.hbm_efficiency
    gemm_f = k.gemm_f
    # FSDP unshards each unit (one per layer) for the forward as often as p.forward_unshards says
    # (labs.core.engine.stages.inputs) and, resharded after it (ZeRO-3), again for the backward; its hooks
    # run on the host beside the launches (_fsdp_costs). The recompute runs inside the backward's
    # unsharded unit: launches only.
    # A stack without FSDP's costs (Megatron's, DeepSpeed's) adds none: 0 seconds, not computed.
    hooks_f, hooks_b, copies_f, copies_b = _fsdp_costs(model, stack, p, hbm_rate, xp) if has_fsdp_costs(stack) else (0.0,) * 4
    # FP8 weights are quantized once a step with Transformer Engine's FP8 weight cache, every
    # micro-batch without it (labs.core.engine.gemm: fp8_cast_time; Era.fp8_weight_cache).
    weight_casts = k.fp8_weight_casts * (1.0 / p.m if stack.fp8_weight_cache else 1.0)
    if stack.fp8_param_gather:  # the shard is cast before an FP8 all-gather (labs.core.engine.eras: fp8_param_gather)
        weight_casts = weight_casts * xp.where(fp8_param_gathered(stack, p.fp8, xp) & (p.zero >= 1), 1.0 / p.shard, 1.0)
    fwd = xp.maximum(k.gpu_f + copies_f + weight_casts, k.launch_f + hooks_f)
    layer_b = k.gpu_b + copies_b  # input gradients, with what is re-run
    layer_w = gemm_f  # weight gradients
    host_wait = xp.maximum(1.0, (2 * k.launch_f + hooks_b) / (layer_b + layer_w))
    return SimpleNamespace(gemm_f=gemm_f, qkv_f=k.qkv_f, fc1_f=k.fc1_f, attn_f=k.attn_f, attn_b=k.attn_b, fwd=fwd, layer_b=layer_b * host_wait, layer_w=layer_w * host_wait,
                           written=k.written)


def has_fsdp_costs(stack) -> bool:
    """Whether a layer's time reads the ZeRO stage: FSDP's hooks and copies, or the FP8 weight cast
    that an FP8 parameter gather moves onto the shard (labs.core.engine.eras: fp8_param_gather)."""
    return stack.fp8_param_gather or bool(stack.fsdp_s_per_unshard or stack.fsdp_s_per_param or any(stack.fsdp_kept_s_per_param) or stack.fsdp_kept_s_per_pass
                or stack.fsdp_unshard_bytes or stack.fsdp_shard_bytes or any(stack.fsdp_grad_bytes))


def _fsdp_costs(model, stack, p, hbm_rate, xp):
    """FSDP's seconds per layer and micro-batch: its hooks on the host in the forward and the
    backward, and its HBM copies in each (layer_compute)."""
    tp, z3 = p.tp, p.zero == 3
    # The hooks (labs.core.engine.eras: fsdp_s_per_*, fsdp_kept_s_per_*), with the unit's original parameters.
    # ZeRO-3: each pass unshards and reshards the unit. ZeRO-2 keeps it unsharded from the forward
    # to the backward: the forward's gathers (p.forward_unshards) cost what ZeRO-3's do, and each
    # pass runs its own per-parameter loops (FSDP1: writeback and unsharded views in the forward,
    # writeback and sharded views in the backward; FSDP2: the post-backward reshard) and, when it
    # does not gather, a few fixed ops.
    params = block_parameters(model)
    unshard = stack.fsdp_s_per_unshard + params * stack.fsdp_s_per_param
    kept_f = (p.forward_unshards * stack.fsdp_s_per_unshard + (1.0 - p.forward_unshards) * stack.fsdp_kept_s_per_pass
              + params * stack.fsdp_kept_s_per_param[0])
    kept_b = stack.fsdp_kept_s_per_pass + params * stack.fsdp_kept_s_per_param[1]
    hooks_f = xp.where(z3, unshard, xp.where(p.zero == 2, kept_f, 0.0))
    hooks_b = xp.where(z3, unshard, xp.where(p.zero == 2, kept_b, 0.0))
    # FSDP's copies (labs.core.engine.eras: fsdp_*_bytes), per parameter of this rank's unit, its dense part
    # sharded over p.shard ranks and its routed experts over p.expert_shard: each unshard and each
    # micro-batch that reduces its gradients.
    dense, experts = (model.layer_params - model.layer_expert_params) / tp, model.layer_expert_params / p.ep
    unshard_copies = (dense * (stack.fsdp_unshard_bytes + stack.fsdp_shard_bytes / p.shard)
                      + experts * (stack.fsdp_unshard_bytes + stack.fsdp_shard_bytes / p.expert_shard)) / hbm_rate
    # Gradients reduced every micro-batch (labs.core.engine.stages.inputs: reduce_each_mb) copy each
    # time; FSDP2 reducing once a step (torch's pipelining, grad_sync "step") accumulates the
    # unsharded gradients between (FSDP2_UNREDUCED_GRAD_BYTES, averaged over the step's micro-batches).
    reduces = (p.zero >= 2) & p.reduce_each_mb
    per_reduce = xp.where(p.grad_fp32, stack.fsdp_grad_bytes[1], stack.fsdp_grad_bytes[0])
    if stack.fsdp_reshard_after_backward == "every":  # FSDP2's FSDPParamGroup.post_backward (labs.core.engine.eras)
        (first_16, later_16, copy_16), (first_32, later_32, copy_32) = FSDP2_UNREDUCED_GRAD_BYTES
        unreduced = xp.where(p.grad_fp32, first_32 + (p.m - 1) * later_32 + copy_32, first_16 + (p.m - 1) * later_16 + copy_16) / p.m
        per_mb = xp.where(reduces, per_reduce, xp.where(p.zero >= 2, unreduced, 0.0))
    elif stack.accumulated_grad_dtype == "param":  # FSDP1's no_sync accumulation (FSDP1_UNREDUCED_GRAD_BYTES)
        (first_16, later_16, rest_16), (first_32, later_32, rest_32) = FSDP1_UNREDUCED_GRAD_BYTES
        unreduced = xp.where(p.grad_fp32, first_32 + (p.m - 1) * later_32 + rest_32, first_16 + (p.m - 1) * later_16 + rest_16) / p.m
        per_mb = xp.where(reduces, per_reduce, xp.where(p.zero >= 2, unreduced, 0.0))
    else:  # no FSDP gradient copies of its own (Megatron's buffers): nothing between reductions
        per_mb = xp.where(reduces, per_reduce, 0.0)
    grad_copies = (dense + experts) * per_mb / hbm_rate
    copies_f = p.forward_unshards * unshard_copies
    copies_b = xp.where(z3, unshard_copies, 0.0) + grad_copies
    return hooks_f, hooks_b, copies_f, copies_b


def layer_kernels(model, cluster, stack, p, xp) -> SimpleNamespace:
    """One layer's GPU kernels for one micro-batch, as its shape and settings make them (no
    ZeRO or FSDP terms: a sweep runs this once per distinct shape): the forward's GEMMs (gemm_f),
    attention (attn_f, attn_b) and whole GPU time (gpu_f), the host's launches (launch_f), the
    input-gradient pass with what is re-run (gpu_b) and the activation bytes written."""
    gpu, h, a = cluster.gpu, model.hidden, model.heads
    tp, tokens, fp8, s, s_full, b = p.tp, p.tokens, p.fp8, p.s, p.s_full, p.b
    hbm_rate = gpu.hbm_bytes_per_s * gpu.hbm_efficiency
    if model.mla:  # down- and up-projections in, the output projection out, as two GEMMs of equal weight
        attention_gemms = gemm_time(gpu, tokens, model.attention_params / (2 * h) / tp, h, 2, fp8, xp)
        qkv_f = 0.5 * attention_gemms
    else:
        qkv_f = gemm_time(gpu, tokens, (model.q_dim + 2 * model.kv_dim) / tp, h, fp8=fp8, xp=xp)
        attention_gemms = qkv_f + gemm_time(gpu, tokens, h, model.q_dim / tp, fp8=fp8, xp=xp)
    # fc1_f: the column-parallel GEMMs' forward (= their input-gradient) seconds, which SP's backward
    # re-gather of their inputs runs beside (labs.core.engine.stages.parallel): QKV, a dense FFN's first
    dense_ffn = dense_ffn_gemm_times(model, cluster, tokens, tp, fp8, xp)
    # the busiest rank's experts, at p.expert_skew times the balanced load (labs.core.engine.experts)
    gemm_f = attention_gemms + ffn_forward_time(model, cluster, tokens, tp, p.ep, p.capacity, fp8, xp, p.expert_skew, stack.grouped_gemm, dense_ffn)
    # MoE's router, permute, sort and unpermute kernels, forward and again in the backward; the
    # busiest rank sorts and unsorts its received load (labs.core.engine.experts: received_load).
    moe_passes = moe_pass_time(model, cluster, tokens, tp, p.ep, xp, received_load(p.capacity, p.expert_skew, xp)) if model.experts else 0.0
    # FP8 as it runs (labs.core.engine.gemm.fp8_cast_time): the forward quantizes each FP8 GEMM's
    # input, the backward each one's output gradient (the weights: layer_compute); attention, the
    # router, norms, the embedding and the output layer stay in BF16. Inputs a TP group shares are
    # quantized before the sequence-parallel gather (TE gathers them in FP8), else on every rank.
    # (MLA's projections are counted as h wide; routed experts see their k copies of each token)
    replicated = xp.where(p.sp, h / tp, h)
    if model.experts:
        copies = (model.experts_per_token + model.shared_experts) / tp
        ffn_in = (1 - model.moe_share) * (replicated + model.ffn / tp) + model.moe_share * copies * (h + model.expert_ffn)
        ffn_out = (1 - model.moe_share) * (replicated + 2 * model.ffn / tp) + model.moe_share * copies * (h + 2 * model.expert_ffn)
    else:
        gate = 2 if model.gated_ffn else 1
        ffn_in, ffn_out = replicated + model.ffn / tp, replicated + gate * model.ffn / tp
    q_in = h if model.mla else model.q_dim
    cast_f = xp.only_if(fp8, fp8_cast_time, (gpu, tokens * (replicated + q_in / tp + ffn_in), 0.0, stack.fp8_scaling, xp, fp8), 0.0)
    cast_b = xp.only_if(fp8, fp8_cast_time, (gpu, tokens * ((model.q_dim + 2 * model.kv_dim) / tp + replicated + ffn_out), 0.0, stack.fp8_scaling, xp, fp8), 0.0)
    weights = (model.layer_params - model.layer_expert_params) / tp + model.layer_expert_params / p.ep
    fp8_weight_casts = xp.only_if(fp8, fp8_cast_time, (gpu, 0.0, weights, stack.fp8_scaling, xp, fp8), 0.0)
    head_dim = model.score_dim / a
    scores_f = xp.only_if(xp.not_(p.flash), gemm_time, (gpu, s, s_full, head_dim, 2 * b * a / tp, False, xp), 0.0)  # read where no flash attention
    # Flash attention: the causal pairs; a window's or a chunk's at their own rate
    # (labs.core.engine.models.Model.attention_time_share), each kernel call at its length's and its
    # head size's rate (labs.core.engine.gemm.attention_rate). Ring CP (TE's and torch's) calls the
    # kernel once a ring step on one chunk's queries and one chunk's keys (s / cp tokens);
    # all-gather CP and Ulysses call it over the whole sequence's keys.
    call_seq = xp.where(p.cp_ring & xp.not_(p.cp_ulysses), s, s_full)
    flash_f, flash_b = flash_attention_time(gpu, 0.5 * 4 * b * s * s_full * model.score_dim / tp * model.attention_time_share,
                                            stack.attention_kernel, call_seq, head_dim, xp)
    attn_f = xp.where(p.flash, flash_f, scores_f)
    attn_b = xp.where(p.flash, flash_b, 2 * scores_f)
    # Ring CP merges each step's partial output into the running one (and, backward, accumulates
    # the Q, K and V gradients): the stack's bytes per output element a step (Era.cp_merge_bytes).
    ring = p.flash & p.cp_ring & xp.not_(p.cp_ulysses) & (p.cp > 1)
    merge_elements = p.cp * b * s * model.q_dim / tp
    merge_f = xp.where(ring, merge_elements * stack.cp_merge_bytes[0] / hbm_rate, 0.0)
    merge_b = xp.where(ring, merge_elements * stack.cp_merge_bytes[1] / hbm_rate, 0.0)
    # A ring over contiguous blocks waits, every step, for the rank holding the sequence's end: it
    # does 2 - 1/cp times the mean causal work (labs.core.engine.context.causal_work).
    imbalance = xp.where(p.cp_contiguous & (p.cp > 1), contiguous_imbalance_columns(p.cp, xp), 1.0)
    attn_f, attn_b = attn_f * imbalance, attn_b * imbalance
    written = layer_activation_columns(model, s, b, tp, p.sp, xp.where(p.flash, _SELECTIVE, _NONE), xp)
    # Eager PyTorch moves more bytes per element-wise op than fused kernels (labs.core.engine.gemm).
    fused = stack.fused_elementwise | p.torch_compile
    elementwise = ELEMENTWISE_TRAFFIC * xp.only_if(xp.not_(fused), unfused_elementwise_ratio, (model,), 1.0) * written / hbm_rate
    scores_elementwise = ELEMENTWISE_TRAFFIC * 5 * a * s * s_full * b / tp / hbm_rate
    gpu_f = gemm_f + cast_f + attn_f + merge_f + moe_passes + elementwise
    # The forward launches `kernels` per layer, the backward twice as many; under CUDA graphs the
    # host replays a graph instead (labs.core.engine.eras: cuda_graphs), and launches only what no
    # graph captures (an MoE layer's experts).
    if stack.cuda_graphs == "none":
        launch_f = xp.where(p.torch_compile, kernels_per_layer(stack, True), kernels_per_layer(stack, False)) * stack.cpu_s_per_kernel
    else:
        graphs, eager = launches_per_layer(stack, False, model.moe_share)
        launch_f = xp.full_like(gpu_f, graphs * CUDA_GRAPH_LAUNCH_S + eager * stack.cpu_s_per_kernel)
    rerun = xp.maximum(gpu_f, launch_f)  # inside the backward's unshard (layer_compute): no copies of its own
    recompute = xp.where(p.full, p.redo * rerun, xp.where((p.rc == _SELECTIVE) & xp.not_(p.flash), scores_f + scores_elementwise, 0.0))
    # Finer grains: op-level checkpointing re-runs the element-wise ops and half the GEMMs;
    # DeepSeek-V3's re-runs the norms and SwiGLU (element-wise) and MLA's up-projections.
    up_proj = gemm_time(gpu, tokens, model.up_projection_params / tp / max(model.q_lora_rank, 1), max(model.q_lora_rank, 1), fp8=fp8, xp=xp) if model.mla else 0.0
    recompute = xp.where(p.rc == _OPS, elementwise + 0.5 * gemm_f, xp.where(p.rc == _NORMS_UP, elementwise + up_proj, recompute))
    return SimpleNamespace(gemm_f=gemm_f, qkv_f=qkv_f, fc1_f=dense_ffn[0], attn_f=attn_f, attn_b=attn_b, gpu_f=gpu_f, launch_f=launch_f, fp8_weight_casts=fp8_weight_casts,
                           gpu_b=gemm_f + cast_b + attn_b + merge_b + moe_passes + elementwise + recompute, written=written)


def layer_times(hidden: int, heads: int, seq_len: int, micro_batch: int, gpu_key: str) -> dict[str, float]:
    """One GPT layer's forward, input-gradient and weight-gradient seconds for one micro-batch on
    one GPU without TP, flash attention or recomputation, in BF16 with the default stack's kernels
    (labs.core.engine.pipeline.op_costs_from_shape times Qi et al.'s stages with it)."""
    model = Model("layer", 1, hidden, heads, seq_len, 1)
    cluster = Cluster(GPUS[gpu_key], gpus_per_node=1, nodes=1)
    s = float(seq_len)
    b = float(micro_batch)
    one_gpu = SimpleNamespace(
        tp=1.0, cp=1.0, ep=1.0, b=b, s=s, s_full=s, tokens=b * s, fp8=False, flash=False, sp=False, cp_contiguous=False,
        torch_compile=False, capacity=0.0, rc=_NONE, full=False, redo=0.0, zero=0, dp=1.0, shard=1.0, expert_shard=1.0,
        forward_unshards=0.0, grad_sync=0, reduce_each_mb=False, grad_fp32=False, expert_skew=1.0, cp_ring=False, cp_ulysses=False, m=1.0)
    layer = layer_compute(model_terms(model), cluster, stack_of(None), one_gpu, SCALAR)
    return {"layer_forward_s": layer.fwd, "layer_input_grad_s": layer.layer_b, "layer_weight_grad_s": layer.layer_w}
