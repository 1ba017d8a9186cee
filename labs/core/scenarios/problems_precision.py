"""Problem set 7, precision (labs/problems/ps07_precision.py): bytes per parameter by format, the
largest value and the step at 1 of bf16, fp16, E4M3 and E5M2 (ml_dtypes' finfo, as
labs.core.engine.precision exposes it), the loss scale fp16 needs, whether a bf16 weight keeps
an update (the engine's own cast), block-scaled formats' bytes per element (MXFP8, NVFP4), and
FP8's weight cache (labs.core.engine.exercises, the step model's memory)."""

from __future__ import annotations

import math

from labs.core.engine import exercises as x
from labs.core.engine.hardware import Cluster
from labs.core.engine.models import Model
from labs.core.engine.perf import estimate
from labs.core.engine.plan import Plan
from labs.core.engine.precision import fmt as number_format
from labs.core.engine.precision import WEIGHT_CACHE_COPIES, round_trip
from labs.core.problemset import Problem, ProblemSet, fmt
from labs.core.variants import Option

NAME = "ps07_precision"
GB = 1e9
FORMATS = ("bf16", "fp16", "e4m3", "e5m2")


def _f(name: str):
    return number_format(name)


def _bits(name: str) -> str:
    f = _f(name)
    return f"1 sign, {f.exponent_bits} exponent and {f.mantissa_bits} mantissa bits"


# ---- 1. bytes per parameter by format ---------------------------------------------------------------
def _params(key: str) -> float:
    return float(Model.get(key).params)


WEIGHT_BYTES = Problem(
    "weight_bytes", "Weights by format",
    {"model": ("llama3-70b", "llama3-8b", "llama3-405b", "deepseek-v3"), "format": ("e4m3", "bf16", "fp32", "fp16")},
    lambda s: (f"{s['model']} has {fmt(_params(s['model']) / 1e9)} billion parameters. How many GB do its weights take stored in "
               f"{s['format']} ({_bits(s['format'])})?"),
    lambda s: _f(s["format"]).bytes * _params(s["model"]) / GB,
    lambda s: (1 + _f(s["format"]).exponent_bits + _f(s["format"]).mantissa_bits) / 8 * _params(s["model"]) / GB,
    lambda s: (f"(1 + {_f(s['format']).exponent_bits} + {_f(s['format']).mantissa_bits}) bits / 8 = {(1 + _f(s['format']).exponent_bits + _f(s['format']).mantissa_bits) / 8:g} "
               f"bytes x {fmt(_params(s['model']) / 1e9)}e9 = {fmt((1 + _f(s['format']).exponent_bits + _f(s['format']).mantissa_bits) / 8 * _params(s['model']) / GB)} GB."),
    "GB", tolerance=0.03,
    why="Training keeps more than the weights: mixed-precision Adam's fp32 master copy and moments stay at 12 bytes a parameter whatever format the GEMMs read.",
)


# ---- 2. the largest value -----------------------------------------------------------------------
def _largest_envelope(s) -> float:
    f = _f(s["format"])
    e, m = f.exponent_bits, f.mantissa_bits
    if s["format"] == "e4m3":  # no infinities: the all-ones exponent holds normal numbers, only S.1111.111 is NaN
        return (2 - 2 ** (1 - m)) * 2 ** (2 ** (e - 1))
    return (2 - 2 ** -m) * 2 ** (2 ** (e - 1) - 1)


LARGEST = Problem(
    "largest", "The largest value",
    {"format": ("fp16", "e4m3", "e5m2")},
    lambda s: f"What is the largest finite value {s['format']} ({_bits(s['format'])}) can hold?",
    lambda s: _f(s["format"]).max, _largest_envelope,
    lambda s: ("IEEE-like formats keep the all-ones exponent for infinities and NaN: the largest is (2 - 2^-m) x 2^(2^(e-1) - 1). "
               "E4M3 (the OCP 'fn' variant) has no infinities: the all-ones exponent holds numbers, only its all-ones mantissa is NaN, "
               f"so (2 - 2^(1-m)) x 2^(2^(e-1)). Here: {fmt(_largest_envelope(s))}. bf16, with fp32's 8 exponent bits, reaches {_f('bf16').max:.3g}."),
    "plain numbers", tolerance=0.01,
    why="bf16 keeps fp32's 8 exponent bits, so its range is fp32's; fp16's 65,504 is why fp16 training needs a loss scale and bf16 does not. FP8 tensors carry a scale of their own.",
)


# ---- 3. the step at 1 ---------------------------------------------------------------------------
STEP_AT_ONE = Problem(
    "step_at_one", "The step after 1",
    {"format": FORMATS},
    lambda s: f"In {s['format']} ({_bits(s['format'])}), what is the gap between 1 and the next larger number it can hold?",
    lambda s: float(_f(s["format"]).info.eps), lambda s: 2.0 ** -_f(s["format"]).mantissa_bits,
    lambda s: f"The mantissa's last bit at exponent 0: 2^-m = 2^-{_f(s['format']).mantissa_bits} = {2.0 ** -_f(s['format']).mantissa_bits:g}.",
    "plain numbers", tolerance=0.01,
    why="Round to nearest keeps a relative error of at most half of this: bf16's 2^-8 (0.4%) is why its weights need an fp32 master copy.",
)


# ---- 4. the loss scale fp16 needs ---------------------------------------------------------------------
def _scale_exp(s) -> float:
    return float(math.ceil(math.log2(_f("fp16").smallest_normal / s["grad"])))


LOSS_SCALE = Problem(
    "loss_scale", "The loss scale fp16 needs",
    {"grad": (1e-7, 3e-8, 2e-6, 5e-9)},
    lambda s: (f"The smallest gradients that matter in an fp16 run are about {s['grad']:g}. Multiplying the loss by S = 2^k multiplies every "
               "gradient by S. What is the smallest k that lifts them into fp16's normal range (its full 10-bit precision)?"),
    _scale_exp, lambda s: float(math.ceil(math.log2(2.0 ** -14 / s["grad"]))),
    lambda s: (f"fp16's smallest normal is 2^-14 = {2.0 ** -14:.3g} (below it, subnormals lose bits down to 2^-24, then zero): "
               f"k = ⌈log2(2^-14 / {s['grad']:g})⌉ = {_scale_exp(s):g}."),
    "(k)", tolerance=0.5, absolute=True,
    refined=lambda s: float(math.floor(math.log2(_f("fp16").max / 1.0))), refined_label="The largest k before a gradient of 1 overflows fp16",
    why="Dynamic loss scaling (Micikevicius et al. 2018) finds k at run time: it halves S on an overflow and doubles it after a run of clean steps.",
)


# ---- 5. a bf16 weight and its update: a decision ------------------------------------------------------
def _ulp(w: float) -> float:
    return 2.0 ** math.floor(math.log2(w)) * float(_f("bf16").info.eps)


def _kept(s) -> bool:
    return float(round_trip(s["w"] + s["u"], "bf16")) != float(round_trip(s["w"], "bf16"))


UPDATE_LOST = Problem(
    "update_lost", "Does bf16 keep the update?",
    {"w": (1.0, 2.0, 0.5, 4.0), "u": (0.003, 0.005, 0.0015, 0.01)},
    lambda s: f"A weight of {s['w']:g}, stored in bf16, receives an update of {s['u']:g}. What does the bf16 weight hold afterwards?",
    lambda s: s["u"] / (_ulp(s["w"]) / 2), lambda s: s["u"] / (2.0 ** math.floor(math.log2(s["w"])) * 2.0 ** -7 / 2),
    lambda s: (f"bf16 keeps 7 mantissa bits: near {s['w']:g} its numbers are 2^{math.floor(math.log2(s['w']))} x 2^-7 = {_ulp(s['w']):g} apart. "
               f"An update below half that ({_ulp(s['w']) / 2:g}) rounds back to the old weight; {s['u']:g} is "
               f"{fmt(s['u'] / (_ulp(s['w']) / 2))} x half a step."),
    "x half a bf16 step", tolerance=0.05,
    options=(Option("kept", "The updated weight (rounded to bf16)", "bf16 has fp32's range, so nothing is lost"),
             Option("lost", "The old weight: the update rounds away", "a small update always survives rounding")),
    decide=lambda s: "kept" if _kept(s) else "lost",
    why="This is why mixed precision keeps an fp32 master copy: 1,000 updates of a quarter step each move an fp32 weight by 250 steps and a bf16 weight by none.",
)


# ---- 6. block-scaled formats ---------------------------------------------------------------------
BLOCKS = ("mxfp8", "nvfp4", "mxfp4", "fp8-128x128")
BLOCK_TEXT = {"mxfp8": "MXFP8: E4M3 values in blocks of 32, one E8M0 (power-of-two, 8-bit) scale per block",
              "nvfp4": "NVFP4: E2M1 (4-bit) values in blocks of 16, one E4M3 scale per block, one FP32 scale per tensor",
              "mxfp4": "MXFP4: E2M1 (4-bit) values in blocks of 32, one E8M0 scale per block",
              "fp8-128x128": "DeepSeek-V3's FP8 weights: E4M3 values, one FP32 scale per 128 x 128 block"}


def _elements(s) -> float:
    h = Model.get(s["model"]).hidden
    return float(h * h)


def _block_envelope(s) -> float:
    f = x.block_format(s["format"])
    return f.element_bytes + f.scale_bytes / f.block


BLOCK_BYTES = Problem(
    "block_bytes", "What the scales cost",
    {"format": BLOCKS, "model": ("llama3-70b", "llama3-8b", "deepseek-v3")},
    lambda s: (f"A {Model.get(s['model']).hidden:,} x {Model.get(s['model']).hidden:,} weight of {s['model']} is stored in {BLOCK_TEXT[s['format']]}. "
               "How many bytes per element does it take, scales included?"),
    lambda s: x.block_scaled_bytes(_elements(s), s["format"]) / _elements(s), _block_envelope,
    lambda s: (f"The value: {x.block_format(s['format']).element_bytes:g} byte; the scale: {x.block_format(s['format']).scale_bytes:g} byte(s) per "
               f"{x.block_format(s['format']).block:,} elements = {x.block_format(s['format']).scale_bytes / x.block_format(s['format']).block:.4g}. "
               f"Together {_block_envelope(s):.5g} bytes an element (a per-tensor scale adds bytes per tensor, not per element)."),
    "bytes", tolerance=0.005, agree=1e-5,
    refined=lambda s: x.block_format(s["format"]).element_bytes, refined_label="The values alone",
    why="Smaller blocks follow outliers more closely and cost more scale bytes: NVFP4 pays 1/16 byte an element (12.5% of its 4-bit values), MXFP8 1/32 (3%).",
)


# ---- 7. FP8's weight cache ------------------------------------------------------------------------
HOPPER_FP8_COPIES = WEIGHT_CACHE_COPIES[("hopper", "fp8")]  # the copy and its transpose (labs.core.engine.precision)


def _cache_gb(s) -> float:
    model, cluster = Model.get(s["model"]), Cluster.get("dgx-h100", nodes=2)
    dp = cluster.gpus // s["tp"]
    weights = [estimate(model, cluster, Plan(tp=s["tp"], pp=1, dp=dp, micro_batch=1, global_batch=dp, precision=p,
                                             sequence_parallel=s["tp"] > 1)).memory.weights for p in ("bf16", "fp8")]
    return (weights[1] - weights[0]) / GB


FP8_CACHE = Problem(
    "fp8_cache", "FP8's weight cache",
    {"model": ("llama3-8b", "llama2-13b", "llama3-70b", "llama2-7b"), "tp": (4, 8, 2)},
    lambda s: (f"{s['model']} ({fmt(_params(s['model']) / 1e9)}B parameters) trains in FP8 under TP {s['tp']} (no pipeline). Transformer Engine casts "
               "each weight to FP8 once a step and keeps that copy for every micro-batch, beside the bf16 weights; on these H100s it keeps the "
               "copy's transpose too, for the data-gradient GEMM (Hopper's FP8 GEMMs read one layout). How many GB do they add on each GPU?"),
    _cache_gb, lambda s: _params(s["model"]) / s["tp"] * HOPPER_FP8_COPIES * _f("e4m3").bytes / GB,
    lambda s: (f"One byte per parameter of the GPU's TP shard, twice (the copy and its transpose): {fmt(_params(s['model']) / 1e9)}e9 / {s['tp']} "
               f"x {HOPPER_FP8_COPIES} x 1 byte = {fmt(_params(s['model']) / s['tp'] * HOPPER_FP8_COPIES / GB)} GB."),
    "GB", tolerance=0.03,
    why=("The cache trades HBM for casts: torchao's Float8Linear keeps no copy and casts the weights in every forward. FP8 does not shrink the "
         "optimizer's 12 bytes. Blackwell's FP8 GEMMs read either layout: one copy there."),
)

CHAPTER = ProblemSet(
    NAME, "Problem set 7 · Precision",
    (WEIGHT_BYTES, LARGEST, STEP_AT_ONE, LOSS_SCALE, UPDATE_LOST, BLOCK_BYTES, FP8_CACHE),
    reading=("Micikevicius et al. 2018 (mixed precision, loss scaling); Micikevicius et al. 2022 (FP8 formats); the OCP Microscaling (MX) "
             "specification v1.0; NVIDIA's NVFP4 blog and Transformer Engine docs; DeepSeek-AI 2024 (DeepSeek-V3) Sec. 3.3."),
)
VARIANTS = CHAPTER.variants
OUTCOMES = CHAPTER.outcomes_table
LAB = NAME
