"""Problem set 8, failures and checkpoints (labs/problems/ps08_failures.py): the job's MTBF from
Llama 3's fitted rate and from component MTBFs, expected interruptions, what a checkpoint holds,
Young's interval against Daly's, and the time lost at Young's interval (labs.core.engine.exercises
on labs.core.engine.reliability)."""

from __future__ import annotations

import math

from labs.core.engine import exercises as x
from labs.core.engine import reliability as rel
from labs.core.engine.models import Model
from labs.core.problemset import Problem, ProblemSet, fmt

NAME = "ps08_failures"
HOUR, DAY, GB = rel.HOUR, rel.DAY, 1e9
FLEETS = (8192, 4096, 24576, 32768)


def _fit_hours() -> float:
    """Llama 3's unexpected interruptions: GPU-hours per interruption (16,384 GPUs x 54 days / 419)."""
    return rel.LLAMA3_GPUS * rel.LLAMA3_WINDOW_S / HOUR / rel.LLAMA3_UNEXPECTED


# ---- 1. the job's MTBF from Llama 3 ----------------------------------------------------------------
LLAMA3_MTBF = Problem(
    "llama3_mtbf", "A job's MTBF at Llama 3's rate",
    {"gpus": FLEETS},
    lambda s: (f"Llama 3's pre-training saw {rel.LLAMA3_UNEXPECTED} unexpected interruptions in {rel.LLAMA3_WINDOW_S / DAY:.0f} days on "
               f"{rel.LLAMA3_GPUS:,} GPUs. At the same rate per GPU, what is the mean time between interruptions of a {s['gpus']:,}-GPU job, in hours?"),
    lambda s: x.llama3_mtbf_s(s["gpus"]) / HOUR,
    lambda s: _fit_hours() / s["gpus"],
    lambda s: (f"{rel.LLAMA3_GPUS:,} x {rel.LLAMA3_WINDOW_S / DAY:.0f} x 24 / {rel.LLAMA3_UNEXPECTED} = {fmt(_fit_hours())} GPU-hours per "
               f"interruption; over {s['gpus']:,} GPUs: {fmt(_fit_hours() / s['gpus'])} hours. Twice the GPUs, half the MTBF."),
    "hours", tolerance=0.05,
    why="Every cause is assumed to scale with the GPU count; switches and the file system are shared and do not, quite.",
)


# ---- 2. from component MTBFs ------------------------------------------------------------------------
def _components(s) -> dict:
    return {"gpu": s["gpu_kh"] * 1e3 * HOUR, "host": s["host_kh"] * 1e3 * HOUR, "link": s["link_kh"] * 1e3 * HOUR}


SHARES = {"host": 1 / 8}  # an 8-GPU host per 8 GPUs; one NIC cable per GPU


def _comp_envelope(s) -> float:
    n = s["gpus"]
    return 1 / (n / (s["gpu_kh"] * 1e3) + n / 8 / (s["host_kh"] * 1e3) + n / (s["link_kh"] * 1e3))


COMPONENTS = Problem(
    "components", "MTBF from the parts",
    {"gpus": (16384, 4096, 8192), "gpu_kh": (50, 30, 100), "host_kh": (200, 100), "link_kh": (500, 1000)},
    lambda s: (f"A {s['gpus']:,}-GPU job on 8-GPU hosts, one NIC cable per GPU. Each GPU fails once in {s['gpu_kh']},000 hours on "
               f"average, each host once in {s['host_kh']},000, each cable once in {s['link_kh']},000, independently. "
               "What is the job's mean time between failures, in hours?"),
    lambda s: x.components_mtbf_s(s["gpus"], _components(s), SHARES) / HOUR, _comp_envelope,
    lambda s: (f"Rates add: {s['gpus']:,}/{s['gpu_kh']},000 + {s['gpus'] // 8:,}/{s['host_kh']},000 + {s['gpus']:,}/{s['link_kh']},000 per hour; "
               f"the MTBF is one over the sum: {fmt(_comp_envelope(s))} hours."),
    "hours", tolerance=0.05,
    refined=lambda s: x.llama3_mtbf_s(s["gpus"]) / HOUR, refined_label="Llama 3's fitted rate at this size",
    why="Llama 3's rate counts everything that stopped the job (software bugs, NCCL timeouts, maintenance), not only parts that broke.",
)


# ---- 3. expected interruptions over a run ------------------------------------------------------------
INTERRUPTIONS = Problem(
    "interruptions", "How many restarts?",
    {"gpus": FLEETS, "days": (30, 60, 90)},
    lambda s: f"A {s['gpus']:,}-GPU job runs {s['days']} days at Llama 3's failure rate. How many unexpected interruptions should it plan for?",
    lambda s: rel.expected_interruptions(s["gpus"], s["days"] * DAY)["unexpected"],
    lambda s: rel.LLAMA3_UNEXPECTED * s["gpus"] / rel.LLAMA3_GPUS * s["days"] / (rel.LLAMA3_WINDOW_S / DAY),
    lambda s: (f"{rel.LLAMA3_UNEXPECTED} x ({s['gpus']:,} / {rel.LLAMA3_GPUS:,}) x ({s['days']} / {rel.LLAMA3_WINDOW_S / DAY:.0f}) = "
               f"{fmt(rel.LLAMA3_UNEXPECTED * s['gpus'] / rel.LLAMA3_GPUS * s['days'] / (rel.LLAMA3_WINDOW_S / DAY))}."),
    "interruptions", tolerance=0.05,
    why=f"Planned interruptions come on top ({rel.LLAMA3_PLANNED} in Llama 3's 54 days: firmware and configuration).",
)


# ---- 4. what a checkpoint holds -------------------------------------------------------------------------
CKPT_MODELS = ("llama3-70b", "llama2-13b", "llama3-405b", "gpt3-175b")


def _ckpt_gb(s) -> float:
    return rel.checkpoint_size(Model.get(s["model"]), 1, 1, 1, 0).job_bytes / GB


CHECKPOINT = Problem(
    "checkpoint", "What a checkpoint holds",
    {"model": CKPT_MODELS},
    lambda s: (f"{s['model']} ({fmt(Model.get(s['model']).params / 1e9)}B parameters) trains with mixed-precision Adam (2 bf16 weights, "
               "2 bf16 gradients, 12 fp32 master, m and v a parameter). How many GB does one full checkpoint hold, to resume exactly?"),
    _ckpt_gb, lambda s: 14 * Model.get(s["model"]).params / GB,
    lambda s: (f"Weights and optimizer state, not the gradients (recomputed in the next step): 14 bytes x {fmt(Model.get(s['model']).params / 1e9)}e9 = "
               f"{fmt(14 * Model.get(s['model']).params / GB)} GB."),
    "GB", tolerance=0.03,
    why="The data loader's position and the RNG states are small; the fp32 master copy is what makes the checkpoint 7x the bf16 weights.",
    texts="A checkpoint of the bf16 weights alone (2 bytes a parameter) resumes a different run: the optimizer's moments and master weights are gone.",
)


# ---- 5. Young's interval ---------------------------------------------------------------------------------
def _mtbf(s) -> float:
    return x.llama3_mtbf_s(s["gpus"])


YOUNG = Problem(
    "young", "How often to checkpoint",
    {"gpus": (16384, 8192, 4096), "stall_s": (60, 30, 120)},
    lambda s: (f"A {s['gpus']:,}-GPU job at Llama 3's rate (MTBF {fmt(_mtbf(s) / HOUR)} hours) pauses {s['stall_s']} s to write each checkpoint. "
               "By Young's rule, how many minutes of training between checkpoints?"),
    lambda s: rel.young_interval(s["stall_s"], _mtbf(s)) / 60,
    lambda s: math.sqrt(2 * s["stall_s"] * _mtbf(s)) / 60,
    lambda s: f"τ = √(2 C M) = √(2 x {s['stall_s']} s x {fmt(_mtbf(s))} s) = {fmt(math.sqrt(2 * s['stall_s'] * _mtbf(s)) / 60)} minutes.",
    "minutes", tolerance=0.05,
    refined=lambda s: rel.daly_interval(s["stall_s"], _mtbf(s)) / 60, refined_label="Daly's higher-order interval",
    why="Daly's correction adds the terms Young drops (of order C/M) and subtracts the stall itself: small while C << M.",
)


# ---- 6. what Young's interval costs ----------------------------------------------------------------------
RESTART_S = 600.0  # ten minutes to relaunch: the problem states it


def _lost(s) -> float:
    m = _mtbf(s)
    return 100 * (1 - rel.goodput(rel.young_interval(s["stall_s"], m), s["stall_s"], RESTART_S, m))


def _lost_envelope(s) -> float:
    m = _mtbf(s)
    return 100 * (math.sqrt(2 * s["stall_s"] / m) + RESTART_S / m)


LOST = Problem(
    "lost", "What failures cost at Young's interval",
    {"gpus": (16384, 8192, 4096), "stall_s": (60, 30, 120)},
    lambda s: (f"The same job (MTBF {fmt(_mtbf(s) / HOUR)} hours, {s['stall_s']} s checkpoint stalls) checkpoints at Young's interval and "
               f"takes {RESTART_S / 60:.0f} minutes to restart after each failure. What percentage of the wall-clock time is lost?"),
    _lost, _lost_envelope,
    lambda s: (f"To first order: checkpoints C/τ plus rework τ/(2M) make √(2C/M), plus restarts R/M: "
               f"√(2 x {s['stall_s']} / {fmt(_mtbf(s))}) + {RESTART_S:.0f} / {fmt(_mtbf(s))} = {fmt(_lost_envelope(s))}%."),
    "%", tolerance=0.15, agree=0.12,
    why="The exponential model counts rework and restarts that themselves fail; the first-order sum is close while τ + C is well below M.",
)

CHAPTER = ProblemSet(
    NAME, "Problem set 8 · Failures and checkpoints",
    (LLAMA3_MTBF, COMPONENTS, INTERRUPTIONS, CHECKPOINT, YOUNG, LOST),
    reading="Llama Team 2024 (The Llama 3 Herd of Models) Sec. 3.3.4 and Table 5; Young 1974; Daly 2006.",
)
VARIANTS = CHAPTER.variants
OUTCOMES = CHAPTER.outcomes_table
LAB = NAME
