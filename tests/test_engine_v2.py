"""Engine v2's mechanisms, each against a measurement or a test that fails if it is removed:
rails and pods, message size, NVLS, TP overlap, GEMM shape, gradient precision, eras, ZB-H1
under recomputation."""

import json

import pytest

from conftest import DATA, report
from labs.core import Cluster, Model, Plan, estimate, sweep
from labs.core.engine.eras import ERAS
from labs.core.engine.gemm import gemm_efficiency
from labs.core.engine.hardware import GPUS
from labs.core.engine.topology import bus_bandwidth

NCCL = json.loads((DATA / "nccl_busbw.json").read_text())


def _cluster(row):
    extra = {} if row.get("nics_per_node") is None else {"nics_per_node": row["nics_per_node"]}
    return Cluster.get(row["cluster"], nodes=row.get("nodes", 1), **extra)


@pytest.mark.parametrize("row", NCCL["points"], ids=[r["id"] for r in NCCL["points"]])
def test_nccl_busbw_points(row):
    """Measured all-reduce bus bandwidth inside a node, over rails, per NIC and at 1,984 GPUs."""
    got = bus_bandwidth("all_reduce", float(row["bytes"]), _cluster(row), row["gpus"], row.get("stride", 1), row["algorithm"]) / 1e9
    assert abs(report(f"{row['id']} busbw GB/s", got, row["busbw_gbs"])) < 0.15


@pytest.mark.parametrize("curve", NCCL["single_node_curves"], ids=[c["id"] for c in NCCL["single_node_curves"]])
def test_busbw_depends_on_message_size(curve):
    """nccl-tests curves on 8 GPUs: within 15% at every size, 8 MB - 8 GB (the ring's ramp,
    labs.core.engine.collectives.ring_ramp; v3's alpha-beta model alone was 24-50% fast at 8-128 MB
    on the A100), and, as measured, a message of tens of MB reaches well under peak."""
    cluster = _cluster(curve)
    worst = 0.0
    for size, measured in curve["busbw_gbs"].items():
        got = bus_bandwidth("all_reduce", float(size), cluster, curve["gpus"], 1, curve["algorithm"]) / 1e9
        error = report(f"{curve['id']} {int(size) >> 20} MB", got, measured)
        worst = max(worst, abs(error))
        assert abs(error) < (0.10 if int(size) >= 1 << 28 else 0.15)
    small = bus_bandwidth("all_reduce", 8.0 * (1 << 20), cluster, 8, 1, curve["algorithm"])
    large = bus_bandwidth("all_reduce", 8.0 * (1 << 30), cluster, 8, 1, curve["algorithm"])
    assert small < 0.6 * large


def test_rails_carry_a_dp_ring_over_whole_nodes():
    """A DP ring over 64 DGX H100 nodes crosses each node on its 8 NICs: several hundred GB/s
    of busbw (capped by NVLink's ~370), while a group with one GPU per node has one NIC."""
    cluster = Cluster.get("dgx-h100", nodes=64)
    whole_nodes = bus_bandwidth("all_reduce", 4e9, cluster, 512, 1, "ring") / 1e9
    one_per_node = bus_bandwidth("all_reduce", 4e9, cluster, 64, 8, "ring") / 1e9
    print(f"512-GPU ring over whole nodes {whole_nodes:.0f} GB/s; 64-GPU ring behind TP=8 {one_per_node:.0f} GB/s")
    assert whole_nodes > 300 and 40 < one_per_node < 50


def test_pods_oversubscribed_above_3072_gpus():
    """Llama 3's cluster: full bisection inside 3,072-GPU pods, 1:7 above (arXiv:2407.21783)."""
    cluster = Cluster.get("meta-h100-roce", nodes=1024)
    inside = bus_bandwidth("all_reduce", 4e9, cluster, 384, 8, "ring")
    across = bus_bandwidth("all_reduce", 4e9, cluster, 1024, 8, "ring")
    assert across < inside / 5


def test_tp_overlap_helps_on_nvlink_and_not_across_nodes():
    model = Model.get("gpt3-175b")
    cluster = Cluster.get("dgx-h100", nodes=128)
    common = dict(pp=8, micro_batch=1, global_batch=1536, zero_stage=1, recompute="selective", sequence_parallel=True)
    on, off = (estimate(model, cluster, Plan(tp=8, dp=16, tp_comm_overlap=x, **common)) for x in (True, False))
    report("TP=8 exposed TP comm, overlap on / off", on.time.tp_comm / off.time.tp_comm, 0.25)
    assert on.step_time_s < off.step_time_s and on.time.tp_comm < 0.6 * off.time.tp_comm
    wide_on, wide_off = (estimate(model, cluster, Plan(tp=16, dp=8, tp_comm_overlap=x, **common)) for x in (True, False))
    assert wide_on.step_time_s >= wide_off.step_time_s


def test_tp_overlap_without_sp_is_refused():
    with pytest.raises(ValueError, match="tp_comm_overlap"):
        Plan(tp=8, dp=1, global_batch=1, tp_comm_overlap=True)


def test_gemm_efficiency_grows_with_gemm_size():
    """Small GEMMs reach less of the peak (Calculon's A100 table: 0.6 at 1 GFLOP, 0.95 at 128)."""
    gpu = GPUS["h100-sxm"]
    small, large = gemm_efficiency(gpu, 2048, 512, 1024), gemm_efficiency(gpu, 8192, 6144, 12288)
    print(f"H100 GEMM efficiency: 2048x512x1024 {small:.2f}, 8192x6144x12288 {large:.2f}")
    assert small < 0.8 * large and large < gpu.mamf_flops / gpu.bf16_flops


def test_hidden_size_tp_and_micro_batch_move_compute_efficiency():
    """The same tokens through a small model at TP=8 and micro-batch 1 run at a lower fraction
    of peak than through a large one: compute time per model FLOP rises as GEMMs shrink."""
    cluster = Cluster.get("dgx-h100", nodes=1)

    def seconds_per_flop(model, tp, mb):
        est = estimate(model, cluster, Plan(tp=tp, dp=8 // tp, micro_batch=mb, global_batch=8 // tp * mb * 4, sequence_parallel=tp > 1))
        return est.time.compute / est.model_flops_per_step

    small = Model("1B", 24, 2048, 16, 2048, 51200)
    big = Model.get("llama2-13b")
    assert seconds_per_flop(small, 8, 1) > 1.1 * seconds_per_flop(big, 8, 1)
    assert seconds_per_flop(small, 8, 1) > seconds_per_flop(small, 1, 1)
    assert seconds_per_flop(small, 8, 1) > seconds_per_flop(small, 8, 4)


def test_fp32_gradient_reduction_doubles_the_bytes():
    model, cluster = Model.get("llama2-7b"), Cluster.get("dgx-h100", nodes=4)
    bf16, fp32 = (estimate(model, cluster, Plan(dp=32, global_batch=64, zero_stage=1, grad_reduce_dtype=d)) for d in ("bf16", "fp32"))
    assert fp32.comm_bytes_per_gpu["dp"] > 1.4 * bf16.comm_bytes_per_gpu["dp"]
    assert fp32.memory.gradients == pytest.approx(2 * bf16.memory.gradients)


def test_eras_limit_the_sweep():
    """A 2021 run cannot use 2024 features: its era's best plan has no flash attention, no SP,
    no zero-bubble, interleaving only from 3 stages, and is no faster than the unrestricted best."""
    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-a100", nodes=48)
    era = sweep(model, cluster, global_batch=1536, era="megatron-2021")
    free = sweep(model, cluster, global_batch=1536)
    assert not era.flash_attention.any() and not era.sequence_parallel.any()
    assert set(era.schedule) <= {"1f1b", "interleaved"} and (era[era.schedule == "interleaved"].pp >= 3).all()
    assert era.iloc[0].mfu <= free.iloc[0].mfu
    with pytest.raises(ValueError, match="schedule"):
        Plan.for_era("megatron-2021", schedule="zb-h1", pp=4, dp=1, global_batch=8)
    assert Plan.for_era("megatron-core-2024").flash_attention and not Plan.for_era("megatron-2021").flash_attention
    assert set(ERAS) == {"megatron-2021", "megatron-2022", "megatron-core-2024", "llama3-2024", "deepspeed-2021", "pytorch-fsdp1-2023", "pytorch-fsdp2-2024",
                         "megatron-core-2025", "rocm-megatron-2025", "torchtitan-2025", "deepseek-v3-2024"}


def test_zb_h1_input_gradient_pass_includes_the_recomputed_forward():
    """With full recompute, B = dgrad + re-run forward (about 2F) and W = wgrad (about F): the
    ZB-H1 bubble (p-1)(F + B - W) is about (p-1) 2F, not the (p-1) F of equal halves."""
    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-h100", nodes=16)
    common = dict(tp=8, pp=8, dp=2, micro_batch=1, global_batch=32, sequence_parallel=True, schedule="zb-h1")
    none, full = (estimate(model, cluster, Plan(recompute=r, **common)) for r in ("none", "full"))
    print(f"ZB-H1 bubble: no recompute {none.bubble_fraction:.3f}, full recompute {full.bubble_fraction:.3f}")
    assert full.bubble_fraction > 1.3 * none.bubble_fraction


GEMM = json.loads((DATA / "gemm_microbenchmarks.json").read_text())


@pytest.mark.parametrize("row", GEMM["mamf"], ids=[r["gpu"] for r in GEMM["mamf"]])
def test_catalog_matmul_rate_is_the_measured_mamf(row):
    gpu = GPUS[row["gpu"]]
    assert gpu.mamf_flops == pytest.approx(row["tflops"] * 1e12)
    assert abs(report(f"{row['gpu']} bf16 peak TFLOP/s", gpu.bf16_flops / 1e12, row["peak_tflops"])) < 0.01


def test_gemm_size_curve_against_calculon_table():
    """Square-ish GEMMs of 1, 16 and 128 GFLOP on A100, relative to the 128-GFLOP one."""
    gpu = GPUS[GEMM["size_curve"]["gpu"]]

    def eff(gflop):
        k = round((gflop * 1e9 / 2) ** (1 / 3))
        return gemm_efficiency(gpu, k, k, k)

    for gflop, expected in GEMM["size_curve"]["relative_to_128_gflop"].items():
        got = eff(float(gflop)) / eff(128.0)
        assert abs(report(f"A100 GEMM efficiency at {gflop} GFLOP / at 128", got, expected)) < 0.10


def test_fp8_speeds_the_gemms_not_the_rest():
    """NeMo's GPT-3 175B H100 layout (TP4 PP8 VP6, 128 GPUs) in BF16 and FP8: FP8 runs the layers'
    GEMMs at the FP8 MAMF (1,402.6 against 794.5 TFLOP/s) but attention, norms and the output
    layer stay BF16, so the step is faster by less than the GEMM ratio; activations shrink
    (FP8 copies of GEMM inputs) while a 1-byte FP8 weight copy is added and fp32 masters stay."""
    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-h100", nodes=16)
    common = dict(tp=4, pp=8, dp=4, micro_batch=1, global_batch=256, schedule="interleaved", virtual_stages=6, recompute="none")
    bf16, fp8 = (estimate(model, cluster, Plan.for_era("megatron-core-2024", precision=p, **common)) for p in ("bf16", "fp8"))
    speedup = bf16.step_time_s / fp8.step_time_s
    report("FP8 / BF16 speed-up, GPT-3 175B on 128 H100s", speedup, 1402.6 / 794.5)
    assert 1.2 < speedup < 1402.6 / 794.5
    assert fp8.memory.activations < bf16.memory.activations and fp8.memory.weights > bf16.memory.weights
    assert fp8.memory.optimizer == bf16.memory.optimizer
    assert fp8.model_tflops_per_gpu > bf16.model_tflops_per_gpu and 0 < fp8.mfu < 1
    with pytest.raises(ValueError, match="precision"):
        estimate(model, Cluster.get("dgx-a100", nodes=16), Plan(tp=4, pp=8, dp=4, global_batch=256, precision="fp8"))
