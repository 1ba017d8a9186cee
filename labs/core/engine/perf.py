"""A training step: `Plan` in, `Estimate` out (memory, step time, MFU/HFU, bubble, warnings).

The physics lives in labs.core.engine.step's stages (labs.core.engine.stages), written once over an array
namespace; `estimate()` runs them on one plan's numbers and wraps them in an `Estimate`,
`sweep()` (labs.core.engine.search) on numpy columns of every plan. `Plan`, its checks and `validate`
live in labs.core.engine.plan (re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from labs.core.engine.collectives import CollectiveCost
from labs.core.engine.eras import stack_of
from labs.core.engine.hardware import GPUS, Cluster
from labs.core.engine.layout import RANK_ORDERS
from labs.core.engine.memory import MemoryBreakdown
from labs.core.engine.models import Model
from labs.core.engine.plan import CP_ALGORITHMS, GRAD_REDUCE_DTYPES, PLAN_SCHEDULES, Plan, check_plan_field, plan_columns, validate  # noqa: F401 (re-exported)
from labs.core.engine.stages.inputs import strides
from labs.core.engine.stages.xp import SCALAR
from labs.core.engine.step import CPU_ADAM_BYTES_PER_PARAM, evaluate_plan, plan_outputs
from labs.core.engine.topology import members_per_node
from labs.core.engine.validation import check_positive

LARGE_BUBBLE = 0.10
__all__ = ["CP_ALGORITHMS", "Plan", "Estimate", "TimeBreakdown", "OffloadCost", "CollectiveUse", "estimate", "validate", "memory_breakdown", "plan_columns", "CPU_ADAM_BYTES_PER_PARAM"]


# The dense peak each Plan.precision's MFU is counted against: its format's (NVFP4: the FP4 peak).
PEAK_OF_PRECISION = {"bf16": "bf16_flops", "fp8": "fp8_flops", "mxfp8": "fp8_flops", "fp8_blockwise": "fp8_flops", "nvfp4": "fp4_flops"}


def peak_flops(gpu, precision: str) -> float:
    """The datasheet's dense peak MFU is measured against: a GPU run below its power limit keeps
    the peak of its part (its lowered clock shows as a lower MFU, as published MFUs count it)."""
    return getattr(gpu, PEAK_OF_PRECISION[precision]) / gpu.clock_fraction


@dataclass(frozen=True)
class TimeBreakdown:
    """Seconds per training step. `dp_comm` is the exposed part only."""

    compute: float
    bubble: float
    tp_comm: float
    pp_comm: float
    dp_comm: float
    optimizer: float
    offload: float = 0.0  # exposed PCIe copies and CPU Adam under ZeRO-Offload
    ep_comm: float = 0.0  # mixture-of-experts dispatch and combine all-to-alls

    @property
    def total(self) -> float:
        return self.compute + self.bubble + self.tp_comm + self.pp_comm + self.dp_comm + self.optimizer + self.offload + self.ep_comm

    def as_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in ("compute", "bubble", "tp_comm", "ep_comm", "pp_comm", "dp_comm", "optimizer", "offload")}


@dataclass(frozen=True)
class Estimate:
    model: Model
    cluster: Cluster
    plan: Plan
    fits: bool
    memory: MemoryBreakdown
    time: TimeBreakdown
    bubble_fraction: float  # idle share of the pipeline's wall time
    model_flops_per_step: float
    hardware_flops_per_step: float
    dp_comm_cost: CollectiveCost  # whole step's DP/ZeRO communication before overlap
    dp_exposed_latency_s: float  # the part of time.dp_comm that is latency (alpha) terms
    comm_bytes_per_gpu: dict[str, float]  # bytes each GPU sends per step, by axis
    warnings: tuple[str, ...] = field(default_factory=tuple)
    offload: OffloadCost | None = None  # ZeRO-Offload's copies and CPU Adam, when the plan offloads
    busiest_rank: int = 0  # the pipeline rank whose memory is reported (the largest)
    collectives: tuple[CollectiveUse, ...] = ()  # the communication map: one entry per collective the plan runs
    stage_memory_bytes: tuple[float, float, float] = (0.0, 0.0, 0.0)  # first, middle (the fullest), last pipeline stage

    @property
    def dominant_collective(self) -> CollectiveUse | None:
        """The collective the step waits for longest (largest exposed time; wire time breaks ties)."""
        return max(self.collectives, key=lambda c: (c.exposed_s, c.wire_s), default=None)

    def stage_memory(self, stage: int) -> float:
        """Bytes on a GPU of pipeline stage `stage` (middle stages: the fullest of them)."""
        first, middle, last = self.stage_memory_bytes
        return first if stage == 0 else (last if stage == self.plan.pp - 1 else middle)

    @property
    def hbm_margin_bytes(self) -> float:
        """HBM left on the busiest GPU (negative: over by that much)."""
        return self.cluster.gpu.hbm_bytes - self.memory.total

    @property
    def step_time_s(self) -> float:
        return self.time.total

    @property
    def model_tflops_per_gpu(self) -> float:
        return self.model_flops_per_step / self.step_time_s / self.cluster.gpus / 1e12

    @property
    def hardware_tflops_per_gpu(self) -> float:
        return self.hardware_flops_per_step / self.step_time_s / self.cluster.gpus / 1e12

    @property
    def mfu(self) -> float:
        return self.model_tflops_per_gpu * 1e12 / self.peak_flops

    @property
    def hfu(self) -> float:
        return self.hardware_tflops_per_gpu * 1e12 / self.peak_flops

    @property
    def peak_flops(self) -> float:
        """The dense peak MFU is measured against: BF16's, or FP8's for an FP8 plan (so FP8's
        MFU is a fraction of what its tensor cores could do; its model TFLOP/s compare directly)."""
        return peak_flops(self.cluster.gpu, self.plan.precision)

    @property
    def tokens_per_s(self) -> float:
        return self.plan.global_batch * self.model.seq_len / self.step_time_s

    def days_to_train(self, tokens: float) -> float:
        return tokens / self.tokens_per_s / 86400

    @property
    def dp_exposed_bandwidth_s(self) -> float:
        return self.time.dp_comm - self.dp_exposed_latency_s


# key: (axis, how often it runs, what it moves)
COLLECTIVE_KINDS = {
    "tp": ("TP", "per layer: 2 a pass, forward and backward", "the layer's activations"),
    "cp": ("CP", "per layer, per attention pass", "keys and values"),
    "ep": ("EP", "per MoE layer: dispatch and combine, each pass", "routed tokens"),
    "pp": ("PP", "per micro-batch per stage boundary, each way", "a micro-batch's activations"),
    "dp_reduce": ("DP", "per gradient bucket", "gradients"),
    "dp_gather": ("ZeRO/FSDP", "per bucket (ZeRO-1/2) or per wrapped unit (ZeRO-3)", "weights"),
    "dp_mirror": ("DualPipe", "once a step, per gradient bucket", "the gradients of a stage's two copies"),
}


@dataclass(frozen=True)
class CollectiveUse:
    """One row of the communication map: a collective the plan runs, per GPU per step, priced by
    labs.core.engine.step with the rest of the step (wire: before overlap; exposed: what the step waits for)."""

    key: str  # "tp", "cp", "ep", "pp", "dp_reduce", "dp_gather", "dp_mirror"
    axis: str
    op: str
    frequency: str
    calls: float  # collectives per step on one GPU
    sent_bytes: float  # bytes one GPU sends per step in them
    group: int  # ranks in the group
    members_per_node: int  # of them in one node
    link: str  # the slowest link the group's traffic crosses
    wire_s: float
    exposed_s: float

    @property
    def nodes(self) -> int:
        return -(-self.group // self.members_per_node)

    @property
    def crosses_nodes(self) -> bool:
        return self.nodes > 1


_CP_OPS = {"ulysses": "all-to-all", "all_gather": "all-gather + reduce-scatter"}


# key: (axis, frequency) for the collectives' fixed fields
_COLLECTIVE_FIELDS = tuple((key, axis, frequency) for key, (axis, frequency, _) in COLLECTIVE_KINDS.items())
_FIXED_OPS = {"ep": "all-to-all", "pp": "send/recv", "dp_gather": "all-gather", "dp_mirror": "all-reduce"}


def _collectives(cluster: Cluster, plan: Plan, terms: dict) -> tuple[CollectiveUse, ...]:
    """The communication map from labs.core.engine.step.collective_terms (floats): the collectives
    the plan runs (calls > 0), each with the members of its group that share a node."""
    intra, inter = cluster.intra.name, cluster.inter.name
    out = []
    for key, axis, frequency in _COLLECTIVE_FIELDS:
        calls, sent, wire, exposed, group, spacing = terms[key]
        if calls <= 0:
            continue
        g = round(members_per_node(cluster, group, spacing, SCALAR))  # round() of a float is an int
        group = round(group)
        out.append(_new(CollectiveUse, {"key": key, "axis": axis, "op": _FIXED_OPS.get(key) or _op(key, plan), "frequency": frequency,
                                        "calls": calls, "sent_bytes": sent, "group": group, "members_per_node": g,
                                        "link": intra if g >= group else inter, "wire_s": wire, "exposed_s": exposed}))
    return tuple(out)


def _op(key: str, plan: Plan) -> str:
    """The operation of the collectives whose kind depends on the plan (TP, CP, the DP reduction)."""
    if key == "tp":
        return "all-gather + reduce-scatter" if plan.sequence_parallel else "all-reduce"
    if key == "cp":
        return _CP_OPS.get(plan.cp_algorithm, "ring send/recv")
    return "all-reduce" if plan.zero_stage == 0 else "reduce-scatter"


def _new(cls, fields: dict):
    """cls(**fields) for a frozen dataclass of plain fields (no __post_init__), every field
    given: the instance its __init__ would build, without that __init__'s object.__setattr__
    per field (estimate() builds up to ten of them a plan; tests/test_estimate_paths.py
    holds each equal to its constructor's)."""
    instance = object.__new__(cls)
    instance.__dict__.update(fields)  # filled in place: replacing the __dict__ costs twice as much
    return instance


def _run(model: Model, cluster: Cluster, plan: Plan) -> dict[str, float]:
    return evaluate_plan(model, cluster, plan_columns(plan), plan.dp_algorithm, stack_of(plan.stack))


def _outputs(model: Model, cluster: Cluster, plan: Plan) -> tuple[dict, dict]:
    return plan_outputs(model, cluster, plan_columns(plan), plan.dp_algorithm, stack_of(plan.stack))


def memory_breakdown(model: Model, plan: Plan) -> MemoryBreakdown:
    """Bytes on the busiest GPU (the pipeline rank that holds the most): model state under the
    plan's ZeRO stage, activations under its TP/SP/recompute and schedule, and the runtime's own."""
    if not isinstance(plan, Plan):
        raise ValueError(f"plan must be a Plan, got {plan!r}")
    check_positive("gpus", plan.gpus, integer=True, maximum=1 << 17)
    cluster = Cluster(GPUS["h100-sxm"], gpus_per_node=1, nodes=plan.gpus)  # memory does not depend on the wires
    validate(model, cluster, plan)
    return _memory(_outputs(model, cluster, plan)[0])


def _memory(r: dict) -> MemoryBreakdown:
    return _new(MemoryBreakdown, {"weights": r["weights_bytes"], "gradients": r["gradients_bytes"], "optimizer": r["optimizer_bytes"],
                                  "activations": r["activations_bytes"], "buffers": r["buffers_bytes"], "logits": r["logits_bytes"],
                                  "cuda_context": r["cuda_context_bytes"], "communicators": r["communicators_bytes"],
                                  "tp_overlap": r["tp_overlap_bytes"], "fragmentation": r["fragmentation_bytes"]})


def estimate(model: Model, cluster: Cluster, plan: Plan) -> Estimate:
    """Memory, time and utilisation of one training step of `model` on `cluster` under `plan`."""
    validate(model, cluster, plan)
    r, terms = _outputs(model, cluster, plan)
    time = _new(TimeBreakdown, {"compute": r["compute_s"], "bubble": r["bubble_s"], "tp_comm": r["tp_comm_s"], "pp_comm": r["pp_comm_s"],
                                "dp_comm": r["dp_comm_s"], "optimizer": r["optimizer_s"], "offload": r["offload_s"], "ep_comm": r["ep_comm_s"]})
    memory = _memory(r)
    fits = memory.total <= cluster.gpu.hbm_bytes
    offload = None
    if plan.offload_optimizer:
        offload = OffloadCost(r["offload_down_s"], r["cpu_adam_s"], r["offload_up_s"], r["offload_s"], r["pcie_bytes"], r["host_bytes_per_node"])
    return _new(Estimate, {
        "model": model, "cluster": cluster, "plan": plan, "fits": fits, "memory": memory, "time": time, "bubble_fraction": r["bubble_fraction"],
        "model_flops_per_step": r["model_flops"], "hardware_flops_per_step": r["hardware_flops"],
        "dp_comm_cost": _new(CollectiveCost, {"latency_s": r["dp_latency_s"], "bandwidth_s": r["dp_total_s"] - r["dp_latency_s"]}),
        "dp_exposed_latency_s": r["dp_exposed_latency_s"],
        "comm_bytes_per_gpu": {"tp": r["tp_bytes"], "pp": r["pp_bytes"], "dp": r["dp_bytes"], "pcie": r["pcie_bytes"]},
        "warnings": _warnings(model, cluster, plan, r, terms, memory, fits, time.total, offload), "offload": offload,
        "busiest_rank": round(r["busiest_rank"]), "collectives": _collectives(cluster, plan, terms),
        "stage_memory_bytes": (r["memory_first_bytes"], r["memory_middle_bytes"], r["memory_last_bytes"]),
    })


@dataclass(frozen=True)
class OffloadCost:
    """One step of ZeRO-Offload on one GPU (Ren et al. 2021 Sec. 4-5). The bf16 gradient
    shard goes down to the host while the last backward runs (hidden up to that backward's
    length); the CPU then runs Adam over the shard, streaming host DRAM; the updated bf16
    weights come back up before the next forward. The last two are exposed."""

    down_s: float
    cpu_adam_s: float
    up_s: float
    exposed_s: float
    pcie_bytes: float
    host_bytes_per_node: float  # CPU memory the node's ranks keep offloaded


def _warnings(model, cluster, plan, r, terms, memory, fits, step, offload) -> tuple[str, ...]:
    out = []
    bubble, dp_exposed = r["bubble_fraction"], r["dp_comm_s"]
    if offload:
        host = offload.host_bytes_per_node
        if host > cluster.host.memory_bytes:
            out.append(
                f"Offloaded state needs {host / 1e9:,.0f} GB of CPU memory per node, more than the host's "
                f"{cluster.host.memory_bytes / 1e9:,.0f} GB"
            )
    if 1 < plan.tp <= cluster.domain_gpus and members_per_node(cluster, *terms["tp"][4:], SCALAR) < plan.tp:  # the rank order spreads TP over NVLink domains
        tp_stride = strides(RANK_ORDERS.index(plan.rank_order), float(plan.tp), float(plan.cp), float(plan.dp), float(plan.pp), SCALAR)["tp"]
        out.append(
            f"Rank order {plan.rank_order} places the {plan.tp} GPUs of each TP group {tp_stride:g} ranks apart: every group "
            f"spans nodes, so its per-layer collectives leave {cluster.intra.name} for {cluster.inter.name}"
        )
    if plan.tp > cluster.domain_gpus:
        nvlink = cluster.intra.effective_bytes_per_s / 1e9
        nic = cluster.inter.effective_bytes_per_s / 1e9
        out.append(
            f"TP={plan.tp} spans nodes of {cluster.domain_gpus} GPUs: its per-layer collectives leave {cluster.intra.name} "
            f"({nvlink:.0f} GB/s of bus bandwidth) for the node's {cluster.rails} {cluster.inter.name} NICs ({nic:.0f} GB/s each), "
            "pay network latency on every layer, and cannot be overlapped by Transformer Engine outside the NVLink domain"
        )
    if not fits:
        term = memory.largest_term()
        out.append(
            f"Out of memory: {memory.total / 1e9:.1f} GB per GPU > {cluster.gpu.hbm_bytes / 1e9:.1f} GB; "
            f"largest term is {term} ({memory.as_dict()[term] / 1e9:.1f} GB)"
        )
    if model.layers % (plan.pp * plan.virtual_stages):
        heavy = int(r["layers_per_stage"])
        out.append(f"{model.layers} layers do not split evenly over pp x v = {plan.pp * plan.virtual_stages}: the heaviest stage holds {heavy} layers and sets the pace")
    if bubble > LARGE_BUBBLE:
        out.append(f"Pipeline bubble is {bubble:.0%} of the step (pp={plan.pp}, {plan.microbatches} micro-batches)")
    if dp_exposed > 0.2 * step:
        out.append(f"Data-parallel communication leaves {dp_exposed / step:.0%} of the step exposed")
    return tuple(out)
