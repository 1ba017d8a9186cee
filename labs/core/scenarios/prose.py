"""Numbers the labs' prose states beside their predictions, each computed by the engine, so that
tests/test_review_fixes.py can pin every statement to the number it rests on.

Nothing here is graded: the predictions and their keys stay in labs/core/scenarios/labNN.py.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from labs.core.engine.hardware import Cluster
from labs.core.engine.perf import Estimate, estimate
from labs.core.engine.stages.parallel import SP_BACKWARD_REGATHERS

# The software stack the engine's absolute MFUs describe: its GEMM rates are cuBLAS matmul
# microbenchmarks (MAMF), with flash attention, Transformer Engine's TP overlap and Megatron-Core's
# distributed optimizer and bucketed reductions (labs.core.engine.eras: "megatron-core-2024"'s, with today's
# NCCL, TODAY_STACK). Other
# stacks (plain PyTorch FSDP, older Megatron) reach less on the same hardware.
STACK = "Megatron-Core with Transformer Engine"


# ---- Lab 05 -------------------------------------------------------------------------------------
def scaling_book_dp_tokens(cluster: Cluster) -> float:
    """The scaling book's data-parallel bound, B/X > C/W (jax-ml/scaling-book, training.md and
    gpus.md): tokens per GPU above which the backward pass's FLOPs at peak, C = the GPU's bf16
    FLOP/s, outlast the all-reduce of bf16 gradients over the node's egress at line rate, W =
    rails x NIC bandwidth. It assumes the reduction overlaps the backward perfectly and the
    GEMMs run at peak; below it the reduction can no longer hide."""
    return cluster.gpu.bf16_flops / (cluster.rails * cluster.inter.bandwidth_bytes_per_s)


def weak_scaling_price(gpus: int) -> dict:
    """What Act I's weak scaling buys and what it asks for at `gpus`: the batch it needs against
    the stakeholder's fixed one, and its throughput gain. The gain pays only if the bigger batch
    reaches the same loss in fewer than `throughput_ratio` times the tokens."""
    from labs.core.scenarios.lab05 import dp_wall_estimate

    strong, weak = dp_wall_estimate(gpus), dp_wall_estimate(gpus, fixed_per_gpu=True)
    seq = strong.model.seq_len
    return {
        "strong_tokens": strong.plan.global_batch * seq,
        "weak_tokens": weak.plan.global_batch * seq,
        "weak_sequences": weak.plan.global_batch,
        "batch_ratio": weak.plan.global_batch / strong.plan.global_batch,
        "throughput_ratio": weak.tokens_per_s / strong.tokens_per_s,
        "strong_mfu": strong.mfu,
        "weak_mfu": weak.mfu,
    }


def era_choices(era_name: str, field: str, labels: dict) -> dict:
    """A dropdown's {label: value} cut to the values the era allows, in the era's order (its
    default first): an instrument never offers a value its own setting refuses."""
    from labs.core.engine.eras import ERAS

    allowed = getattr(ERAS[era_name], field)
    by_value = {v: k for k, v in labels.items()}
    missing = [v for v in allowed if v not in by_value]
    if missing:
        raise ValueError(f"{field}: no label for the era's values {missing}")
    return {by_value[v]: v for v in allowed}


# ---- Lab 09 -------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def dp64_recompute(scenario: str = "70b-h100", micro_batch: int = 1) -> dict[str, Estimate]:
    """DP = 64 with ZeRO-3 for one of Lab 09's jobs under each recompute setting: the worksheet
    fixes selective recompute; full recompute is what FSDP recipes add to fit a 70B."""
    from labs.core.scenarios.lab09 import job, worksheet_plan

    model, cluster = job(scenario).inputs()
    base = worksheet_plan(1, 1, 3, micro_batch)
    return {mode: estimate(model, cluster, replace(base, recompute=mode)) for mode in ("none", "selective", "full")}


# ---- Lab 06 -------------------------------------------------------------------------------------
def table2_ring_unoverlapped(scheme: str, gpus: int) -> float:
    """Hardware TFLOP/s per GPU for a row of Narayanan et al. 2021 Table 2 with its data-parallel
    collectives on the ring and not overlapped: the engine's most pessimistic reading of the row."""
    from labs.core.engine.calibration import table2_estimate

    run = table2_estimate(scheme, gpus)
    return estimate(run.model, run.cluster, replace(run.plan, dp_algorithm="ring", dp_overlap=False)).hardware_tflops_per_gpu


def recompute_rows(model_key: str, gpu_key: str, dp: int, zero_stage: int, act, microbatches: int = 1) -> list[dict]:
    """The same data-parallel step under each recompute setting: what it keeps, whether it fits,
    and what it costs (MFU counts the model's FLOPs, HFU also the recomputed ones)."""
    from labs.core.engine.models import RECOMPUTE_MODES
    from labs.core.scenarios.lab06 import dp_estimate

    rows = []
    for mode in RECOMPUTE_MODES:
        e = dp_estimate(model_key, gpu_key, dp, zero_stage, replace(act, recompute=mode), microbatches=microbatches)
        rows.append({"recompute": mode, "activations": e.memory.activations, "memory": e.memory.total, "fits": e.fits,
                     "step": e.step_time_s, "mfu": e.mfu, "hfu": e.hfu})
    return rows


def hsdp_rows(model_key: str, gpu_key: str, dp: int, group: int, act, microbatches: int = 1) -> list[dict]:
    """ZeRO-3 over all `dp` GPUs against hybrid sharding (HSDP, Plan.shard_group_size): the state
    sharded over groups of `group` GPUs (whole servers) and replicated across the dp / group
    groups, so the weight gathers span `group` GPUs instead of all of them, and the gradients are
    reduce-scattered inside a group and all-reduced across the replicas."""
    from labs.core.scenarios.lab06 import dp_cluster, dp_plan, sized

    cluster = dp_cluster(gpu_key, dp)
    rows = []
    for label, g in (("ZeRO-3 over all GPUs", None), (f"HSDP: ZeRO-3 over {group}, {dp // group} replicas", group)):
        plan = replace(dp_plan(dp, 3, act, microbatches=microbatches), shard_group_size=g)
        e = estimate(sized(model_key, act), cluster, plan)
        by = {c.key: c for c in e.collectives}
        rows.append({"layout": label, "memory": e.memory.total, "model_state": e.memory.model_state, "fits": e.fits,
                     "collectives": [(f"{c.axis} {c.op}", c.sent_bytes, c.link, c.exposed_s) for c in by.values()],
                     "dp_exposed": e.time.dp_comm, "step": e.step_time_s, "mfu": e.mfu})
    return rows


# ---- Lab 11 -------------------------------------------------------------------------------------
def ep_bytes_by_link(est: Estimate) -> dict:
    """The expert all-to-all's bytes per GPU per step split by the link they cross: the NICs
    (one copy per other destination node) and NVLink (forwarding inside the node), from the
    engine's routing model (labs.core.engine.experts); zero when the plan has no expert parallelism."""
    from labs.core.engine.experts import all_to_all_network_share
    from labs.core.engine.layout import axis_strides

    ep = next((c for c in est.collectives if c.key == "ep"), None)
    if ep is None:
        return {"total": 0.0, "network": 0.0, "nvlink": 0.0, "network_share": 0.0, "network_link": est.cluster.inter.name, "nvlink_link": est.cluster.intra.name}
    p = est.plan
    stride = float(axis_strides(p.rank_order, p.tp, p.cp, p.dp, p.pp)["cp"])
    share = float(all_to_all_network_share(est.model, est.cluster, p.tp, p.ep, p.max_nodes_per_token or 0, stride))
    return {"total": ep.sent_bytes, "network": ep.sent_bytes * share, "nvlink": ep.sent_bytes * (1 - share), "network_share": share,
            "network_link": est.cluster.inter.name, "nvlink_link": est.cluster.intra.name}


# ---- Labs 11 and 13: sequence parallelism's bytes (review 38bda0b, M2) ------------------------------------
SP_PASS_COLLECTIVES = (("all_gather", 2), ("reduce_scatter", 2))  # per layer and pass: before QKV and FC1, after proj and FC2
SP_WGRAD_REGATHERS = (("all_gather", SP_BACKWARD_REGATHERS),)  # Megatron-Core/TE backward: the QKV and FC1 inputs again, for their weight gradients


def sp_regather(tp: int, nbytes: float = 1.0) -> dict:
    """Bytes each TP rank sends per layer (forward + backward) under sequence parallelism for an
    activation of `nbytes`: as Korthikanti et al. count it (an all-gather and a reduce-scatter of
    b s h per collective, the backward the forward's mirror), against Megatron-Core and Transformer
    Engine, which keep only the sequence shard of each column-parallel GEMM's input and all-gather
    it again in the backward for the weight gradient (LinearWithGradAccumulationAndAsyncCommunication;
    overlapped with the data-gradient GEMM), as the engine prices a dense layer
    (labs.core.engine.stages.parallel)."""
    from labs.core.engine.collectives import bytes_sent_per_rank

    def sent(ops):
        return sum(k * bytes_sent_per_rank(op, nbytes, tp) for op, k in ops)

    counted = 2 * sent(SP_PASS_COLLECTIVES)
    megatron = counted + sent(SP_WGRAD_REGATHERS)
    calls = 2 * sum(k for _, k in SP_PASS_COLLECTIVES)
    return {"counted": counted, "megatron": megatron, "ratio": megatron / counted,
            "calls": calls, "megatron_calls": calls + sum(k for _, k in SP_WGRAD_REGATHERS)}


# ---- the seeds, said once per lab (newcomer 38bda0b: "Seed 001/002" with no word of what they are) ----------
SEEDS = {
    "000": "a code-reading lab on a 64-GPU parallelism design, one of the texts these labs were written from",
    "001": "the course outline these labs were written from; its weeks 21-25 teach distributed training",
    "002": "a study page on distributed training for senior engineers, one of the texts these labs were written from",
}


def seed_named(number: str) -> str:
    """'Seed 001 (what it is)': a seed's name with its one-line description, for its first mention in a lab."""
    return f"Seed {number} ({SEEDS[number]})"
