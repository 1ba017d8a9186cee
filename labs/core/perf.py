"""A training step: `Plan` in, `Estimate` out (memory, step time, MFU/HFU, bubble, warnings).

The physics lives in labs.core.step, written once over numpy columns; `estimate()` runs it on
one plan and wraps the numbers in an `Estimate`, `sweep()` (labs.core.search) on every plan.
`Plan.for_era(...)` fills the defaults of a published run's software (labs.core.eras).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from labs.core.collectives import CollectiveCost
from labs.core.context import check_ulysses
from labs.core.eras import ERA_NAMES, GRAD_SYNCS, check_plan_in_era, get_era, stack_of
from labs.core.hardware import GPUS, Cluster
from labs.core.layout import RANK_ORDERS
from labs.core.memory import OPTIMIZER_STATES, ZERO_STAGES, MemoryBreakdown, optimizer_state
from labs.core.models import ALL_RECOMPUTE_MODES, Model
from labs.core.pipeline import SCHEDULES
from labs.core.stages.inputs import strides
from labs.core.stages.xp import SCALAR
from labs.core.step import CPU_ADAM_BYTES_PER_PARAM, evaluate_plan
from labs.core.topology import DP_ALGORITHMS, check_algorithm, members_per_node
from labs.core.validation import check_bool, check_choice, check_positive

PLAN_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1")
GRAD_REDUCE_DTYPES = ("bf16", "fp32")
# Context parallelism: "ring" (Transformer Engine: K/V blocks passed around the CP group,
# overlapped with attention, the sequence split zig-zag so causal work is balanced),
# "all_gather" (Llama 3: K and V gathered before attention), "ulysses" (DeepSpeed-Ulysses: two
# all-to-alls per attention pass, degree bounded by the KV heads per TP rank) and
# "ring_contiguous" (Ring Attention over contiguous blocks: the causal mask leaves the last rank
# 2 - 1/cp times the mean work). labs.core.context holds the split and head arithmetic.
CP_ALGORITHMS = ("ring", "all_gather", "ulysses", "ring_contiguous")
LARGE_BUBBLE = 0.10
__all__ = ["CP_ALGORITHMS", "Plan", "Estimate", "TimeBreakdown", "OffloadCost", "CollectiveUse", "estimate", "validate", "memory_breakdown", "plan_columns", "CPU_ADAM_BYTES_PER_PARAM"]


_COUNT_LIMITS = {"ep": 1 << 20, "tp": 1 << 20, "pp": 1 << 20, "dp": 1 << 20, "cp": 1 << 20, "virtual_stages": 1 << 10, "micro_batch": 1 << 20, "global_batch": 1 << 31}
_FLAGS = ("sequence_parallel", "flash_attention", "dp_overlap", "pp_overlap", "offload_optimizer", "tp_comm_overlap", "reshard_after_forward", "torch_compile")
_CHOICES = {
    "zero_stage": ZERO_STAGES, "recompute": ALL_RECOMPUTE_MODES, "schedule": PLAN_SCHEDULES, "dp_algorithm": DP_ALGORITHMS,
    "optimizer_state": tuple(OPTIMIZER_STATES), "grad_reduce_dtype": GRAD_REDUCE_DTYPES,
    "cp_algorithm": CP_ALGORITHMS,
    "precision": ("bf16", "fp8"),
    "rank_order": RANK_ORDERS,
    "stack": ERA_NAMES + (None,),
    "grad_sync": GRAD_SYNCS,
}


def check_plan_field(name: str, value) -> None:
    """The checks of one Plan field on its own (Plan and sweep() both call it)."""
    if name in _COUNT_LIMITS:
        check_positive(name, value, integer=True, maximum=_COUNT_LIMITS[name])
    elif name in _FLAGS:
        check_bool(name, value)
    elif name in _CHOICES:
        check_choice(name, value, _CHOICES[name])
    elif name in ("first_stage_layers", "last_stage_layers"):
        if value is not None:
            check_positive(name, value, integer=True, allow_zero=True, maximum=1 << 20)
    elif name == "capacity_factor":
        if value is not None:
            check_positive(name, value, maximum=1024)
            if value < 1:
                raise ValueError(f"capacity_factor must be at least 1 (1: exactly the balanced load), got {value!r}")
    elif name == "recompute_layers":
        if value is not None:
            check_positive(name, value, integer=True, allow_zero=True, maximum=1 << 20)
    elif name in ("microbatch_group_size", "shard_group_size", "max_nodes_per_token"):
        if value is not None:
            check_positive(name, value, integer=True, maximum=1 << 20)
    elif name == "bucket_bytes":
        if value is not None:
            check_positive("bucket_bytes", value, maximum=1e15)
            if value < 1:
                raise ValueError(f"bucket_bytes must be at least 1 byte, got {value!r}")
    else:
        raise ValueError(f"unknown Plan field {name!r}")


@dataclass(frozen=True)
class Plan:
    """A parallel layout and its training settings. Validated against a model and a cluster
    by `estimate()`; the checks that need neither run here."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    micro_batch: int = 1
    global_batch: int = 1
    zero_stage: int = 0
    recompute: str = "none"
    sequence_parallel: bool = False
    schedule: str = "1f1b"
    virtual_stages: int = 1
    cp: int = 1
    flash_attention: bool = True  # attention scores never reach HBM (Dao et al. 2022); off in the 2021 eras
    dp_algorithm: str = "auto"  # NCCL's choice, or "ring", "tree", "nvls"; see labs.core.topology
    dp_overlap: bool = True  # gradient reduction overlaps the backward (Megatron-LM 2021: after it)
    pp_overlap: bool = True  # steady-state send/recv hidden behind compute (Megatron-LM 2021: blocking)
    bucket_bytes: float | None = None  # None: Megatron's bucket, max(40M, 1M x dp) parameters
    optimizer_state: str = "fp32"  # a key of labs.core.memory.OPTIMIZER_STATES
    offload_optimizer: bool = False  # ZeRO-Offload: gradients shard, optimizer state and Adam on the CPU
    tp_comm_overlap: bool = False  # TE userbuffers: TP collectives pipelined with the GEMMs (needs SP)
    grad_reduce_dtype: str = "bf16"  # "fp32": Megatron's bf16 default, fp32 main grads reduced in fp32
    first_stage_layers: int | None = None  # None: an even split; 0: the first stage holds only the embedding
    last_stage_layers: int | None = None  # None: an even split; 0: the last stage holds only the output layer and loss
    microbatch_group_size: int | None = None  # interleaving's N (Megatron's default: pp)
    reshard_after_forward: bool = True  # False with zero_stage=3: FSDP keeps the gathered weights through the step (Llama 3)
    shard_group_size: int | None = None  # hybrid sharding: shard over this many of the dp x cp ranks, replicate across the rest
    cp_algorithm: str = "ring"  # context parallelism: "ring" (TE, overlapped with attention) or "all_gather" (Llama 3)
    precision: str = "bf16"  # "fp8": the layers' GEMMs in FP8 (Transformer Engine); MFU then against the FP8 peak
    ep: int = 1  # expert parallelism: routed experts split over this many of the dp x cp ranks
    capacity_factor: float | None = None  # None: no token dropping (balanced routing); c: experts padded to c x balanced load
    max_nodes_per_token: int | None = None  # node-limited routing (DeepSeek-V3: 4)
    rank_order: str = RANK_ORDERS[0]  # which axis varies fastest along the ranks (labs.core.layout); Megatron's by default
    stack: str | None = None  # the software stack (an era of labs.core.eras) whose kernels run; None: Megatron-Core's
    grad_sync: str | None = None  # "step" (no_sync) or "microbatch"; None: the ZeRO stage's own (step up to ZeRO-1)
    torch_compile: bool = False  # PyTorch stacks: element-wise ops fused and fewer kernels launched
    recompute_layers: int | None = None  # with recompute="full": layers of each pipeline chunk re-run (Megatron's --recompute-num-layers, block method); None: all

    def __post_init__(self):
        for name in self.__dataclass_fields__:
            check_plan_field(name, getattr(self, name))
        if self.offload_optimizer and self.zero_stage == 0:
            raise ValueError("offload_optimizer needs zero_stage >= 1 (each rank offloads its ZeRO shard), got zero_stage=0")
        if self.tp_comm_overlap and not self.sequence_parallel:
            raise ValueError("tp_comm_overlap needs sequence_parallel=True (Megatron-LM asserts it: the overlap pipelines SP's all-gathers and reduce-scatters)")
        if self.bucket_bytes is not None:
            check_positive("bucket_bytes", self.bucket_bytes, maximum=1e15)
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            raise ValueError(f"virtual_stages must be 1 unless schedule='interleaved', got {self.virtual_stages} with schedule={self.schedule!r}")
        if self.global_batch % (self.micro_batch * self.dp):
            raise ValueError(
                f"global_batch must be a multiple of micro_batch x dp = {self.micro_batch * self.dp}, got {self.global_batch}"
            )
        group = self.microbatch_group_size or self.pp
        if self.schedule == "interleaved" and self.pp > 1 and self.microbatches % group:
            raise ValueError(f"global_batch / (micro_batch x dp) = {self.microbatches} micro-batches must be a multiple of microbatch_group_size={group} (default pp) for the interleaved schedule")
        if self.schedule == "interleaved" and self.pp > 1 and group < self.pp:
            # Megatron-LM refuses N < pp (labs.core.pipeline.check_group): its order would wait on itself.
            raise ValueError(f"microbatch_group_size must be at least pp={self.pp} (Megatron-LM's range [pp, micro-batches]), got {group}")
        if self.microbatch_group_size is not None and self.schedule != "interleaved":
            raise ValueError(f"microbatch_group_size applies to the interleaved schedule only, got schedule={self.schedule!r}")
        if not self.reshard_after_forward and self.zero_stage != 3:
            raise ValueError(f"reshard_after_forward=False needs zero_stage=3 (FSDP), got zero_stage={self.zero_stage}")
        if self.shard_group_size is not None:
            if self.zero_stage == 0:
                raise ValueError("shard_group_size needs zero_stage >= 1: it is the group the ZeRO/FSDP state is sharded over")
            if (self.dp * self.cp) % self.shard_group_size:
                raise ValueError(f"shard_group_size must divide dp x cp = {self.dp * self.cp}, got {self.shard_group_size}")
        if (self.dp * self.cp) % self.ep:
            raise ValueError(f"ep must divide dp x cp = {self.dp * self.cp} (experts are spread over data-parallel ranks), got {self.ep}")
        if (self.first_stage_layers is not None or self.last_stage_layers is not None) and self.pp < 2:
            raise ValueError(f"first_stage_layers and last_stage_layers need pp >= 2, got pp={self.pp}")
        if self.tp_comm_overlap and self.tp > 1 and stack_of(self.stack).tp_overlap_kind == "async_tp" and not self.torch_compile:
            raise ValueError(f"tp_comm_overlap in stack {self.stack!r} is AsyncTP, which needs torch_compile=True (torchtitan applies it as a compiler pass)")
        if self.recompute_layers is not None and self.recompute != "full":
            raise ValueError(f"recompute_layers needs recompute='full' (Megatron's --recompute-num-layers with --recompute-granularity full), got recompute={self.recompute!r}")
        if self.grad_sync == "step" and self.offload_optimizer and self.zero_stage >= 2:
            raise ValueError("grad_sync='step' keeps whole gradients on the GPU, which ZeRO-Offload from stage 2 streams out: use grad_sync=None")

    @classmethod
    def for_era(cls, era: str | None, **fields) -> "Plan":
        """A plan with the era's defaults for every field not given; a value the era's
        software did not have is refused, naming the field and the era."""
        unknown = set(fields) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown Plan field(s) {sorted(unknown)}")
        for name, value in fields.items():
            check_plan_field(name, value)
        spec = get_era(era)
        if spec is None:
            return cls(**fields)
        if fields.get("stack", era) != era:
            raise ValueError(f"stack={fields['stack']!r} differs from era {era!r}: an era runs its own stack")
        values = {**spec.defaults(), **fields, "stack": era}
        if values["schedule"] == "interleaved" and ("schedule" not in fields and (fields.get("virtual_stages", 1) == 1 or fields.get("pp", 1) < spec.interleave_min_pp)):
            values["schedule"] = "1f1b"
        if values["tp_comm_overlap"] and not values["sequence_parallel"]:
            values["tp_comm_overlap"] = "tp_comm_overlap" in fields
        check_plan_in_era(spec, values)
        return cls(**values)

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def microbatches(self) -> int:
        """m: micro-batches each pipeline runs per step."""
        return self.global_batch // (self.micro_batch * self.dp)

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def peak_flops(gpu, precision: str) -> float:
    return gpu.fp8_flops if precision == "fp8" else gpu.bf16_flops


def validate(model: Model, cluster: Cluster, plan: Plan) -> None:
    """Raise ValueError naming the field when the plan does not fit this model and cluster."""
    for name, value, kind in (("model", model, Model), ("cluster", cluster, Cluster), ("plan", plan, Plan)):
        if not isinstance(value, kind):
            raise ValueError(f"{name} must be a {kind.__name__}, got {value!r}")
    if plan.gpus != cluster.gpus:
        raise ValueError(
            f"tp x pp x dp x cp = {plan.tp} x {plan.pp} x {plan.dp} x {plan.cp} = {plan.gpus} must equal the cluster's "
            f"{cluster.gpus} GPUs (e.g. dp = {cluster.gpus / (plan.tp * plan.pp * plan.cp):g})"
        )
    if model.heads % plan.tp:
        raise ValueError(f"tp must divide the model's {model.heads} heads, got tp={plan.tp}")
    custom = plan.first_stage_layers is not None or plan.last_stage_layers is not None
    if not custom and plan.pp * plan.virtual_stages > model.layers:
        raise ValueError(
            f"pp x virtual_stages must not exceed the model's {model.layers} layers, got {plan.pp} x {plan.virtual_stages} "
            "(give first_stage_layers / last_stage_layers for chunks that hold only the embedding or the loss)"
        )
    if custom:
        ends = (plan.first_stage_layers or 0) + (plan.last_stage_layers or 0)
        given = [x for x in (plan.first_stage_layers, plan.last_stage_layers) if x is not None]
        if plan.pp == 2 and len(given) == 2 and ends != model.layers:
            raise ValueError(f"first_stage_layers + last_stage_layers must equal the model's {model.layers} layers at pp=2, got {ends}")
        if sum(given) > model.layers - (plan.pp - 2) and plan.pp > 2:
            raise ValueError(f"first_stage_layers + last_stage_layers = {sum(given)} leave fewer than one layer for each of the {plan.pp - 2} middle stages of {model.layers}")
    if model.seq_len % plan.cp:
        raise ValueError(f"cp must divide seq_len={model.seq_len}, got cp={plan.cp}")
    if plan.cp_algorithm == "ulysses":
        check_ulysses(model, plan.tp, plan.cp)
    check_algorithm(cluster, plan.dp_algorithm)
    if plan.ep > 1 and (not model.experts or model.experts % plan.ep):
        raise ValueError(f"ep must divide the model's {model.experts} routed experts, got ep={plan.ep}")
    if (plan.capacity_factor is not None or plan.max_nodes_per_token is not None) and not model.experts:
        raise ValueError(f"capacity_factor and max_nodes_per_token apply to mixture-of-experts models; {model.name} is dense")
    if plan.precision == "fp8" and not cluster.gpu.fp8_mamf_flops:
        raise ValueError(f"precision='fp8' needs FP8 tensor cores, which {cluster.gpu.name} does not have; use 'bf16'")


def plan_columns(plan: Plan) -> dict:
    """The plan as the step model's columns (labs.core.step.evaluate)."""
    return {
        "tp": plan.tp, "pp": plan.pp, "dp": plan.dp, "cp": plan.cp, "micro_batch": plan.micro_batch,
        "global_batch": plan.global_batch, "zero_stage": plan.zero_stage,
        "recompute": ALL_RECOMPUTE_MODES.index(plan.recompute), "sequence_parallel": plan.sequence_parallel,
        "schedule": SCHEDULES.index(plan.schedule), "virtual_stages": plan.virtual_stages,
        "flash_attention": plan.flash_attention, "tp_comm_overlap": plan.tp_comm_overlap,
        "grad_fp32": plan.grad_reduce_dtype == "fp32", "dp_overlap": plan.dp_overlap, "pp_overlap": plan.pp_overlap,
        "bucket_bytes": plan.bucket_bytes or 0.0, "optimizer_bytes": optimizer_state(plan.optimizer_state).bytes_per_param,
        "offload": plan.offload_optimizer,
        "first_stage_layers": -1 if plan.first_stage_layers is None else plan.first_stage_layers,
        "last_stage_layers": -1 if plan.last_stage_layers is None else plan.last_stage_layers,
        "microbatch_group_size": -1 if plan.microbatch_group_size is None else plan.microbatch_group_size,
        "reshard_after_forward": plan.reshard_after_forward,
        "shard_group_size": -1 if plan.shard_group_size is None else plan.shard_group_size,
        "cp_ring": plan.cp_algorithm in ("ring", "ring_contiguous"),
        "cp_ulysses": plan.cp_algorithm == "ulysses",
        "cp_contiguous": plan.cp_algorithm == "ring_contiguous",
        "fp8": plan.precision == "fp8",
        "ep": plan.ep, "capacity_factor": plan.capacity_factor or 0.0, "max_nodes_per_token": plan.max_nodes_per_token or 0,
        "rank_order": RANK_ORDERS.index(plan.rank_order),
        "grad_sync": GRAD_SYNCS.index(plan.grad_sync), "torch_compile": plan.torch_compile,
        "recompute_layers": -1 if plan.recompute_layers is None else plan.recompute_layers,
    }


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
}


@dataclass(frozen=True)
class CollectiveUse:
    """One row of the communication map: a collective the plan runs, per GPU per step, priced by
    labs.core.step with the rest of the step (wire: before overlap; exposed: what the step waits for)."""

    key: str  # "tp", "cp", "ep", "pp", "dp_reduce", "dp_gather"
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


def _collectives(cluster: Cluster, plan: Plan, r: dict) -> tuple[CollectiveUse, ...]:
    ops = {
        "tp": "all-gather + reduce-scatter" if plan.sequence_parallel else "all-reduce",
        "cp": {"ulysses": "all-to-all", "all_gather": "all-gather + reduce-scatter"}.get(plan.cp_algorithm, "ring send/recv"),
        "ep": "all-to-all",
        "pp": "send/recv",
        "dp_reduce": "all-reduce" if plan.zero_stage == 0 else "reduce-scatter",
        "dp_gather": "all-gather",
    }
    out = []
    for key, (axis, frequency, _) in COLLECTIVE_KINDS.items():
        calls = r[f"coll_{key}_calls"]
        if calls <= 0:
            continue
        group, g = int(round(r[f"coll_{key}_group"])), int(round(r[f"coll_{key}_members_per_node"]))
        link = cluster.intra.name if g >= group else cluster.inter.name
        out.append(CollectiveUse(key, axis, ops[key], frequency, calls, r[f"coll_{key}_sent_bytes"], group, g, link,
                                 r[f"coll_{key}_wire_s"], r[f"coll_{key}_exposed_s"]))
    return tuple(out)


def _run(model: Model, cluster: Cluster, plan: Plan) -> dict[str, float]:
    return evaluate_plan(model, cluster, plan_columns(plan), plan.dp_algorithm, stack_of(plan.stack))


def layer_times(hidden: int, heads: int, seq_len: int, micro_batch: int, gpu_key: str) -> dict[str, float]:
    """One GPT layer's forward, input-gradient and weight-gradient seconds for one micro-batch on
    one GPU without TP, flash attention or recomputation (the step model's layer terms)."""
    model = Model("layer", 1, hidden, heads, seq_len, 1)
    cluster = Cluster(GPUS[gpu_key], gpus_per_node=1, nodes=1)
    r = _run(model, cluster, Plan(micro_batch=micro_batch, global_batch=micro_batch, flash_attention=False))
    return {k: r[k] for k in ("layer_forward_s", "layer_input_grad_s", "layer_weight_grad_s")}


def memory_breakdown(model: Model, plan: Plan) -> MemoryBreakdown:
    """Bytes on the busiest GPU (the pipeline rank that holds the most): model state under the
    plan's ZeRO stage, activations under its TP/SP/recompute and schedule, and the runtime's own."""
    if not isinstance(plan, Plan):
        raise ValueError(f"plan must be a Plan, got {plan!r}")
    check_positive("gpus", plan.gpus, integer=True, maximum=1 << 17)
    cluster = Cluster(GPUS["h100-sxm"], gpus_per_node=1, nodes=plan.gpus)  # memory does not depend on the wires
    validate(model, cluster, plan)
    return _memory(_run(model, cluster, plan))


def _memory(r: dict) -> MemoryBreakdown:
    return MemoryBreakdown(r["weights_bytes"], r["gradients_bytes"], r["optimizer_bytes"], r["activations_bytes"], r["buffers_bytes"])


def estimate(model: Model, cluster: Cluster, plan: Plan) -> Estimate:
    """Memory, time and utilisation of one training step of `model` on `cluster` under `plan`."""
    validate(model, cluster, plan)
    r = _run(model, cluster, plan)
    time = TimeBreakdown(r["compute_s"], r["bubble_s"], r["tp_comm_s"], r["pp_comm_s"], r["dp_comm_s"], r["optimizer_s"], r["offload_s"], r["ep_comm_s"])
    memory = _memory(r)
    fits = memory.total <= cluster.gpu.hbm_bytes
    offload = None
    if plan.offload_optimizer:
        offload = OffloadCost(r["offload_down_s"], r["cpu_adam_s"], r["offload_up_s"], r["offload_s"], r["pcie_bytes"], r["host_bytes_per_node"])
    dp_cost = CollectiveCost(r["dp_latency_s"], r["dp_total_s"] - r["dp_latency_s"])
    warnings = _warnings(model, cluster, plan, memory, fits, r["bubble_fraction"], r["dp_comm_s"], time.total, offload, int(r["layers_per_stage"]))
    return Estimate(
        model, cluster, plan, fits, memory, time, r["bubble_fraction"], r["model_flops"], r["hardware_flops"],
        dp_cost, r["dp_exposed_latency_s"],
        {"tp": r["tp_bytes"], "pp": r["pp_bytes"], "dp": r["dp_bytes"], "pcie": r["pcie_bytes"]},
        tuple(warnings), offload, int(round(r["busiest_rank"])),
        _collectives(cluster, plan, r), (r["memory_first_bytes"], r["memory_middle_bytes"], r["memory_last_bytes"]),
    )


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


def _warnings(model, cluster, plan, memory, fits, bubble, dp_exposed, step, offload, heavy) -> list[str]:
    out = []
    if offload:
        host = offload.host_bytes_per_node
        if host > cluster.host.memory_bytes:
            out.append(
                f"Offloaded state needs {host / 1e9:,.0f} GB of CPU memory per node, more than the host's "
                f"{cluster.host.memory_bytes / 1e9:,.0f} GB"
            )
    tp_stride = strides(RANK_ORDERS.index(plan.rank_order), float(plan.tp), float(plan.cp), float(plan.dp), float(plan.pp), SCALAR)["tp"]
    if plan.tp <= cluster.gpus_per_node and plan.tp > 1 and members_per_node(cluster, plan.tp, tp_stride, SCALAR) < plan.tp:
        out.append(
            f"Rank order {plan.rank_order} places the {plan.tp} GPUs of each TP group {tp_stride:g} ranks apart: every group "
            f"spans nodes, so its per-layer collectives leave {cluster.intra.name} for {cluster.inter.name}"
        )
    if plan.tp > cluster.gpus_per_node:
        nvlink = cluster.intra.effective_bytes_per_s / 1e9
        nic = cluster.inter.effective_bytes_per_s / 1e9
        out.append(
            f"TP={plan.tp} spans nodes of {cluster.gpus_per_node} GPUs: its per-layer collectives leave {cluster.intra.name} "
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
        out.append(f"{model.layers} layers do not split evenly over pp x v = {plan.pp * plan.virtual_stages}: the heaviest stage holds {heavy} layers and sets the pace")
    if bubble > LARGE_BUBBLE:
        out.append(f"Pipeline bubble is {bubble:.0%} of the step (pp={plan.pp}, {plan.microbatches} micro-batches)")
    if dp_exposed > 0.2 * step:
        out.append(f"Data-parallel communication leaves {dp_exposed / step:.0%} of the step exposed")
    return out
