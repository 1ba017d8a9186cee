"""The software stacks of 2025-26 (issue #36 item 6; labs.core.engine.eras): each new stack field
against the code or the measurement it rests on, by hand count, with its error printed; estimate()
and sweep() with each new era on the presets it runs on; bad input refused by name.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from labs.core import Cluster, Model, Plan, estimate
from labs.core.engine.eras import (
    CUDA_GRAPH_LAUNCH_S, CUDA_GRAPH_REPLAY_ROWS, DEEPEP_LINK_SHARE, ERAS, NCCL_LINK_SHARE, HOST_S_PER_OP, MOE_EAGER_KERNELS, MOE_LAYER_GRAPHS, Era,
    launches_per_layer, stack_constant_rows,
)
from labs.core.engine.experts import all_to_all_cost
from labs.core.engine.hardware import NCCL_BASE_LATENCY_S
from labs.core.engine.models import RECOMPUTE_MODES
from labs.core.engine.search import sweep
from labs.core.engine.stages.compute import layer_compute, layer_kernels
from labs.core.engine.stages.inputs import model_terms
from labs.core.engine.stages.parallel import overlap_contention
from labs.core.engine.stages.pipe import DUALPIPE_COMM_SMS, _rank_comm, one_f_one_b_overlapped_pairs
from labs.core.engine.stages.xp import SCALAR

NEW = ("megatron-core-2025", "rocm-megatron-2025", "torchtitan-2025")
OLD = tuple(name for name in ERAS if name not in NEW)


def _report(what, engine, row):
    error = engine / row - 1
    print(f"{what}: engine {engine:.4g}, row {row:.4g}, error {error:+.1%}")
    return error


# ---- DeepEP's all-to-all (a2a_link_share) ------------------------------------------------------
def test_deepep_shares_are_the_readme_rows():
    """NVLink: the mean of dispatch 153 and combine 158 GB/s over DeepEP's ~160 GB/s maximum;
    RDMA: the median of EP 16 / 32 / 64's means (43, 57.5, 50.5) over ~50 GB/s, capped at 1."""
    nvlink, rdma = DEEPEP_LINK_SHARE
    assert nvlink == pytest.approx((153 + 158) / 2 / 160, rel=1e-12)
    assert rdma == pytest.approx(min(1.0, 50.5 / 50), rel=1e-12) == 1.0
    assert ERAS["megatron-core-2025"].a2a_link_share == DEEPEP_LINK_SHARE
    assert all(ERAS[name].a2a_link_share == NCCL_LINK_SHARE for name in OLD + ("torchtitan-2025",))
    assert ERAS["rocm-megatron-2025"].a2a_link_share == (1.0, 1.0)  # RCCL over the mesh: no row (unconfirmed)


def test_nccl_all_to_all_share_is_the_pplx_row():
    """NCCL's all-to-all on 8 H100s (pplx-kernels README, Torch AtA, EP 8, 128 tokens a GPU): a GPU's
    buffer of 256 experts x 128 tokens x (7,168 FP8 values + 56 fp32 scales) = 242,221,056 B in
    699.9 us; 7/8 of it leaves the GPU: 302.82 GB/s of bus bandwidth, 0.8184 of NVLink 4's 370."""
    by_hand = 7 / 8 * (256 * 128 * (7168 + 56 * 4)) / 699.9e-6
    assert by_hand == pytest.approx(302.82e9, rel=1e-4)
    assert NCCL_LINK_SHARE == pytest.approx((by_hand / 370e9, 1.0), rel=1e-12)


def test_deepep_intranode_dispatch_and_combine_against_the_h800_rows():
    """DeepSeek-V3's layer, 4,096 tokens, EP 8 on one H800 node, FP8 dispatch and BF16 combine (the
    README's setting): each token goes to k = 8 experts, 7/8 of them on the node's other GPUs, at
    160 GB/s x 0.972 = 155.5 GB/s: dispatch 4,096 x 7 x 7,168 x 1 B in 1.322 ms, combine x 2 B in
    2.643 ms, each plus one latency, times the MoE layers' share (58 of 61)."""
    model, cluster = Model.get("deepseek-v3"), Cluster.get("h800-ib")
    tokens, h = 4096.0, model.hidden
    seconds, sent = all_to_all_cost(model, cluster, tokens, 1, 8, 0, 1.0, link_share=DEEPEP_LINK_SHARE)
    rate = 160e9 * (153 + 158) / 2 / 160
    latency = cluster.intra.latency_s + NCCL_BASE_LATENCY_S
    by_hand = [tokens * 7 * h * element / rate + latency for element in (1.0, 2.0)]
    assert seconds == pytest.approx(model.moe_share * sum(by_hand), rel=1e-9)
    assert sent == pytest.approx(model.moe_share * tokens * 7 * h * 3, rel=1e-9)
    achieved = tokens * 7 * h / (by_hand[0] - latency) / 1e9
    assert abs(_report("DeepEP dispatch, EP 8 on H800 (GB/s)", achieved, 153)) < 0.05
    assert abs(_report("DeepEP combine, EP 8 on H800 (GB/s)", achieved, 158)) < 0.05
    # NCCL's all-to-all runs at 0.818 of the ring's rate (pplx-kernels' H100 row, issue 36: it was
    # priced at the ring's, and DeepEP read 2.8% slower): DeepEP is faster inside the node.
    nccl, _ = all_to_all_cost(model, cluster, tokens, 1, 8, 0, 1.0, link_share=NCCL_LINK_SHARE)
    nccl_by_hand = [tokens * 7 * h * element / (160e9 * NCCL_LINK_SHARE[0]) + latency for element in (1.0, 2.0)]
    assert nccl == pytest.approx(model.moe_share * sum(nccl_by_hand), rel=1e-9)
    _report("DeepEP over NCCL's all-to-all, EP 8 on H800 (s)", seconds, nccl)
    assert seconds < 0.85 * nccl


def test_the_stack_rows_validate_prints():
    rows = {row["constant"]: row for row in stack_constant_rows()}
    for row in rows.values():
        print(f"{row['constant']:46s} engine {row['engine']:.4g} row {row['row']:.4g} {row['error']:+.1%}")
        assert np.isfinite(row["error"])
    assert abs(rows["CUDA_GRAPH_LAUNCH_S (s)"]["error"]) < 0.10
    assert all(abs(r["error"]) < 0.05 for k, r in rows.items() if "H800 NVLink" in k)
    assert all(abs(r["error"]) < 0.20 for k, r in rows.items() if "RDMA" in k)
    assert all(abs(r["error"]) < 0.15 for k, r in rows.items() if "B200" in k)  # the H800 share on NVLink 5: -9.0%, -10.7%


# ---- CUDA graphs ---------------------------------------------------------------------------------
def test_graph_launch_is_the_rows_intercept():
    """A least-squares line through ocannl#488's graph + sync times (8-117 kernels): about 15.5 us
    fixed and 0.58 us a node; the engine charges the fixed part per replay."""
    n = np.array([r[0] for r in CUDA_GRAPH_REPLAY_ROWS], dtype=float)
    t = np.array([r[2] for r in CUDA_GRAPH_REPLAY_ROWS])
    slope, intercept = np.polyfit(n, t, 1)
    assert slope == pytest.approx(0.58e-6, rel=0.05)
    assert abs(_report("graph replay, fixed part (s)", CUDA_GRAPH_LAUNCH_S, intercept)) < 0.10


def _one_gpu(m=1.0):
    return SimpleNamespace(
        tp=1.0, cp=1.0, ep=1.0, b=1.0, s=512.0, s_full=512.0, tokens=512.0, fp8=False, flash=True, sp=False, cp_contiguous=False,
        torch_compile=False, capacity=0.0, rc=RECOMPUTE_MODES.index("none"), full=False, redo=0.0, zero=0, dp=1.0, shard=1.0,
        expert_shard=1.0, forward_unshards=0.0, grad_sync=0, reduce_each_mb=False, grad_fp32=False, cp_ring=False, cp_ulysses=False, m=m, expert_skew=1.0)


def test_graphs_replace_the_launches_of_a_small_layer():
    """A 512-wide layer of 512 tokens on an H100 is host-bound: eager, its forward waits for 12
    launches x 10 us = 120 us; replayed as one graph it waits for 15 us or its kernels, whichever is
    longer, the kernels being the same (megatron-core-2024 and -2025 run the same ones)."""
    model, cluster = model_terms(Model("small", 2, 512, 8, 512, 1)), Cluster.get("dgx-h100")
    eager, graphed = ERAS["megatron-core-2024"], ERAS["megatron-core-2025"]
    kernels = layer_kernels(model, cluster, eager, _one_gpu(), SCALAR)
    assert kernels.launch_f == pytest.approx(12 * HOST_S_PER_OP)
    assert kernels.gpu_f < 12 * HOST_S_PER_OP
    fwd_eager = layer_compute(model, cluster, eager, _one_gpu(), SCALAR).fwd
    fwd_graph = layer_compute(model, cluster, graphed, _one_gpu(), SCALAR).fwd
    assert fwd_eager == pytest.approx(120e-6)
    assert fwd_graph == pytest.approx(max(kernels.gpu_f, CUDA_GRAPH_LAUNCH_S), rel=1e-12)
    print(f"forward: eager {fwd_eager * 1e6:.1f} us, graphed {fwd_graph * 1e6:.1f} us (kernels {kernels.gpu_f * 1e6:.1f} us)")


def test_an_moe_layer_keeps_its_experts_eager():
    """Megatron captures an MoE layer's attention and router + preprocess (2 graphs); dispatch,
    permute, fc1, activation, fc2, unpermute and combine launch one by one: 2 x 15 + 7 x 10 = 100 us."""
    graphed = ERAS["megatron-core-2025"]
    assert launches_per_layer(graphed, False, 0.0) == (1.0, 0.0)
    assert launches_per_layer(graphed, False, 1.0) == (MOE_LAYER_GRAPHS, MOE_EAGER_KERNELS) == (2, 7)
    assert launches_per_layer(replace(graphed, cuda_graphs="iteration"), False, 0.0) == (0.0, 0.0)
    assert launches_per_layer(ERAS["megatron-core-2024"], False, 1.0) == (0.0, 12)
    model = model_terms(Model.get("mixtral-8x7b"))
    assert model.moe_share == 1.0
    launch = layer_kernels(model, Cluster.get("dgx-h100"), graphed, _one_gpu(), SCALAR).launch_f
    assert launch == pytest.approx(2 * 15e-6 + 7 * 10e-6, rel=1e-12)


def test_graph_static_inputs_by_hand():
    """Llama 3 8B, one micro-batch of 8,192 tokens in flight (pp 1): the graphs keep one static
    input per layer, 32 x 8,192 x 4,096 x 2 B = 2 GiB more activations than the same plan without
    graphs (megatron-core-2024 runs the same kernels and memory), and the allocator's 15% on them."""
    model, cluster = Model.get("llama3-8b"), Cluster.get("dgx-h100")
    plans = {era: Plan.for_era(era, tp=1, pp=1, dp=8, micro_batch=1, global_batch=8, zero_stage=1, schedule="1f1b",
                               recompute="selective") for era in ("megatron-core-2024", "megatron-core-2025")}
    mem = {era: estimate(model, cluster, plan).memory for era, plan in plans.items()}
    static = 32 * 8192 * 4096 * 2
    assert static == 2 * 2**30
    added = mem["megatron-core-2025"].activations - mem["megatron-core-2024"].activations
    assert added == pytest.approx(static, rel=1e-9)
    total = mem["megatron-core-2025"].total - mem["megatron-core-2024"].total
    assert total == pytest.approx(1.15 * static, rel=1e-9)
    print(f"static inputs {added / 2**30:.3f} GiB, with fragmentation {total / 2**30:.3f} GiB")


# ---- 1F1B with the all-to-all overlap ------------------------------------------------------------
@pytest.mark.parametrize("pp, m, v, rank, pairs", [
    (1, 8, 1, 0, 7),  # every forward but the first beside the previous backward
    (4, 8, 1, 0, 4), (4, 8, 1, 3, 7),  # 1F1B warm-up pp - rank - 1 = 3, 0
    (4, 8, 2, 0, 2.5), (4, 8, 2, 3, 5.5),  # interleaved: 2 x 3 + 1 x 4 = 10 and 4 of 16 chunk passes
    (8, 4, 1, 0, 0),  # all warm-up and cool-down
])
def test_one_f_one_b_pairs_by_hand(pp, m, v, rank, pairs):
    assert one_f_one_b_overlapped_pairs(pp, m, v, rank, SCALAR) == pytest.approx(pairs)


def test_a2a_overlap_hides_what_the_other_pass_covers():
    """DualPipe's pairing under 1F1B, by hand: an all-to-all of 3 s a layer (1.5 forward, 1.5
    backward), forward 1 s and backward 2 s: a pair exposes max(1.5 - 2, 0) + max(1.5 - 1, 0) = 0.5 s
    plus what the 2.5 s hidden cost the SMs; 7 of 8 micro-batches paired (pp 1), one alone (3 s)."""
    sms = Cluster.get("dgx-h100").gpu.sms
    paired = 0.5 + overlap_contention(sms, 2.5, DUALPIPE_COMM_SMS)
    comm, a2a = _rank_comm(0.0, 1.0, 8.0, 1.0, False, True, 4.0, 3.0, 0.0, 1.0, 2.0, sms, SCALAR)
    assert a2a == pytest.approx((7 * paired + 3.0) / 8, rel=1e-12)
    assert comm == pytest.approx(4.0 - 3.0 + a2a, rel=1e-12)
    assert _rank_comm(0.0, 1.0, 8.0, 1.0, False, False, 4.0, 3.0, 0.0, 1.0, 2.0, sms, SCALAR) == (4.0, 3.0)  # no overlap: all of it (a stack without it never calls _rank_comm: pipeline_stage)


def test_mixtral_on_one_node_waits_less_for_its_all_to_alls():
    model, cluster = Model.get("mixtral-8x7b"), Cluster.get("dgx-h100", nodes=2)
    common = dict(tp=1, pp=2, dp=8, ep=8, micro_batch=1, global_batch=64, zero_stage=1, schedule="1f1b", recompute="full")
    old, new = (estimate(model, cluster, Plan.for_era(era, **common)) for era in ("megatron-core-2024", "megatron-core-2025"))
    ep_old, ep_new = (next(u for u in e.collectives if u.key == "ep") for e in (old, new))
    print(f"EP all-to-all exposed: 2024 {ep_old.exposed_s:.3f} s, 2025 {ep_new.exposed_s:.3f} s of {ep_new.wire_s:.3f} s on the wire")
    assert ep_new.exposed_s < ep_old.exposed_s and ep_new.exposed_s < ep_new.wire_s


# ---- FP8 parameter all-gather --------------------------------------------------------------------
def test_fp8_param_gather_halves_the_layers_gather_bytes():
    """Llama 3 8B over 16 GPUs, ZeRO-1, FP8: each GPU sends 15/16 of the weights in the gather;
    the 32 layers' 218.1M parameters each go in 1 byte, the embedding, output layer and final norm
    (8.03B - 32 x 218.1M) in 2: the 2024 stack sends all in 2."""
    model, cluster = Model.get("llama3-8b"), Cluster.get("dgx-h100", nodes=2)
    common = dict(tp=1, pp=1, dp=16, micro_batch=1, global_batch=16, zero_stage=1, precision="fp8")
    sent = {era: next(u for u in estimate(model, cluster, Plan.for_era(era, **common)).collectives if u.key == "dp_gather").sent_bytes
            for era in ("megatron-core-2024", "megatron-core-2025")}
    linear = 32 * model.layer_params
    root = model.params - linear
    assert sent["megatron-core-2024"] == pytest.approx(15 / 16 * model.params * 2, rel=1e-9)
    assert sent["megatron-core-2025"] == pytest.approx(15 / 16 * (linear * 1 + root * 2), rel=1e-9)
    print(f"gather bytes: 2024 {sent['megatron-core-2024'] / 1e9:.2f} GB, 2025 {sent['megatron-core-2025'] / 1e9:.2f} GB")
    bf16 = {era: next(u for u in estimate(model, cluster, Plan.for_era(era, **{**common, "precision": "bf16"})).collectives
                      if u.key == "dp_gather").sent_bytes for era in ("megatron-core-2024", "megatron-core-2025")}
    assert bf16["megatron-core-2025"] == pytest.approx(bf16["megatron-core-2024"], rel=1e-12)  # BF16 GEMMs gather BF16


def test_torchtitan_fp8_all_gather_under_fsdp2():
    """torchtitan-2025 differs from pytorch-fsdp2-2024 in the float8 all-gather, PAT, grouped
    experts and MXFP8: at ZeRO-3 in FP8 the blocks, gathered twice a micro-batch (forward and
    backward), carry 1 byte a weight, the root unit (embedding, output, final norm), gathered
    once, 2: (2 L + 2 R) / (2 x 2 L + 2 R) of FSDP2 2024's bytes."""
    model, cluster = Model.get("llama3-8b"), Cluster.get("dgx-h100", nodes=2)
    common = dict(tp=1, pp=1, dp=16, micro_batch=1, global_batch=16, zero_stage=3, precision="fp8")
    sent = {era: next(u for u in estimate(model, cluster, Plan.for_era(era, **common)).collectives if u.key == "dp_gather").sent_bytes
            for era in ("pytorch-fsdp2-2024", "torchtitan-2025")}
    ratio = sent["torchtitan-2025"] / sent["pytorch-fsdp2-2024"]
    linear = 32 * model.layer_params
    print(f"FSDP2 gather bytes, float8 over bf16: {ratio:.3f}")
    root = model.params - linear
    assert ratio == pytest.approx((2 * linear + 2 * root) / (4 * linear + 2 * root), rel=1e-9)


# ---- every new era runs where it fits; bad input --------------------------------------------------
RUNS = [("megatron-core-2025", k) for k in ("dgx-h100", "dgx-b200", "gb200-nvl72")] + [
    ("torchtitan-2025", k) for k in ("dgx-h100", "dgx-b200", "gb200-nvl72")] + [
    ("rocm-megatron-2025", k) for k in ("mi300x", "mi325x", "mi355x")]


@pytest.mark.parametrize("era, key", RUNS)
def test_estimate_runs_with_each_new_era(era, key):
    cluster = Cluster.get(key)
    zero = 3 if era == "torchtitan-2025" else 1
    for precision in ("bf16", "fp8"):
        plan = Plan.for_era(era, tp=2, pp=1, dp=cluster.gpus // 2, micro_batch=1, global_batch=4 * cluster.gpus, zero_stage=zero,
                            precision=precision, sequence_parallel=True)
        est = estimate(Model.get("llama3-8b"), cluster, plan)
        print(f"{era} on {key} {precision}: step {est.step_time_s:.3f} s, MFU {est.mfu:.1%}, {est.memory.total / 1e9:.1f} GB")
        assert est.step_time_s > 0 and 0 < est.mfu < 1 and est.fits


@pytest.mark.parametrize("era, key", [("megatron-core-2025", "dgx-h100"), ("torchtitan-2025", "dgx-b200"), ("rocm-megatron-2025", "mi300x")])
def test_sweep_runs_with_each_new_era(era, key):
    rows = sweep(Model.get("llama3-8b"), Cluster.get(key), global_batch=32, era=era)
    numeric = rows.select_dtypes(include=[np.number]).to_numpy(dtype=float)
    assert len(rows) and np.isfinite(numeric).all()
    assert (rows.mfu > 0).all() and (rows.mfu < 1).all()
    best = rows.iloc[0]
    print(f"{era} on {key}: {len(rows)} plans, best MFU {best.mfu:.1%}")


def test_a_stack_runs_only_on_its_vendors_gpus():
    model = Model.get("llama3-8b")
    with pytest.raises(ValueError, match="rocm-megatron-2025"):
        estimate(model, Cluster.get("dgx-h100"), Plan.for_era("rocm-megatron-2025", dp=8, global_batch=8))
    with pytest.raises(ValueError, match="megatron-core-2025"):
        estimate(model, Cluster.get("mi300x"), Plan.for_era("megatron-core-2025", dp=8, global_batch=8))
    with pytest.raises(ValueError, match="rocm-megatron-2025"):
        sweep(model, Cluster.get("dgx-h100"), global_batch=8, era="rocm-megatron-2025")
    assert estimate(model, Cluster.get("mi300x"), Plan(dp=8, global_batch=8)).step_time_s > 0  # era None runs everywhere


@pytest.mark.parametrize("field, value", [("cuda_graphs", "full"), ("cuda_graphs", None), ("vendor", "intel"),
                                          ("a2a_link_share", (0.0, 1.0)), ("a2a_link_share", (1.0, 1.5)), ("a2a_link_share", 1.0),
                                          ("moe_a2a_overlap", 1), ("fp8_param_gather", "yes"), ("unconfirmed", ("no colon",))])
def test_bad_stack_fields_are_refused_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        replace(ERAS["megatron-core-2025"], **{field: value})
    assert isinstance(ERAS["megatron-core-2025"], Era)


def test_the_old_eras_have_none_of_the_new_mechanisms():
    for name in OLD:
        era = ERAS[name]
        assert (era.cuda_graphs, era.moe_a2a_overlap, era.fp8_param_gather, era.vendor) == ("none", False, False, "nvidia"), name


def test_the_recipes_each_stack_names():
    """Megatron-Core 2025's TE recipes (Fp8Recipe: delayed, tensorwise, blockwise, mxfp8; Fp4Recipe:
    nvfp4); torchtitan's float8 and MXFP8; the ROCm stack's FP8. --fp8-param-gather gathers FP8 for
    the per-tensor and blockwise recipes, not MXFP8 ("except MXFP8"): on 8 B200s, 7/8 x (L + 2 R)
    bytes against 7/8 x 2 (L + R)."""
    assert ERAS["megatron-core-2025"].precision == ("bf16", "fp8", "mxfp8", "fp8_blockwise", "nvfp4")
    assert ERAS["torchtitan-2025"].precision == ("bf16", "fp8", "mxfp8")
    with pytest.raises(ValueError, match="precision='mxfp8' is not available in era 'rocm-megatron-2025'"):
        Plan.for_era("rocm-megatron-2025", dp=8, global_batch=8, precision="mxfp8")
    model, cluster = Model.get("llama3-8b"), Cluster.get("dgx-b200")
    sent = {precision: next(u for u in estimate(model, cluster, Plan.for_era(
        "megatron-core-2025", dp=8, micro_batch=1, global_batch=8, zero_stage=1, precision=precision)).collectives if u.key == "dp_gather").sent_bytes
        for precision in ("bf16", "mxfp8", "fp8_blockwise")}
    linear = 32 * model.layer_params
    assert sent["mxfp8"] == pytest.approx(sent["bf16"], rel=1e-12) == pytest.approx(7 / 8 * 2 * model.params, rel=1e-9)
    assert sent["fp8_blockwise"] == pytest.approx(7 / 8 * (linear + 2 * (model.params - linear)), rel=1e-9)
