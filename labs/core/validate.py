"""`python -m labs.core.validate`: the engine against every public run, then its own picks.

For each row of tests/data (hardware FLOPs for Narayanan et al. 2021, model FLOPs for
Korthikanti et al. 2022) it prints the engine at the published settings and the best plan the
sweep finds within the run's era: the best should sit at or somewhat above the published figure
(far above would mean the engine believes in free lunches). Then the plans it recommends for
three modern jobs, in the era of their software.
"""

from __future__ import annotations

from labs.core.calibration import BEYOND_ENGINE, public_runs
from labs.core.hardware import Cluster
from labs.core.models import Model
from labs.core.search import sweep

RECOMMEND = (
    # model, cluster, nodes, global batch (sequences), era
    ("gpt3-175b", "dgx-h100", 128, 1536, "megatron-core-2024"),
    ("llama3-70b", "dgx-h100", 8, 128, "megatron-core-2024"),
    ("llama3-405b", "meta-h100-roce", 2048, 2048, "llama3-2024"),  # Meta's 16M tokens: 2,048 x 8,192
)


def calibration_table() -> list[dict]:
    out = []
    for row in public_runs():
        best = sweep(row.model, row.cluster, global_batch=row.plan.global_batch, era=row.era).iloc[0]
        same = sweep(row.model, row.cluster, global_batch=row.plan.global_batch, era=row.era, recompute=row.plan.recompute).iloc[0]
        est = row.predict()
        engine = getattr(est, row.metric)
        out.append({
            "id": row.id, "metric": row.metric, "era": row.era, "published": row.published,
            "engine": engine, "error": row.error(),
            # the best plan's speed in the row's units: the published plan's FLOPs at the best plan's step time
            "era_best": engine * est.step_time_s / float(best.step_time_s), "best": best,
            "same_recompute": engine * est.step_time_s / float(same.step_time_s),
        })
    return out


def describe(best) -> str:
    return (
        f"tp={best.tp} pp={best.pp} dp={best.dp} cp={best.cp} mb={best.micro_batch} zero={best.zero_stage} "
        f"recompute={best.recompute} sp={best.sequence_parallel} {best.schedule} v={best.virtual_stages}"
    )


def main() -> None:
    print(f"{'row':40s} {'era':19s} {'paper':>7s} {'engine':>7s} {'error':>7s} {'era best':>9s} {'same rc':>8s}  best plan in the era")
    for r in calibration_table():
        flag = "  (beyond the engine: see calibration.BEYOND_ENGINE)" if r["id"] in BEYOND_ENGINE else ""
        print(f"{r['id']:40s} {r['era']:19s} {r['published']:7.1f} {r['engine']:7.1f} {r['error']:+7.1%} {r['era_best']:9.1f} {r['same_recompute']:8.1f}  {describe(r['best'])}{flag}")
    print(
        "\nTFLOP/s per GPU in each row's own convention (hardware FLOPs with full recompute for Narayanan 2021, model FLOPs"
        "\nfor Korthikanti 2022). 'era best' is the same work done at the step time of the best plan the era allowed;\n"
        "'same rc' the best plan that keeps the published run's recomputation.\n"
    )
    for key, cluster_key, nodes, batch, era in RECOMMEND:
        model, cluster = Model.get(key), Cluster.get(cluster_key, nodes=nodes)
        best = sweep(model, cluster, global_batch=batch, era=era).iloc[0]
        print(
            f"{model.name} on {cluster.gpus:,} {cluster.gpu.name} ({era}), batch {batch} x {model.seq_len}: {describe(best)}: "
            f"MFU {best.mfu:.1%}, bubble {best.bubble_fraction:.1%}, {best.memory_bytes / 1e9:.1f} GB/GPU"
        )


if __name__ == "__main__":
    main()
