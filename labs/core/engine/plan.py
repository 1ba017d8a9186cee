"""A training plan: `Plan` (a parallel layout and its training settings), the checks of its
fields, `validate` against a model and a cluster, and `plan_columns`, the plan as the step
model's columns (labs.core.engine.step). `Plan.for_era(...)` fills the defaults of a published run's
software (labs.core.engine.eras).
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.core.engine.context import check_ulysses
from labs.core.engine.eras import ERA_NAMES, GRAD_SYNCS, check_plan_in_era, check_stack_on_gpu, get_era, stack_of
from labs.core.engine.hardware import Cluster
from labs.core.engine.layout import RANK_ORDERS
from labs.core.engine.memory import OPTIMIZER_STATES, ZERO_STAGES
from labs.core.engine.models import ALL_RECOMPUTE_MODES, Model
from labs.core.engine.pipeline import SCHEDULES, check_dualpipe
from labs.core.engine.precision import PRECISIONS, check_precision_on
from labs.core.engine.topology import DP_ALGORITHMS, check_cluster_has
from labs.core.engine.validation import check_bool, check_choice, check_positive

# DualPipe (DeepSeek-V3; deepseek-ai/DualPipe): bidirectional, each rank holding two chunks, the
# expert all-to-alls of a forward hidden behind a backward's compute and back (labs.core.engine.pipeline).
PLAN_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1", "dualpipe")
GRAD_REDUCE_DTYPES = ("bf16", "fp32")
# Context parallelism: "ring" (Transformer Engine: K/V blocks passed around the CP group,
# overlapped with attention, the sequence split zig-zag so causal work is balanced),
# "all_gather" (Llama 3: K and V gathered before attention), "ulysses" (DeepSpeed-Ulysses: two
# all-to-alls per attention pass, degree bounded by the KV heads per TP rank) and
# "ring_contiguous" (Ring Attention over contiguous blocks: the causal mask leaves the last rank
# 2 - 1/cp times the mean work). labs.core.engine.context holds the split and head arithmetic.
CP_ALGORITHMS = ("ring", "all_gather", "ulysses", "ring_contiguous")


_COUNT_LIMITS = {"ep": 1 << 20, "tp": 1 << 20, "pp": 1 << 20, "dp": 1 << 20, "cp": 1 << 20, "virtual_stages": 1 << 10, "micro_batch": 1 << 20, "global_batch": 1 << 31}
_FLAGS = ("sequence_parallel", "flash_attention", "dp_overlap", "pp_overlap", "offload_optimizer", "tp_comm_overlap", "reshard_after_forward", "torch_compile")
_CHOICES = {
    "zero_stage": ZERO_STAGES, "recompute": ALL_RECOMPUTE_MODES, "schedule": PLAN_SCHEDULES, "dp_algorithm": DP_ALGORITHMS,
    "optimizer_state": tuple(OPTIMIZER_STATES), "grad_reduce_dtype": GRAD_REDUCE_DTYPES,
    "cp_algorithm": CP_ALGORITHMS,
    "precision": PRECISIONS,
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
    elif name == "expert_skew":
        check_positive(name, value, maximum=1 << 20)
        if value < 1:
            raise ValueError(f"expert_skew must be at least 1 (1: balanced routing, the busiest rank's load over the mean), got {value!r}")
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
    dp_algorithm: str = "auto"  # NCCL's choice, or "ring", "tree", "nvls"; see labs.core.engine.topology
    dp_overlap: bool = True  # gradient reduction overlaps the backward (Megatron-LM 2021: after it)
    pp_overlap: bool = True  # steady-state send/recv hidden behind compute (Megatron-LM 2021: blocking)
    bucket_bytes: float | None = None  # None: Megatron's bucket, max(40M, 1M x dp) parameters
    optimizer_state: str = "fp32"  # a key of labs.core.engine.memory.OPTIMIZER_STATES
    offload_optimizer: bool = False  # ZeRO-Offload: gradients shard, optimizer state and Adam on the CPU
    tp_comm_overlap: bool = False  # TE userbuffers: TP collectives pipelined with the GEMMs (needs SP)
    grad_reduce_dtype: str = "bf16"  # "fp32": Megatron's bf16 default, fp32 main grads reduced in fp32
    first_stage_layers: int | None = None  # None: an even split; 0: the first stage holds only the embedding
    last_stage_layers: int | None = None  # None: an even split; 0: the last stage holds only the output layer and loss
    microbatch_group_size: int | None = None  # interleaving's N (Megatron's default: pp)
    reshard_after_forward: bool = True  # False with zero_stage=3: FSDP keeps the gathered weights through the step (Llama 3)
    shard_group_size: int | None = None  # hybrid sharding: shard over this many of the dp x cp ranks, replicate across the rest
    cp_algorithm: str = "ring"  # context parallelism: "ring" (TE, overlapped with attention) or "all_gather" (Llama 3)
    precision: str = "bf16"  # the layers' GEMMs: "fp8" (per-tensor), "mxfp8", "nvfp4", "fp8_blockwise" (labs.core.engine.precision); MFU then against that format's peak
    ep: int = 1  # expert parallelism: routed experts split over this many of the dp x cp ranks
    capacity_factor: float | None = None  # None: no token dropping (balanced routing); c: experts padded to c x balanced load
    max_nodes_per_token: int | None = None  # node-limited routing (DeepSeek-V3: 4)
    rank_order: str = RANK_ORDERS[0]  # which axis varies fastest along the ranks (labs.core.engine.layout); Megatron's by default
    stack: str | None = None  # the software stack (an era of labs.core.engine.eras) whose kernels run; None: Megatron-Core's
    grad_sync: str | None = None  # "step" (no_sync) or "microbatch"; None: the ZeRO stage's own (step up to ZeRO-1)
    torch_compile: bool = False  # PyTorch stacks: element-wise ops fused and fewer kernels launched
    recompute_layers: int | None = None  # with recompute="full": layers of each pipeline chunk re-run (Megatron's --recompute-num-layers, block method); None: all
    expert_skew: float = 1.0  # MoE: the busiest EP rank's routed tokens over the balanced load, which the step waits for (1: balanced, as published recipes force-balance)

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
            # Megatron-LM refuses N < pp (labs.core.engine.pipeline.check_group): its order would wait on itself.
            raise ValueError(f"microbatch_group_size must be at least pp={self.pp} (Megatron-LM's range [pp, micro-batches]), got {group}")
        if self.schedule == "dualpipe":  # dualpipe.py's asserts, on the plan's fields
            check_dualpipe(self.pp, self.microbatches, "pp", "global_batch / (micro_batch x dp)")
        if self.microbatch_group_size is not None and self.schedule != "interleaved":
            raise ValueError(f"microbatch_group_size applies to the interleaved schedule only, got schedule={self.schedule!r}")
        if not self.reshard_after_forward and self.zero_stage != 3:
            raise ValueError(f"reshard_after_forward=False needs zero_stage=3 (FSDP), got zero_stage={self.zero_stage}")
        if self.shard_group_size is not None:
            if self.zero_stage == 0:
                raise ValueError("shard_group_size needs zero_stage >= 1: it is the group the ZeRO/FSDP state is sharded over")
            if (self.dp * self.cp) % self.shard_group_size:
                raise ValueError(f"shard_group_size must divide dp x cp = {self.dp * self.cp}, got {self.shard_group_size}")
            if self.shard_group_size % self.ep:  # torchtitan's ParallelDims: the expert shard is dp_shard x cp / ep ranks
                raise ValueError(f"shard_group_size must be a multiple of ep = {self.ep} (routed experts shard over shard_group_size / ep ranks), "
                                 f"got {self.shard_group_size}")
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


def validate(model: Model, cluster: Cluster, plan: Plan) -> None:
    """Raise ValueError naming the field when the plan does not fit this model and cluster."""
    if type(model) is not Model or type(cluster) is not Cluster or type(plan) is not Plan:  # the common case checked at once
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
    check_cluster_has(cluster, plan.dp_algorithm)  # a Plan's dp_algorithm is one of DP_ALGORITHMS already
    if plan.stack is not None:
        check_stack_on_gpu(get_era(plan.stack), cluster.gpu)
    if plan.ep > 1 and (not model.experts or model.experts % plan.ep):
        raise ValueError(f"ep must divide the model's {model.experts} routed experts, got ep={plan.ep}")
    if (plan.capacity_factor is not None or plan.max_nodes_per_token is not None or plan.expert_skew != 1) and not model.experts:
        raise ValueError(f"capacity_factor, max_nodes_per_token and expert_skew apply to mixture-of-experts models; {model.name} is dense")
    if model.experts:
        # the busiest of ep ranks holds at most min(k, experts / ep) of each token's k experts
        most = plan.ep * min(model.experts_per_token, model.experts / plan.ep) / model.experts_per_token
        if plan.expert_skew > most:
            raise ValueError(f"expert_skew must not exceed {most:g} at ep={plan.ep} (every token's experts on the busiest rank), got {plan.expert_skew!r}")
    check_precision_on(cluster.gpu, plan.precision)


# the codes plan_columns writes for the named choices (a Plan holds valid names)
_CODES = {name: {value: code for code, value in enumerate(values)} for name, values in
          (("recompute", ALL_RECOMPUTE_MODES), ("schedule", SCHEDULES), ("rank_order", RANK_ORDERS), ("grad_sync", GRAD_SYNCS),
           ("precision", PRECISIONS))}  # precision: labs.core.engine.precision.precision_code's codes


def plan_columns(plan: Plan) -> dict:
    """The plan as the step model's columns (labs.core.engine.step.evaluate)."""
    return {
        "tp": plan.tp, "pp": plan.pp, "dp": plan.dp, "cp": plan.cp, "micro_batch": plan.micro_batch,
        "global_batch": plan.global_batch, "zero_stage": plan.zero_stage,
        "recompute": _CODES["recompute"][plan.recompute], "sequence_parallel": plan.sequence_parallel,
        "schedule": _CODES["schedule"][plan.schedule], "virtual_stages": plan.virtual_stages,
        "flash_attention": plan.flash_attention, "tp_comm_overlap": plan.tp_comm_overlap,
        "grad_fp32": plan.grad_reduce_dtype == "fp32", "dp_overlap": plan.dp_overlap, "pp_overlap": plan.pp_overlap,
        "bucket_bytes": plan.bucket_bytes or 0.0, "optimizer_bytes": OPTIMIZER_STATES[plan.optimizer_state].bytes_per_param,
        "offload": plan.offload_optimizer,
        "first_stage_layers": -1 if plan.first_stage_layers is None else plan.first_stage_layers,
        "last_stage_layers": -1 if plan.last_stage_layers is None else plan.last_stage_layers,
        "microbatch_group_size": -1 if plan.microbatch_group_size is None else plan.microbatch_group_size,
        "reshard_after_forward": plan.reshard_after_forward,
        "shard_group_size": -1 if plan.shard_group_size is None else plan.shard_group_size,
        "cp_ring": plan.cp_algorithm in ("ring", "ring_contiguous"),
        "cp_ulysses": plan.cp_algorithm == "ulysses",
        "cp_contiguous": plan.cp_algorithm == "ring_contiguous",
        "fp8": _CODES["precision"][plan.precision],  # 0 (bf16) is falsy: "fp8" reads as "GEMMs in a low-precision format"
        "ep": plan.ep, "capacity_factor": plan.capacity_factor or 0.0, "max_nodes_per_token": plan.max_nodes_per_token or 0,
        "rank_order": _CODES["rank_order"][plan.rank_order],
        "grad_sync": _CODES["grad_sync"][plan.grad_sync], "torch_compile": plan.torch_compile,
        "recompute_layers": -1 if plan.recompute_layers is None else plan.recompute_layers,
        "expert_skew": plan.expert_skew,
    }
