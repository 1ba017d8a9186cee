"""Problem set 5, pipelines and their bubbles (labs/problems/ps05_pipelines.py): the 1F1B bubble
(p-1)/(m+p-1), the micro-batches a target bubble needs, interleaving's (p-1)/(v m), GPipe's
activation memory against 1F1B's, ZB-H1's bubble from Qi et al.'s Table 2 counted on the engine's
generated timeline, ZB-H1 or interleaving, and the point-to-point bytes a stage sends
(labs.core.engine.pipeline, memory, perf)."""

from __future__ import annotations

import math
from functools import lru_cache

from labs.core.engine import pipeline as pl
from labs.core.engine.hardware import Cluster
from labs.core.engine.memory import activation_bytes_per_layer, in_flight_microbatches
from labs.core.engine.models import Model
from labs.core.engine.perf import estimate
from labs.core.engine.plan import Plan
from labs.core.problemset import Problem, ProblemSet, fmt
from labs.core.variants import Option

NAME = "ps05_pipelines"
GB = 1e9
MESSAGE_SHARE = 0.1  # the refined interleaved timeline: each p2p message takes this share of a chunk's forward


def _pct(value: float) -> float:
    return 100 * value


# ---- 1. the 1F1B bubble -----------------------------------------------------------------------------
BUBBLE = Problem(
    "bubble", "The 1F1B bubble",
    {"p": (8, 4, 16), "m": (8, 32, 64)},
    lambda s: (f"A 1F1B pipeline of p = {s['p']} stages runs m = {s['m']} micro-batches a step, every stage's forward and backward taking "
               "the same time. What share of the step is idle, in % of the total time?"),
    lambda s: _pct(pl.bubble_fraction(s["p"], s["m"], "1f1b", convention="total")),
    lambda s: _pct((s["p"] - 1) / (s["m"] + s["p"] - 1)),
    lambda s: (f"Each stage idles p - 1 slots filling and p - 1 draining, (p-1)(T_F + T_B), against m (T_F + T_B) of work: "
               f"(p-1)/(m+p-1) = {s['p'] - 1}/{s['m'] + s['p'] - 1} = {fmt(_pct((s['p'] - 1) / (s['m'] + s['p'] - 1)))}% of the total."),
    "%", tolerance=0.03,
    refined=lambda s: _pct(pl.bubble_fraction(s["p"], s["m"], "1f1b", convention="ideal")),
    refined_label="The same idle time against the ideal time, (p-1)/m, as Megatron writes it",
    why="Both are right; a number without its convention is not. The generated timeline counts exactly these idle slots.",
    texts=("The seed of Lab 05 writes the bubble (p-1)/(p m): at p = 4, m = 8 its 'correct' layout has a 9.4% bubble; "
           "(p-1)/m = 37.5% of the ideal, 27% of the total."),
)


# ---- 2. micro-batches for a target bubble ---------------------------------------------------------------
def _fewest_m(s) -> float:
    """The fewest micro-batches whose 1F1B bubble (the engine's) is at most the target: the closed form's
    m = (p-1)(1-x)/x rounded up, confirmed against pipeline.bubble_fraction."""
    p, target = s["p"], s["target_pct"] / 100
    m = max(1, math.ceil((p - 1) * (1 - target) / target - 1e-9))
    while pl.bubble_fraction(p, m, "1f1b") > target + 1e-12:
        m += 1
    while m > 1 and pl.bubble_fraction(p, m - 1, "1f1b") <= target + 1e-12:
        m -= 1
    return float(m)


FEWEST_M = Problem(
    "fewest_m", "Micro-batches for a small bubble",
    {"p": (16, 8, 32), "target_pct": (5, 3, 8, 10)},
    lambda s: (f"A 1F1B pipeline of {s['p']} stages must idle at most {s['target_pct']}% of the total time. "
               "What is the fewest micro-batches per step that achieves it?"),
    _fewest_m,
    lambda s: float(max(1, math.ceil((s["p"] - 1) * (1 - s["target_pct"] / 100) / (s["target_pct"] / 100) - 1e-9))),
    lambda s: (f"(p-1)/(m+p-1) <= x gives m >= (p-1)(1-x)/x = {s['p'] - 1} x {fmt(1 - s['target_pct'] / 100)} / {s['target_pct'] / 100:g} = "
               f"{fmt((s['p'] - 1) * (1 - s['target_pct'] / 100) / (s['target_pct'] / 100))}, so m = {fmt(_fewest_m(s))}. Every micro-batch is "
               "b sequences on each of the DP replicas: the global batch, not the pipeline, sets how small the bubble can get."),
    "micro-batches", tolerance=0.5, absolute=True,
    why="Interleaving (problem 3) or a zero-bubble schedule (problem 5) buys the same bubble with fewer micro-batches.",
)


# ---- 3. interleaving --------------------------------------------------------------------------------------
def _interleaved_refined(s) -> float:
    costs = pl.OpCosts(1.0, 1.0, 1.0, MESSAGE_SHARE / s["v"])
    return _pct(pl.timeline(s["p"], s["m"], "interleaved", s["v"], costs).bubble_fraction("ideal"))


INTERLEAVED = Problem(
    "interleaved", "Interleaving's bubble",
    {"p": (8, 4), "m": (16, 32, 64), "v": (2, 3, 4)},
    lambda s: (f"Megatron's interleaved 1F1B: p = {s['p']} stages, each holding v = {s['v']} model chunks (non-adjacent layers), m = {s['m']} "
               "micro-batches, point-to-point messages free. What is the bubble, in % of the ideal (bubble-free) time?"),
    lambda s: _pct(pl.bubble_fraction(s["p"], s["m"], "interleaved", s["v"], "ideal")),
    lambda s: _pct((s["p"] - 1) / (s["v"] * s["m"])),
    lambda s: (f"Each chunk's forward and backward take 1/v of a stage's, so the fill and drain shrink v-fold: (p-1)/(v m) = "
               f"{s['p'] - 1}/({s['v']} x {s['m']}) = {fmt(_pct((s['p'] - 1) / (s['v'] * s['m'])))}%, at v times the point-to-point messages."),
    "%", tolerance=0.03,
    refined=_interleaved_refined,
    refined_label=f"The engine's generated timeline with each message {MESSAGE_SHARE:.0%} of a chunk's forward",
    why="Every chunk boundary is a message: v times 1F1B's, and at each chunk change of the warm-up a group's first micro-batch waits for p of them.",
)


# ---- 4. GPipe's memory against 1F1B's -----------------------------------------------------------------------
def _layer_gb(s) -> float:
    m = Model.get(s["model"])
    return activation_bytes_per_layer(m.seq_len, 1, m.hidden, m.heads, 8, True, "selective") / GB


def _gpipe_gb(s) -> float:
    layers = Model.get(s["model"]).layers
    return layers / s["p"] * in_flight_microbatches("gpipe", s["p"], s["m"]) * _layer_gb(s)


def _gpipe_envelope(s) -> float:
    m = Model.get(s["model"])
    return m.layers / s["p"] * s["m"] * 34 * m.seq_len * m.hidden / 8 / GB


GPIPE_MEMORY = Problem(
    "gpipe_memory", "GPipe's activations",
    {"model": ("gpt3-175b", "llama2-70b"), "p": (8, 16), "m": (64, 32, 128)},
    lambda s: (f"{s['model']} ({Model.get(s['model']).layers} layers, hidden {Model.get(s['model']).hidden:,}, {Model.get(s['model']).seq_len:,} tokens) "
               f"at TP 8 with SP and selective recomputation keeps 34 s b h / t bytes a layer per micro-batch (micro-batch 1). Its {s['p']} pipeline stages "
               f"run m = {s['m']} micro-batches under GPipe (all forwards, then all backwards). How many GB of activations does the first stage hold at its peak?"),
    _gpipe_gb, _gpipe_envelope,
    lambda s: (f"GPipe keeps every micro-batch's activations until its backward: L/p x m x 34 s h / t = {Model.get(s['model']).layers}/{s['p']} x {s['m']} x "
               f"{fmt(_layer_gb(s) * 1e3)} MB = {fmt(_gpipe_envelope(s))} GB."),
    "GB", tolerance=0.03,
    refined=lambda s: Model.get(s["model"]).layers / s["p"] * in_flight_microbatches("1f1b", s["p"], s["m"]) * _layer_gb(s),
    refined_label="Under 1F1B (the same bubble)",
    why="1F1B starts each backward as soon as it can, so the first stage holds at most p micro-batches (L layers' worth), not m: m/p times less, at the same bubble.",
)


# ---- 5. ZB-H1 ----------------------------------------------------------------------------------------------
def _zb_costs(s) -> pl.OpCosts:
    return pl.OpCosts(1.0, 1.0, s["tw"])


def _zb(s) -> float:
    return _pct(pl.bubble_fraction(s["p"], s["m"], "zb-h1", convention="ideal", costs=_zb_costs(s)))


def _zb_envelope(s) -> float:
    return _pct((s["p"] - 1) * (2 - s["tw"]) / (s["m"] * (2 + s["tw"])))


ZB_H1 = Problem(
    "zb_h1", "Zero bubble, first schedule",
    {"p": (8, 4, 16), "m": (32, 16, 64), "tw": (1.0, 0.5, 0.75)},
    lambda s: (f"Qi et al.'s ZB-H1 splits the backward into B (input gradients, on the critical path) and W (weight gradients, which can wait). "
               f"p = {s['p']} stages, m = {s['m']} micro-batches; a stage's F and B take one unit each and its W {s['tw']:g}. "
               "Messages free. What is ZB-H1's bubble, in % of the ideal time m (T_F + T_B + T_W)?"),
    _zb, _zb_envelope,
    lambda s: (f"Qi et al.'s Table 2: ZB-H1 idles (p-1)(T_F + T_B - T_W) a stage (1F1B: (p-1)(T_F + T_B + T_W)), W filling the drain. "
               f"(p-1)(T_F + T_B - T_W) / (m (T_F + T_B + T_W)) = {s['p'] - 1} x {fmt(2 - s['tw'])} / ({s['m']} x {fmt(2 + s['tw'])}) = "
               f"{fmt(_zb_envelope(s))}%; with equal passes (p-1)/(3m), a third of 1F1B's, at 1F1B's memory."),
    "%", tolerance=0.03,
    refined=lambda s: _pct(pl.timeline(s["p"], s["m"], "zb-h1", costs=_zb_costs(s)).bubble_fraction("ideal")),
    refined_label="Idle slots counted on the engine's generated ZB-H1 timeline",
    why="The timeline plays Qi et al.'s hand schedule op by op and counts the same idle time; with messages each stage idles 4 (p-1) T_comm more.",
    texts=("A widely read text prints ZB-H1's bubble at a quarter of this. Qi et al.'s own Table 2, (p-1)(T_F + T_B - T_W), is (p-1)/(3m) of the "
           "ideal time with equal passes, not (p-1)/(12m): the timeline the engine generates from their schedule counts exactly that."),
)


# ---- 6. a decision: ZB-H1 or interleaving ----------------------------------------------------------------------
SAME = 0.05


def _ratio(s) -> float:
    """The interleaved bubble over ZB-H1's (both against the ideal time)."""
    c = _zb_costs(s)
    return pl.bubble_fraction(8, 32, "interleaved", s["v"], "ideal", c) / pl.bubble_fraction(8, 32, "zb-h1", convention="ideal", costs=c)


ZB_OR_INTERLEAVED = Problem(
    "zb_or_interleaved", "ZB-H1 or interleaving?",
    {"v": (2, 4, 3), "tw": (1.0, 0.5)},
    lambda s: (f"p = 8 stages, m = 32 micro-batches; a stage's F and B take one unit each and its W {s['tw']:g}; messages free. "
               f"Which has the smaller bubble: interleaved 1F1B with v = {s['v']} chunks a stage, or ZB-H1?"),
    _ratio, lambda s: ((2 + s["tw"]) / s["v"]) / (2 - s["tw"]),
    lambda s: (f"Interleaved: (p-1)(T_F + T_B + T_W)/v = 7 x {fmt(2 + s['tw'])}/{s['v']}; ZB-H1: (p-1)(T_F + T_B - T_W) = 7 x {fmt(2 - s['tw'])}. "
               f"Ratio {fmt(_ratio(s))}: " + ("ZB-H1's is smaller." if _ratio(s) > 1 + SAME else
                                              "interleaving's is smaller." if _ratio(s) < 1 - SAME else "the same within 5%.")),
    "x (interleaved / ZB-H1)", tolerance=0.05,
    options=(Option("zb", "ZB-H1", "zero-bubble schedules always win"),
             Option("interleaved", "Interleaved 1F1B", "interleaving always wins"),
             Option("same", "Within 5% of each other", "the schedule does not matter")),
    decide=lambda s: "same" if abs(_ratio(s) - 1) < SAME else ("zb" if _ratio(s) > 1 else "interleaved"),
    why="Interleaving pays v times the point-to-point messages and more activation memory on the first stage; ZB-H1 pays neither, but needs the backward split into B and W.",
)


# ---- 7. the point-to-point bytes ------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _pp_bytes(model: str, tp: int, pp: int, v: int, m: int) -> float:
    gpus = tp * pp
    plan = Plan(tp=tp, pp=pp, dp=1, micro_batch=1, global_batch=m, sequence_parallel=tp > 1,
                schedule="interleaved" if v > 1 else "1f1b", virtual_stages=v)
    return estimate(Model.get(model), Cluster.get("dgx-h100", nodes=max(1, gpus // 8)), plan).comm_bytes_per_gpu["pp"]


def _p2p_envelope(s) -> float:
    mdl = Model.get(s["model"])
    return 2 * s["m"] * s["v"] * 2 * mdl.seq_len * mdl.hidden / s["tp"] / GB


P2P = Problem(
    "p2p", "What a stage sends",
    {"model": ("gpt3-175b", "llama2-70b"), "tp": (8, 1), "v": (1, 2), "m": (32, 16, 64)},
    lambda s: (f"{s['model']} ({Model.get(s['model']).seq_len:,} tokens, hidden {Model.get(s['model']).hidden:,}, bf16, micro-batch 1) runs on 8 "
               f"pipeline stages at TP {s['tp']}, {'interleaved with v = ' + str(s['v']) + ' chunks a stage' if s['v'] > 1 else '1F1B'}, m = {s['m']} "
               "micro-batches. A middle stage sends each micro-batch's b s h activation forward and its gradient backward at every chunk boundary"
               + (", and Megatron's scatter/gather splits each message over the TP ranks" if s["tp"] > 1 else "")
               + ". How many GB does each of its GPUs send per step?"),
    lambda s: _pp_bytes(s["model"], s["tp"], 8, s["v"], s["m"]) / GB, _p2p_envelope,
    lambda s: (f"2 directions x m x v x 2 s b h / t = 2 x {s['m']} x {s['v']} x {fmt(2 * Model.get(s['model']).seq_len * Model.get(s['model']).hidden / 1e6)} MB / {s['tp']} = "
               f"{fmt(_p2p_envelope(s))} GB, point to point between neighbours: no collective, and latency-tolerant, which is why PP is the axis that crosses nodes."),
    "GB", tolerance=0.03,
    why="The point-to-point messages are latency-tolerant (they overlap the next micro-batch's compute) but each one also waits for its sender: the step model adds their exposed part.",
)

CHAPTER = ProblemSet(
    NAME, "Problem set 5 · Pipelines and their bubbles",
    (BUBBLE, FEWEST_M, INTERLEAVED, GPIPE_MEMORY, ZB_H1, ZB_OR_INTERLEAVED, P2P),
    reading="Huang et al. 2019 (GPipe); Narayanan et al. 2021 Sec. 2.2 (1F1B and interleaving); Qi et al. 2024 (Zero Bubble Pipeline Parallelism) Sec. 3 and Table 2.",
)
VARIANTS = CHAPTER.variants
OUTCOMES = CHAPTER.outcomes_table
LAB = NAME
