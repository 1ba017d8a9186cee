"""Engine v4's kernels against their microbenchmarks (issue 37 items 1-4; rows of
tests/data/kernel_benchmarks_v4.json, its .md says where each came from). Each comparison prints
its error (pytest -s); the tolerance of each test is in its docstring. The rows a constant was
fitted on are named beside the constant (labs.core.engine.gemm); here they are its errors.

Before this change (engine v3's one share, 0.825 of MAMF, and one attention rate per kernel) the
H100 FP8 GEMMs at 1024^3, 1024x2145x1024 and N = 192 came out 64-72% too fast and the B200 causal
attention at 1K 56% (cuDNN) and 98% (FA4) too fast: those tests fail there.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import report

from labs.core import Cluster, Model, Plan, estimate
from labs.core.engine import gemm
from labs.core.engine.eras import ERAS, stack_of
from labs.core.engine.experts import PER_EXPERT_CALL_S, ffn_forward_time, moe_pass_bytes
from labs.core.engine.gemm import (
    FP8_AMAX_READ_BYTES,
    FP8_CAST_BYTES,
    QUANTIZE_HBM_SHARE,
    attention_rate,
    fp8_cast_time,
    gemm_time,
    grouped_gemm_time,
)
from labs.core.engine.hardware import GPUS
from labs.core.engine.plan import plan_columns
from labs.core.engine.stages.compute import layer_kernels
from labs.core.engine.stages.inputs import model_terms, read_plan
from labs.core.engine.stages.xp import SCALAR
from labs.core.engine.step import evaluate_plan

ROWS = {row["id"]: row for row in json.loads((Path(__file__).parent / "data" / "kernel_benchmarks_v4.json").read_text())}
GPU_OF = {"H100": "h100-sxm", "H200": "h200-sxm", "GB200": "gb200", "B200": "b200", "H800": "h800-sxm"}


def _gemm_rate(gpu, m, n, k, fp8, groups=1):
    return 2.0 * m * n * k * groups / float(grouped_gemm_time(gpu, m, n, k, groups, fp8)) / 1e12


def _row_error(row_id: str) -> float:
    row = ROWS[row_id]
    c = row["conditions"]
    gpu = GPUS[GPU_OF[row["hardware"]]]
    return report(f"{row_id} (TFLOP/s)", _gemm_rate(gpu, c["M"], c["N"], c["K"], c["dtype"] != "bf16"), row["value"])


# ---- 1. GEMMs by shape ----------------------------------------------------------------------------
HOPPER_FP8 = sorted(r for r in ROWS if r.startswith(("gemm_azure_h100_fp8_", "gemm_azure_h200_fp8_")))
GB200_FP8 = sorted(r for r in ROWS if r.startswith("gemm_azure_gb200_fp8_"))


@pytest.mark.parametrize("row", HOPPER_FP8)
def test_hopper_fp8_gemm_by_shape(row):
    """cuBLASLt FP8 on H100 and H200 (Azure, 10,000 warm-ups), the 18 rows GEMM_KERNELS['hopper'] is
    fitted on: within 10% each (measured -6.0% .. +8.8%; engine v3: +64% .. +72% at 1024^3,
    1024x2145x1024 and 802816x192x768, where wave quantisation, the 192-wide tile's padding and the
    operands' HBM time set the rate)."""
    assert abs(_row_error(row)) < 0.10


@pytest.mark.parametrize("row", GB200_FP8)
def test_gb200_fp8_gemm_by_shape(row):
    """cuBLASLt FP8 on GB200 (Azure ND GB200 v6), the 9 rows GEMM_KERNELS['blackwell'] is fitted on:
    within 12% (measured -11.0% at 4096^3, whose 512 tiles of 128 x 256 take 4 waves of 148 SMs,
    to +6.2%; engine v3: +28% at 1024^3 and +98% at N = 192)."""
    assert abs(_row_error(row)) < 0.12


def test_wave_quantisation_as_the_rows_show_it():
    """1024 x 2145 x 1024 does 2.1x the FLOPs of 1024^3 in twice the waves on H100 (136 tiles of
    128 x 128 on 132 SMs): the rows' rate ratio 410.7 / 274.1 = 1.50, the engine's within 10%."""
    h100 = GPUS["h100-sxm"]
    engine = _gemm_rate(h100, 1024, 2145, 1024, True) / _gemm_rate(h100, 1024, 1024, 1024, True)
    rows = ROWS["gemm_azure_h100_fp8_1024x2145x1024"]["value"] / ROWS["gemm_azure_h100_fp8_1024x1024x1024"]["value"]
    assert abs(report("H100 FP8 rate 1024x2145x1024 / 1024^3", engine, rows)) < 0.10


@pytest.mark.parametrize("row", sorted(r for r in ROWS if r.startswith("mamf_") and ROWS[r]["hardware"] in GPU_OF))
def test_mamf_rows_bound_the_engine(row):
    """MAMF is the best of a brute-force search over shapes, 100 iterations after 50 warm-ups: at its
    shape the engine's sustained, fixed-tile kernel is below it, by less than 30% (measured -10.4%
    H100 BF16 .. -26.1% GB200 BF16: the best shapes are where cuBLAS's own tile choice beats the fixed
    tile's wave count, e.g. H200's 1280 x 4096 x 12032, 320 tiles in 3 waves of 132)."""
    c, gpu = ROWS[row]["conditions"], GPUS[GPU_OF[ROWS[row]["hardware"]]]
    m, n, k = map(int, c["best_shape_MxNxK"].split("x"))
    error = report(f"{row} (TFLOP/s)", _gemm_rate(gpu, m, n, k, c["dtype"] != "bf16"), ROWS[row]["value"])
    assert -0.30 < error < 0


def test_one_function_prices_every_gemm():
    """gemm_time is grouped_gemm_time with one group, times the calls, on numpy columns as on
    numbers; a power limit slows the compute part only."""
    import numpy as np

    h100 = GPUS["h100-sxm"]
    m = np.array([1024.0, 4096.0, 16384.0])
    columns = gemm_time(h100, m, 4096, 4096, calls=3, fp8=np.array([False, True, True]))
    for i in range(3):
        assert columns[i] == pytest.approx(3 * grouped_gemm_time(h100, m[i], 4096, 4096, 1.0, bool(i), SCALAR))


# ---- 2. FP8 as it runs ----------------------------------------------------------------------------
@pytest.mark.parametrize("row", sorted(r for r in ROWS if r.startswith("fp8k_mxfp8_cast_b200_")))
def test_quantize_kernel_time(row):
    """TE's MXFP8 cast of an 8192 x 8192 tensor on B200 (row-wise, column-wise or both; BF16, FP16 or
    FP32 in): the bytes it moves (input, one FP8 copy per direction, an E8M0 scale per 32) at
    QUANTIZE_HBM_SHARE of 7.7 TB/s, the median of these nine rows' shares: within 15% (measured
    -3.3% .. +14.0%: the row-wise casts beat the median, the FP32 column-wise one most)."""
    c = ROWS[row]["conditions"]
    elements = 8192 * 8192
    directions = 2 if c["scaling_direction"] == "both" else 1
    moved = elements * ({"bf16": 2, "fp16": 2, "fp32": 4}[c["input_dtype"]] + directions * (1 + 1 / 32))
    engine = moved / (GPUS["b200"].hbm_bytes_per_s * QUANTIZE_HBM_SHARE) * 1e6
    assert abs(report(f"{row} (us)", engine, ROWS[row]["value"])) < 0.15


def test_te_cast_transpose_of_one_tensor():
    """The engine's FP8 cast of a BF16 tensor (read 2, write an FP8 copy and its transpose: 4 bytes
    an element under delayed scaling) against TE's both-direction MXFP8 cast on B200, 52.34 us for
    8192 x 8192: within 5% (the per-tensor cast moves the same bytes but the 1/32 scales)."""
    engine = fp8_cast_time(GPUS["b200"], 8192 * 8192, 0.0) * 1e6
    assert abs(report("FP8 cast + transpose, 8192^2 BF16 on B200 (us)", engine, ROWS["fp8k_mxfp8_cast_b200_bf16_both_8192"]["value"])) < 0.05
    current = fp8_cast_time(GPUS["b200"], 8192 * 8192, 0.0, "current") * 1e6
    assert current / engine == pytest.approx((FP8_CAST_BYTES + FP8_AMAX_READ_BYTES["current"]) / FP8_CAST_BYTES)


def _kernels(model, cluster, stack, **plan):
    p = read_plan(model, plan_columns(Plan(**plan)), stack, SCALAR)
    return layer_kernels(model_terms(model), cluster, stack, p, SCALAR)


def test_fp8_layer_casts_counted_by_hand():
    """Llama 3 8B (h 4,096, q 4,096, kv 1,024, FFN 14,336), one H100, 8K tokens, no TP: the forward
    quantizes the four GEMM inputs (h + q + h + FFN a token), the backward the four output gradients
    (q + 2 kv + h + 2 FFN + h), 4 bytes an element; the weights (layer_params) once a step with TE's
    FP8 weight cache, every micro-batch with torchao's (and 6 bytes, current scaling)."""
    model, cluster = Model.get("llama3-8b"), Cluster.get("dgx-h100")
    h100 = cluster.gpu
    tokens = 8192.0
    te = _kernels(model, cluster, stack_of(None), tp=1, dp=8, global_batch=64, precision="fp8")
    bf16 = _kernels(model, cluster, stack_of(None), tp=1, dp=8, global_batch=64)
    rate = h100.hbm_bytes_per_s * QUANTIZE_HBM_SHARE
    forward = tokens * (4096 + 4096 + 4096 + 14336) * 4 / rate
    backward = tokens * (4096 + 2 * 1024 + 4096 + 2 * 14336 + 4096) * 4 / rate
    weights = model.layer_params * 4 / rate
    assert te.fp8_weight_casts == pytest.approx(weights)
    assert bf16.fp8_weight_casts == 0
    # the forward's non-GEMM work is the same in both; what FP8 adds beside its faster GEMMs is the casts
    assert (te.gpu_f - te.gemm_f) - (bf16.gpu_f - bf16.gemm_f) == pytest.approx(forward)
    assert (te.gpu_b - te.gemm_f) - (bf16.gpu_b - bf16.gemm_f) == pytest.approx(backward)
    report("Llama 3 8B layer FP8 casts, forward + backward, ms", (forward + backward) * 1e3, (forward + backward) * 1e3)
    torchao = _kernels(model, cluster, ERAS["pytorch-fsdp2-2024"], tp=1, dp=8, global_batch=64, precision="fp8", zero_stage=3)
    assert torchao.fp8_weight_casts == pytest.approx(weights * 6 / 4)


def test_fp8_weight_cache_casts_once_a_step():
    """The forward of one micro-batch carries the weights' casts divided by the micro-batches (TE's
    cache), or all of them (torchao's Float8Linear): the same layer, 8 micro-batches a step."""
    model, cluster = Model.get("llama3-8b"), Cluster.get("dgx-h100")
    plan = Plan(tp=1, dp=8, micro_batch=1, global_batch=64, precision="fp8")
    stack = stack_of(None)
    cached = evaluate_plan(model, cluster, plan_columns(plan), plan.dp_algorithm, stack)["layer_forward_s"]
    uncached = evaluate_plan(model, cluster, plan_columns(plan), plan.dp_algorithm, replace(stack, fp8_weight_cache=False))["layer_forward_s"]
    weights = _kernels(model, cluster, stack, tp=1, dp=8, micro_batch=1, global_batch=64, precision="fp8").fp8_weight_casts
    assert uncached - cached == pytest.approx(weights * (1 - 1 / 8), rel=1e-6)


def test_attention_and_router_stay_bf16():
    """FP8 leaves the attention core and the router in BF16: the same attention seconds either way."""
    model, cluster = Model.get("qwen3-30b-a3b"), Cluster.get("dgx-h100")
    fp8 = _kernels(model, cluster, stack_of(None), tp=1, dp=8, ep=8, global_batch=64, precision="fp8")
    bf16 = _kernels(model, cluster, stack_of(None), tp=1, dp=8, ep=8, global_batch=64)
    assert fp8.attn_f == bf16.attn_f and fp8.attn_b == bf16.attn_b
    assert fp8.gemm_f < bf16.gemm_f


# ---- 3. MoE compute ------------------------------------------------------------------------------
GROUPED = sorted(r for r in ROWS if r.startswith("ggemm_deepgemm_h800_"))


@pytest.mark.parametrize("row", GROUPED)
def test_grouped_gemm_by_tokens_per_expert(row):
    """DeepGEMM's FP8 grouped GEMMs on H800 (DeepSeek-V3's expert shapes, masked layout at 256, 512
    and 1,024 tokens a group, contiguous at 4,096-8,192) against one grouped launch of the engine's
    Hopper GEMM (no constant fitted on them): within 12% (measured -4.7% .. +9.3%). The rate falls
    from 1,346 to 932 TFLOP/s as the groups shrink because each group reads its own 29 MB of
    weights: at 256 tokens that is as long as the FLOPs."""
    c = ROWS[row]["conditions"]
    engine = _gemm_rate(GPUS["h800-sxm"], c["tokens_per_group"], c["N"], c["K"], True, c["groups"])
    assert abs(report(f"{row} (TFLOP/s)", engine, ROWS[row]["value"])) < 0.12


def test_grouped_gemm_falls_with_tokens_per_expert():
    """At DeepSeek-V3's up-projection (N 4,096, K 7,168), 256 tokens a group run at about 0.7 of
    4,096 (rows: 932 / 1,346): the engine's ratio within 15%."""
    h800 = GPUS["h800-sxm"]
    engine = _gemm_rate(h800, 256, 4096, 7168, True, 4) / _gemm_rate(h800, 8192, 4096, 7168, True, 4)
    rows = ROWS["ggemm_deepgemm_h800_masked_4x256_4096x7168"]["value"] / ROWS["ggemm_deepgemm_h800_contig_4x8192_4096x7168"]["value"]
    assert abs(report("grouped GEMM 256 over 8,192 tokens a group", engine, rows)) < 0.15


def test_per_expert_calls_against_the_grouped_gemm_librarys_cublas_loop():
    """tgale96/grouped_gemm PR #37 on H100, Qwen3-30B-A3B's up_proj (128 experts, 512 tokens each,
    N 1,536, K 2,048, BF16): its cuBLAS backend (a call per expert, what Megatron-Core 2024's
    GroupedMLP ran) 129.5 TFLOP/s. The engine's per-expert loop (Era.grouped_gemm 'per_expert'):
    each 48-tile GEMM in one partial wave plus the loop's PER_EXPERT_CALL_S, fitted on this row:
    within 1%. The kernels alone ran +40% fast, which this test's 60% bound let through before.
    Its CUTLASS SM90 grouped kernels (151-160) are 4x below DeepGEMM's grouped rates on the same
    chip class: the engine's one-launch rate (585) is reported, not asserted."""
    h100 = GPUS["h100-sxm"]
    flops = 2 * 512 * 1536 * 2048 * 128
    kernels = float(gemm_time(h100, 512, 1536, 2048, 128))
    row = ROWS["ggemm_h100_qwen3_upproj_cublas_base_uniform"]["value"]
    assert report("Qwen3 up_proj, cuBLAS per expert, kernels alone (TFLOP/s)", flops / kernels / 1e12, row) > 0.35
    loop = flops / (kernels + 128 * PER_EXPERT_CALL_S) / 1e12
    assert abs(report("Qwen3 up_proj, cuBLAS per expert, the loop (TFLOP/s)", loop, row)) < 0.01
    report("Qwen3 up_proj, one grouped launch (TFLOP/s)", _gemm_rate(h100, 512, 1536, 2048, False, 128),
           ROWS["ggemm_h100_qwen3_upproj_cutlass_sm90_coop_uniform"]["value"])


def test_the_per_expert_loop_in_a_layer():
    """A Qwen3-30B-A3B layer on a DGX H100 at EP 8 (16 local experts): under "per_expert" the routed
    GEMMs pay 2 x 16 calls of PER_EXPERT_CALL_S beside their kernels, counted by hand."""
    model, cluster = Model.get("qwen3-30b-a3b"), Cluster.get("dgx-h100")
    args = (model, cluster, 8192.0, 1.0, 8.0, 0.0, False, SCALAR)
    per_expert = 8192.0 * model.experts_per_token * 8 / model.experts
    h, f, local = model.hidden, model.expert_ffn, model.experts / 8
    kernels = float(gemm_time(cluster.gpu, per_expert, 2 * f, h, local) + gemm_time(cluster.gpu, per_expert, h, f, local))
    router = float(gemm_time(cluster.gpu, 8192.0, model.experts, h))
    assert ffn_forward_time(*args, grouped="per_expert") == pytest.approx(model.moe_share * (kernels + 2 * local * PER_EXPERT_CALL_S + router), rel=1e-9)


H200_GROUPED = sorted(r for r in ROWS if r.startswith("ggemm_h200_glm_up_"))


@pytest.mark.parametrize("row", H200_GROUPED)
def test_one_grouped_launch_against_torch_and_deepgemm_on_h200(row):
    """The engine's one grouped launch ("grouped": today's stacks, torchtitan-2025, megatron-core-2025)
    in BF16 on H200 at GLM-5's expert up-projection (256 experts, N 4,096, K 6,144, 1,024-8,192
    tokens an expert; tile-ai/TileOPs PR #1567, kernel-only CUPTI timing, the H200 at its power
    limit), no constant fitted on them: within 12% of torch._grouped_mm (measured +6.5% .. +11.4%:
    the engine runs at DeepGEMM's rate) and within 5% of DeepGEMM (-0.9% .. +1.2%)."""
    c = ROWS[row]["conditions"]
    engine = _gemm_rate(GPUS["h200-sxm"], c["tokens_per_group"], c["N"], c["K"], False, c["groups"])
    error = report(f"{row} (TFLOP/s)", engine, ROWS[row]["value"])
    assert abs(error) < (0.12 if "_torch_" in row else 0.05)


@pytest.mark.parametrize("row", [r for r in H200_GROUPED if "_torch_" in r])
def test_torch_grouped_mm_at_its_share_of_the_launch(row):
    """torchtitan 2025's experts (Era.grouped_gemm "grouped_mm": torch._grouped_mm) at
    gemm.GROUPED_LAUNCH_SHARE of the one launch: each torch._grouped_mm row within 3% (measured
    -2.1% .. +2.4%; at the launch's full rate, +6.5% .. +11.4%)."""
    assert ERAS["torchtitan-2025"].grouped_gemm == "grouped_mm"
    c = ROWS[row]["conditions"]
    engine = _gemm_rate(GPUS["h200-sxm"], c["tokens_per_group"], c["N"], c["K"], False, c["groups"]) * gemm.GROUPED_LAUNCH_SHARE["grouped_mm"]
    assert abs(report(f"{row}, torch._grouped_mm's share (TFLOP/s)", engine, ROWS[row]["value"])) < 0.03


def test_the_stacks_expert_kernels_priced_by_their_share():
    """A Qwen3-30B-A3B layer's routed experts on a DGX H100 at EP 8: under "grouped_mm" the FFN's
    routed GEMMs take 1 / 0.92 of their time under "grouped"; its router GEMM is priced alike."""
    model, cluster = Model.get("qwen3-30b-a3b"), Cluster.get("dgx-h100")
    args = (model, cluster, 8192.0, 1.0, 8.0, 0.0, False, SCALAR)
    launch, torch_mm = (ffn_forward_time(*args, grouped=g) for g in ("grouped", "grouped_mm"))
    assert torch_mm > launch
    # the routed part alone scales: (torch_mm - launch) = routed x (1 / 0.92 - 1) x moe_share
    per_expert = 8192.0 * model.experts_per_token * 8 / model.experts
    h, f = model.hidden, model.expert_ffn
    routed = float(gemm.grouped_gemm_time(cluster.gpu, per_expert, 2 * f, h, model.experts / 8) + gemm.grouped_gemm_time(cluster.gpu, per_expert, h, f, model.experts / 8))
    assert torch_mm - launch == pytest.approx(model.moe_share * routed * (1 / 0.92 - 1), rel=1e-9)


def test_moe_pass_bytes_counted_by_hand():
    """Mixtral 8x7B (h 4,096, 8 experts, top-2), EP 4, TP 1, 4,096 tokens: router 12 x 8 bytes, permute
    (2 + 2 x 2) h, unpermute (2 x 2 + 2) h, the sort of the received chunks (read 2 x 2, write 2 x 2) h
    and the unsort as much, (4 + 4) x 2 h (two local experts a rank: Megatron-Core's
    sort_chunks_by_idxs, once each way)."""
    model = Model.get("mixtral-8x7b")
    per_token = 12 * 8 + 6 * 4096 + 6 * 4096 + 16 * 4096
    assert moe_pass_bytes(model, 4096.0, 1.0, 4.0, SCALAR) == pytest.approx(model.moe_share * 4096 * per_token)
    no_sort = 12 * 8 + 12 * 4096
    assert moe_pass_bytes(model, 4096.0, 1.0, 8.0, SCALAR) == pytest.approx(model.moe_share * 4096 * no_sort)


def test_skew_and_capacity():
    """Dropless routing with the busiest rank at 1.3x the balanced load takes longer than balanced;
    a capacity factor pads every expert to c x the balanced load whatever the skew."""
    model, cluster = Model.get("qwen3-30b-a3b"), Cluster.get("dgx-h100")
    args = (model, cluster, 8192.0, 1.0, 8.0)
    balanced = ffn_forward_time(*args, 0.0, False, SCALAR)
    skewed = ffn_forward_time(*args, 0.0, False, SCALAR, skew=1.3)
    padded = ffn_forward_time(*args, 1.25, False, SCALAR, skew=1.3)
    assert balanced < padded < skewed
    assert padded == ffn_forward_time(*args, 1.25, False, SCALAR)
    report("Qwen3-30B-A3B FFN, skew 1.3 over balanced", skewed / balanced, 1.3)


def test_grouped_launch_beats_per_expert_calls_at_fine_grain():
    """128 experts of 1,536 on 8 GPUs: one grouped launch is faster than 16 calls an expert set."""
    model, cluster = Model.get("qwen3-30b-a3b"), Cluster.get("dgx-h100")
    args = (model, cluster, 8192.0, 1.0, 8.0, 0.0, False, SCALAR)
    assert ffn_forward_time(*args, grouped="grouped") < ffn_forward_time(*args, grouped="per_expert")


# ---- 4. Attention by sequence length, head size, mask and GPU --------------------------------------
@pytest.mark.parametrize("kernel", ["cudnn", "fa4"])
@pytest.mark.parametrize("seq", [1024, 2048, 4096, 8192, 16384])
def test_b200_causal_attention_by_length(kernel, seq):
    """cuDNN and FA4 forward on B200, causal, head dim 64 (flash-attention PR #2605): the ramp
    s / (s + s0) through the catalog's 4K rate, s0 solved on the 1K and 16K rows: every row within
    3% (measured -1.1% .. +2.0%; engine v3: +56% and +98% at 1K, one rate for every length)."""
    row = ROWS[f"attn_{kernel}_b200_hd64_causal_s{seq}"]
    engine = attention_rate(GPUS["b200"], kernel, seq, 64) / 1e12
    assert abs(report(f"{kernel} B200 causal {seq} (TFLOP/s)", engine, row["value"])) < 0.03


@pytest.mark.parametrize("seq", [512, 1024, 2048, 4096, 8192, 16384])
def test_h100_fa3_by_length(seq):
    """FA3 forward on H100 (tritonbench, head dim 128, the FA3 paper's sizes): the ramp (s0 = 238,
    from the 512 and 16K rows) through the catalog's 0.55 of the peak at 4K, which is the paper's
    forward and backward together: 7.8% .. 9.6% below every row (engine v3: +26.5% at 512, -12.3%
    at 16K), within 12%."""
    row = ROWS[f"attn_fa3_h100_pytorchbench_s{seq}"]
    engine = attention_rate(GPUS["h100-sxm"], "fa3", seq, 128) / 1e12
    assert -0.12 < report(f"FA3 H100 {seq} (TFLOP/s)", engine, row["value"]) < 0


def test_head_size():
    """cuDNN on B200 at 1K, non-causal: head dim 128 runs 1,428 / 980 = 1.46x head dim 64 (the pair
    ATTENTION_HEAD_DIM_D0 is solved on, so exact); the engine at 128 and at 64 keeps that ratio."""
    b200 = GPUS["b200"]
    ratio = attention_rate(b200, "cudnn", 1024, 128) / attention_rate(b200, "cudnn", 1024, 64)
    rows = ROWS["attn_cudnn_b200_hd128_full_s1024"]["value"] / ROWS["attn_cudnn_b200_hd64_full_s1024"]["value"]
    assert abs(report("cuDNN B200 head dim 128 / 64", ratio, rows)) < 0.01
    assert attention_rate(GPUS["h100-sxm"], "cudnn", 4096, 128) == pytest.approx(attention_rate(GPUS["h100-sxm"], "cudnn"))


def test_fa2_does_not_ramp():
    """FA2 2.7.4 on B200 is flat from 512 to 16K (rows 307-381): the engine's FA2 rate is one number."""
    b200 = GPUS["b200"]
    assert attention_rate(b200, "fa2", 512, 64) == attention_rate(b200, "fa2", 16384, 64) == attention_rate(b200, "fa2")


def test_ring_cp_runs_short_calls_and_merges():
    """Llama 3 8B at 32K on 8 H100s, CP 8: ring CP calls attention on 4K chunks, so its kernel runs
    at the 4K rate, slower than the all-gather CP's calls over the whole 32K; torch's merges (38 and
    30 bytes an output element a step, fp32 eager ops) cost more than TE's fused ones (10 and 30)."""
    model, cluster = Model.get("llama3-8b", seq_len=32768), Cluster.get("dgx-h100")
    plan = {"tp": 1, "cp": 8, "dp": 1, "global_batch": 1, "recompute": "none"}
    stack = stack_of(None)
    ring = _kernels(model, cluster, stack, cp_algorithm="ring", **plan)
    gather = _kernels(model, cluster, stack, cp_algorithm="all_gather", **plan)
    h100 = cluster.gpu
    assert ring.attn_f / gather.attn_f == pytest.approx(attention_rate(h100, "cudnn", 32768) / attention_rate(h100, "cudnn", 4096))
    torch_stack = replace(stack, cp_merge_bytes=ERAS["pytorch-fsdp2-2024"].cp_merge_bytes)
    torch_ring = _kernels(model, cluster, torch_stack, cp_algorithm="ring", **plan)
    elements = 8 * 4096 * 4096  # cp steps x the chunk's tokens x q_dim
    hbm = h100.hbm_bytes_per_s * h100.hbm_efficiency
    assert (torch_ring.gpu_f - ring.gpu_f) == pytest.approx(elements * (38 - 10) / hbm)
    assert (gather.gpu_f - gather.attn_f) < (ring.gpu_f - ring.attn_f)


def test_every_stack_and_gpu_still_estimates():
    """Each stack on H100 and B200, BF16 and FP8, a dense and an MoE model: finite, and FP8 faster."""
    for era in ("megatron-core-2024", "pytorch-fsdp2-2024", None):
        for key in ("dgx-h100", "dgx-b200"):
            for name, extra in (("llama3-8b", {}), ("qwen3-30b-a3b", {"ep": 8})):
                kw = dict(tp=1, pp=1, dp=8, micro_batch=1, global_batch=64, zero_stage=3 if era == "pytorch-fsdp2-2024" else 1, **extra)
                model, cluster = Model.get(name), Cluster.get(key)
                plan = Plan.for_era(era, **kw) if era else Plan(**kw)
                bf16 = estimate(model, cluster, plan)
                fp8 = estimate(model, cluster, replace(plan, precision="fp8"))
                assert 0 < fp8.step_time_s < bf16.step_time_s < 600


def test_gemm_constants_name_their_rows():
    """Every architecture's GEMM constants say which rows they rest on."""
    for arch, kernel in gemm.GEMM_KERNELS.items():
        assert kernel.rows, arch
