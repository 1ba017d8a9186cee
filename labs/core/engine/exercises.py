"""The questions a problem set asks, each one engine call (labs/problems/).

Nothing here is a new formula: each function puts together the engine's own (collectives' alpha-
beta costs, topology's NCCL prices, memory's ZeRO sharding and Korthikanti's activations,
reliability's Llama 3 rate, the step model of perf.estimate) and solves for the number a
textbook problem asks. Crossovers are solved in closed form from the two costs' latency and
per-byte terms (both are linear in the message), never searched on a grid.

- collective_time: one collective under a student's own alpha and beta, on a flat ring, a tree
  (reduce then broadcast, each a pipelined tree of log2 N steps moving M: 2M in all, so the tree
  loses on large messages), or hierarchically (reduce-scatter inside each node, all-reduce of
  the 1/g shard across nodes, all-gather inside: Jia et al. 2018; NCCL's tree does the same).
  nccl_collective_time: the same collective at NCCL's achieved rates (topology.group_cost).
- ring_tree_crossover_bytes, tp_hiding_degree, dp_hiding_tokens_per_gpu: crossovers solved.
- tp_layer_bytes_sent: a layer's TP bytes per GPU, with and without SP and its backward re-gather.
- critical_batch_tokens (Kaplan et al. 2020's fit) and batch_cost (steps and tokens against the
  fewest, McCandlish et al. 2018) at a batch against the critical batch.
- MEMORY_CONVENTIONS and model_state_bytes_under: every bytes-per-parameter count the texts use,
  sharded by ZeRO's rule (memory.model_state_columns); cp_activation_bytes_per_layer (without
  flash attention under CP); segment_checkpoint_bytes, optimal_segments (Chen et al. 2016).
- component_failure_rates, components_mtbf_s; llama3_mtbf_s from the fitted rate.
- ring_kv_block_bytes, ring_hiding_tokens: ring attention's K/V hop and the tokens per rank where it
  hides; BlockFormat, block_format, block_scaled_bytes: MXFP8, NVFP4, MXFP4, 128x128 FP8 with their
  scales; gemm_arithmetic_intensity, ridge_flops_per_byte: the roofline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from labs.core.engine.collectives import CollectiveCost, bytes_sent_per_rank, collective_cost
from labs.core.engine.hardware import Cluster
from labs.core.engine.memory import BYTES_CONVENTIONS, MAX_PARAMS, WEIGHT_BYTES, ZERO_STAGES, activation_bytes_per_layer, model_state_columns
from labs.core.engine.models import Model
from labs.core.engine.precision import MX_BLOCK, NVFP4_BLOCK, TILE
from labs.core.engine.reliability import MAX_GPUS, MAX_SECONDS, job_mtbf_s
from labs.core.engine.stages.parallel import SP_BACKWARD_REGATHERS
from labs.core.engine.topology import group_cost
from labs.core.engine.validation import check_choice, check_positive

TOPOLOGIES = ("ring", "tree", "hierarchical")
HIERARCHICAL_OPS = ("all_reduce",)  # a tree and the hierarchy are all-reduce algorithms (NCCL: tree is all-reduce only)


# ---- one collective -----------------------------------------------------------------------------
def collective_time(op: str, nbytes: float, n: int, alpha_s: float, bandwidth_bytes_per_s: float, topology: str = "ring",
                    gpus_per_node: int = 8, inter_alpha_s: float | None = None, inter_bandwidth_bytes_per_s: float | None = None) -> CollectiveCost:
    """One collective of `nbytes` over n ranks at line rate: alpha_s per step, bandwidth one way.

    ring:          collectives.collective_cost(op, ..., "ring")
    tree:          collectives.collective_cost(op, ..., "tree"): a reduce and a broadcast, each log2 N
                   steps moving M: 2 log2(N) alpha + 2 M / B
    hierarchical:  all-reduce as reduce-scatter in each node of gpus_per_node, all-reduce of M/g across
                   the n/g nodes (inter_alpha_s, inter_bandwidth_bytes_per_s: one NIC's, each node's
                   g shards run on g NICs at once), all-gather in each node."""
    check_choice("topology", topology, TOPOLOGIES)
    check_positive("alpha_s", alpha_s, allow_zero=True, maximum=MAX_SECONDS)
    if topology == "ring":
        return collective_cost(op, nbytes, n, bandwidth_bytes_per_s, alpha_s, "ring")
    check_choice("op", op, HIERARCHICAL_OPS)
    if topology == "tree":
        return collective_cost(op, nbytes, n, bandwidth_bytes_per_s, alpha_s, "tree")
    check_positive("gpus_per_node", gpus_per_node, integer=True)
    check_positive("n", n, integer=True)
    if n % gpus_per_node:
        raise ValueError(f"n must be a multiple of gpus_per_node={gpus_per_node} for a hierarchical all-reduce, got {n}")
    inter_b = bandwidth_bytes_per_s if inter_bandwidth_bytes_per_s is None else inter_bandwidth_bytes_per_s
    inter_a = alpha_s if inter_alpha_s is None else inter_alpha_s
    g = gpus_per_node
    inside = collective_cost("reduce_scatter", nbytes, g, bandwidth_bytes_per_s, alpha_s) + collective_cost("all_gather", nbytes, g, bandwidth_bytes_per_s, alpha_s)
    return inside + collective_cost("all_reduce", nbytes / g, n // g, inter_b, inter_a, "ring")


def nccl_collective_time(op: str, nbytes: float, cluster: Cluster, n: int, algorithm: str = "auto") -> CollectiveCost:
    """The same collective over n consecutive ranks of `cluster` at NCCL's achieved rates and
    protocols (topology.group_cost): measured bus bandwidth, per-hop latency by protocol, rails."""
    return group_cost(op, nbytes, cluster, n, 1, algorithm)


# ---- crossovers, solved ---------------------------------------------------------------------------
def _line(cost_of) -> tuple[float, float]:
    """(seconds at 0 bytes, seconds per byte) of a cost linear in the message size."""
    probe = 1e9
    at0, at1 = cost_of(0.0).total_s, cost_of(probe).total_s
    return at0, (at1 - at0) / probe


def ring_tree_crossover_bytes(n: int, alpha_s: float, bandwidth_bytes_per_s: float) -> float:
    """The all-reduce message size below which the tree beats the ring at line rate: where
    2(N-1) alpha + 2 (N-1)/N M / B = 2 log2(N) alpha + 2 M / B, i.e. M = N B alpha (N - 1 - log2 N)
    for a power of two. 0 when the ring never loses (N <= 2)."""
    check_positive("n", n, integer=True)
    ring = _line(lambda m: collective_time("all_reduce", m, n, alpha_s, bandwidth_bytes_per_s, "ring"))
    tree = _line(lambda m: collective_time("all_reduce", m, n, alpha_s, bandwidth_bytes_per_s, "tree"))
    if ring[0] <= tree[0] or tree[1] <= ring[1]:
        return 0.0
    return (ring[0] - tree[0]) / (tree[1] - ring[1])


TP_COLLECTIVES_PER_LAYER = 4  # forward, with SP: an all-gather and a reduce-scatter around attention and around the MLP (Korthikanti Sec. 4.2.2)


def tp_layer_bytes_sent(tokens: int, hidden: int, tp: int, sequence_parallel: bool = False, regather: bool = True, value_bytes: int = 2) -> float:
    """Bytes one GPU sends in one layer's TP collectives for one micro-batch, forward and backward,
    each collective on the tokens x hidden activation A (collectives.bytes_sent_per_rank). Without
    SP: TP_COLLECTIVES_PER_LAYER / 2 all-reduces a pass (g after attention and the MLP forward, f
    before them backward), 2 x 2 (t-1)/t A a pass. With SP each all-reduce is an all-gather and a
    reduce-scatter (the same bytes), and with `regather` the backward adds SP_BACKWARD_REGATHERS
    all-gathers of the inputs it did not keep (labs.core.engine.stages.parallel, which the step
    model's step._tp_layer_sent counts, and whose seconds hide behind the input-gradient GEMMs)."""
    for name, v in (("tokens", tokens), ("hidden", hidden), ("tp", tp), ("value_bytes", value_bytes)):
        check_positive(name, v, integer=True)
    a = tokens * hidden * value_bytes
    passes = 2  # forward and backward
    if not sequence_parallel:
        return passes * TP_COLLECTIVES_PER_LAYER // 2 * bytes_sent_per_rank("all_reduce", a, tp)
    ops = passes * TP_COLLECTIVES_PER_LAYER + (SP_BACKWARD_REGATHERS if regather else 0)
    return ops * bytes_sent_per_rank("all_gather", a, tp)


def tp_hiding_degree(model: Model, tokens: int, flops_per_s: float, bandwidth_bytes_per_s: float, alpha_s: float = 0.0, value_bytes: int = 2) -> float:
    """The TP degree t past which a layer's TP communication (4 collectives of `tokens` x hidden
    activations, each (t-1) alpha + (t-1)/t A / B) takes longer than its GEMMs (2 tokens x the
    layer's matmul parameters / t / flops_per_s), solved from comm(t) = gemm(t):
    4 alpha t^2 + (4 A/B - 4 alpha) t - (4 A/B + G) = 0, with G the GEMMs' time at t = 1. Without
    latency t = 1 + G B / (4 A): 1 + 3 h B / F for a GPT layer (12 h^2 matmul parameters)."""
    if not isinstance(model, Model):
        raise ValueError(f"model must be a Model, got {model!r}")
    check_positive("tokens", tokens, integer=True)
    check_positive("flops_per_s", flops_per_s, maximum=1e20)
    check_positive("value_bytes", value_bytes, integer=True, maximum=8)
    activation = tokens * model.hidden * value_bytes
    two = collective_cost("all_gather", activation, 2, bandwidth_bytes_per_s, alpha_s)  # (t-1) = 1 step, (t-1)/t = 1/2
    a, k = two.latency_s, 2 * two.bandwidth_s  # per step latency, the bandwidth term as t -> infinity
    gemm = 2 * tokens * model.layer_matmul_params / flops_per_s
    c = TP_COLLECTIVES_PER_LAYER
    if a == 0:
        return 1 + gemm / (c * k)
    qa, qb, qc = c * a, c * (k - a), -(c * k + gemm)
    return (-qb + math.sqrt(qb * qb - 4 * qa * qc)) / (2 * qa)


BACKWARD_SHARE = 2 / 3  # the backward pass is 2 of the 3 forward-equivalents of a step's GEMMs (Narayanan et al. 2021, eq. 3)


@dataclass(frozen=True)
class DPHiding:
    """Where a plan's data-parallel collective hides behind the backward pass."""

    tokens_per_gpu: float  # tokens per data-parallel rank (one GPU when tp = cp = pp = 1) per micro-batch at which backward = the DP collective
    dp_collective_s: float  # the engine's price of the gradient collective for this plan (independent of the batch)
    backward_s_per_token: float  # per GPU, from the step model's compute time


def dp_hiding_tokens_per_gpu(model: Model, cluster: Cluster, plan) -> DPHiding:
    """Tokens per GPU (per micro-batch: only the last backward overlaps the gradient collective)
    past which DP communication hides, from the engine's step model for any plan: its compute
    time per token (linear in the tokens) against its DP collective's price, which the batch
    does not change. The back-of-envelope: 4 Psi T / F = 2 x 2 Psi / B_bus, T = F / B_bus (bf16)."""
    from labs.core.engine.perf import estimate  # perf imports the step model: at call time only

    est = estimate(model, cluster, plan)
    tokens = plan.micro_batch * model.seq_len * plan.microbatches  # what one data-parallel rank computes in a step
    per_token = BACKWARD_SHARE * est.time.compute / tokens
    cost = est.dp_comm_cost.total_s
    return DPHiding(cost / per_token, cost, per_token)


# ---- the critical batch (Kaplan et al. 2020, arXiv:2001.08361, Sec. 5.1; McCandlish et al. 2018) ----
KAPLAN_B_STAR_TOKENS = 2e8  # B_* ~ 2 x 10^8 tokens, Kaplan et al. Sec. 1.2 and 5.1, their WebText2 BPE tokens
KAPLAN_ALPHA_B = 0.21  # alpha_B ~ 0.21, same fit


def critical_batch_tokens(loss_nats: float) -> float:
    """Kaplan et al.'s fit of McCandlish et al.'s critical batch, B_crit(L) = B_* / L^(1 / alpha_B)
    tokens at a loss of L nats per token: it grows as the loss falls (their data and tokenizer)."""
    check_positive("loss_nats", loss_nats, maximum=100.0)
    return KAPLAN_B_STAR_TOKENS / loss_nats ** (1 / KAPLAN_ALPHA_B)


@dataclass(frozen=True)
class BatchCost:
    """Training at a batch of B tokens against the critical batch (McCandlish et al. 2018:
    (S/S_min - 1)(E/E_min - 1) = 1; Kaplan et al. Sec. 5.1: S = S_min (1 + B_crit / B), E = E_min (1 + B / B_crit))."""

    steps_over_min: float  # S / S_min: optimizer steps against the fewest possible
    tokens_over_min: float  # E / E_min: tokens (compute) against the fewest possible


def batch_cost(batch_tokens: float, critical_tokens: float) -> BatchCost:
    check_positive("batch_tokens", batch_tokens, maximum=1e15)
    check_positive("critical_tokens", critical_tokens, maximum=1e15)
    return BatchCost(1 + critical_tokens / batch_tokens, 1 + batch_tokens / critical_tokens)


# ---- memory ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Convention:
    """Bytes per parameter split as ZeRO shards them: weights (stage 3), gradients (2), optimizer (1)."""

    weights: float
    gradients: float
    optimizer: float
    parts: str
    source: str

    @property
    def bytes_per_param(self) -> float:
        return self.weights + self.gradients + self.optimizer


MEMORY_CONVENTIONS: dict[str, Convention] = {
    "adam-16": Convention(2, 2, 12, BYTES_CONVENTIONS["ZeRO"].parts, BYTES_CONVENTIONS["ZeRO"].source),
    "adam-18": Convention(2, 4, 12, BYTES_CONVENTIONS["Megatron bf16"].parts, BYTES_CONVENTIONS["Megatron bf16"].source),
    "adam-20": Convention(2, 6, 12, "2 bf16 weights + 2 bf16 gradients + 4 fp32 gradient accumulator + 12 fp32 master, m, v",
                          "Ultra-Scale Playbook (Tazi et al. 2025), memory chapter: fp32 gradient accumulation adds 4 bytes to 16"),
    "adam-12": Convention(4, 0, 8, BYTES_CONVENTIONS["MaxText"].parts, BYTES_CONVENTIONS["MaxText"].source),
    "adam-10": Convention(2, 0, 8, BYTES_CONVENTIONS["scaling book"].parts, BYTES_CONVENTIONS["scaling book"].source),
    "sgd": Convention(2, 2, 4, "2 bf16 weights + 2 bf16 gradients + 4 fp32 master (no state)", "Micikevicius et al. 2018: fp32 master copy; plain SGD keeps nothing else"),
    "sgd-momentum": Convention(2, 2, 8, "2 bf16 weights + 2 bf16 gradients + 4 fp32 master + 4 fp32 momentum", "Micikevicius et al. 2018; one fp32 momentum buffer"),
}


def model_state_bytes_under(params: float, convention: str = "adam-16", zero_stage: int = 0, dp: int = 1) -> float:
    """Model-state bytes per GPU for `params` parameters under a convention, sharded over dp by
    ZeRO's stage (memory.model_state_columns: weights at 3, gradients at 2, optimizer at 1)."""
    check_choice("convention", convention, MEMORY_CONVENTIONS)
    check_positive("params", params, allow_zero=True, maximum=MAX_PARAMS)
    check_choice("zero_stage", zero_stage, ZERO_STAGES)
    check_positive("dp", dp, integer=True)
    c = MEMORY_CONVENTIONS[convention]
    w, g, o = model_state_columns(params, zero_stage, dp, False, c.optimizer, c.gradients)
    return float(w * c.weights / WEIGHT_BYTES + g + o)


def cp_activation_bytes_per_layer(seq_len: int, micro_batch: int, hidden: int, heads: int, cp: int, tp: int = 1, sequence_parallel: bool = False) -> float:
    """Bytes one layer keeps per micro-batch on one of cp ranks, without flash attention: every
    token-linear term at s/cp tokens (Korthikanti's selective count at s/cp), and the s x s
    attention scores for its s/cp queries against all s keys, 5 a s^2 b / (cp t): the
    quadratic term at s/cp, times cp."""
    check_positive("cp", cp, integer=True)
    check_positive("seq_len", seq_len, integer=True)
    if seq_len % cp:
        raise ValueError(f"seq_len must be a multiple of cp={cp}, got {seq_len}")
    s = seq_len // cp
    linear = activation_bytes_per_layer(s, micro_batch, hidden, heads, tp, sequence_parallel, "selective")
    scores = activation_bytes_per_layer(s, micro_batch, hidden, heads, tp, sequence_parallel, "none") - linear
    return linear + cp * scores


def _segment_terms(seq_len, micro_batch, hidden, heads, tp):
    layer = activation_bytes_per_layer(seq_len, micro_batch, hidden, heads, tp, False, "none")
    boundary = activation_bytes_per_layer(seq_len, micro_batch, hidden, heads, tp, False, "full")
    return layer, boundary


def segment_checkpoint_bytes(layers: int, segments: int, seq_len: int, micro_batch: int, hidden: int, heads: int, tp: int = 1) -> float:
    """Chen et al. 2016 (arXiv:1604.06174): keep only each segment's input (full recompute's 2sbh
    per boundary) and, in the backward, one segment's layers at a time: k boundaries + L/k layers."""
    check_positive("layers", layers, integer=True)
    check_positive("segments", segments, integer=True, maximum=layers)
    layer, boundary = _segment_terms(seq_len, micro_batch, hidden, heads, tp)
    return segments * boundary + math.ceil(layers / segments) * layer


def optimal_segments(layers: int, seq_len: int, micro_batch: int, hidden: int, heads: int, tp: int = 1) -> float:
    """The segment count that minimises segment_checkpoint_bytes over real k: sqrt(L a / b), with a
    a layer's activations and b a boundary's; Chen's sqrt(L) is the case a = b."""
    check_positive("layers", layers, integer=True)
    layer, boundary = _segment_terms(seq_len, micro_batch, hidden, heads, tp)
    return min(float(layers), math.sqrt(layers * layer / boundary))


# ---- failures -----------------------------------------------------------------------------------
COMPONENTS = ("gpu", "host", "switch", "link")


def component_failure_rates(gpus: int, mtbf_s: dict[str, float], per_gpu: dict[str, float] | None = None) -> dict[str, float]:
    """Failures per second of a job on `gpus` GPUs, by component: count / MTBF, independent
    (exponential) failures adding their rates. `mtbf_s`: each component's own MTBF (gpu, host,
    switch, link); `per_gpu`: how many of each component a GPU brings (gpu 1, host 1/8 on an
    8-GPU host, ...; default 1 each)."""
    check_positive("gpus", gpus, integer=True, maximum=MAX_GPUS)
    unknown = sorted(set(mtbf_s) - set(COMPONENTS))
    if unknown:
        raise ValueError(f"mtbf_s: components must be among {COMPONENTS}, got {unknown}")
    rates = {}
    for name, mtbf in mtbf_s.items():
        check_positive(f"mtbf_s[{name}]", mtbf, maximum=MAX_SECONDS * 1e3)
        share = (per_gpu or {}).get(name, 1.0)
        check_positive(f"per_gpu[{name}]", share, maximum=1e6)
        rates[name] = gpus * share / mtbf
    return rates


def components_mtbf_s(gpus: int, mtbf_s: dict[str, float], per_gpu: dict[str, float] | None = None) -> float:
    """The job's mean time between failures: 1 / the sum of its components' rates."""
    return 1.0 / sum(component_failure_rates(gpus, mtbf_s, per_gpu).values())


def llama3_mtbf_s(gpus: int) -> float:
    """The job's MTBF at Llama 3's fitted per-GPU rate (reliability.job_mtbf_s)."""
    return job_mtbf_s(gpus)


# ---- context and expert parallelism (problem set 6) ------------------------------------------------
def ring_kv_block_bytes(model: Model, seq_len: int, cp: int, tp: int = 1, micro_batch: int = 1, value_bytes: float = 2.0) -> float:
    """Bytes of K and V one rank passes to the next at each step of ring attention (Transformer
    Engine's ring; the kv_block of labs.core.engine.stages.parallel): the keys and values of its
    s/cp tokens, model.kv_dim wide each, split over tp: 2 b (s/cp) kv_dim / tp x value_bytes."""
    if not isinstance(model, Model):
        raise ValueError(f"model must be a Model, got {model!r}")
    for name, v in (("seq_len", seq_len), ("cp", cp), ("tp", tp), ("micro_batch", micro_batch)):
        check_positive(name, v, integer=True)
    if seq_len % cp:
        raise ValueError(f"seq_len must be a multiple of cp={cp}, got {seq_len}")
    check_positive("value_bytes", value_bytes, maximum=8)
    return 2 * micro_batch * (seq_len // cp) * model.kv_dim / tp * value_bytes


def ring_hiding_tokens(model: Model, flops_per_s: float, bandwidth_bytes_per_s: float, value_bytes: float = 2.0) -> float:
    """Tokens per CP rank past which a ring step's K/V hop hides behind that step's attention: an
    off-diagonal block of n queries against n keys is 4 n^2 score_dim / tp FLOPs forward (the
    engine's attention core, Model.layer_forward_flops), the hop ring_kv_block_bytes at n tokens;
    equal at n* = F kv_dim value_bytes / (2 B score_dim) (tp cancels). Under GQA kv_dim is a
    fraction of score_dim, so the hop hides at far shorter chunks than under multi-head attention."""
    if not isinstance(model, Model):
        raise ValueError(f"model must be a Model, got {model!r}")
    check_positive("flops_per_s", flops_per_s, maximum=1e20)
    check_positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s, maximum=1e15)
    hop_per_token = ring_kv_block_bytes(model, 1, 1, 1, 1, value_bytes) / bandwidth_bytes_per_s  # seconds per token of the block
    attention_per_token2 = 4 * model.score_dim / flops_per_s  # seconds per query-key pair
    return hop_per_token / attention_per_token2


# ---- precision (problem set 7): block-scaled formats ---------------------------------------------
@dataclass(frozen=True)
class BlockFormat:
    """A block-scaled number format: elements of `element` dtype, one `scale` dtype value per
    `block` elements, and `tensor_scale_bytes` once per tensor. Bits from ml_dtypes.finfo."""

    element: object  # an ml_dtypes dtype
    block: int  # elements sharing one scale (a 128 x 128 block: 16,384)
    scale: object  # the scale's dtype
    tensor_scale_bytes: float
    source: str

    @property
    def element_bytes(self) -> float:
        import ml_dtypes

        return ml_dtypes.finfo(self.element).bits / 8

    @property
    def scale_bytes(self) -> float:
        import ml_dtypes

        return ml_dtypes.finfo(self.scale).bits / 8

    def bytes_per_element(self, elements: float = math.inf) -> float:
        """Element bytes + block scale bytes per element (+ the per-tensor scale over `elements`)."""
        tensor = 0.0 if math.isinf(elements) else self.tensor_scale_bytes / elements
        return self.element_bytes + self.scale_bytes / self.block + tensor


def _block_formats() -> dict[str, BlockFormat]:
    import ml_dtypes
    import numpy as np

    return {
        "mxfp8": BlockFormat(ml_dtypes.float8_e4m3fn, MX_BLOCK, ml_dtypes.float8_e8m0fnu, 0.0,
                             "OCP Microscaling Formats (MX) v1.0: 32-element blocks, one E8M0 (power-of-two) scale each"),
        "nvfp4": BlockFormat(ml_dtypes.float4_e2m1fn, NVFP4_BLOCK, ml_dtypes.float8_e4m3fn, 4.0,
                             "NVIDIA NVFP4: E2M1 values in 16-element blocks, an E4M3 scale per block and an FP32 scale per tensor"),
        "mxfp4": BlockFormat(ml_dtypes.float4_e2m1fn, MX_BLOCK, ml_dtypes.float8_e8m0fnu, 0.0,
                             "OCP MX v1.0 MXFP4: E2M1 values in 32-element blocks, one E8M0 scale each"),
        "fp8-128x128": BlockFormat(ml_dtypes.float8_e4m3fn, TILE * TILE, np.float32, 0.0,
                                   "DeepSeek-V3 Sec. 3.3.2: E4M3 weights with one FP32 scale per 128 x 128 block"),
    }


BLOCK_FORMATS = ("mxfp8", "nvfp4", "mxfp4", "fp8-128x128")


def block_format(name: str) -> BlockFormat:
    check_choice("format", name, BLOCK_FORMATS)
    return _block_formats()[name]


def block_scaled_bytes(elements: float, name: str) -> float:
    """Bytes of `elements` values (one tensor) in a block-scaled format, scales included."""
    check_positive("elements", elements, maximum=1e15)
    f = block_format(name)
    blocks = math.ceil(elements / f.block)
    return elements * f.element_bytes + blocks * f.scale_bytes + f.tensor_scale_bytes


# ---- hardware (problem set 9): the roofline ------------------------------------------------------
def gemm_arithmetic_intensity(m: float, n: float, k: float, operand_bytes: float = 2.0, output_bytes: float = 2.0) -> float:
    """FLOPs per HBM byte of one (m, n, k) GEMM: 2 m n k over reading A (m k) and B (k n) and
    writing C (m n) once each, the bytes labs.core.engine.gemm.grouped_gemm_time charges."""
    for name, v in (("m", m), ("n", n), ("k", k)):
        check_positive(name, v, maximum=1e12)
    return 2.0 * m * n * k / ((m * k + k * n) * operand_bytes + m * n * output_bytes)


def ridge_flops_per_byte(gpu, fp8: bool = False, achieved: bool = False) -> float:
    """The roofline's ridge: the GPU's peak FLOP/s over its HBM bytes/s (datasheet figures), or
    (achieved) its measured best-shape GEMM rate over the HBM rate a streaming kernel reaches."""
    if achieved:
        flops = gpu.fp8_mamf_flops if fp8 else gpu.mamf_flops
        return flops / (gpu.hbm_bytes_per_s * gpu.hbm_efficiency)
    return (gpu.fp8_flops if fp8 else gpu.bf16_flops) / gpu.hbm_bytes_per_s
