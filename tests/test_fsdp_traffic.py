"""What PyTorch FSDP moves through HBM and waits for beyond its collectives (labs.core.engine.eras:
fsdp_unshard_bytes, fsdp_shard_bytes, fsdp_grad_bytes; labs.core.engine.stages.data: the root unit).
Expectations are hand counts from the frameworks' code, with the layer's parameters counted from
Llama 3 8B's config.json (hidden 4096, 8 K/V heads of 128, SwiGLU 14336):
- FSDP1 (torch/distributed/fsdp, 2.1): the fp32 shard cast to bf16 before the all-gather (6 bytes
  a shard parameter); in the backward torch.split's backward cats the views' gradients into the
  flat gradient (4), the cast to an fp32 reduce dtype (6) and the pre-divide (2 x the reduce dtype).
- FSDP2 (_fsdp_collectives.py): cast + torch._foreach_copy_ into the all-gather input (10 a shard
  parameter), split_with_sizes_copy out of it (4 a unit parameter, every unshard), the
  gradients' torch.cat into the reduce-scatter input in the reduce dtype (2 + 2 or 4).
"""

from dataclasses import replace

import pytest

from conftest import report
from labs.core import Cluster, Model, Plan
from labs.core.engine.eras import ERAS, stack_of
from labs.core.engine.plan import plan_columns
from labs.core.engine.step import evaluate_plan
from labs.core.engine.topology import collective_columns

H100 = Cluster.get("dgx-h100", nodes=1)
HBM_RATE = H100.gpu.hbm_bytes_per_s * H100.gpu.hbm_efficiency
LLAMA3_8B = Model.get("llama3-8b")
# One Llama 3 8B block: q and o 4096 x 4096, k and v 4096 x 1024, w1, w2, w3 4096 x 14336, two RMSNorms.
BLOCK_8B = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
NO_COPIES = dict(fsdp_unshard_bytes=0.0, fsdp_shard_bytes=0.0, fsdp_grad_bytes=(0.0, 0.0))


def _layer(model, cluster, plan, copies=True):
    stack = ERAS[plan.stack]
    if not copies:
        stack = replace(stack, **NO_COPIES)
    return evaluate_plan(model, cluster, plan_columns(plan), plan.dp_algorithm, stack)


def test_the_block_has_the_parameters_of_its_config():
    assert LLAMA3_8B.layer_params == pytest.approx(BLOCK_8B)


# (stack, reduce dtype, bytes a unit parameter per unshard, bytes a shard parameter per unshard, bytes a unit parameter per reduction)
CASES = [
    ("pytorch-fsdp1-2023", "bf16", 0, 4 + 2, 2 + 2 + 2 + 2),
    ("pytorch-fsdp1-2023", "fp32", 0, 4 + 2, (2 + 2) + (2 + 4) + (4 + 4)),
    ("pytorch-fsdp2-2024", "fp32", 2 + 2, 4 + 2 + 2 + 2, 2 + 4),
    ("pytorch-fsdp2-2024", "bf16", 2 + 2, 4 + 2 + 2 + 2, 2 + 2),
]


@pytest.mark.parametrize("era, dtype, unit_bytes, shard_bytes, grad_bytes", CASES)
def test_zero3_copies_each_unshard_and_each_reduction(era, dtype, unit_bytes, shard_bytes, grad_bytes):
    """Llama 3 8B at 4,096 tokens on 8 H100s (the GPU, not the host, sets the pace): the forward
    pays one unshard's copies, the backward a second unshard's and the gradients' copies."""
    plan = Plan.for_era(era, dp=8, micro_batch=1, global_batch=32, zero_stage=3, recompute="none", grad_reduce_dtype=dtype)
    model = replace(LLAMA3_8B, seq_len=4096)
    with_copies, without = _layer(model, H100, plan), _layer(model, H100, plan, copies=False)
    unshard = BLOCK_8B * (unit_bytes + shard_bytes / 8) / HBM_RATE
    forward = with_copies["layer_forward_s"] - without["layer_forward_s"]
    backward = with_copies["layer_backward_s"] - without["layer_backward_s"]
    report(f"{era} {dtype} forward copies of an 8B block, s", forward, unshard)
    report(f"{era} {dtype} backward copies of an 8B block, s", backward, unshard + BLOCK_8B * grad_bytes / HBM_RATE)
    assert forward == pytest.approx(unshard, rel=1e-9)
    assert backward == pytest.approx(unshard + BLOCK_8B * grad_bytes / HBM_RATE, rel=1e-9)


def test_zero2_unshards_once_and_no_sync_skips_the_gradient_copies():
    """SHARD_GRAD_OP keeps the unit unsharded from forward to backward: one unshard's copies a
    micro-batch, in the forward. grad_sync="step" (no_sync) reduces nothing in the micro-batch."""
    model = replace(LLAMA3_8B, seq_len=4096)
    unshard = BLOCK_8B * (4 + 10 / 8) / HBM_RATE
    zero2 = Plan.for_era("pytorch-fsdp2-2024", dp=8, micro_batch=1, global_batch=32, zero_stage=2, recompute="none")
    with_copies, without = _layer(model, H100, zero2), _layer(model, H100, zero2, copies=False)
    assert with_copies["layer_forward_s"] - without["layer_forward_s"] == pytest.approx(unshard, rel=1e-9)
    assert with_copies["layer_backward_s"] - without["layer_backward_s"] == pytest.approx(BLOCK_8B * 6 / HBM_RATE, rel=1e-9)
    no_sync = replace(zero2, grad_sync="step")
    with_copies, without = _layer(model, H100, no_sync), _layer(model, H100, no_sync, copies=False)
    assert with_copies["layer_backward_s"] == pytest.approx(without["layer_backward_s"], rel=1e-12)


def test_the_recompute_runs_inside_the_unshard_and_copies_nothing():
    """Full recompute re-runs the forward inside the backward's unsharded unit (FSDP's checkpoint
    wrapper sits inside the unit): the backward pays the same copies as without recompute."""
    model = replace(LLAMA3_8B, seq_len=4096)
    plan = Plan.for_era("pytorch-fsdp2-2024", dp=8, micro_batch=1, global_batch=32, zero_stage=3, recompute="full")
    with_copies, without = _layer(model, H100, plan), _layer(model, H100, plan, copies=False)
    expected = BLOCK_8B * (4 + 10 / 8 + 6) / HBM_RATE
    assert with_copies["layer_backward_s"] - without["layer_backward_s"] == pytest.approx(expected, rel=1e-9)


def test_only_the_fsdp_stacks_copy():
    copying = {name for name, era in ERAS.items() if era.fsdp_unshard_bytes or era.fsdp_shard_bytes or any(era.fsdp_grad_bytes)}
    assert copying == {"pytorch-fsdp1-2023", "pytorch-fsdp2-2024", "torchtitan-2025"}


@pytest.mark.parametrize("field, value", [("fsdp_unshard_bytes", -1.0), ("fsdp_shard_bytes", float("nan")),
                                          ("fsdp_grad_bytes", (4.0, -1.0)), ("fsdp_grad_bytes", 4.0)])
def test_bad_copy_bytes_are_refused_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        replace(ERAS["pytorch-fsdp2-2024"], **{field: value})


# ---- the root unit: embedding, final norm and output layer, gathered first and reduced last ----
# Llama 3.2 1B's architecture (its config.json): 16 blocks, hidden 2048, 32 heads, 8 K/V heads,
# SwiGLU 8192, embedding tied to the output layer, vocabulary 128,256.
LLAMA_1B = Model("llama3.2-1b", 16, 2048, 32, 8192, 128256, ffn_hidden=8192, kv_heads=8, gated_ffn=True)
BLOCK_1B = 2 * 2048 * 2048 + 2 * 2048 * 512 + 3 * 2048 * 8192 + 2 * 2048
ROOT_1B = 128256 * 2048 + 2 * 2048  # the embedding and the final norm (labs.core.engine.models counts 2 x hidden outside the blocks)


def _dp(model, era, **fields):
    plan = Plan.for_era(era, dp=8, micro_batch=1, global_batch=32, zero_stage=3, recompute="none", **fields)
    return evaluate_plan(model, H100, plan_columns(plan), plan.dp_algorithm, ERAS[era])


@pytest.mark.parametrize("era, dtype", [("pytorch-fsdp1-2023", "bf16"), ("pytorch-fsdp2-2024", "fp32")])
def test_the_root_unit_is_gathered_once_a_micro_batch(era, dtype):
    """The blocks are gathered for the forward and again for the backward; the root, not resharded
    after forward, once: 7/8 of (2 x 16 blocks + the root) bf16 bytes a micro-batch, 4 of them."""
    assert LLAMA_1B.layer_params == pytest.approx(BLOCK_1B)
    r = _dp(LLAMA_1B, era, grad_reduce_dtype=dtype)
    expected = 7 / 8 * 4 * (2 * 16 * BLOCK_1B + ROOT_1B) * 2
    report(f"{era} 1B gather bytes sent a step", r["coll_dp_gather_sent_bytes"], expected)
    assert r["coll_dp_gather_sent_bytes"] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("era, grad_bytes", [("pytorch-fsdp1-2023", 2), ("pytorch-fsdp2-2024", 4)])
def test_the_root_units_gather_and_reduce_scatter_wait_in_full(era, grad_bytes):
    """At 8,192 tokens the blocks' gathers and reduce-scatters hide behind the blocks' compute; the
    root's all-gather (first thing of each forward) and reduce-scatter (after the embedding's
    backward, the last op) cannot: against the same blocks under a 16-token vocabulary, each
    micro-batch waits for one all-gather of the root's bf16 weights and one reduce-scatter of its
    gradients over the 8 GPUs, as NCCL's tables price them (labs.core.engine.topology)."""
    tiny_vocab = replace(LLAMA_1B, vocab=16)
    extra = _dp(LLAMA_1B, era)["dp_comm_s"] - _dp(tiny_vocab, era)["dp_comm_s"]

    def seconds(op, nbytes):
        return sum(float(x) for x in collective_columns(op, nbytes, H100, 8, 1.0, "auto"))

    root = lambda vocab: vocab * 2048 + 2 * 2048  # noqa: E731  (with the final norm, as ROOT_1B)
    per_micro_batch = (seconds("all_gather", 2 * root(128256)) + seconds("reduce_scatter", grad_bytes * root(128256))
                       - seconds("all_gather", 2 * root(16)) - seconds("reduce_scatter", grad_bytes * root(16)))
    report(f"{era} 1B root unit's wait a step, s", extra, 4 * per_micro_batch)
    assert extra == pytest.approx(4 * per_micro_batch, rel=1e-6)


def test_only_fsdp_has_a_root_unit():
    """Megatron's ZeRO-3 ("module") spreads the embedding's gathers over the layers as before."""
    # Megatron-FSDP (megatron-core-2025) shards one unit a TransformerLayer (megatron_fsdp.md: fsdp_unit_modules)
    assert {name for name, era in ERAS.items() if era.zero3_unit == "layer"} == {
        "llama3-2024", "pytorch-fsdp1-2023", "pytorch-fsdp2-2024", "megatron-core-2025", "torchtitan-2025"}
    assert 3 not in ERAS["llama3-2024"].zero_stage  # its FSDP keeps the weights through the step: no ZeRO-3 root gathers


@pytest.mark.parametrize("era, grad_sync, gathers", [("pytorch-fsdp1-2023", None, 4), ("pytorch-fsdp1-2023", "step", 1),
                                                     ("pytorch-fsdp2-2024", None, 4), ("pytorch-fsdp2-2024", "step", 4)])
def test_zero2_gathers_again_after_each_backward_that_frees_the_units(era, grad_sync, gathers):
    """SHARD_GRAD_OP / reshard_after_forward=False: each forward that finds its units freed gathers the
    16 blocks and the root once, 7/8 of their bf16 bytes. FSDP1 frees them after a backward that
    reduces (_runtime_utils._should_free_in_backward: `state._sync_gradients or` a reshard-after-
    forward strategy): 4 gathers a step, 1 under no_sync (grad_sync="step"). FSDP2 reshards after
    every backward (FSDPParamGroup.post_backward: reshard_after_backward, default True, whether or
    not reduce_grads): 4 either way."""
    plan = Plan.for_era(era, dp=8, micro_batch=1, global_batch=32, zero_stage=2, recompute="none", grad_sync=grad_sync)
    once = 7 / 8 * (16 * BLOCK_1B + ROOT_1B) * 2
    r = evaluate_plan(LLAMA_1B, H100, plan_columns(plan), plan.dp_algorithm, ERAS[era])
    report(f"{era} ZeRO-2 grad_sync={grad_sync} gather bytes a step", r["coll_dp_gather_sent_bytes"], gathers * once)
    assert r["coll_dp_gather_sent_bytes"] == pytest.approx(gathers * once, rel=1e-6)


@pytest.mark.parametrize("era, unshards", [("pytorch-fsdp1-2023", 1 / 4), ("pytorch-fsdp2-2024", 1.0)])
def test_zero2_under_no_sync_copies_as_often_as_it_gathers(era, unshards):
    """The forward's unshard copies follow the gathers: under no_sync FSDP1 casts the shard once a step
    (1 of the 4 micro-batches; FlatParamHandle.pre_unshard skips the cast when needs_unshard() is
    False), FSDP2 casts, copies in and copies out every micro-batch (Llama 3 8B at 4,096 tokens on 8
    H100s: the GPU sets the pace)."""
    model = replace(LLAMA3_8B, seq_len=4096)
    plan = Plan.for_era(era, dp=8, micro_batch=1, global_batch=32, zero_stage=2, recompute="none", grad_sync="step")
    stack = ERAS[era]
    unshard = BLOCK_8B * (stack.fsdp_unshard_bytes + stack.fsdp_shard_bytes / 8) / HBM_RATE
    forward = _layer(model, H100, plan)["layer_forward_s"] - _layer(model, H100, plan, copies=False)["layer_forward_s"]
    report(f"{era} ZeRO-2 no_sync forward copies of an 8B block a micro-batch, s", forward, unshards * unshard)
    assert forward == pytest.approx(unshards * unshard, rel=1e-9)


def test_zero2_waits_for_the_root_each_micro_batch():
    """FSDP's ZeRO-2 forward gathers the root first and reduce-scatters it last, every micro-batch
    that reduces: against the same blocks under a 16-token vocabulary, 4 x (the root's all-gather +
    reduce-scatter) more wait a step (FSDP2, fp32 gradients)."""
    plan = Plan.for_era("pytorch-fsdp2-2024", dp=8, micro_batch=1, global_batch=32, zero_stage=2, recompute="none")

    def dp(model):
        return evaluate_plan(model, H100, plan_columns(plan), plan.dp_algorithm, ERAS[plan.stack])["dp_comm_s"]

    def seconds(op, nbytes):
        return sum(float(x) for x in collective_columns(op, nbytes, H100, 8, 1.0, "auto"))

    root = lambda vocab: vocab * 2048 + 2 * 2048  # noqa: E731
    per_micro_batch = (seconds("all_gather", 2 * root(128256)) + seconds("reduce_scatter", 4 * root(128256))
                       - seconds("all_gather", 2 * root(16)) - seconds("reduce_scatter", 4 * root(16)))
    extra = dp(LLAMA_1B) - dp(replace(LLAMA_1B, vocab=16))
    report("fsdp2 ZeRO-2 1B root unit's wait a step, s", extra, 4 * per_micro_batch)
    assert extra == pytest.approx(4 * per_micro_batch, rel=1e-6)


def test_regathering_needs_fsdp_units():
    regathers = {name: era.fsdp_reshard_after_backward for name, era in ERAS.items() if era.fsdp_reshard_after_backward != "never"}
    assert regathers == {"pytorch-fsdp1-2023": "reducing", "pytorch-fsdp2-2024": "every", "torchtitan-2025": "every"}
    with pytest.raises(ValueError, match="fsdp_reshard_after_backward"):
        replace(ERAS["megatron-core-2024"], fsdp_reshard_after_backward="every")
    with pytest.raises(ValueError, match="fsdp_reshard_after_backward"):
        replace(ERAS["pytorch-fsdp2-2024"], fsdp_reshard_after_backward=True)


# ---- routed experts under FSDP: a unit of their own per MoE layer, over the expert-data-parallel ranks ----
def test_experts_reduce_scatter_over_their_expert_group():
    """DeepSeek-V3 (config.json: 61 layers, the first 3 dense, 256 routed experts of 3 x 7168 x 2048,
    vocabulary 129,280 untied) under FSDP2 ZeRO-3 on 64 H100s with ep=8: torchtitan's apply_fsdp wraps
    each MoE layer's experts in a fully_shard of their own on the dp_shard_mod_ep mesh (64 / 8 = 8
    ranks, 8 apart), the rest of the block on all 64. Each of the 4 micro-batches reduce-scatters in
    fp32 the 61 blocks' dense gradients and the root's over 64 ranks and the 58 expert units' (this
    rank's 32 experts a layer) over 8, as NCCL's tables price them (labs.core.engine.topology)."""
    model, cluster = Model.get("deepseek-v3"), Cluster.get("dgx-h100", nodes=8)
    plan = Plan.for_era("pytorch-fsdp2-2024", dp=64, ep=8, micro_batch=1, global_batch=256, zero_stage=3, recompute="full")
    r = evaluate_plan(model, cluster, plan_columns(plan), plan.dp_algorithm, ERAS[plan.stack])
    routed = 58 * 256 * 3 * 7168 * 2048
    root = 2 * 129280 * 7168 + 7168  # embedding, output layer, final norm
    dense = model.params - routed
    assert model.layers * model.layer_expert_params == pytest.approx(routed)

    def seconds(op, nbytes, calls, group, stride):
        return calls * sum(float(x) for x in collective_columns(op, nbytes / calls, cluster, group, stride, "auto"))

    per_micro_batch = (seconds("reduce_scatter", 4 * (dense - root), 61, 64, 1.0) + seconds("reduce_scatter", 4 * root, 1, 64, 1.0)
                       + seconds("reduce_scatter", 4 * routed / 8, 58, 8, 8.0))
    report("DeepSeek-V3 FSDP2 ep=8 reduce-scatter wire a step, s", r["coll_dp_reduce_wire_s"], 4 * per_micro_batch)
    assert r["coll_dp_reduce_wire_s"] == pytest.approx(4 * per_micro_batch, rel=1e-6)
    assert r["coll_dp_reduce_calls"] == pytest.approx(4 * (61 + 58 + 1))
    assert r["coll_dp_gather_calls"] == pytest.approx(4 * (2 * (61 + 58) + 1))


# ---- the communication map counts FSDP's collectives as they are priced: one per unit ----
LLAMA3_8B_DP32 = Cluster.get("dgx-h100", nodes=4)


@pytest.mark.parametrize("era, zero, grad_sync, reduces, gathers", [
    ("pytorch-fsdp2-2024", 3, None, 4 * 33, 4 * (2 * 32 + 1)),  # 32 blocks twice a micro-batch, the root once
    ("pytorch-fsdp2-2024", 2, None, 4 * 33, 4 * 33),
    ("pytorch-fsdp2-2024", 2, "step", 33, 4 * 33),  # no_sync: one reduction; FSDP2 still reshards after every backward
    ("pytorch-fsdp1-2023", 2, "step", 33, 33),  # FSDP1 keeps the units through no_sync
])
def test_the_map_counts_fsdp_collectives_unit_by_unit(era, zero, grad_sync, reduces, gathers):
    """Llama 3 8B (32 blocks and the root unit) on 32 H100s, 4 micro-batches: each reduction
    reduce-scatters the 33 units one by one, each unshard all-gathers them."""
    plan = Plan.for_era(era, dp=32, micro_batch=1, global_batch=128, zero_stage=zero, recompute="none", grad_sync=grad_sync)
    r = evaluate_plan(LLAMA3_8B, LLAMA3_8B_DP32, plan_columns(plan), plan.dp_algorithm, ERAS[era])
    report(f"{era} ZeRO-{zero} grad_sync={grad_sync} reduce-scatters a step", r["coll_dp_reduce_calls"], reduces)
    report(f"{era} ZeRO-{zero} grad_sync={grad_sync} all-gathers a step", r["coll_dp_gather_calls"], gathers)
    assert r["coll_dp_reduce_calls"] == reduces
    assert r["coll_dp_gather_calls"] == gathers


# ---- hybrid sharding (shard_group_size): each reduced shard all-reduced across the replicas ----
def _seconds(cluster, op, nbytes, calls, group, stride):
    return calls * sum(float(x) for x in collective_columns(op, nbytes / calls, cluster, group, stride, "auto"))


DEEPSEEK_CLUSTER = Cluster.get("dgx-h100", nodes=8)
DEEPSEEK_ROUTED = 58 * 256 * 3 * 7168 * 2048  # config.json: 58 MoE layers of 256 routed experts of 3 x 7168 x 2048


def _deepseek_on_64(era, **fields):
    """DeepSeek-V3 on 64 H100s with ep=8 (dp 64, 4 micro-batches): the plan's outputs, its
    gradients' bytes a parameter, and one rank's dense and routed-expert (32 of 256) parameters."""
    model = Model.get("deepseek-v3")
    plan = Plan.for_era(era, dp=64, ep=8, micro_batch=1, global_batch=256, recompute="full", **fields)
    r = evaluate_plan(model, DEEPSEEK_CLUSTER, plan_columns(plan), plan.dp_algorithm, stack_of(plan.stack))
    return r, 4 if plan.grad_reduce_dtype == "fp32" else 2, model.params - DEEPSEEK_ROUTED, DEEPSEEK_ROUTED / 8


def test_hybrid_sharding_all_reduces_each_units_shard_across_replicas():
    """Llama 3 8B under FSDP2 HSDP on 32 H100s (shard groups of 8, one node; 4 replicas 8 ranks
    apart), ZeRO-3, 4 micro-batches: each unit (32 blocks, then the root) is reduce-scattered over
    its node and its shard all-reduced across the 4 replicas right after (foreach_reduce: the
    all_reduce on the replicate group), unit by unit, not in Megatron's buckets."""
    plan = Plan.for_era("pytorch-fsdp2-2024", dp=32, micro_batch=1, global_batch=128, zero_stage=3, recompute="none", shard_group_size=8)
    r = evaluate_plan(LLAMA3_8B, LLAMA3_8B_DP32, plan_columns(plan), plan.dp_algorithm, ERAS[plan.stack])
    grad = 4 if plan.grad_reduce_dtype == "fp32" else 2
    root = 2 * 128256 * 4096 + 4096  # embedding and output layer (untied, config.json), final norm
    blocks = LLAMA3_8B.params - root
    per_micro_batch = sum(_seconds(LLAMA3_8B_DP32, "reduce_scatter", grad * nbytes, units, 8, 1.0)
                          + _seconds(LLAMA3_8B_DP32, "all_reduce", grad * nbytes / 8, units, 4, 8.0) for nbytes, units in ((blocks, 32), (root, 1)))
    report("Llama 3 8B FSDP2 HSDP 8 x 4: reduce wire a step, s", r["coll_dp_reduce_wire_s"], 4 * per_micro_batch)
    assert r["coll_dp_reduce_wire_s"] == pytest.approx(4 * per_micro_batch, rel=1e-6)
    assert r["coll_dp_reduce_sent_bytes"] == pytest.approx(4 * grad * LLAMA3_8B.params * (7 / 8 + 2 * 3 / 4 / 8), rel=1e-9)


def test_hybrid_sharded_experts_all_reduce_across_their_replicas():
    """DeepSeek-V3 under FSDP2 ZeRO-3 on 64 H100s, ep=8, shard groups of 16: the dense units shard
    over 16 ranks with 4 replicas; each MoE layer's experts (this rank's 32 of 256) over the
    expert-data-parallel group's 64 / 8 = 8 ranks, sharded over 16 / 8 = 2 of them (8 apart) with
    4 replicas (16 apart), each shard all-reduced across them after its reduce-scatter."""
    r, grad, dense, expert = _deepseek_on_64("pytorch-fsdp2-2024", zero_stage=3, shard_group_size=16)
    cluster, root = DEEPSEEK_CLUSTER, 2 * 129280 * 7168 + 7168
    per_micro_batch = (_seconds(cluster, "reduce_scatter", grad * (dense - root), 61, 16, 1.0) + _seconds(cluster, "all_reduce", grad * (dense - root) / 16, 61, 4, 16.0)
                       + _seconds(cluster, "reduce_scatter", grad * root, 1, 16, 1.0) + _seconds(cluster, "all_reduce", grad * root / 16, 1, 4, 16.0)
                       + _seconds(cluster, "reduce_scatter", grad * expert, 58, 2, 8.0) + _seconds(cluster, "all_reduce", grad * expert / 2, 58, 4, 16.0))
    report("DeepSeek-V3 FSDP2 HSDP ep=8: reduce wire a step, s", r["coll_dp_reduce_wire_s"], 4 * per_micro_batch)
    assert r["coll_dp_reduce_wire_s"] == pytest.approx(4 * per_micro_batch, rel=1e-6)
    sent = grad * (dense * (15 / 16 + 2 * 3 / 4 / 16) + expert * (1 / 2 + 2 * 3 / 4 / 2))
    report("DeepSeek-V3 FSDP2 HSDP ep=8: bytes sent reducing a step", r["coll_dp_reduce_sent_bytes"], 4 * sent)
    assert r["coll_dp_reduce_sent_bytes"] == pytest.approx(4 * sent, rel=1e-9)


def test_experts_bytes_are_counted_over_the_expert_group():
    """Megatron-Core's ZeRO-1 for DeepSeek-V3 on 64 H100s with ep=8: once a step the dense
    gradients reduce-scatter over all 64 ranks ((63/64) of them sent) and the routed experts' over
    the 8 expert-data-parallel ranks ((7/8) of this rank's 32 experts' gradients), then each
    gathers its updated weights the same way."""
    r, grad, dense, expert = _deepseek_on_64("megatron-core-2024", zero_stage=1)
    report("DeepSeek-V3 ZeRO-1 ep=8: bytes sent reducing a step", r["coll_dp_reduce_sent_bytes"], grad * (dense * 63 / 64 + expert * 7 / 8))
    assert r["coll_dp_reduce_sent_bytes"] == pytest.approx(grad * (dense * 63 / 64 + expert * 7 / 8), rel=1e-9)
    assert r["coll_dp_gather_sent_bytes"] == pytest.approx(2 * (dense * 63 / 64 + expert * 7 / 8), rel=1e-9)


def test_megatron_hybrid_sharded_buckets_all_reduce_across_replicas():
    """Megatron-Core's distributed optimizer (era=None: its kernels with today's software, whose
    hybrid sharding covers MoE, Core v0.13) for DeepSeek-V3 on 64 H100s, ep=8, sharded over groups
    of 16 (4 replicas): once a step each bucket (max(40M, 1M x dp) = 64M parameters, DDP's bucket)
    is reduce-scattered over its 16 ranks and all-reduced across the 4 replicas; the routed
    experts' in as many buckets over their 2-rank shard (8 apart) and its 4 replicas (16 apart)."""
    import math

    r, grad, dense, expert = _deepseek_on_64(None, zero_stage=1, shard_group_size=16)
    buckets = math.ceil(dense / 64e6)
    cluster = DEEPSEEK_CLUSTER
    wire = (_seconds(cluster, "reduce_scatter", grad * dense, buckets, 16, 1.0) + _seconds(cluster, "all_reduce", grad * dense / 16, buckets, 4, 16.0)
            + _seconds(cluster, "reduce_scatter", grad * expert, buckets, 2, 8.0) + _seconds(cluster, "all_reduce", grad * expert / 2, buckets, 4, 16.0))
    report("DeepSeek-V3 Megatron ZeRO-1 16 x 4, ep=8: reduce wire a step, s", r["coll_dp_reduce_wire_s"], wire)
    assert r["coll_dp_reduce_wire_s"] == pytest.approx(wire, rel=1e-6)
    assert r["coll_dp_reduce_calls"] == 2 * buckets  # each bucket's reduce-scatter and its all-reduce


def test_zero0_experts_all_reduce_over_their_group():
    """Plain data parallelism (ZeRO-0) for DeepSeek-V3 on 64 H100s with ep=8: the dense gradients
    all-reduce over all 64 ranks, 2 x 63/64 of them sent, the routed experts' over their 8
    expert-data-parallel ranks, 2 x 7/8."""
    r, grad, dense, expert = _deepseek_on_64("megatron-core-2024", zero_stage=0)
    sent = grad * (2 * 63 / 64 * dense + 2 * 7 / 8 * expert)
    report("DeepSeek-V3 ZeRO-0 ep=8: bytes sent reducing a step", r["coll_dp_reduce_sent_bytes"], sent)
    assert r["coll_dp_reduce_sent_bytes"] == pytest.approx(sent, rel=1e-9)


def test_hybrid_sharding_only_where_the_software_had_it():
    """DeepSpeed's 2021 stage 3 sharded over the whole data-parallel group (MiCS came in 2022);
    Megatron-Core added hybrid sharding for MoE models in v0.13 (2025). Each is refused by name in
    its era; FSDP2 and today's software take both."""
    with pytest.raises(ValueError, match="shard_group_size=4 is not available in era 'deepspeed-2021'"):
        Plan.for_era("deepspeed-2021", dp=8, global_batch=16, zero_stage=3, shard_group_size=4)
    with pytest.raises(ValueError, match="no hybrid sharding with expert parallelism"):
        Plan.for_era("megatron-core-2024", dp=8, ep=2, global_batch=16, zero_stage=1, shard_group_size=4)
    assert Plan.for_era("megatron-core-2024", dp=8, global_batch=16, zero_stage=1, shard_group_size=4).shard_group_size == 4
    for era in ("pytorch-fsdp2-2024", None):
        assert Plan.for_era(era, dp=8, ep=2, global_batch=16, zero_stage=3, shard_group_size=4).shard_group_size == 4


def test_hybrid_shard_groups_hold_whole_expert_shards():
    """Routed experts shard over shard_group_size / ep ranks (torchtitan's ParallelDims builds
    dp_shard_mod_ep = dp_shard x cp / ep): a group that ep does not divide is refused by name."""
    with pytest.raises(ValueError, match="shard_group_size must be a multiple of ep"):
        Plan(dp=48, ep=8, global_batch=96, zero_stage=3, shard_group_size=12)
    Plan(dp=48, ep=8, global_batch=96, zero_stage=3, shard_group_size=24)
