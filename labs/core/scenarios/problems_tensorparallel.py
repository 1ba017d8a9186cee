"""Problem set 4, tensor and sequence parallelism (labs/problems/ps04_tensorparallel.py): a layer's
TP bytes (2 all-reduces forward, 2 backward), SP's all-gathers and reduce-scatters with the
backward's re-gather, their time on NVLink, the TP degree past which TP cannot hide behind its
GEMMs (exercises.tp_hiding_degree), TP across nodes, what SP saves in activations, and which
recipe fits (labs.core.engine.exercises, memory, topology)."""

from __future__ import annotations

from labs.core.engine import exercises as x
from labs.core.engine.hardware import Cluster
from labs.core.engine.memory import activation_bytes_per_layer
from labs.core.engine.models import Model
from labs.core.engine.topology import group_cost
from labs.core.problemset import Problem, ProblemSet, fmt
from labs.core.variants import Option

NAME = "ps04_tensorparallel"
MB, GB, US = 1e6, 1e9, 1e-6
MODELS = ("llama2-70b", "gpt3-175b", "llama2-13b")
NODES = ("dgx-h100", "dgx-a100", "dgx-b200")


def _shape(key: str) -> tuple[int, int, int]:
    m = Model.get(key)
    return m.layers, m.hidden, m.heads


def _act(s) -> float:
    """The b x s x h bf16 activation every TP collective moves."""
    return 2 * s["b"] * s["seq"] * _shape(s["model"])[1]


def _who(s) -> str:
    layers, h, a = _shape(s["model"])
    return f"{s['model']} ({layers} layers, hidden {h:,}, {a} heads)"


# ---- 1. a layer's TP bytes -------------------------------------------------------------------------
TP_BYTES = Problem(
    "tp_bytes", "A layer's TP traffic",
    {"model": MODELS, "seq": (4096, 2048, 8192), "b": (1, 2), "tp": (8, 4, 2)},
    lambda s: (f"{_who(s)} runs Megatron tensor parallelism over {s['tp']} GPUs, no sequence parallelism, on {s['seq']:,}-token sequences "
               f"at micro-batch {s['b']} (bf16). Each layer all-reduces its b·s·h activation twice in the forward (after attention, after the MLP) "
               "and twice in the backward. How many MB does each GPU send per layer per micro-batch, forward and backward?"),
    lambda s: x.tp_layer_bytes_sent(s["seq"] * s["b"], _shape(s["model"])[1], s["tp"]) / MB,
    lambda s: 4 * 2 * (s["tp"] - 1) / s["tp"] * _act(s) / MB,
    lambda s: (f"A = 2 bytes x {s['b']} x {s['seq']:,} x {_shape(s['model'])[1]:,} = {fmt(_act(s) / MB)} MB; a ring all-reduce sends 2(t-1)/t A; "
               f"four of them: 4 x 2 x {s['tp'] - 1}/{s['tp']} x {fmt(_act(s) / MB)} = {fmt(4 * 2 * (s['tp'] - 1) / s['tp'] * _act(s) / MB)} MB. "
               "Per layer it grows with h; the layer's FLOPs grow with h²: that is why TP scales better on wide models."),
    "MB", tolerance=0.03,
    why="With full recomputation the forward runs twice, and its two all-reduces with it: the step model counts 1.5x these bytes.",
)


# ---- 2. SP, with the backward's re-gather --------------------------------------------------------------
SP_REGATHER = Problem(
    "sp_regather", "Sequence parallelism's traffic",
    {"model": MODELS, "seq": (4096, 2048, 8192), "b": (1, 2), "tp": (8, 4)},
    lambda s: (f"The same layer of {_who(s)}, now with sequence parallelism at TP {s['tp']} ({s['seq']:,} tokens, micro-batch {s['b']}, bf16). "
               "Each all-reduce becomes an all-gather and a reduce-scatter of the b·s·h activation, and, as Megatron does, the backward "
               "all-gathers again the inputs of attention's QKV and the MLP's first linear (it kept only its shard) for the weight gradients. "
               "How many MB does each GPU send per layer per micro-batch, forward and backward?"),
    lambda s: x.tp_layer_bytes_sent(s["seq"] * s["b"], _shape(s["model"])[1], s["tp"], True) / MB,
    lambda s: 10 * (s["tp"] - 1) / s["tp"] * _act(s) / MB,
    lambda s: (f"Forward: all-gather, reduce-scatter around attention and around the MLP (4 x (t-1)/t A); backward the same 4, plus 2 re-gathers: "
               f"10 x {s['tp'] - 1}/{s['tp']} x {fmt(_act(s) / MB)} MB = {fmt(10 * (s['tp'] - 1) / s['tp'] * _act(s) / MB)} MB: "
               "an all-gather plus a reduce-scatter is exactly one all-reduce, so SP costs nothing extra but the re-gathers (1.25x plain TP)."),
    "MB", tolerance=0.03,
    refined=lambda s: x.tp_layer_bytes_sent(s["seq"] * s["b"], _shape(s["model"])[1], s["tp"], True, False) / MB,
    refined_label="The step model's count (no re-gather)",
    why="Megatron launches the re-gather before the input-gradient GEMM and overlaps it, so the step model charges it no time and leaves its bytes out; it still loads NVLink.",
)


# ---- 3. SP's forward on NVLink ---------------------------------------------------------------------------
def _node(s) -> Cluster:
    return Cluster.get(s["node"], nodes=1)


def _sp_fwd_us(s) -> float:
    c, a, t = _node(s), _act(s), s["tp"]
    one = (x.collective_time("all_gather", a, t, c.intra.latency_s, c.intra.bandwidth_bytes_per_s).total_s
           + x.collective_time("reduce_scatter", a, t, c.intra.latency_s, c.intra.bandwidth_bytes_per_s).total_s)
    return x.TP_COLLECTIVES_PER_LAYER // 2 * one / US


def _sp_fwd_envelope(s) -> float:
    c, a, t = _node(s), _act(s), s["tp"]
    return 4 * ((t - 1) * c.intra.latency_s + (t - 1) / t * a / c.intra.bandwidth_bytes_per_s) / US


def _sp_fwd_nccl(s) -> float:
    c, a, t = _node(s), _act(s), s["tp"]
    return 2 * (x.nccl_collective_time("all_gather", a, c, t).total_s + x.nccl_collective_time("reduce_scatter", a, c, t).total_s) / US


SP_TIME = Problem(
    "sp_time", "SP's forward on NVLink",
    {"node": NODES, "model": MODELS, "seq": (4096, 8192), "b": (1, 2), "tp": (8, 4)},
    lambda s: (f"{_who(s)} at TP {s['tp']} with SP inside one {_node(s).gpu.name} node: NVLink {fmt(_node(s).intra.bandwidth_bytes_per_s / GB)} GB/s "
               f"each way, α = {fmt(_node(s).intra.latency_s / US)} µs a ring step; {s['seq']:,} tokens at micro-batch {s['b']}. At line rate and "
               "with nothing overlapped, how long do one layer's forward collectives (2 all-gathers, 2 reduce-scatters) take, in µs?"),
    _sp_fwd_us, _sp_fwd_envelope,
    lambda s: (f"Each: (t-1) α + (t-1)/t A / B = {s['tp'] - 1} x {fmt(_node(s).intra.latency_s / US)} µs + {s['tp'] - 1}/{s['tp']} x "
               f"{fmt(_act(s) / MB)} MB / {fmt(_node(s).intra.bandwidth_bytes_per_s / GB)} GB/s; four of them: {fmt(_sp_fwd_envelope(s))} µs."),
    "µs", tolerance=0.05,
    refined=_sp_fwd_nccl, refined_label="At NCCL's achieved rates on this node",
    why="NCCL's all-gathers and reduce-scatters reach below NVLink's line rate, most at these tens-of-MB sizes; "
        "Transformer Engine's userbuffers then hide most of them behind the neighbouring GEMMs.",
)


# ---- 4. the TP degree that hides ------------------------------------------------------------------------------
def _hide_parts(s) -> tuple[Model, float, float, float]:
    c = _node(s)
    return Model.get(s["model"]), c.gpu.mamf_flops, c.intra.bandwidth_bytes_per_s, c.intra.latency_s


def _hide(s) -> float:
    m, f, b, _ = _hide_parts(s)
    return x.tp_hiding_degree(m, s["seq"], f, b)


def _hide_with_latency(s) -> float:
    m, f, b, alpha = _hide_parts(s)
    return x.tp_hiding_degree(m, s["seq"], f, b, alpha)


def _hide_envelope(s) -> float:
    m, f, b, _ = _hide_parts(s)
    return 1 + m.layer_matmul_params * b / (4 * m.hidden * f)


TP_HIDING = Problem(
    "tp_hiding", "How far TP can hide",
    {"node": NODES, "model": MODELS, "seq": (4096, 2048, 8192)},
    lambda s: (f"{_who(s)}, {fmt(_hide_parts(s)[0].layer_matmul_params / 1e6)}M matmul parameters a layer, trains on {s['seq']:,}-token sequences "
               f"at TP t with SP on {_node(s).gpu.name}s: best-shape GEMMs at {fmt(_hide_parts(s)[1] / 1e12)} TFLOP/s, NVLink {fmt(_hide_parts(s)[2] / GB)} GB/s "
               "each way. A layer's forward GEMMs take 2 s P / t / F; its 4 collectives (t-1)/t · 2 s h / B each. Ignoring latency, "
               "past what degree t does the communication outlast the GEMMs?"),
    _hide, _hide_envelope,
    lambda s: (f"4 (t-1)/t · 2sh/B = 2sP/(tF) gives t - 1 = P B / (4 h F) (s cancels): 1 + {fmt(_hide_parts(s)[0].layer_matmul_params / 1e6)}e6 x "
               f"{fmt(_hide_parts(s)[2] / GB)} GB/s / (4 x {_shape(s['model'])[1]:,} x {fmt(_hide_parts(s)[1] / 1e12)} TFLOP/s) = {fmt(_hide_envelope(s))}. "
               "For a GPT layer (P = 12h²): 1 + 3hB/F."),
    "t", tolerance=0.05,
    refined=_hide_with_latency,
    refined_label="With NVLink's per-step latency",
    why="Latency lowers the degree a little; far more, GEMMs split t ways run below the best-shape rate, and past the node B falls to a NIC's (problem 5).",
)


# ---- 5. TP across nodes ------------------------------------------------------------------------------------
def _cross(s) -> float:
    c, a, t = _node(s), _act(s), s["tp"]
    nic = x.collective_time("all_reduce", a, t, 0.0, c.inter.bandwidth_bytes_per_s).total_s
    nv = x.collective_time("all_reduce", a, t, 0.0, c.intra.bandwidth_bytes_per_s).total_s
    return nic / nv


def _cross_nccl(s) -> float:
    c, a, t = Cluster.get(s["node"], nodes=s["tp"]), _act(s), s["tp"]
    return group_cost("all_reduce", a, c, t, c.gpus_per_node).total_s / group_cost("all_reduce", a, c, t, 1).total_s


TP_ACROSS = Problem(
    "tp_across", "TP across nodes",
    {"node": NODES, "model": MODELS, "seq": (4096, 8192), "b": (1,), "tp": (8, 4)},
    lambda s: (f"A TP group of {s['tp']} {_node(s).gpu.name}s all-reduces {_who(s)}'s activations ({fmt(_act(s) / MB)} MB). Inside a node it runs on NVLink "
               f"({fmt(2 * _node(s).intra.bandwidth_bytes_per_s / GB)} GB/s on the datasheet, both directions); spread one GPU per node it runs on one "
               f"{_node(s).inter.name} NIC per GPU. Counting bandwidth only, how many times longer does each all-reduce take across nodes?"),
    _cross, lambda s: _node(s).intra.bandwidth_bytes_per_s / _node(s).inter.bandwidth_bytes_per_s,
    lambda s: (f"The same bytes, 2(t-1)/t A, over a different link: the ratio of the one-way rates, {fmt(_node(s).intra.bandwidth_bytes_per_s / GB)} GB/s "
               f"(half the datasheet's two-way figure) over {fmt(_node(s).inter.bandwidth_bytes_per_s / GB)} GB/s = {fmt(_node(s).intra.bandwidth_bytes_per_s / _node(s).inter.bandwidth_bytes_per_s)}x, "
               "on every layer, twice forward and twice backward: TP stays inside the NVLink domain."),
    "x", tolerance=0.05,
    refined=_cross_nccl, refined_label="At NCCL's achieved rates (TP 8 inside a node against one GPU per node)",
    why="NCCL reaches a smaller share of NVLink's line rate than of a NIC's, and the NIC path adds latency per step: the measured cliff differs from the line-rate ratio.",
    texts=("The seed of Lab 05 sets NVLink at 900 GB/s 'per direction' against InfiniBand at '400 GB/s' and finds a 2.25x cliff: NVLink 4 is 450 GB/s "
           "each way and an NDR port 50 GB/s, a 9x cliff per GPU."),
)


# ---- 6. what SP saves ------------------------------------------------------------------------------------
def _sp_saved(s) -> float:
    layers, h, a = _shape(s["model"])
    no = activation_bytes_per_layer(s["seq"], s["b"], h, a, s["tp"], False, s["recompute"])
    sp = activation_bytes_per_layer(s["seq"], s["b"], h, a, s["tp"], True, s["recompute"])
    return layers * (no - sp) / GB


def _sp_saved_envelope(s) -> float:
    layers, h, _ = _shape(s["model"])
    return layers * 10 * s["seq"] * s["b"] * h * (1 - 1 / s["tp"]) / GB


SP_SAVING = Problem(
    "sp_saving", "What SP saves in memory",
    {"model": MODELS, "seq": (2048, 4096), "b": (1, 2), "tp": (8, 4), "recompute": ("selective", "none")},
    lambda s: (f"{_who(s)} at TP {s['tp']}, {s['seq']:,} tokens, micro-batch {s['b']}, "
               f"{'selective recomputation' if s['recompute'] == 'selective' else 'no recomputation, no flash attention'}; the first stage of a "
               "1F1B pipeline holds L layers' worth of activations. How many GB per GPU does turning on sequence parallelism save?"),
    _sp_saved, _sp_saved_envelope,
    lambda s: ("Korthikanti et al.: without SP a layer keeps sbh(10 + 24/t + 5as/(ht)), with SP sbh(34 + 5as/h)/t (selective: sbh(10 + 24/t) against 34 sbh/t). "
               f"The difference is 10 sbh (1 - 1/t) either way, the layer norms', dropouts' and residual's tensors TP left whole: "
               f"x {_shape(s['model'])[0]} layers = {fmt(_sp_saved_envelope(s))} GB."),
    "GB", tolerance=0.05,
    why="GPT's layer (two layer norms, two dropouts); a Llama layer (RMSNorm, no dropout) keeps fewer unsplit tensors, so SP saves less there.",
)


# ---- 7. a decision: which recipe fits ----------------------------------------------------------------------
RECIPES = (("nosp", False, "none"), ("sp", True, "none"), ("sp_selective", True, "selective"), ("sp_full", True, "full"))
RECIPE_FORMULAS = {"none": lambda sbh, t, r: sbh * (10 + 24 / t + 5 * r / t), "sp": lambda sbh, t, r: sbh * (34 + 5 * r) / t,
                   "sp_selective": lambda sbh, t, r: 34 * sbh / t, "sp_full": lambda sbh, t, r: 2 * sbh / t}


def _recipe_gb(s) -> list[float]:
    layers, h, a = _shape(s["model"])
    return [layers * activation_bytes_per_layer(s["seq"], 1, h, a, 8, sp, rc) / GB for _, sp, rc in RECIPES]


def _first(gbs, budget) -> float:
    fits = [i for i, g in enumerate(gbs) if g <= budget]
    return float(fits[0]) if fits else float(len(gbs))


def _fit_envelope(s) -> float:
    layers, h, a = _shape(s["model"])
    sbh, r = s["seq"] * h, a * s["seq"] / h
    gbs = [layers * RECIPE_FORMULAS[k](sbh, 8, r) / GB for k in ("none", "sp", "sp_selective", "sp_full")]
    return _first(gbs, s["budget_gb"])


FIT = Problem(
    "fit", "The lightest recipe that fits",
    {"model": ("gpt3-175b", "llama2-70b"), "seq": (2048, 4096), "budget_gb": (40, 20, 60, 8)},
    lambda s: (f"{_who(s)} at TP 8, micro-batch 1, {s['seq']:,} tokens, no flash attention; the first pipeline stage holds L layers' worth of "
               f"activations and can spare {s['budget_gb']} GB for them. Which is the first recipe, in this order, that fits?"),
    lambda s: _first(_recipe_gb(s), s["budget_gb"]), _fit_envelope,
    lambda s: ("Per GPU, L layers' worth: " + "; ".join(f"{label} {fmt(g)} GB" for label, g in zip(("TP alone", "+ SP", "+ SP + selective", "+ SP + full"), _recipe_gb(s)))
               + f", against {s['budget_gb']} GB."),
    "recipe", tolerance=0.5, absolute=True,
    options=(Option("nosp", "TP alone: no SP, no recomputation", "SP is only a speed trick"),
             Option("sp", "TP + SP, no recomputation", "the attention scores are small"),
             Option("sp_selective", "TP + SP + selective recomputation (the scores recomputed)", "always recompute something"),
             Option("sp_full", "TP + SP + full recomputation (only each layer's input kept)", "full recomputation is the only safe choice"),
             Option("none", "None of them: more pipeline stages are needed", "recomputation cannot go far enough")),
    decide=lambda s: ("nosp", "sp", "sp_selective", "sp_full", "none")[int(_first(_recipe_gb(s), s["budget_gb"]))],
    why="Each step down the list costs compute: selective recomputation re-runs only the attention scores (a few percent of the FLOPs), "
        "full recomputation the whole forward (a third more: 96 against 72 B L s h², Narayanan et al. 2021 eq. 3).",
)

CHAPTER = ProblemSet(
    NAME, "Problem set 4 · Tensor and sequence parallelism",
    (TP_BYTES, SP_REGATHER, SP_TIME, TP_HIDING, TP_ACROSS, SP_SAVING, FIT),
    reading="Shoeybi et al. 2019 (Megatron-LM) Sec. 3; Korthikanti et al. 2022 Sec. 4 and Table 2; the scaling book's TP threshold.",
)
VARIANTS = CHAPTER.variants
OUTCOMES = CHAPTER.outcomes_table
LAB = NAME
