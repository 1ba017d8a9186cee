"""What each lab step's outcome is, computed from the step's recorded inputs.

The labs call these to show and save outcomes; `python -m labs.grade` calls the same functions
to recompute them, so a stored outcome or "correct" flag is never trusted. Each prediction
option carries a claim that the engine checks: the right option is the one whose claim holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from labs.core.perf import Plan, estimate
from labs.core.scenarios import DESIGN_GLOBAL_BATCH, DP_WALL_GPUS, design_inputs, dp_wall_estimate
from labs.core.search import sweep
from labs.core.topology import bus_bandwidth
from labs.core.zero import Activations, dp_estimate, fewest_gpus, traffic_ratio


@dataclass(frozen=True)
class Option:
    key: str
    label: str


# ---- Flagship lab, Act I: why does MFU fall? ---------------------------------------------
ACT1_OPTIONS = (
    Option("A", "All-reduce bytes per GPU grow with the number of GPUs, so communication swamps compute"),
    Option("B", "Each GPU's share of the fixed batch shrinks while the bytes it must all-reduce stay about twice its gradients, so communication that was small next to compute comes to rival it"),
    Option("C", "Per-message latency (NCCL software overhead) dominates the all-reduce at scale"),
    Option("D", "Past one node a data-parallel ring is limited by one NIC per GPU, about 47 GB/s instead of NVLink's 370"),
)


def act1_facts(inputs: dict | None = None) -> dict:
    """The numbers that decide Act I's options, for the stakeholder's scenario."""
    small, large = (dp_wall_estimate(n) for n in (DP_WALL_GPUS[0], DP_WALL_GPUS[-1]))
    return {
        "bytes_ratio": large.comm_bytes_per_gpu["dp"] / small.comm_bytes_per_gpu["dp"],
        "compute_ratio": large.time.compute / small.time.compute,
        "latency_share": large.dp_exposed_latency_s / large.time.dp_comm if large.time.dp_comm else 0.0,
        "exposed_over_compute": large.time.dp_comm / large.time.compute,
        "nvlink_gbs": bus_bandwidth("all_reduce", 4e9, small.cluster, DP_WALL_GPUS[0], 1, "ring") / 1e9,
        "across_nodes_gbs": bus_bandwidth("all_reduce", 4e9, large.cluster, DP_WALL_GPUS[-1], 1, "ring") / 1e9,
        "one_nic_gbs": large.cluster.inter.effective_bytes_per_s / 1e9,
        "exposed_growth": large.time.dp_comm / max(small.time.dp_comm, 1e-12),
        "mfu": [dp_wall_estimate(n).mfu for n in DP_WALL_GPUS],
    }


ACT1_CLAIMS: dict[str, Callable[[dict], bool]] = {
    "A": lambda f: f["bytes_ratio"] > 1.5,
    "B": lambda f: f["bytes_ratio"] < 1.5 and f["compute_ratio"] < 0.1 and f["exposed_over_compute"] > 0.5,
    "C": lambda f: f["latency_share"] > 0.5,
    "D": lambda f: f["across_nodes_gbs"] < f["nvlink_gbs"] / 2,
}


def act1_correct_option() -> str | None:
    """The option whose claim the engine's numbers bear out."""
    facts = act1_facts()
    return next((k for k, claim in ACT1_CLAIMS.items() if claim(facts)), None)


def act1_outcomes(inputs: dict, predictions: dict) -> dict:
    est = dp_wall_estimate(
        int(inputs["gpus"]), int(inputs["global_batch"]), bool(inputs["fixed_per_gpu"]),
        inputs["fabric"], inputs["algorithm"], bool(inputs["overlap"]), int(inputs.get("params_b", 7)),
        inputs.get("grad_reduce_dtype", "bf16"),
    )
    correct = act1_correct_option()
    return {
        "fits": est.fits,
        "mfu": est.mfu if est.fits else None,
        "step_time_s": est.step_time_s,
        "dp_comm_exposed_s": est.time.dp_comm,
        "correct_option": correct,
        "prediction_correct": correct is not None and predictions.get("cause") == correct,
    }


# ---- Flagship lab, Act II: which design for GPT-3 175B on 1024 H100s? ------------------------
# Act II runs Megatron-Core 2024's software: flash attention, SP with TP overlap inside the NVLink
# domain, fp32 gradient reduction, the distributed optimizer (ZeRO-1).
DESIGN_ERA = "megatron-core-2024"
_DESIGN_COMMON = dict(global_batch=DESIGN_GLOBAL_BATCH, zero_stage=1, recompute="selective", schedule="1f1b")
ACT2_DESIGNS: dict[str, Plan] = {
    "A": Plan.for_era(DESIGN_ERA, tp=16, pp=8, dp=8, micro_batch=1, **_DESIGN_COMMON),
    "B": Plan.for_era(DESIGN_ERA, tp=1, pp=32, dp=32, micro_batch=1, sequence_parallel=False, tp_comm_overlap=False, **_DESIGN_COMMON),
    "C": Plan.for_era(DESIGN_ERA, tp=8, pp=8, dp=16, micro_batch=1, **_DESIGN_COMMON),
    "D": Plan.for_era(DESIGN_ERA, tp=8, pp=32, dp=4, micro_batch=4, **_DESIGN_COMMON),
}
ACT2_LABELS = {
    "A": "TP=16 x PP=8 x DP=8: wide tensor parallelism, fewer pipeline stages",
    "B": "TP=1 x PP=32 x DP=32: pipeline only, no tensor parallelism",
    "C": "TP=8 x PP=8 x DP=16: tensor parallel inside each node, pipeline across nodes",
    "D": "TP=8 x PP=32 x DP=4, micro-batch 4: a deep pipeline, three layers a stage",
}
ACT2_OPTIONS = tuple(Option(k, v) for k, v in ACT2_LABELS.items())


def act2_option_estimates() -> dict:
    model, cluster = design_inputs()
    return {key: estimate(model, cluster, plan) for key, plan in ACT2_DESIGNS.items()}


def act2_best_option(ests: dict | None = None) -> str:
    """The design whose plan fits and reaches the highest MFU (from `ests` when given)."""
    ests = ests or act2_option_estimates()
    return max((k for k, e in ests.items() if e.fits), key=lambda k: ests[k].mfu)


def plan_from_inputs(inputs: dict) -> Plan:
    """Act II's plan from its recorded inputs; fields not recorded take the era's defaults."""
    return Plan.for_era(DESIGN_ERA, **inputs)


def act2_outcomes(inputs: dict, predictions: dict) -> dict:
    model, cluster = design_inputs()
    est = estimate(model, cluster, plan_from_inputs(inputs))
    best = act2_best_option()
    return {
        "fits": est.fits,
        "mfu": est.mfu,
        "bubble_fraction": est.bubble_fraction,
        "memory_gb": est.memory.total / 1e9,
        "step_time_s": est.step_time_s,
        "correct_option": best,
        "prediction_correct": predictions.get("design") == best,
    }


def best_design(**fixed):
    model, cluster = design_inputs()
    return sweep(model, cluster, global_batch=DESIGN_GLOBAL_BATCH, era=DESIGN_ERA, **fixed).iloc[0]


OUTCOMES: dict[tuple[str, str], Callable[[dict, dict], dict]] = {
    ("05_parallelism", "act1"): act1_outcomes,
    ("05_parallelism", "act2"): act2_outcomes,
}


# ---- Lab 07, pipeline visualizer -------------------------------------------------------------
UTILISATION_OPTIONS = (Option("A", "50%"), Option("B", "67%"), Option("C", "80%"), Option("D", "89%"))
UTILISATION_VALUES = {"A": 0.50, "B": 2 / 3, "C": 0.80, "D": 8 / 9}
SEED_P, SEED_M = 2, 4  # seeds/001 week 24: two stages, four micro-batches
BUBBLE_TARGET, DEEP_P = 0.05, 16
MICROBATCH_OPTIONS = (Option("A", "32"), Option("B", "96"), Option("C", "288"), Option("D", "1024"))


def seed_utilisation() -> float:
    """Utilisation of the seed's pipeline, counted on its generated 1F1B timeline."""
    from labs.core.pipeline import timeline

    return 1 - timeline(SEED_P, SEED_M, "1f1b").bubble_fraction("total")


def utilisation_answer() -> str:
    measured = seed_utilisation()
    return min(UTILISATION_VALUES, key=lambda k: abs(UTILISATION_VALUES[k] - measured))


def microbatch_answer() -> str:
    """The fewest micro-batches among the options that keep a 16-stage 1F1B bubble under 5% of
    the wall time."""
    from labs.core.pipeline import bubble_fraction

    ok = [o for o in MICROBATCH_OPTIONS if bubble_fraction(DEEP_P, int(o.label), "1f1b", 1, "total") < BUBBLE_TARGET]
    return min(ok, key=lambda o: int(o.label)).key


def pipeline_outcomes(inputs: dict, predictions: dict) -> dict:
    from labs.core.pipeline import OpCosts, bubble_fraction, timeline

    p, m, v = int(inputs["p"]), int(inputs["m"]), int(inputs.get("v", 1))
    costs = OpCosts(float(inputs["tf"]), float(inputs["tb"]), float(inputs["tw"]))
    t = timeline(p, m, inputs["schedule"], v, costs)
    return {
        "bubble_measured": t.bubble_fraction("total"),
        "bubble_formula": bubble_fraction(p, m, inputs["schedule"], v, "total", costs),
        "peak_in_flight_stage0": float(t.peak_in_flight()[0]),
        "utilisation_correct": predictions.get("utilisation") == utilisation_answer(),
        "microbatches_correct": predictions.get("microbatches") == microbatch_answer(),
    }


OUTCOMES[("07_pipeline_visualizer", "pipeline")] = pipeline_outcomes


# ---- Lab 06, ZeRO sweep ----------------------------------------------------------------------
FIT_MODEL, FIT_GPU, FIT_STAGE = "llama2-70b", "h100-sxm", 3
FIT_ACTIVATIONS = Activations(micro_batch=1, seq_len=4096, recompute="full", flash_attention=True)
FIT_OPTIONS = (
    Option("A", "8 or fewer: one server is enough"),
    Option("B", "9 to 24"),
    Option("C", "25 to 64"),
    Option("D", "No number of H100s: it never fits"),
)
FIT_RANGES = {"A": (1, 8), "B": (9, 24), "C": (25, 64)}


def fit_fewest() -> int | None:
    return fewest_gpus(FIT_MODEL, FIT_GPU, FIT_STAGE, FIT_ACTIVATIONS)


def fit_answer(fewest: int | None = None) -> str | None:
    """The option whose range holds the engine's fewest H100s (D when none fits)."""
    n = fit_fewest() if fewest is None else fewest
    if n is None:
        return "D"
    return next((k for k, (lo, hi) in FIT_RANGES.items() if lo <= n <= hi), None)


ZERO2_OPTIONS = (
    Option("A", "Nothing at one micro-batch per step; with gradient accumulation, one more gradient reduce-scatter for every extra micro-batch"),
    Option("B", "Twice ZeRO-1's bytes: the gradients are reduce-scattered and then gathered back"),
    Option("C", "About 1.5x, the same premium as ZeRO-3"),
    Option("D", "Less than ZeRO-1: each GPU sends only its 1/N shard of the gradients"),
)
ZERO2_ACCUMULATION = 4  # micro-batches per step in the accumulation case


def zero2_facts() -> dict:
    return {"one": traffic_ratio(2, 1, 1), "accumulated": traffic_ratio(2, 1, ZERO2_ACCUMULATION)}


ZERO2_CLAIMS: dict[str, Callable[[dict], bool]] = {
    "A": lambda f: abs(f["one"] - 1) < 0.01 and f["accumulated"] > 1.5,
    "B": lambda f: abs(f["one"] - 2) < 0.1,
    "C": lambda f: abs(f["one"] - 1.5) < 0.1,
    "D": lambda f: f["one"] < 0.99,
}


def zero2_answer() -> str | None:
    facts = zero2_facts()
    return next((k for k, claim in ZERO2_CLAIMS.items() if claim(facts)), None)


SWEEP_FIELDS = ("model", "gpu", "optimizer_state", "micro_batch", "seq_len", "recompute", "flash_attention", "offload", "dp", "zero_stage", "microbatches")


def zero_sweep_outcomes(inputs: dict, predictions: dict) -> dict:
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
        "fit_correct": predictions.get("fit") == fit_answer(),
        "zero2_correct": predictions.get("zero2") == zero2_answer(),
    }


OUTCOMES[("06_zero_sweep", "sweep")] = zero_sweep_outcomes
