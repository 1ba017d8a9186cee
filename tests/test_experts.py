"""Mixture of experts: DeepSeek-V3's size and layout, and what its all-to-alls cost against a
dense model with the same activated parameters."""

import pytest

from conftest import report
from labs.core import Cluster, Model, Plan, estimate, sweep

DEEPSEEK = Model.get("deepseek-v3")
# The dense model a token sees the same weights of: DeepSeek-V3's attention, and one FFN as wide
# as the 8 routed + 1 shared experts of 2,048 (9 x 2,048 = 18,432) in every layer.
DENSE = Model.get("deepseek-v3", name="dense twin", experts=0, experts_per_token=0, expert_ffn=None, shared_experts=0, dense_layers=0, ffn_hidden=18432)
CLUSTER = Cluster.get("h800-ib", nodes=256)
# DeepSeek-V3 Sec. 3.2: PP16, EP64 over 8 nodes, no TP, ZeRO-1, tokens routed to at most 4
# nodes, no token dropping, FP8 GEMMs; 2,048 H800s; 15,360 sequences of 4K at full batch.
LAYOUT = dict(pp=16, dp=128, micro_batch=1, global_batch=15360, zero_stage=1, recompute="none", precision="fp8")


def test_deepseek_v3_parameter_counts():
    """DeepSeek-V3 report: 671B parameters, 37B activated per token (MTP module left out)."""
    activated = DEEPSEEK.layers * DEEPSEEK.layer_matmul_params + DEEPSEEK.embedding_params
    assert abs(report("DeepSeek-V3 total parameters (B)", DEEPSEEK.params / 1e9, 671)) < 0.01
    assert abs(report("DeepSeek-V3 activated parameters (B)", activated / 1e9, 37)) < 0.03
    assert abs(DENSE.params / activated - 1) < 0.01


def test_deepseek_v3_step_against_its_dense_twin():
    """Same layout, same activated weights: the MoE step is slower than the dense one by its
    all-to-alls (EP64 spans 8 nodes, so dispatch and combine cross the NICs, capped at 4
    nodes a token) and by its experts' smaller GEMMs. Inside one node (EP8) the all-to-alls are
    cheaper; without node-limited routing they cost more. DualPipe's overlap of the all-to-alls
    with compute is not modelled, so the engine exposes them all."""
    moe = estimate(DEEPSEEK, CLUSTER, Plan(ep=64, max_nodes_per_token=4, **LAYOUT))
    dense = estimate(DENSE, CLUSTER, Plan(**LAYOUT))
    inside = estimate(DEEPSEEK, CLUSTER, Plan(ep=8, **LAYOUT))
    unlimited = estimate(DEEPSEEK, CLUSTER, Plan(ep=64, **LAYOUT))
    ratio = moe.step_time_s / dense.step_time_s
    share = moe.time.ep_comm / moe.step_time_s
    print(f"DeepSeek-V3 step {moe.step_time_s:.1f} s, dense twin {dense.step_time_s:.1f} s: {ratio:.2f}x; "
          f"all-to-all {moe.time.ep_comm:.1f} s ({share:.0%} of the step) across 8 nodes, {inside.time.ep_comm:.1f} s inside one; "
          f"compute {moe.time.compute:.1f} against {dense.time.compute:.1f} s; MFU {moe.mfu:.1%} against {dense.mfu:.1%}")
    print(f"memory on the busiest rank {moe.memory.total / 1e9:.0f} GB (activations {moe.memory.activations / 1e9:.0f} GB): "
          "DeepSeek recomputes RMSNorm and the MLA up-projections and caches activations in FP8, which the engine does not model")
    assert 1.1 < ratio < 2.0
    assert moe.step_time_s - dense.step_time_s == pytest.approx(moe.time.ep_comm + (moe.time.compute - dense.time.compute) + (moe.time.bubble - dense.time.bubble) + (moe.time.dp_comm - dense.time.dp_comm), rel=0.05)
    assert moe.time.ep_comm > 0.5 * (moe.step_time_s - dense.step_time_s)
    assert inside.time.ep_comm < moe.time.ep_comm < unlimited.time.ep_comm
    assert moe.memory.weights < inside.memory.weights  # EP64 holds 4 experts a layer, EP8 32


def test_capacity_factor_pads_the_experts():
    padded = estimate(DEEPSEEK, CLUSTER, Plan(ep=64, capacity_factor=1.25, **LAYOUT))
    balanced = estimate(DEEPSEEK, CLUSTER, Plan(ep=64, **LAYOUT))
    assert padded.time.compute > balanced.time.compute


def test_expert_parallelism_is_checked_by_name():
    with pytest.raises(ValueError, match="ep"):
        estimate(DENSE, CLUSTER, Plan(ep=64, **LAYOUT))
    with pytest.raises(ValueError, match="ep must divide the model's 256 routed experts"):
        estimate(DEEPSEEK, Cluster.get("h800-ib", nodes=192), Plan(ep=3, **{**LAYOUT, "dp": 96, "global_batch": 96 * 160}))


def test_sweep_covers_ep_cp_and_precision():
    df = sweep(DEEPSEEK, CLUSTER, global_batch=15360, pp=16, micro_batch=1, precision="fp8")
    assert set(df.ep) >= {1, 8, 64} and (df.precision == "fp8").all()
    llama = sweep(Model.get("llama3-70b"), Cluster.get("dgx-h100", nodes=8), global_batch=128)
    assert set(llama.cp) >= {1, 2} and set(llama.ep) == {1}
