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

import numpy as np

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
ZERO_TERMS = ("zero", "zero_asked", "reduce_each_mb", "syncs", "forward_unshards")
BATCH_TERMS = ("b", "m", "rc", "sp", "tp_overlap", "syncs", "forward_unshards", "tokens", "full", "redo")


# read_plan's terms: (term, plan column, type, the default where an older caller leaves the column out)
_COLUMNS = (
    ("tp", "tp", float, None), ("pp", "pp", float, None), ("dp", "dp", float, None), ("cp", "cp", float, None),
    ("b", "micro_batch", float, None), ("gb", "global_batch", float, None), ("v", "virtual_stages", float, None),
    ("zero_asked", "zero_stage", int, None), ("rc", "recompute", int, None), ("sched", "schedule", int, None),
    ("sp", "sequence_parallel", bool, None), ("flash", "flash_attention", bool, None), ("tp_overlap", "tp_comm_overlap", bool, None),
    ("grad_fp32", "grad_fp32", bool, None), ("dp_overlap_asked", "dp_overlap", bool, None), ("pp_overlap", "pp_overlap", bool, None),
    ("offload", "offload", bool, None),
    ("fp8", "fp8", int, None),  # a labs.core.engine.precision code (0: bf16)
    ("torch_compile", "torch_compile", bool, False),
    # grad_sync codes index labs.core.engine.eras.GRAD_SYNCS: 0 the ZeRO stage's own, 1 once a step, 2 every micro-batch
    ("grad_sync", "grad_sync", int, 0),
    ("bucket_bytes", "bucket_bytes", float, None), ("opt_bytes", "optimizer_bytes", float, None),
    ("cp_ring", "cp_ring", bool, None), ("cp_ulysses", "cp_ulysses", bool, False), ("cp_contiguous", "cp_contiguous", bool, False),
    ("ep", "ep", float, None), ("capacity", "capacity_factor", float, None), ("max_nodes", "max_nodes_per_token", float, None),
    ("expert_skew", "expert_skew", float, 1.0),  # the busiest EP rank's load over the balanced one (labs.core.engine.experts)
    ("first_layers", "first_stage_layers", float, None), ("last_layers", "last_stage_layers", float, None),
    ("group", "microbatch_group_size", float, None), ("shard_group", "shard_group_size", float, None),
    ("reshard_after_forward", "reshard_after_forward", bool, None),
    ("rank_order", "rank_order", int, 0),  # a code into labs.core.engine.layout.RANK_ORDERS (0: Megatron's)
    ("recompute_layers", "recompute_layers", float, -1.0),  # -1: every layer of a chunk (recompute_layers / chunk_layers below)
)
_TERMS = tuple(term for term, *_ in _COLUMNS)


def read_plan(model, c: dict, stack, xp) -> SimpleNamespace:
    """The plan columns `c` as named terms (absent columns, from older callers, take the default:
    Megatron's rank order, Ulysses off, the ring's split load-balanced, no torch.compile). One
    plan's numbers are read all at once; numpy columns each when a stage first reads them
    (PlanColumns), at the rows it reads them (a sweep's stages read most at a row of each group)."""
    if not xp.scalar:
        return PlanColumns(model, c, stack, xp)
    p = SimpleNamespace()
    p.__dict__.update(zip(_TERMS, xp.cols(c, _COLUMNS)))
    for term, derive in _DERIVED:
        setattr(p, term, derive(p, model, stack, xp))
    return p


class PlanColumns(SimpleNamespace):
    """read_plan's terms of numpy plan columns, each read or derived when first read. Taken at
    some rows (labs.core.engine.stages.xp.at_rows, only_if), they are the terms of the plan columns
    taken there: what a stage reads only at a row of each group is never computed for every row."""

    def __init__(self, model, c, stack, xp):
        self.__dict__.update(_model=model, _c=c, _stack=stack, _xp=xp)

    def __getattr__(self, name):
        derive = _DERIVE.get(name)
        if derive is not None:
            value = derive(self, self._model, self._stack, self._xp)
        elif name in _COLUMN_OF:
            value = self._xp.col(self._c, *_COLUMN_OF[name])
        else:
            raise AttributeError(name)
        setattr(self, name, value)
        return value

    def at_rows(self, rows, size):
        """These terms at the rows `rows` of the `size` every column has."""
        return PlanColumns(self._model, _ColumnsAt(self._c, rows, size), self._stack, self._xp)


class _ColumnsAt(dict):
    """The plan columns `c` at the rows `rows` of `size`, each taken when first read."""

    def __init__(self, c, rows, size):
        super().__init__()
        self._c, self._rows, self._size = c, rows, size

    def __contains__(self, key):
        return key in self._c

    def __missing__(self, key):
        value = np.asarray(self._c[key])
        if value.ndim and value.shape[-1] == self._size:
            if value.strides[-1] == 0:  # a setting every row shares (search._columns' broadcast): the same view at these rows, no copy
                value = np.broadcast_to(value[..., :1], value.shape[:-1] + (len(self._rows),))
            else:
                value = value.take(self._rows, axis=-1)
        self[key] = value
        return value


def _dp_overlap(p, model, stack, xp):
    if stack.pipeline_overlaps_dp:
        return p.dp_overlap_asked
    return p.dp_overlap_asked & (p.pp == 1)  # the stack reduces gradients after a pipeline's flush


def _zero(p, model, stack, xp):
    # FSDP that keeps the gathered weights through the step (Llama 3: reshard_after_forward=False)
    # has ZeRO-2's memory and traffic: sharded gradients and optimizer, one weight gather a step.
    return xp.where((p.zero_asked == 3) & xp.not_(p.reshard_after_forward), 2, p.zero_asked)


def _shard(p, model, stack, xp):
    # The data-parallel group (dp x cp ranks) and the ranks one shard of the model state spans: the
    # whole group, or hybrid sharding's groups; routed experts' state only the group's n / ep
    # expert-data-parallel ranks (tp x ep apart).
    return xp.where(p.shard_group > 0, p.shard_group, p.n)


def _reduce_each_mb(p, model, stack, xp):
    # Sharded gradients cannot accumulate locally: from ZeRO-2 on every micro-batch's gradients
    # are reduce-scattered as its backward produces them (DeepSpeed's and FSDP's default); ZeRO-1
    # reduces once per step. grad_sync overrides it: "step" keeps whole gradients through the
    # accumulation (FSDP's no_sync) and reduces once, "microbatch" reduces every micro-batch.
    # Under pp > 1 a stack's pipeline schedules may decide instead (labs.core.engine.eras: pp_grad_sync;
    # torch.distributed.pipelining reduces once a step).
    own_way = p.zero >= 2
    if stack.pp_grad_sync == "step":
        own_way = own_way & (p.pp <= 1)
    return xp.where(p.grad_sync == 1, False, xp.where(p.grad_sync == 2, True, own_way))


def _forward_unshards(p, model, stack, xp):
    # How often each FSDP unit is unsharded (all-gathered, with its hooks and copies) for a
    # micro-batch's forward: always under ZeRO-3 (which unshards again for the backward); under
    # ZeRO-2 when the previous backward freed it (labs.core.engine.eras: fsdp_reshard_after_backward), on
    # average syncs / m for FSDP1; never for a stack that gathers the weights once a step.
    regathers = {"never": 0.0, "reducing": p.syncs / p.m, "every": 1.0}[stack.fsdp_reshard_after_backward]
    if stack.pp_grad_sync == "step" and stack.fsdp_reshard_after_backward == "every":  # torch's pipelining keeps them unsharded between backwards
        regathers = xp.where(p.pp > 1, p.syncs / p.m, regathers)
    return xp.where(p.zero == 3, 1.0, xp.where(p.zero == 2, regathers, 0.0))


def _redo(p, model, stack, xp):
    # Megatron's --recompute-method block --recompute-num-layers N: only the first N layers of each
    # pipeline chunk are recomputed in full, the rest keep their activations. `redo` is the share
    # of a chunk's layers re-run (1 for full recompute of every layer, 0 without full recompute).
    chunk_layers = xp.ceil(model.layers / (p.pp * p.v))
    return xp.where(p.full, xp.where(p.recompute_layers >= 0, xp.minimum(1.0, p.recompute_layers / chunk_layers), 1.0), 0.0)


# The terms derived from the columns', in an order that reads each after those it reads.
_DERIVED = (
    ("dp_overlap", _dp_overlap),
    ("zero", _zero),
    ("m", lambda p, model, stack, xp: p.gb / (p.b * p.dp)),
    ("n", lambda p, model, stack, xp: p.dp * p.cp),
    ("shard", _shard),
    ("expert_shard", lambda p, model, stack, xp: xp.maximum(p.shard / p.ep, 1.0)),
    ("reduce_each_mb", _reduce_each_mb),
    ("syncs", lambda p, model, stack, xp: xp.where(p.reduce_each_mb, p.m, 1.0)),
    ("forward_unshards", _forward_unshards),
    ("stride", lambda p, model, stack, xp: strides(p.rank_order, p.tp, p.cp, p.dp, p.pp, xp)),
    ("s_tp", lambda p, model, stack, xp: p.stride["tp"]),
    ("s_cp", lambda p, model, stack, xp: p.stride["cp"]),  # the data-parallel group (dp x cp) starts at CP's stride
    ("s_full", lambda p, model, stack, xp: float(model.seq_len)),
    ("s", lambda p, model, stack, xp: p.s_full / p.cp),
    ("tokens", lambda p, model, stack, xp: p.b * p.s),
    ("full", lambda p, model, stack, xp: p.rc == _FULL),
    ("redo", _redo),
)
_DERIVE = dict(_DERIVED)
_COLUMN_OF = {term: rest for term, *rest in _COLUMNS}
