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
MFU still counts attention as Megatron does: 4 b s^2 h per layer forward, all of it.
"""

from __future__ import annotations

import numpy as np

from labs.core.hardware import GPU

# Fitted on Korthikanti et al. 2022 Table 4 (22B layer, TP=8, A100; rows
# korthikanti_t4_baseline_no_recompute forward and backward) together with ELEMENTWISE_TRAFFIC in
# labs.core.step: see labs.core.calibration.fit_layer_constants, whose result the tests compare
# with these values. Applied unchanged to every GPU's own MAMF.
LAYER_GEMM_SHARE = 0.825
# Calculon's A100 GEMM table (calculon-ai/calculon systems/a100_80g.json, gflops_efficiency):
# 0.6 at 1 GFLOP, 0.9 at 16, 0.95 from 128. A fixed cost of 2.7 us per call at the best-shape
# rate gives 0.58 / 0.95 / 0.99 of the large-GEMM rate at those sizes.
GEMM_FIXED_S = 2.7e-6
FLASH_BACKWARD_OVER_FORWARD = 2.5  # FlashAttention-2 backward: 5 matmuls against the forward's 2


def layer_gemm_rate(gpu: GPU, fp8=False):
    """FLOP/s a transformer layer's large GEMMs sustain on this GPU, in BF16 or FP8 (the same
    share of each precision's measured best-shape rate)."""
    return np.where(fp8, gpu.fp8_mamf_flops, gpu.mamf_flops) * LAYER_GEMM_SHARE


def gemm_time(gpu: GPU, m, n, k, calls=1.0, fp8=False):
    """Seconds for `calls` GEMMs of shape (m, n, k) each; every argument may be a numpy column."""
    return calls * (2.0 * m * n * k / layer_gemm_rate(gpu, fp8) + GEMM_FIXED_S)


def gemm_efficiency(gpu: GPU, m, n, k):
    """Achieved FLOP/s of one (m, n, k) GEMM over the bf16 peak."""
    flops = 2.0 * m * n * k
    return flops / gemm_time(gpu, m, n, k) / gpu.bf16_flops


def flash_attention_time(gpu: GPU, causal_flops_forward):
    """(forward, backward) seconds of fused attention doing `causal_flops_forward` in forward."""
    forward = causal_flops_forward / (gpu.bf16_flops * gpu.attention_efficiency)
    return forward, FLASH_BACKWARD_OVER_FORWARD * forward
