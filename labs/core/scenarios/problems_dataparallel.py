"""Problem set 3, data parallelism and the critical batch (labs/problems/ps03_dataparallel.py): the
ring's bytes per GPU, its time across nodes on the rails, gradient accumulation, the tokens per GPU
where the backward stops hiding the gradient collective (exercises.dp_hiding_tokens_per_gpu on the
step model), Kaplan et al.'s critical batch and what a batch past it costs, and whether DP can
grow to a cluster inside the critical batch (labs.core.engine.exercises)."""

from __future__ import annotations

from functools import lru_cache

from labs.core.engine import exercises as x
from labs.core.engine.collectives import bytes_sent_per_rank
from labs.core.engine.hardware import Cluster
from labs.core.engine.models import Model
from labs.core.engine.plan import Plan
from labs.core.problemset import Problem, ProblemSet, fmt
from labs.core.variants import Option

NAME = "ps03_dataparallel"
GB, MS, US = 1e9, 1e-3, 1e-6
MODELS = ("llama2-7b", "llama2-13b", "llama3-8b")
DTYPES = {"bf16": 2, "fp32": 4}  # bytes a gradient is reduced in (Megatron's default keeps fp32 main gradients)
ERA = "megatron-core-2024"


def _params(key: str) -> float:
    return float(Model.get(key).params)


# ---- 1. the ring's bytes per GPU ------------------------------------------------------------------
def _grad_bytes(s) -> float:
    return DTYPES[s["dtype"]] * _params(s["model"])


RING_BYTES = Problem(
    "ring_bytes", "What each GPU sends",
    {"model": MODELS, "n": (64, 8, 1024, 16384), "dtype": ("bf16", "fp32")},
    lambda s: (f"{s['n']:,} data-parallel GPUs train {s['model']} ({fmt(_params(s['model']) / 1e9)}B parameters) and all-reduce its "
               f"gradients in {s['dtype']} every step with a ring. How many GB does each GPU send per step?"),
    lambda s: bytes_sent_per_rank("all_reduce", _grad_bytes(s), s["n"]) / GB,
    lambda s: 2 * (s["n"] - 1) / s["n"] * _grad_bytes(s) / GB,
    lambda s: (f"M = {DTYPES[s['dtype']]} bytes x {fmt(_params(s['model']) / 1e9)}e9 = {fmt(_grad_bytes(s) / GB)} GB; a ring all-reduce "
               f"(reduce-scatter, then all-gather) sends 2 (N-1)/N M = 2 x {s['n'] - 1:,}/{s['n']:,} x {fmt(_grad_bytes(s) / GB)} = "
               f"{fmt(2 * (s['n'] - 1) / s['n'] * _grad_bytes(s) / GB)} GB. It saturates at 2M: a thousand more GPUs send no more bytes each."),
    "GB", tolerance=0.02,
    why="ZeRO-1 and -2 send the same bytes as a reduce-scatter and an all-gather; ZeRO-3 gathers the weights twice (1.5x). "
        "What grows with N is the ring's latency, 2(N-1) steps, not its bytes.",
)


# ---- 2. its time across nodes, on the rails -----------------------------------------------------------
def _cluster(s) -> Cluster:
    return Cluster.get(s["node"], nodes=s["nodes"])


def _rails(s) -> tuple[float, float, float, int]:
    """(the node's NIC bandwidth together, one NIC's, a step's alpha, GPUs a node) of the drawn cluster."""
    c = _cluster(s)
    return c.gpus_per_node * c.inter.bandwidth_bytes_per_s, c.inter.bandwidth_bytes_per_s, c.inter.latency_s, c.gpus_per_node


def _rail_ms(s) -> float:
    b, _, a, g = _rails(s)
    return x.collective_time("all_reduce", 2 * _params(s["model"]), g * s["nodes"], a, b).total_s / MS


def _rail_envelope(s) -> float:
    b, _, a, g = _rails(s)
    n, m = g * s["nodes"], 2 * _params(s["model"])
    return (2 * (n - 1) * a + 2 * (n - 1) / n * m / b) / MS


RING_TIME = Problem(
    "ring_time", "The ring across nodes",
    {"node": ("dgx-h100", "dgx-a100"), "nodes": (16, 4, 64), "model": MODELS},
    lambda s: (f"{s['nodes']} {_cluster(s).gpu.name} nodes ({_rails(s)[3]} GPUs each, one {_cluster(s).inter.name} NIC per GPU, "
               f"{fmt(_rails(s)[1] / GB)} GB/s each way) all-reduce {s['model']}'s bf16 gradients ({fmt(2 * _params(s['model']) / GB)} GB) "
               f"over all {_rails(s)[3] * s['nodes']} GPUs. NCCL runs {_rails(s)[3]} rings at once, each crossing every node boundary on a "
               f"different NIC; each ring step costs α = {fmt(_rails(s)[2] / US)} µs. At line rate, how long does the all-reduce take, in ms?"),
    _rail_ms, _rail_envelope,
    lambda s: (f"Each of the {_rails(s)[3]} rings carries 1/{_rails(s)[3]} of the message through one NIC, so the node's NICs together, "
               f"{_rails(s)[3]} x {fmt(_rails(s)[1] / GB)} = {fmt(_rails(s)[0] / GB)} GB/s, are the ring's bandwidth: "
               f"T = 2(N-1) α + 2(N-1)/N M / B = 2 x {_rails(s)[3] * s['nodes'] - 1} x {fmt(_rails(s)[2] / US)} µs + "
               f"2 x {fmt((_rails(s)[3] * s['nodes'] - 1) / (_rails(s)[3] * s['nodes']))} x {fmt(2 * _params(s['model']) / GB)} GB / "
               f"{fmt(_rails(s)[0] / GB)} GB/s = {fmt(_rail_envelope(s))} ms."),
    "ms", tolerance=0.05,
    refined=lambda s: x.nccl_collective_time("all_reduce", 2 * _params(s["model"]), _cluster(s), _rails(s)[3] * s["nodes"]).total_s / MS,
    refined_label="NCCL's achieved time on this cluster (the engine's measured bus bandwidth and protocols)",
    why="NCCL reaches a little under each NIC's line rate, and on small slices its pipeline has not ramped up.",
    texts=("The seed of Lab 05 prices the cross-node ring at 'InfiniBand HDR200, 400 GB/s': one HDR port is 200 Gb/s = 25 GB/s. "
           "What a DGX A100's ring reaches across nodes is its 8 NICs together, 200 GB/s, so the cliff it draws at the node boundary is not there."),
)


# ---- 3. gradient accumulation -----------------------------------------------------------------------
ACCUMULATION = Problem(
    "accumulation", "Gradient accumulation",
    {"global_batch": (1024, 512, 2048), "dp": (64, 32, 128), "micro_batch": (2, 1, 4)},
    lambda s: (f"A global batch of {s['global_batch']:,} sequences trains on {s['dp']} data-parallel GPUs at micro-batch {s['micro_batch']} "
               "(what fits in memory). How many micro-batches does each GPU accumulate before the gradient all-reduce?"),
    lambda s: float(Plan(dp=s["dp"], micro_batch=s["micro_batch"], global_batch=s["global_batch"]).microbatches),
    lambda s: s["global_batch"] / (s["dp"] * s["micro_batch"]),
    lambda s: (f"k = B / (N b) = {s['global_batch']:,} / ({s['dp']} x {s['micro_batch']}) = {fmt(s['global_batch'] / (s['dp'] * s['micro_batch']))}: "
               "k forward-backward passes, one all-reduce."),
    "micro-batches", tolerance=0.5, absolute=True,
    why="Accumulation divides the all-reduce's bytes per token by k, but only the last micro-batch's backward can overlap it: "
        "what hides the collective is the tokens per micro-batch (problem 4), not per step.",
)


# ---- 4. the tokens per GPU where DP hides ---------------------------------------------------------------
@lru_cache(maxsize=None)
def _hiding(model: str, nodes: int, dtype: str) -> x.DPHiding:
    plan = Plan.for_era(ERA, tp=1, pp=1, dp=8 * nodes, micro_batch=1, global_batch=8 * nodes, grad_reduce_dtype=dtype)
    return x.dp_hiding_tokens_per_gpu(Model.get(model), Cluster.get("dgx-h100", nodes=nodes), plan)


def _h(s) -> x.DPHiding:
    return _hiding(s["model"], s["nodes"], s["dtype"])


def _rate(s) -> float:
    """The step model's compute rate, counted as 6 Psi FLOPs a token (the backward 4 Psi)."""
    return 4 * _params(s["model"]) / _h(s).backward_s_per_token


def _hide_envelope(s) -> float:
    return _h(s).dp_collective_s * _rate(s) / (4 * _params(s["model"]))


def _scaling_rule(s) -> float:
    c = Cluster.get("dgx-h100", nodes=s["nodes"])
    n = 8 * s["nodes"]
    return (n - 1) / n * c.gpu.bf16_flops / (c.gpus_per_node * c.inter.bandwidth_bytes_per_s) * DTYPES[s["dtype"]] / 2


HIDING = Problem(
    "hiding", "When DP turns communication-bound",
    {"model": MODELS, "nodes": (8, 4, 16), "dtype": ("bf16", "fp32")},
    lambda s: (f"{s['model']} ({fmt(_params(s['model']) / 1e9)}B parameters) trains data-parallel on {s['nodes']} DGX H100 nodes "
               f"(Megatron-Core 2024, gradients reduced in {s['dtype']}). The engine's step model computes at {fmt(_rate(s) / 1e12)} TFLOP/s "
               f"a GPU (counting 6Ψ FLOPs a token, 4Ψ of them in the backward) and prices the step's gradient collective at "
               f"{fmt(_h(s).dp_collective_s / MS)} ms (NCCL's rates, bucketed). Only the last micro-batch's backward overlaps it. "
               "Below how many tokens per GPU per micro-batch is the collective no longer hidden?"),
    lambda s: _h(s).tokens_per_gpu, _hide_envelope,
    lambda s: (f"The backward of T tokens takes 4Ψ T / F; set it equal to the collective: T = t_DP F / (4Ψ) = "
               f"{fmt(_h(s).dp_collective_s / MS)} ms x {fmt(_rate(s) / 1e12)} TFLOP/s / (4 x {fmt(_params(s['model']) / 1e9)}e9) = "
               f"{fmt(_hide_envelope(s))} tokens. Ψ cancels at line rate: 2 x 2Ψ bytes / B against 4Ψ T / F gives T = F / B."),
    "tokens", tolerance=0.05,
    refined=_scaling_rule,
    refined_label="The rule at peak and line rate, T = (N-1)/N F_peak / B, B the node's 8 NICs (x2 for fp32 gradients)",
    why="The step model computes below peak (fewer tokens needed), while NCCL's bucketed collective pays per-bucket latency "
        "and below-line-rate bandwidth (more): the scaling book's ~2,500 tokens per GPU is the line-rate figure.",
)


# ---- 5. the critical batch ----------------------------------------------------------------------------
LOSSES = (2.0, 2.3, 2.6, 1.8)

CRITICAL = Problem(
    "critical", "The critical batch",
    {"loss": LOSSES},
    lambda s: (f"A language model's training loss has reached {s['loss']} nats per token. Kaplan et al. 2020 fit the critical batch as "
               f"B_crit(L) = B* / L^(1/α_B) with B* = {fmt(x.KAPLAN_B_STAR_TOKENS)} tokens and α_B = {x.KAPLAN_ALPHA_B}. "
               "What is the critical batch, in millions of tokens?"),
    lambda s: x.critical_batch_tokens(s["loss"]) / 1e6,
    lambda s: 2e8 / s["loss"] ** (1 / 0.21) / 1e6,
    lambda s: (f"1/α_B = {fmt(1 / x.KAPLAN_ALPHA_B)}; {s['loss']}^{fmt(1 / x.KAPLAN_ALPHA_B)} = {fmt(s['loss'] ** (1 / x.KAPLAN_ALPHA_B))}; "
               f"B_crit = 2e8 / {fmt(s['loss'] ** (1 / x.KAPLAN_ALPHA_B))} = {fmt(x.critical_batch_tokens(s['loss']) / 1e6)} M tokens. "
               "Below it, a bigger batch buys almost proportionally fewer steps; above it, mostly more tokens."),
    "M tokens", tolerance=0.05,
    why="The fit is Kaplan et al.'s, on their WebText2 tokens and models: another data set and tokenizer move B*. The critical batch "
        "grows as the loss falls, which is why runs ramp their batch up (GPT-3's batch ramp, Llama 3's 4M then 8M then 16M tokens).",
)


# ---- 6. what a batch past it costs ---------------------------------------------------------------------------
def _over(s) -> x.BatchCost:
    return x.batch_cost(s["batch_m"] * 1e6, x.critical_batch_tokens(s["loss"]))


BATCH_COST = Problem(
    "batch_cost", "What a big batch costs in tokens",
    {"loss": LOSSES, "batch_m": (16, 4, 32, 1)},
    lambda s: (f"At the same fit, the loss is {s['loss']} nats (B_crit = {fmt(x.critical_batch_tokens(s['loss']) / 1e6)} M tokens) and the run "
               f"uses a batch of {s['batch_m']} M tokens. McCandlish et al.'s trade-off: S = S_min (1 + B_crit/B) steps, "
               "E = E_min (1 + B/B_crit) tokens. How many times the fewest tokens does this batch need to reach the same loss?"),
    lambda s: _over(s).tokens_over_min,
    lambda s: 1 + s["batch_m"] * 1e6 / (2e8 / s["loss"] ** (1 / 0.21)),
    lambda s: (f"E / E_min = 1 + B / B_crit = 1 + {s['batch_m']} / {fmt(x.critical_batch_tokens(s['loss']) / 1e6)} = {fmt(_over(s).tokens_over_min)}; "
               f"the steps fall to {fmt(_over(s).steps_over_min)} x S_min. At B = B_crit both are 2x their minimum: the balanced choice."),
    "x the fewest tokens", tolerance=0.05,
    why="Far past the critical batch, more GPUs buy steps at the price of compute: a batch chosen for the cluster, not the loss, wastes tokens.",
)


# ---- 7. a decision: can DP grow to this cluster? ----------------------------------------------------------------
def _share(s) -> float:
    """The critical batch's tokens per GPU over the cluster, against the hiding threshold."""
    return x.critical_batch_tokens(s["loss"]) / (8 * s["nodes"]) / _hiding(s["model"], s["nodes"], "bf16").tokens_per_gpu


GROW = Problem(
    "grow", "Can DP alone use the cluster?",
    {"model": ("llama2-7b", "llama2-13b"), "nodes": (128, 32, 256, 64), "loss": (2.3, 2.0, 2.6)},
    lambda s: (f"{s['model']} trains data-parallel on {s['nodes']} DGX H100 nodes ({8 * s['nodes']:,} GPUs, bf16 gradients) at a loss of "
               f"{s['loss']} nats, with the global batch held at the critical batch ({fmt(x.critical_batch_tokens(s['loss']) / 1e6)} M tokens) and "
               f"each GPU running its share as one micro-batch. The engine puts the hiding threshold (problem 4) at "
               f"{fmt(_hiding(s['model'], s['nodes'], 'bf16').tokens_per_gpu)} tokens per GPU. What happens?"),
    _share,
    lambda s: 2e8 / s["loss"] ** (1 / 0.21) / (8 * s["nodes"]) / _hiding(s["model"], s["nodes"], "bf16").tokens_per_gpu,
    lambda s: (f"Each GPU's share: {fmt(x.critical_batch_tokens(s['loss']))} / {8 * s['nodes']:,} = "
               f"{fmt(x.critical_batch_tokens(s['loss']) / (8 * s['nodes']))} tokens, {fmt(_share(s))} x the threshold: "
               + ("the backward covers the all-reduce." if _share(s) >= 1 else
                  "the all-reduce outlasts the backward: shard the model (TP, PP) so fewer, larger DP replicas share the batch.")),
    "x the hiding threshold", tolerance=0.05,
    options=(Option("hides", "DP hides: each GPU's share of the critical batch covers the all-reduce", "more GPUs are always free"),
             Option("bound", "DP is communication-bound: cut the DP degree with TP or PP", "the batch per GPU does not matter"),
             Option("raise", "Raise the batch well past critical so every GPU has enough", "a bigger batch is free")),
    decide=lambda s: "hides" if _share(s) >= 1 else "bound",
    why="Raising the batch past critical always hides the collective, but costs tokens (problem 6): the critical batch caps DP's degree.",
)

CHAPTER = ProblemSet(
    NAME, "Problem set 3 · Data parallelism and the critical batch",
    (RING_BYTES, RING_TIME, ACCUMULATION, HIDING, CRITICAL, BATCH_COST, GROW),
    reading="Li et al. 2020 (PyTorch DDP: bucketing and overlap); McCandlish et al. 2018 (An Empirical Model of Large-Batch Training); "
            "Kaplan et al. 2020 Sec. 5.1; the scaling book's training chapter.",
)
VARIANTS = CHAPTER.variants
OUTCOMES = CHAPTER.outcomes_table
LAB = NAME
