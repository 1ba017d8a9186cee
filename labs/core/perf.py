"""A training step: `Plan` in, `Estimate` out (memory, step time, MFU/HFU, bubble, warnings).

step time = pipeline compute with its bubble
          + TP (and CP) communication on the critical path
          + exposed PP send/recv
          + exposed DP / ZeRO communication after overlap
          + the optimizer step

A layer's time on one GPU is its GEMMs at the GPU's matmul efficiency, plus its element-wise
work (norms, dropout, GeLU, softmax) streaming through HBM, plus its TP all-reduces (Megatron:
two in forward, two in backward, on the critical path). The element-wise traffic is
ELEMENTWISE_TRAFFIC x the activation bytes the layer writes (Korthikanti's formula). That and
the A100 matmul efficiency come from one measurement, Korthikanti et al. 2022 Table 4 (a 22B
layer at TP=8); everything end-to-end is then a prediction, checked in tests/.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from labs.core.collectives import CollectiveCost, ZERO_COST
from labs.core.hardware import Cluster
from labs.core.memory import (
    GRAD_BYTES,
    OPTIMIZER_BYTES,
    OPTIMIZER_STATES,
    WEIGHT_BYTES,
    ZERO_STAGES,
    MemoryBreakdown,
    activation_bytes_per_layer,
    in_flight_microbatches,
    model_state_split,
    offloaded_bytes,
    optimizer_state,
)
from labs.core.models import RECOMPUTE_MODES, Model
from labs.core.pipeline import OpCosts, bubble_fraction as pipeline_bubble
from labs.core.topology import DP_ALGORITHMS, group_cost
from labs.core.validation import check_choice, check_positive

PLAN_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1")
ACTIVATION_BYTES = 2  # bf16 activations sent between TP ranks and pipeline stages
GRAD_REDUCE_BYTES = 2  # bf16 gradients in the data-parallel reduction

# HBM bytes the element-wise ops move per pass, per byte of activations the layer writes.
# From Korthikanti Table 4 (22B layer, TP=8, A100): forward 7.7 ms and backward 11.9 ms share
# the same element-wise work, so their difference is one forward's GEMMs (4.2 ms -> matmul
# efficiency 0.75); the rest of the forward, after two all-reduces of 101 MB at 230 GB/s busbw
# (1.64 ms), is 1.86 ms of HBM traffic = 2.6 x the 1.33 GB that formula says the layer writes.
ELEMENTWISE_TRAFFIC = 2.6
# Megatron-LM's mixed-precision Adam step moves, per parameter it updates: zero the fp32 main
# gradient (4), read it for the global norm (4), Adam reads master, m, v, gradient and writes
# master, m, v (28), then copies the master into the bf16 weight (4 + 2) = 42 bytes.
OPTIMIZER_BYTES_PER_PARAM = 42
# CPU Adam (ZeRO-Offload) streams, per parameter of its shard: the bf16 gradient in (2), the
# master weight and both moments read and written (2 x 12 in fp32), the bf16 weight out (2).
CPU_ADAM_BYTES_PER_PARAM = GRAD_BYTES + 2 * OPTIMIZER_BYTES + WEIGHT_BYTES
# ZeRO-3 gathers and scatters run beside compute, but not all of them: half of the compute time
# hides them. Supported by Narayanan et al. 2021 Table 2 (ZeRO-3, 174.6B on 384 A100s:
# 144 TFLOP/s); with no overlap the engine gives 110, with full overlap 214.
ZERO3_OVERLAP = 0.5
# Allocator fragmentation and the CUDA context + NCCL buffers, on top of the computed terms.
ALLOCATOR_MARGIN = 0.05
RUNTIME_RESERVED_BYTES = 1.0e9
# Megatron-LM's DDP bucket: max(40M, 1M x dp) parameters (DistributedDataParallelConfig).
MEGATRON_BUCKET_PARAMS = 40_000_000
LARGE_BUBBLE = 0.10


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
    flash_attention: bool = False  # attention scores never reach HBM (Dao et al. 2022)
    dp_algorithm: str = "ring"  # "ring", "tree" or "hierarchical"; see labs.core.topology
    dp_overlap: bool = True  # gradient reduction overlaps the last micro-batch's backward
    pp_overlap: bool = True  # steady-state send/recv hidden behind compute (Megatron-LM 2021: blocking)
    bucket_bytes: float | None = None  # None: Megatron's bucket, max(40M, 1M x dp) parameters
    optimizer_state: str = "fp32"  # a key of labs.core.memory.OPTIMIZER_STATES
    offload_optimizer: bool = False  # ZeRO-Offload: gradients shard, optimizer state and Adam on the CPU

    def __post_init__(self):
        for name in ("tp", "pp", "dp", "micro_batch", "global_batch", "virtual_stages", "cp"):
            check_positive(name, getattr(self, name), integer=True)
        check_choice("zero_stage", self.zero_stage, ZERO_STAGES)
        check_choice("recompute", self.recompute, RECOMPUTE_MODES)
        check_choice("schedule", self.schedule, PLAN_SCHEDULES)
        check_choice("dp_algorithm", self.dp_algorithm, DP_ALGORITHMS)
        check_choice("optimizer_state", self.optimizer_state, OPTIMIZER_STATES)
        if self.offload_optimizer and self.zero_stage == 0:
            raise ValueError("offload_optimizer needs zero_stage >= 1 (each rank offloads its ZeRO shard), got zero_stage=0")
        if self.bucket_bytes is not None:
            check_positive("bucket_bytes", self.bucket_bytes)
        if self.virtual_stages > 1 and self.schedule != "interleaved":
            raise ValueError(f"virtual_stages must be 1 unless schedule='interleaved', got {self.virtual_stages} with schedule={self.schedule!r}")
        if self.global_batch % (self.micro_batch * self.dp):
            raise ValueError(
                f"global_batch must be a multiple of micro_batch x dp = {self.micro_batch * self.dp}, got {self.global_batch}"
            )
        if self.schedule == "interleaved" and self.pp > 1 and self.microbatches % self.pp:
            raise ValueError(f"global_batch / (micro_batch x dp) = {self.microbatches} micro-batches must be a multiple of pp={self.pp} for the interleaved schedule")

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
    if plan.gpus != cluster.gpus:
        raise ValueError(
            f"tp x pp x dp x cp = {plan.tp} x {plan.pp} x {plan.dp} x {plan.cp} = {plan.gpus} must equal the cluster's "
            f"{cluster.gpus} GPUs (e.g. dp = {cluster.gpus / (plan.tp * plan.pp * plan.cp):g})"
        )
    if model.heads % plan.tp:
        raise ValueError(f"tp must divide the model's {model.heads} heads, got tp={plan.tp}")
    if plan.pp * plan.virtual_stages > model.layers:
        raise ValueError(
            f"pp x virtual_stages must not exceed the model's {model.layers} layers, got {plan.pp} x {plan.virtual_stages}"
        )
    if model.seq_len % plan.cp:
        raise ValueError(f"cp must divide seq_len={model.seq_len}, got cp={plan.cp}")


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

    @property
    def total(self) -> float:
        return self.compute + self.bubble + self.tp_comm + self.pp_comm + self.dp_comm + self.optimizer + self.offload

    def as_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in ("compute", "bubble", "tp_comm", "pp_comm", "dp_comm", "optimizer", "offload")}


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
        return self.model_tflops_per_gpu * 1e12 / self.cluster.gpu.bf16_flops

    @property
    def hfu(self) -> float:
        return self.hardware_tflops_per_gpu * 1e12 / self.cluster.gpu.bf16_flops

    @property
    def tokens_per_s(self) -> float:
        return self.plan.global_batch * self.model.seq_len / self.step_time_s

    def days_to_train(self, tokens: float) -> float:
        return tokens / self.tokens_per_s / 86400

    @property
    def dp_exposed_bandwidth_s(self) -> float:
        return self.time.dp_comm - self.dp_exposed_latency_s


def _layer_times(model: Model, cluster: Cluster, plan: Plan) -> tuple[float, float, float]:
    """(compute forward, compute backward, TP/CP communication) for one layer, one micro-batch,
    on one GPU. Backward includes what recomputation redoes."""
    gpu = cluster.gpu
    s, b, h, t = model.seq_len // plan.cp, plan.micro_batch, model.hidden, plan.tp
    matmul_rate = gpu.bf16_flops * gpu.matmul_efficiency
    hbm_rate = gpu.hbm_bytes_per_s * gpu.hbm_efficiency
    gemm_fwd = plan.micro_batch * _layer_forward_flops(model, s) / t / matmul_rate
    attention_gemm = b * 4 * s * model.seq_len * h / t / matmul_rate
    written = activation_bytes_per_layer(s, b, h, model.heads, t, plan.sequence_parallel, "selective" if plan.flash_attention else "none")
    attention_written = 0.0 if plan.flash_attention else b * 5 * model.heads * s * s / t
    elementwise = ELEMENTWISE_TRAFFIC * written / hbm_rate
    fwd = gemm_fwd + elementwise
    bwd = 2 * gemm_fwd + elementwise

    activation = b * s * h * ACTIVATION_BYTES
    tp_allreduce = group_cost("all_reduce", activation, cluster, t, 1, "ring").total_s  # TP ranks are adjacent
    comm_fwd = 2 * tp_allreduce
    comm_bwd = 2 * tp_allreduce
    if plan.cp > 1:
        kv = 2 * b * model.seq_len * model.kv_dim / t * ACTIVATION_BYTES
        comm_fwd += group_cost("all_gather", kv, cluster, plan.cp, t, "ring").total_s
        comm_bwd += group_cost("reduce_scatter", kv, cluster, plan.cp, t, "ring").total_s
    if plan.recompute == "full":
        bwd += fwd
        comm_bwd += comm_fwd
    elif plan.recompute == "selective" and not plan.flash_attention:
        bwd += attention_gemm + ELEMENTWISE_TRAFFIC * attention_written / hbm_rate
    return fwd, bwd, comm_fwd + comm_bwd


def _layer_forward_flops(model: Model, tokens: int) -> float:
    """Forward FLOPs of one layer for `tokens` of a sequence (its CP share), attending to all of it."""
    return 2 * tokens * model.layer_matmul_params + 4 * tokens * model.seq_len * model.hidden


def stage_layers(model: Model, plan: Plan) -> int:
    """Layers on the heaviest pipeline stage. When pp x v does not divide the layers, some
    stages hold one layer more (Megatron-Core places the remainder; Llama 3 405B ran 126
    layers on 16 stages) and the heaviest one sets the pace."""
    return math.ceil(model.layers / (plan.pp * plan.virtual_stages)) * plan.virtual_stages


def stage_params(model: Model, plan: Plan) -> float:
    """Parameters on the heaviest stage before TP: its layers plus an embedding (the first
    stage's input embedding or the last stage's output layer); the whole model when pp = 1."""
    if plan.pp == 1:
        return float(model.params)
    return stage_layers(model, plan) * model.layer_params + model.vocab * model.hidden


def stored_recompute(plan: Plan) -> str:
    """The recompute mode whose activations are kept: flash attention never stores the s x s
    scores, which is what selective recompute saves too."""
    return "selective" if plan.flash_attention and plan.recompute == "none" else plan.recompute


def memory_breakdown(model: Model, plan: Plan) -> MemoryBreakdown:
    """Bytes on the busiest GPU (the first pipeline stage): model state under the plan's ZeRO
    stage, activations under its TP/SP/recompute and schedule, and the allocator margin."""
    layers_per_stage = stage_layers(model, plan)
    weights, grads, optimizer = model_state_split(
        stage_params(model, plan) / plan.tp, plan.zero_stage, plan.dp * plan.cp, plan.offload_optimizer, plan.optimizer_state
    )
    recompute = stored_recompute(plan)
    per_layer = activation_bytes_per_layer(model.seq_len // plan.cp, plan.micro_batch, model.hidden, model.heads, plan.tp, plan.sequence_parallel, recompute)
    held = in_flight_microbatches(plan.schedule, plan.pp, plan.microbatches, plan.virtual_stages)
    activations = per_layer * layers_per_stage * held
    if recompute == "full":  # one layer's full working set while it is recomputed
        working = "selective" if plan.flash_attention else "none"
        activations += activation_bytes_per_layer(model.seq_len // plan.cp, plan.micro_batch, model.hidden, model.heads, plan.tp, plan.sequence_parallel, working)
    if plan.pp == 1:  # fp32 logits for the loss, on the one stage
        activations += plan.micro_batch * model.seq_len // plan.cp * model.vocab * 4 / plan.tp
    computed = weights + grads + optimizer + activations
    return MemoryBreakdown(weights, grads, optimizer, activations, ALLOCATOR_MARGIN * computed + RUNTIME_RESERVED_BYTES)


def _dp_comm(model: Model, cluster: Cluster, plan: Plan, params_per_gpu: float) -> tuple[CollectiveCost, CollectiveCost, float, int]:
    """(cost overlappable with backward, cost on the critical path, bytes sent per GPU, buckets)."""
    n = plan.dp * plan.cp
    stride = plan.tp
    grads = params_per_gpu * GRAD_REDUCE_BYTES
    bucket = plan.bucket_bytes or max(MEGATRON_BUCKET_PARAMS, 1_000_000 * plan.dp) * GRAD_REDUCE_BYTES
    calls = max(1, math.ceil(grads / bucket))
    if n == 1:
        return ZERO_COST, ZERO_COST, 0.0, calls

    def cost(op, nbytes, k=1):
        one = group_cost(op, nbytes / calls, cluster, n, stride, plan.dp_algorithm)
        return one.scaled(calls * k)

    # Sharded gradients cannot accumulate locally: from ZeRO-2 on, every micro-batch's gradients
    # are reduce-scattered as its backward produces them (DeepSpeed's stage-2 backward hooks);
    # ZeRO-1 accumulates the full gradient and reduces once per step.
    m = plan.microbatches
    if plan.zero_stage == 0:
        reduce, gather = cost("all_reduce", grads), ZERO_COST
        sent = 2 * (n - 1) / n * grads
    elif plan.zero_stage == 1:
        reduce, gather = cost("reduce_scatter", grads), cost("all_gather", grads)
        sent = 2 * (n - 1) / n * grads
    elif plan.zero_stage == 2:
        reduce, gather = cost("reduce_scatter", grads, m), cost("all_gather", grads)
        sent = (m + 1) * (n - 1) / n * grads
    else:  # ZeRO-3: gather the weights for every micro-batch's forward and backward
        reduce = cost("reduce_scatter", grads, m) + cost("all_gather", grads, 2 * m)
        gather = ZERO_COST
        sent = 3 * m * (n - 1) / n * grads
    return reduce, gather, sent, calls


def estimate(model: Model, cluster: Cluster, plan: Plan) -> Estimate:
    """Memory, time and utilisation of one training step of `model` on `cluster` under `plan`."""
    validate(model, cluster, plan)
    gpu = cluster.gpu
    m, p, v = plan.microbatches, plan.pp, plan.virtual_stages
    layers_per_stage = stage_layers(model, plan)

    fwd, bwd, tp_comm = _layer_times(model, cluster, plan)
    logits = plan.micro_batch * model.logits_forward_flops() / plan.cp / plan.tp / (gpu.bf16_flops * gpu.matmul_efficiency)
    stage_fwd = layers_per_stage * fwd + logits
    stage_bwd = layers_per_stage * bwd + 2 * logits
    stage_tp = layers_per_stage * tp_comm
    per_microbatch = stage_fwd + stage_bwd + stage_tp
    if plan.schedule == "zb-h1":
        costs = OpCosts(stage_fwd, stage_bwd / 2, stage_bwd / 2)
    else:
        costs = OpCosts(stage_fwd, stage_bwd, 1e-30)
    bubble = pipeline_bubble(p, m, plan.schedule, v, "total", costs) if p > 1 else 0.0
    pipeline_time = m * per_microbatch / (1 - bubble)

    # Pipeline send/recv: Megatron's scatter-gather sends 1/t of the activation per NIC and
    # all-gathers it over NVLink. The fill and drain chains of 2(p-1) v hops are always exposed;
    # without overlap every micro-batch's two exchanges per stage are too.
    pp_bytes = plan.micro_batch * model.seq_len // plan.cp * model.hidden * ACTIVATION_BYTES
    pp_comm = 0.0
    pp_sent = 0.0
    if p > 1:
        stride = plan.tp * plan.cp * plan.dp
        crosses_node = stride >= cluster.gpus_per_node
        link = cluster.inter_bytes_per_s_per_gpu if crosses_node else cluster.intra.effective_bytes_per_s
        latency = cluster.inter.latency_s if crosses_node else cluster.intra.latency_s
        hop = latency + pp_bytes / plan.tp / link
        if crosses_node and plan.tp > 1:
            hop += group_cost("all_gather", pp_bytes, cluster, plan.tp, 1).total_s
        pp_comm = 2 * (p - 1) * v * hop + (0.0 if plan.pp_overlap else 2 * m * v * hop)
        pp_sent = 2 * m * v * pp_bytes / plan.tp

    params_per_gpu = stage_params(model, plan) / plan.tp
    reduce, gather, dp_sent, buckets = _dp_comm(model, cluster, plan, params_per_gpu)
    if plan.zero_stage == 3:
        window = ZERO3_OVERLAP * pipeline_time if plan.dp_overlap else 0.0
    elif plan.zero_stage == 2:  # each micro-batch's backward hides its own reduce-scatter
        window = m * stage_bwd if plan.dp_overlap else 0.0
    else:
        window = stage_bwd if plan.dp_overlap else 0.0
    last_bucket = reduce.total_s / buckets
    exposed_reduce = max(reduce.total_s - window, last_bucket if plan.dp_overlap else reduce.total_s) if reduce.total_s else 0.0
    # ZeRO-1/2 gather the updated weights bucket by bucket ahead of the next step's first
    # forward (Megatron-LM --overlap-param-gather): only the first bucket waits in full.
    first_bucket = gather.total_s / buckets
    exposed_gather = max(gather.total_s - stage_fwd, first_bucket) if plan.dp_overlap and gather.total_s else gather.total_s
    dp_exposed = exposed_reduce + exposed_gather
    total_dp = reduce + gather
    latency_share = total_dp.latency_s / total_dp.total_s if total_dp.total_s else 0.0

    updated = params_per_gpu / (plan.dp * plan.cp if plan.zero_stage >= 1 else 1)
    optimizer = 0.0 if plan.offload_optimizer else updated * (OPTIMIZER_BYTES_PER_PARAM - _narrow_state_saving(plan)) / (gpu.hbm_bytes_per_s * gpu.hbm_efficiency)
    offload_cost = _offload_cost(cluster, plan, updated, stage_bwd) if plan.offload_optimizer else None

    time = TimeBreakdown(
        compute=m * (stage_fwd + stage_bwd),
        bubble=pipeline_time - m * per_microbatch,
        tp_comm=m * stage_tp,
        pp_comm=pp_comm,
        dp_comm=dp_exposed,
        optimizer=optimizer,
        offload=offload_cost.exposed_s if offload_cost else 0.0,
    )
    memory = memory_breakdown(model, plan)
    fits = memory.total <= gpu.hbm_bytes
    sequences = plan.global_batch
    model_flops = sequences * model.model_flops_per_sequence()
    hardware_flops = sequences * model.hardware_flops_per_sequence(stored_recompute(plan))
    tp_sent = m * layers_per_stage * (8 if plan.recompute != "full" else 12) * (plan.tp - 1) / plan.tp * plan.micro_batch * model.seq_len // plan.cp * model.hidden * ACTIVATION_BYTES if plan.tp > 1 else 0.0
    warnings = _warnings(model, cluster, plan, memory, fits, bubble, dp_exposed, time.total, offload_cost)
    return Estimate(
        model, cluster, plan, fits, memory, time, bubble, model_flops, hardware_flops,
        total_dp, dp_exposed * latency_share,
        {"tp": tp_sent, "pp": pp_sent, "dp": dp_sent, "pcie": offload_cost.pcie_bytes if offload_cost else 0.0},
        tuple(warnings),
        offload_cost,
    )


def _narrow_state_saving(plan: Plan) -> float:
    """Bytes per parameter an Adam step streams less when the optimizer state is narrower than
    fp32's 12: the state is read and written once each."""
    return 2 * (OPTIMIZER_BYTES - optimizer_state(plan.optimizer_state).bytes_per_param)


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


def _offload_cost(cluster: Cluster, plan: Plan, shard_params: float, backward_s: float) -> OffloadCost:
    pcie = cluster.host_link.effective_bytes_per_s
    down = GRAD_BYTES * shard_params / pcie
    cpu_adam = shard_params * (CPU_ADAM_BYTES_PER_PARAM - _narrow_state_saving(plan)) / cluster.host_bytes_per_s_per_gpu
    up = WEIGHT_BYTES * shard_params / pcie
    exposed_down = max(0.0, down - backward_s) if plan.dp_overlap else down
    host = offloaded_bytes(shard_params, plan.optimizer_state) * cluster.gpus_per_node
    return OffloadCost(down, cpu_adam, up, exposed_down + cpu_adam + up, (GRAD_BYTES + WEIGHT_BYTES) * shard_params, host)


def _warnings(model, cluster, plan, memory, fits, bubble, dp_exposed, step, offload) -> list[str]:
    out = []
    if offload:
        host = offload.host_bytes_per_node
        if host > cluster.host.memory_bytes:
            out.append(
                f"Offloaded state needs {host / 1e9:,.0f} GB of CPU memory per node, more than the host's "
                f"{cluster.host.memory_bytes / 1e9:,.0f} GB"
            )
    if plan.tp > cluster.gpus_per_node:
        fast = cluster.intra.bandwidth_bytes_per_s / 1e9
        slow = cluster.inter.bandwidth_bytes_per_s * min(1.0, cluster.rails / cluster.gpus_per_node) / 1e9
        out.append(
            f"TP={plan.tp} spans nodes of {cluster.gpus_per_node} GPUs: its per-layer all-reduces leave "
            f"{cluster.intra.name} ({fast:.0f} GB/s per GPU each way) for {cluster.inter.name} "
            f"({slow:.0f} GB/s), {fast / slow:.0f}x less bandwidth"
        )
    if not fits:
        term = memory.largest_term()
        out.append(
            f"Out of memory: {memory.total / 1e9:.1f} GB per GPU > {cluster.gpu.hbm_bytes / 1e9:.0f} GB; "
            f"largest term is {term} ({memory.as_dict()[term] / 1e9:.1f} GB)"
        )
    if model.layers % (plan.pp * plan.virtual_stages):
        heavy = stage_layers(model, plan)
        out.append(f"{model.layers} layers do not split evenly over pp x v = {plan.pp * plan.virtual_stages}: the heaviest stage holds {heavy} layers and sets the pace")
    if bubble > LARGE_BUBBLE:
        out.append(f"Pipeline bubble is {bubble:.0%} of the step (pp={plan.pp}, {plan.microbatches} micro-batches)")
    if dp_exposed > 0.2 * step:
        out.append(f"Data-parallel communication leaves {dp_exposed / step:.0%} of the step exposed")
    return out
