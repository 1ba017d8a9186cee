"""DualPipe as a Plan schedule (issue #24 item 4): the step model prices deepseek-ai/DualPipe's
bubble, memory and all-to-all overlap. Expected values come from DualPipe's own code and README
(dualpipe/dualpipe.py at 3da1bbe, examples/example_dualpipe.py) and from the timeline that plays
its order, not from the formulas under test."""

from dataclasses import replace

import numpy as np
import pytest

from conftest import report
from labs.core import Cluster, Model, Plan, estimate
from labs.core.engine.calibration import deepseek_v3_estimate
from labs.core.engine.eras import ERA_NAMES, stack_of
from labs.core.engine.memory import activation_bytes_per_layer
from labs.core.engine.pipeline import SCHEDULES, OpCosts, _dualpipe_order, bubble_fraction, dualpipe_overlapped_pairs, dualpipe_timeline, idle_time, timeline
from labs.core.engine.plan import plan_columns
from labs.core.engine.search import sweep
from labs.core.engine.stages.compute import layer_compute
from labs.core.engine.stages.inputs import model_terms, read_plan
from labs.core.engine.stages.parallel import layer_communication
from labs.core.engine.stages.pipe import pipeline_stage
from labs.core.engine.stages.xp import SCALAR

DUALPIPE = SCHEDULES.index("dualpipe")


def test_a_plan_can_run_dualpipe_and_refuses_what_dualpipe_py_asserts():
    """Failed before: "dualpipe" was not a Plan schedule. dualpipe.py asserts num_ranks % 2 == 0
    and num_chunks % 2 == 0 and num_chunks >= num_ranks * 2; each is refused naming its field."""
    plan = Plan(pp=4, dp=2, global_batch=16, schedule="dualpipe")
    assert plan.microbatches == 8
    with pytest.raises(ValueError, match=r"^pp must be even"):
        Plan(pp=3, dp=2, global_batch=12, schedule="dualpipe")
    with pytest.raises(ValueError, match=r"^pp must be even"):
        Plan(pp=1, global_batch=8, schedule="dualpipe")
    for global_batch in (14, 12):  # 7 micro-batches (odd), 6 (fewer than 2 x 4)
        with pytest.raises(ValueError, match=r"^global_batch / \(micro_batch x dp\)"):
            Plan(pp=4, dp=2, global_batch=global_batch, schedule="dualpipe")
    with pytest.raises(ValueError, match="virtual_stages"):
        Plan(pp=4, dp=2, global_batch=16, schedule="dualpipe", virtual_stages=2)


def test_only_deepseeks_era_and_era_none_offer_dualpipe():
    """No Megatron nor PyTorch FSDP era ran DualPipe; DeepSeek-V3's own framework did, and era=None
    allows it, as it does zero bubble."""
    for era in ERA_NAMES:
        if era == "deepseek-v3-2024":
            assert Plan.for_era(era, pp=4, dp=2, global_batch=16, schedule="dualpipe").schedule == "dualpipe"
            continue
        with pytest.raises(ValueError, match=r"schedule='dualpipe' is not available in era"):
            Plan.for_era(era, pp=4, dp=2, global_batch=16, schedule="dualpipe")
    assert Plan.for_era(None, pp=4, dp=2, global_batch=16, schedule="dualpipe").schedule == "dualpipe"


def test_the_closed_form_idle_is_what_the_played_order_measures():
    """Every rank of the played DualPipe order idles the same, for any T_F, T_B, T_W:
    (p/2 - 1) max(T_B - T_W, 0) + max((p - 2) T_F, (p/2 - 2) T_F + (p/2 - 1) T_B), which at
    equal costs is the README's (p/2 - 1)(F&B + B - 3W) with F&B = 3, B = 2, W = 1."""
    rng = np.random.default_rng(24)
    worst = 0.0
    for case in range(120):
        p = int(rng.choice([2, 4, 6, 8, 10, 12, 16]))
        m = 2 * p + 2 * int(rng.integers(0, 10))
        c = OpCosts(*([float(rng.uniform(0.1, 5.0))] * 3 if case % 3 == 0 else np.exp(rng.uniform(-2, 2, 3))))
        t = dualpipe_timeline(p, m, c)
        idle = float(idle_time(p, m, DUALPIPE, 1, c.tf, c.tb, c.tw))
        if case % 3 == 0:
            assert idle == pytest.approx((p / 2 - 1) * (3 * c.tf + 2 * c.tf - 3 * c.tf), rel=1e-12, abs=1e-12)
        worst = max(worst, float(np.max(np.abs(t.idle_per_stage() - idle))) / t.makespan)
        assert bubble_fraction(p, m, "dualpipe", costs=c) == pytest.approx(t.bubble_fraction("total"), rel=1e-12, abs=1e-15)
    print(f"closed form against the timeline, worst |difference| / makespan: {worst:.1e}")
    assert worst < 1e-12
    assert timeline(8, 20, "dualpipe").bubble_fraction() == dualpipe_timeline(8, 20).bubble_fraction()


def test_overlapped_pairs_follow_dualpipe_py_loop_bounds():
    """dualpipe.py step 4 runs half_num_chunks - num_ranks + half_rank + 1 rounds of two
    overlapped chunks (the middle ranks' first not overlapped), step 5 num_half_ranks -
    half_rank - 1 more: counted here from those bounds and on the played order."""
    for p in (2, 4, 6, 8, 16):
        for m in (2 * p, 2 * p + 6, 4 * p):
            for r in range(p):
                h = min(r, p - 1 - r)
                middle = r in (p // 2 - 1, p // 2)
                expected = 2 * (m // 2 - p + h + 1) - middle + (p // 2 - h - 1)
                assert sum(op[0] == "FB" for op in _dualpipe_order(p, m, r)) == expected
                assert float(dualpipe_overlapped_pairs(p, m, r)) == expected


def _pipe_stage(model, cluster, plan):
    """The step model's PP stage for one plan (labs.core.engine.step.evaluate's first stages)."""
    stack = stack_of(plan.stack)
    p = read_plan(model, plan_columns(plan), stack, SCALAR)
    terms = model_terms(model)
    layer = layer_compute(terms, cluster, stack, p, SCALAR)
    return pipeline_stage(terms, cluster, stack, p, layer, layer_communication(terms, cluster, stack, p, layer, SCALAR), SCALAR)


def test_the_step_models_dualpipe_bubble_is_the_timelines():
    """Over random plans the step model's bubble equals the DualPipe timeline's, played with the
    slowest rank's own forward, input-gradient and weight-gradient times."""
    rng = np.random.default_rng(4)
    cases = [("gpt3-175b", 96), ("llama3-70b", 80), ("llama3-8b", 32), ("deepseek-v3", 61)]
    worst = 0.0
    for _ in range(16):
        key, layers = cases[int(rng.integers(len(cases)))]
        model = Model.get(key)
        pp = int(rng.choice([2, 4, 8]))
        tp = int(rng.choice([1, 2, 8]))
        dp, b = 2, int(rng.choice([1, 2]))
        m = 2 * pp + 2 * int(rng.integers(0, 12))
        cluster = Cluster.get("dgx-h100", nodes=tp * pp * dp // 8 or 1, gpus_per_node=min(8, tp * pp * dp))
        plan = Plan(tp=tp, pp=pp, dp=dp, micro_batch=b, global_batch=b * dp * m, schedule="dualpipe",
                    recompute=str(rng.choice(["selective", "full"])), sequence_parallel=tp > 1)
        q = _pipe_stage(model, cluster, plan)
        played = dualpipe_timeline(pp, m, OpCosts(q.stage_f, q.stage_b, q.stage_w)).bubble_fraction("total")
        worst = max(worst, abs(q.bubble - played))
        assert estimate(model, cluster, plan).bubble_fraction == pytest.approx(q.bubble, rel=1e-12)
    print(f"step model against the DualPipe timeline, worst bubble difference: {worst:.1e}")
    assert worst < 1e-12


def test_dualpipe_memory_by_hand():
    """GPT-3 175B, TP 8, PP 8, DP 4, ZeRO-1: DualPipe's rank 0 holds stage 0 and stage 7, 2 x 12
    layers with the embedding and the output layer. Weights 2 bytes and bf16 gradients 2 bytes a
    parameter of both chunks, Adam's 12 bytes of each chunk sharded over its 4 DP ranks; p + 1
    = 9 micro-batches of one chunk's 12 layers (Korthikanti's selective-recompute bytes); and,
    on its own line since engine v4, one micro-batch's logits at the peak of Megatron's
    vocab-parallel cross entropy: 6 bytes a logit (the fp32 logits and the half of them it adds)."""
    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-a100", nodes=32)
    plan = Plan(tp=8, pp=8, dp=4, micro_batch=1, global_batch=64, zero_stage=1, recompute="selective", sequence_parallel=True, schedule="dualpipe")
    e = estimate(model, cluster, plan)
    stage_layers, tp, dp, pp = model.layers // 8, 8, 4, 8
    params = (2 * stage_layers * model.layer_params + 2 * model.vocab * model.hidden) / tp
    per_layer = activation_bytes_per_layer(model.seq_len, 1, model.hidden, model.heads, tp, True, "selective")
    expected = {
        "weights": 2 * params, "gradients": 2 * params, "optimizer": 12 * params / dp,
        "activations": per_layer * stage_layers * (pp + 1), "logits": model.seq_len * model.vocab * 6 / tp,
    }
    for name, value in expected.items():
        report(f"GPT-3 DualPipe rank 0 {name} (GB)", getattr(e.memory, name) / 1e9, value / 1e9)
        assert getattr(e.memory, name) == pytest.approx(value, rel=1e-12)
    plain = estimate(model, cluster, replace(plan, schedule="1f1b"))
    assert e.memory.weights == pytest.approx(2 * plain.memory.weights, rel=1e-12)  # the README's "Parameter 2x"
    assert e.memory.optimizer == pytest.approx(2 * plain.memory.optimizer, rel=1e-12)


def test_deepseek_v3_fits_under_dualpipe_and_hides_most_of_its_all_to_alls():
    """DeepSeek-V3's published layout (PP 16, EP 64, ZeRO-1, FP8, its recomputation) on 2,048
    H800s with DualPipe, as it ran: it fits, and of its expert all-to-alls only the passes
    DualPipe does not pair stay exposed, with the SMs (20 of 132, DeepSeek-V3 Sec. 3.2.2) the
    hidden ones take from the compute beside them. The end ranks pair the fewest:
    2 (m/2 - p + 1) + p/2 - 1 of their m forwards (dualpipe.py steps 4 and 5)."""
    plain = deepseek_v3_estimate()
    dual = estimate(plain.model, plain.cluster, replace(plain.plan, schedule="dualpipe"))
    print(f"DeepSeek-V3 DualPipe: {dual.memory.total / 1e9:.1f} GB, margin {dual.hbm_margin_bytes / 1e9:+.1f} GB "
          f"(1F1B: margin {plain.hbm_margin_bytes / 1e9:+.1f} GB)")
    assert dual.fits
    before, after = (next(c for c in e.collectives if c.key == "ep") for e in (plain, dual))
    assert after.wire_s == pytest.approx(before.wire_s, rel=1e-12)
    share_before, share_after = before.exposed_s / before.wire_s, after.exposed_s / after.wire_s
    print(f"EP all-to-all exposed: {share_before:.1%} of its wire time under 1F1B, {share_after:.1%} under DualPipe "
          f"({before.exposed_s:.2f} s -> {after.exposed_s:.2f} s)")
    # counted by hand: PP 16 and 120 micro-batches (15,360 sequences over DP 128), so the end
    # ranks pair 2 (60 - 16 + 1) + 8 - 1 = 97 of their 120 passes; the other 23 expose their
    # all-to-alls whole. A paired pass hides its all-to-alls, but the compute beside them runs on
    # 132 - 20 = 112 of the H800's 132 SMs (NVIDIA's GH100; DeepSeek-V3 Sec. 3.2.2's 20 SMs for
    # the all-to-all): it takes 132/112 as long, i.e. 20/112 of the hidden seconds more; and the
    # collective's HBM traffic slows it by OVERLAP_HBM_SLOWDOWN of them (engine v4, issue 37).
    from labs.core.engine.stages.parallel import OVERLAP_HBM_SLOWDOWN

    assert (plain.plan.pp, plain.plan.microbatches, plain.cluster.gpu.sms) == (16, 120, 132)
    expected = (23 + 97 * (20 / 112 + OVERLAP_HBM_SLOWDOWN)) / 120  # 0.3773
    report("DeepSeek-V3 EP exposed share under DualPipe", share_after, expected)
    assert share_before == pytest.approx(1.0, rel=1e-12)
    assert share_after == pytest.approx(expected, rel=1e-9)
    assert dual.time.ep_comm == pytest.approx(after.exposed_s, rel=1e-12)
    assert dual.step_time_s < plain.step_time_s


def test_sweep_and_estimate_price_dualpipe_alike():
    """The step model's numpy columns (sweep) and one plan's numbers (estimate) agree, and the
    sweep keeps only the micro-batch counts dualpipe.py accepts."""
    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-a100", nodes=16)
    rows = sweep(model, cluster, global_batch=96, tp=[8], pp=[2, 3, 4, 8], schedule=["dualpipe"], zero_stage=[1], micro_batch=[1, 2, 4],
                 recompute=["selective"], sequence_parallel=[True], cp=[1])
    assert len(rows) > 0
    for row in rows.itertuples():
        m = 96 // (row.micro_batch * row.dp)
        assert row.pp % 2 == 0 and m % 2 == 0 and m >= 2 * row.pp
        e = estimate(model, cluster, Plan(tp=8, pp=row.pp, dp=row.dp, micro_batch=row.micro_batch, global_batch=96, zero_stage=1,
                                          recompute="selective", sequence_parallel=True, schedule="dualpipe"))
        assert e.step_time_s == pytest.approx(row.step_time_s, rel=1e-12)
        assert e.memory.total == pytest.approx(row.memory_bytes, rel=1e-12)
    assert "dualpipe" not in set(sweep(model, cluster, global_batch=96, tp=[8], pp=[4], cp=[1])["schedule"])


def _mirror_plan(cluster_nodes, pp, zero_stage=1):
    """Llama 2 7B under DualPipe on DGX H100s, DP 2, bf16 gradients, 32 sequences: the plan's
    outputs and its heaviest rank's parameters (rank 0: the first and the last stage, the
    embedding and the output layer; config.json: 32 layers of 202,383,360, 32,000 x 4,096 each)."""
    from labs.core.engine.plan import plan_columns as columns
    from labs.core.engine.step import evaluate_plan

    model, cluster = Model.get("llama2-7b"), Cluster.get("dgx-h100", nodes=cluster_nodes)
    plan = Plan(pp=pp, dp=2, micro_batch=1, global_batch=32, schedule="dualpipe", zero_stage=zero_stage, grad_reduce_dtype="bf16")
    r = evaluate_plan(model, cluster, columns(plan), plan.dp_algorithm, stack_of(None))
    return r, cluster, plan, 2 * (32 // pp) * 202_383_360 + 2 * 32_000 * 4_096


def test_each_chunk_sums_its_gradients_with_its_mirror_copy():
    """example_dualpipe.py adds each chunk's gradient to the mirror rank's copy of that stage. PP 4 x
    DP 2 on one DGX H100, ZeRO-1: rank 0 (stages 0 and 3) and its mirror rank 3 sit 3 stages x 2 GPUs
    = 6 GPUs apart, in one node. Once a step, after the DP reduce-scatter over 2 ranks, each half
    of the gradient is all-reduced with rank 3's over NVLink, in the DP buckets (max(40M, 1M x dp)
    = 40M parameters); only the last bucket's sum waits behind the reduction."""
    import math

    from labs.core.engine.topology import collective_columns

    r, cluster, plan, params = _mirror_plan(1, 4)
    grads, buckets = 2 * params, math.ceil(params / 40e6)

    def wire(op, nbytes, group, stride):
        return buckets * sum(float(x) for x in collective_columns(op, nbytes / buckets, cluster, group, stride, plan.dp_algorithm))

    assert r["coll_dp_mirror_members_per_node"] == 2  # on NVLink
    report("Llama 2 7B DualPipe PP4 x DP2: the mirror sum's wire a step, s", r["coll_dp_mirror_wire_s"], wire("all_reduce", grads / 2, 2, 1.0))
    assert r["coll_dp_mirror_wire_s"] == pytest.approx(wire("all_reduce", grads / 2, 2, 1.0), rel=1e-9)
    assert r["coll_dp_reduce_wire_s"] == pytest.approx(wire("reduce_scatter", grads, 2, 1.0), rel=1e-9)
    assert r["coll_dp_mirror_sent_bytes"] == pytest.approx(grads / 2, rel=1e-12)  # 2 x 1/2 of the half it holds
    assert r["coll_dp_mirror_calls"] == buckets
    assert r["coll_dp_mirror_exposed_s"] < r["coll_dp_mirror_wire_s"] / 2  # behind the reduction, but the last bucket


def test_the_mirror_sum_crosses_nodes_when_its_pair_does_and_runs_once_a_step():
    """PP 8 x DP 2 on two DGX H100s: rank 0 and its mirror rank 7 sit 7 x 2 = 14 GPUs apart, on two
    nodes, so the pair's all-reduce runs over the NICs. Under ZeRO-2 the reduce-scatter runs every
    micro-batch (16 of them) and the mirror sum still once a step."""
    import math

    r, cluster, plan, params = _mirror_plan(2, 8, zero_stage=2)
    buckets = math.ceil(params / 40e6)
    assert r["coll_dp_mirror_members_per_node"] == 1 and r["coll_dp_mirror_group"] == 2
    assert r["coll_dp_mirror_calls"] == buckets and r["coll_dp_reduce_calls"] == plan.microbatches * buckets
    near, _, _, _ = _mirror_plan(1, 4)
    per_byte = (r["coll_dp_mirror_wire_s"] / r["coll_dp_mirror_sent_bytes"], near["coll_dp_mirror_wire_s"] / near["coll_dp_mirror_sent_bytes"])
    report("seconds a byte of the mirror sum, across nodes over inside one", per_byte[0] / per_byte[1], cluster.intra.effective_bytes_per_s / cluster.inter_bytes_per_s_per_gpu)
    assert per_byte[0] > 3 * per_byte[1]  # a NIC (47 GB/s of bus bandwidth) against NVLink
