"""How long a transformer layer's matmuls take on one GPU, from their shapes.

A GEMM of shape (M, N, K) does 2MNK FLOPs. `gemm_time` is the one function every stage calls; it
prices a GEMM as the GPU's cuBLAS-class kernel runs it (Anthony et al. 2024, arXiv:2401.14489, on
tiles and waves; NVIDIA's "Matrix Multiplication Background" guide):
- tiles and waves: the output is cut into tile_m x tile_n tiles, one per SM at a time; a wave runs
  `sms` tiles, and the last wave runs whatever is left (wave quantisation: 64 tiles on H100's 132
  SMs leave half the chip idle); a tile's edge pads M and N (tile quantisation: N = 192 runs as 256);
- the mainloop of a tile runs K + k_tail elements at the SM's share of the ceiling rate (k_tail:
  the pipeline's fill and the epilogue, as elements of K);
- the ceiling: `share` of the GPU's measured best-shape rate (MAMF, `GPU.mamf_flops` or
  `GPU.fp8_mamf_flops`): the rate a long run of large GEMMs sustains;
- operands through HBM: A, B (1 byte in FP8, 2 in BF16) and the BF16 output at the streaming rate.
  Compute and memory overlap imperfectly: the time is their ROOFLINE_NORM-norm (3: a GEMM bound
  by both takes ~1.26x the larger alone), which is what makes thin and small-K GEMMs slow;
- plus fixed_s per call: the launch and the first wave's ramp.
Each architecture's constants are fitted on its own GPUs' cuBLASLt rows (GEMM_KERNELS names them);
MoE experts run as one grouped launch (`grouped_gemm_time`).

Fused flash attention is its own kernel (Dao 2023): it executes the causal half of the s^2
work, and its backward recomputes the scores, doing 2.5x the forward's FLOPs (5 matmuls to 2).
MFU still counts attention as Megatron does: 4 b s^2 h per layer forward, all of it. How fast
it runs is the kernel's, not the GPU's: the software stack (labs.core.engine.eras) names the kernel,
and its rate rises with the sequence length of each call and with the head size (`attention_rate`).

FP8 (`fp8_cast_time`): the recipe's quantize kernels (cast, transpose, amax) stream every FP8 GEMM
input through HBM, at the rate TE's quantize kernels reach (QUANTIZE_HBM_SHARE).

Block-scaled formats (Plan.precision "mxfp8", "nvfp4", "fp8_blockwise": labs.core.engine.precision):
each GEMM runs at its format's kernel (PRECISION_KERNELS, fitted on that format's own kernel rows,
or the per-tensor FP8 kernel where no row exists), reads its operands at the format's bytes with
their scales, and its quantize kernels write both usages with their scales. The stages pass the
precision's code where they passed `fp8` (0, bf16, is falsy). Under NVFP4 the recipe keeps a share
of the layers in BF16 (precision.NVFP4_BF16_LAYER_SHARE): the step model prices one average layer,
so each of its GEMMs and casts is that share BF16.

Element-wise work (norms, RoPE, activation, residual adds, casts) streams through HBM. A stack
that fuses them (Megatron's and Transformer Engine's kernels, or torch.compile) moves fewer bytes
than eager PyTorch, whose norms upcast to fp32 and whose RoPE and SwiGLU run as separate kernels:
`elementwise_bytes_per_token` counts both from the code, per token of one layer's forward.
"""

from __future__ import annotations

from dataclasses import dataclass

from functools import lru_cache

import numpy as np

from labs.core.engine.hardware import ATTENTION_KERNELS, GPU  # noqa: F401  (ATTENTION_KERNELS: labs.core.engine.eras checks stacks against it)
from labs.core.engine.precision import FP8, GEMM_PRECISIONS, NVFP4, PRECISIONS
from labs.core.engine.stages.xp import NUMPY


@dataclass(frozen=True)
class GemmKernel:
    """How one architecture's GEMM kernels run (module docstring), and the rows they rest on."""

    tile_m: int
    tile_n: int
    k_tail: float  # elements of K a tile's fill and epilogue cost
    fixed_s: float  # seconds a call pays beside its waves
    share: float | None  # of the FP8 MAMF a long run sustains; None: LAYER_GEMM_SHARE (Ampere's fit)
    rows: str
    bf16_share: float | None = None  # of the BF16 MAMF; None: LAYER_GEMM_SHARE (Ampere's layer fit), where no BF16 row fits one


# Fitted by least squares on log(rate) over a grid (tile 128x128, 128x256, 256x128 or 256x256; k_tail
# 0-672 in steps of 32; fixed_s 0-4.5 us in steps of 0.5 us (Blackwell: 0 or 1 us); share in steps of
# 0.005; ROOFLINE_NORM inf (the larger alone), 2, 3 or 4: 3 fits the two architectures' 27 rows best,
# sum of squared log errors 0.041 against 0.054 for the larger alone), and
# tests/test_kernels_v4.py reports every row's error:
# - hopper: the 18 cuBLASLt FP8 rows of H100 and H200 (kernel_benchmarks_v4.json
#   gemm_azure_h100_fp8_* and gemm_azure_h200_fp8_*: 1024^3 .. 32768^3, 1024x2145x1024,
#   6144x12288x12288, 802816x192x768), 10,000 warm-ups: a sustained rate, 0.96 of each part's FP8 MAMF
#   (mamf_h100_fp8, mamf_h200_fp8). BF16 on Hopper: the same kernel constants, 0.85 of the BF16 MAMF,
#   fitted on DeepGEMM's BF16 grouped GEMMs on H200 at GLM-5's expert up-projection
#   (ggemm_h200_glm_up_deepgemm_*: 256 experts of 1,024 to 8,192 tokens, N 4,096, K 6,144, each
#   expert's GEMM large enough to fill its waves; tile-ai/TileOPs PR #1567, kernel-only timing with
#   the GPU at its power limit): rows -0.9% .. +1.2%. It is the share engine v3 took from A100's layer
#   fit (LAYER_GEMM_SHARE), now resting on Hopper's own rows (unconfirmed for cuBLAS's dense BF16
#   GEMMs: no dense BF16 row by shape on Hopper is stored). The FP8 rows' 0.96 of the FP8 MAMF would
#   have put these rows 13% fast.
# - blackwell: the 9 cuBLASLt FP8 rows of GB200 (gemm_azure_gb200_fp8_*), 0.83 of mamf_gb200_fp8;
#   B200/B300/GB300 and BF16 take them (unconfirmed: no by-shape row for those).
# - ampere: tile, tail and fixed cost fitted (same grid) on Calculon's A100 GEMM table
#   (calculon-ai/calculon systems/a100_80g.json, gflops_efficiency: square GEMMs of 1 and 16 GFLOP at
#   0.632 and 0.947 of the 128-GFLOP one; tests/data/gemm_microbenchmarks.json size_curve: a
#   modelling table): 128 x 64 tiles, no tail, 1 us. Azure's cuBLASLt FP16 rows by shape on A100
#   (gemm_azure_a100_fp16_*, 10,000 warm-ups) are reported against it, not fitted: the cubes and
#   6144x12288x12288 within 11% (-10.3% at 16384^3 .. +7.2% at 1024^3), the thin and odd shapes 26%
#   and 37% fast (802816x192x768, 1024x2145x1024). The grid's best fit on all eight (64 x 64 tiles,
#   k_tail 416, 3.5 us, 0.975 of the MAMF; rows -10% .. +4.4%) leaves Korthikanti's 22B layer 10-15%
#   slow even at a layer share of 1.0: these 2024 kernels (228 TFLOP/s at 4096^3) and that 2022
#   layer do not reconcile under one tile model, so the tiles stay Calculon's (unconfirmed). Its
#   share is LAYER_GEMM_SHARE, fitted on Korthikanti et al. 2022 Table 4 (22B layer, TP=8, A100; rows
#   korthikanti_t4_baseline_no_recompute forward and backward, and korthikanti_t5_22B) together with
#   ELEMENTWISE_TRAFFIC in labs.core.engine.stages.compute: labs.core.engine.calibration.fit_layer_constants,
#   whose result tests/test_layer_timing.py compares with these values. It is A100's alone now.
# - cdna3 (Instinct MI300X, MI325X): the 6 hipBLASLt FP8 rows of MI300X at 4096^3 and up
#   (gemm_azure_mi300x_fp8_4096x4096x4096, _8192^3, _16384^3, _32768^3, _6144x12288x12288,
#   _802816x192x768; Azure ND MI300X v5, the same harness as the Hopper and GB200 rows): 128 x 128
#   tiles, k_tail 192, no fixed cost, 0.85 of the FP8 MAMF (GPU.fp8_mamf_flops, itself assumed:
#   labs.core.engine.hardware); rows -8.6% .. +10.4%, the two largest squares fast (the part runs
#   them at a lower rate than 8192^3: 1,015-1,029 against 1,159 TFLOP/s). Its three smallest rows
#   (1024^3, 2048^3, 1024x2145x1024) each take ~40 us whatever their FLOPs, a per-call floor the
#   harness's H100 and GB200 rows do not show (7.8 and 4.4 us at 1024^3): reported, not fitted.
#   With Hopper's constants the six rows ran +3.8% .. +25.4% fast. BF16 on Instinct takes these
#   tiles with LAYER_GEMM_SHARE (unconfirmed: no BF16 row by shape); cdna4 (MI355X) takes cdna3's
#   (unconfirmed: no MI355X row by shape).
GEMM_KERNELS = {
    "hopper": GemmKernel(128, 128, 96, 4.0e-6, 0.96, "gemm_azure_h100_fp8_*, gemm_azure_h200_fp8_* (18 rows); BF16: ggemm_h200_glm_up_deepgemm_* (4 rows)",
                         bf16_share=0.85),
    "blackwell": GemmKernel(128, 256, 32, 1.0e-6, 0.83, "gemm_azure_gb200_fp8_* (9 rows)", bf16_share=0.83),
    "cdna3": GemmKernel(128, 128, 192, 0.0, 0.85, "gemm_azure_mi300x_fp8_* from 4096^3 (6 rows)"),
}
GEMM_KERNELS["ampere"] = GemmKernel(128, 64, 0, 1.0e-6, None, "Calculon a100_80g.json gflops_efficiency; share: korthikanti_t4_baseline_no_recompute, korthikanti_t5_22B")
GEMM_KERNELS["cdna4"] = GEMM_KERNELS["cdna3"]
LAYER_GEMM_SHARE = 0.85  # Ampere's share of the MAMF (see above); refitted with SP's backward re-gathers priced: 0.855 (grid 61), 0.8575 (grid 81), was 0.845
# Block-scaled GEMMs (labs.core.engine.precision), fitted on the same grid (k_tail to 1,504; fixed_s
# to 4 us) with each format's operand bytes (scales included), tests/test_block_scaled.py reporting
# every row's error:
# - ("blackwell", "nvfp4"): the 8 cuBLASLt FP4 rows of GB200 (gemm_azure_gb200_fp4_*; the source
#   does not name the FP4 format: cuBLASLt's block-scaled FP4), 1024^3 .. 32768^3, 1024x2145x1024,
#   802816x192x768: 256 x 256 tiles, k_tail 512, 4 us, 0.795 of the dense FP4 peak (GPU.fp4_flops:
#   no FP4 MAMF row is stored); rows -4.7% .. +5.5%. B200, B300 and GB300 take it (unconfirmed).
# - ("hopper", "fp8_blockwise"): DeepGEMM's six training-shape rows on H800 (M = 4,096:
#   gemm_deepgemm_h800_fp8blk_4096x*, 1 x 128 activation and 128 x 128 weight scales, FP32
#   promotion on CUDA cores): 128 x 128, k_tail 448, 4 us, 0.805 of the dense FP8 peak (1,593
#   TFLOP/s on H800 and H100: DeepGEMM passes cuBLASLt's per-tensor FP8 MAMF); rows -1.9% .. +3.3%.
#   Its M = 64 and 128 rows (inference shapes) are reported, not fitted.
# - mxfp8 (Blackwell), and fp8_blockwise on Blackwell: the per-tensor FP8 kernel and share
#   (unconfirmed: no MXFP8 or blockwise GEMM row on Blackwell is stored; the datasheets give one
#   dense FP8 peak for both).
PRECISION_KERNELS = {
    ("blackwell", "nvfp4"): (GemmKernel(256, 256, 512, 4.0e-6, 0.795, "gemm_azure_gb200_fp4_* (8 rows)"), "fp4_flops"),
    ("hopper", "fp8_blockwise"): (GemmKernel(128, 128, 448, 4.0e-6, 0.805, "gemm_deepgemm_h800_fp8blk_4096x* (6 rows)"), "fp8_flops"),
}
ROOFLINE_NORM = 3.0
# How an MoE layer's experts run (labs.core.engine.eras.Era.grouped_gemm), as a share of the one grouped
# launch priced here: "grouped" is that launch (within 1.2% of DeepGEMM's BF16 grouped GEMM on H200 at
# GLM-5's up-projection, rows ggemm_h200_glm_up_deepgemm_*, tile-ai/TileOPs PR #1567); torch._grouped_mm
# ran 0.909-0.931 of DeepGEMM's rate in the same table (ggemm_h200_glm_up_torch_* over _deepgemm_*, 1,024
# to 8,192 tokens an expert): their mean, 0.92, on every GPU (unconfirmed off Hopper).
GROUPED_LAUNCH_SHARE = {"grouped": 1.0, "grouped_mm": 0.92}
# The fixed cost per call of the GEMMs that the stages split themselves (labs.core.engine.stages.parallel:
# AsyncTP's per-step GEMMs): Hopper's, where AsyncTP runs.
GEMM_FIXED_S = GEMM_KERNELS["hopper"].fixed_s
FLASH_BACKWARD_OVER_FORWARD = 2.5  # FlashAttention-2 backward: 5 matmuls against the forward's 2

# Fraction of the bf16 dense peak each fused attention kernel sustains, forward and backward
# together (the backward does 2.5x the forward's FLOPs, so it weighs most), head dim 128, 2k-8k
# tokens (taken at ATTENTION_REFERENCE_SEQ), from the kernels' own benchmarks:
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
# The attention rate by the sequence length s of one kernel call: rate(s) ~ s / (s + s0), s0 per
# kernel (a short call has few key blocks per query block to hide its prologue and epilogue), the
# catalog's rate taken at ATTENTION_REFERENCE_SEQ (the B200 rows it holds are the 4K rows). s0 solved
# from each kernel's shortest and longest causal rows, the middle ones as checks (tests/test_kernels_v4.py):
# - cudnn 896: attn_cudnn_b200_hd64_causal_s1024 (627 TFLOP/s) and _s16384 (1,115); also cuDNN on
#   Hopper and Ampere (unconfirmed: no cuDNN row by length there).
# - fa4 1,874: attn_fa4_b200_hd64_causal_s1024 (463) and _s16384 (1,176).
# - fa3 238: attn_fa3_h100_pytorchbench_s512 (430) and _s16384 (621); the rows' mask is not stated
#   (tritonbench's default, non-causal): a causal call ramps slower (unconfirmed).
# - fa2 0 (no ramp): FA2 2.7.4 on B200 is flat from 512 to 16K (attn_fa2_b200_hd64_full_s512 ..
#   _s16384: 307-381, not rising); no FA2 row by length on Hopper or Ampere (unconfirmed).
ATTENTION_RAMP_SEQ = {"cudnn": 896.0, "fa4": 1874.0, "fa3": 238.0, "fa2": 0.0}
ATTENTION_REFERENCE_SEQ = 4096.0
# The rate by head size d: ~ d / (d + d0), d0 from the one pair of rows that differ only in head
# size (cuDNN on B200, non-causal, 1K: attn_cudnn_b200_hd64_full_s1024 980 and
# attn_cudnn_b200_hd128_full_s1024 1,428 TFLOP/s: 1,428 / 980 = 2 (64 + d0) / (128 + d0)), applied to
# every kernel (unconfirmed elsewhere). The catalog's rates are at head size 128 (the Hopper and
# Ampere fractions, GB200's FA2 row attn_fa2_azure_gb200, the Instinct parts' H100-derived rates)
# except those taken from B200's head-size-64 rows (labs.core.engine.hardware._B200_ATTENTION: B200, and
# B300, GB200's cuDNN and FA4, GB300 scaled from them): HEAD_DIM_64_RATES.
ATTENTION_HEAD_DIM_D0 = 107.7
HEAD_DIM_64_RATES = {(gpu, kernel) for gpu in ("B200", "B300", "GB300") for kernel in ("cudnn", "fa4", "fa2", "fa3")} | {("GB200", "cudnn"), ("GB200", "fa4")}

# FP8 as Transformer Engine runs it (transformer_engine/pytorch/module/linear.py, layernormlinear.py,
# layernorm_mlp.py; cpp_extensions cast_transpose): every FP8 GEMM input is quantized by a kernel
# that reads it in BF16 and writes it in FP8 twice, row-wise for the GEMM that reads it as is and
# column-wise (transposed) for the backward GEMM that reads it transposed (Hopper's FP8 GEMMs take
# only the "TN" layout): the forward's inputs and weights, the backward's output gradients.
# - delayed scaling (TE's DelayedScaling, Megatron-Core 2024's recipe): the kernel also reduces the
#   amax for the next step's scale, in the same pass: 2 + 1 + 1 = 4 bytes an element.
# - current scaling (TE's Float8CurrentScaling, torchao's dynamic tensorwise float8): the amax of
#   this tensor is needed before the cast: one more read pass, 2 bytes an element.
# - the FP8 weight cache: TE casts a weight once a step (is_first_microbatch, which Megatron passes)
#   and reuses it for every micro-batch; torchao's Float8Linear casts it in every forward.
# The GEMMs that stay in BF16 by recipe: the attention core (its BMMs, or the fused kernel), the
# router (labs.core.engine.experts), the embedding and the output layer (labs.core.engine.stages.pipe);
# DeepSeek-V3 Sec. 3.3.1 keeps the same ones in higher precision.
FP8_CAST_BYTES = 2.0 + 1.0 + 1.0
FP8_AMAX_READ_BYTES = {"delayed": 0.0, "current": 2.0}
# Quantize kernels reach this share of the datasheet HBM bandwidth: the median of TE's MXFP8 cast
# kernel on B200 (8192 x 8192, BF16/FP16/FP32 input, row-wise, column-wise and both: rows
# fp8k_mxfp8_cast_b200_*, 0.67-0.79 of 7.7 TB/s for the bytes they move, median 0.69). Taken for
# every GPU and for per-tensor scaling (unconfirmed: no per-tensor cast kernel row on Hopper).
QUANTIZE_HBM_SHARE = 0.69


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


def attention_rate(gpu: GPU, kernel: str, seq=None, head_dim=None, xp=NUMPY):
    """FLOP/s fused attention sustains on this GPU with `kernel`: the part's measured rate where
    the catalog has one (GPU.attention_flops), else its architecture's fraction of the bf16 peak;
    for calls over `seq` tokens with heads of `head_dim` (None: the catalog's reference), that
    rate moved along the kernel's length ramp and the head-size curve."""
    measured = dict(gpu.attention_flops)
    if kernel in measured:
        rate = measured[kernel]
    elif (kernel, gpu.arch) not in ATTENTION_EFFICIENCY:
        raise ValueError(f"attention_kernel {kernel!r} has no rate on {gpu.name} (measured: {sorted(measured) or 'none'})")
    else:
        rate = gpu.bf16_flops * attention_efficiency(kernel, gpu.arch)
    runs = "fa2" if kernel == "fa3" and gpu.arch != "hopper" else kernel  # FlashAttention-3 is built for sm90: elsewhere FA2
    if seq is not None:
        s0 = ATTENTION_RAMP_SEQ.get(runs, 0.0)
        rate = rate * (seq / (seq + s0)) / (ATTENTION_REFERENCE_SEQ / (ATTENTION_REFERENCE_SEQ + s0))
    if head_dim is not None:
        d0, d_ref = ATTENTION_HEAD_DIM_D0, 64.0 if (gpu.name.split(" @ ")[0], kernel) in HEAD_DIM_64_RATES else 128.0
        rate = rate * (head_dim / (head_dim + d0)) / (d_ref / (d_ref + d0))
    return rate


def gemm_kernel(gpu: GPU) -> GemmKernel:
    return GEMM_KERNELS[gpu.arch]


def _precision_kernel(gpu: GPU, name: str) -> tuple[float, ...]:
    """(tile_m, tile_n, k_tail, fixed_s, ceiling FLOP/s, operand bytes) of this GPU's GEMMs in one
    precision (module docstring); a precision the GPU cannot run (refused where a plan enters,
    labs.core.engine.precision.check_precision_on) takes BF16's, so no rate is ever zero."""
    kernel = gemm_kernel(gpu)
    if name != "bf16" and (gpu.arch not in GEMM_PRECISIONS[name].archs or not gpu.fp8_mamf_flops):
        name = "bf16"
    if name == "bf16":
        share = LAYER_GEMM_SHARE if kernel.bf16_share is None else kernel.bf16_share
        return kernel.tile_m, kernel.tile_n, kernel.k_tail, kernel.fixed_s, gpu.mamf_flops * share, 2.0
    operand = GEMM_PRECISIONS[name].activation_bytes  # weights' scales are fewer (128 x 128 blocks): the A side's taken for both
    if (gpu.arch, name) in PRECISION_KERNELS:
        kernel, base = PRECISION_KERNELS[(gpu.arch, name)]
        return kernel.tile_m, kernel.tile_n, kernel.k_tail, kernel.fixed_s, getattr(gpu, base) * kernel.share, operand
    share = LAYER_GEMM_SHARE if kernel.share is None else kernel.share
    return kernel.tile_m, kernel.tile_n, kernel.k_tail, kernel.fixed_s, gpu.fp8_mamf_flops * share, operand


@lru_cache(maxsize=256)
def _precision_table(gpu: GPU) -> tuple[np.ndarray, ...]:
    """_precision_kernel's six values for every precision, each an array indexed by the code."""
    rows = [_precision_kernel(gpu, name) for name in PRECISIONS]
    return tuple(np.array(column, dtype=float) for column in zip(*rows))


def _by_precision(gpu: GPU, code, xp):
    """_precision_kernel's values at `code` (a bool, an int, or a numpy column of either)."""
    if xp.scalar:
        return _precision_kernel(gpu, PRECISIONS[int(code)])
    index = np.asarray(code, dtype=int)
    return tuple(column[index] for column in _precision_table(gpu))


def _uses(code, which, xp) -> bool:
    return int(code) == which if xp.scalar else bool(np.any(np.asarray(code) == which))


def gemm_ceiling(gpu: GPU, fp8=False, xp=NUMPY):
    """FLOP/s a long run of large GEMMs sustains on this GPU in a precision (`fp8`: a bool, or a
    labs.core.engine.precision code): the architecture's share of each precision's measured
    best-shape rate (GEMM_KERNELS), or the format's fitted share of its peak (PRECISION_KERNELS)."""
    return _by_precision(gpu, fp8, xp)[4]


layer_gemm_rate = gemm_ceiling  # the name labs.core.engine.pipeline reads


def _kernel_time(gpu: GPU, m, n, k, groups, code, xp):
    tile_m, tile_n, k_tail, fixed_s, ceiling, operand_bytes = _by_precision(gpu, code, xp)
    tiles = groups * xp.ceil(m / tile_m) * xp.ceil(n / tile_n)
    waves = xp.ceil(tiles / gpu.sms)
    compute = waves * 2.0 * tile_m * tile_n * (k + k_tail) * gpu.sms / ceiling
    memory = groups * ((m * k + n * k) * operand_bytes + 2.0 * m * n) / (gpu.hbm_bytes_per_s * gpu.hbm_efficiency)
    return (compute ** ROOFLINE_NORM + memory ** ROOFLINE_NORM) ** (1.0 / ROOFLINE_NORM) + fixed_s


def precision_gemm_time(gpu: GPU, m, n, k, precision: str, groups=1.0, xp=NUMPY):
    """Seconds of one GEMM kernel (or one grouped launch) in `precision`, every layer of it in
    that format: the kernel a microbenchmark times (grouped_gemm_time averages in the layers a
    recipe keeps in BF16)."""
    return _kernel_time(gpu, m, n, k, groups, PRECISIONS.index(precision), xp)


def grouped_gemm_time(gpu: GPU, m, n, k, groups=1.0, fp8=False, xp=NUMPY):
    """Seconds of one launch running `groups` GEMMs of shape (m, n, k) each (a grouped GEMM: the
    experts of an MoE layer, each with its own weights): their tiles share the waves, each
    group's M pads to the tile, each group reads its own B; one fixed cost. groups=1: one GEMM.
    `fp8`: a bool or a precision code (labs.core.engine.precision.PRECISIONS); under NVFP4 the
    average layer, its recipe's BF16 share of layers in BF16. Every argument may be a numpy column."""
    time = _kernel_time(gpu, m, n, k, groups, fp8, xp)
    if _uses(fp8, NVFP4, xp):
        share = GEMM_PRECISIONS["nvfp4"].bf16_layer_share
        time = xp.where(np.equal(fp8, NVFP4), (1.0 - share) * time + share * _kernel_time(gpu, m, n, k, groups, 0, xp), time)
    return time


def gemm_time(gpu: GPU, m, n, k, calls=1.0, fp8=False, xp=NUMPY):
    """Seconds for `calls` GEMMs of shape (m, n, k) each; every argument may be a numpy column."""
    return calls * grouped_gemm_time(gpu, m, n, k, 1.0, fp8, xp)


def gemm_efficiency(gpu: GPU, m, n, k):
    """Achieved FLOP/s of one (m, n, k) GEMM over the bf16 peak."""
    flops = 2.0 * m * n * k
    return flops / gemm_time(gpu, m, n, k) / gpu.bf16_flops


def quantize_bytes(precision: str, weights: bool, scaling: str = "delayed") -> float:
    """HBM bytes a recipe's quantize kernel moves per BF16 element it casts, on the share of layers
    the recipe quantizes: reads it (2), writes the row-wise and the column-wise copies with their
    scales (labs.core.engine.precision.GemmPrecision), and where a per-tensor scale is taken from
    the tensor itself first (FP8's current scaling; NVFP4's FP32 tensor scale always) one more
    read. Per-tensor FP8 under delayed scaling: FP8_CAST_BYTES."""
    spec = GEMM_PRECISIONS[precision]
    if precision == "bf16":
        return 0.0
    if precision == "fp8":
        return FP8_CAST_BYTES + FP8_AMAX_READ_BYTES[scaling]
    copy = spec.weight_bytes if weights else spec.activation_bytes
    amax = FP8_AMAX_READ_BYTES["current"] if spec.tensor_amax_pass else 0.0
    return (2.0 + 2 * copy + amax) * (1.0 - spec.bf16_layer_share)


def fp8_cast_time(gpu: GPU, activation_elements, weight_elements, scaling: str = "delayed", xp=NUMPY, precision=FP8):
    """Seconds of the low-precision recipe's quantize kernels over `activation_elements` (GEMM
    inputs, or output gradients) and `weight_elements`, each cast once (quantize_bytes), at
    QUANTIZE_HBM_SHARE of the HBM rate. `precision`: a code of labs.core.engine.precision (or a
    column of them), per-tensor FP8 by default."""
    if xp.scalar:
        name = PRECISIONS[int(precision)]
        per_activation, per_weight = quantize_bytes(name, False, scaling), quantize_bytes(name, True, scaling)
    else:
        index = np.asarray(precision, dtype=int)
        per_activation = np.array([quantize_bytes(name, False, scaling) for name in PRECISIONS])[index]
        per_weight = np.array([quantize_bytes(name, True, scaling) for name in PRECISIONS])[index]
    return (activation_elements * per_activation + weight_elements * per_weight) / (gpu.hbm_bytes_per_s * QUANTIZE_HBM_SHARE)


def flash_attention_time(gpu: GPU, causal_flops_forward, kernel: str = "cudnn", seq=None, head_dim=None, xp=NUMPY):
    """(forward, backward) seconds of fused attention doing `causal_flops_forward` in forward,
    with the stack's kernel (labs.core.engine.eras.Era.attention_kernel) on this GPU's architecture,
    in calls over `seq` tokens with heads of `head_dim` (None: the catalog's reference rate)."""
    forward = causal_flops_forward / attention_rate(gpu, kernel, seq, head_dim, xp)
    return forward, FLASH_BACKWARD_OVER_FORWARD * forward
