"""Problem set 2, memory (labs/problems/ps02_memory.py): the bytes per parameter under each
convention the texts use, ZeRO's stages, the fewest GPUs that hold a model, activations with TP
and SP, under CP without flash attention, segment checkpointing, and which ZeRO stage fits
(labs.core.engine.exercises on labs.core.engine.memory)."""

from __future__ import annotations

import math

from labs.core.engine import exercises as x
from labs.core.engine.hardware import GPUS
from labs.core.engine.memory import activation_bytes_per_layer
from labs.core.engine.models import Model
from labs.core.problemset import Problem, ProblemSet, fmt
from labs.core.variants import Option

NAME = "ps02_memory"
GB = 1e9
MODELS = ("llama2-13b", "llama2-7b", "llama3-70b", "gpt3-175b")


def _params(key: str) -> float:
    return float(Model.get(key).params)


def _conv(key: str):
    return x.MEMORY_CONVENTIONS[key]


# ---- 1. bytes per parameter ----------------------------------------------------------------------
STATE_BYTES = Problem(
    "state_bytes", "Bytes per parameter",
    {"model": MODELS, "convention": ("adam-18", "adam-16", "adam-20", "adam-12", "adam-10", "sgd-momentum")},
    lambda s: (f"{s['model']} has {fmt(_params(s['model']) / 1e9)} billion parameters. It trains keeping "
               f"{_conv(s['convention']).parts}. How many GB of model state is that, on one GPU without sharding?"),
    lambda s: x.model_state_bytes_under(_params(s["model"]), s["convention"]) / GB,
    lambda s: _conv(s["convention"]).bytes_per_param * _params(s["model"]) / GB,
    lambda s: (f"{fmt(_conv(s['convention']).bytes_per_param)} bytes x {fmt(_params(s['model']) / 1e9)}e9 parameters = "
               f"{fmt(_conv(s['convention']).bytes_per_param * _params(s['model']) / GB)} GB ({_conv(s['convention']).source})."),
    "GB", tolerance=0.03,
    why="Activations, the allocator's fragments and NCCL's buffers come on top: the engine's estimate() counts them for a whole plan.",
    texts=("The seed of Lab 05 counts 10 bytes a parameter for mixed-precision Adam with the gradients left out, and calls it the total; "
           "'16 minus the gradients' = 14 is no convention either. 10 is the scaling book's count only because it keeps no gradients."),
)


# ---- 2. ZeRO's stages -----------------------------------------------------------------------------
def _zero_envelope(s) -> float:
    p, n, z = _params(s["model"]), s["dp"], s["stage"]
    per = {0: 16, 1: 4 + 12 / n, 2: 2 + 14 / n, 3: 16 / n}[z]
    return per * p / GB


ZERO_STAGE = Problem(
    "zero_stage", "ZeRO's stages",
    {"model": MODELS, "stage": (1, 2, 3), "dp": (64, 8, 512)},
    lambda s: (f"{s['model']} ({fmt(_params(s['model']) / 1e9)}B parameters, mixed-precision Adam: 16 bytes each) trains on "
               f"{s['dp']} data-parallel GPUs under ZeRO stage {s['stage']}. How many GB of model state does each GPU hold?"),
    lambda s: x.model_state_bytes_under(_params(s["model"]), "adam-16", s["stage"], s["dp"]) / GB,
    _zero_envelope,
    lambda s: ("Stage 1 shards the 12 optimizer bytes: (4 + 12/N) Ψ; stage 2 the gradients too: (2 + 14/N) Ψ; stage 3 everything: 16 Ψ / N. "
               f"Here: {fmt(_zero_envelope(s))} GB."),
    "GB", tolerance=0.03,
    why="ZeRO shards model state only: activations are not sharded, and stage 3 also needs room for the layer it gathers.",
)


# ---- 3. the fewest GPUs -----------------------------------------------------------------------------
GPU_KEYS = ("h100-sxm", "a100-sxm-80gb", "h200-sxm")


def _fewest(s) -> float:
    full = x.model_state_bytes_under(_params(s["model"]), "adam-16")
    return float(math.ceil(full / GPUS[s["gpu"]].hbm_bytes))


FEWEST_GPUS = Problem(
    "fewest_gpus", "How few GPUs can hold it?",
    {"model": ("llama3-70b", "llama2-70b", "gpt3-175b", "llama2-13b"), "gpu": GPU_KEYS},
    lambda s: (f"{s['model']} ({fmt(_params(s['model']) / 1e9)}B parameters) trains with mixed-precision Adam under ZeRO-3 on "
               f"{GPUS[s['gpu']].name} GPUs ({fmt(GPUS[s['gpu']].hbm_bytes / GB)} GB of HBM each, as nvidia-smi shows it). Counting the model "
               "state alone, what is the fewest GPUs that can hold it?"),
    _fewest, lambda s: float(math.ceil(16 * _params(s["model"]) / GPUS[s["gpu"]].hbm_bytes)),
    lambda s: (f"16 x {fmt(_params(s['model']) / 1e9)}e9 = {fmt(16 * _params(s['model']) / GB)} GB; divided by "
               f"{fmt(GPUS[s['gpu']].hbm_bytes / GB)} GB and rounded up: {fmt(_fewest(s))} GPUs, before a single activation."),
    "GPUs", tolerance=0.5, absolute=True,
    why="A real job needs more: activations, the gathered layer's weights, NCCL buffers and the allocator's margin all want HBM too.",
    texts=("A public worked answer says a 70B model with Adam fits on 2 GPUs under ZeRO-3: its 16 bytes a parameter are "
           "1.12 TB, fourteen 80 GB GPUs before any activation."),
)


# ---- 4. activations with TP and SP ----------------------------------------------------------------
ACT_MODELS = ("gpt3-175b", "llama2-70b", "llama2-13b")


def _shape(key: str):
    m = Model.get(key)
    return m.layers, m.hidden, m.heads


def _act_gb(s) -> float:
    layers, h, a = _shape(s["model"])
    return layers * activation_bytes_per_layer(s["seq"], s["b"], h, a, s["tp"], True, s["recompute"]) / GB


def _act_envelope(s) -> float:
    layers, h, a = _shape(s["model"])
    sbh = s["seq"] * s["b"] * h
    per = 34 + (5 * a * s["seq"] / h if s["recompute"] == "none" else 0)
    return layers * sbh * per / s["tp"] / GB


ACTIVATIONS = Problem(
    "activations", "Activations under TP and SP",
    {"model": ACT_MODELS, "seq": (2048, 4096), "b": (1, 2), "tp": (8, 4), "recompute": ("selective", "none")},
    lambda s: (f"{s['model']} ({_shape(s['model'])[0]} layers, hidden {_shape(s['model'])[1]:,}, {_shape(s['model'])[2]} heads) trains on "
               f"{s['seq']:,}-token sequences, micro-batch {s['b']}, TP {s['tp']} with sequence parallelism, "
               f"{'selective recomputation' if s['recompute'] == 'selective' else 'no recomputation, no flash attention'}. The first stage "
               "of a 1F1B pipeline holds L layers' worth of activations (p micro-batches of L/p layers). How many GB is that per GPU?"),
    _act_gb, _act_envelope,
    lambda s: ("Korthikanti et al. 2022, bf16 activations and 1-byte dropout masks: a layer keeps s b h (34 + 5 a s / h) / t bytes with SP, "
               "34 s b h / t with selective recomputation (the attention scores recomputed). "
               f"Times {_shape(s['model'])[0]} layers: {fmt(_act_envelope(s))} GB."),
    "GB", tolerance=0.05,
    why="These are GPT's layers (a 4h GeLU MLP, dropout); a Llama layer (SwiGLU, GQA, no dropout) keeps other tensors, and flash attention never stores the scores.",
    texts="Counting bf16 activations as 1 byte each halves every term: the 34 already counts 2 bytes a value (and 1 per dropout mask).",
)


# ---- 5. context parallelism without flash attention --------------------------------------------------
def _cp_gb(s) -> float:
    _, h, a = _shape("llama2-7b")
    return x.cp_activation_bytes_per_layer(s["seq"], 1, h, a, s["cp"]) / GB


def _cp_envelope(s) -> float:
    _, h, a = _shape("llama2-7b")
    q = s["seq"] / s["cp"]
    return (q * h * 34 + 5 * a * q * s["seq"]) / GB


def _cp_flash(s) -> float:
    _, h, a = _shape("llama2-7b")
    return activation_bytes_per_layer(s["seq"] // s["cp"], 1, h, a, 1, False, "selective") / GB


CP_NO_FLASH = Problem(
    "cp_no_flash", "Long context without flash attention",
    {"seq": (65536, 32768, 131072), "cp": (8, 4, 16)},
    lambda s: (f"A layer of hidden {_shape('llama2-7b')[1]:,} with {_shape('llama2-7b')[2]} heads sees {s['seq']:,}-token sequences split over "
               f"{s['cp']} context-parallel GPUs (micro-batch 1, no TP). Without flash attention each GPU keeps the attention scores of its "
               "queries against every key. How many GB does one layer keep per GPU?"),
    _cp_gb, _cp_envelope,
    lambda s: (f"Each GPU has s/c = {s['seq'] // s['cp']:,} tokens: 34 (s/c) b h bytes for the token-wise tensors, plus 5 a (s/c) s b for the "
               f"scores of its queries against all s keys. Total {fmt(_cp_envelope(s))} GB: the quadratic term dominates."),
    "GB", tolerance=0.05,
    refined=_cp_flash, refined_label="With flash attention (the scores never stored)",
    why="Flash attention keeps only the output and the softmax statistics: what is left scales with s/c, not s^2/c.",
)


# ---- 6. segment checkpointing ------------------------------------------------------------------------
def _seg(s) -> float:
    layers, h, a = _shape(s["model"])
    return x.optimal_segments(layers, s["seq"], 1, h, a)


def _seg_envelope(s) -> float:
    layers, h, a = _shape(s["model"])
    return min(layers, math.sqrt(layers * (34 + 5 * a * s["seq"] / h) / 2))


SEGMENTS = Problem(
    "segments", "How many checkpoints?",
    {"model": ACT_MODELS, "seq": (2048, 1024, 4096)},
    lambda s: (f"{s['model']} ({_shape(s['model'])[0]} layers, hidden {_shape(s['model'])[1]:,}, {_shape(s['model'])[2]} heads, {s['seq']:,} tokens, "
               "no TP, no flash attention) is checkpointed in k segments: each segment keeps only its input (2 s b h bytes), and the "
               "backward re-runs one segment at a time, keeping all its layers' activations. Which k minimises the memory (a real number)?"),
    _seg, _seg_envelope,
    lambda s: ("Memory k · 2sbh + (L/k) · sbh(34 + 5as/h) is least at k = √(L (34 + 5as/h) / 2), at most L (a checkpoint at every "
               f"layer): {fmt(_seg_envelope(s))}, not Chen et al.'s √L = {fmt(math.sqrt(_shape(s['model'])[0]))}: a boundary is far cheaper than a layer."),
    "segments", tolerance=0.05,
    refined=lambda s: math.sqrt(_shape(s["model"])[0]), refined_label="Chen et al.'s √L",
    why="√L assumes a checkpoint costs as much as a layer's activations; a layer keeps (34 + 5as/h)/2 times its input.",
)


# ---- 7. a lighter optimizer ----------------------------------------------------------------------------
SGD_SAVING = Problem(
    "sgd_saving", "What SGD saves",
    {"model": MODELS, "optimizer": ("sgd-momentum", "sgd")},
    lambda s: (f"{s['model']} ({fmt(_params(s['model']) / 1e9)}B parameters) moves from mixed-precision Adam (16 bytes a parameter) to "
               f"{_conv(s['optimizer']).parts}. How many GB of model state does that save, unsharded?"),
    lambda s: (x.model_state_bytes_under(_params(s["model"]), "adam-16") - x.model_state_bytes_under(_params(s["model"]), s["optimizer"])) / GB,
    lambda s: (16 - _conv(s["optimizer"]).bytes_per_param) * _params(s["model"]) / GB,
    lambda s: (f"(16 - {fmt(_conv(s['optimizer']).bytes_per_param)}) x {fmt(_params(s['model']) / 1e9)}e9 = "
               f"{fmt((16 - _conv(s['optimizer']).bytes_per_param) * _params(s['model']) / GB)} GB: Adam's second moment (and with plain SGD its first too)."),
    "GB", tolerance=0.03,
    why="The fp32 master copy stays: it is what keeps small updates from vanishing in bf16.",
)


# ---- 8. which ZeRO stage fits: a decision ------------------------------------------------------------
STAGES = (0, 1, 2, 3)


def _first_fit(s) -> float:
    budget = s["budget_gb"] * GB
    fits = [z for z in STAGES if x.model_state_bytes_under(_params(s["model"]), "adam-16", z, s["dp"]) <= budget]
    return float(fits[0]) if fits else 4.0


def _first_fit_envelope(s) -> float:
    p, n = _params(s["model"]), s["dp"]
    per = (16, 4 + 12 / n, 2 + 14 / n, 16 / n)
    fits = [z for z in STAGES if per[z] * p <= s["budget_gb"] * GB]
    return float(fits[0]) if fits else 4.0


ZERO_FIT = Problem(
    "zero_fit", "The first ZeRO stage that fits",
    {"model": ("llama2-13b", "llama2-7b", "llama3-70b"), "dp": (16, 64, 8), "budget_gb": (40, 20, 60)},
    lambda s: (f"{s['model']} ({fmt(_params(s['model']) / 1e9)}B parameters, mixed-precision Adam) on {s['dp']} data-parallel GPUs; "
               f"each GPU can spare {s['budget_gb']} GB for model state (the rest is for activations). Which is the lowest ZeRO stage that fits?"),
    _first_fit, _first_fit_envelope,
    lambda s: (f"Per GPU: stage 0 {fmt(16 * _params(s['model']) / GB)} GB, stage 1 {fmt((4 + 12 / s['dp']) * _params(s['model']) / GB)}, "
               f"stage 2 {fmt((2 + 14 / s['dp']) * _params(s['model']) / GB)}, stage 3 {fmt(16 / s['dp'] * _params(s['model']) / GB)} GB "
               f"against {s['budget_gb']} GB."),
    "stage", tolerance=0.5, absolute=True,
    options=(Option("z0", "Stage 0: plain data parallelism", "sharding is never needed"),
             Option("z1", "Stage 1: shard the optimizer state", "the optimizer is all that matters"),
             Option("z2", "Stage 2: shard gradients too", "gradients dominate"),
             Option("z3", "Stage 3: shard the weights too", "always shard everything"),
             Option("none", "None: more GPUs (or TP/PP) are needed", "ZeRO shards activations")),
    decide=lambda s: ("z0", "z1", "z2", "z3", "none")[int(_first_fit(s))],
    why="Each stage adds communication: stage 3 gathers every layer's weights in the forward and again in the backward (1.5x DP's bytes).",
)

CHAPTER = ProblemSet(
    NAME, "Problem set 2 · Memory: the 16 bytes, ZeRO, activations, recompute",
    (STATE_BYTES, ZERO_STAGE, FEWEST_GPUS, ACTIVATIONS, CP_NO_FLASH, SEGMENTS, SGD_SAVING, ZERO_FIT),
    reading="Rajbhandari et al. 2020 (ZeRO) Sec. 3 and Table 1; Korthikanti et al. 2022 Sec. 4; Chen et al. 2016 (sublinear memory).",
)
VARIANTS = CHAPTER.variants
OUTCOMES = CHAPTER.outcomes_table
LAB = NAME
