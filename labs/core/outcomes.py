"""What each lab step's outcome is, computed from the step's recorded inputs.

The labs call these to show and save outcomes; `python -m labs.grade` calls the same functions
to recompute them, so a stored outcome or "correct" flag is never trusted. Each prediction
option carries a claim that the engine checks: the right option is the one whose claim holds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
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
INTERLEAVE_CHUNKS = (1, 2, 4)  # v for "deep pipelines run interleaved"
TABLE5_PROFILE = "zb_t5_profiled_1.5B"  # tests/data/zero_bubble.json
TABLE5_SCHEDULES = (("1f1b", "1F1B"), ("zb-h1", "ZB-H1"), ("zb-h2", "ZB-H2"))
_DATA = Path(__file__).resolve().parents[2] / "tests" / "data"


def seed_utilisation() -> float:
    """Utilisation of the seed's pipeline, counted on its generated 1F1B timeline."""
    from labs.core.pipeline import timeline

    return 1 - timeline(SEED_P, SEED_M, "1f1b").bubble_fraction("total")


def utilisation_answer() -> str:
    measured = seed_utilisation()
    return min(UTILISATION_VALUES, key=lambda k: abs(UTILISATION_VALUES[k] - measured))


def under_target(bubble: float, target: float = BUBBLE_TARGET) -> bool:
    """"Under 5%" means strictly below: a bubble of exactly 5.0% is not under."""
    return bubble < target


def share_against(x: float, target: float = BUBBLE_TARGET) -> str:
    """x as a percentage with as many decimals as it takes to show which side of `target` it is
    on (4.95%, not a 5.0% that is under 5%); exactly the target prints as the target."""
    for digits in range(1, 7):
        shown = round(100 * x, digits)
        if x == target or (shown < round(100 * target, digits)) == under_target(x, target) and shown != round(100 * target, digits):
            return f"{100 * x:.{digits}f}%"
    return f"{100 * x:.6f}%"


def microbatch_bubbles(p: int = DEEP_P, options=MICROBATCH_OPTIONS) -> dict[str, float]:
    """Each option's 1F1B bubble, of the wall time, at p stages."""
    from labs.core.pipeline import bubble_fraction

    return {o.key: bubble_fraction(p, int(o.label), "1f1b", 1, "total") for o in options}


def microbatch_answer(p: int = DEEP_P, target: float = BUBBLE_TARGET, options=MICROBATCH_OPTIONS) -> str | None:
    """The fewest micro-batches among the options that keep a p-stage 1F1B bubble strictly under
    `target` of the wall time (None if none does)."""
    bubbles = microbatch_bubbles(p, options)
    ok = [o for o in options if under_target(bubbles[o.key], target)]
    return min(ok, key=lambda o: int(o.label)).key if ok else None


def microbatch_explanations(p: int = DEEP_P, target: float = BUBBLE_TARGET, options=MICROBATCH_OPTIONS) -> dict[str, str]:
    """The reveal's line for each option: its bubble, printed so that its side of the target shows."""
    bubbles, answer = microbatch_bubbles(p, options), microbatch_answer(p, target, options)
    lines = {}
    for o in options:
        b = bubbles[o.key]
        if o.key == answer:
            verdict = f"under {target:.0%}, the fewest of the options that are."
        elif under_target(b, target):
            verdict = f"under {target:.0%}, but more micro-batches than needed (a bigger global batch, or smaller micro-batches)."
        else:
            verdict = f"not under {target:.0%}."
        lines[o.key] = f"m = {o.label}: bubble {share_against(b, target)} of the wall time, {verdict}"
    return lines


def fewest_microbatches(p: int, v: int = 1, target: float = BUBBLE_TARGET, multiple_of_p: bool = False, limit: int = 1 << 20) -> int:
    """The fewest micro-batches whose closed-form bubble (of the wall time) is strictly under
    `target`: 1F1B for v = 1, interleaved with v chunks otherwise; multiple_of_p: only m the
    interleaved schedule runs (a multiple of p)."""
    from labs.core.pipeline import bubble_fraction

    schedule = "interleaved" if v > 1 else "1f1b"
    step = p if multiple_of_p or (v > 1 and p > 1) else 1
    m = step
    while m <= limit:
        if under_target(bubble_fraction(p, m, schedule, v, "total"), target):
            return m
        m += step
    raise ValueError(f"no m up to {limit} brings p={p}, v={v} under {target:.0%}")


def interleaving_rows(p: int = DEEP_P, target: float = BUBBLE_TARGET, chunks=INTERLEAVE_CHUNKS) -> list[dict]:
    """Deep pipelines run interleaved: per v, the fewest micro-batches under the target (by the
    closed form, then the fewest the schedule runs), the bubble counted on that timeline, and
    the stage-0 activations held (in micro-batches' worth of its layers, labs.core.memory)."""
    from labs.core.pipeline import timeline

    rows = []
    for v in chunks:
        schedule = "interleaved" if v > 1 else "1f1b"
        formula_m = fewest_microbatches(p, v, target, multiple_of_p=False) if v == 1 else _fewest_any_m(p, v, target)
        runs_m = fewest_microbatches(p, v, target, multiple_of_p=v > 1)
        t = timeline(p, runs_m, schedule, v)
        rows.append({
            "v": v, "schedule": schedule, "fewest_m_formula": formula_m, "fewest_m_runs": runs_m,
            "bubble_counted": t.bubble_fraction("total"), "held_stage0": stage0_in_flight(schedule, p, runs_m, v),
            "p2p_messages": 2 * v * runs_m,  # per stage boundary and step: one activation and one gradient per chunk pass
        })
    return rows


def _fewest_any_m(p: int, v: int, target: float) -> int:
    """The fewest m, any integer, under the interleaved closed form (p - 1)/v of idle stage-steps."""
    from labs.core.pipeline import OpCosts, idle_time

    c = OpCosts()
    idle = float(idle_time(p, 1, 2, v, c.tf, c.tb, c.tw))  # schedule code 2: interleaved
    m = 1
    while not under_target(idle / (m * (c.tf + c.tb + c.tw) + idle), target):
        m += 1
    return m


def stage0_in_flight(schedule: str, p: int, m: int, v: int = 1, group: int | None = None) -> float:
    """Micro-batches' worth of its layers stage 0 holds at its peak, from the engine's per-rank
    model (labs.core.memory.in_flight_columns): interleaved warm-up (p - 1) x 2 + (v - 1) x N
    chunks with N the micro-batch group size, p by default as in the timelines played here."""
    from labs.core.memory import in_flight_columns
    from labs.core.pipeline import SCHEDULES

    return float(in_flight_columns(SCHEDULES.index(schedule), p, m, v, 0, p if group is None else group))


def closed_form_holds(p: int, m: int, schedule: str, costs) -> bool:
    """Where the closed-form bubble is what the timeline counts (no messages): always for GPipe,
    1F1B and interleaved; ZB-H1 (of the makespan) needs m >= p and T_W <= min(T_F, T_B), ZB-H2 (in
    stage windows) m >= 2p and the same, or p = 1. Outside, W cannot fill what the formula
    assumes (its max(0, ...) would read zero where the timeline idles)."""
    if schedule not in ("zb-h1", "zb-h2") or p == 1:
        return True
    return m >= (p if schedule == "zb-h1" else 2 * p) and costs.tw <= min(costs.tf, costs.tb)


def run_report(t) -> dict:
    """What the lab shows for one generated timeline: the bubble counted on it (of the step, of
    the busy time, and in stage windows as Qi et al. count it), the closed form where it holds
    (else None), and stage 0's peak in flight from the engine's memory model."""
    from labs.core.pipeline import bubble_fraction

    holds = closed_form_holds(t.p, t.m, t.schedule, t.costs)
    return {
        "counted_total": t.bubble_fraction("total"),
        "counted_ideal": t.bubble_fraction("ideal"),
        "counted_stage": t.bubble_fraction("total", window="stage"),
        "formula_total": bubble_fraction(t.p, t.m, t.schedule, t.v, "total", t.costs) if holds else None,
        "formula_ideal": bubble_fraction(t.p, t.m, t.schedule, t.v, "ideal", t.costs) if holds else None,
        "utilisation": 1 - t.bubble_fraction("total"),
        "held_stage0": stage0_in_flight(t.schedule, t.p, t.m, t.v),
    }


ACTIVATION_PLAN = "C"  # Act II's design C: TP 8, sequence parallel, selective recompute, micro-batch 1
COSTS_M_PER_STAGE = 4  # the schedule-cost table runs m = 4p micro-batches
COSTS_SCHEDULES = (("GPipe", "gpipe", 1), ("1F1B", "1f1b", 1), ("interleaved, v=2", "interleaved", 2), ("ZB-H1", "zb-h1", 1), ("ZB-H2", "zb-h2", 1))


def stage_activation_bytes(p: int, held: float) -> float:
    """Activation bytes stage 0 holds for GPT-3 175B layers, L/p of them, `held` micro-batches'
    worth, laid out as Act II's design C (TP, sequence parallelism, selective recompute, its
    micro-batch)."""
    from labs.core.memory import activation_bytes_per_layer

    model, _ = design_inputs()
    plan = ACT2_DESIGNS[ACTIVATION_PLAN]
    per_layer = activation_bytes_per_layer(model.seq_len, plan.micro_batch, model.hidden, model.heads, plan.tp, plan.sequence_parallel, plan.recompute)
    return per_layer * model.layers / p * held


def activation_setting() -> str:
    """The activation setting of stage_activation_bytes, in words."""
    plan = ACT2_DESIGNS[ACTIVATION_PLAN]
    return f"TP {plan.tp}, {'sequence parallel, ' if plan.sequence_parallel else ''}{plan.recompute} recompute, micro-batch {plan.micro_batch}"


def schedule_cost_rows(p: int) -> list[dict]:
    """What each schedule pays for its bubble at p stages and m = COSTS_M_PER_STAGE x p, with
    T_F = T_B = T_W: the closed-form bubble (which holds there: m >= 2p, equal costs; ZB-H2's
    in each stage's window, its ramp outside) and stage 0's activations (engine memory model)."""
    from labs.core.pipeline import bubble_fraction

    m = COSTS_M_PER_STAGE * p
    rows = []
    for label, schedule, v in COSTS_SCHEDULES:
        held = stage0_in_flight(schedule, p, m, v)
        rows.append({"label": label, "schedule": schedule, "p": p, "m": m, "v": v, "held_stage0": held,
                     "activation_bytes": stage_activation_bytes(p, held), "bubble": bubble_fraction(p, m, schedule, v, "total")})
    return rows


def table5_profile() -> dict:
    """Qi et al. 2024 Table 5's profiled inputs (1.5B model, p = 8) with the published bubble
    rates: tests/data/zero_bubble.json and published_numbers.json."""
    from labs.core.calibration import load_rows

    prof = next(r for r in json.loads((_DATA / "zero_bubble.json").read_text()) if r["id"] == TABLE5_PROFILE)
    published = {r["id"]: r for r in load_rows()}
    return {"inputs": prof["inputs"], "source": prof["source"],
            "rows": [{**r, "published": published[r["published_id"]]["outputs"]} for r in prof["rows"]]}


def table5_rows() -> list[dict]:
    """Per profiled row and schedule: the closed form (no messages), the timeline counted in
    stage windows with the profiled T_F, T_B, T_W, T_comm (Table 5's definition), and the paper's
    rate; for ZB-H2 also its idle per stage in ms."""
    from labs.core.pipeline import OpCosts, bubble_fraction, timeline

    prof = table5_profile()
    p = prof["inputs"]["pp"]
    out = []
    for r in prof["rows"]:
        m = r["microbatches"]
        costs = OpCosts(r["TF_ms"], r["TB_ms"], r["TW_ms"], r["Tcomm_ms"])
        bare = OpCosts(r["TF_ms"], r["TB_ms"], r["TW_ms"])
        for schedule, key in TABLE5_SCHEDULES:
            t = timeline(p, m, schedule, costs=costs)
            out.append({
                "schedule": key, "p": p, "m": m, "tf_ms": r["TF_ms"], "tb_ms": r["TB_ms"], "tw_ms": r["TW_ms"], "comm_ms": r["Tcomm_ms"],
                "formula": bubble_fraction(p, m, schedule, 1, "total", bare),
                "counted": t.bubble_fraction("total", window="stage"),
                "paper": r["published"][key],
                "idle_per_stage_ms": float(t.stage_windows().max() - m * (r["TF_ms"] + r["TB_ms"] + r["TW_ms"])),
            })
    return out


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
