"""Problem set 6, context and expert parallelism (labs/problems/ps06_context_experts.py): ring
attention's K/V bytes per step and when they hide, Ulysses' two all-to-alls and its degree,
the causal mask's load imbalance, MoE dispatch and combine bytes, and the tokens a capacity
factor drops (labs.core.engine.context, labs.core.engine.experts, labs.core.engine.exercises)."""

from __future__ import annotations

import math

import numpy as np

from labs.core.engine import exercises as x
from labs.core.engine.context import (
    causal_imbalance,
    kv_heads_per_tp_rank,
    query_heads_per_tp_rank,
    ulysses_fits,
    ulysses_qkv_bytes,
)
from labs.core.engine.experts import (
    all_to_all_cost,
    poisson_drop_fraction,
    tokens_per_expert,
)
from labs.core.engine.gemm import attention_rate
from labs.core.engine.hardware import GPUS, LINKS, Cluster
from labs.core.engine.models import Model
from labs.core.problemset import Problem, ProblemSet, fmt
from labs.core.variants import Option

NAME = "ps06_context_experts"
MB, GB, TFLOPS = 1e6, 1e9, 1e12
BF16 = 2.0  # bytes a bf16 value


def _m(key: str) -> Model:
    return Model.get(key)


def _heads(key) -> str:
    m = key if isinstance(key, Model) else _m(key)
    return f"{m.heads} query heads and {m.kv_head_count} K/V heads of {m.head_size}"


# ---- 1. ring attention's K/V block ------------------------------------------------------------
def _kv_mb(s) -> float:
    return x.ring_kv_block_bytes(_m(s["model"]), s["seq"], s["cp"], s["tp"]) / MB


def _kv_envelope(s) -> float:
    m = _m(s["model"])
    return 2 * (s["seq"] / s["cp"]) * m.kv_head_count * m.head_size / s["tp"] * BF16 / MB


RING_KV = Problem(
    "ring_kv", "What a ring step passes",
    {"model": ("llama3-70b", "llama3-8b", "llama3-405b", "gpt3-175b"), "seq": (131072, 32768, 65536), "cp": (16, 8, 4), "tp": (8, 4)},
    lambda s: (f"{s['model']} ({_heads(s['model'])}) trains on {s['seq']:,}-token sequences with ring attention over {s['cp']} "
               f"context-parallel GPUs, TP {s['tp']} inside each (micro-batch 1, bf16). At each step of the ring a GPU passes its "
               "block of keys and values to the next. How many MB is that block?"),
    _kv_mb, _kv_envelope,
    lambda s: (f"Each GPU holds s/cp = {s['seq'] // s['cp']:,} tokens; K and V are n_kv x d_head = "
               f"{_m(s['model']).kv_head_count} x {_m(s['model']).head_size} wide each, split over TP {s['tp']}: "
               f"2 x {s['seq'] // s['cp']:,} x {fmt(_m(s['model']).kv_head_count * _m(s['model']).head_size)} / {s['tp']} x 2 bytes = "
               f"{fmt(_kv_envelope(s))} MB. Queries never travel: only K and V go round."),
    "MB", tolerance=0.03,
    refined=lambda s: (s["cp"] - 1) * _kv_mb(s), refined_label="The whole forward ring of one layer (cp - 1 hops)",
    why="A ring takes cp - 1 hops a layer in forward, and the backward passes K and V again with their gradients (3x the forward's bytes in all); grouped-query attention shrinks every hop by heads / kv_heads against multi-head attention.",
)


# ---- 2. when the hop hides -------------------------------------------------------------------
KERNEL = {"hopper": "fa3", "blackwell": "cudnn", "ampere": "fa2"}


def _hide_parts(s):
    gpu = GPUS[s["gpu"]]
    link = LINKS[gpu.nvlink if s["link"] == "nvlink" else s["link"]]
    return gpu, link


def _hide_tokens(s) -> float:
    gpu, link = _hide_parts(s)
    return x.ring_hiding_tokens(_m(s["model"]), gpu.bf16_flops, link.bandwidth_bytes_per_s)


def _hide_envelope(s) -> float:
    gpu, link = _hide_parts(s)
    m = _m(s["model"])
    return gpu.bf16_flops * m.kv_head_count * BF16 / (2 * link.bandwidth_bytes_per_s * m.heads)


def _hide_refined(s) -> float:
    gpu, link = _hide_parts(s)
    return x.ring_hiding_tokens(_m(s["model"]), attention_rate(gpu, KERNEL[gpu.arch]), link.effective_bytes_per_s)


RING_HIDES = Problem(
    "ring_hides", "When the ring's hop hides",
    {"model": ("llama3-70b", "gpt3-175b", "llama3-405b"), "gpu": ("h100-sxm", "b200", "a100-sxm-80gb"), "link": ("nvlink", "ib-ndr")},
    lambda s: (f"Ring attention for {s['model']} ({_heads(s['model'])}) on {_hide_parts(s)[0].name} GPUs "
               f"({fmt(_hide_parts(s)[0].bf16_flops / TFLOPS)} TFLOP/s bf16), the CP ring on {_hide_parts(s)[1].name} "
               f"({fmt(_hide_parts(s)[1].bandwidth_bytes_per_s / GB)} GB/s each way). A step computes one block of n queries against n keys "
               "(4 n² x heads x d_head FLOPs) while the next K/V block (2 n x kv_heads x d_head bf16 values) travels. At peak and line rate, "
               "from how many tokens per GPU does the hop hide behind the attention?"),
    _hide_tokens, _hide_envelope,
    lambda s: ("Compute 4 n² a d / F against bytes 4 n a_kv d / B (TP divides both): equal at n* = F a_kv / (B a) = "
               f"{fmt(_hide_parts(s)[0].bf16_flops / TFLOPS)}e12 x {_m(s['model']).kv_head_count} / ({fmt(_hide_parts(s)[1].bandwidth_bytes_per_s / GB)}e9 x "
               f"{_m(s['model']).heads}) = {fmt(_hide_envelope(s))} tokens. Compute grows with n², bytes with n: long sequences always hide."),
    "tokens", tolerance=0.03,
    refined=_hide_refined, refined_label="At the attention kernel's measured rate and NCCL's achieved bandwidth (the engine)",
    why="Fused attention runs well below the bf16 peak (FA2, FA3, cuDNN by GPU), which leaves more time to hide the hop; NCCL's send/recv is below line rate, which leaves less.",
)


# ---- 2b. does the hop hide? A decision -------------------------------------------------------------
def _hide_ratio(s) -> float:
    return (s["seq"] / s["cp"]) / _hide_tokens(s)


HOP_HIDES = Problem(
    "hop_hides", "Does the hop hide?",
    {"model": ("llama3-405b", "llama3-70b", "gpt3-175b"), "gpu": ("h100-sxm", "b200"), "link": ("ib-ndr", "nvlink"),
     "seq": (32768, 131072, 8192), "cp": (16, 8, 32)},
    lambda s: (f"{s['model']} ({_heads(s['model'])}) runs ring attention on {s['seq']:,}-token sequences over CP {s['cp']}, on "
               f"{_hide_parts(s)[0].name} GPUs ({fmt(_hide_parts(s)[0].bf16_flops / TFLOPS)} TFLOP/s bf16) with the ring on "
               f"{_hide_parts(s)[1].name} ({fmt(_hide_parts(s)[1].bandwidth_bytes_per_s / GB)} GB/s each way). At peak and line rate, does a ring "
               "step's K/V hop hide behind that step's attention?"),
    _hide_ratio, lambda s: (s["seq"] / s["cp"]) / _hide_envelope(s),
    lambda s: (f"Each GPU holds n = {s['seq'] // s['cp']:,} tokens; the hop hides from n* = F a_kv / (B a) = {fmt(_hide_envelope(s))} tokens: "
               f"n / n* = {fmt(_hide_ratio(s))}, so " + ("it hides." if _hide_ratio(s) >= 1 else "the ring waits for it.")),
    "x the tokens where it hides", tolerance=0.03,
    options=(Option("hidden", "Hidden: the attention takes longer than the hop", "communication is always hidden"),
             Option("exposed", "Exposed: the hop takes longer than the attention", "CP's bytes never hide")),
    decide=lambda s: "hidden" if _hide_ratio(s) >= 1 else "exposed",
    why="A causal ring's diagonal steps do half the work, and fused attention runs below peak (more time to hide); across nodes the NIC, not NVLink, carries each hop.",
)


# ---- 3. Ulysses' two all-to-alls -------------------------------------------------------------
ULYSSES_CASES = ("llama3-405b/8/16", "llama3-70b/8/8", "llama3-8b/4/8", "llama3-70b/4/16", "llama3-405b/8/4", "llama3-8b/1/8")


def _case(s):
    key, tp, cp = s["case"].split("/")
    return _m(key), int(tp), int(cp)


def _ulysses_mb(s) -> float:
    m, tp, cp = _case(s)
    tokens = s["seq"] // cp
    qkv = ulysses_qkv_bytes(m, tokens, tp, cp, BF16)
    out = tokens * m.score_dim / tp * BF16
    return float((cp - 1) / cp * (qkv + out)) / MB


def _ulysses_envelope(s) -> float:
    m, tp, cp = _case(s)
    n, q, kv = s["seq"] / cp, m.heads / tp, m.kv_head_count / tp
    d = m.head_size
    return (cp - 1) / cp * n * (2 * q + 2 * kv * max(1.0, cp / kv)) * d * BF16 / MB


ULYSSES = Problem(
    "ulysses", "Ulysses' two all-to-alls",
    {"case": ULYSSES_CASES, "seq": (131072, 65536, 32768)},
    lambda s: (f"{s['case'].split('/')[0]} ({_heads(_case(s)[0])}), TP {_case(s)[1]}, runs DeepSpeed-Ulysses over {_case(s)[2]} GPUs on "
               f"{s['seq']:,}-token sequences (micro-batch 1, bf16). Before attention an all-to-all trades each GPU's s/cp tokens x all its "
               "heads for all s tokens x its share of the heads (Q, K and V); after it, another all-to-all sends the output back. Where a TP "
               "rank holds fewer K/V heads than the degree, each K/V head is repeated to every GPU whose query heads share it. How many MB "
               "does each GPU send in the two forward all-to-alls of one layer?"),
    _ulysses_mb, _ulysses_envelope,
    lambda s: (f"Per TP rank: {_case(s)[0].heads / _case(s)[1]:g} query heads, {_case(s)[0].kv_head_count / _case(s)[1]:g} K/V heads, "
               f"repeated max(1, cp / n_kv) = {max(1.0, _case(s)[2] * _case(s)[1] / _case(s)[0].kv_head_count):g} times. An all-to-all keeps 1/cp "
               "of what it holds: (cp-1)/cp x s/cp x (Q + K + V + output) x d_head x 2 bytes = "
               f"{fmt(_ulysses_envelope(s))} MB."),
    "MB", tolerance=0.03,
    why="The bytes per GPU fall as 1/cp while the ring's K/V hops do not shrink with cp: Ulysses is cheap, but every all-to-all is exposed (attention waits for all heads), and its degree is capped by the heads.",
)


# ---- 4. how far Ulysses goes --------------------------------------------------------------------
DEGREES = (1, 2, 4, 8, 16, 32, 64, 128)


def _max_degree(s) -> float:
    m = _m(s["model"])
    q, kv = query_heads_per_tp_rank(m, s["tp"]), kv_heads_per_tp_rank(m, s["tp"])
    return float(max(c for c in DEGREES if ulysses_fits(q, kv, c)))


def _max_envelope(s) -> float:
    m = _m(s["model"])
    return float(2 ** int(math.log2(m.heads / s["tp"])))


ULYSSES_DEGREE = Problem(
    "ulysses_degree", "How far Ulysses goes",
    {"model": ("llama3-405b", "llama3-70b", "llama3-8b", "mixtral-8x7b", "gpt-oss-120b"), "tp": (8, 4, 2)},
    lambda s: (f"{s['model']} has {_heads(s['model'])}. Under TP {s['tp']}, what is the largest power-of-two DeepSpeed-Ulysses degree it can "
               "run, repeating K/V heads where a TP rank holds fewer of them than the degree?"),
    _max_degree, _max_envelope,
    lambda s: (f"Each CP rank must own whole query heads: the degree divides heads / tp = {_m(s['model']).heads} / {s['tp']} = "
               f"{_m(s['model']).heads / s['tp']:g}, so at most {_max_envelope(s):g}. The {_m(s['model']).kv_head_count / s['tp']:g} K/V "
               "head(s) per TP rank do not bound it: each is sent to cp / n_kv ranks, at that multiple of their bytes."),
    "GPUs", tolerance=0.5, absolute=True,
    refined=lambda s: kv_heads_per_tp_rank(_m(s["model"]), s["tp"]), refined_label="Without repeating K/V heads (the K/V heads per TP rank)",
    why="An implementation that splits K/V heads as it splits query heads stops at the K/V heads per TP rank: under grouped-query attention that is several times lower.",
)


# ---- 5. the causal mask's imbalance ---------------------------------------------------------------
CAUSAL = Problem(
    "causal", "The causal mask's imbalance",
    {"cp": (8, 4, 16, 32), "seq": (131072, 65536)},
    lambda s: (f"A {s['seq']:,}-token sequence is cut into {s['cp']} contiguous chunks, one per context-parallel GPU, under a causal mask "
               "(a query attends to the keys before it). The ring waits at every step for the busiest GPU. How many times the mean "
               "attention work does the busiest GPU do?"),
    lambda s: causal_imbalance(s["cp"], "contiguous", s["seq"]),
    lambda s: 2 - 1 / s["cp"],
    lambda s: (f"GPU i's queries see i full blocks and half of its own: i + 1/2 blocks of work; the last does cp - 1/2, the mean is cp/2, "
               f"so the ratio is 2 - 1/cp = {fmt(2 - 1 / s['cp'])}. Attention runs at 1/{fmt(2 - 1 / s['cp'])} of the balanced speed."),
    "x the mean", tolerance=0.02, agree=1e-3,
    refined=lambda s: causal_imbalance(s["cp"], "zigzag", s["seq"]), refined_label="Zig-zag: 2 cp chunks, GPU i holding chunks i and 2cp - 1 - i",
    why="Pairing a chunk from the start with its mirror from the end gives every GPU the same work (Transformer Engine, Megatron-Core, Llama 3's CP); the formula drops the diagonal's half-pair, a 1/s effect.",
)


# ---- 6. MoE dispatch and combine -------------------------------------------------------------------
MOE_MODELS = ("deepseek-v3", "qwen3-235b-a22b", "gpt-oss-120b", "qwen3-30b-a3b")


def _moe_mb(s) -> float:
    m = _m(s["model"])
    rack = Cluster.get("gb200-nvl72", domains=1)
    _, sent = all_to_all_cost(m, rack, np.array([float(s["tokens"])]), 1, np.array([float(s["ep"])]), np.array([0.0]), float(s["dispatch"]))
    return float(sent[0]) / m.moe_share / MB  # one MoE layer


def _moe_envelope(s) -> float:
    m = _m(s["model"])
    return s["tokens"] * m.experts_per_token * m.hidden * (s["dispatch"] + BF16) * (s["ep"] - 1) / s["ep"] / MB


def _moe_dgx(s) -> float:
    m = _m(s["model"])
    nodes = max(1, s["ep"] // 8)
    _, sent = all_to_all_cost(m, Cluster.get("dgx-h100", nodes=nodes), np.array([float(s["tokens"])]), 1, np.array([float(s["ep"])]),
                              np.array([0.0]), float(s["dispatch"]))
    return float(sent[0]) / m.moe_share / MB


MOE_BYTES = Problem(
    "moe_bytes", "Dispatch and combine",
    {"model": MOE_MODELS, "tokens": (8192, 4096, 16384), "ep": (64, 8, 16, 32), "dispatch": (1, 2)},
    lambda s: (f"{s['model']} routes each token to {_m(s['model']).experts_per_token} of its {_m(s['model']).experts} experts (hidden "
               f"{_m(s['model']).hidden:,}). Each GPU of an EP {s['ep']} group inside one GB200 NVL72 rack holds {s['tokens']:,} tokens; routing "
               f"is balanced. The dispatch sends each token's hidden state in {'FP8 (1 byte)' if s['dispatch'] == 1 else 'bf16'} to its experts' "
               "GPUs, the combine brings the outputs back in bf16. How many MB does each GPU send for one MoE layer's forward?"),
    _moe_mb, _moe_envelope,
    lambda s: (f"Each of T k copies goes elsewhere with probability (ep-1)/ep: T x k x h x (dispatch + combine bytes) x (ep-1)/ep = "
               f"{s['tokens']:,} x {_m(s['model']).experts_per_token} x {_m(s['model']).hidden:,} x ({s['dispatch']} + 2) x "
               f"{s['ep'] - 1}/{s['ep']} = {fmt(_moe_envelope(s))} MB: it does not shrink as EP grows."),
    "MB", tolerance=0.03,
    refined=_moe_dgx, refined_label="The same EP group over DGX H100 nodes of 8 (the engine: NICs and NVLink together)",
    why="Across nodes DeepSeek-V3's dispatch sends a token once per destination node over the NICs and forwards it over NVLink there: more bytes in all (the engine counts both hops), fewer of them on the slow NICs, which then set the time.",
)


# ---- 7. the tokens a capacity factor drops -------------------------------------------------------
def _lam(s) -> float:
    return tokens_per_expert(_m(s["model"]), s["tokens"], s["ep"])


def _drop_envelope(s) -> float:
    return 100 * 1 / math.sqrt(2 * math.pi * _lam(s))


DROPS = Problem(
    "drops", "What capacity factor 1 drops",
    {"model": ("deepseek-v3", "qwen3-235b-a22b", "gpt-oss-120b", "qwen3-30b-a3b"), "tokens": (4096, 1024, 2048), "ep": (8, 4, 16)},
    lambda s: (f"{s['model']} ({_m(s['model']).experts} experts, top-{_m(s['model']).experts_per_token}), EP {s['ep']}, {s['tokens']:,} tokens a "
               "GPU: each expert receives ep x T x k / E tokens on average. The router is balanced in expectation but each token chooses "
               "independently (an expert's load is Poisson). With capacity factor 1.0 (each expert keeps at most its mean load), what "
               "percentage of the routed tokens is dropped?"),
    lambda s: 100 * poisson_drop_fraction(_lam(s), 1.0), _drop_envelope,
    lambda s: (f"Mean load λ = {s['ep']} x {s['tokens']:,} x {_m(s['model']).experts_per_token} / {_m(s['model']).experts} = {fmt(_lam(s))}. "
               "The overflow of a load with standard deviation √λ above its mean is √λ x φ(0) = √(λ / 2π) tokens: "
               f"1 / √(2π λ) = {fmt(_drop_envelope(s))}% of the load."),
    "%", tolerance=0.05, agree=0.03,
    refined=lambda s: 100 * poisson_drop_fraction(_lam(s), 1.25), refined_label="At capacity factor 1.25",
    why="The normal approximation is what the Poisson load becomes at large λ; 25% of headroom cuts the drops by orders of magnitude, at 1.25x the expert GEMMs' padded work.",
)

CHAPTER = ProblemSet(
    NAME, "Problem set 6 · Context and expert parallelism",
    (RING_KV, RING_HIDES, HOP_HIDES, ULYSSES, ULYSSES_DEGREE, CAUSAL, MOE_BYTES, DROPS),
    reading=("Liu et al. 2023 (Ring Attention); Jacobs et al. 2023 (DeepSpeed-Ulysses); Llama Team 2024 Sec. 3.3.2 (context parallelism); "
             "Lepikhin et al. 2020 (GShard) Sec. 2.2 and Fedus et al. 2021 (Switch) Sec. 2.2; DeepSeek-AI 2024 (DeepSeek-V3) Sec. 3.2.2."),
)
VARIANTS = CHAPTER.variants
OUTCOMES = CHAPTER.outcomes_table
LAB = NAME
