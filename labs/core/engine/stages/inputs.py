"""The plan's columns as the named terms every stage reads (one row per plan, or one plan's numbers).

`read_plan` takes the columns of labs.core.engine.plan.plan_columns (or sweep()'s) and returns them
typed, with what follows from them alone: micro-batches, each axis's rank stride, tokens per
rank, the share of a pipeline chunk's layers that full recompute re-runs, the sharding groups,
how often gradients are reduced and how often FSDP's units are unsharded.
"""

from __future__ import annotations

from dataclasses import fields
from functools import lru_cache
from types import SimpleNamespace

from labs.core.engine.layout import RANK_ORDERS, axis_strides, order_strides
from labs.core.engine.models import RECOMPUTE_MODES

_FULL = RECOMPUTE_MODES.index("full")


def strides(order, tp, cp, dp, pp, xp):
    """labs.core.engine.layout.axis_strides, as floats for one plan."""
    if xp.scalar:  # one plan's numbers: the order's strides alone
        return order_strides(RANK_ORDERS[order], {"tp": tp, "cp": cp, "dp": dp, "pp": pp})
    return axis_strides(order, tp, cp, dp, pp)


@lru_cache(maxsize=256)
def model_terms(model) -> SimpleNamespace:
    """The model's fields and derived sizes (its properties: layer_params, kv_dim, ...) read once,
    as plain attributes: the stages read them many times a plan."""
    names = [f.name for f in fields(model)] + [name for name, value in vars(type(model)).items() if isinstance(value, property)]
    return SimpleNamespace(**{name: getattr(model, name) for name in names})


@lru_cache(maxsize=4096)
def _scalar_flops(model, recompute: int, flash: bool, redo: float) -> tuple[float, float]:
    return tuple(float(x) for x in model.flops_per_sequence(recompute, flash, redo))


def flops_per_sequence(model, p, xp):
    """(model FLOPs, hardware FLOPs) per sequence (labs.core.engine.models.Model.flops_per_sequence)."""
    return xp.call(_scalar_flops, model, p.rc, p.flash, p.redo) if xp.scalar else model.flops_per_sequence(p.rc, p.flash, p.redo)


# The terms read_plan derives from the ZeRO stage, and from the micro-batch size, recompute and
# sequence parallelism (tp_overlap too: sweep() turns TP overlap on wherever SP is): rows that
# differ only in those plan fields differ only in these.
ZERO_TERMS = ("zero", "reduce_each_mb", "syncs", "forward_unshards")
BATCH_TERMS = ("b", "m", "rc", "sp", "tp_overlap", "syncs", "forward_unshards", "tokens", "full", "redo")


def read_plan(model, c: dict, stack, xp) -> SimpleNamespace:
    """The plan columns `c` as named terms (absent columns, from older callers, take the default:
    Megatron's rank order, Ulysses off, the ring's split load-balanced, no torch.compile)."""
    col = xp.col
    p = SimpleNamespace()
    p.tp, p.pp, p.dp, p.cp = col(c, "tp"), col(c, "pp"), col(c, "dp"), col(c, "cp")
    p.b, p.gb, p.v = col(c, "micro_batch"), col(c, "global_batch"), col(c, "virtual_stages")
    p.zero, p.rc, p.sched = col(c, "zero_stage", int), col(c, "recompute", int), col(c, "schedule", int)
    p.sp, p.flash, p.tp_overlap = col(c, "sequence_parallel", bool), col(c, "flash_attention", bool), col(c, "tp_comm_overlap", bool)
    p.grad_fp32, p.dp_overlap, p.pp_overlap = col(c, "grad_fp32", bool), col(c, "dp_overlap", bool), col(c, "pp_overlap", bool)
    p.offload, p.fp8 = col(c, "offload", bool), col(c, "fp8", int)  # a labs.core.engine.precision code (0: bf16)
    p.torch_compile = col(c, "torch_compile", bool, False)
    # grad_sync codes index labs.core.engine.eras.GRAD_SYNCS: 0 the ZeRO stage's own, 1 once a step, 2 every micro-batch
    p.grad_sync = col(c, "grad_sync", int, 0)
    if not stack.pipeline_overlaps_dp:  # the stack reduces gradients after a pipeline's flush
        p.dp_overlap = p.dp_overlap & (p.pp == 1)
    p.bucket_bytes, p.opt_bytes = col(c, "bucket_bytes"), col(c, "optimizer_bytes")
    p.cp_ring = col(c, "cp_ring", bool)
    p.cp_ulysses, p.cp_contiguous = col(c, "cp_ulysses", bool, False), col(c, "cp_contiguous", bool, False)
    p.ep, p.capacity, p.max_nodes = col(c, "ep"), col(c, "capacity_factor"), col(c, "max_nodes_per_token")
    p.expert_skew = col(c, "expert_skew", float, 1.0)  # the busiest EP rank's load over the balanced one (labs.core.engine.experts)
    p.first_layers, p.last_layers = col(c, "first_stage_layers"), col(c, "last_stage_layers")
    p.group, p.shard_group = col(c, "microbatch_group_size"), col(c, "shard_group_size")
    # FSDP that keeps the gathered weights through the step (Llama 3: reshard_after_forward=False)
    # has ZeRO-2's memory and traffic: sharded gradients and optimizer, one weight gather a step.
    p.zero = xp.where((p.zero == 3) & xp.not_(col(c, "reshard_after_forward", bool)), 2, p.zero)
    p.m = p.gb / (p.b * p.dp)
    # The data-parallel group (dp x cp ranks) and the ranks one shard of the model state spans: the
    # whole group, or hybrid sharding's groups; routed experts' state only the group's n / ep
    # expert-data-parallel ranks (tp x ep apart).
    p.n = p.dp * p.cp
    p.shard = xp.where(p.shard_group > 0, p.shard_group, p.n)
    p.expert_shard = xp.maximum(p.shard / p.ep, 1.0)
    # Sharded gradients cannot accumulate locally: from ZeRO-2 on every micro-batch's gradients
    # are reduce-scattered as its backward produces them (DeepSpeed's and FSDP's default); ZeRO-1
    # reduces once per step. grad_sync overrides it: "step" keeps whole gradients through the
    # accumulation (FSDP's no_sync) and reduces once, "microbatch" reduces every micro-batch.
    # Under pp > 1 a stack's pipeline schedules may decide instead (labs.core.engine.eras: pp_grad_sync;
    # torch.distributed.pipelining reduces once a step).
    own_way = p.zero >= 2
    if stack.pp_grad_sync == "step":
        own_way = own_way & (p.pp <= 1)
    p.reduce_each_mb = xp.where(p.grad_sync == 1, False, xp.where(p.grad_sync == 2, True, own_way))
    p.syncs = xp.where(p.reduce_each_mb, p.m, 1.0)
    # How often each FSDP unit is unsharded (all-gathered, with its hooks and copies) for a
    # micro-batch's forward: always under ZeRO-3 (which unshards again for the backward); under
    # ZeRO-2 when the previous backward freed it (labs.core.engine.eras: fsdp_reshard_after_backward), on
    # average syncs / m for FSDP1; never for a stack that gathers the weights once a step.
    regathers = {"never": 0.0, "reducing": p.syncs / p.m, "every": 1.0}[stack.fsdp_reshard_after_backward]
    if stack.pp_grad_sync == "step" and stack.fsdp_reshard_after_backward == "every":  # torch's pipelining keeps them unsharded between backwards
        regathers = xp.where(p.pp > 1, p.syncs / p.m, regathers)
    p.forward_unshards = xp.where(p.zero == 3, 1.0, xp.where(p.zero == 2, regathers, 0.0))
    p.stride = strides(col(c, "rank_order", int, 0), p.tp, p.cp, p.dp, p.pp, xp)
    p.s_tp, p.s_cp = p.stride["tp"], p.stride["cp"]  # the data-parallel group (dp x cp) starts at CP's stride
    p.s_full = float(model.seq_len)
    p.s = p.s_full / p.cp
    p.tokens = p.b * p.s
    p.full = p.rc == _FULL
    # Megatron's --recompute-method block --recompute-num-layers N: only the first N layers of each
    # pipeline chunk are recomputed in full, the rest keep their activations. `redo` is the share
    # of a chunk's layers re-run (1 for full recompute of every layer, 0 without full recompute).
    chunk_layers = xp.ceil(model.layers / (p.pp * p.v))
    recompute_layers = col(c, "recompute_layers", float, -1.0)
    p.redo = xp.where(p.full, xp.where(recompute_layers >= 0, xp.minimum(1.0, recompute_layers / chunk_layers), 1.0), 0.0)
    return p
