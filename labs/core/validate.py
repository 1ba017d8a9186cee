"""`python -m labs.core.validate`: the engine against every public run, then its own picks.

Prints predicted vs published TFLOP/s per GPU for each row of tests/data (hardware FLOPs for
Narayanan et al. 2021, model FLOPs for Korthikanti et al. 2022) with the error, and the plan the
sweep recommends for three real jobs.
"""

from __future__ import annotations

from labs.core.calibration import public_runs
from labs.core.hardware import Cluster
from labs.core.models import Model
from labs.core.search import sweep

RECOMMEND = (
    ("gpt3-175b", "dgx-h100", 128, 1536),
    ("llama3-405b", "dgx-h100", 2048, 2048),
    ("llama3-70b", "dgx-h100", 8, 128),
)


def calibration_table() -> list[tuple[str, str, float, float, float]]:
    return [(row.id, row.metric, row.predicted(), row.published, row.error()) for row in public_runs()]


def main() -> None:
    print(f"{'row':42s} {'metric':24s} {'engine':>8s} {'paper':>8s} {'error':>7s}")
    for rid, metric, predicted, published, error in calibration_table():
        print(f"{rid:42s} {metric:24s} {predicted:8.1f} {published:8.1f} {error:+7.1%}")
    print()
    for key, cluster_key, nodes, batch in RECOMMEND:
        model, cluster = Model.get(key), Cluster.get(cluster_key, nodes=nodes)
        best = sweep(model, cluster, global_batch=batch, flash_attention=True).iloc[0]
        print(
            f"{model.name} on {cluster.gpus} {cluster.gpu.name}, batch {batch}: tp={best.tp} pp={best.pp} dp={best.dp} "
            f"cp={best.cp} mb={best.micro_batch} zero={best.zero_stage} recompute={best.recompute} sp={best.sequence_parallel} "
            f"{best.schedule} v={best.virtual_stages}: MFU {best.mfu:.1%}, bubble {best.bubble_fraction:.1%}, "
            f"{best.memory_bytes / 1e9:.1f} GB/GPU"
        )


if __name__ == "__main__":
    main()
