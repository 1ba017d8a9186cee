"""FSDP's hooks on the host (labs.core.eras: fsdp_s_per_unshard, fsdp_s_per_param): each unshard +
reshard of a unit (one wrapped transformer block) costs host time beside the kernel launches, and
the GPU waits for it only when the unit's kernels are shorter. Expectations are hand counts from
the sources: pytorch/pytorch#96958 (FSDP1, 400 parameters: _use_unsharded_views 4.268 ms,
_writeback_orig_params 1.071 ms, _use_sharded_views 2.75 ms) and #133369 (FSDP2: 0.37 ms of host
time for one Llama 3 8B block's all-gather)."""

from dataclasses import replace

import pytest

from conftest import report
from labs.core import Cluster, Model, Plan
from labs.core.eras import ERAS, Era, stack_of
from labs.core.plan import plan_columns
from labs.core.stages.compute import block_parameters
from labs.core.stages.inputs import model_terms
from labs.core.step import evaluate_plan

H100 = Cluster.get("dgx-h100", nodes=1)
A100 = Cluster.get("dgx-a100", nodes=1)
# Llama 3.2 1B's architecture (its config.json): 16 blocks, hidden 2048, 32 heads, 8 K/V heads, SwiGLU 8192.
LLAMA_1B = Model("llama3.2-1b", 16, 2048, 32, 1024, 128256, ffn_hidden=8192, kv_heads=8, gated_ffn=True)
LAUNCH_S = 40 * 10e-6  # eager PyTorch's 40 kernels a block at 10 us each (labs.core.eras)
FSDP1_UNSHARD_S = 11 * 10e-6 + 9 * (4.268e-3 + 1.071e-3 + 2.75e-3) / 400  # 11 host ops + a Llama block's 9 parameters
FSDP2_UNSHARD_S = 0.37e-3


def _layer(model, cluster, plan, hooks=True):
    stack = stack_of(plan.stack)
    if not hooks:
        stack = replace(stack, fsdp_s_per_unshard=0.0, fsdp_s_per_param=0.0)
    return evaluate_plan(model, cluster, plan_columns(plan), plan.dp_algorithm, stack)


def _mfu(r, model, cluster, plan):
    return r["model_flops"] / (r["step_time_s"] * plan.gpus * cluster.gpu.bf16_flops)


def test_a_block_has_the_parameters_of_its_modules():
    """Llama: q, k, v, o, w1, w2, w3 and two RMSNorms; GPT: fc1, fc2 in place of the three; DeepSeek-V3:
    MLA's seven, two norms, and in 58 of its 61 layers router + three grouped experts + the shared expert's three."""
    assert block_parameters(model_terms(Model.get("llama3-8b"))) == 9
    assert block_parameters(model_terms(Model.get("gpt3-175b"))) == 8
    assert block_parameters(model_terms(Model.get("deepseek-v3"))) == pytest.approx(7 + 2 + (3 * 3 + 58 * 7) / 61)


@pytest.mark.parametrize("era, unshard", [("pytorch-fsdp1-2023", FSDP1_UNSHARD_S), ("pytorch-fsdp2-2024", FSDP2_UNSHARD_S)])
def test_a_small_block_waits_for_the_hooks_in_both_passes_under_zero3(era, unshard):
    """A 1B block at 1,024 tokens on an H100 runs its GEMMs in about 0.2 ms: the host's launches and
    hooks set its pace. ZeRO-3 unshards for the forward and again for the backward."""
    plan = Plan.for_era(era, dp=8, micro_batch=1, global_batch=32, zero_stage=3, recompute="none")
    r = _layer(LLAMA_1B, H100, plan)
    report(f"{era} 1B block forward on H100, s", r["layer_forward_s"], LAUNCH_S + unshard)
    report(f"{era} 1B block backward on H100, s", r["layer_backward_s"], 2 * LAUNCH_S + unshard)
    assert r["layer_forward_s"] == pytest.approx(LAUNCH_S + unshard)
    assert r["layer_backward_s"] == pytest.approx(2 * LAUNCH_S + unshard)


def test_zero2_unshards_once_a_micro_batch():
    """SHARD_GRAD_OP / reshard_after_forward=False keeps the unit unsharded from the forward to the
    end of the backward: one unshard + reshard a micro-batch, charged to the forward."""
    plan = Plan.for_era("pytorch-fsdp1-2023", dp=8, micro_batch=1, global_batch=32, zero_stage=2, recompute="none")
    r = _layer(LLAMA_1B, H100, plan)
    assert r["layer_forward_s"] == pytest.approx(LAUNCH_S + FSDP1_UNSHARD_S)
    assert r["layer_backward_s"] == pytest.approx(2 * LAUNCH_S)


@pytest.mark.parametrize("era, forward_hooks", [
    # FSDP1 keeps the units through no_sync: its 11 unshard ops in 1 of the 4 micro-batches' forwards;
    # the views are swapped in every forward (FlatParamHandle.unshard, needs_unshard() False).
    ("pytorch-fsdp1-2023", 11 * 10e-6 / 4 + 9 * (4.268e-3 + 1.071e-3 + 2.75e-3) / 400),
    ("pytorch-fsdp2-2024", FSDP2_UNSHARD_S),  # FSDP2 reshards after every backward: every forward unshards
])
def test_zero2_under_no_sync_runs_the_unshard_hooks_as_often_as_it_gathers(era, forward_hooks):
    plan = Plan.for_era(era, dp=8, micro_batch=1, global_batch=32, zero_stage=2, recompute="none", grad_sync="step")
    r = _layer(LLAMA_1B, H100, plan)
    report(f"{era} ZeRO-2 no_sync 1B block forward on H100, s", r["layer_forward_s"], LAUNCH_S + forward_hooks)
    assert r["layer_forward_s"] == pytest.approx(LAUNCH_S + forward_hooks)
    assert r["layer_backward_s"] == pytest.approx(2 * LAUNCH_S)


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
    hooked = {name for name, era in ERAS.items() if era.fsdp_s_per_unshard or era.fsdp_s_per_param}
    assert hooked == {"pytorch-fsdp1-2023", "pytorch-fsdp2-2024"}
    megatron = Plan(stack="megatron-core-2024", dp=8, micro_batch=1, global_batch=32, zero_stage=3, recompute="none")
    r = _layer(LLAMA_1B, H100, megatron)
    assert r["layer_forward_s"] == pytest.approx(_layer(LLAMA_1B, H100, megatron, hooks=False)["layer_forward_s"])


@pytest.mark.parametrize("field", ["fsdp_s_per_unshard", "fsdp_s_per_param"])
def test_a_negative_hook_time_is_refused_by_name(field):
    with pytest.raises(ValueError, match=field):
        replace(ERAS["pytorch-fsdp1-2023"], **{field: -1e-6})
    assert isinstance(ERAS["pytorch-fsdp1-2023"], Era)
