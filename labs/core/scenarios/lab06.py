"""Lab 06, the ZeRO sweep: its settings, prediction options and outcome functions.

ZeRO in numbers for Lab 06: what each stage keeps on a GPU, what it sends, what fitting costs.

Everything here is pure data parallelism (tp = pp = 1) built from `labs.core.engine.perf`: the same
memory_breakdown() and estimate() the other labs use, with the student's activation settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from labs.core.engine.hardware import GPUS, Cluster
from labs.core.engine.memory import ZERO_STAGES, MemoryBreakdown, model_state_bytes
from labs.core.engine.models import Model
from labs.core.engine.perf import Estimate, Plan, estimate, memory_breakdown
from labs.core.engine.perf import _memory as memory_of_row  # memory_breakdown's own reading of the step model's row
from labs.core.scenarios.common import Option
from labs.core.engine.validation import check_choice, check_positive
from labs.core.engine.eras import stack_of
from labs.core.engine.plan import plan_columns, validate
from labs.core.engine.stages.xp import NUMPY
from labs.core.engine.step import evaluate
from labs.core.variants import Choice, LabVariants, Numeric, judged

WALL_MODELS = ("llama2-7b", "llama2-70b", "gpt3-175b", "llama3-405b")
WALL_GPUS = ("h100-sxm", "h200-sxm", "b200")


def wall_hbm(gpu_key: str | None = None) -> list[tuple[str, float, bool]]:
    """The memory wall's HBM lines: (label, bytes, confirmed) for WALL_GPUS, and the stakeholder's
    GPU `gpu_key` when it is not among them (newcomer 38bda0b: the A100 students had no line)."""
    from labs.core.engine.hardware import GPUS

    keys = WALL_GPUS if gpu_key is None or gpu_key in WALL_GPUS else (*WALL_GPUS, gpu_key)
    return [(GPUS[k].name.split(" ")[0] + (" (the stakeholder's)" if k == gpu_key else ""), GPUS[k].hbm_bytes, GPUS[k].confirmed) for k in keys]
SWEEP_MODELS = ("seed-100m", "llama2-7b", "llama2-13b", "llama2-70b", "gpt3-175b", "llama3-405b")
SWEEP_GPUS = ("a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200")
DP_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
# The DGX server each GPU comes in: its NVLink, NICs and host.
GPU_CLUSTER = {"a100-sxm-80gb": "dgx-a100", "h100-sxm": "dgx-h100", "h200-sxm": "dgx-h200", "b200": "dgx-b200"}


@dataclass(frozen=True)
class Activations:
    """What sets the activation memory of pure data parallelism: one micro-batch through every layer."""

    micro_batch: int = 1
    seq_len: int = 4096
    recompute: str = "selective"
    flash_attention: bool = True

    def __post_init__(self):
        check_positive("micro_batch", self.micro_batch, integer=True)
        check_positive("seq_len", self.seq_len, integer=True)


@lru_cache(maxsize=64)  # a frozen Model; Model.get re-validates it (~1 ms), and fewest_gpus asks ~17 times a search
def sized(model_key: str, act: Activations) -> Model:
    """The catalog model trained at the chosen sequence length."""
    return Model.get(model_key, seq_len=act.seq_len)


@lru_cache(maxsize=1024)  # a frozen Plan, the same for every model: a curve's 44 plans are built (and validated) once
def dp_plan(dp: int, zero_stage: int, act: Activations, optimizer: str = "fp32", offload: bool = False, microbatches: int = 1) -> Plan:
    """Pure data parallelism over dp GPUs, each running `microbatches` micro-batches per step."""
    check_positive("microbatches", microbatches, integer=True)
    return Plan(
        dp=dp, micro_batch=act.micro_batch, global_batch=act.micro_batch * dp * microbatches, zero_stage=zero_stage,
        recompute=act.recompute, flash_attention=act.flash_attention, optimizer_state=optimizer, offload_optimizer=offload,
    )


@lru_cache(maxsize=1024)  # pure in its (hashable) arguments, a frozen result: the myths' vendor claim asks it at every activation move
def dp_memory(model_key: str, dp: int, zero_stage: int, act: Activations, optimizer: str = "fp32", offload: bool = False) -> MemoryBreakdown:
    return memory_breakdown(sized(model_key, act), dp_plan(dp, zero_stage, act, optimizer, offload))


def memory_wall(act: Activations, models=WALL_MODELS) -> dict[str, MemoryBreakdown]:
    """Per-GPU memory under plain data parallelism (the same at any number of GPUs)."""
    return {key: dp_memory(key, 1, 0, act) for key in models}


@lru_cache(maxsize=64)  # pure in its (hashable) arguments; section 2 and the myths of Lab 06 read the same curves (read only)
def memory_curves(model_key: str, act: Activations, optimizer: str = "fp32", offload: bool = False, dps=DP_SIZES) -> dict[int, list[MemoryBreakdown]]:
    """Per-GPU memory against data-parallel size for each ZeRO stage. Offload needs a stage
    that shards the optimizer, so stage 0 is always shown without it.

    dp_memory at every point, as one evaluation of the step model over the points' columns
    (numpy), not one per point: 20-40 ms a model against 40-350 ms (44 points), the same
    numbers (equal to dp_memory's at every point and setting tried). Memory does not read the wires, so
    every point runs on one cluster of the largest size; each plan is validated on its own."""
    model = sized(model_key, act)
    points = [(stage, n) for stage in ZERO_STAGES for n in dps]
    plans = [dp_plan(n, stage, act, optimizer, offload and stage > 0) for stage, n in points]
    for plan in plans:  # what memory_breakdown checks before it runs a plan
        check_positive("gpus", plan.gpus, integer=True, maximum=1 << 17)
        validate(model, Cluster(GPUS["h100-sxm"], gpus_per_node=1, nodes=plan.gpus), plan)
    rows = [plan_columns(plan) for plan in plans]
    columns = {key: np.array([row[key] for row in rows]) for key in rows[0]}
    cluster = Cluster(GPUS["h100-sxm"], gpus_per_node=1, nodes=max(plan.gpus for plan in plans))
    r = evaluate(model, cluster, columns, plans[0].dp_algorithm, stack_of(plans[0].stack), NUMPY, collectives=False)
    terms = {key: value.tolist() for key, value in r.items() if key.endswith("_bytes")}  # what memory_breakdown reads of a row
    curves: dict[int, list[MemoryBreakdown]] = {stage: [] for stage in ZERO_STAGES}
    for i, (stage, _) in enumerate(points):
        curves[stage].append(memory_of_row({key: float(value[i]) for key, value in terms.items()}))
    return curves


@lru_cache(maxsize=256)  # pure in its (hashable) arguments; a class's ledgers repeat them
def fewest_gpus(model_key: str, gpu_key: str, zero_stage: int, act: Activations, optimizer: str = "fp32", offload: bool = False, limit: int = 1 << 16) -> int | None:
    """The smallest data-parallel size at which one GPU's memory fits its HBM; None when even
    `limit` GPUs do not (what stays on every GPU, activations and unsharded state, is too big)."""
    check_choice("gpu", gpu_key, GPUS)
    hbm = GPUS[gpu_key].hbm_bytes

    if dp_memory(model_key, limit, zero_stage, act, optimizer, offload).total > hbm:
        return None
    # Memory never grows with n: the first fit lies in (lo, hi], memory(lo) > HBM >= memory(hi).
    # What ZeRO shards goes as 1/n and the rest stays, so memory is nearly a line in 1/n: each step
    # asks where the line through the last two points asked meets the HBM, and that n's neighbour
    # (5-7 evaluations of the engine where a bisection over 1..65,536 asks 17); what is still open
    # after three steps is bisected.
    lo, hi, asked = 0, limit, []

    def ask(n: int) -> bool:
        nonlocal lo, hi
        used = dp_memory(model_key, n, zero_stage, act, optimizer, offload).total
        asked.append((n, used))
        if used <= hbm:
            hi = min(hi, n)
        else:
            lo = max(lo, n)
        return used <= hbm

    if ask(1):
        return 1
    ask(2)
    for _ in range(3):
        if hi - lo <= 1:
            return hi
        n = _where_the_line_meets(asked[-2:], hbm, lo, hi)
        neighbour = n - 1 if ask(n) else n + 1
        if lo < neighbour < hi:
            ask(neighbour)
    while hi - lo > 1:
        ask((lo + hi) // 2)
    return hi


def _where_the_line_meets(points: list[tuple[int, float]], hbm: float, lo: int, hi: int) -> int:
    """The n in (lo, hi) where the line through two (n, memory) points, in 1/n, meets `hbm`;
    the middle of (lo, hi) where it does not cross there."""
    (n1, m1), (n2, m2) = points
    if m1 != m2:
        x = 1 / n1 + (hbm - m1) * (1 / n2 - 1 / n1) / (m2 - m1)
        if x > 0 and lo < 1 / x < hi:
            return min(max(math.ceil(1 / x), lo + 1), hi - 1)
    return (lo + hi) // 2


def dp_cluster(gpu_key: str, gpus: int, placement: str = "packed") -> Cluster:
    """`gpus` GPUs of the chosen kind: "packed" fills 8-GPU servers (NVLink inside, NICs
    between); "spread" puts each GPU in its own server, so every byte crosses a NIC."""
    check_choice("gpu", gpu_key, GPU_CLUSTER)
    check_choice("placement", placement, ("packed", "spread"))
    key = GPU_CLUSTER[gpu_key]
    if placement == "spread":
        return Cluster.get(key, nodes=gpus, gpus_per_node=1)
    per_node = Cluster.get(key).gpus_per_node
    if gpus <= per_node:
        return Cluster.get(key, nodes=1, gpus_per_node=gpus)
    if gpus % per_node:
        raise ValueError(f"gpus must be a multiple of {per_node} (whole servers) above one server, got {gpus}")
    return Cluster.get(key, nodes=gpus // per_node)


@lru_cache(maxsize=512)  # pure in its arguments: a class's ledgers (and a lab's re-runs) repeat them
def dp_estimate(model_key: str, gpu_key: str, dp: int, zero_stage: int, act: Activations, optimizer: str = "fp32", offload: bool = False, microbatches: int = 1, placement: str = "packed") -> Estimate:
    return estimate(sized(model_key, act), dp_cluster(gpu_key, dp, placement), dp_plan(dp, zero_stage, act, optimizer, offload, microbatches))


def stage_costs(model_key: str, gpu_key: str, dp: int, act: Activations, microbatches: int = 1, placement: str = "packed") -> dict[int, Estimate]:
    """One estimate per ZeRO stage for the same model, GPUs and batch."""
    return {stage: dp_estimate(model_key, gpu_key, dp, stage, act, microbatches=microbatches, placement=placement) for stage in ZERO_STAGES}


def traffic_ratio(zero_stage: int, over_stage: int, microbatches: int, dp: int = 8) -> float:
    """Bytes each GPU sends per step under one stage over another (the model drops out)."""
    act = Activations(seq_len=1024)
    sent = {s: dp_estimate("seed-100m", "h100-sxm", dp, s, act, microbatches=microbatches).comm_bytes_per_gpu["dp"] for s in (zero_stage, over_stage)}
    return sent[zero_stage] / sent[over_stage]


# The claim the stakeholder forwards: seeds/002 ("ZeRO-3 + activation checkpointing: now
# per-GPU sits around ~50-60 GB") for a 70B model on one 8-GPU server.
VENDOR_CLAIM_GB = (50, 60)
VENDOR_CLAIM_GPUS = 8


# ---- the seed milestones, as the student checks them ------------------------------------
@dataclass(frozen=True)
class Milestone:
    claim: str
    where: str  # which instrument setting shows it
    stated_gb: float
    engine_gb: float

    @property
    def error(self) -> float:
        return self.engine_gb / self.stated_gb - 1

    @property
    def holds(self) -> bool:
        return abs(self.error) <= 0.05


def seed_milestones() -> list[Milestone]:
    """Model-state figures from the seed course notes (week 22) and the distributed-training
    page. Where the catalog has the model, the engine's figure is the one its instruments show
    (that model's real parameter count through memory_breakdown); the 10B rows have no catalog
    model and use ZeRO's per-stage formula on 10B."""
    gb = 1e9
    act = Activations()

    def shown(key: str, dp: int, stage: int) -> float:
        return dp_memory(key, dp, stage, act).model_state / gb

    return [
        Milestone("100M parameters on 2 GPUs, DDP", "Milestone 100M (98M parameters), DP 2, ZeRO-0", 1.6, shown("seed-100m", 2, 0)),
        Milestone("100M parameters on 2 GPUs, ZeRO-2", "Milestone 100M, DP 2, ZeRO-2", 0.9, shown("seed-100m", 2, 2)),
        Milestone("100M parameters on 2 GPUs, FSDP (ZeRO-3)", "Milestone 100M, DP 2, ZeRO-3", 0.8, shown("seed-100m", 2, 3)),
        Milestone("10B parameters, DDP, per GPU", "the formula (no 10B model in the catalog)", 160, model_state_bytes(10e9, 0, 8) / gb),
        Milestone("10B parameters, FSDP on 8 GPUs", "the formula", 20, model_state_bytes(10e9, 3, 8) / gb),
        Milestone("70B parameters: the whole training state", "Llama 2 70B (69B parameters), DP 1, ZeRO-0", 1120, shown("llama2-70b", 1, 0)),
        Milestone("70B parameters, ZeRO-3 on 8 GPUs", "Llama 2 70B, DP 8, ZeRO-3", 140, shown("llama2-70b", 8, 3)),
    ]


# ---- Lab 06, ZeRO sweep ----------------------------------------------------------------------
FIT_MODEL, FIT_GPU, FIT_STAGE = "llama2-70b", "h100-sxm", 3
FIT_ACTIVATIONS = Activations(micro_batch=1, seq_len=4096, recompute="full", flash_attention=True)
# The lab before per-student variants asked for a range (older ledgers are graded against these
# options); a variant asks for the number, typed in.
FIT_OPTIONS = (
    Option("A", "8 or fewer: one server is enough", "forgets optimizer state and gradients"),
    Option("B", "9 to 24", "counts the model state but not what stays on every GPU"),
    Option("C", "25 to 64", "ZeRO-3 does not shard as far as it does"),
    Option("D", "No number of H100s: it never fits", "sharding cannot beat the model's size"),
)
FIT_RANGES = {"A": (1, 8), "B": (9, 24), "C": (25, 64)}


@lru_cache(maxsize=1)  # a constant of the engine, asked for by every sweep outcome
def fit_fewest() -> int | None:
    return fewest_gpus(FIT_MODEL, FIT_GPU, FIT_STAGE, FIT_ACTIVATIONS)


def fit_answer(fewest: int | None = None) -> str | None:
    """The option whose range holds the engine's fewest H100s (D when none fits)."""
    n = fit_fewest() if fewest is None else fewest
    if n is None:
        return "D"
    return next((k for k, (lo, hi) in FIT_RANGES.items() if lo <= n <= hi), None)


ZERO2_OPTIONS = (
    Option("A", "Nothing at one micro-batch; with accumulation, a reduce-scatter per extra micro-batch", "sharded gradients accumulate for free"),
    Option("B", "Twice ZeRO-1's bytes: the gradients are reduce-scattered, then gathered back", "ZeRO-2 gathers the gradients back"),
    Option("C", "About 1.5x ZeRO-1's bytes, the same premium that ZeRO-3 pays", "ZeRO-2 pays ZeRO-3's premium"),
    Option("D", "Less than ZeRO-1: each GPU sends only its 1/N shard of the gradients", "sharding gradients shrinks the traffic"),
)
ZERO2_ACCUMULATION = 4  # micro-batches per step in the accumulation case


def zero2_facts(accumulation: int = ZERO2_ACCUMULATION) -> dict:
    return {"one": traffic_ratio(2, 1, 1), "accumulated": traffic_ratio(2, 1, accumulation)}


ZERO2_CLAIMS: dict[str, Callable[[dict], bool]] = {
    "A": lambda f: abs(f["one"] - 1) < 0.01 and f["accumulated"] > 1.5,
    "B": lambda f: abs(f["one"] - 2) < 0.1,
    "C": lambda f: abs(f["one"] - 1.5) < 0.1,
    "D": lambda f: f["one"] < 0.99,
}


@lru_cache(maxsize=8)  # a constant of the engine, asked for by every sweep outcome
def zero2_answer(accumulation: int = ZERO2_ACCUMULATION) -> str | None:
    facts = zero2_facts(accumulation)
    return next((k for k, claim in ZERO2_CLAIMS.items() if claim(facts)), None)


SWEEP_FIELDS = ("model", "gpu", "optimizer_state", "micro_batch", "seq_len", "recompute", "flash_attention", "offload", "dp", "zero_stage", "microbatches")


def zero_sweep_outcomes(inputs: dict, predictions: dict, variant=None) -> dict:
    missing = [k for k in SWEEP_FIELDS if k not in inputs]
    if missing:
        raise ValueError(f"06_zero_sweep inputs lack {missing}")
    act = Activations(int(inputs["micro_batch"]), int(inputs["seq_len"]), inputs["recompute"], bool(inputs["flash_attention"]))
    stage, dp, offload = int(inputs["zero_stage"]), int(inputs["dp"]), bool(inputs["offload"]) and int(inputs["zero_stage"]) > 0
    est = dp_estimate(inputs["model"], inputs["gpu"], dp, stage, act, inputs["optimizer_state"], offload, int(inputs["microbatches"]))
    return {
        "memory_gb": est.memory.total / 1e9,
        "fits": est.fits,
        "fewest_gpus": fewest_gpus(inputs["model"], inputs["gpu"], stage, act, inputs["optimizer_state"], offload),
        "dp_bytes_per_gpu": est.comm_bytes_per_gpu["dp"],
        "step_time_s": est.step_time_s,
        "mfu": est.mfu,
        "fit_correct": judged(variant, "fit", predictions, lambda a: a == fit_answer()),
        "zero2_correct": judged(variant, "zero2", predictions, lambda a: a == zero2_answer()),
    }


OUTCOMES = {("06_zero_sweep", "sweep"): zero_sweep_outcomes}


# ---- per-student variants (labs.variants) ------------------------------------------------------
LAB = "06_zero_sweep"
# The fit question's GPU and activations: 80 GB-class GPUs, where the vendor's 8 stays far from the
# fewest (15-24); the ZeRO-2 question's accumulation (ZeRO-2 over ZeRO-1 is (m + 1) / 2 there).
VARIANT_GPUS = ("a100-sxm-80gb", "h100-sxm")
VARIANT_SEQ = (2048, 4096, 8192)
VARIANT_MICRO_BATCH = (1, 2)
VARIANT_ACCUMULATION = (3, 4, 8, 16)
FIT_TOLERANCE = 0.10  # of the fewest GPUs, and at least one GPU


def fit_activations(settings: dict) -> Activations:
    return Activations(micro_batch=int(settings["micro_batch"]), seq_len=int(settings["seq_len"]), recompute="full", flash_attention=True)


def draw_settings_v1(d) -> dict:
    return {"gpu": d.choice("gpu", VARIANT_GPUS), "seq_len": d.choice("seq_len", VARIANT_SEQ), "micro_batch": d.choice("micro_batch", VARIANT_MICRO_BATCH),
            "accumulation": d.choice("accumulation", VARIANT_ACCUMULATION)}


def build_questions_v1(s: dict) -> dict:
    m = int(s["accumulation"])
    return {
        "fit": fit_question(s),
        "zero2": Choice(
            f"What does ZeRO-2 cost in communication over ZeRO-1, at one micro-batch per step and at {m} (gradient accumulation)?",
            ZERO2_OPTIONS, zero2_answer(m), zero2_explanations(m),
        ),
    }


def fit_question(s: dict) -> Numeric:
    gpu, act = s["gpu"], fit_activations(s)
    n = fewest_gpus(FIT_MODEL, gpu, FIT_STAGE, act)
    if n is None:
        raise ValueError(f"{FIT_MODEL} does not fit on {gpu} at {act}: not a variant the lab offers")
    at = {k: dp_memory(FIT_MODEL, k, FIT_STAGE, act).total / 1e9 for k in (n - 1, n)}
    hbm = GPUS[gpu].hbm_bytes / 1e9
    return Numeric(
            f"With ZeRO-3, micro-batch {act.micro_batch}, {act.seq_len:,} tokens and full activation checkpointing, what is the fewest number "
            f"of {GPUS[gpu].name} GPUs ({GPUS[gpu].hbm_bytes / 2**20:,.0f} MiB as nvidia-smi shows it, {hbm:.1f} GB) on which "
            f"{Model.get(FIT_MODEL).name} fits, activations included? Type a number (right within {FIT_TOLERANCE:.0%}).",
            float(n), max(1.0, FIT_TOLERANCE * n), "GPUs",
            f"the engine's fewest is **{n}**: {at[n]:.1f} GB per GPU of {hbm:.1f}, against {at[n - 1]:.1f} GB on {n - 1}.",
        )


def zero2_explanations(accumulation: int = ZERO2_ACCUMULATION) -> dict[str, str]:
    """The reveal's line for each ZeRO-2 option, with the engine's traffic ratios."""
    f, z3 = zero2_facts(accumulation), traffic_ratio(3, 0, 1)
    return {
        "A": f"at one micro-batch ZeRO-2 sends {f['one']:.2f}x ZeRO-1's bytes (a reduce-scatter and an all-gather, like ZeRO-1). "
             f"Its gradients are sharded, so they cannot accumulate locally: at {accumulation} micro-batches per step it sends {f['accumulated']:.2f}x.",
        "B": f"the all-gather moves the updated weights, once, in ZeRO-1 too: the ratio is {f['one']:.2f}x at one micro-batch.",
        "C": f"{z3:.2f}x is ZeRO-3's premium over plain DP, for re-gathering the weights in the backward pass.",
        "D": "each GPU sends (N-1)/N of the gradient bytes in a reduce-scatter whether or not it keeps the full gradient afterwards.",
    }


# ---- variants, second edition: the ZeRO-2 question at the student's own accumulation ----------------
# The first edition asked at one micro-batch and at m together, so its key was the same option for
# every student. Now each student's step runs m micro-batches, m = 1 for about half the ids: at
# m = 1 ZeRO-2 sends what ZeRO-1 does, above it (m + 1) / 2 times as much (DeepSpeed #2252).
VARIANT_ACCUMULATE = (False, True)
ZERO2_STEP_OPTIONS = (
    Option("A", "The same bytes as ZeRO-1: one reduce-scatter and one all-gather a step", "ZeRO-2's sharded gradients always accumulate for free"),
    Option("B", "More than ZeRO-1: sharded gradients cannot accumulate, so each micro-batch reduce-scatters",
           "ZeRO-2 pays a reduce-scatter per micro-batch even with one micro-batch a step"),
    Option("C", "Twice ZeRO-1's bytes: the gradients are reduce-scattered, then gathered back", "ZeRO-2 gathers the gradients back"),
    Option("D", "Less than ZeRO-1: each GPU sends only its 1/N shard of the gradients", "sharding gradients shrinks the traffic"),
)


def zero2_step_facts(accumulation: int) -> dict:
    """ZeRO-2's bytes over ZeRO-1's at one micro-batch a step and at `accumulation`."""
    return {"one": traffic_ratio(2, 1, 1), "at": traffic_ratio(2, 1, accumulation), "m": accumulation}


ZERO2_STEP_CLAIMS: dict[str, Callable[[dict], bool]] = {
    "A": lambda f: abs(f["at"] - 1) < 0.01,
    "B": lambda f: f["at"] > 1.2 and abs(f["one"] - 1) < 0.01,  # the extra bytes come with accumulation only
    "C": lambda f: abs(f["one"] - 2) < 0.1,
    "D": lambda f: f["at"] < 0.99,
}


@lru_cache(maxsize=8)
def zero2_step_answer(accumulation: int) -> str | None:
    facts = zero2_step_facts(accumulation)
    held = [k for k, claim in ZERO2_STEP_CLAIMS.items() if claim(facts)]
    return held[0] if len(held) == 1 else None


def zero2_step_explanations(accumulation: int) -> dict[str, str]:
    """The reveal's line for each option at the student's m, with the engine's traffic ratios."""
    f, z3, m = zero2_step_facts(accumulation), traffic_ratio(3, 0, 1), accumulation
    if m == 1:
        a = (f"at one micro-batch a step ZeRO-2 sends {f['at']:.2f}x ZeRO-1's bytes: the gradients are reduce-scattered once, "
             "and the updated weights all-gathered once, as in ZeRO-1.")
        b = (f"the per-micro-batch reduce-scatter costs only when a step runs several: at one it is the step's only one "
             f"({f['at']:.2f}x). Move the accumulation slider: at 4 micro-batches it is {traffic_ratio(2, 1, 4):.2f}x.")
    else:
        a = (f"with {m} micro-batches a step ZeRO-2 sends {f['at']:.2f}x ZeRO-1's bytes; the two match only at one micro-batch "
             f"({f['one']:.2f}x), where there is nothing to accumulate.")
        b = (f"a rank keeps only its shard of the gradients, so each of the {m} micro-batches reduce-scatters its own: "
             f"{f['at']:.2f}x ZeRO-1's bytes, which accumulates locally and reduce-scatters once.")
    return {
        "A": a,
        "B": b,
        "C": f"the all-gather moves the updated weights, once a step, in ZeRO-1 too: the ratio is {f['one']:.2f}x at one micro-batch"
             + (f" and {f['at']:.2f}x at {m}." if m > 1 else "."),  # P1 (review 38bda0b): no "and 1.00x at 1"
        "D": "each GPU sends (N-1)/N of the gradient bytes in a reduce-scatter whether or not it keeps the full gradient afterwards: "
             f"{f['at']:.2f}x ZeRO-1's bytes here.",
    }


def draw_settings(d) -> dict:
    accumulate = d.choice("accumulate", VARIANT_ACCUMULATE)
    m = d.choice("accumulation", VARIANT_ACCUMULATION)
    return {"gpu": d.choice("gpu", VARIANT_GPUS), "seq_len": d.choice("seq_len", VARIANT_SEQ), "micro_batch": d.choice("micro_batch", VARIANT_MICRO_BATCH),
            "accumulation": m if accumulate else 1}


def build_questions(s: dict) -> dict:
    m = int(s["accumulation"])
    step = "one micro-batch" if m == 1 else f"{m} micro-batches (gradient accumulation)"
    return {
        "fit": fit_question(s),
        "zero2": Choice(
            f"Each GPU runs {step} per optimizer step. What does ZeRO-2 cost in communication over ZeRO-1 at that step?",
            ZERO2_STEP_OPTIONS, zero2_step_answer(m), zero2_step_explanations(m),
        ),
    }


# ---- variants, third edition: ZeRO-2 against its neighbours, each option right for a quarter ---------
# Edition 2 had two keys, "the same" at one micro-batch and "more" with accumulation, over four
# fixed options: a blind rule found the key for 51% of 200 ids (issue 38 item 2). Edition 3 asks
# what a switch between ZeRO-2 and a neighbouring stage does to the bytes a GPU sends per step, and
# each of the four options names what the engine's collectives show for three of twelve cases: the
# same bytes (ZeRO-1 <-> ZeRO-2 at one micro-batch), more reduce-scatters (ZeRO-1 -> ZeRO-2 with
# accumulation: one per micro-batch, DeepSpeed #2252), more all-gathers (ZeRO-2 -> ZeRO-3: the
# weights gathered for every forward and backward), fewer bytes (ZeRO-2 -> ZeRO-1 with
# accumulation: full gradients accumulate locally, reduce-scattered once). Neither the accumulation
# alone nor, between ZeRO-1 and ZeRO-2, the direction alone gives the key.
ZERO2_SWITCHES = (  # (from stage, to stage, accumulates), three per option
    (1, 2, False), (2, 1, False), (1, 2, False),
    (1, 2, True), (1, 2, True), (1, 2, True),
    (2, 3, False), (2, 3, True), (2, 3, True),
    (2, 1, True), (2, 1, True), (2, 1, True),
)
ZERO2_SWITCH_OPTIONS = (
    Option("A", "The same: one reduce-scatter and one all-gather a step either way", "a ZeRO stage changes memory, not traffic"),
    Option("B", "More: sharded gradients make every micro-batch reduce-scatter", "every step up in ZeRO adds reduce-scatters"),
    Option("C", "More: the weights are all-gathered again in every forward and backward", "every sharded stage re-gathers the weights"),
    Option("D", "Fewer: full gradients accumulate locally and reduce once a step", "a lower ZeRO stage always sends fewer bytes"),
)
ZERO2_SWITCH_MARGIN = 1.4  # "more" and "fewer": the step's bytes change by this factor or more
ZERO2_SWITCH_CHANGED = 1.2  # the claims' and the reveal's "more" and "fewer" for the step's, the reduce-scatters' and the all-gathers' bytes


def stage_traffic(zero_stage: int, microbatches: int) -> dict[str, float]:
    """Bytes each GPU sends per step in the stage's reduce-scatters and all-gathers (the step
    model's collectives; seed-100m on 8 H100s: the ratios between stages do not depend on the model)."""
    e = dp_estimate("seed-100m", "h100-sxm", 8, zero_stage, Activations(seq_len=1024), microbatches=microbatches)
    sent = {c.key: c.sent_bytes for c in e.collectives}
    return {"reduce_scatter": sent.get("dp_reduce", 0.0), "all_gather": sent.get("dp_gather", 0.0)}


@lru_cache(maxsize=64)
def zero2_switch_facts(from_stage: int, to_stage: int, microbatches: int) -> dict:
    """The switch's ratios, to over from: all bytes, the reduce-scatters', the all-gathers'."""
    a, b = stage_traffic(from_stage, microbatches), stage_traffic(to_stage, microbatches)
    return {"from": from_stage, "to": to_stage, "m": microbatches, "total": sum(b.values()) / sum(a.values()),
            "rs": b["reduce_scatter"] / a["reduce_scatter"], "ag": b["all_gather"] / a["all_gather"]}


def _unchanged(x: float) -> bool:
    return abs(x - 1) < 0.01


ZERO2_SWITCH_CLAIMS: dict[str, Callable[[dict], bool]] = {
    "A": lambda f: _unchanged(f["total"]),
    "B": lambda f: f["total"] > ZERO2_SWITCH_CHANGED and f["rs"] > ZERO2_SWITCH_CHANGED and _unchanged(f["ag"]),
    "C": lambda f: f["total"] > ZERO2_SWITCH_CHANGED and f["ag"] > ZERO2_SWITCH_CHANGED and _unchanged(f["rs"]),
    "D": lambda f: f["total"] < 1 / ZERO2_SWITCH_CHANGED and f["rs"] < 1 / ZERO2_SWITCH_CHANGED and _unchanged(f["ag"]),
}


def zero2_switch_answer(from_stage: int, to_stage: int, microbatches: int) -> str | None:
    facts = zero2_switch_facts(from_stage, to_stage, microbatches)
    held = [k for k, claim in ZERO2_SWITCH_CLAIMS.items() if claim(facts)]
    return held[0] if len(held) == 1 else None


def zero2_switch_explanations(from_stage: int, to_stage: int, microbatches: int) -> dict[str, str]:
    """The reveal's line per option: what the switch does to the reduce-scatters and the
    all-gathers, from the engine's collectives at the student's micro-batches."""
    f = zero2_switch_facts(from_stage, to_stage, microbatches)
    a, b, m = f"ZeRO-{from_stage}", f"ZeRO-{to_stage}", microbatches
    per = "at one micro-batch a step" if m == 1 else f"at {m} micro-batches a step"
    split = f"{per} {b} sends {f['total']:.3g}x {a}'s bytes: its reduce-scatters {f['rs']:.3g}x, its all-gathers {f['ag']:.3g}x."
    if f["rs"] > ZERO2_SWITCH_CHANGED:
        b_line = (f"a ZeRO-2 rank keeps only its shard of the gradients, so each of the {m} micro-batches reduce-scatters its own, where ZeRO-1 "
                  f"accumulates full gradients and reduce-scatters once: {split}")
    elif f["rs"] < 1 / ZERO2_SWITCH_CHANGED:
        b_line = f"that is the switch the other way round: {a} reduce-scatters every micro-batch, {b} once a step; {split}"
    elif m == 1:
        b_line = f"with one micro-batch a step there is one reduce-scatter either way: {split}"
    else:
        b_line = f"{a} already reduce-scatters every micro-batch, and so does {b}: {split}"
    if f["rs"] < 1 / ZERO2_SWITCH_CHANGED:
        d_line = (f"ZeRO-1 keeps full gradients, so the {m} micro-batches accumulate into them and reduce-scatter once, where ZeRO-2 "
                  f"reduce-scatters each: {split}")
    elif m == 1 and from_stage < 3 and to_stage < 3:
        d_line = f"with one micro-batch a step there is nothing to accumulate: {split}"
    else:
        d_line = f"{b} sends no fewer bytes than {a}: {split}"
    return {
        "A": (f"{per} both reduce-scatter the gradients once and all-gather the updated weights once: {b} sends {f['total']:.3g}x {a}'s bytes."
              if _unchanged(f["total"]) else split),
        "B": b_line,
        "C": (f"ZeRO-3 shards the weights, so it all-gathers them for every micro-batch's forward and again for its backward: {split}"
              if f["ag"] > ZERO2_SWITCH_CHANGED else f"only ZeRO-3 gathers the weights again: {split}"),
        "D": d_line,
    }


def draw_settings_v3(d) -> dict:
    from_stage, to_stage, accumulates = d.choice("zero_switch", ZERO2_SWITCHES)
    m = d.choice("accumulation", VARIANT_ACCUMULATION)
    return {"gpu": d.choice("gpu", VARIANT_GPUS), "seq_len": d.choice("seq_len", VARIANT_SEQ), "micro_batch": d.choice("micro_batch", VARIANT_MICRO_BATCH),
            "accumulation": m if accumulates else 1, "zero_from": from_stage, "zero_to": to_stage}


def build_questions_v3(s: dict) -> dict:
    m, a, b = int(s["accumulation"]), int(s["zero_from"]), int(s["zero_to"])
    step = "one micro-batch" if m == 1 else f"{m} micro-batches (gradient accumulation)"
    return {
        "fit": fit_question(s),
        "zero2": Choice(
            f"A data-parallel job runs ZeRO-{a}, each GPU {step} per optimizer step. It switches to ZeRO-{b}. "
            "What happens to the bytes each GPU sends per step?",
            ZERO2_SWITCH_OPTIONS, zero2_switch_answer(a, b, m),
            zero2_switch_explanations(a, b, m),
        ),
    }


VARIANTS = LabVariants(LAB, draw_settings_v3, build_questions_v3, version=3,
                       older={1: (draw_settings_v1, build_questions_v1), 2: (draw_settings, build_questions)})
