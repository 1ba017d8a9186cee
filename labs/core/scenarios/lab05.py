"""Lab 05, the flagship: its stakeholder settings, its prediction options and the outcome
functions the lab shows and `python -m labs.grade` recomputes.

The labs' scenarios: stated settings, in one place, so a lab, its tests and the grader agree.

Act I of the flagship lab: a 7B model (Llama 2 7B's architecture at 2,048 tokens) trained with
data parallelism on DGX H100 nodes (NDR 400 Gb/s, one NIC per GPU, rail-optimised), ZeRO-1
(plain DP needs 16 bytes x 6.7B = 108 GB per GPU), flash attention, micro-batch 1, a global
batch of 512 sequences (1M tokens), and the stakeholder's framework as it stands: fp32 gradients
(Megatron's bf16 default) reduced by a ring after the backward pass, not overlapped with it.
Act II: GPT-3 175B on 128 DGX H100 nodes, global batch 1,536 (Brown et al. 2020); from the third
edition of the variants, a model drawn per student (DESIGN_MODELS) on the same nodes; from the
sixth, 1,024 GPUs of a drawn generation (DESIGN_PLATFORMS: DGX H100, DGX B200, GB200 NVL72), and
in Act I a third cause, the latency of small gradient buckets.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache, partial
from typing import Callable

import numpy as np

from labs.core.engine.hardware import Cluster
from labs.core.engine.models import Model
from labs.core.engine.perf import Estimate, Plan, estimate
from labs.core.scenarios.common import Option
from labs.core.engine.search import sweep, sweep_numbers
from labs.core.engine.topology import bus_bandwidth
from labs.core.engine.validation import check_positive
from labs.core.variants import Choice, LabVariants, judged

DP_WALL_GPUS = (8, 64, 512)
GPU_STEPS_DEFAULT = (8, 16, 32, 64, 128, 256, 512, 1024)
DP_WALL_GLOBAL_BATCH = 512
DP_WALL_SEQ_LEN = 2048


def dp_wall_model(params_b: int = 7) -> Model:
    base = {7: "llama2-7b", 13: "llama2-13b", 70: "llama2-70b"}.get(params_b)
    if base is None:
        raise ValueError(f"params_b must be one of 7, 13, 70; got {params_b!r}")
    return Model.get(base, seq_len=DP_WALL_SEQ_LEN)


@lru_cache(maxsize=512)  # pure in its arguments: a class's ledgers (and a lab's re-runs) repeat them
def dp_wall_estimate(
    gpus: int,
    global_batch: int = DP_WALL_GLOBAL_BATCH,
    fixed_per_gpu: bool = False,
    fabric: str = "ib-ndr",
    algorithm: str = "ring",
    overlap: bool = False,
    params_b: int = 7,
    grad_reduce_dtype: str = "fp32",
    bucket_params: int | None = None,
) -> Estimate:
    """One point of Act I: data parallelism over `gpus` H100s. With fixed_per_gpu the global
    batch grows with the GPUs (global_batch is then what 8 GPUs would use). bucket_params: the
    gradient bucket in parameters (Megatron's --ddp-bucket-size); None is Megatron's default,
    max(40M, 1M x DP)."""
    if gpus % 8:
        raise ValueError(f"gpus must be a multiple of 8 (whole DGX nodes), got {gpus}")
    if bucket_params is not None:
        check_positive("bucket_params", bucket_params, integer=True, maximum=1e12)
    batch = global_batch * gpus // 8 if fixed_per_gpu else global_batch
    cluster = Cluster.get("dgx-h100", nodes=gpus // 8).with_fabric(fabric)
    bucket = None if bucket_params is None else bucket_params * (4 if grad_reduce_dtype == "fp32" else 2)
    plan = Plan(dp=gpus, micro_batch=1, global_batch=batch, zero_stage=1, flash_attention=True, dp_algorithm=algorithm,
                dp_overlap=overlap, grad_reduce_dtype=grad_reduce_dtype, bucket_bytes=bucket)
    return estimate(dp_wall_model(params_b), cluster, plan)


def dp_comm_bound_tokens(grad_reduce_dtype: str = "bf16", gpus: int = DP_WALL_GPUS[-1]) -> float:
    """Tokens per GPU below which Act I's data parallelism spends longer on its (unoverlapped)
    gradient reduction than on compute: compute scales with the tokens, the ring does not."""
    est = dp_wall_estimate(gpus, grad_reduce_dtype=grad_reduce_dtype)
    tokens = est.plan.global_batch * est.model.seq_len / gpus
    return tokens * est.time.dp_comm / est.time.compute


def tp8_dp_ring(gpus: int = DP_WALL_GPUS[-1]) -> tuple[float, float]:
    """(bus bandwidth of a DP ring over whole nodes, of one behind TP = 8) on Act I's cluster,
    bytes/s: the second group has one GPU per node, so it crosses nodes on one NIC."""
    from labs.core.engine.topology import bus_bandwidth

    cluster = Cluster.get("dgx-h100", nodes=gpus // 8)
    return bus_bandwidth("all_reduce", 4e9, cluster, gpus, 1, "ring"), bus_bandwidth("all_reduce", 4e9, cluster, gpus // 8, 8, "ring")


def tp8_dp_times(gpus: int = DP_WALL_GPUS[-1], model_key: str | None = None) -> dict:
    """Review 38bda0b, M1: the same gradients reduced by a DP ring over whole nodes (no TP), and
    behind TP = 8, where each of a node's eight DP groups reduces its 1/8 of them on its own NIC,
    all eight at once: bus bandwidth of one group, and seconds per all-reduce (the engine's
    collective: latency + bandwidth), for the bf16 gradients of Act I's model (or `model_key`)."""
    from labs.core.engine.memory import GRAD_BYTES
    from labs.core.engine.models import Model
    from labs.core.engine.topology import collective_columns

    cluster = Cluster.get("dgx-h100", nodes=gpus // 8)
    model = Model.get(model_key) if model_key else dp_wall_estimate(gpus).model
    grads = model.params * GRAD_BYTES
    whole_bw, behind_bw = tp8_dp_ring(gpus)
    whole = sum(collective_columns("all_reduce", grads, cluster, gpus, 1))
    behind = sum(collective_columns("all_reduce", grads / 8, cluster, gpus // 8, 8))
    return {"model": model.name, "grad_bytes": grads, "whole_busbw": whole_bw, "behind_busbw": behind_bw,
            "whole_s": float(whole), "behind_s": float(behind), "gpus": gpus}


def dp_wall_curve(inputs: dict) -> list[Estimate]:
    """Act I at every GPU count of the lab's slider where the batch splits into whole
    sequences; `inputs` holds dp_wall_estimate's arguments (its "gpus" is ignored)."""
    settings = {k: v for k, v in inputs.items() if k != "gpus"}
    return [dp_wall_estimate(n, **settings) for n in GPU_STEPS_DEFAULT if settings.get("fixed_per_gpu") or n <= settings.get("global_batch", DP_WALL_GLOBAL_BATCH)]


DESIGN_MODEL = "gpt3-175b"
DESIGN_CLUSTER = "dgx-h100"
DESIGN_NODES = 128
DESIGN_GLOBAL_BATCH = 1536
# Act II's 1,024 GPUs by generation (the sixth edition draws one): a CLUSTERS preset, GPUs per host,
# and overrides. An NVL72 rack's 72 GPUs do not tile power-of-two layouts, so the racks run 64 GPUs
# each, 16 of their 18 trays (labs.core.engine.topology's note): 16 racks.
DESIGN_PLATFORMS = {
    "dgx-h100": {"gpus_per_node": 8, "overrides": {}},
    "dgx-b200": {"gpus_per_node": 8, "overrides": {}},
    "gb200-nvl72": {"gpus_per_node": 4, "overrides": {"gpus_per_domain": 64}},
}


def design_inputs(model_key: str = DESIGN_MODEL, platform: str = DESIGN_CLUSTER) -> tuple[Model, Cluster]:
    """Act II's model (GPT-3 175B, or the variant's: `design_model_of`) and its 1,024 GPUs: 128 DGX
    H100 nodes, or from the sixth edition the variant's platform (DESIGN_PLATFORMS)."""
    if not isinstance(platform, str) or platform not in DESIGN_PLATFORMS:
        raise ValueError(f"design_platform must be one of {', '.join(DESIGN_PLATFORMS)}; got {platform!r}")
    return Model.get(model_key), Cluster.get(platform, nodes=DESIGN_NODES * 8 // DESIGN_PLATFORMS[platform]["gpus_per_node"],
                                             **DESIGN_PLATFORMS[platform]["overrides"])


# ---- Flagship lab, Act I: why does MFU fall? ---------------------------------------------
def act1_options(facts: dict) -> tuple[Option, ...]:
    """Act I's options, their numbers from the engine (`act1_facts`)."""
    return (
        Option("A", "The bytes each GPU all-reduces grow with the number of GPUs, swamping compute", "ring bytes grow with N"),
        Option("B", "Each GPU's compute shrinks with its share of the batch; the bytes it reduces do not", "per-GPU traffic is a fixed overhead"),
        Option("C", "Per-message latency (NCCL software overhead) dominates the all-reduce at scale", "latency, not bandwidth, dominates"),
        Option("D", f"Past one node the ring runs at one NIC per GPU, {facts['one_nic_gbs']:.0f} GB/s, not NVLink's {facts['nvlink_gbs']:.0f}",
               "the NIC, not the shrinking compute, is the wall"),
    )


def act1_facts(inputs: dict | None = None, params_b: int = 7) -> dict:
    """The numbers that decide Act I's options, for the stakeholder's scenario (its model size)."""
    small, large = (dp_wall_estimate(n, params_b=params_b) for n in (DP_WALL_GPUS[0], DP_WALL_GPUS[-1]))
    return {
        "bytes_ratio": large.comm_bytes_per_gpu["dp"] / small.comm_bytes_per_gpu["dp"],
        "compute_ratio": large.time.compute / small.time.compute,
        "latency_share": large.dp_exposed_latency_s / large.time.dp_comm if large.time.dp_comm else 0.0,
        "exposed_over_compute": large.time.dp_comm / large.time.compute,
        "nvlink_gbs": bus_bandwidth("all_reduce", 4e9, small.cluster, DP_WALL_GPUS[0], 1, "ring") / 1e9,
        "across_nodes_gbs": bus_bandwidth("all_reduce", 4e9, large.cluster, DP_WALL_GPUS[-1], 1, "ring") / 1e9,
        "one_nic_gbs": large.cluster.inter.effective_bytes_per_s / 1e9,
        "exposed_growth": large.time.dp_comm / max(small.time.dp_comm, 1e-12),
        "mfu": [dp_wall_estimate(n, params_b=params_b).mfu for n in DP_WALL_GPUS],
    }


ACT1_CLAIMS: dict[str, Callable[[dict], bool]] = {
    "A": lambda f: f["bytes_ratio"] > 1.5,
    "B": lambda f: f["bytes_ratio"] < 1.5 and f["compute_ratio"] < 0.1 and f["exposed_over_compute"] > 0.5,
    "C": lambda f: f["latency_share"] > 0.5,
    "D": lambda f: f["across_nodes_gbs"] < f["nvlink_gbs"] / 2,
}


@lru_cache(maxsize=4)  # a constant of the engine per model size: every Act I outcome (and the grader) asks for it
def act1_correct_option(params_b: int = 7) -> str | None:
    """The option whose claim the engine's numbers bear out."""
    facts = act1_facts(params_b=params_b)
    return next((k for k, claim in ACT1_CLAIMS.items() if claim(facts)), None)


def act1_outcomes(inputs: dict, predictions: dict, variant=None) -> dict:
    est = dp_wall_estimate(
        int(inputs["gpus"]), int(inputs["global_batch"]), bool(inputs["fixed_per_gpu"]),
        inputs["fabric"], inputs["algorithm"], bool(inputs["overlap"]), int(inputs.get("params_b", 7)),
        # A ledger without the field predates the dtype menu (add9f00), when Act I reduced bf16
        # gradients: it regrades as it was recorded. The lab itself records fp32, Megatron's default.
        inputs.get("grad_reduce_dtype", "bf16"), inputs.get("bucket_params"),
    )
    correct = act1_correct_option()
    return {
        "fits": est.fits,
        "mfu": est.mfu if est.fits else None,
        "step_time_s": est.step_time_s,
        "dp_comm_exposed_s": est.time.dp_comm,
        "correct_option": correct if variant is None else variant.questions["cause"].key,
        "prediction_correct": judged(variant, "cause", predictions, lambda a: correct is not None and a == correct),
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
# The layouts alone, no reasons: the reasons are what the student brings.
ACT2_LABELS = {k: f"TP={p.tp} x PP={p.pp} x DP={p.dp}, micro-batch {p.micro_batch}" for k, p in ACT2_DESIGNS.items()}
ACT2_MISCONCEPTIONS = {  # what each design stands for when the engine judges it wrong
    "A": "tensor parallelism across nodes is fine",
    "B": "pipeline parallelism alone is enough",
    "C": "TP inside a node and PP across is always best",
    "D": "a deeper pipeline is always better",
}
ACT2_OPTIONS = tuple(Option(k, v, ACT2_MISCONCEPTIONS[k]) for k, v in ACT2_LABELS.items())


def act2_option_estimates(global_batch: int = DESIGN_GLOBAL_BATCH) -> dict:
    model, cluster = design_inputs()
    return {key: estimate(model, cluster, replace(plan, global_batch=global_batch)) for key, plan in ACT2_DESIGNS.items()}


def act2_best_option(ests: dict | None = None) -> str:
    """The design whose plan fits and reaches the highest MFU (from `ests` when given)."""
    if not ests:
        return _act2_best_default()
    return max((k for k, e in ests.items() if e.fits), key=lambda k: ests[k].mfu)


@lru_cache(maxsize=1)  # a constant of the engine: every Act II outcome (and the grader) asks for it
def _act2_best_default() -> str:
    return act2_best_option(act2_option_estimates())


@lru_cache(maxsize=512)  # pure in its arguments: a class's ledgers (and a lab's re-runs) repeat them
def design_estimate(plan: Plan, model_key: str = DESIGN_MODEL, platform: str = DESIGN_CLUSTER) -> Estimate:
    """Act II's estimate of one plan for its model on the design cluster (the variant's platform)."""
    model, cluster = design_inputs(model_key, platform)
    return estimate(model, cluster, plan)


def plan_from_inputs(inputs: dict) -> Plan:
    """Act II's plan from its recorded inputs; fields not recorded take the era's defaults."""
    try:
        key = tuple(sorted((name, type(value), value) for name, value in inputs.items()))  # the type too: 8 and 8.0 are one key to a dict
        hash(key)
    except TypeError:  # a value no key can hold (a list): Plan says what is wrong with it
        return Plan.for_era(DESIGN_ERA, **inputs)
    return _plan_of(key)


@lru_cache(maxsize=256)  # a class's Act II inputs repeat (the grader asks once a student): each Plan checked and built once
def _plan_of(key: tuple) -> Plan:
    return Plan.for_era(DESIGN_ERA, **{name: value for name, _, value in key})


def act2_outcomes(inputs: dict, predictions: dict, variant=None) -> dict:
    """Act II's design judged for the variant's model (GPT-3 175B before the third edition)."""
    settings = variant.settings if variant is not None else {}
    est = design_estimate(plan_from_inputs(inputs), design_model_of(settings), design_platform_of(settings))
    best = act2_best_option()
    return {
        "fits": est.fits,
        "mfu": est.mfu,
        "bubble_fraction": est.bubble_fraction,
        "memory_gb": est.memory.total / 1e9,
        "step_time_s": est.step_time_s,
        "correct_option": best if variant is None else variant.questions["design"].key,
        "prediction_correct": judged(variant, "design", predictions, lambda a: a == best),
    }


def best_design(global_batch: int = DESIGN_GLOBAL_BATCH, model_key: str = DESIGN_MODEL, platform: str = DESIGN_CLUSTER,
                headroom: float | None = None, **fixed):
    """The sweep's fastest layout over the era's settings (that fits in `headroom` of the memory)."""
    model, cluster = design_inputs(model_key, platform)
    table = sweep(model, cluster, global_batch=global_batch, era=DESIGN_ERA, **fixed)
    if headroom is not None:
        table = table[table["fits"] & (table["memory_bytes"] <= headroom * cluster.gpu.hbm_bytes)]
    return table.iloc[0]


OUTCOMES: dict[tuple[str, str], Callable[[dict, dict], dict]] = {
    ("05_parallelism", "act1"): act1_outcomes,
    ("05_parallelism", "act2"): act2_outcomes,
}

# The lab before per-student variants (older ledgers are graded against it; the dashboard counts
# over it): Act I at the stakeholder's 7B.
ACT1_OPTIONS = act1_options(act1_facts())


# ---- per-student variants (labs.variants) ------------------------------------------------------
# Act I's model (the batch stays 512 sequences: at 1,024 the reduction is only half the compute
# at 512 GPUs, too near the claim's line); Act II's global batch (the TP 8 x PP 8 layout leads the
# next by 0.13 MFU or more at each).
VARIANT_PARAMS_B = (7, 13)
VARIANT_DESIGN_BATCH = (1024, 1536, 2048)


def draw_settings_v1(d) -> dict:
    return {"params_b": d.choice("params_b", VARIANT_PARAMS_B), "design_batch": d.choice("design_batch", VARIANT_DESIGN_BATCH)}


def design_question(s: dict) -> Choice:
    batch = int(s["design_batch"])
    return Choice(f"Global batch {batch} sequences: which layout trains fastest while fitting in memory?", ACT2_OPTIONS,
                  act2_best_option(act2_option_estimates(batch)))


def build_questions_v1(s: dict) -> dict:
    params_b = int(s["params_b"])
    facts = act1_facts(params_b=params_b)
    return {
        "cause": Choice(f"Why does MFU fall from {DP_WALL_GPUS[0]} to {DP_WALL_GPUS[-1]} GPUs?", act1_options(facts), act1_correct_option(params_b)),
        "design": design_question(s),
    }


# ---- variants, second edition: Act I's wall is the shrinking compute for some, the network for others ----
# The first edition always scaled a fixed batch over InfiniBand NDR, so the cause was the same
# option for every student. Now half the stakeholders scale strongly (512 sequences however many
# GPUs, on NDR): each GPU's compute shrinks 64x while its bytes do not (B). The other half scale
# weakly on InfiniBand HDR 200 Gb/s (one or two sequences per GPU): compute and bytes per GPU stay
# put, and the ring leaves NVLink for a network with under half its bus bandwidth (D). Both run the
# 7B: the 13B's fp32 gradients and weights do not fit on eight GPUs under ZeRO-1, so its story
# could not quote an MFU there (the first edition's 13B did).
ACT1_REGIMES = ("strong", "weak")
ACT1_STRONG_FABRIC, ACT1_WEAK_FABRIC = "ib-ndr", "ib-hdr"
VARIANT_WEAK_PER_GPU = (1, 2)  # sequences per GPU per step in weak scaling
ACT1_PARAMS_B = 7
ACT1_SMALL_BUCKET_PARAMS = 10_000_000  # the sixth edition's stakeholder sets Megatron's --ddp-bucket-size to 10M parameters


def act1_story(settings: dict) -> dict:
    """dp_wall_estimate's arguments (but gpus) for the stakeholder's runs of a variant (a first-edition
    variant has no regime: the strong one)."""
    scaling = settings.get("act1_scaling", "strong")
    if scaling in ("weak", "buckets"):  # "buckets" (sixth edition): weak scaling on NDR with small fixed buckets
        return {"global_batch": DP_WALL_GPUS[0] * int(settings["per_gpu_batch"]), "fixed_per_gpu": True,
                "fabric": ACT1_WEAK_FABRIC if scaling == "weak" else ACT1_STRONG_FABRIC, "params_b": int(settings["params_b"]),
                "bucket_params": ACT1_SMALL_BUCKET_PARAMS if scaling == "buckets" else None}
    return {"global_batch": DP_WALL_GLOBAL_BATCH, "fixed_per_gpu": False, "fabric": ACT1_STRONG_FABRIC, "params_b": int(settings["params_b"]),
            "bucket_params": None}


@lru_cache(maxsize=16)
def act1_facts_at(params_b: int, global_batch: int, fixed_per_gpu: bool, fabric: str, bucket_params: int | None = None) -> dict:
    """act1_facts for a stakeholder's runs: their model, batch, scaling mode, fabric and gradient bucket."""
    small, large = (dp_wall_estimate(n, global_batch, fixed_per_gpu, fabric, params_b=params_b, bucket_params=bucket_params)
                    for n in (DP_WALL_GPUS[0], DP_WALL_GPUS[-1]))
    return {
        "latency_share_small": small.dp_exposed_latency_s / small.time.dp_comm if small.time.dp_comm else 0.0,
        "latency_growth_s": large.dp_exposed_latency_s - small.dp_exposed_latency_s,
        "bandwidth_growth_s": large.dp_exposed_bandwidth_s - small.dp_exposed_bandwidth_s,
        "bucket_params": bucket_params,
        "bytes_ratio": large.comm_bytes_per_gpu["dp"] / small.comm_bytes_per_gpu["dp"],
        "compute_ratio": large.time.compute / small.time.compute,
        "latency_share": large.dp_exposed_latency_s / large.time.dp_comm if large.time.dp_comm else 0.0,
        "exposed_over_compute": large.time.dp_comm / large.time.compute,
        "exposed_over_compute_small": small.time.dp_comm / small.time.compute,
        "nvlink_gbs": bus_bandwidth("all_reduce", 4e9, small.cluster, DP_WALL_GPUS[0], 1, "ring") / 1e9,
        "across_nodes_gbs": bus_bandwidth("all_reduce", 4e9, large.cluster, DP_WALL_GPUS[-1], 1, "ring") / 1e9,
        "one_nic_gbs": large.cluster.inter.effective_bytes_per_s / 1e9,
        "fabric": large.cluster.inter.name,
        "exposed_growth": large.time.dp_comm / max(small.time.dp_comm, 1e-12),
        "mfu": [dp_wall_estimate(n, global_batch, fixed_per_gpu, fabric, params_b=params_b, bucket_params=bucket_params).mfu for n in DP_WALL_GPUS],
        "fits": all(dp_wall_estimate(n, global_batch, fixed_per_gpu, fabric, params_b=params_b, bucket_params=bucket_params).fits for n in DP_WALL_GPUS),
    }


def act1_story_facts(settings: dict) -> dict:
    story = act1_story(settings)
    return act1_facts_at(story["params_b"], story["global_batch"], story["fixed_per_gpu"], story["fabric"], story["bucket_params"])


def act1_options_v2(facts: dict) -> tuple[Option, ...]:
    """Act I's options, the network's numbers from the engine at the variant."""
    return (
        *act1_options(facts)[:3],
        Option("D", f"Past one node the ring crosses the NICs: {facts['across_nodes_gbs']:.0f} GB/s of bus bandwidth, not NVLink's {facts['nvlink_gbs']:.0f}",
               "the network, not the shrinking compute, is the wall"),
    )


ACT1_CLAIMS_V2: dict[str, Callable[[dict], bool]] = {
    **{k: ACT1_CLAIMS[k] for k in "ABC"},
    "D": lambda f: f["across_nodes_gbs"] < f["nvlink_gbs"] / 2 and f["compute_ratio"] > 0.5,  # the network, and nothing shrank
}


def act1_answer_at(settings: dict) -> str | None:
    facts = act1_story_facts(settings)
    held = [k for k, claim in ACT1_CLAIMS_V2.items() if claim(facts)]
    return held[0] if len(held) == 1 else None


def act1_explanations_at(settings: dict) -> dict[str, str]:
    """The reveal's line per option, for the stakeholder's runs of the variant."""
    f, story = act1_story_facts(settings), act1_story(settings)
    lo, hi = DP_WALL_GPUS[0], DP_WALL_GPUS[-1]
    if story["fixed_per_gpu"]:
        b = (f"with the batch growing with the GPUs, each GPU's compute stays put ({f['compute_ratio']:.2f}x from {lo} to {hi} GPUs) and so do "
             f"its bytes ({f['bytes_ratio']:.2f}x): nothing shrank, yet the reduction takes {f['exposed_growth']:.1f}x as long.")
    else:
        b = (f"each GPU's compute falls to {f['compute_ratio']:.1%} of what it was while the bytes it reduces grow only {f['bytes_ratio']:.2f}x: "
             f"at {hi} GPUs the reduction takes {f['exposed_over_compute']:.0%} of the compute time, against {f['exposed_over_compute_small']:.0%} at {lo}.")
    share = f["across_nodes_gbs"] / f["nvlink_gbs"]
    d = (f"NCCL runs one ring per rail, so a ring over whole nodes crosses every node boundary on all eight NICs at once: "
         f"{f['across_nodes_gbs']:.0f} GB/s of bus bandwidth on {f['fabric']} at {hi} GPUs against {f['nvlink_gbs']:.0f} GB/s inside one node "
         f"({share:.0%} of it). ")
    d += (f"With compute and bytes per GPU unchanged, that slower network is the whole of the fall: the reduction takes {f['exposed_growth']:.1f}x as long."
          if story["fixed_per_gpu"] else
          f"That costs the reduction {f['exposed_growth']:.1f}x its one-node time; the compute beside it shrank {1 / f['compute_ratio']:.0f}x.")
    return {
        "A": f"ring traffic per GPU is 2(N-1)/N of the gradients: it grows only {f['bytes_ratio']:.2f}x from {lo} to {hi} GPUs.",
        "B": b,
        "C": f"latency (alpha) terms are {f['latency_share']:.0%} of the reduction at {hi} GPUs with Megatron-sized buckets: real, and growing "
             "with N, but not the main cost. NCCL's tree would not cut them: it runs only all-reduces, and ZeRO-1 reduce-scatters and "
             "all-gathers, which NCCL runs as rings.",
        "D": d,
    }


def act1_story_text(settings: dict) -> str:
    """The stakeholder's message for the variant's runs."""
    story, f = act1_story(settings), act1_story_facts(settings)
    model, mfu = dp_wall_model(story["params_b"]), f["mfu"]
    if story["fixed_per_gpu"]:
        k = story["global_batch"] // DP_WALL_GPUS[0]
        batch = (f"{k} sequence{'s' if k > 1 else ''} of {model.seq_len} tokens per GPU per step (the batch grows with the GPUs), "
                 f"on DGX H100 nodes joined by {f['fabric']}")
        same = "Same model, the same work on every GPU, more GPUs, and each one does less."
    else:
        batch = f"{story['global_batch']} sequences of {model.seq_len} tokens per step, on DGX H100 nodes joined by {f['fabric']}"
        same = "Same model, same batch, more GPUs, and each one does less."
    buckets = (f" with its gradient buckets set to {story['bucket_params'] / 1e6:.0f}M parameters (--ddp-bucket-size {story['bucket_params']})"
               if story.get("bucket_params") else "")
    return (f"We train a {model.params / 1e9:.1f}B-parameter model with data parallelism, {batch}. Our framework is Megatron-Core's "
            f"distributed optimizer (ZeRO-1){buckets}: once the backward pass is done it reduce-scatters the fp32 gradients, and after "
            f"the optimizer step it all-gathers the updated bf16 weights. MFU was **{mfu[0]:.0%} on {DP_WALL_GPUS[0]} GPUs**, "
            f"**{mfu[1]:.0%} on {DP_WALL_GPUS[1]}** and **{mfu[2]:.0%} on {DP_WALL_GPUS[2]}**. {same} Before I buy more nodes: why?")


def draw_act1(d) -> dict:
    """Act I's settings from the second edition on: the stakeholder's scaling regime and batch."""
    regime, per_gpu = d.choice("act1_scaling", ACT1_REGIMES), d.choice("per_gpu_batch", VARIANT_WEAK_PER_GPU)
    return ({"act1_scaling": "weak", "params_b": ACT1_PARAMS_B, "per_gpu_batch": per_gpu} if regime == "weak"
            else {"act1_scaling": "strong", "params_b": ACT1_PARAMS_B})


def draw_settings(d) -> dict:
    return {**draw_act1(d), "design_batch": d.choice("design_batch", VARIANT_DESIGN_BATCH)}


def cause_question(s: dict) -> Choice:
    """Act I's question from the second edition on, for the stakeholder's runs of the variant."""
    story = act1_story(s)
    if story["fixed_per_gpu"]:
        k = story["global_batch"] // DP_WALL_GPUS[0]
        how = f"With {k} sequence{'s' if k > 1 else ''} per GPU (the batch grows with the GPUs)"
    else:
        how = f"With the global batch fixed at {story['global_batch']} sequences"
    return Choice(f"{how}, why does MFU fall from {DP_WALL_GPUS[0]} to {DP_WALL_GPUS[-1]} GPUs?", act1_options_v2(act1_story_facts(s)),
                  act1_answer_at(s), act1_explanations_at(s))


def build_questions(s: dict) -> dict:
    return {"cause": cause_question(s), "design": design_question(s)}


# ---- variants, third edition: Act II's model is drawn, and with it the layout that wins ------------
# Up to the second edition Act II always laid out GPT-3 175B, so its right layout (TP 8 x PP 8) was
# the same for every student and only its letter moved. Now the model is drawn from the catalog,
# on the same 1,024 H100s, and the right option is the engine's fastest fitting layout for it:
# GPT-3 175B needs TP 8 and a pipeline to fit, a 70B fits with TP 8 alone, a 7B needs no model
# parallelism. The three wrong options are built from that layout, each embodying a misconception
# and each computed by the engine: TP across nodes always, and two of the others in an order the
# variant draws. Every option runs the same software settings (the era's ZeRO-1, selective
# recompute, 1F1B), which the question states.
DESIGN_MODELS = ("gpt3-175b", "llama2-70b", "llama3-70b", "llama2-7b")
VARIANT_DESIGN_BATCH_V3 = (1024, 2048)
DESIGN_ROSTERS = (0, 1, 2)  # which of the other misconceptions join TP-across-nodes (a rotation of DESIGN_OTHER_ROLES)
DESIGN_SETTINGS = dict(zero_stage=1, recompute="selective", schedule="1f1b")
DESIGN_MARGIN = 1.05  # the right layout's MFU over a wrong option's, at least (unless that one plainly does not fit)
DESIGN_NO_FIT = 1.10  # a wrong option that "does not fit" needs this many times the GPU's memory
DESIGN_MISCONCEPTIONS = {  # what each wrong option stands for
    "best": "the leanest layout that fits is always the fastest",
    "tp_across": "tensor parallelism across nodes is fine",
    "deep_pipeline": "more pipeline stages than memory needs cost nothing",
    "no_tp": "pipeline parallelism alone is enough",
    "big_microbatch": "a bigger micro-batch always runs faster",
    "tp_node": "fill the node with tensor parallelism whatever the model",
    "dp_only": "data parallelism with ZeRO-1 fits any model",
}
DESIGN_OTHER_ROLES = ("deep_pipeline", "no_tp", "big_microbatch", "tp_node", "dp_only")


def design_model_of(settings: dict) -> str:
    """Act II's model key for a variant's settings (GPT-3 175B before the third edition)."""
    return settings.get("design_model", DESIGN_MODEL)


def design_platform_of(settings: dict) -> str:
    """Act II's platform (a DESIGN_PLATFORMS key) for a variant's settings (DGX H100 before the sixth edition)."""
    return settings.get("design_platform", DESIGN_CLUSTER)


@lru_cache(maxsize=256)  # a Plan is frozen: the distractor search's 361 wrong layouts are 123 plans (every model and platform shares them)
def design_plan(tp: int, pp: int, micro_batch: int, global_batch: int, sequence_parallel: bool | None = None) -> Plan:
    """An Act II layout on the design cluster under DESIGN_SETTINGS (SP and TP overlap wherever TP > 1)."""
    sp = tp > 1 if sequence_parallel is None else sequence_parallel
    return Plan.for_era(DESIGN_ERA, tp=tp, pp=pp, dp=DESIGN_NODES * Cluster.get(DESIGN_CLUSTER).gpus_per_node // (tp * pp), micro_batch=micro_batch,
                        global_batch=global_batch, sequence_parallel=sp, tp_comm_overlap=sp, **DESIGN_SETTINGS)


def layout_label(plan: Plan) -> str:
    return f"TP={plan.tp} x PP={plan.pp} x DP={plan.dp}, micro-batch {plan.micro_batch}"


def layout_id(plan: Plan) -> str:
    """An option's internal id: its layout, which says nothing the label does not."""
    return f"tp{plan.tp}-pp{plan.pp}-dp{plan.dp}-mb{plan.micro_batch}"


@lru_cache(maxsize=32)
def design_table(model_key: str, global_batch: int, platform: str = DESIGN_CLUSTER):
    """Every layout of the model at the batch under DESIGN_SETTINGS, fitting ones first, fastest first (sweep)."""
    model, cluster = design_inputs(model_key, platform)
    return sweep(model, cluster, global_batch=global_batch, era=DESIGN_ERA, **DESIGN_SETTINGS)


def fastest_micro_batch(model_key: str, global_batch: int, tp: int, pp: int, default: int) -> int:
    """The micro-batch with which a (TP, PP) layout runs fastest while fitting; `default` if none fits."""
    table = design_table(model_key, global_batch)
    rows = table[table["fits"] & (table["tp"] == tp) & (table["pp"] == pp) & (table["sequence_parallel"] == (tp > 1))]
    return int(rows.iloc[0]["micro_batch"]) if len(rows) else default


@lru_cache(maxsize=32)
def design_numbers(model_key: str, global_batch: int, platform: str = DESIGN_CLUSTER) -> dict[str, np.ndarray]:
    """design_table's columns of numbers, as numpy arrays in its order (sweep_numbers): what the
    distractor search reads, without pandas."""
    model, cluster = design_inputs(model_key, platform)
    return sweep_numbers(model, cluster, global_batch=global_batch, era=DESIGN_ERA, **DESIGN_SETTINGS)


def _design_best_index(model_key: str, global_batch: int, platform: str, headroom: float | None) -> int:
    """design_table's index (in its order) of the fastest layout that fits, in `headroom` of the memory where given."""
    numbers = design_numbers(model_key, global_batch, platform)
    ok = numbers["fits"]
    if headroom is not None:
        ok = ok & (numbers["memory_bytes"] <= headroom * design_inputs(model_key, platform)[1].gpu.hbm_bytes)
    rows = np.flatnonzero(ok)
    if not len(rows):
        raise ValueError(f"design_model: nothing fits for {design_inputs(model_key)[0].name} at global batch {global_batch}")
    return int(rows[0])


def design_best_row(model_key: str, global_batch: int, platform: str = DESIGN_CLUSTER, headroom: float | None = None):
    """design_table's row of the fastest layout that fits (its MFU among its columns); with
    `headroom`, that fits in that share of the GPU's memory (the sixth edition's DESIGN_HEADROOM)."""
    return design_table(model_key, global_batch, platform).iloc[_design_best_index(model_key, global_batch, platform, headroom)]


@lru_cache(maxsize=32)
def design_best_plan(model_key: str, global_batch: int, platform: str = DESIGN_CLUSTER, headroom: float | None = None) -> Plan:
    """The engine's fastest layout that fits (in `headroom` of the memory), for the model at the batch, under DESIGN_SETTINGS."""
    numbers, row = design_numbers(model_key, global_batch, platform), _design_best_index(model_key, global_batch, platform, headroom)
    return design_plan(int(numbers["tp"][row]), int(numbers["pp"][row]), int(numbers["micro_batch"][row]), global_batch,
                       bool(numbers["sequence_parallel"][row]))


def _candidate(role: str, best: Plan, model: Model, gpus: int, per_node: int) -> tuple[int, int, int] | None:
    """(tp, pp, micro-batch) of the layout that embodies `role`, built from the best one; None where none is valid."""
    t, p, mb = best.tp, best.pp, best.micro_batch
    layout = {
        "tp_across": (2 * per_node, max(1, p // 2), mb),
        "deep_pipeline": (t, 4 * p if p > 1 else per_node, mb),
        "no_tp": (1, t * p, mb),
        "big_microbatch": (t, p, 4 * mb),
        "tp_node": (per_node, p, mb),
        "dp_only": (1, 1, mb),
    }[role]
    tp, pp, micro = layout
    if model.heads % tp or gpus % (tp * pp) or model.layers % pp or best.global_batch % (gpus // (tp * pp) * micro) or micro > 8:
        return None
    return None if (tp, pp, micro) == (t, p, mb) else layout


DESIGN_ANCHORS = (1, 2)  # edition 4: the wrong layouts are built around the 1st or 2nd runner-up, not the key (review 38bda0b, M9)


@lru_cache(maxsize=64)
def design_anchor_plan(model_key: str, global_batch: int, anchor: int) -> Plan:
    """The layout the wrong options are built around: the best (anchor 0, editions 1-3), or the
    `anchor`-th fastest fitting layout whose TP x PP differs from the best's (at its own fastest
    micro-batch), so that no option is the one the others vary around."""
    best = design_best_plan(model_key, global_batch)
    if not anchor:
        return best
    table = design_table(model_key, global_batch)
    table = table[table["fits"]]
    seen, runners = {(best.tp, best.pp)}, []
    for _, row in table.iterrows():
        shape = (int(row["tp"]), int(row["pp"]))
        if shape not in seen:
            seen.add(shape)
            runners.append(design_plan(*shape, int(row["micro_batch"]), global_batch, bool(row["sequence_parallel"])))
    return runners[min(anchor, len(runners)) - 1] if runners else best


@lru_cache(maxsize=64)
def design_options(model_key: str, global_batch: int, roster: int, anchor: int = 0) -> tuple[tuple[str, Plan], ...]:
    """Act II's options for a variant as (role, plan): the engine's best, then TP across nodes and
    the first two other misconceptions (DESIGN_OTHER_ROLES rotated by `roster`) whose layouts are
    valid, differ from the others and are plainly wrong: slower than the best by DESIGN_MARGIN, or
    needing DESIGN_NO_FIT times the GPU's memory. Each wrong layout runs at its own fastest fitting
    micro-batch (but the bigger-micro-batch one), so the options do not all share the right one's
    micro-batch: the right option is not simply the one the others vary around."""
    model, cluster = design_inputs(model_key)
    best = design_best_plan(model_key, global_batch)
    best_est = design_estimate(best, model_key)
    around = design_anchor_plan(model_key, global_batch, anchor)
    others = DESIGN_OTHER_ROLES[roster:] + DESIGN_OTHER_ROLES[:roster]
    chosen, seen = [("best", best)], {(best.tp, best.pp, best.micro_batch)}
    for role in ("tp_across", *others):
        layout = _candidate(role, around, model, cluster.gpus, cluster.gpus_per_node)
        if layout is not None and role != "big_microbatch":  # each wrong layout at its own best micro-batch, not the right one's
            layout = (*layout[:2], fastest_micro_batch(model_key, global_batch, *layout))
        if layout is None or layout in seen:
            continue
        plan = design_plan(*layout, global_batch)
        est = design_estimate(plan, model_key)
        if best_est.mfu >= DESIGN_MARGIN * est.mfu or est.memory.total >= DESIGN_NO_FIT * cluster.gpu.hbm_bytes:
            chosen.append((role, plan))
            seen.add(layout)
        if len(chosen) == 4:
            return tuple(chosen)
    raise ValueError(f"design_model: fewer than three plainly wrong layouts for {model.name} at global batch {global_batch}")


TIME_PARTS = {"compute": "compute", "bubble": "pipeline bubble", "tp_comm": "TP collectives", "pp_comm": "pipeline sends",
              "dp_comm": "exposed DP reduction", "optimizer": "optimizer step", "offload": "offload", "ep_comm": "expert all-to-all"}


def time_growth(e: Estimate, base: Estimate, most: int = 2) -> str:
    """Where `e`'s step spends more than `base`'s: its largest increases, in seconds."""
    grew = sorted(((getattr(e.time, k) - getattr(base.time, k), name) for k, name in TIME_PARTS.items()), reverse=True)
    return ", ".join(f"{name} +{d:.2f} s" for d, name in grew[:most] if d > 0.005) or "no part of the step longer"


def design_explanation(role: str, plan: Plan, model_key: str, best: Plan, platform: str = DESIGN_CLUSTER) -> str:
    """The reveal's line for one option: its numbers from the engine, and why, against the best."""
    e, b = design_estimate(plan, model_key, platform), design_estimate(best, model_key, platform)
    hbm = e.cluster.gpu.hbm_bytes / 1e9
    fit = f"fits ({e.memory.total / 1e9:.1f} of {hbm:.1f} GB)" if e.fits else f"does not fit ({e.memory.total / 1e9:.0f} GB per GPU of {hbm:.1f})"
    head = f"MFU {e.mfu:.1%}, bubble {e.bubble_fraction:.0%}, {fit}."
    if role == "best":
        domain = "one node" if e.cluster.domain_gpus == e.cluster.gpus_per_node else f"one {e.cluster.domain_gpus}-GPU NVLink domain"
        tp = (f"TP {plan.tp} inside {domain} ({e.time.tp_comm:.2f} s of TP collectives a step, over NVLink)" if plan.tp > 1
              else "no TP (each GPU holds whole layers and they fit)")
        pp = f"{plan.pp} pipeline stages across nodes" if plan.pp > 1 else "no pipeline, since it fits without one"
        return f"{head} The engine's fastest layout that fits: {tp}, {pp}, DP {plan.dp} for the rest; step {e.step_time_s:.2f} s."
    slower = f"Step {e.step_time_s:.2f} s against {b.step_time_s:.2f} s ({time_growth(e, b)})."
    per_node = e.cluster.gpus_per_node
    why = {
        "tp_across": f"Its TP group spans {plan.tp // per_node} nodes: TP collectives run on every layer, over the NICs, and cannot hide behind the GEMMs there.",
        "deep_pipeline": f"{plan.pp} stages where {best.pp} suffice: {e.plan.microbatches} micro-batches per pipeline, and each GPU's slice of the model is thinner.",
        "no_tp": f"Without TP each GPU holds its {plan.pp}-stage share of the model in whole layers: weights, gradients and activations unsplit.",
        "big_microbatch": f"Micro-batch {plan.micro_batch} leaves {e.plan.microbatches} micro-batches per pipeline and holds {plan.micro_batch // best.micro_batch}x the activations in flight.",
        "tp_node": (f"TP {plan.tp} splits layers that fit " + ("whole" if best.tp == 1 else f"with TP {best.tp}")
                    + ": smaller GEMMs and collectives on every layer."),
        "dp_only": f"Every GPU keeps the whole model's bf16 weights and gradients: {(e.memory.weights + e.memory.gradients) / 1e9:.0f} GB before activations.",
    }[role]
    return f"{head} {why}" + (f" {slower}" if e.fits else "")


def design_question_v3(s: dict) -> Choice:
    model_key, batch = design_model_of(s), int(s["design_batch"])
    options = design_options(model_key, batch, int(s["design_roster"]), int(s.get("design_anchor", 0)))
    best = options[0][1]
    return Choice(
        f"Global batch {batch} sequences, ZeRO-1, selective recompute, 1F1B: which layout trains fastest while fitting in memory?",
        tuple(Option(layout_id(plan), layout_label(plan), DESIGN_MISCONCEPTIONS[role]) for role, plan in options),
        layout_id(best),
        {layout_id(plan): design_explanation(role, plan, model_key, best) for role, plan in options},
    )


def design_roles(settings: dict) -> dict[str, str]:
    """Each option's role (its misconception's key) by its internal id, for a third-edition variant."""
    return {layout_id(plan): role for role, plan in design_options(design_model_of(settings), int(settings["design_batch"]), int(settings["design_roster"]),
                                                                    int(settings.get("design_anchor", 0)))}


def tp_reflection(settings: dict) -> dict:
    """The reflection's numbers: TP inside one node (TP 8) against TP across two (TP 16), at the
    variant's model and batch, with the best layout's pipeline depth (halved for TP 16, so both
    use the same GPUs per model replica)."""
    model_key, batch = design_model_of(settings), int(settings.get("design_batch", DESIGN_GLOBAL_BATCH))
    platform = design_platform_of(settings)
    per_node = Cluster.get(DESIGN_CLUSTER).gpus_per_node
    if design_inputs(model_key)[0].heads % (2 * per_node):  # heads that do not split 16 ways (Llama 2 13B's 40): the lab's GPT-3
        model_key = DESIGN_MODEL
    best = design_best_plan(model_key, batch, platform) if "design_model" in settings else ACT2_DESIGNS["C"]
    inside = design_estimate(design_plan(per_node, best.pp, best.micro_batch, batch), model_key, platform)
    across = design_estimate(design_plan(2 * per_node, max(1, best.pp // 2), best.micro_batch, batch), model_key, platform)
    return {"inside": inside, "across": across}


def draw_settings_v3(d) -> dict:
    return {**draw_act1(d), "design_model": d.choice("design_model", DESIGN_MODELS), "design_batch": d.choice("design_batch", VARIANT_DESIGN_BATCH_V3),
            "design_roster": d.choice("design_roster", DESIGN_ROSTERS)}


def build_questions_v3(s: dict) -> dict:
    return {"cause": cause_question(s), "design": design_question_v3(s)}


def draw_settings_v4(d) -> dict:
    return {**draw_settings_v3(d), "design_anchor": d.choice("design_anchor", DESIGN_ANCHORS)}


VARIANTS = LabVariants("05_parallelism", draw_settings_v4, build_questions_v3, version=4,
                       older={1: (draw_settings_v1, build_questions_v1), 2: (draw_settings, build_questions), 3: (draw_settings_v3, build_questions_v3)})


# ---- the fifth edition (issue 38 item 2): no blind rule over the labels finds the key ----------------------
# Edition 4 built the wrong layouts around a runner-up, yet the key stayed recognisable by rank: a
# rule over the labels ("without the largest micro-batch, the smallest PP") found it for 79% of 200
# ids. Now the wrong layouts are picked from every plainly wrong layout of the sweep so that the key
# sits where the variant's drawn target puts it among the options, by TP, by PP and by micro-batch:
# sometimes the smallest PP, sometimes the largest, and so on.
# Where the key sits among the two wrong options other than TP across nodes (which always has the
# largest TP): how many are below it in TP, PP, DP and micro-batch (a tie counts a half). The nine
# targets are an orthogonal array: each field's 0, 1 and 2 equally often, and each pair's combinations.
DESIGN_SHAPES = tuple(range(24))  # the slots of design_trios_v5: which trio of wrong layouts a variant sees
# The 7B's key (DP only) always had the largest DP, and Llama 3 70B's (TP 8, PP 1, micro-batch 1) the
# smallest PP and micro-batch of every layout worth offering: a rule over the labels found them.
DESIGN_MODELS_V5 = ("gpt3-175b", "llama2-70b", "llama2-13b")
DESIGN_MISCONCEPTIONS_V5 = {
    **DESIGN_MISCONCEPTIONS,
    "shallow_pipeline": "the fewest pipeline stages are always the fastest",
    "small_microbatch": "the smallest micro-batch is always the fastest",
    "less_tp": "less tensor parallelism always means a shorter step",
}
DESIGN_ROLE_CAP = 4  # the fastest few layouts of each role are the candidates


def design_role(tp: int, pp: int, micro_batch: int, best: Plan, per_node: int) -> str:
    """The misconception a wrong layout (TP, PP, micro-batch) stands for, by how it differs from the engine's best."""
    if tp > per_node:
        return "tp_across"
    if tp == 1 and pp == 1:
        return "dp_only"
    if tp == 1 < best.tp:
        return "no_tp"
    if pp > best.pp:
        return "deep_pipeline"
    if pp < best.pp:
        return "shallow_pipeline"
    if micro_batch > best.micro_batch:
        return "big_microbatch"
    if micro_batch < best.micro_batch:
        return "small_microbatch"
    return "tp_node" if tp > best.tp else "less_tp"


@lru_cache(maxsize=32)
def design_wrong_layouts(model_key: str, global_batch: int, platform: str = DESIGN_CLUSTER, headroom: float | None = None) -> tuple[tuple[str, Plan], ...]:
    """Every plainly wrong layout of the sweep (slower than the best by DESIGN_MARGIN, or needing
    DESIGN_NO_FIT times the GPU's memory), with its role; the fastest DESIGN_ROLE_CAP of each role.
    TP "across nodes" is TP past the NVLink domain (a DGX's 8 GPUs, 64 of an NVL72 rack's)."""
    model, cluster = design_inputs(model_key, platform)
    best = design_best_plan(model_key, global_batch, platform, headroom)
    best_mfu, hbm = design_estimate(best, model_key, platform).mfu, cluster.gpu.hbm_bytes
    numbers = design_numbers(model_key, global_batch, platform)
    out, count, seen = [], {}, {(best.tp, best.pp, best.micro_batch)}
    columns = (numbers[c].tolist() for c in ("tp", "pp", "micro_batch", "sequence_parallel", "cp", "ep", "mfu", "memory_bytes"))
    for tp, pp, mb, sp, cp, ep, mfu, memory in zip(*columns):
        tp, pp, mb = int(tp), int(pp), int(mb)
        if (bool(sp) != (tp > 1) or mb > 8 or (tp, pp, mb) in seen or int(cp) != 1 or int(ep) != 1
                or global_batch % (cluster.gpus // (tp * pp) * mb) or model.heads % tp or model.layers % pp):
            continue
        role = design_role(tp, pp, mb, best, cluster.domain_gpus)
        if count.get(role, 0) >= DESIGN_ROLE_CAP:  # its role is full: no need to estimate it
            continue
        if _near(best_mfu, DESIGN_MARGIN * mfu) or _near(memory, DESIGN_NO_FIT * hbm):  # the row's numbers may not say: estimate()'s do
            e = design_estimate(design_plan(tp, pp, mb, global_batch), model_key, platform)
            mfu, memory = e.mfu, e.memory.total
        if best_mfu >= DESIGN_MARGIN * mfu or memory >= DESIGN_NO_FIT * hbm:
            count[role] = count.get(role, 0) + 1
            out.append((role, design_plan(tp, pp, mb, global_batch)))
            seen.add((tp, pp, mb))
    return tuple(out)


SWEEP_AGREEMENT = 1e-9  # the sweep's MFU and memory are estimate()'s but for the last bits (its own order of division)


def _near(value: float, threshold: float) -> bool:
    """Whether `value` is within SWEEP_AGREEMENT of `threshold` (relative): there a sweep row's
    rounding could fall on the other side of it from estimate()'s number."""
    return abs(value - threshold) <= SWEEP_AGREEMENT * abs(threshold)


def _credits(values: np.ndarray, target: np.ndarray, applies: np.ndarray | bool = True, among: np.ndarray | bool = True) -> np.ndarray:
    """Per trio (a column of `values`, options x trios, the key's value first): a rule picking the
    options whose value is `target` credits the key 1/t when it is one of t such; 0 where the rule
    does not `apply`. `among` masks the options the rule looks at (the key among them where it applies)."""
    hits = (values == target) & among
    return np.where(applies & hits[0], 1 / np.maximum(hits.sum(axis=0), 1), 0.0)


def _rank_credits(values: np.ndarray) -> list[np.ndarray]:
    """The rules picking the smallest, the largest, the second smallest and the second largest
    distinct value (the last two only where a trio's options hold three distinct values or more)."""
    low, high = values.min(axis=0), values.max(axis=0)
    three = ((values > low) & (values < high)).any(axis=0)
    second_low = np.where(values > low, values, high).min(axis=0)
    second_high = np.where(values < high, values, low).max(axis=0)
    return [_credits(values, low), _credits(values, high), _credits(values, second_low, three), _credits(values, second_high, three)]


def _kept_credits(values: np.ndarray, other: np.ndarray) -> list[np.ndarray]:
    """After dropping the options that hold `other`'s largest, then its smallest value: the rules
    picking the smallest and the largest of `values` among those left (two or more, the key one of them)."""
    out = []
    for extreme in (other.max(axis=0), other.min(axis=0)):
        kept = other != extreme
        applies = kept[0] & (kept.sum(axis=0) >= 2)
        smallest = np.where(kept, values, values.max(axis=0)).min(axis=0)
        largest = np.where(kept, values, values.min(axis=0)).max(axis=0)
        out += [_credits(values, smallest, applies, kept), _credits(values, largest, applies, kept)]
    return out


def _most_common_credit(values: np.ndarray) -> np.ndarray:
    """The rule picking the option whose value the most options share."""
    same = (values[:, None] == values[None, :]).sum(axis=1)
    return _credits(same, same.max(axis=0))


def _shared_numbers(options: np.ndarray) -> np.ndarray:
    """Per option, how many distinct numbers it shares with each other option, summed over them."""
    fields = options.shape[1]
    earlier = np.tri(fields, k=-1, dtype=bool)[:, :, None]
    distinct = ~((options[:, :, None] == options[:, None, :]) & earlier).any(axis=2)  # not held by an earlier field of its own
    held = (options[:, None, :, None] == options[None, :, None, :]).any(axis=3)  # [option, other, field]: the other holds it
    common = (held & distinct[:, None]).sum(axis=2)
    return common.sum(axis=1) - distinct.sum(axis=1)  # less each option's own numbers


DECIMAL_STEPS = 10 ** np.arange(1, 19)  # a positive integer's digits: 1 + how many of these it reaches


def _rank_profiles(options: np.ndarray, joint_rules: bool = False) -> np.ndarray:
    """Where the key (options[0]) stands among each trio's options (an array options x fields x
    trios, the fields TP, PP, DP and micro-batch), as rules blind to the question would find it: a row
    per trio, a column per rule. Per field, the smallest, the largest, the second smallest and the
    second largest value; after dropping the options that hold another field's largest or smallest,
    the smallest and the largest; and the option sharing its value most. Then the option sharing
    the most and the fewest numbers with the others, and the four rank rules on each option's sum.
    `joint_rules` (the sixth edition: with the GPU generation drawn, "the option holding the largest
    and the smallest number" found the key for 36% of 200 ids) adds the rules that read a label's
    numbers together: holding the extreme numbers or none, and the rank of each option's largest
    and smallest number, and of its length (the digits it shows)."""
    columns = [options[:, i] for i in range(options.shape[1])]
    out = []
    for i, values in enumerate(columns):
        out += _rank_credits(values)
        for j, other in enumerate(columns):
            if j != i:
                out += _kept_credits(values, other)
        out.append(_most_common_credit(values))
    shared = _shared_numbers(options)
    out += [_credits(shared, shared.max(axis=0)), _credits(shared, shared.min(axis=0)), *_rank_credits(options.sum(axis=1))]
    if joint_rules:
        top, bottom = options.max(axis=(0, 1)), options.min(axis=(0, 1))
        extremes = (options == top).any(axis=1).astype(int) + (options == bottom).any(axis=1)
        digits = (np.searchsorted(DECIMAL_STEPS, options, side="right") + 1).sum(axis=1)
        out += [_credits(extremes, extremes.max(axis=0)), _credits(extremes, extremes.min(axis=0))]
        for values in (options.max(axis=1), options.min(axis=1), digits):
            out += _rank_credits(values)
    return np.stack(out, axis=1)


def _wrong_trios(wrong: tuple[tuple[str, Plan], ...]) -> np.ndarray:
    """The trios of `wrong` layouts a variant may see, as indices in itertools.combinations' order:
    three distinct roles, one of them TP across nodes wherever the heads allow it (not the 13B's 40)."""
    import itertools

    roles = [r for r, _ in wrong]
    role = np.array([roles.index(r) for r in roles])  # a role's first index stands for it
    across = np.array(roles) == "tp_across"
    trios = np.array(list(itertools.combinations(range(len(wrong)), 3)), dtype=int).reshape(-1, 3)
    r = role[trios]
    distinct = (r[:, 0] != r[:, 1]) & (r[:, 0] != r[:, 2]) & (r[:, 1] != r[:, 2])
    return trios[distinct & (across[trios].sum(axis=1) == across.any())]


def _with_key(key: np.ndarray, fields: np.ndarray, layouts: np.ndarray) -> np.ndarray:
    """Options x fields x trios: the key, then the `layouts` (trios x indices into `fields`) of each trio."""
    options = fields[layouts.T].transpose(0, 2, 1)
    return np.concatenate([np.broadcast_to(key[None, :, None], (1, *options.shape[1:])), options])


def _candidate_options(model_key: str, global_batch: int, platform: str, headroom: float | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The trios of design_wrong_layouts a variant may see (indices); their options (options x
    fields x trios, the best first); the options without TP across nodes, once per distinct set of
    them (trios share them: one TP-across layout with each pair of the others); and each trio's set."""
    best = design_best_plan(model_key, global_batch, platform, headroom)
    wrong = design_wrong_layouts(model_key, global_batch, platform, headroom)
    trios = _wrong_trios(wrong)
    if not len(trios):
        raise ValueError(f"design_model: fewer than three plainly wrong layouts of distinct roles for {model_key} at global batch {global_batch} on {platform}")
    key = np.array([best.tp, best.pp, best.dp, best.micro_batch])
    fields = np.array([(p.tp, p.pp, p.dp, p.micro_batch) for _, p in wrong])
    across = np.array([r == "tp_across" for r, _ in wrong])
    rest = trios[~across[trios]].reshape(len(trios), -1)  # each trio's layouts without TP across nodes, in its order
    rests, rest_of_trio = np.unique(rest, axis=0, return_inverse=True)
    return trios, _with_key(key, fields, trios), _with_key(key, fields, rests), rest_of_trio.reshape(-1)


def _rank_profiles_of(option_sets: list[np.ndarray], joint_rules: bool) -> list[np.ndarray]:
    """_rank_profiles of each array of options, in one call per number of options: a trio's row
    depends on its options alone, and numpy's cost per call was most of 36 calls' (one per case)."""
    out = [None] * len(option_sets)
    for count in {options.shape[0] for options in option_sets}:
        same = [i for i, options in enumerate(option_sets) if options.shape[0] == count]
        rows = _rank_profiles(np.concatenate([option_sets[i] for i in same], axis=2), joint_rules)
        for i, part in zip(same, np.split(rows, np.cumsum([option_sets[i].shape[2] for i in same])[:-1])):
            out[i] = part
    return out


def _design_candidates(cases: tuple[tuple[str, int, str, float | None], ...], joint_rules: bool = False) -> list[tuple[tuple, np.ndarray, np.ndarray]]:
    """Per (model, batch, platform, headroom): design_wrong_layouts, every trio of them a variant may
    see (indices), and a row per trio: the best's rank profile (_rank_profiles) among the four options
    followed by its profile among the options without TP across nodes (see design_trios_v5)."""
    options = [_candidate_options(*case) for case in cases]
    profiles = _rank_profiles_of([o for _, among_all, among_rest, _ in options for o in (among_all, among_rest)], joint_rules)
    out = []
    for case, (trios, _, _, rest_of_trio), among_all, among_rest in zip(cases, options, profiles[0::2], profiles[1::2]):
        out.append((design_wrong_layouts(*case), trios, np.hstack([among_all, among_rest[rest_of_trio]])))
    return out


def _first_rows(profiles: np.ndarray) -> np.ndarray:
    """The index of each distinct row's first occurrence, in order: the greedy's argmin over these
    picks what it would over all rows (a repeat ties with its first, and argmin takes the first of ties)."""
    first = {}
    for i, row in enumerate(profiles):
        first.setdefault(row.tobytes(), i)
    return np.fromiter(first.values(), dtype=int)


def _excess(totals: np.ndarray, profiles: np.ndarray, target: np.ndarray, buffer: np.ndarray | None = None) -> np.ndarray:
    """Per row of `profiles` and rule, how far the totals with that row would pass the rule's target,
    squared: max(0, totals + row - target) ** 2 (in `buffer`, where given: the greedy's every pick)."""
    buffer = np.add(totals, profiles, out=buffer)
    np.subtract(buffer, target, out=buffer)
    np.maximum(0.0, buffer, out=buffer)
    return np.square(buffer, out=buffer)


EXCESS_ROUNDING = 1e-12  # two sums of the same n <= 176 non-negative terms in two orders differ by under 2n x 2**-53 of them


def _least_excess(totals: np.ndarray, profiles: np.ndarray, target: np.ndarray, top: np.ndarray) -> int:
    """int(np.argmin(_excess(totals, profiles, target).sum(axis=1))) (the greedy's pick), summing first
    only the rules some row passes: where the largest value of a rule's column (`top`) does not pass
    it, no row does (adding and subtracting floats keep their order), and its excess is 0 in every
    row. That sum's order differs from the full one's: the rows within EXCESS_ROUNDING of its least
    (every row the full sum could make the least) are summed in full and the first least one taken."""
    active = np.flatnonzero((totals + top) - target > 0)
    partial = _excess(totals.take(active), profiles.take(active, axis=1), target.take(active)).sum(axis=1)
    near = np.flatnonzero(partial <= partial.min() * (1 + EXCESS_ROUNDING))
    if len(near) == 1:
        return int(near[0])
    return int(near[np.argmin(_excess(totals, profiles.take(near, axis=0), target).sum(axis=1))])


def _picked(wrong: tuple[tuple[str, Plan], ...], trio: np.ndarray) -> tuple[tuple[str, Plan], ...]:
    """A trio of design_wrong_layouts (role, plan) from its indices."""
    return tuple(wrong[i] for i in trio)


def _design_shares(width: int) -> np.ndarray:
    return np.array([0.22] * (width // 2) + [0.28] * (width // 2))  # under chance (1/4, 1/3): the greedy aims low


@lru_cache(maxsize=32)
def design_trios_v5(model_key: str, global_batch: int) -> tuple[tuple[tuple[str, Plan], ...], ...]:
    """One trio of wrong layouts per DESIGN_SHAPES slot: three distinct roles, one of them TP across
    nodes, picked one slot after another so that, over the slots, no rank rule finds the best more
    often than its share: the best's rank profile (_rank_profiles of TP, PP, DP and micro-batch among
    the four options, and among the three without TP across nodes) is kept near 1/4 and 1/3 per rule."""
    [(wrong, trios, profiles)] = _design_candidates(((model_key, global_batch, DESIGN_CLUSTER, None),))
    width = profiles.shape[1]
    share = _design_shares(width)
    totals, out = np.zeros(width), []
    for slot in range(len(DESIGN_SHAPES)):
        imbalance = np.zeros(len(trios))
        for column in _excess(totals, profiles, share * (slot + 1)).T:  # summed left to right, as a Python sum would: ties break as they always did
            imbalance += column
        pick = int(np.argmin(imbalance))
        totals = totals + profiles[pick]
        out.append(_picked(wrong, trios[pick]))
    return tuple(out)


def design_options_v5(model_key: str, global_batch: int, shape: int) -> tuple[tuple[str, Plan], ...]:
    """The best and the `shape`-th trio of design_trios_v5."""
    return (("best", design_best_plan(model_key, global_batch)), *design_trios_v5(model_key, global_batch)[shape])


WHY_V5 = {
    "shallow_pipeline": "{pp} stages where {best_pp} are needed: each GPU holds more of the model.",
    "small_microbatch": "Micro-batch {mb} where {best_mb} runs faster: smaller GEMMs and more sends per sequence.",
    "less_tp": "TP {tp} where {best_tp} runs faster: each GPU holds more of every layer.",
}


def design_explanation_v5(role: str, plan: Plan, model_key: str, best: Plan, platform: str = DESIGN_CLUSTER) -> str:
    if role not in WHY_V5:
        return design_explanation(role, plan, model_key, best, platform)
    e, b = design_estimate(plan, model_key, platform), design_estimate(best, model_key, platform)
    hbm = e.cluster.gpu.hbm_bytes / 1e9
    fit = f"fits ({e.memory.total / 1e9:.1f} of {hbm:.1f} GB)" if e.fits else f"does not fit ({e.memory.total / 1e9:.0f} GB per GPU of {hbm:.1f})"
    why = WHY_V5[role].format(pp=plan.pp, best_pp=best.pp, mb=plan.micro_batch, best_mb=best.micro_batch, tp=plan.tp, best_tp=best.tp)
    slower = f" Step {e.step_time_s:.2f} s against {b.step_time_s:.2f} s ({time_growth(e, b)})." if e.fits else ""
    return f"MFU {e.mfu:.1%}, bubble {e.bubble_fraction:.0%}, {fit}. {why}{slower}"


def design_question_v5(s: dict) -> Choice:
    model_key, batch = design_model_of(s), int(s["design_batch"])
    options = design_options_v5(model_key, batch, int(s["design_shape"]))
    best = options[0][1]
    return Choice(
        f"Global batch {batch} sequences, ZeRO-1, selective recompute, 1F1B: which layout trains fastest while fitting in memory?",
        tuple(Option(layout_id(plan), layout_label(plan), DESIGN_MISCONCEPTIONS_V5[role]) for role, plan in options),
        layout_id(best),
        {layout_id(plan): design_explanation_v5(role, plan, model_key, best) for role, plan in options},
    )


def draw_settings_v5(d) -> dict:
    return {**draw_act1(d), "design_model": d.choice("design_model", DESIGN_MODELS_V5), "design_batch": d.choice("design_batch", VARIANT_DESIGN_BATCH_V3),
            "design_shape": d.choice("design_shape", range(len(DESIGN_SHAPES)))}


def build_questions_v5(s: dict) -> dict:
    return {"cause": cause_question(s), "design": design_question_v5(s)}


VARIANTS = LabVariants("05_parallelism", draw_settings_v5, build_questions_v5, version=5,
                       older={1: (draw_settings_v1, build_questions_v1), 2: (draw_settings, build_questions), 3: (draw_settings_v3, build_questions_v3),
                              4: (draw_settings_v4, build_questions_v3)})


# ---- the sixth edition (issue 38 items 2 and 5): three causes of the wall, and a GPU generation for Act II ----
# Act I. Up to the fifth edition the cause was one of two mechanisms, the shrinking compute (B) or the
# network (D), behind four fixed labels: a rule over the labels' lengths found the key for 51% of 200 ids.
# Pure data parallelism's step is compute, the reduction's bandwidth term, its latency term and an
# optimizer step that shrinks with N under ZeRO-1; MFU falls when one of the first three moves against
# the others, so the question has exactly three answers, and now each is right for a third of the
# stakeholders: a fixed batch on NDR (the compute shrinks, B), the batch growing with the GPUs on HDR
# (the network, D), or on NDR with the gradient buckets set to 10M parameters (the latency, C: each
# bucket's ring pays 2(N-1) latency steps, which is why Megatron's default bucket grows with DP). Three
# options, then, with chance at a third; the fifth edition's fourth ("the bytes each GPU all-reduces
# grow with N") was never right for anyone, and its misconception is answered in option B's reveal
# (the ring's bytes per GPU grow 2(N-1)/N: 1.14x from 8 to 512 GPUs).
ACT1_REGIMES_V6 = ("strong", "weak", "buckets")


def act1_options_v6(facts: dict) -> tuple[Option, ...]:
    """Act I's three causes, the network's numbers from the engine at the variant."""
    return (
        Option("B", "Each GPU's compute shrinks with its share of the batch; the bytes it reduces do not", "the shrinking compute, not the network, is the wall"),
        Option("C", "Each gradient bucket's ring pays a latency per hop, and a ring of N GPUs has N-1 hops", "latency, not bandwidth, dominates"),
        act1_options_v2(facts)[3],
    )


ACT1_CLAIMS_V6: dict[str, Callable[[dict], bool]] = {  # each with its margin: the cause's part at least twice the next one's
    "B": lambda f: f["compute_ratio"] < 0.1 and f["exposed_over_compute"] > 0.5 and f["exposed_growth"] < 2,
    "C": lambda f: f["compute_ratio"] > 0.5 and f["latency_share"] > 0.5 and f["latency_growth_s"] > 2 * f["bandwidth_growth_s"],
    "D": lambda f: (f["compute_ratio"] > 0.5 and f["across_nodes_gbs"] < f["nvlink_gbs"] / 2
                    and f["bandwidth_growth_s"] > 2 * f["latency_growth_s"]),
}


def act1_answer_v6(settings: dict) -> str | None:
    facts = act1_story_facts(settings)
    held = [k for k, claim in ACT1_CLAIMS_V6.items() if claim(facts)]
    return held[0] if len(held) == 1 else None


def act1_explanations_v6(settings: dict) -> dict[str, str]:
    """The reveal's line per option at the stakeholder's runs: B and D as the second edition's, C with
    the latency's and the bandwidth's growth from the engine."""
    f, lines = act1_story_facts(settings), act1_explanations_at(settings)
    lo, hi = DP_WALL_GPUS[0], DP_WALL_GPUS[-1]
    c = (f"latency (alpha) terms are {f['latency_share']:.0%} of the reduction at {hi} GPUs against {f['latency_share_small']:.0%} at {lo}: "
         f"from {lo} to {hi} GPUs they grew {f['latency_growth_s'] * 1e3:.0f} ms and the bandwidth part {f['bandwidth_growth_s'] * 1e3:.0f} ms. ")
    if f["bucket_params"]:
        c += (f"In buckets of {f['bucket_params'] / 1e6:.0f}M parameters every bucket's reduce-scatter and all-gather walk a ring of {hi} GPUs "
              "one latency step per hop: that is the wall. Megatron's default bucket, max(40M, 1M x DP) parameters, grows with DP for this reason.")
    else:
        c += "Real, and growing with N, but not the main cost: with Megatron's default buckets, max(40M, 1M x DP) parameters, there are few of them."
    return {"B": f"{lines['B']} (The ring's bytes per GPU are 2(N-1)/N of the gradients: {f['bytes_ratio']:.2f}x from {lo} to {hi} GPUs.)",
            "C": c, "D": lines["D"]}


def cause_question_v6(s: dict) -> Choice:
    base = cause_question(s)
    return Choice(base.prompt, act1_options_v6(act1_story_facts(s)), act1_answer_v6(s), act1_explanations_v6(s))


def draw_act1_v6(d) -> dict:
    regime, per_gpu = d.choice("act1_regime", ACT1_REGIMES_V6), d.choice("per_gpu_batch", VARIANT_WEAK_PER_GPU)
    if regime == "strong":
        return {"act1_scaling": "strong", "params_b": ACT1_PARAMS_B}
    return {"act1_scaling": regime, "params_b": ACT1_PARAMS_B, "per_gpu_batch": per_gpu}


# Act II. Up to the fifth edition every student laid out 1,024 H100s. Now the generation is drawn:
# 128 DGX H100 (80 GB, 8-GPU NVLink domains), 128 DGX B200 (180 GB, NVLink 5) or 16 GB200 NVL72 racks
# (186 GB, 64 GPUs of each rack on one NVLink domain), and with it the layout that wins: GPT-3 175B
# needs TP 8 x PP 8 on H100 and no pipeline at all on the NVL72 racks, Llama 2 70B drops from TP 8 to
# TP 4 on Blackwell (design_best_plan at each; the margins are tests/test_lab05_editions.py's).
# The right layout leaves a tenth of the GPU's memory free: on Blackwell the 70B's fastest layouts fill
# 93-97% of it (TP 4, micro-batch 4), a right answer resting on the memory model's last few GB.
DESIGN_HEADROOM = 0.9
DESIGN_PLATFORM_NAMES = {"dgx-h100": "DGX H100", "dgx-b200": "DGX B200", "gb200-nvl72": "GB200 NVL72"}


def design_platform_text(platform: str) -> str:
    """The stakeholder's words for Act II's cluster, every number from the catalog."""
    cluster = design_inputs(DESIGN_MODEL, platform)[1]
    gpus = f"{cluster.gpus:,} {cluster.gpu.name} GPUs of {cluster.gpu.hbm_bytes / 1e9:.1f} GB"
    if cluster.domain_gpus == cluster.gpus_per_node:
        return (f"{cluster.nodes} {DESIGN_PLATFORM_NAMES[platform]} nodes ({gpus}; {cluster.gpus_per_node} GPUs a node on {cluster.intra.name}, "
                f"{cluster.inter.name} between nodes)")
    racks, full = cluster.domains, Cluster.get(platform).domain_gpus  # a rack's GPUs as the catalog has them (72), before Act II uses 64
    return (f"{racks} {DESIGN_PLATFORM_NAMES[platform]} racks ({gpus}; {cluster.domain_gpus} of each rack's {full} GPUs on one "
            f"{cluster.intra.name} domain, {cluster.inter.name} between racks)")


def design_ring_busbw(platform: str) -> tuple[float, float]:
    """(bus bandwidth of a ring over all of Act II's GPUs, of one inside one NVLink domain), bytes/s."""
    cluster = design_inputs(DESIGN_MODEL, platform)[1]
    return (bus_bandwidth("all_reduce", 4e9, cluster, cluster.gpus, 1, "ring"),
            bus_bandwidth("all_reduce", 4e9, cluster, cluster.domain_gpus, 1, "ring"))


DESIGN_PLATFORM_KEYS = tuple(DESIGN_PLATFORMS)


DESIGN_MODELS_V6 = ("gpt3-175b", "llama2-70b", "llama3-70b")  # no key of pure DP (Llama 2 13B's at 2,048 on Blackwell: the largest DP of all)


def design_cases_v6() -> tuple[tuple[str, int, str], ...]:
    return tuple((m, b, p) for m in DESIGN_MODELS_V6 for b in VARIANT_DESIGN_BATCH_V3 for p in DESIGN_PLATFORM_KEYS)


@lru_cache(maxsize=1)
def design_trios_v6() -> dict[tuple[str, int, str], tuple[tuple[tuple[str, Plan], ...], ...]]:
    """design_trios_v5's greedy, over every (model, batch, platform) of the sixth edition at once: a
    variant draws its case and its slot uniformly, so what a rule finds is its mean over all of
    them, and a case whose best is structurally extreme (GPT-3 175B's TP 8 x PP 8 holds the smallest
    sum of numbers of every layout) is paid for by the others. Profiles: _rank_profiles with its joint rules."""
    cases = design_cases_v6()
    candidates = dict(zip(cases, _design_candidates(tuple((*case, DESIGN_HEADROOM) for case in cases), joint_rules=True)))
    distinct = {}  # each case's distinct profiles (by their first trio)
    for case, (_, _, profiles) in candidates.items():
        first = _first_rows(profiles)
        distinct[case] = (first, profiles[first])
    width = candidates[cases[0]][2].shape[1]
    share, totals, picks = _design_shares(width), np.zeros(width), 0
    out, tops = {case: [] for case in cases}, {case: profiles.max(axis=0) for case, (_, profiles) in distinct.items()}
    for _slot in range(len(DESIGN_SHAPES)):
        for case in cases:
            (wrong, trios, _), (first, profiles) = candidates[case], distinct[case]
            picks += 1
            row = _least_excess(totals, profiles, share * picks, tops[case])
            totals = totals + profiles[row]
            out[case].append(_picked(wrong, trios[first[row]]))
    return {case: tuple(trios) for case, trios in out.items()}


def design_options_v6(model_key: str, global_batch: int, shape: int, platform: str) -> tuple[tuple[str, Plan], ...]:
    """The best (with DESIGN_HEADROOM) and the `shape`-th trio of design_trios_v6 for the case."""
    return (("best", design_best_plan(model_key, global_batch, platform, DESIGN_HEADROOM)),
            *design_trios_v6()[(model_key, global_batch, platform)][shape])


def design_question_v6(s: dict) -> Choice:
    return _design_question_v6(design_model_of(s), int(s["design_batch"]), design_platform_of(s), int(s["design_shape"]))


@lru_cache(maxsize=512)  # 3 models x 2 batches x 3 platforms x 24 shapes: a class's students share them (a Choice is frozen)
def _design_question_v6(model_key: str, batch: int, platform: str, shape: int) -> Choice:
    options = design_options_v6(model_key, batch, shape, platform)
    best = options[0][1]
    cluster = design_inputs(model_key, platform)[1]
    return Choice(
        f"On {cluster.gpus:,} {cluster.gpu.name} GPUs ({DESIGN_PLATFORM_NAMES[platform]}). Global batch {batch:,} sequences, ZeRO-1, "
        f"selective recompute, 1F1B: which layout trains fastest with {1 - DESIGN_HEADROOM:.0%} of each GPU's memory to spare?",
        tuple(Option(layout_id(plan), layout_label(plan), DESIGN_MISCONCEPTIONS_V5[role]) for role, plan in options),
        layout_id(best),
        {layout_id(plan): design_explanation_v5(role, plan, model_key, best, platform) for role, plan in options},
    )


def draw_settings_v6(d) -> dict:
    return {**draw_act1_v6(d), "design_model": d.choice("design_model", DESIGN_MODELS_V6), "design_batch": d.choice("design_batch", VARIANT_DESIGN_BATCH_V3),
            "design_platform": d.choice("design_platform", DESIGN_PLATFORM_KEYS), "design_shape": d.choice("design_shape", range(len(DESIGN_SHAPES)))}


def build_questions_v6(s: dict) -> dict:
    """Act I's question built now; Act II's, whose distractors come from a class-wide search
    (design_trios_v6, ~1 s), when first read (labs.core.variants.Specs), so the page's first
    question does not wait for it."""
    return {"cause": cause_question_v6(s), "design": partial(design_question_v6, s)}


VARIANTS = LabVariants("05_parallelism", draw_settings_v6, build_questions_v6, version=6,
                       older={1: (draw_settings_v1, build_questions_v1), 2: (draw_settings, build_questions), 3: (draw_settings_v3, build_questions_v3),
                              4: (draw_settings_v4, build_questions_v3), 5: (draw_settings_v5, build_questions_v5)})
