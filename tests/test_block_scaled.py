"""Block-scaled formats as Plan.precision (issue 36 item 4; issue 37 item 2's weight cache; expert
review 38bda0b M4): each format's GEMM rate and quantize kernel against the published kernel rows
it rests on (tests/data/kernel_benchmarks_v4.json), its memory against a hand count, and the
refusal of a format on a GPU without its tensor cores. Each comparison prints its error.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from labs.core.engine.gemm import fp8_cast_time, gemm_time, grouped_gemm_time, precision_gemm_time
from labs.core.engine.hardware import GPUS, Cluster
from labs.core.engine.models import Model
from labs.core.engine.perf import Plan, estimate
from labs.core.engine.precision import FP8, MXFP8, NVFP4, NVFP4_BF16_LAYER_SHARE
from labs.core.engine.search import sweep
from labs.core.engine.stages.xp import SCALAR

ROWS = {r["id"]: r for r in json.loads((Path(__file__).parent / "data" / "kernel_benchmarks_v4.json").read_text())}
GB = 1e9


def report(what: str, engine: float, published: float) -> float:
    error = engine / published - 1
    print(f"{what}: engine {engine:,.1f}, published {published:,.1f} ({error:+.1%})")
    return error


def _rate(gpu, row, precision, groups=1):
    c = ROWS[row]["conditions"]
    m = c.get("M", c.get("tokens_per_group"))
    return 2.0 * groups * m * c["N"] * c["K"] / precision_gemm_time(GPUS[gpu], m, c["N"], c["K"], precision, groups) / 1e12


# ---- GEMM rates ---------------------------------------------------------------------------------
@pytest.mark.parametrize("row", sorted(r for r in ROWS if r.startswith("gemm_azure_gb200_fp4_")))
def test_nvfp4_gemm_on_gb200_against_cublaslt(row):
    """NVFP4 GEMMs on GB200 against Azure's cuBLASLt FP4 rows (square 1K-32K, 1024x2145x1024,
    802816x192x768): within 8% each (measured -4.7% .. +5.5%)."""
    assert abs(report(f"{row} (TFLOP/s)", _rate("gb200", row, "nvfp4"), ROWS[row]["value"])) < 0.08


@pytest.mark.parametrize("row", sorted(r for r in ROWS if r.startswith("gemm_deepgemm_h800_fp8blk_4096x")))
@pytest.mark.parametrize("gpu", ["h800-sxm", "h100-sxm"])
def test_fp8_blockwise_gemm_on_hopper_against_deepgemm(gpu, row):
    """DeepSeek-V3's blockwise FP8 (1 x 128 activation tiles, 128 x 128 weight blocks) at training
    shapes (M = 4,096) against DeepGEMM's H800 rows: within 5% each (measured -1.9% .. +3.3%).
    H100 SXM is H800's compute and HBM (H800 differs in NVLink and IB only): the same rates."""
    assert abs(report(f"{row} on {gpu} (TFLOP/s)", _rate(gpu, row, "fp8_blockwise"), ROWS[row]["value"])) < 0.05


@pytest.mark.parametrize("row", sorted(r for r in ROWS if r.startswith("ggemm_deepgemm_h800_")))
def test_fp8_blockwise_grouped_gemm_against_deepgemm(row):
    """DeepGEMM's grouped GEMMs for MoE (contiguous and masked layouts, 256-8,192 tokens a group),
    rows not fitted on: within 20% each (measured -1.0% .. +19.6%, the masked 2 x 512 the worst)."""
    c = ROWS[row]["conditions"]
    assert abs(report(f"{row} (TFLOP/s)", _rate("h800-sxm", row, "fp8_blockwise", c["groups"]), ROWS[row]["value"])) < 0.20


def test_block_formats_rank_as_their_peaks_at_a_layer_shape():
    """At a Llama 3 70B FFN shape (8K tokens x 28,672 x 8,192) on B200: NVFP4 faster than MXFP8
    faster than BF16, each below its dense peak (FP4 9,000, FP8 4,500, BF16 2,250 TFLOP/s)."""
    b200 = GPUS["b200"]
    m, n, k = 8192, 28672, 8192
    rates = {p: 2.0 * m * n * k / precision_gemm_time(b200, m, n, k, p) for p in ("bf16", "mxfp8", "nvfp4")}
    print({p: f"{r / 1e12:,.0f} TFLOP/s" for p, r in rates.items()})
    assert rates["nvfp4"] > rates["mxfp8"] > rates["bf16"]
    assert rates["nvfp4"] < b200.fp4_flops and rates["mxfp8"] < b200.fp8_flops and rates["bf16"] < b200.bf16_flops


def test_nvfp4_layer_keeps_its_recipes_bf16_share():
    """The step model's average NVFP4 layer: 15% of the layers in BF16 (arXiv:2509.25149 Sec. 4),
    so each GEMM takes 0.85 x its NVFP4 time + 0.15 x its BF16 time; codes as columns agree."""
    b200 = GPUS["b200"]
    m, n, k = 8192.0, 14336.0, 4096.0
    by_hand = (1 - 0.15) * precision_gemm_time(b200, m, n, k, "nvfp4") + 0.15 * precision_gemm_time(b200, m, n, k, "bf16")
    assert NVFP4_BF16_LAYER_SHARE == 0.15
    assert grouped_gemm_time(b200, m, n, k, 1.0, NVFP4, SCALAR) == pytest.approx(by_hand, rel=1e-12)
    column = gemm_time(b200, np.full(3, m), n, k, fp8=np.array([0, MXFP8, NVFP4]))
    assert column[2] == pytest.approx(by_hand, rel=1e-12)
    assert column[1] == pytest.approx(precision_gemm_time(b200, m, n, k, "mxfp8"), rel=1e-12)


# ---- quantize kernels ---------------------------------------------------------------------------
def test_mxfp8_quantize_kernel_on_b200_against_te():
    """MXFP8's cast of one BF16 8192 x 8192 tensor, both usages (read 2 bytes; write two E4M3 copies
    with an E8M0 scale per 32: 2 + 2 x (1 + 1/32) = 4.0625 bytes an element) against Transformer
    Engine's kernel on B200, 52.34 us (fp8k_mxfp8_cast_b200_bf16_both_8192): within 5%."""
    elements = 8192 * 8192
    engine = fp8_cast_time(GPUS["b200"], elements, 0.0, precision=MXFP8) * 1e6
    assert engine == pytest.approx(elements * (2 + 2 * (1 + 1 / 32)) / (7.7e12 * 0.69) * 1e6, rel=1e-12)
    assert abs(report("MXFP8 cast, 8192^2 BF16, both usages, B200 (us)", engine, ROWS["fp8k_mxfp8_cast_b200_bf16_both_8192"]["value"])) < 0.05


def test_quantize_bytes_per_format_by_hand():
    """Bytes a cast moves per BF16 element: per-tensor FP8 4 (delayed scaling), MXFP8 4.0625; NVFP4
    (2 + 2 x (0.5 + 1/16) + 2 for the tensor amax) x 0.85 of the layers = 4.35625; blockwise FP8's
    activations 2 + 2 x (1 + 4/128) = 4.0625, its weights 2 + 2 x (1 + 4/16384)."""
    gpu = GPUS["b200"]
    per_byte = 1.0 / (gpu.hbm_bytes_per_s * 0.69)
    for code, activation, weight in ((FP8, 4.0, 4.0), (MXFP8, 4.0625, 4.0625), (NVFP4, 5.125 * 0.85, 5.125 * 0.85), (4, 4.0625, 2 + 2 * (1 + 4 / 16384))):
        assert fp8_cast_time(gpu, 1.0, 0.0, "delayed", SCALAR, code) == pytest.approx(activation * per_byte, rel=1e-12)
        assert fp8_cast_time(gpu, 0.0, 1.0, "delayed", SCALAR, code) == pytest.approx(weight * per_byte, rel=1e-12)


# ---- memory ---------------------------------------------------------------------------------------
def _weights_gb(cluster, precision, model="llama3-8b"):
    e = estimate(Model.get(model), Cluster.get(cluster), Plan(tp=1, dp=8, global_batch=64, precision=precision))
    return e.memory.weights / GB, e


def test_hopper_fp8_weight_cache_holds_the_transpose():
    """Llama 3 8B on 8 H100s (no TP, no ZeRO): TE's FP8 weight cache is the FP8 copy and its
    transpose, 1 byte each a parameter (Hopper's FP8 GEMMs read only "TN"; review 38bda0b M4):
    bf16 weights 2 x P, FP8 weights (2 + 2) x P. Engine v4 before this counted 1 byte."""
    params = Model.get("llama3-8b").params
    bf16, _ = _weights_gb("dgx-h100", "bf16")
    fp8, _ = _weights_gb("dgx-h100", "fp8")
    report("Llama 3 8B on H100, FP8 weight cache (GB)", fp8 - bf16, 2 * params / GB)
    assert bf16 == pytest.approx(2 * params / GB, rel=1e-9)
    assert fp8 == pytest.approx((2 + 2) * params / GB, rel=1e-9)


def test_weights_per_format_by_hand_on_blackwell_and_hopper():
    """Bytes a parameter of Llama 3 8B's weights take with each format's cached copies (no TP,
    no ZeRO): B200 per-tensor FP8 2 + 1 (one layout serves both GEMMs); MXFP8 2 + 2 x (1 + 1/32)
    (row- and column-wise blocks); NVFP4 2 + 0.85 x 2 x (0.5 + 1/16); H100 blockwise FP8
    2 + 2 x (1 + 4/16384). Gradients and optimizer state are the same bytes as in BF16."""
    params = Model.get("llama3-8b").params
    _, bf16 = _weights_gb("dgx-b200", "bf16")
    for cluster, precision, per_param in (("dgx-b200", "fp8", 2 + 1), ("dgx-b200", "mxfp8", 2 + 2 * (1 + 1 / 32)),
                                          ("dgx-b200", "nvfp4", 2 + 0.85 * 2 * (0.5 + 1 / 16)), ("dgx-h100", "fp8_blockwise", 2 + 2 * (1 + 4 / 16384))):
        weights, e = _weights_gb(cluster, precision)
        report(f"{precision} on {cluster}: weights (GB)", weights, per_param * params / GB)
        assert weights == pytest.approx(per_param * params / GB, rel=1e-9)
        assert e.memory.gradients == pytest.approx(bf16.memory.gradients, rel=1e-12)
        assert e.memory.optimizer == pytest.approx(bf16.memory.optimizer, rel=1e-12)


@pytest.mark.parametrize("precision, freed", [
    ("mxfp8", 2 - (1 + 1 / 32)),  # E4M3 and an E8M0 scale per 32
    ("fp8_blockwise", 2 - (1 + 4 / 128)),  # E4M3 and an fp32 scale per 1 x 128 tile
    ("nvfp4", (2 - (0.5 + 1 / 16)) * 0.85),  # E2M1 and an E4M3 scale per 16, on the 85% of layers in NVFP4
])
def test_block_formats_save_activations_at_their_bytes(precision, freed):
    """Every low-precision format keeps its GEMM inputs for the backward quantized (Transformer
    Engine's saved column-wise copy: labs.core.engine.stages.memory.saved_input_savings): against
    BF16 a format frees `freed` bytes an element where per-tensor FP8 frees 1."""
    _, bf16 = _weights_gb("dgx-b200", "bf16")
    _, fp8 = _weights_gb("dgx-b200", "fp8")
    assert fp8.memory.activations < bf16.memory.activations
    _, e = _weights_gb("dgx-b200", precision)
    ratio = (bf16.memory.activations - e.memory.activations) / (bf16.memory.activations - fp8.memory.activations)
    assert ratio == pytest.approx(freed, rel=1e-12)


# ---- refusals and the rest of the engine ----------------------------------------------------------
@pytest.mark.parametrize("cluster, precision", [("dgx-h100", "nvfp4"), ("dgx-h100", "mxfp8"), ("dgx-a100", "fp8_blockwise"),
                                                ("dgx-a100", "fp8"), ("mi355x", "nvfp4"), ("mi355x", "mxfp8")])
def test_a_format_without_its_tensor_cores_is_refused_by_name(cluster, precision):
    model, c = Model.get("llama3-8b"), Cluster.get(cluster)
    with pytest.raises(ValueError, match="precision"):
        estimate(model, c, Plan(tp=1, dp=c.gpus, global_batch=64, precision=precision))
    with pytest.raises(ValueError, match="precision"):
        sweep(model, c, 64, precision=precision)


def test_an_unknown_precision_is_refused_where_the_plan_enters():
    with pytest.raises(ValueError, match="precision"):
        Plan(precision="fp4")


def test_sweep_and_estimate_agree_under_a_block_format():
    """sweep() prices the same step as estimate() under NVFP4 and blockwise FP8 (one layout each),
    and MFU counts against the format's peak (NVFP4: the dense FP4 peak)."""
    model = Model.get("llama3-8b")
    for cluster, precision, peak in (("dgx-b200", "nvfp4", "fp4_flops"), ("dgx-h100", "fp8_blockwise", "fp8_flops")):
        c = Cluster.get(cluster)
        rows = sweep(model, c, 64, precision=precision, tp=1, pp=1, micro_batch=1, zero_stage=0, recompute="selective", sequence_parallel=False)
        e = estimate(model, c, Plan(tp=1, dp=8, global_batch=64, micro_batch=1, recompute="selective", precision=precision))
        assert rows["step_time_s"].iloc[0] == pytest.approx(e.step_time_s, rel=1e-9)
        assert e.mfu == pytest.approx(e.model_flops_per_step / e.step_time_s / (8 * getattr(c.gpu, peak)), rel=1e-9)


def test_a_stack_that_quantizes_every_micro_batch_holds_no_weight_cache(monkeypatch):
    """Era.fp8_weight_cache False (torchao's float8, DeepSeek-V3's online quantization) prices a
    cast every micro-batch in compute; memory must then hold no cached copy between micro-batches:
    the weights line falls by Hopper's 2 bytes (the FP8 copy and its transpose) a parameter."""
    from dataclasses import replace

    from labs.core.engine import eras

    model, cluster = Model.get("llama3-8b"), Cluster.get("dgx-h100", nodes=1)
    plan = Plan(tp=8, dp=1, global_batch=8, precision="fp8", stack=eras.DEFAULT_STACK)
    cached = estimate(model, cluster, plan)
    monkeypatch.setitem(eras.ERAS, eras.DEFAULT_STACK, replace(eras.ERAS[eras.DEFAULT_STACK], fp8_weight_cache=False))
    online = estimate(model, cluster, plan)
    hand = 2 * model.params / 8
    print(f"weights {cached.memory.weights / 1e9:.3f} GB cached, {online.memory.weights / 1e9:.3f} GB online; hand count {hand / 1e9:.3f} GB")
    assert cached.memory.weights - online.memory.weights == pytest.approx(hand, rel=0.01)
