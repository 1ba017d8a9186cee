"""The one step model: a training step's time and memory, as named stages over plan columns.

`sweep()` evaluates every plan of a space through `evaluate` on numpy columns; `estimate()`
evaluates one plan through `evaluate_plan`, which runs the same stages on Python numbers
(labs.core.engine.stages.xp). No formula of the step exists anywhere else.

step time = pipeline compute with its bubble      (stages.compute, stages.pipe)
          + exposed TP, CP and EP communication   (stages.parallel, inside each stage's time)
          + exposed PP send/recv                   (stages.pipe)
          + exposed DP / ZeRO communication        (stages.data)
          + the optimizer step, or ZeRO-Offload's copies and CPU Adam (stages.optimizer)
memory    = the busiest pipeline rank's state, activations and buffers (stages.memory)

MFU counts model FLOPs (labs.core.engine.models.Model.flops_per_sequence: all of attention's s^2 work
without flash attention, its causal half with it); HFU adds what is recomputed.
"""

from __future__ import annotations

import numpy as np

from labs.core.engine.eras import Era, stack_of
from labs.core.engine.hardware import Cluster
from labs.core.engine.memory import GRAD_BYTES, WEIGHT_BYTES
from labs.core.engine.models import Model
from labs.core.engine.stages.compute import has_fsdp_costs, layer_compute, layer_kernels
from labs.core.engine.stages.data import data_parallel_stage, dp_traffic
from labs.core.engine.stages.inputs import ZERO_TERMS, flops_per_sequence, model_terms, read_plan
from labs.core.engine.stages.memory import layer_activations, memory_stage, rank_activations, stage_memory, zero_free_memory
from labs.core.engine.stages.optimizer import CPU_ADAM_BYTES_PER_PARAM, optimizer_stage  # noqa: F401 (CPU_ADAM_BYTES_PER_PARAM: re-exported)
from labs.core.engine.stages.parallel import NCCL_COLLECTIVE_SMS, layer_communication  # noqa: F401 (NCCL_COLLECTIVE_SMS: re-exported)
from labs.core.engine.stages.pipe import pipeline_stage, pp_sent
from labs.core.engine.stages.xp import NUMPY, SCALAR, on_groups
from labs.core.engine.topology import members_per_node, nccl_algorithm


def evaluate(model: Model, cluster: Cluster, c: dict, dp_algorithm: str = "auto", stack: Era | None = None, xp=NUMPY,
             collectives: bool = True, brief: bool = False, groups=None) -> dict:
    """Every number of an Estimate for each row of the plan columns `c` (validated upstream).

    c holds tp, pp, dp, cp, micro_batch, global_batch, zero_stage, recompute (code into
    RECOMPUTE_MODES), sequence_parallel, schedule (code into SCHEDULES), virtual_stages,
    flash_attention, tp_comm_overlap, grad_fp32, dp_overlap, pp_overlap, bucket_bytes (0: Megatron's),
    optimizer_bytes (per parameter) and offload; rank_order (code into labs.core.engine.layout.RANK_ORDERS,
    0 when absent: Megatron's order) places every group's ranks and so picks its links.

    Besides the per-axis totals it returns each collective's own numbers (coll_<name>_calls,
    _sent_bytes, _wire_s, _exposed_s, _group, _members_per_node for tp, cp, ep, pp, dp_reduce
    and dp_gather): the communication map, from the same terms the step time adds up. `collectives=False`
    leaves the map out; `brief` returns only what sweep() shows (SWEEP_OUTPUTS). `groups`
    (numpy rows only) says which rows differ in few plan fields, each as (a row of each group,
    every row's group): `zero`, only in the ZeRO stage, which the stages before the DP stage do
    not read; `batch`, only in the micro-batch size, recompute and SP, which no DP collective's
    price reads. Those stages then evaluate once per group (labs.core.engine.stages.xp.at_rows)."""
    out, terms = _evaluate(model, cluster, c, dp_algorithm, stack, xp, collectives and not brief, brief, groups)
    if terms is not None:
        out.update(communication_map(cluster, terms, out["microbatches"], xp))
    return out


def _evaluate(model, cluster, c, dp_algorithm, stack, xp, collectives, brief, groups):
    """evaluate's outputs without the communication map, and the map's terms per collective
    (collective_terms; None when `collectives` is false)."""
    stack = stack_of(None) if stack is None else stack  # the software's kernels (labs.core.engine.eras)
    p = read_plan(model, c, stack, xp)
    terms = model_terms(model)  # the model's sizes read once
    if groups is None or groups.zero is None or has_fsdp_costs(stack):  # FSDP's hooks and copies in a layer's time depend on the ZeRO stage
        layer, q, tpcp, f, flops = _before_data(p, terms, cluster, stack, xp, model, dp_algorithm)
    else:  # nothing before the DP stage reads the ZeRO stage
        layer, q, tpcp, f, flops = on_groups(_before_data, p, groups.zero, ZERO_TERMS, terms, cluster, stack, xp, model, dp_algorithm)
    model_per_sequence, hardware_per_sequence = flops
    model = terms
    d = data_parallel_stage(model, cluster, stack, p, q, nccl_algorithm(dp_algorithm, stack.nccl_pat), xp, groups and groups.batch)
    o = optimizer_stage(cluster, stack, p, q, d, xp)
    r = memory_stage(p, q, d, f, xp, stack, brief)
    m = p.m
    step = q.pipeline_and_pp + d.dp_exposed + o.optimizer + o.offload_exposed  # q.pipeline + q.pp_comm + ...
    out = {  # what sweep() shows
        "step_time_s": step,
        "dp_comm_s": d.dp_exposed,
        "bubble_fraction": q.bubble,
        "dp_exposed_latency_s": d.dp_exposed * xp.where(d.dp_total > 0, d.dp_latency / xp.where(d.dp_total > 0, d.dp_total, 1.0), 0.0),
        "memory_bytes": r.total,
        "model_flops": p.gb * model_per_sequence,
        "hardware_flops": p.gb * hardware_per_sequence,
    }
    if brief:
        return out, None
    dp_traffic(p, d, xp)  # bytes sent and collectives' counts: the full outputs only
    ep_comm = q.ep_exposed  # the expert all-to-alls the step waits for (DualPipe hides part: stages.pipe); a sweep's groups spread it only here
    tp_sent = _tp_layer_sent(p, tpcp, xp)
    q.pp_sent = pp_sent(p, q, tpcp, xp)
    stages = stage_memory(r, xp)
    out.update({
        "compute_s": m * q.work,
        "bubble_s": q.pipeline - m * q.per_mb,
        "tp_comm_s": m * q.stage_comm - ep_comm,
        "ep_comm_s": ep_comm,
        "pp_comm_s": q.pp_comm,
        "optimizer_s": o.optimizer,
        "offload_s": o.offload_exposed,
        "stage_forward_s": q.stage_f,
        "stage_backward_s": q.stage_bwd,
        "dp_total_s": d.dp_total,
        "dp_latency_s": d.dp_latency,
        "weights_bytes": r.weights,
        "gradients_bytes": r.gradients,
        "optimizer_bytes": r.optimizer,
        "activations_bytes": r.activations,
        "buffers_bytes": r.buffers,
        "logits_bytes": r.logits,
        "cuda_context_bytes": r.cuda_context,
        "communicators_bytes": r.communicators,
        "tp_overlap_bytes": r.tp_overlap,
        "fragmentation_bytes": r.fragmentation,
        "tp_bytes": m * d.layers * q.pass_share * tp_sent,
        "pp_bytes": q.pp_sent,
        "dp_bytes": xp.where(d.active, d.sent, 0.0) + d.mirror_bytes,  # DualPipe's pair all-reduce sends 2 x 1/2 of its bytes
        "pcie_bytes": xp.where(p.offload, (GRAD_BYTES + WEIGHT_BYTES) * o.updated, 0.0),
        "offload_down_s": xp.where(p.offload, o.down, 0.0),
        "offload_up_s": xp.where(p.offload, o.up, 0.0),
        "cpu_adam_s": xp.where(p.offload, o.cpu_adam, 0.0),
        "host_bytes_per_node": xp.where(p.offload, (GRAD_BYTES + p.opt_bytes) * o.updated * cluster.gpus_per_node, 0.0),
        "layer_forward_s": layer.fwd,
        "layer_backward_s": layer.layer_b + layer.layer_w,
        "layer_input_grad_s": layer.layer_b,
        "layer_weight_grad_s": layer.layer_w,
        "layer_comm_s": tpcp.layer_comm,
        "layers_per_stage": d.layers * q.pass_share,  # a stage: one chunk of the two a DualPipe rank holds
        "busiest_rank": r.busiest_rank,
        "microbatches": m,
        "memory_first_bytes": stages[0],
        "memory_middle_bytes": stages[1],
        "memory_last_bytes": stages[2],
    })
    return out, (collective_terms(model, p, tpcp, q, d, tp_sent, xp) if collectives else None)


# The plan terms one layer's kernels and its TP/CP/EP communication read: a sweep evaluates them
# once per distinct combination (xp.distinct), ~150 of a space's tens of thousands of rows.
LAYER_READS = ("tp", "cp", "ep", "b", "s", "s_full", "tokens", "s_tp", "s_cp", "fp8", "flash", "sp", "torch_compile", "capacity",
               "max_nodes", "cp_contiguous", "cp_ring", "cp_ulysses", "tp_overlap", "rc", "full", "redo", "expert_skew")


def _before_data(p, model, cluster, stack, xp, flops_model, dp_algorithm):
    """A layer's compute (with FSDP's hooks and copies), the pipeline stage, the layer's
    communication, what of the memory stage no ZeRO term enters (the activations and logits each
    pipeline rank holds, the runtime's buffers), and the FLOPs of a sequence (flops_model: the
    Model): what precedes the DP stage."""
    kernels, tpcp, per_layer = xp.distinct(_layer_stages, p, LAYER_READS, model, cluster, stack, xp)  # once per distinct layer shape
    layer = layer_compute(model, cluster, stack, p, xp, kernels)
    q = pipeline_stage(model, cluster, stack, p, layer, tpcp, xp)
    held = rank_activations(model, p, layer, q, per_layer, xp, stack)
    return layer, q, tpcp, zero_free_memory(model, cluster, dp_algorithm, stack, p, q, tpcp, held, xp), flops_per_sequence(flops_model, p, xp)


def _layer_stages(p, model, cluster, stack, xp):
    """The layer's kernels (stages.compute.layer_kernels), its communication and the activations
    it keeps (stages.memory.layer_activations)."""
    kernels = layer_kernels(model, cluster, stack, p, xp)
    return kernels, layer_communication(model, cluster, stack, p, kernels, xp), layer_activations(model, p, kernels.written, xp)


def _tp_layer_sent(p, tpcp, xp):
    """Bytes one GPU sends in TP collectives per layer and micro-batch: (2 + full) passes of 2
    all-reduces or 4 gathers/scatters of half the bytes, and SP's backward re-gathers."""
    return xp.where(p.tp > 1, (8 + 4 * p.redo + tpcp.regathers) * (p.tp - 1) / p.tp * tpcp.act, 0.0)


# each collective's keys in the outputs: (calls, sent bytes, wire seconds, exposed seconds, group, members per node)
COMMUNICATION_MAP_KEYS = {key: tuple(f"coll_{key}_{field}" for field in ("calls", "sent_bytes", "wire_s", "exposed_s", "group", "members_per_node"))
                          for key in ("tp", "cp", "ep", "pp", "dp_reduce", "dp_gather", "dp_mirror")}


def collective_terms(model, p, tpcp, q, d, tp_sent, xp) -> dict:
    """Each collective's calls, bytes and seconds per step, per GPU: the same terms the stages
    add up, kept apart instead of summed per axis. Times run on the slowest stage (the one that
    sets the pace); "wire" is before any overlap, "exposed" what the step waits for. Per key of
    COMMUNICATION_MAP_KEYS: (calls, sent bytes, wire s, exposed s, group, the group's rank stride).
    tp_sent: _tp_layer_sent, as the outputs' tp_bytes count it."""
    tp, cp, pp, m, v, redo = p.tp, p.cp, p.pp, p.m, p.v, p.redo
    per_layer = m * q.layers_slowest  # layer-passes of the slowest stage per step
    tp_calls = xp.where(tp > 1, per_layer * (xp.where(p.sp, 4, 2) * (2 + redo) + tpcp.regathers), 0.0)
    tp_wire = xp.where(tp > 1, per_layer * tpcp.tp_total, 0.0)
    cp_used = cp > 1  # the CP and EP terms priced only where they run (0 elsewhere)
    cp_terms = xp.only_if(cp_used, _cp_terms, (p, tpcp, per_layer, xp), (0.0, 0.0, 0.0, 0.0))
    ep_used = (p.ep > 1) & bool(model.experts)  # dispatch + combine per pass: exposed in full, but under DualPipe's overlapped pairs
    ep_terms = xp.only_if(ep_used, _ep_terms, (p, q, tpcp, per_layer), (0.0, 0.0, 0.0, 0.0))
    active, z0 = d.active, d.z0
    gathers = active & xp.not_(z0)
    collectives = {
        "tp": (tp_calls, per_layer * tp_sent, tp_wire, xp.where(tp > 1, per_layer * tpcp.tp_exposed, 0.0), tp, p.s_tp),
        "cp": (*cp_terms, cp, p.s_cp),
        "ep": (*ep_terms, p.ep, p.s_cp),
        "pp": (xp.where(pp > 1, 2 * m * v, 0.0), q.pp_sent, xp.where(pp > 1, 2 * m * v * q.hop, 0.0), q.pp_comm, xp.where(pp > 1, 2.0, 1.0), q.stage_stride),
        "dp_reduce": (xp.where(active, d.reduce_calls, 0.0),
                      xp.where(active, d.reduce_sent, 0.0),
                      xp.where(active, d.reduce_only, 0.0), xp.where(active, d.reduce_exposed, 0.0), xp.where(z0, d.n, d.shard), p.s_cp),
        "dp_mirror": (d.mirror_calls, d.mirror_bytes, d.mirror_wire, d.mirror_exposed, xp.where(d.mirror_calls > 0, 2.0, 1.0), d.mirror_stride),
        "dp_gather": (xp.where(gathers, d.gather_calls, 0.0),
                      xp.where(active, d.gather_sent, 0.0),
                      xp.where(gathers, d.gather_wire, 0.0), xp.where(gathers, d.gather_exposed, 0.0), d.shard, p.s_cp),
    }
    return collectives


def _cp_terms(p, tpcp, per_layer, xp):
    """collective_terms' CP calls, sent bytes, wire and exposed seconds, where cp > 1."""
    cp, redo = p.cp, p.redo
    calls = per_layer * xp.where(p.cp_ulysses, 2 * (2 + redo), xp.where(p.cp_ring, (cp - 1) * (2 + redo), 2 + redo))
    sent = per_layer * xp.where(p.cp_ulysses, (cp - 1) / cp * (tpcp.qkv_block + tpcp.out_block) * (2 + redo),
                                xp.where(p.cp_ring, (cp - 1) * tpcp.kv_block * (3 + redo), (cp - 1) / cp * tpcp.kv * (2 + redo)))
    wire = per_layer * xp.where(p.cp_ulysses, tpcp.ulysses_pass * (2 + redo),
                                xp.where(p.cp_ring, (cp - 1) * tpcp.step_p2p * (3 + redo), tpcp.gather_f * (1 + redo) + tpcp.gather_b))
    return calls, sent, wire, per_layer * tpcp.cp_total


def _ep_terms(p, q, tpcp, per_layer):
    """collective_terms' EP calls, sent bytes, wire (on the wire) and exposed seconds, where ep > 1 in an MoE model."""
    return per_layer * 2 * (2 + p.redo), per_layer * (2 + p.redo) * tpcp.a2a_sent, per_layer * tpcp.layer_a2a, q.ep_exposed


def communication_map(cluster, terms, m, xp) -> dict:
    """collective_terms as the outputs' columns (COMMUNICATION_MAP_KEYS), each group with the
    members of it that share a node; m: a column of the rows' shape."""
    out = {}
    ones = xp.full_like(m, 1.0)
    for key, (calls, sent, wire, exposed, group, spacing) in terms.items():
        names = COMMUNICATION_MAP_KEYS[key]
        out.update(zip(names, (calls, sent, wire, exposed, ones * group, members_per_node(cluster, group, spacing, xp) * ones)))
    return out


FALLBACKS = {"numpy_plans": 0}  # plans whose Python-number evaluation raised and ran as a numpy row (tests read it)


def evaluate_plan(model: Model, cluster: Cluster, columns: dict, dp_algorithm: str = "auto", stack: Era | None = None) -> dict[str, float]:
    """`evaluate` for one plan's columns (Python numbers), as floats: the stages' SCALAR
    operations. Where that divides by zero (numpy would carry an inf or nan into a row a later
    `where` discards) it runs the plan as a numpy column of one."""
    out, terms, xp = _evaluate_one(model, cluster, columns, dp_algorithm, stack)
    out.update(communication_map(cluster, terms, out["microbatches"], xp))
    return {k: _float(v) for k, v in out.items()} if xp is NUMPY else dict(zip(out, map(float, out.values())))


def plan_outputs(model: Model, cluster: Cluster, columns: dict, dp_algorithm: str = "auto", stack: Era | None = None) -> tuple[dict, dict]:
    """evaluate_plan's outputs without the communication map's columns, and the map's terms
    (collective_terms), all as floats: what estimate() builds its Estimate from."""
    out, terms, xp = _evaluate_one(model, cluster, columns, dp_algorithm, stack)
    if xp is NUMPY:
        return {k: _float(v) for k, v in out.items()}, {key: tuple(map(_float, values)) for key, values in terms.items()}
    return dict(zip(out, map(float, out.values()))), {key: tuple(map(float, values)) for key, values in terms.items()}


def _evaluate_one(model, cluster, columns, dp_algorithm, stack):
    """_evaluate of one plan on SCALAR, or as a numpy row where SCALAR divides by zero: (outputs,
    collective terms, the namespace that ran)."""
    stack = stack_of(None) if stack is None else stack
    try:
        return (*_evaluate(model, cluster, columns, dp_algorithm, stack, SCALAR, True, False, None), SCALAR)
    except (ZeroDivisionError, OverflowError, ValueError):
        FALLBACKS["numpy_plans"] += 1
        return (*_evaluate(model, cluster, {k: np.asarray([v]) for k, v in columns.items()}, dp_algorithm, stack, NUMPY, True, False, None), NUMPY)


def _float(x) -> float:
    """A numpy row's value (a column of one, or a number every row shares) as a float."""
    return float(np.ravel(x)[0])
