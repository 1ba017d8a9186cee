"""Per-GPU memory: model state under ZeRO 0-3 and activations under TP, SP and recompute.

Model state: mixed-precision Adam keeps 16 bytes per parameter, 2 (bf16 weights) + 2 (bf16
gradients) + 12 (fp32 master weights, Adam m and v). ZeRO (Rajbhandari et al. 2020, Table 1)
shards the optimizer state (stage 1), then the gradients (2), then the weights (3) over the
data-parallel group. ZeRO never shards activations.

Activations: Korthikanti et al. 2022 (arXiv:2205.05198) Sec. 4, bytes per transformer layer
per micro-batch with 16-bit activations and 1-byte dropout masks (s sequence, b micro-batch,
h hidden, a heads, t tensor-parallel degree).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labs.core.engine.models import RECOMPUTE_MODES
from labs.core.engine.pipeline import SCHEDULES, check_dualpipe, dualpipe_in_flight
from labs.core.engine.stages.activations import activation_columns, layer_activation_columns  # noqa: F401 (layer_activation_columns: re-exported)
from labs.core.engine.stages.xp import NUMPY
from labs.core.engine.validation import check_bool, check_choice, check_positive

_GPIPE, _INTERLEAVED, _ZB_H2, _DUALPIPE = (SCHEDULES.index(name) for name in ("gpipe", "interleaved", "zb-h2", "dualpipe"))

WEIGHT_BYTES = 2  # bf16 weights
GRAD_BYTES = 2  # bf16 gradients
OPTIMIZER_BYTES = 12  # fp32 master weights + Adam m + Adam v
BYTES_PER_PARAM = WEIGHT_BYTES + GRAD_BYTES + OPTIMIZER_BYTES
ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class BytesConvention:
    """One way of counting the bytes a parameter costs in mixed-precision Adam training."""

    bytes_per_param: float
    parts: str
    source: str


# The conventions in use, each with its source: a lab says which one it uses (the engine's is
# ZeRO's 16, and Megatron's 18 with fp32 gradient reduction).
BYTES_CONVENTIONS: dict[str, BytesConvention] = {
    "ZeRO": BytesConvention(16, "2 bf16 weights + 2 bf16 gradients + 12 fp32 master, m, v", "Rajbhandari et al. 2020 (arXiv:1910.02054) Sec. 3.1, K = 12"),
    "Megatron bf16": BytesConvention(
        18, "2 bf16 weights + 4 fp32 main gradients + 12 fp32 master, m, v (6 + 12/d with the distributed optimizer)",
        "NVIDIA/Megatron-LM docs, distributed optimizer: 18 bytes per parameter, 6 + 12/d sharded"),
    "MaxText": BytesConvention(12, "4 fp32 weights + 4 m + 4 v; bf16 copies made on the fly", "google/maxtext: fp32 parameters and Adam moments (weights cast to bf16 in the step)"),
    "scaling book": BytesConvention(10, "2 bf16 weights + 4 m + 4 v (gradients not kept)", "jax-ml/scaling-book, training chapter: bf16 parameters with fp32 Adam state"),
}
MAX_PARAMS = 1e15  # a thousand times the largest model trained: keeps every byte count finite


@dataclass(frozen=True)
class OptimizerState:
    """What Adam keeps per parameter besides the bf16 weights and gradients."""

    label: str
    bytes_per_param: float
    source: str


# The fp32 master copy stays in every recipe; only the moments change precision.
OPTIMIZER_STATES: dict[str, OptimizerState] = {
    "fp32": OptimizerState(
        "fp32 master, m, v", 12,
        "Rajbhandari et al. 2020 (arXiv:1910.02054) Sec. 3.1: K = 12 for mixed-precision Adam.",
    ),
    "bf16-moments": OptimizerState(
        "fp32 master, bf16 m and v", 8,
        "DeepSeek-V3 technical report (arXiv:2412.19437) Sec. 3.3.3: AdamW moments tracked in "
        "BF16, master weights kept in FP32: 4 + 2 + 2.",
    ),
    "8bit": OptimizerState(
        "fp32 master, 8-bit m and v", 6,
        "Dettmers et al. 2022, 8-bit Optimizers via Block-wise Quantization (arXiv:2110.02861): "
        "one byte per moment, plus one fp32 scale per 2,048-value block (0.004 B, left out): 4 + 1 + 1.",
    ),
}


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes on one GPU, a line per term (`lines()`): the model state, the activations the
    schedule holds, the loss's logits (the last pipeline rank: labs.core.engine.eras, logits_bytes),
    and the runtime's `buffers`: the CUDA context, NCCL's communicators, the TP overlap buffers and
    the caching allocator's fragmentation (labs.core.engine.stages.memory)."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    buffers: float = 0.0
    logits: float = 0.0
    cuda_context: float = 0.0
    communicators: float = 0.0
    tp_overlap: float = 0.0
    fragmentation: float = 0.0

    @property
    def model_state(self) -> float:
        return self.weights + self.gradients + self.optimizer

    @property
    def total(self) -> float:
        return self.model_state + self.activations + self.logits + self.buffers

    def as_dict(self) -> dict[str, float]:
        """The stacked bar's terms: model state, activations, logits and the runtime's buffers."""
        return {
            "weights": self.weights,
            "gradients": self.gradients,
            "optimizer": self.optimizer,
            "activations": self.activations,
            "logits": self.logits,
            "buffers": self.buffers,
        }

    def lines(self) -> dict[str, float]:
        """Every term on its own line, the buffers split into their parts (they sum to `total`)."""
        terms = self.as_dict()
        del terms["buffers"]
        parts = {"cuda_context": self.cuda_context, "communicators": self.communicators, "tp_overlap": self.tp_overlap,
                 "fragmentation": self.fragmentation}
        other = self.buffers - sum(parts.values())  # a breakdown built with `buffers` alone
        return {**terms, **parts, **({"other_buffers": other} if abs(other) > 1e-6 * max(self.buffers, 1.0) else {})}

    def largest_term(self) -> str:
        terms = self.as_dict()
        return max(terms, key=terms.get)


def optimizer_state(name: str) -> OptimizerState:
    check_choice("optimizer_state", name, OPTIMIZER_STATES)
    return OPTIMIZER_STATES[name]


def model_state_split(params: float, zero_stage: int, dp: int, offload: bool = False, optimizer: str = "fp32") -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per GPU; `params` is what this rank's TP x PP shard holds.

    offload=True is ZeRO-Offload (Ren et al. 2021, arXiv:2101.06840, Sec. 4): each rank's
    gradient shard and optimizer state live in CPU memory and the CPU runs Adam; the GPU keeps
    the bf16 weights. It needs a ZeRO stage that shards the optimizer (1 or more). Under stage 1
    the full gradient buffer still accumulates on the GPU before its shard is copied out; from
    stage 2 gradients stream out bucket by bucket.
    """
    check_positive("params", params, allow_zero=True, maximum=MAX_PARAMS)
    check_choice("zero_stage", zero_stage, ZERO_STAGES)
    check_positive("dp", dp, integer=True)
    check_bool("offload", offload)
    check_choice("optimizer", optimizer, OPTIMIZER_STATES)
    state = OPTIMIZER_STATES[optimizer]
    if offload and zero_stage == 0:
        raise ValueError("offload needs zero_stage >= 1: the optimizer state it moves is each rank's ZeRO shard, got zero_stage=0")
    return tuple(float(x) for x in model_state_columns(params, zero_stage, dp, offload, state.bytes_per_param, GRAD_BYTES))


def model_state_columns(params, zero_stage, dp, offload, optimizer_bytes, grad_bytes, xp=NUMPY):
    """(weights, gradients, optimizer) bytes per GPU over numpy columns; grad_bytes is 2 for
    bf16 gradients, 4 for fp32 main gradients (Megatron's bf16 default)."""
    zero_stage = zero_stage if xp.scalar else np.asarray(zero_stage)
    dp = xp.floats(dp)
    weights = WEIGHT_BYTES * params / xp.where(zero_stage >= 3, dp, 1.0)
    gradients = grad_bytes * params / xp.where(zero_stage >= 2, dp, 1.0)
    optimizer = optimizer_bytes * params / xp.where(zero_stage >= 1, dp, 1.0)
    gradients = xp.where(offload & (zero_stage >= 2), 0.0, gradients)
    return weights, gradients, xp.where(offload, 0.0, optimizer)


def model_state_bytes(params: float, zero_stage: int, dp: int, offload: bool = False, optimizer: str = "fp32") -> float:
    """16 Psi, (4 + 12/N) Psi, (2 + 14/N) Psi, 16 Psi / N for stages 0-3 (ZeRO Table 1)."""
    return sum(model_state_split(params, zero_stage, dp, offload, optimizer))


def offloaded_bytes(shard_params: float, optimizer: str = "fp32") -> float:
    """CPU memory one rank's ZeRO-Offload shard of `shard_params` parameters takes: bf16
    gradients and the optimizer state."""
    check_positive("shard_params", shard_params, allow_zero=True, maximum=MAX_PARAMS)
    check_choice("optimizer", optimizer, OPTIMIZER_STATES)
    return (GRAD_BYTES + OPTIMIZER_STATES[optimizer].bytes_per_param) * shard_params


def activation_bytes_per_layer(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
) -> float:
    """Korthikanti et al. 2022: bytes one transformer layer keeps for one micro-batch.

    none:      sbh(10 + 24/t + 5as/(ht))  (t = 1: sbh(34 + 5as/h))
    +SP:       sbh(34 + 5as/h) / t
    selective: the 5as/h attention term is recomputed: sbh(10 + 24/t), with SP 34 sbh / t
    full:      only the layer input, 2 sbh (2 sbh / t when SP shards it)
    """
    for name, value in (("seq_len", seq_len), ("micro_batch", micro_batch), ("hidden", hidden), ("heads", heads), ("tp", tp)):
        check_positive(name, value, integer=True)
    check_bool("sequence_parallel", sequence_parallel)
    check_choice("recompute", recompute, RECOMPUTE_MODES)
    return float(activation_columns(seq_len, micro_batch, hidden, heads, tp, sequence_parallel, RECOMPUTE_MODES.index(recompute)))


def in_flight_microbatches(schedule: str, p: int, m: int, v: int = 1, stage: int = 0) -> float:
    """Micro-batches whose activations stage `stage` holds at its peak, in units of one
    micro-batch through that stage's L/p layers.

    GPipe holds all m. 1F1B and ZB-H1 hold at most p - stage (the first stage: min(m, p)).
    Interleaved 1F1B holds p (1 + (p-1)/(p v)) on the first stage (Korthikanti Sec. 4.2.3).
    ZB-H2 holds up to 2p - 1 (Qi et al. 2024 Table 2). DualPipe holds p + 1 on every rank, in
    units of one of its two chunks (deepseek-ai/DualPipe's README; labs.core.engine.pipeline).
    """
    check_choice("schedule", schedule, SCHEDULES)
    for name, value in (("p", p), ("m", m), ("v", v)):
        check_positive(name, value, integer=True)
    if schedule == "dualpipe":
        check_dualpipe(p, m)
    check_positive("stage", stage, integer=True, allow_zero=True)
    if not 0 <= stage < p:
        raise ValueError(f"stage must be in [0, {p - 1}], got {stage}")
    return float(in_flight_columns(SCHEDULES.index(schedule), p, m, v, stage))


def in_flight_columns(schedule_code, p, m, v, stage=0, group=-1, xp=NUMPY):
    """in_flight_microbatches over numpy columns (schedule_code indexes SCHEDULES). Under
    interleaving, rank r runs (p - r - 1) x 2 + (v - 1) x N warm-up chunks before its first
    backward (Megatron-LM's schedule; N, the micro-batch group size, defaults to p), so it holds
    ((p - r - 1) x 2 + (v - 1) x N + 1) / v micro-batches' worth of its layers: for r = 0 and
    N = p that is p (1 + (p-1)/(p v)), Korthikanti's figure."""
    p, m, v, stage = xp.floats(p), xp.floats(m), xp.floats(v), xp.floats(stage)
    n = xp.where(xp.floats(group) > 0, group, p)
    held = xp.minimum(m, p - stage)
    interleaved = xp.minimum(m, ((p - stage - 1) * 2 + (v - 1) * n + 1) / v)
    held = xp.where((schedule_code == _INTERLEAVED) & (m >= p), interleaved, held)
    held = xp.where(schedule_code == _ZB_H2, xp.minimum(m, 2 * (p - stage) - 1), held)
    held = xp.where(schedule_code == _DUALPIPE, dualpipe_in_flight(p, xp), held)  # every rank, its two chunks together
    return xp.where(schedule_code == _GPIPE, m, held)
