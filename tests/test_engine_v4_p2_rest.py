"""Engine v4 part 2's leftovers (issue 37 items 3 and 7, review 38bda0b M2), each against a hand
count from the code path it prices:

- sequence parallelism's backward re-gather (Megatron's LinearWithGradAccumulationAndAsyncCommunication.backward);
- FSDP2's gradient copies under torch.distributed.pipelining (once a step, the accumulation between);
- MoE load skew as a Plan field (the busiest rank's expert GEMMs and all-to-all).
"""

from dataclasses import replace

import pytest

from labs.core.engine.eras import stack_of
from labs.core.engine.gemm import gemm_time
from labs.core.engine.hardware import Cluster
from labs.core.engine.models import Model
from labs.core.engine.plan import Plan, plan_columns
from labs.core.engine.stages.parallel import NCCL_COLLECTIVE_SMS, OVERLAP_HBM_SLOWDOWN
from labs.core.engine.step import evaluate_plan
from labs.core.engine.topology import collective_columns

# ---- 1. sequence parallelism's backward re-gather ---------------------------------------------
# Llama 2 7B (hidden 4,096, 32 heads, FFN 11,008 SwiGLU, 4,096 tokens) at TP 8 in one DGX H100,
# one sequence a micro-batch, 8 micro-batches, no pipeline: 32 x 8 = 256 layer-passes a step.
TP, M, LAYERS = 8, 8, 32
ACT = 1 * 4096 * 4096 * 2  # b s h in bf16: what each TP collective gathers or scatters


def _sp_plan(sp=True):
    return Plan(tp=TP, dp=1, micro_batch=1, global_batch=M, sequence_parallel=sp, recompute="selective")


def _tp(stack, sp=True):
    model, cluster = Model.get("llama2-7b"), Cluster.get("dgx-h100", nodes=1)
    out = evaluate_plan(model, cluster, plan_columns(_sp_plan(sp)), "auto", stack)
    return {k: out[f"coll_tp_{k}"] for k in ("calls", "sent_bytes", "wire_s", "exposed_s")}


def test_sp_sends_a_quarter_more_than_plain_tp_in_megatron():
    """Korthikanti et al. count 8 collectives a layer under SP (4 a pass), the bytes of plain TP's 4
    all-reduces; Megatron's backward all-gathers the QKV and FC1 inputs once more: 10 collectives,
    each rank sending (t-1)/t of b s h in each, 10/8 = 1.25x plain TP's bytes."""
    megatron = stack_of(None)
    plain, sp = _tp(megatron, sp=False), _tp(megatron, sp=True)
    per_layer_passes = M * LAYERS
    expected_sent = per_layer_passes * 10 * (TP - 1) / TP * ACT  # = 75.16 GB a step
    print(f"SP sent {sp['sent_bytes'] / 1e9:.3f} GB (hand {expected_sent / 1e9:.3f}), plain TP {plain['sent_bytes'] / 1e9:.3f} GB, "
          f"ratio {sp['sent_bytes'] / plain['sent_bytes']:.4f} (hand 1.25); calls {sp['calls']:.0f} (hand {per_layer_passes * 10})")
    assert sp["calls"] == per_layer_passes * 10
    assert plain["calls"] == per_layer_passes * 4
    assert sp["sent_bytes"] == pytest.approx(expected_sent, rel=1e-12)
    assert sp["sent_bytes"] / plain["sent_bytes"] == pytest.approx(1.25, rel=1e-12)


def test_sp_regather_hides_behind_each_input_gradient_gemm():
    """Each re-gather runs beside its linear's input-gradient GEMM (as long as its forward GEMM:
    QKV 4,096 x 1,536 x 4,096, FC1 4,096 x 2,752 x 4,096 a rank), on the SMs NCCL leaves it; the
    weight-gradient GEMM waits for what outlasts it. Hand count from those two GEMMs and the one
    all-gather of b s h over 8 NVLink ranks, against the same stack with the re-gather off."""
    megatron = stack_of(None)
    none = replace(megatron, sp_regathers_input=False)
    gpu = Cluster.get("dgx-h100", nodes=1).gpu
    cluster = Cluster.get("dgx-h100", nodes=1)
    gather = float(sum(collective_columns("all_gather", ACT, cluster, TP, 1)))
    gemms = (float(gemm_time(gpu, 4096, 3 * 4096 / TP, 4096)), float(gemm_time(gpu, 4096, 2 * 11008 / TP, 4096)))
    hidden = sum(min(gather, g) for g in gemms)
    exposed = sum(max(gather - g, 0.0) for g in gemms) + hidden * (gpu.sms / (gpu.sms - NCCL_COLLECTIVE_SMS) - 1 + OVERLAP_HBM_SLOWDOWN)
    with_it, without = _tp(megatron), _tp(none)
    per_layer_passes = M * LAYERS
    wire, waited = with_it["wire_s"] - without["wire_s"], with_it["exposed_s"] - without["exposed_s"]
    print(f"all-gather {gather * 1e6:.1f} us beside QKV dgrad {gemms[0] * 1e6:.1f} us and FC1 dgrad {gemms[1] * 1e6:.1f} us: "
          f"wire +{wire * 1e3:.2f} ms (hand {per_layer_passes * 2 * gather * 1e3:.2f}), exposed +{waited * 1e3:.2f} ms (hand {per_layer_passes * exposed * 1e3:.2f})")
    assert wire == pytest.approx(per_layer_passes * 2 * gather, rel=1e-9)
    assert waited == pytest.approx(per_layer_passes * exposed, rel=1e-9)
    assert 0 < waited < wire + per_layer_passes * hidden  # partly hidden: neither free nor all exposed


def test_dtensor_sp_saves_the_gathered_input_and_regathers_nothing():
    """torchtitan's SP (DTensor: SequenceParallel, then ColwiseParallel gathering to Replicate)
    saves the gathered input the matmul used: 8 collectives a layer, plain TP's bytes."""
    fsdp2 = stack_of("pytorch-fsdp2-2024")
    sp = _tp(fsdp2)
    expected = M * LAYERS * 8 * (TP - 1) / TP * ACT
    print(f"FSDP2 stack SP sent {sp['sent_bytes'] / 1e9:.3f} GB (hand {expected / 1e9:.3f})")
    assert sp["calls"] == M * LAYERS * 8
    assert sp["sent_bytes"] == pytest.approx(expected, rel=1e-12)


# ---- 2. FSDP2's gradient copies under torch.distributed.pipelining ----------------------------
def _grad_copies(grad_sync, pp=2, reduce_dtype="fp32", m=8):
    """_fsdp_costs' backward copies (s per layer and micro-batch) for Llama 2 7B under FSDP2
    (ZeRO-3), DP 4 x PP pp, and the HBM rate they stream at."""
    from labs.core.engine.stages.compute import _fsdp_costs
    from labs.core.engine.stages.inputs import model_terms, read_plan
    from labs.core.engine.stages.xp import SCALAR

    model, cluster = Model.get("llama2-7b"), Cluster.get("dgx-h100", nodes=1)
    stack = stack_of("pytorch-fsdp2-2024")
    plan = Plan.for_era("pytorch-fsdp2-2024", tp=1, pp=pp, dp=8 // pp, micro_batch=1, global_batch=m * 8 // pp, zero_stage=3,
                        grad_sync=grad_sync, grad_reduce_dtype=reduce_dtype, schedule="1f1b")
    p = read_plan(model, plan_columns(plan), stack, SCALAR)
    rate = cluster.gpu.hbm_bytes_per_s * cluster.gpu.hbm_efficiency
    return float(_fsdp_costs(model_terms(model), stack, p, rate, SCALAR)[3]), rate, model.layer_params


@pytest.mark.parametrize("reduce_dtype, per_step", [
    ("fp32", lambda m: (2 + 4) + (m - 1) * (4 + 2 + 4) + (4 + 4)),  # cast to the fp32 accumulator, fp32 += bf16, fp32 copy-in
    ("bf16", lambda m: 0 + (m - 1) * (2 + 2 + 2) + (2 + 2)),  # autograd's .grad += , bf16 copy-in
])
def test_fsdp2_under_pipelining_reduces_once_a_step_and_accumulates_between(reduce_dtype, per_step):
    """torch.distributed.pipelining runs every backward of a step with FSDP2's
    set_requires_gradient_sync(False) and reduce-scatters once after the last: the copy into the
    reduce-scatter input runs once a step, and each micro-batch's unsharded gradient is
    accumulated instead (FSDPParamGroup.post_backward: accumulate_unsharded_grad_if_needed,
    to_accumulated_grad_if_needed). Hand count per parameter of the layer, 8 micro-batches,
    against grad_sync="microbatch" (a copy-in each micro-batch: 6 bytes fp32, 4 bf16)."""
    m = 8
    once, rate, params = _grad_copies(None, reduce_dtype=reduce_dtype, m=m)
    each, _, _ = _grad_copies("microbatch", reduce_dtype=reduce_dtype, m=m)
    copy_in = {"fp32": 2 + 4, "bf16": 2 + 2}[reduce_dtype]
    expected = params * (per_step(m) / m - copy_in) / rate
    print(f"{reduce_dtype}: once a step {once * 1e6:.2f} us, every micro-batch {each * 1e6:.2f} us a layer and micro-batch; "
          f"difference {(once - each) * 1e6:.3f} us (hand {expected * 1e6:.3f}: {per_step(m) / m:.2f} against {copy_in} bytes a parameter)")
    assert once - each == pytest.approx(expected, rel=1e-9)


def test_fsdp2_grad_sync_step_accumulates_as_pipelining_does():
    """grad_sync="step" at PP 1 runs the same no-sync path: the same bytes as PP 2's default."""
    pp1, _, _ = _grad_copies("step", pp=1)
    pp1_each, _, _ = _grad_copies("microbatch", pp=1)
    pp2, _, _ = _grad_copies(None, pp=2)
    pp2_each, _, _ = _grad_copies("microbatch", pp=2)
    print(f"PP 1 step - microbatch {(pp1 - pp1_each) * 1e6:.3f} us, PP 2 default - microbatch {(pp2 - pp2_each) * 1e6:.3f} us")
    assert pp1 - pp1_each == pytest.approx(pp2 - pp2_each, rel=1e-9)


# ---- 3. MoE load skew, a Plan field ------------------------------------------------------------
# Mixtral 8x7B (8 experts of FFN 14,336 gated, top-2, hidden 4,096, every layer MoE) at EP 8 in one
# DGX H100, one 4,096-token sequence a micro-batch (its catalog length cut to 4,096), TP 1.
def _moe_layer(skew, capacity=None):
    from labs.core.engine.stages.compute import layer_kernels
    from labs.core.engine.stages.inputs import model_terms, read_plan
    from labs.core.engine.stages.parallel import layer_communication
    from labs.core.engine.stages.xp import SCALAR

    model, cluster = Model.get("mixtral-8x7b", seq_len=4096), Cluster.get("dgx-h100", nodes=1)
    stack = stack_of(None)
    plan = Plan(tp=1, dp=8, ep=8, micro_batch=1, global_batch=8, expert_skew=skew, capacity_factor=capacity)
    p = read_plan(model, plan_columns(plan), stack, SCALAR)
    terms = model_terms(model)
    k = layer_kernels(terms, cluster, stack, p, SCALAR)
    return k, layer_communication(terms, cluster, stack, p, k, SCALAR), cluster


def test_skew_scales_the_busiest_ranks_expert_gemms():
    """The busiest rank's one local expert receives skew x 8 x 4,096 x 2 / 8 = skew x 8,192 tokens:
    its two grouped GEMMs (8,192 skew x 28,672 x 4,096 and 8,192 skew x 4,096 x 14,336) at that M."""
    from labs.core.engine.gemm import grouped_gemm_time

    base, _, cluster = _moe_layer(1.0)
    skewed, _, _ = _moe_layer(1.5)
    gpu = cluster.gpu

    def experts(m):
        return grouped_gemm_time(gpu, m, 2 * 14336, 4096, 1, False) + grouped_gemm_time(gpu, m, 4096, 14336, 1, False)

    hand = float(experts(1.5 * 8192) - experts(8192))
    got = float(skewed.gemm_f - base.gemm_f)
    print(f"expert GEMMs +{got * 1e3:.3f} ms a layer at skew 1.5 (hand {hand * 1e3:.3f}); balanced layer GEMMs {base.gemm_f * 1e3:.3f} ms")
    assert got == pytest.approx(hand, rel=1e-9)
    assert got > 0.4 * float(experts(8192))  # about half the experts' time more: their GEMMs are compute-bound here


def test_skew_scales_the_busiest_ranks_all_to_all():
    """EP 8 inside one NVLink domain: each token's 2 expert copies go to the other 7 GPUs with
    probability 7/8, h = 4,096 bf16 values each, dispatch and combine: 2 x 4,096 x 2 x 7/8 x 4,096 x
    2 bytes a pass at the rate NCCL's all-to-all reaches in the domain (302.8 of the ring's 370 GB/s
    on 8 H100s: pplx-kernels' "Torch AtA" row), the busiest rank's skew times that; forward and backward."""
    from labs.core.engine.topology import scale_up_bytes_per_s

    _, base, cluster = _moe_layer(1.0)
    _, skewed, _ = _moe_layer(2.0)
    _, capped, _ = _moe_layer(2.0, capacity=1.25)
    per_pass_bytes = 2 * 4096 * 2 * 7 / 8 * 4096 * 2
    assert float(scale_up_bytes_per_s(cluster, 8)) == 370e9  # NVLink 4's ring bus bandwidth
    rate = 7 / 8 * 256 * 128 * 7392 / 699.9e-6  # the row's bus bandwidth: 242,221,056 B a GPU in 699.9 us
    hand = 2 * (2.0 - 1.0) * per_pass_bytes / rate
    got = float(skewed.layer_a2a - base.layer_a2a)
    print(f"all-to-all +{got * 1e3:.3f} ms a layer at skew 2 (hand {hand * 1e3:.3f}); capacity 1.25 caps it: "
          f"+{float(capped.layer_a2a - base.layer_a2a) * 1e3:.3f} ms (hand {hand / 4 * 1e3:.3f})")
    assert got == pytest.approx(hand, rel=1e-9)
    assert float(capped.layer_a2a - base.layer_a2a) == pytest.approx(hand / 4, rel=1e-9)


def test_balanced_default_and_skew_refused_where_it_cannot_be():
    assert Plan().expert_skew == 1.0
    for bad in (0.5, float("nan"), float("inf"), -1.0, "2"):
        with pytest.raises(ValueError, match="expert_skew"):
            Plan(expert_skew=bad)
    from labs.core.engine.perf import estimate

    with pytest.raises(ValueError, match="expert_skew"):  # a dense model has no experts to skew
        estimate(Model.get("llama2-7b"), Cluster.get("dgx-h100", nodes=1), Plan(tp=8, expert_skew=1.5))
    with pytest.raises(ValueError, match="expert_skew"):  # EP 8 of 8 experts, top-2: at most 4 (every token's 2 on one rank)
        estimate(Model.get("mixtral-8x7b", seq_len=4096), Cluster.get("dgx-h100", nodes=1), Plan(dp=8, ep=8, global_batch=8, expert_skew=4.5))
