"""How long a transformer layer's matmuls take on one GPU, from their shapes.

A GEMM of shape (M, N, K) does 2MNK FLOPs. It runs at the GPU's measured best-shape rate
(`GPU.mamf_flops`, the MAMF table) times LAYER_GEMM_SHARE, the share of that rate the GEMMs of a
training step keep (sustained clocks, shapes that are not the best one, the epilogues), plus a
fixed GEMM_FIXED_S per call: launch, the first wave's ramp and the last wave's tail. The fixed
part is what makes small GEMMs slow: a small hidden size, a high TP degree or micro-batch 1 do
fewer FLOPs per call at the same fixed cost, so efficiency falls with the GEMM's size.

Not modelled: wave and tile quantisation (a 10,922-wide SwiGLU runs 46% slower than a
10,944-wide one on H100, stas00/ml-engineering training/performance): the curve is smooth.

Fused flash attention is its own kernel (Dao 2023): it executes the causal half of the s^2
work, and its backward recomputes the scores, doing 2.5x the forward's FLOPs (5 matmuls to 2).
MFU still counts attention as Megatron does: 4 b s^2 h per layer forward, all of it. How fast
it runs is the kernel's, not the GPU's: the software stack (labs.core.engine.eras) names the kernel.

Element-wise work (norms, RoPE, activation, residual adds, casts) streams through HBM. A stack
that fuses them (Megatron's and Transformer Engine's kernels, or torch.compile) moves fewer bytes
than eager PyTorch, whose norms upcast to fp32 and whose RoPE and SwiGLU run as separate kernels:
`elementwise_bytes_per_token` counts both from the code, per token of one layer's forward.
"""

from __future__ import annotations

from labs.core.engine.hardware import ATTENTION_KERNELS, GPU
from labs.core.engine.stages.xp import NUMPY

# Fitted on Korthikanti et al. 2022 Table 4 (22B layer, TP=8, A100; rows
# korthikanti_t4_baseline_no_recompute forward and backward) together with ELEMENTWISE_TRAFFIC in
# labs.core.engine.step: see labs.core.engine.calibration.fit_layer_constants, whose result the tests compare
# with these values. Applied unchanged to every GPU's own MAMF.
LAYER_GEMM_SHARE = 0.825
# Calculon's A100 GEMM table (calculon-ai/calculon systems/a100_80g.json, gflops_efficiency):
# 0.6 at 1 GFLOP, 0.9 at 16, 0.95 from 128. A fixed cost of 2.7 us per call at the best-shape
# rate gives 0.58 / 0.95 / 0.99 of the large-GEMM rate at those sizes.
GEMM_FIXED_S = 2.7e-6
FLASH_BACKWARD_OVER_FORWARD = 2.5  # FlashAttention-2 backward: 5 matmuls against the forward's 2

# Fraction of the bf16 dense peak each fused attention kernel sustains, forward and backward
# together (the backward does 2.5x the forward's FLOPs, so it weighs most), head dim 128, 2k-8k
# tokens, from the kernels' own benchmarks:
# - Ampere: FlashAttention-2 reaches 50-73% of A100's peak forward and about 60-65% forward plus
#   backward (Dao 2023, arXiv:2307.08691, Sec. 4.1, Fig. 4-6): 0.6. cuDNN's fused attention on A100
#   is taken as equal (no stored benchmark; unconfirmed).
# - Hopper: Shah et al. 2024 (FlashAttention-3, arXiv:2407.08608) Fig. 5 (forward, causal, head dim
#   128) and Fig. 7 (backward) on H100 SXM5: FlashAttention-2 298-333 forward / 291-318 backward
#   TFLOP/s, cuDNN 484-529 / 465-518, FlashAttention-3 521-602 / 501-559. So 0.31, 0.50, 0.55 of
#   989.4. FlashAttention-3 runs on Hopper only; elsewhere a stack that asks for it gets FA2.
# - Blackwell and Instinct parts carry their own measured rates (GPU.attention_flops, with the
#   kernel benchmark rows of tests/data/kernel_benchmarks_v4.json beside each in the catalog).
ATTENTION_EFFICIENCY = {
    ("fa2", "ampere"): 0.6, ("cudnn", "ampere"): 0.6, ("fa3", "ampere"): 0.6,
    ("fa2", "hopper"): 0.31, ("cudnn", "hopper"): 0.50, ("fa3", "hopper"): 0.55,
}

# HBM bytes per element of each element-wise op of a layer's forward, counted from the code:
# - fused (Megatron / Transformer Engine, torch.compile): an RMSNorm or LayerNorm reads its input
#   and writes its output in bf16 (2 + 2); RoPE reads and writes q and k once (2 + 2); SwiGLU reads
#   gate and up and writes their product (3 x 2 per output element); a residual add reads two and
#   writes one (3 x 2).
# - eager PyTorch (the Llama reference RMSNorm, torchtitan's default "rmsnorm" and HF's
#   LlamaRMSNorm): x.float() (read 2, write 4), pow (4 + 4), mean (read 4), x * rsqrt (4 + 4),
#   .type_as (4 + 2), * weight (2 + 2) = 36 bytes an element; RoPE through complex or
#   rotate_half: about five passes over q and k (float, multiply, cat/view, add, cast) = 20;
#   SwiGLU as silu then multiply: (2 + 2) + (4 + 2) = 10 per output element; residual adds as fused.
NORM_BYTES = {"fused": 4.0, "eager": 36.0}
ROPE_BYTES = {"fused": 4.0, "eager": 20.0}
SWIGLU_BYTES = {"fused": 6.0, "eager": 10.0}
RESIDUAL_BYTES = 6.0


def elementwise_bytes_per_token(model, fused: bool) -> float:
    """HBM bytes one token's element-wise ops move in one layer's forward (unsharded): two norms
    over h, RoPE over q and k, the gated activation over the FFN width, two residual adds.
    GPT layers (LayerNorm, GeLU, no RoPE) are one fused kernel each in eager PyTorch too."""
    kind = "fused" if fused else "eager"
    h = model.hidden
    if not model.gated_ffn:
        return 2 * NORM_BYTES["fused"] * h + 2 * 2 * model.ffn + 2 * RESIDUAL_BYTES * h
    q_k = model.score_dim + model.kv_dim
    return 2 * NORM_BYTES[kind] * h + ROPE_BYTES[kind] * q_k + SWIGLU_BYTES[kind] * model.ffn + 2 * RESIDUAL_BYTES * h


def unfused_elementwise_ratio(model) -> float:
    """How many times the fused kernels' bytes eager PyTorch moves for this model's layers."""
    return elementwise_bytes_per_token(model, False) / elementwise_bytes_per_token(model, True)


def attention_efficiency(kernel: str, arch: str) -> float:
    return ATTENTION_EFFICIENCY[(kernel, arch)]


def attention_rate(gpu: GPU, kernel: str) -> float:
    """FLOP/s fused attention sustains on this GPU with `kernel`: the part's measured rate where
    the catalog has one (GPU.attention_flops), else its architecture's fraction of the bf16 peak."""
    measured = dict(gpu.attention_flops)
    if kernel in measured:
        return measured[kernel]
    if (kernel, gpu.arch) not in ATTENTION_EFFICIENCY:
        raise ValueError(f"attention_kernel {kernel!r} has no rate on {gpu.name} (measured: {sorted(measured) or 'none'})")
    return gpu.bf16_flops * attention_efficiency(kernel, gpu.arch)


def layer_gemm_rate(gpu: GPU, fp8=False, xp=NUMPY):
    """FLOP/s a transformer layer's large GEMMs sustain on this GPU, in BF16 or FP8 (the same
    share of each precision's measured best-shape rate)."""
    return xp.where(fp8, gpu.fp8_mamf_flops, gpu.mamf_flops) * LAYER_GEMM_SHARE


def gemm_time(gpu: GPU, m, n, k, calls=1.0, fp8=False, xp=NUMPY):
    """Seconds for `calls` GEMMs of shape (m, n, k) each; every argument may be a numpy column."""
    return calls * (2.0 * m * n * k / layer_gemm_rate(gpu, fp8, xp) + GEMM_FIXED_S)


def gemm_efficiency(gpu: GPU, m, n, k):
    """Achieved FLOP/s of one (m, n, k) GEMM over the bf16 peak."""
    flops = 2.0 * m * n * k
    return flops / gemm_time(gpu, m, n, k) / gpu.bf16_flops


def flash_attention_time(gpu: GPU, causal_flops_forward, kernel: str = "cudnn"):
    """(forward, backward) seconds of fused attention doing `causal_flops_forward` in forward,
    with the stack's kernel (labs.core.engine.eras.Era.attention_kernel) on this GPU's architecture."""
    forward = causal_flops_forward / attention_rate(gpu, kernel)
    return forward, FLASH_BACKWARD_OVER_FORWARD * forward
