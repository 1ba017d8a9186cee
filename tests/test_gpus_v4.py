"""The GPU catalog against the kernel-benchmark and datasheet rows its constants rest on
(tests/data/kernel_benchmarks_v4.json, issue 36 item 2). Each comparison prints its error
(pytest -s); the tolerances are in each test's docstring with the reason for them.

The engine prices a GEMM by its shape (labs.core.engine.gemm: tiles and waves on the GPU's SMs, a
tail per tile, the operands' HBM time, a sustained share of the part's MAMF), with each
architecture's constants fitted on its own GPUs' cuBLASLt rows: the shape rows below are real
tolerances (issue 37 item 1), and tests/test_kernels_v4.py holds the rest of the kernel rows.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import report

from labs.core.engine.gemm import attention_rate, flash_attention_time
from labs.core.engine.hardware import CLUSTERS, GPUS, HOSTS, Cluster
from labs.core.engine.models import Model
from labs.core.engine.perf import Plan, estimate
from labs.core.engine.validate import ROW_GPUS, gemm_rate, gpu_row_checks, kernel_rows

ROWS = {row["id"]: row for row in json.loads((Path(__file__).parent / "data" / "kernel_benchmarks_v4.json").read_text())}
NEW = ("b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x")


def _shape(row):
    c = row["conditions"]
    return (c["M"], c["N"], c["K"]) if "M" in c else tuple(map(int, c["best_shape_MxNxK"].split("x")))


def _gemm_error(row_id: str) -> float:
    row = ROWS[row_id]
    gpu = GPUS[ROW_GPUS[row["hardware"]]]
    return report(f"{row_id} (TFLOP/s)", gemm_rate(gpu, *_shape(row), fp8=row["conditions"]["dtype"] != "bf16") / 1e12, row["value"])


# ---- the constants are the rows' values ----
DATASHEET = [  # (gpu, field, row, row unit -> SI)
    (gpu, field, f"ds_{gpu}_{suffix}", scale)
    for gpu in ("b200", "b300", "gb200", "gb300", "mi355x", "mi325x", "mi300x")
    for field, suffix, scale in (("bf16_flops", "bf16_dense_peak", 1e12), ("fp8_flops", "fp8_dense_peak", 1e12),
                                 ("fp6_flops", "fp6_dense_peak", 1e12), ("fp4_flops", "fp4_dense_peak", 1e12))
    if f"ds_{gpu}_{suffix}" in ROWS
] + [
    ("b300", "hbm_bytes", "ds_b300_smi_mib", 2**20), ("gb200", "hbm_bytes", "ds_gb200_hbm_gb", 1e9),
    ("mi355x", "hbm_bytes", "ds_mi355x_vram_gib", 2**30), ("mi325x", "hbm_bytes", "ds_mi325x_vram_gib", 2**30),
    ("mi300x", "hbm_bytes", "ds_mi300x_vram_bytes", 1),
    ("b200", "hbm_bytes_per_s", "ds_b200_hbm_tbs_nvidia", 1e12), ("b300", "hbm_bytes_per_s", "ds_b300_hbm_tbs", 1e12),
    ("gb200", "hbm_bytes_per_s", "ds_gb200_hbm_tbs", 1e12), ("gb300", "hbm_bytes_per_s", "ds_gb300_hbm_tbs", 1e12), ("mi355x", "hbm_bytes_per_s", "ds_mi355x_hbm_tbs", 1e12),
    ("mi325x", "hbm_bytes_per_s", "ds_mi325x_hbm_tbs", 1e12), ("mi300x", "hbm_bytes_per_s", "ds_mi300x_hbm_bw", 1e12),
    ("b200", "tdp_w", "ds_b200_tdp", 1), ("gb200", "tdp_w", "ds_gb200_tdp", 1), ("b300", "tdp_w", "ds_b300_power_limit_smi", 1),
    ("b300", "tdp_w", "ds_b300_tdp", 1),
    ("gb300", "tdp_w", "ds_gb300_max_power", 1), ("gb300", "tdp_w", "ds_gb300_tdp", 1), ("mi300x", "tdp_w", "ds_mi300x_tbp", 1),
    ("mi355x", "tdp_w", "ds_mi355x_typical_board_power", 1), ("mi355x", "tdp_w", "ds_mi355x_tbp", 1),
    ("mi325x", "tdp_w", "ds_mi325x_typical_board_power", 1), ("mi325x", "tdp_w", "ds_mi325x_power_mamf_run", 1),
    ("b200", "sms", "ds_b200_sms", 1), ("b300", "sms", "ds_b300_sms", 1), ("mi300x", "sms", "ds_mi300x_sms", 1),
    ("mi325x", "sms", "ds_mi325x_sms", 1), ("mi355x", "sms", "ds_mi355x_sms", 1),
    ("b200", "mamf_flops", "mamf_b200_bf16", 1e12), ("b300", "mamf_flops", "mamf_b300_bf16", 1e12),
    ("gb200", "mamf_flops", "mamf_gb200_bf16", 1e12), ("mi300x", "mamf_flops", "mamf_mi300x_bf16", 1e12),
    ("mi325x", "mamf_flops", "mamf_mi325x_bf16", 1e12), ("mi355x", "mamf_flops", "mamf_mi355x_bf16", 1e12),
    ("b200", "fp8_mamf_flops", "mamf_b200_fp8", 1e12), ("b300", "fp8_mamf_flops", "mamf_b300_fp8", 1e12),
    ("gb200", "fp8_mamf_flops", "mamf_gb200_fp8", 1e12), ("h100-sxm", "mamf_flops", "mamf_h100_bf16", 1e12),
    ("h100-sxm", "fp8_mamf_flops", "mamf_h100_fp8", 1e12), ("h200-sxm", "fp8_mamf_flops", "mamf_h200_fp8", 1e12),
]


@pytest.mark.parametrize("gpu,field,row,scale", DATASHEET, ids=[f"{g}-{f}" for g, f, _, _ in DATASHEET])
def test_each_sourced_constant_is_its_rows_value(gpu, field, row, scale):
    """A peak, HBM figure, power or MAMF the catalog takes from a row holds that row's value (to
    the row's rounding: MI300X's 1,307.4 is exact, the ml-engineering table rounds to the TFLOP/s)."""
    assert abs(report(f"{gpu} {field} ({row})", getattr(GPUS[gpu], field), ROWS[row]["value"] * scale)) < 1e-9


def test_b200_hbm_is_what_nvidia_smi_shows():
    """PHYSICS.md: the catalog stores what nvidia-smi shows (183,359 MiB, NVIDIA/TensorRT-LLM #10278),
    6.8% above the datasheet's 180 GB, as H100's 81,559 MiB is 6.9% above its 80 GB."""
    b200, h100 = report("B200 HBM over datasheet 180 GB", GPUS["b200"].hbm_bytes, ROWS["ds_b200_hbm_gb"]["value"] * 1e9), \
        GPUS["h100-sxm"].hbm_bytes / 80e9 - 1
    assert 0.05 < b200 < 0.08 and abs(b200 - h100) < 0.01


def test_amd_hbm_is_binary_gib_as_rocminfo_shows():
    """AMD's ROCm table gives Instinct VRAM in GiB (192 / 256 / 288): rocminfo on an MI300X reports
    201,310,208 KB = 206,141,652,992 B (ds_mi300x_vram_bytes, ROCm/legacy-rocm-build #4414), 0.008%
    below 192 GiB and 7.4% above the 192e9 the catalog had taken from the "192 GB" datasheet row."""
    mi300x = GPUS["mi300x"].hbm_bytes
    assert abs(report("MI300X rocminfo over 192 GiB (ds_mi300x_vram_gib)", mi300x, ROWS["ds_mi300x_vram_gib"]["value"] * 2**30)) < 1e-3
    assert 0.07 < report("MI300X rocminfo over the datasheet's 192e9 (ds_mi300x_hbm_gb)", mi300x, ROWS["ds_mi300x_hbm_gb"]["value"] * 1e9) < 0.08
    for key in ("mi325x", "mi355x"):
        gib = GPUS[key].hbm_bytes / 2**30
        assert gib == ROWS[f"ds_{key}_vram_gib"]["value"] == ROWS[f"ds_{key}_hbm_gb"]["value"]
        assert 0.07 < report(f"{key} catalog over its datasheet 'GB' read as 1e9", GPUS[key].hbm_bytes, gib * 1e9) < 0.08


def test_b300_is_what_the_device_reports():
    """B300 as nvidia-smi and the CUDA device report it (a Dell XE9780's 7 B300 SXM6 AC): 148 SMs (152 on a
    second SKU), not the full die's 160 the catalog had (-7.5%, the published peak unchanged); 275,040 MiB,
    0.14% above the datasheet's 288e9 it had; a 1,100 W power limit, 10% above the 1,000 W maximum TGP of
    NVIDIA's DGX B300 power capping page (ds_b300_max_tgp, DGX's own setting)."""
    b300 = GPUS["b300"]
    assert report("B300 SMs against the full die's", b300.sms, ROWS["ds_b300_sms"]["conditions"]["full_die_sms"]) == pytest.approx(148 / 160 - 1)
    assert b300.sms <= ROWS["ds_b300_sms"]["conditions"]["other_sku_sms"] and b300.bf16_flops == 2.25e15
    assert 0 < report("B300 HBM over the datasheet's 288 GB", b300.hbm_bytes, ROWS["ds_b300_hbm_gb"]["value"] * 1e9) < 0.002
    assert report("B300 power limit over DGX B300's max TGP", b300.tdp_w, ROWS["ds_b300_max_tgp"]["value"]) == pytest.approx(0.1)


@pytest.mark.parametrize("row", ["nvbw_gb200_host_to_device", "nvbw_gb200_device_to_host"])
def test_gb200_host_link_is_what_nvbandwidth_measures(row):
    """A GB200 tray's host link (NVLink-C2C, where offload and checkpoints go) at nvbandwidth's rates on Azure
    ND GB200 v6: the link's achieved 197 GB/s (the mean) within 2.1% of host to device 201 and device to host 193.
    PCIe's 0.80 the catalog had assumed gave 180 GB/s: -10.4% and -6.7%."""
    host_link = Cluster.get("gb200-nvl72").host_link
    assert abs(report(f"{row} (GB/s)", host_link.effective_bytes_per_s / 1e9, ROWS[row]["value"])) < 0.025


def test_mi355x_host_is_mlperf_s_system_description():
    """The MI355X node's host (pf_mi355x_host_memory): 24 DIMMs of 128 GB (3 TiB, 2.0x the 1.5 TiB the catalog had
    assumed) on two 12-channel sockets at DDR5-6400: 2 x 12 x 6,400 MT/s x 8 B = 1,228.8 GB/s (was 1,152, +6.7%)."""
    row, host = ROWS["pf_mi355x_host_memory"], HOSTS["mi355x-epyc"]
    dimms, size = row["conditions"]["dimms"], row["conditions"]["dimm_GB"]
    assert report("MI355X host memory (bytes)", host.memory_bytes, dimms * size * 2**30) == 0
    assert report("MI355X host DRAM bandwidth (B/s)", host.memory_bytes_per_s, dimms * 6400e6 * 8) == pytest.approx(0, abs=1e-12)
    assert "unconfirmed" not in host.name + host.source and "assum" not in host.source


def test_b200_is_no_longer_assumed():
    """The three assumptions issue 36 names are gone: FP8 MAMF measured (not 2 x BF16), attention
    measured on B200 (not H100's fractions of the peak), and the name no longer says unconfirmed."""
    b200 = GPUS["b200"]
    assert b200.fp8_mamf_flops == 3432.5e12 != 2 * b200.mamf_flops
    assert dict(b200.attention_flops)["cudnn"] == ROWS["attn_cudnn_b200_hd64_causal_s4096"]["value"] * 1e12
    assert "unconfirmed" not in b200.name and "unconfirmed" not in b200.source and b200.confirmed


# ---- GEMM rate by shape ----
H100_FP8 = [r for r in ROWS if r.startswith("gemm_azure_h100_fp8_")]
GB200_FP8 = [r for r in ROWS if r.startswith("gemm_azure_gb200_fp8_")]
SMALL_OR_SKINNY = {"1024x1024x1024", "1024x2145x1024", "802816x192x768"}


@pytest.mark.parametrize("row", H100_FP8 + [r.replace("h100", "h200") for r in H100_FP8])
def test_hopper_fp8_gemm_rate_by_shape(row):
    """cuBLASLt FP8 on H100/H200 (Azure benchmarking guide) against the engine's GEMM at the row's
    shape, every shape within 10% (measured -6.0% .. +8.8%; the fit's rows). Engine v3 was -0.4% ..
    -16.3% from 2,048^3 and +64% .. +72% at 1024^3, 1024x2145x1024 and N = 192 (SMALL_OR_SKINNY),
    where wave and tile quantisation and the operands' HBM time now set the rate."""
    assert abs(_gemm_error(row)) < 0.10


@pytest.mark.parametrize("row", GB200_FP8)
def test_gb200_fp8_gemm_rate_by_shape(row):
    """cuBLASLt FP8 on GB200 (Azure ND GB200 v6), every shape within 12% (measured -11.0% at 4096^3,
    4 waves of 128 x 256 tiles on 148 SMs, .. +6.2%; the fit's rows; engine v3: +28% at 1024^3 and
    +98% at N = 192)."""
    assert abs(_gemm_error(row)) < 0.12


A100_SHAPES = ["gemm_azure_a100_fp16_1024x1024x1024", "gemm_azure_a100_fp16_2048x2048x2048", "gemm_azure_a100_fp16_4096x4096x4096",
               "gemm_azure_a100_fp16_8192x8192x8192", "gemm_azure_a100_fp16_16384x16384x16384", "gemm_azure_a100_fp16_6144x12288x12288"]


@pytest.mark.parametrize("row", A100_SHAPES)
def test_a100_gemm_by_shape(row):
    """Azure's cuBLASLt FP16 on A100 (ND A100 v4, 10,000 warm-ups; FP16 at BF16's tensor rate) against
    Ampere's kernel, which no row by shape had checked (its tiles come from Calculon's modelling
    table, its share from Korthikanti's layer fit): the cubes and 6144x12288x12288 within 11%
    (measured -10.3% at 16384^3 .. +7.2% at 1024^3). Its two thin rows run fast (802816x192x768
    +25.8%, 1024x2145x1024 +37.1%): printed by validate, a lead for refitting the tiles."""
    c = ROWS[row]["conditions"]
    error = report(f"{row} (TFLOP/s)", gemm_rate(GPUS["a100-sxm-80gb"], c["M"], c["N"], c["K"]) / 1e12, ROWS[row]["value"])
    assert abs(error) < 0.11


MI300X_FITTED = ["gemm_azure_mi300x_fp8_4096x4096x4096", "gemm_azure_mi300x_fp8_8192x8192x8192",
                  "gemm_azure_mi300x_fp8_16384x16384x16384", "gemm_azure_mi300x_fp8_32768x32768x32768",
                  "gemm_azure_mi300x_fp8_6144x12288x12288", "gemm_azure_mi300x_fp8_802816x192x768"]


@pytest.mark.parametrize("row", MI300X_FITTED)
def test_mi300x_fp8_gemm_by_shape(row):
    """Azure's hipBLASLt FP8 on MI300X (ND MI300X v5), the six rows GEMM_KERNELS['cdna3'] is fitted on:
    within 12% each (measured -8.6% at 6144x12288x12288 .. +10.4% at 16384^3, where hipBLASLt's FP8
    rate falls past 8K cubes, ROCm/hipBLASLt #1721). With Hopper's constants, as before, they ran
    +3.8% .. +25.4% fast (+19.4% at N = 192). The three smallest rows take ~40 us a call whatever
    their FLOPs, a floor the same harness does not show on H100 or GB200: printed by validate."""
    assert abs(_gemm_error(row)) < 0.12


def test_mi300x_fp8_gemm_rows_are_not_fast_at_the_median():
    """The fitted rows' signed median error within 5% (measured -1.0%; with Hopper's constants: +13.3%)."""
    errors = sorted(_gemm_error(row) for row in MI300X_FITTED)
    assert abs((errors[2] + errors[3]) / 2) < 0.05


def test_mi300x_fa2_rate_is_below_azure_s_row():
    """FA2 on MI300X (Azure, head dim 64, batch 2, 8K, flash-attention's ROCm build): the engine's rate, the
    unconfirmed H100-share assumption at head dim 128 moved to 64 by the head-size curve, is 13% below the row
    (285.7 against 328.6 TFLOP/s): the assumption errs slow. Held within 15% until a CK row replaces it."""
    assert -0.15 < _attention_error("attn_fa2_azure_mi300x", "fa2") < 0


@pytest.mark.parametrize("row", [r for r in ROWS if r.startswith("mamf_") and ROWS[r]["hardware"] in ROW_GPUS])
def test_gemm_at_the_mamf_shape_is_below_it(row):
    """At each MAMF row's best shape (B200, B300, GB200 BF16 and FP8, H100, H200, Instinct) the engine
    is below the row, by less than 30% (measured -16.3% MI355X .. -26.1% GB200; B300 FP8 -20.5% at its measured 148
    SMs, -26.4% at the full die's 160 the catalog had assumed): MAMF is the best of
    a search over shapes in a short run, the engine a sustained share of it with a fixed tile (whose
    wave count at the best shape is not always cuBLAS's)."""
    assert -0.30 < _gemm_error(row) < 0


# ---- attention rate ----
def _attention_error(row_id: str, kernel: str) -> float:
    row = ROWS[row_id]
    gpu, c = GPUS[ROW_GPUS[row["hardware"]]], row["conditions"]
    return report(f"{row_id} (TFLOP/s)", attention_rate(gpu, kernel, c["seqlen"], c["head_dim"]) / 1e12, row["value"])


@pytest.mark.parametrize("seq", [512, 1024, 2048, 4096, 8192, 16384])
def test_h100_fa3_rate_by_sequence_length(seq):
    """FlashAttention-3 forward on H100 (tritonbench, head dim 128; the FA3 paper's sizes) against the
    engine's FA3 rate at the row's length (labs.core.engine.gemm.ATTENTION_RAMP_SEQ, through 0.55 of
    989.4 at 4K, the paper's forward and backward together): every length 7.8% .. 9.6% below the
    forward-only rows, within 12% (engine v3, one rate for every length: +26.5% at 512)."""
    assert -0.12 < _attention_error(f"attn_fa3_h100_pytorchbench_s{seq}", "fa3") < 0


@pytest.mark.parametrize("kernel,tag", [("cudnn", "cudnn"), ("fa4", "fa4")])
@pytest.mark.parametrize("seq", [1024, 2048, 4096, 8192, 16384])
def test_b200_causal_attention_rate_by_sequence_length(kernel, tag, seq):
    """cuDNN and FlashAttention-4 forward on B200, causal, head dim 64 (flash-attention PR #2605):
    the catalog takes the 4K row, so 4K is exact, and the ramp (s0 solved on the 1K and 16K rows)
    puts every length within 3% (measured -1.1% .. +2.0%; engine v3, one rate per kernel: +56% and
    +98% at 1K)."""
    error = _attention_error(f"attn_{tag}_b200_hd64_causal_s{seq}", kernel)
    if seq == 4096:
        assert error == pytest.approx(0, abs=1e-12)
    else:
        assert abs(error) < 0.03


@pytest.mark.parametrize("seq", [512, 1024, 2048, 4096, 8192, 16384])
def test_b200_fa2_rate(seq):
    """FA2 2.7.4 on B200 (flash-attention #1589, head dim 64, non-causal): the catalog's 343 TFLOP/s
    is the median of the 2K-8K rows; every row within 12% (measured +11.8% .. -10.0%). FA2 reaches a
    sixth of B200's peak: H100's 0.31 of the peak (698 TFLOP/s), which v3 assumed, was twice too fast."""
    assert abs(_attention_error(f"attn_fa2_b200_hd64_full_s{seq}", "fa2")) < 0.12


@pytest.mark.parametrize("row,kernel", [("attn_fa2_azure_h100", "fa2"), ("attn_fa2_azure_h200", "fa2"), ("attn_fa2_azure_gb200", "fa2")])
def test_fa2_rate_at_8k(row, kernel):
    """FlashAttention-2, head dim 128, batch 2, 8K (Azure benchmarking guide): H100/H200 within 8% of
    the engine's 0.31 of the peak (measured -6.5%, -6.9%); GB200's row is the catalog's value."""
    assert abs(_attention_error(row, kernel)) < 0.08


def test_blackwell_attention_kernels_price_the_layer():
    """The measured rate is what a layer's attention costs: the same causal work takes 977 / 1,125
    of the old (H100-fraction) time's reciprocal on B200 with cuDNN, and FA3 on B200 runs as FA2."""
    b200 = GPUS["b200"]
    forward, backward = flash_attention_time(b200, 1e12, "cudnn")
    assert forward == pytest.approx(1e12 / 977e12) and backward == pytest.approx(2.5 * forward)
    assert flash_attention_time(b200, 1e12, "fa3") == flash_attention_time(b200, 1e12, "fa2")


# ---- HBM bandwidth ----
@pytest.mark.parametrize("row,tolerance", [("hbm_azure_h100_triad", 0.05), ("hbm_azure_h200_triad", 0.05),
                                           ("hbm_azure_h100_copy", 0.10), ("hbm_azure_h200_copy", 0.10),
                                           ("hbm_babelstream_b300_triad", 1e-4), ("hbm_babelstream_b300_copy", 0.13),
                                           ("hbm_azure_mi300x_triad", 1e-4), ("hbm_azure_mi300x_copy", 0.01),
                                           ("hbm_amd_mi300x_babelstream_triad", 0.05)])
def test_hbm_bandwidth_a_streaming_kernel_reaches(row, tolerance):
    """Azure's STREAM kernels: the engine's hbm_bytes_per_s x hbm_efficiency (0.90) within 5% of triad
    (measured +1.5% H100, +4.1% H200; triad is the element-wise kernels' pattern, two reads and a
    write) and 10% of copy (+4.0%, +7.7%). B300's efficiency is its BabelStream triad (median of 7 GPUs) over 8 TB/s,
    so triad is exact and copy +12.1% (a copy has no add to overlap; H100's copy was 2.4% under its triad, B300's
    10.8%). MI300X's is Azure's triad over 5.3 TB/s (0.772, was 0.90: +16.6%): copy -0.5%, and AMD's acceptance
    guide's BabelStream triad with all 8 GPUs at once +3.6%. No such row exists for B200, GB200, GB300, MI325X or
    MI355X: their shares are in the unconfirmed list."""
    row_ = ROWS[row]
    gpu = GPUS[ROW_GPUS[row_["hardware"]]]
    assert abs(report(f"{row} (TB/s)", gpu.hbm_bytes_per_s * gpu.hbm_efficiency / 1e12, row_["value"])) < tolerance


def test_validate_lists_every_row_it_compares():
    """validate's GPU section (gpu_row_checks) reads the same rows: every catalogued GPU's GEMM,
    attention and HBM row has an engine value except FP4 GEMMs and FP8 attention (not modelled)."""
    checks = gpu_row_checks(kernel_rows())
    assert {c["gpu"] for c in checks} >= set(NEW) - {"gb300"} | {"h100-sxm", "h200-sxm"}
    missing = [c["row"] for c in checks if c["model"] is None]
    assert all("fp4" in r or r == "attn_fa3_h100_fp8_max" for r in missing), missing


# ---- every new part runs, and bad input is refused by name ----
@pytest.mark.parametrize("key", NEW)
@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_every_new_gpu_estimates(key, precision):
    """estimate() on each new part, on its own platform where the catalog has one (else a DGX B200
    with the part in it): it fits and finishes, and FP8 is faster than BF16."""
    cluster = next((c for c in CLUSTERS.values() if c.gpu is GPUS[key]), None) or replace(Cluster.get("dgx-b200"), gpu=GPUS[key])
    plan = Plan(tp=1, pp=1, dp=cluster.gpus, micro_batch=1, global_batch=8 * cluster.gpus, zero_stage=1, precision=precision)
    est = estimate(Model.get("llama3-8b"), cluster, plan)
    assert 0 < est.step_time_s < 60 and est.fits
    if precision == "fp8":
        bf16 = estimate(Model.get("llama3-8b"), cluster, replace(plan, precision="bf16"))
        assert est.step_time_s < bf16.step_time_s


def _gpu(**changes):
    return replace(GPUS["b200"], **changes)


@pytest.mark.parametrize("changes,field", [
    ({"attention_flops": ()}, "attention_flops"),  # a Blackwell part needs its own rates
    ({"attention_flops": (("cudnn", 977e12), ("fa2", 343e12))}, "attention_flops"),  # fa3 missing
    ({"attention_flops": (("flash9", 1e12),) + GPUS["b200"].attention_flops}, "attention_flops"),
    ({"attention_flops": (("cudnn", 3e15), ("fa2", 1e12), ("fa3", 1e12))}, "attention_flops"),  # above the peak
    ({"fp4_flops": -1.0}, "fp4_flops"),
    ({"unconfirmed": ("clock: guessed",)}, "unconfirmed"),
    ({"unconfirmed": "sms: 148"}, "unconfirmed"),
    ({"confirmed": False, "unconfirmed": ()}, "unconfirmed"),
])
def test_bad_gpu_entries_are_refused_by_name(changes, field):
    with pytest.raises(ValueError, match=field):
        _gpu(**changes)


def test_precision_without_tensor_cores_is_refused():
    """A100 has no FP8 tensor cores: refused where the plan meets the cluster, naming the field."""
    with pytest.raises(ValueError, match="precision"):
        estimate(Model.get("llama3-8b"), Cluster.get("dgx-a100"), Plan(tp=1, dp=8, global_batch=64, precision="fp8"))


@pytest.mark.parametrize("key", NEW)
def test_no_power_curve_no_power_limit(key):
    """No clock-vs-power curve is documented for the new parts: a power limit is refused by name."""
    with pytest.raises(ValueError, match="power_limit_w"):
        GPUS[key].at_power_limit(GPUS[key].tdp_w * 0.8)
