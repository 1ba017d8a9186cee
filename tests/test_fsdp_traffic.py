"""What PyTorch FSDP moves through HBM and waits for beyond its collectives (labs.core.eras:
fsdp_unshard_bytes, fsdp_shard_bytes, fsdp_grad_bytes; labs.core.stages.data: the root unit).
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
from labs.core.eras import ERAS
from labs.core.plan import plan_columns
from labs.core.step import evaluate_plan

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
    assert copying == {"pytorch-fsdp1-2023", "pytorch-fsdp2-2024"}


@pytest.mark.parametrize("field, value", [("fsdp_unshard_bytes", -1.0), ("fsdp_shard_bytes", float("nan")),
                                          ("fsdp_grad_bytes", (4.0, -1.0)), ("fsdp_grad_bytes", 4.0)])
def test_bad_copy_bytes_are_refused_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        replace(ERAS["pytorch-fsdp2-2024"], **{field: value})
