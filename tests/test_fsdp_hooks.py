"""FSDP's hooks on the host (labs.core.engine.eras: fsdp_s_per_unshard, fsdp_s_per_param,
fsdp_kept_s_per_param, fsdp_kept_s_per_pass): each unshard + reshard of a unit (one wrapped
transformer block) costs host time beside the kernel launches, and the GPU waits for it only when
the unit's kernels are shorter. Expectations are hand counts from the sources: pytorch/pytorch#96958
(FSDP1, 400 parameters: _use_unsharded_views 4.268 ms, _writeback_orig_params 1.071 ms,
_use_sharded_views 2.75 ms), PyTorch 2.1's flat_param.py and _runtime_utils.py for which of them a
ZeRO-2 (SHARD_GRAD_OP) pass runs (#98250 skips the post-forward sharded views and so the
pre-backward unsharded views), #133369 (FSDP2: 0.37 ms of host time for one Llama 3 8B block's
all-gather) and PyTorch 2.4-2.5's FSDPParam.to_sharded (FSDP2's reshard: one storage free per
parameter, unmeasured, at eager PyTorch's 10 us an op)."""

from dataclasses import replace

import pytest

from conftest import report
from labs.core import Cluster, Model, Plan
from labs.core.engine.eras import ERAS, Era, stack_of
from labs.core.engine.plan import plan_columns
from labs.core.engine.stages.compute import block_parameters
from labs.core.engine.stages.inputs import model_terms
from labs.core.engine.step import evaluate_plan

H100 = Cluster.get("dgx-h100", nodes=1)
A100 = Cluster.get("dgx-a100", nodes=1)
# Llama 3.2 1B's architecture (its config.json): 16 blocks, hidden 2048, 32 heads, 8 K/V heads, SwiGLU 8192.
LLAMA_1B = Model("llama3.2-1b", 16, 2048, 32, 1024, 128256, ffn_hidden=8192, kv_heads=8, gated_ffn=True)
# A GPT block (its q, k, v, o, fc1, fc2 and two LayerNorms: 8 parameters) of about the same size.
GPT_1B = Model("gpt-1b", 16, 2048, 16, 1024, 50257)
OP_S = 10e-6  # eager PyTorch's host time an op (labs.core.engine.eras.HOST_S_PER_OP)
LAUNCH_S = 40 * OP_S  # eager PyTorch's 40 kernels a block
# FSDP1's three per-parameter loops (#96958) and a Llama block's 9 parameters.
WRITEBACK_S, UNSHARDED_VIEWS_S, SHARDED_VIEWS_S = 1.071e-3 / 400, 4.268e-3 / 400, 2.75e-3 / 400
FSDP1_UNSHARD_RESHARD_S = 11 * OP_S + 9 * (4.268e-3 + 1.071e-3 + 2.75e-3) / 400  # 11 host ops + the three loops
FSDP2_UNSHARD_RESHARD_S = 0.37e-3 + 9 * OP_S  # the all-gather + the reshard's 9 storage frees


def _layer(model, cluster, plan, hooks=True):
    stack = stack_of(plan.stack)
    if not hooks:
        stack = replace(stack, fsdp_s_per_unshard=0.0, fsdp_s_per_param=0.0, fsdp_kept_s_per_param=(0.0, 0.0), fsdp_kept_s_per_pass=0.0)
    return evaluate_plan(model, cluster, plan_columns(plan), plan.dp_algorithm, stack)


def _check_block(r, label, forward_hooks, backward_hooks):
    """A block's forward and backward on the H100 at 1,024 tokens: its launches (40 kernels a
    pass, 2 passes' worth in the backward) and the hooks, which set the pace."""
    report(f"{label} block forward on H100, s", r["layer_forward_s"], LAUNCH_S + forward_hooks)
    report(f"{label} block backward on H100, s", r["layer_backward_s"], 2 * LAUNCH_S + backward_hooks)
    assert r["layer_forward_s"] == pytest.approx(LAUNCH_S + forward_hooks)
    assert r["layer_backward_s"] == pytest.approx(2 * LAUNCH_S + backward_hooks)


def _mfu(r, model, cluster, plan):
    return r["model_flops"] / (r["step_time_s"] * plan.gpus * cluster.gpu.bf16_flops)


def test_a_block_has_the_parameters_of_its_modules():
    """Llama: q, k, v, o, w1, w2, w3 and two RMSNorms; GPT: fc1, fc2 in place of the three; DeepSeek-V3:
    MLA's seven, two norms, and in 58 of its 61 layers router + three grouped experts + the shared expert's three."""
    assert block_parameters(model_terms(Model.get("llama3-8b"))) == 9
    assert block_parameters(model_terms(Model.get("gpt3-175b"))) == 8
    assert block_parameters(model_terms(Model.get("deepseek-v3"))) == pytest.approx(7 + 2 + (3 * 3 + 58 * 7) / 61)


@pytest.mark.parametrize("era, unshard", [("pytorch-fsdp1-2023", FSDP1_UNSHARD_RESHARD_S), ("pytorch-fsdp2-2024", FSDP2_UNSHARD_RESHARD_S)])
def test_a_small_block_waits_for_the_hooks_in_both_passes_under_zero3(era, unshard):
    """A 1B block at 1,024 tokens on an H100 runs its GEMMs in about 0.2 ms: the host's launches and
    hooks set its pace. ZeRO-3 unshards for the forward and again for the backward."""
    plan = Plan.for_era(era, dp=8, micro_batch=1, global_batch=32, zero_stage=3, recompute="none")
    _check_block(_layer(LLAMA_1B, H100, plan), f"{era} 1B", unshard, unshard)


@pytest.mark.parametrize("era, model, params, forward_hooks, backward_hooks", [
    # FSDP1: the forward gathers (11 ops), writes back and swaps to the unsharded views; the
    # post-forward reshard skips the sharded views, so the pre-backward hook only writes back and
    # the post-backward reshard swaps to the sharded views, with 2 ops (record_stream of the freed
    # bf16 shard, the wait on the unshard stream) in a backward that gathers nothing.
    ("pytorch-fsdp1-2023", LLAMA_1B, 9, 11 * OP_S + 9 * (WRITEBACK_S + UNSHARDED_VIEWS_S), 2 * OP_S + 9 * (WRITEBACK_S + SHARDED_VIEWS_S)),
    ("pytorch-fsdp1-2023", GPT_1B, 8, 11 * OP_S + 8 * (WRITEBACK_S + UNSHARDED_VIEWS_S), 2 * OP_S + 8 * (WRITEBACK_S + SHARDED_VIEWS_S)),
    # FSDP2: the forward's all-gather; no post-forward reshard; the post-backward reshard frees each parameter.
    ("pytorch-fsdp2-2024", LLAMA_1B, 9, 0.37e-3, 9 * OP_S),
    ("pytorch-fsdp2-2024", GPT_1B, 8, 0.37e-3, 8 * OP_S),
])
def test_zero2_hooks_split_between_the_forward_and_the_backward(era, model, params, forward_hooks, backward_hooks):
    """SHARD_GRAD_OP / reshard_after_forward=False keeps the unit unsharded from the forward to the
    end of the backward: one gather a micro-batch, in the forward, and each pass's own loops over
    the block's parameters. A small block's backward waits for them (before: for nothing)."""
    assert block_parameters(model_terms(model)) == params
    plan = Plan.for_era(era, dp=8, micro_batch=1, global_batch=32, zero_stage=2, recompute="none")
    _check_block(_layer(model, H100, plan), f"{era} ZeRO-2 {model.name}", forward_hooks, backward_hooks)


@pytest.mark.parametrize("era, forward_hooks, backward_hooks", [
    # FSDP1 keeps the units through no_sync: its 11 gather ops in 1 of the 4 micro-batches' forwards
    # and 2 ops in the 3 others; the writeback and the unsharded views in every forward
    # (FlatParamHandle.unshard, needs_unshard() False), the writeback and the sharded views in every
    # backward (_post_backward_reshard runs whether or not the backward frees).
    ("pytorch-fsdp1-2023", (11 * 1 + 2 * 3) * OP_S / 4 + 9 * (WRITEBACK_S + UNSHARDED_VIEWS_S), 2 * OP_S + 9 * (WRITEBACK_S + SHARDED_VIEWS_S)),
    # FSDP2 reshards after every backward (its 9 frees): every forward unshards
    ("pytorch-fsdp2-2024", 0.37e-3, 9 * OP_S),
])
def test_zero2_under_no_sync_runs_the_unshard_hooks_as_often_as_it_gathers(era, forward_hooks, backward_hooks):
    plan = Plan.for_era(era, dp=8, micro_batch=1, global_batch=32, zero_stage=2, recompute="none", grad_sync="step")
    _check_block(_layer(LLAMA_1B, H100, plan), f"{era} ZeRO-2 no_sync 1B", forward_hooks, backward_hooks)


def test_the_hooks_cost_a_small_model_on_h100_and_nothing_where_the_kernels_are_longer():
    """The same hooks against the GPU time they run beside: a 1B model at 1,024 tokens on an H100
    loses a sixth of its MFU or more (FSDP's HBM copies, tests/test_fsdp_traffic.py, already slow its
    GPU time with or without the hooks); on an A100 (slower GEMMs), at 4,096 tokens, and for
    Llama 3 70B the kernels outlast the host and nothing changes."""
    long_1b = replace(LLAMA_1B, seq_len=4096)
    cases = [(LLAMA_1B, H100, 8, "none", True), (LLAMA_1B, A100, 8, "none", False), (long_1b, H100, 8, "none", False),
             (Model.get("llama3-70b"), Cluster.get("dgx-h100", nodes=8), 64, "full", False)]
    for era in ("pytorch-fsdp1-2023", "pytorch-fsdp2-2024"):
        for model, cluster, gpus, recompute, exposed in cases:
            plan = Plan.for_era(era, dp=gpus, micro_batch=1, global_batch=4 * gpus, zero_stage=3, recompute=recompute)
            before, after = (_mfu(_layer(model, cluster, plan, hooks), model, cluster, plan) for hooks in (False, True))
            print(f"{era} {model.name} s={model.seq_len} on {cluster.gpu.name}: MFU {before:.1%} without hooks, {after:.1%} with")
            if exposed:
                assert after < 0.85 * before
            else:
                assert after == pytest.approx(before, rel=1e-12)


def test_only_the_fsdp_stacks_run_hooks():
    hooked = {name for name, era in ERAS.items()
              if era.fsdp_s_per_unshard or era.fsdp_s_per_param or any(era.fsdp_kept_s_per_param) or era.fsdp_kept_s_per_pass}
    assert hooked == {"pytorch-fsdp1-2023", "pytorch-fsdp2-2024", "torchtitan-2025"}
    megatron = Plan(stack="megatron-core-2024", dp=8, micro_batch=1, global_batch=32, zero_stage=3, recompute="none")
    r = _layer(LLAMA_1B, H100, megatron)
    assert r["layer_forward_s"] == pytest.approx(_layer(LLAMA_1B, H100, megatron, hooks=False)["layer_forward_s"])


@pytest.mark.parametrize("field, value", [("fsdp_s_per_unshard", -1e-6), ("fsdp_s_per_param", -1e-6), ("fsdp_kept_s_per_pass", -1e-6),
                                          ("fsdp_kept_s_per_param", (1e-6, -1e-6)), ("fsdp_kept_s_per_param", 1e-6)])
def test_a_negative_hook_time_is_refused_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        replace(ERAS["pytorch-fsdp1-2023"], **{field: value})
    assert isinstance(ERAS["pytorch-fsdp1-2023"], Era)
