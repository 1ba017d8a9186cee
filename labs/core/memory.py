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

from labs.core.models import ALL_RECOMPUTE_MODES, RECOMPUTE_MODES
from labs.core.pipeline import SCHEDULES
from labs.core.validation import check_bool, check_choice, check_positive

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
        "DeepSeek-V3 technical report (arXiv:2412.19437) Sec. 3.3.2: AdamW moments tracked in "
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
    """Bytes on one GPU. `buffers` is the stated margin for the allocator and NCCL."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    buffers: float = 0.0

    @property
    def model_state(self) -> float:
        return self.weights + self.gradients + self.optimizer

    @property
    def total(self) -> float:
        return self.model_state + self.activations + self.buffers

    def as_dict(self) -> dict[str, float]:
        return {
            "weights": self.weights,
            "gradients": self.gradients,
            "optimizer": self.optimizer,
            "activations": self.activations,
            "buffers": self.buffers,
        }

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


def model_state_columns(params, zero_stage, dp, offload, optimizer_bytes, grad_bytes):
    """(weights, gradients, optimizer) bytes per GPU over numpy columns; grad_bytes is 2 for
    bf16 gradients, 4 for fp32 main gradients (Megatron's bf16 default)."""
    zero_stage = np.asarray(zero_stage)
    dp = np.asarray(dp, dtype=float)
    weights = WEIGHT_BYTES * params / np.where(zero_stage >= 3, dp, 1.0)
    gradients = grad_bytes * params / np.where(zero_stage >= 2, dp, 1.0)
    optimizer = optimizer_bytes * params / np.where(zero_stage >= 1, dp, 1.0)
    gradients = np.where(offload & (zero_stage >= 2), 0.0, gradients)
    return weights, gradients, np.where(offload, 0.0, optimizer)


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


def activation_columns(s, b, h, a, t, sp, recompute_code):
    """activation_bytes_per_layer over numpy columns (recompute_code indexes RECOMPUTE_MODES)."""
    s, b, t = (np.asarray(x, dtype=float) for x in (s, b, t))
    sbh = s * b * h
    attention = np.where(recompute_code == RECOMPUTE_MODES.index("none"), 5 * a * s / h, 0.0)
    kept = np.where(sp, sbh * (34 + attention) / t, sbh * (10 + 24 / t + attention / t))
    return np.where(recompute_code == RECOMPUTE_MODES.index("full"), 2 * sbh / np.where(sp, t, 1.0), kept)


def in_flight_microbatches(schedule: str, p: int, m: int, v: int = 1, stage: int = 0) -> float:
    """Micro-batches whose activations stage `stage` holds at its peak, in units of one
    micro-batch through that stage's L/p layers.

    GPipe holds all m. 1F1B and ZB-H1 hold at most p - stage (the first stage: min(m, p)).
    Interleaved 1F1B holds p (1 + (p-1)/(p v)) on the first stage (Korthikanti Sec. 4.2.3).
    ZB-H2 holds up to 2p - 1 (Qi et al. 2024 Table 2).
    """
    check_choice("schedule", schedule, SCHEDULES)
    for name, value in (("p", p), ("m", m), ("v", v)):
        check_positive(name, value, integer=True)
    check_positive("stage", stage, integer=True, allow_zero=True)
    if not 0 <= stage < p:
        raise ValueError(f"stage must be in [0, {p - 1}], got {stage}")
    return float(in_flight_columns(SCHEDULES.index(schedule), p, m, v, stage))


def in_flight_columns(schedule_code, p, m, v, stage=0, group=-1):
    """in_flight_microbatches over numpy columns (schedule_code indexes SCHEDULES). Under
    interleaving, rank r runs (p - r - 1) x 2 + (v - 1) x N warm-up chunks before its first
    backward (Megatron-LM's schedule; N, the micro-batch group size, defaults to p), so it holds
    ((p - r - 1) x 2 + (v - 1) x N + 1) / v micro-batches' worth of its layers: for r = 0 and
    N = p that is p (1 + (p-1)/(p v)), Korthikanti's figure."""
    p, m, v, stage = (np.asarray(x, dtype=float) for x in (p, m, v, stage))
    n = np.where(np.asarray(group, dtype=float) > 0, group, p)
    held = np.minimum(m, p - stage)
    interleaved = np.minimum(m, ((p - stage - 1) * 2 + (v - 1) * n + 1) / v)
    held = np.where((schedule_code == SCHEDULES.index("interleaved")) & (m >= p), interleaved, held)
    held = np.where(schedule_code == SCHEDULES.index("zb-h2"), np.minimum(m, 2 * (p - stage) - 1), held)
    return np.where(schedule_code == SCHEDULES.index("gpipe"), m, held)


def layer_activation_columns(model, s, b, t, sp, recompute_code):
    """Bytes one layer of `model` keeps per micro-batch, over numpy columns.

    GPT layers (multi-head attention, 4h GeLU MLP, dropout): Korthikanti's formulas
    (activation_columns). Llama-style layers (GQA, SwiGLU of width f, RMSNorm, no dropout),
    counted tensor by tensor in bf16, per token:
      replicated under TP, sharded by SP: the two RMSNorm inputs and the two GEMM inputs they
        feed (QKV, FFN in), 4 x 2h
      sharded by TP: Q (2h), K and V (2 x 2 kv), the attention output (2h), gate and up (2 x 2f),
        the SwiGLU product that feeds the FFN out (2f); flash attention's softmax statistics
        (fp32, 4 a); without flash attention the s x s softmax output, 2 a s
    = s b (12h + 4 kv + 6f + 4a) / t with SP: 31.8 s b h / t for Llama 3 405B.
    Selective recompute (or flash attention) drops the s x s term; full recompute keeps the layer
    input only, 2 s b h (/ t with SP)."""
    if not model.gated_ffn:
        return activation_columns(s, b, model.hidden, model.heads, t, sp, recompute_code)
    s, b, t = (np.asarray(x, dtype=float) for x in (s, b, t))
    h, a, kv, f = model.hidden, model.heads, model.kv_dim, model.ffn
    scores = np.where(recompute_code == RECOMPUTE_MODES.index("none"), 2 * a * s, 0.0)
    ffn = 6 * f
    if model.experts:  # routed tokens keep their dispatched input and the experts' gate, up and product
        k, fe = model.experts_per_token, model.expert_ffn
        moe = k * (2 * h + 6 * fe) + 6 * model.shared_experts * fe + 4 * model.experts
        ffn = (1 - model.moe_share) * 6 * f + model.moe_share * moe
    per_token = 8 * h / np.where(sp, t, 1.0) + (4 * h + 4 * kv + ffn + 4 * a + scores) / t
    kept = s * b * per_token
    kept = np.where(recompute_code == ALL_RECOMPUTE_MODES.index("ops"), s * b * _ops_per_token(model, h, kv, a, ffn, sp, t), kept)
    kept = np.where(recompute_code == ALL_RECOMPUTE_MODES.index("norms_up_proj"), s * b * _norms_up_proj_per_token(model, sp, t), kept)
    return np.where(recompute_code == RECOMPUTE_MODES.index("full"), 2 * s * b * h / np.where(sp, t, 1.0), kept)


def _ops_per_token(model, h, kv, a, ffn, sp, t):
    """Op-level selective checkpointing (every other matmul's output saved): the layer input, the
    attention output and its softmax statistics, and half the matmul outputs (Q 2h, K and V 4 kv,
    the projection 2h, the FFN's gate and up, two thirds of its stored bytes, and its output 2h)."""
    matmul_outputs = 2 * h + 4 * kv + 2 * h + ffn * 2 / 3 + 2 * h
    return 2 * h / np.where(sp, t, 1.0) + (2 * h + 4 * a + 0.5 * matmul_outputs) / t


def _norms_up_proj_per_token(model, sp, t):
    """DeepSeek-V3's recomputation (Sec. 3.2.3): the norms' inputs stay (4h), their outputs are
    re-run; MLA keeps its latents (query, key-value and the shared RoPE key) instead of the
    up-projected Q, K and V; the attention output and softmax statistics stay; gated FFNs keep
    the inputs of SwiGLU (gate and up) and re-run its product; routed tokens keep their
    dispatched copy. Without MLA only the norms and SwiGLU are re-run."""
    h, a = model.hidden, model.heads
    if model.mla:
        attention = 2 * (model.q_lora_rank + model.kv_lora_rank + model.qk_rope_dim) + 2 * a * model.v_head_dim + 4 * a
    else:
        attention = 4 * h + 4 * model.kv_dim + 4 * a
    ffn = 4 * model.ffn
    if model.experts:
        k, fe = model.experts_per_token, model.expert_ffn
        moe = k * (2 * h + 4 * fe) + 4 * model.shared_experts * fe + 4 * model.experts
        ffn = (1 - model.moe_share) * 4 * model.ffn + model.moe_share * moe
    return 4 * h / np.where(sp, t, 1.0) + (attention + ffn) / t


def fp8_norms_up_proj_savings(model, s, b, t):
    """DeepSeek-V3's FP8 activation caching (Sec. 3.3.3) on top of its recomputation: the Linear
    inputs it keeps are cached in FP8 (1 byte of 2): the MLA latents, the attention output (in
    E5M6, 1.5 bytes), the SwiGLU inputs, and the routed tokens as dispatched (in FP8)."""
    s, b, t = (np.asarray(x, dtype=float) for x in (s, b, t))
    h, a = model.hidden, model.heads
    latents = (model.q_lora_rank + model.kv_lora_rank + model.qk_rope_dim) if model.mla else 0.0
    out = 0.25 * 2 * (a * model.v_head_dim if model.mla else h)
    ffn = 2 * model.ffn
    if model.experts:
        k, fe = model.experts_per_token, model.expert_ffn
        ffn = (1 - model.moe_share) * 2 * model.ffn + model.moe_share * (k * (h + 2 * fe) + 2 * model.shared_experts * fe)
    return s * b * (latents + out + ffn) / t


def fp8_activation_savings(model, s, b, t, sp):
    """Bytes per layer and micro-batch that FP8 GEMMs save: Transformer Engine keeps the FP8
    copy (1 byte) of a GEMM input that no other op needs in BF16: the QKV and FFN-in inputs (the
    norm outputs) and the FFN-out input (GeLU output 4h for GPT, the SwiGLU product f for
    Llama). The attention output stays: flash attention keeps it in BF16 for its backward."""
    s, b, t = (np.asarray(x, dtype=float) for x in (s, b, t))
    return s * b * (2 * model.hidden / np.where(sp, t, 1.0) + model.ffn / t)
