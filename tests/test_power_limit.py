"""A lowered GPU power limit (nvidia-smi -pl) and the Omni-Path cluster of a published run.

The expected values are the sources' own numbers, typed here from the source:
- Fire-Flyer 2 artifact A1 (github.com/haswelliris/sc_ad): FP16 GEMM 220 TFLOP/s on A100 PCIe 40GB
  (250 W) against 263 on A100 SXM4 40GB (400 W), one script.
- stas00/ml-engineering MAMF table: A100 PCIe 80GB (300 W) 252.9 TFLOP/s against A100 SXM (400 W) 271.2.
- NVIDIA H100 product page: H100 NVL (132 SMs, 400 W) 835.5 TFLOP/s BF16 dense, H100 SXM (700 W) 989.4.
- BLOOM model card (huggingface.co/bigscience/bloom): 48 nodes of 8 A100 80GB, 4 Omni-Path links a node.
"""

import pytest

from labs.core import Cluster, Model, Plan, estimate, sweep
from labs.core.engine.gemm import gemm_kernel, gemm_time
from labs.core.engine.hardware import GPUS, LINKS, POWER_CURVES

A100_250W = 220 / 263  # Fire-Flyer 2, A1
A100_300W = 252.9 / 271.2  # MAMF table
H100_400W = 835.5 / 989.4  # datasheet peaks, H100 NVL over SXM


def _err(got, want):
    return got / want - 1


def test_curve_reproduces_each_source_point():
    cases = [
        ("A100 SXM 40GB at 250 W / at 400 W (Fire-Flyer 2)", GPUS["a100-sxm-40gb"].at_power_limit(250).mamf_flops / GPUS["a100-sxm-40gb"].mamf_flops, A100_250W),
        ("A100 SXM 80GB at 300 W, MAMF TFLOP/s (A100 PCIe's 252.9)", GPUS["a100-sxm-80gb"].at_power_limit(300).mamf_flops / 1e12, 252.9),
        ("H100 SXM at 400 W, BF16 peak TFLOP/s (H100 NVL's 835.5)", GPUS["h100-sxm"].at_power_limit(400).bf16_flops / 1e12, 835.5),
        ("A100 PCIe 80GB (300 W part) at 250 W over its own rate", GPUS["a100-pcie-80gb"].at_power_limit(250).mamf_flops / GPUS["a100-pcie-80gb"].mamf_flops, A100_250W / A100_300W),
    ]
    for name, got, want in cases:
        print(f"{name}: {got:.4f} against {want:.4f} ({_err(got, want):+.2e})")
        assert got == pytest.approx(want, rel=1e-9)


def test_between_points_the_curve_is_the_straight_line_and_at_tdp_nothing_changes():
    a100 = GPUS["a100-sxm-80gb"]
    mid = a100.at_power_limit(275).mamf_flops / a100.mamf_flops
    print(f"A100 at 275 W: {mid:.4f} of its 400 W rate (halfway between {A100_250W:.4f} and {A100_300W:.4f})")
    assert mid == pytest.approx((A100_250W + A100_300W) / 2, rel=1e-12)
    h100_550 = GPUS["h100-sxm"].at_power_limit(550).bf16_flops / GPUS["h100-sxm"].bf16_flops
    assert h100_550 == pytest.approx((H100_400W + 1) / 2, rel=1e-12)
    at_tdp = a100.at_power_limit(400)
    assert (at_tdp.bf16_flops, at_tdp.mamf_flops) == (a100.bf16_flops, a100.mamf_flops)
    # lowering twice is lowering once: 400 -> 300 -> 250 W equals 400 -> 250 W
    assert a100.at_power_limit(300).at_power_limit(250).mamf_flops == pytest.approx(a100.at_power_limit(250).mamf_flops, rel=1e-12)
    assert a100.at_power_limit(300).at_power_limit(250).name == "A100-SXM-80GB @ 250 W"


def test_every_compute_rate_scales_and_memory_does_not():
    h100, capped = GPUS["h100-sxm"], GPUS["h100-sxm"].at_power_limit(400)
    for field in ("bf16_flops", "fp8_flops", "mamf_flops", "fp8_mamf_flops"):
        assert getattr(capped, field) / getattr(h100, field) == pytest.approx(H100_400W, rel=1e-12), field
    for field in ("hbm_bytes", "hbm_bytes_per_s", "hbm_efficiency", "sms", "nvlink", "arch"):
        assert getattr(capped, field) == getattr(h100, field), field
    assert capped.power_limit_w == 400 and "POWER_CURVES" in capped.source


def test_a_gemm_runs_slower_by_the_clock_ratio():
    """The rate-bound part of gemm_time (all but its fixed per-call cost) grows by 1 / the source's
    ratio: at 8192^3 the operands' HBM time, which the clock does not slow, is 5% of the compute's
    and enters as a cube (labs.core.engine.gemm.ROOFLINE_NORM): within 1e-4."""
    base, capped = GPUS["a100-sxm-80gb"], GPUS["a100-sxm-80gb"].at_power_limit(300)
    m, n, k = 8192, 8192, 8192
    fixed = gemm_kernel(base).fixed_s
    slower = (gemm_time(capped, m, n, k) - fixed) / (gemm_time(base, m, n, k) - fixed)
    print(f"8192^3 GEMM at 300 W: x{slower:.4f} (source: x{1 / A100_300W:.4f})")
    assert slower == pytest.approx(1 / A100_300W, rel=1e-4)


def test_compute_bound_estimate_slows_by_the_clock_ratio():
    """GPT-3 175B on one DGX A100 at TP 8: its compute is GEMMs and flash attention, both bound by the
    SM clock, plus a little element-wise HBM traffic and fixed per-GEMM cost, which the power limit
    does not slow. So the compute time grows by a little less than 1 / ratio (the HBM-bound share
    is small); the HBM-bound optimizer step does not change."""
    model, plan = Model.get("gpt3-175b"), Plan(tp=8, pp=1, dp=1, micro_batch=1, global_batch=8)
    base = estimate(model, Cluster.get("dgx-a100"), plan)
    capped = estimate(model, Cluster.get("dgx-a100", power_limit_w=300), plan)
    slower = capped.time.compute / base.time.compute
    print(f"GPT-3 175B, TP 8, A100 at 300 W: compute x{slower:.4f}, clock ratio x{1 / A100_300W:.4f} "
          f"(error {_err(slower, 1 / A100_300W):+.2%}); step {base.time.total:.2f} -> {capped.time.total:.2f} s")
    assert 1 < slower <= 1 / A100_300W * (1 + 1e-12)
    assert slower == pytest.approx(1 / A100_300W, rel=0.01)
    assert capped.time.optimizer == pytest.approx(base.time.optimizer, rel=1e-12)
    assert capped.memory.total == base.memory.total


def test_mfu_is_measured_against_the_datasheet_peak():
    """MFU counts the part's datasheet peak (PaLM's definition: the hardware's theoretical peak), so a
    run at a lowered power limit shows its lower clock as a lower MFU: MFU scales as 1 / step time."""
    model, plan = Model.get("gpt3-175b"), Plan(tp=8, pp=1, dp=1, micro_batch=1, global_batch=8)
    base = estimate(model, Cluster.get("dgx-a100"), plan)
    capped = estimate(model, Cluster.get("dgx-a100", power_limit_w=300), plan)
    print(f"A100 at 300 W: MFU {base.mfu:.2%} -> {capped.mfu:.2%}, step x{capped.step_time_s / base.step_time_s:.4f}")
    assert capped.peak_flops == pytest.approx(GPUS["a100-sxm-80gb"].bf16_flops, rel=1e-12)
    assert capped.mfu == pytest.approx(base.mfu * base.step_time_s / capped.step_time_s, rel=1e-12)
    rows = sweep(model, Cluster.get("dgx-a100", power_limit_w=300), 8, tp=8, pp=1, micro_batch=1, sequence_parallel=False, zero_stage=0,
                 recompute="none", tp_comm_overlap=False, schedule="1f1b", virtual_stages=1)
    assert len(rows) == 1 and rows.iloc[0]["mfu"] == pytest.approx(capped.mfu, rel=1e-9)


def test_sweep_reads_the_capped_gpu():
    model = Model.get("llama3-8b")
    base = sweep(model, Cluster.get("dgx-h100"), 64, tp=[1, 2], pp=1)
    capped = sweep(model, Cluster.get("dgx-h100").with_power_limit(500), 64, tp=[1, 2], pp=1)
    b, c = base.iloc[0], capped.iloc[0]
    print(f"Llama 3 8B, 8 H100, best plan: {b.step_time_s:.3f} s at 700 W, {c.step_time_s:.3f} s at 500 W")
    assert c.step_time_s > b.step_time_s
    at_500w = H100_400W + (1 - H100_400W) * (500 - 400) / (700 - 400)  # the straight line between the two points
    assert c.step_time_s <= b.step_time_s / at_500w * (1 + 1e-9)


@pytest.mark.parametrize("watts", [249.9, 400.5, 0, -300, float("nan"), float("inf"), "300", True, None, 10**400])
def test_bad_watts_refused_by_name(watts):
    with pytest.raises(ValueError, match="power_limit_w"):
        GPUS["a100-sxm-80gb"].at_power_limit(watts)


def test_out_of_range_message_names_the_range():
    with pytest.raises(ValueError, match=r"power_limit_w must be between 400 and 700 W for H100-SXM") as err:
        GPUS["h100-sxm"].at_power_limit(300)
    print(err.value)
    with pytest.raises(ValueError, match="power_limit_w"):
        Cluster.get("dgx-h100", power_limit_w=800)
    with pytest.raises(ValueError, match="power_limit_w.*no documented clock-vs-power curve"):
        GPUS["b200"].at_power_limit(800)


def test_every_curve_rises_to_one_at_full_power_and_names_its_sources():
    for key, points in POWER_CURVES.items():
        watts = [p.watts for p in points]
        fractions = [p.gemm_fraction for p in points]
        assert watts == sorted(watts) and fractions == sorted(fractions) and fractions[-1] == 1.0, key
        assert all(0 < f <= 1 and p.source for f, p in zip(fractions, points)), key
    for key, gpu in GPUS.items():
        if gpu.power_curve:
            assert POWER_CURVES[gpu.power_curve][-1].watts >= gpu.tdp_w > 0, key


def test_omni_path_cluster_of_bloom():
    """BLOOM 176B: 48 nodes x 8 A100 80GB, 4 Omni-Path 100 Gb/s links a node: each GPU's share of
    the NICs is half a link, 12.5 GB/s x 4 / 8 x efficiency."""
    cluster = Cluster.get("jean-zay-a100-opa", nodes=48)
    assert cluster.gpus == 384 and cluster.gpu is GPUS["a100-sxm-80gb"] and cluster.inter is LINKS["opa-100"]
    assert cluster.rails == 4 and cluster.host.memory_bytes == 512e9
    per_gpu = cluster.inter_bytes_per_s_per_gpu
    print(f"Jean Zay A100: {per_gpu / 1e9:.2f} GB/s of NIC per GPU (DGX A100: {Cluster.get('dgx-a100').inter_bytes_per_s_per_gpu / 1e9:.2f})")
    assert per_gpu == pytest.approx(12.5e9 * 4 / 8 * LINKS["opa-100"].efficiency, rel=1e-12)
    model, plan = Model.get("gpt3-175b"), Plan(tp=4, pp=12, dp=8, micro_batch=1, global_batch=2048)
    opa = estimate(model, cluster, plan)
    hdr = estimate(model, Cluster.get("dgx-a100", nodes=48), plan)
    print(f"GPT-3 175B at TP4 PP12 DP8 on 384 A100: DP exposed {opa.time.dp_comm:.3f} s on Omni-Path, {hdr.time.dp_comm:.3f} s on 8 HDR a node")
    assert opa.time.dp_comm >= hdr.time.dp_comm
    assert opa.comm_bytes_per_gpu == hdr.comm_bytes_per_gpu
