"""Numbers the labs' prose states beside their predictions, each computed by the engine, so that
tests/test_review_fixes.py can pin every statement to the number it rests on.

Nothing here is graded: the predictions and their keys stay in labs/core/scenarios/labNN.py.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from labs.core.hardware import Cluster
from labs.core.perf import Estimate, estimate

# The software stack the engine's absolute MFUs describe: its GEMM rates are cuBLAS matmul
# microbenchmarks (MAMF), with flash attention, Transformer Engine's TP overlap and Megatron-Core's
# distributed optimizer and bucketed reductions (labs.core.eras, "megatron-core-2024"). Other
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
    from labs.core.eras import ERAS

    allowed = getattr(ERAS[era_name], field)
    by_value = {v: k for k, v in labels.items()}
    missing = [v for v in allowed if v not in by_value]
    if missing:
        raise ValueError(f"{field}: no label for the era's values {missing}")
    return {by_value[v]: v for v in allowed}


# ---- Lab 09 -------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def dp64_recompute(scenario: str = "70b-h100") -> dict[str, Estimate]:
    """DP = 64 with ZeRO-3 for one of Lab 09's jobs under each recompute setting: the worksheet
    fixes selective recompute; full recompute is what FSDP recipes add to fit a 70B."""
    from labs.core.scenarios.lab09 import job, worksheet_plan

    model, cluster = job(scenario).inputs()
    base = worksheet_plan(1, 1, 3)
    return {mode: estimate(model, cluster, replace(base, recompute=mode)) for mode in ("none", "selective", "full")}
