"""Plans per second: sweep() against a loop of estimate() over the same plans, in one run.

    python benchmarks/bench_sweep.py

Targets: the whole 530B space on 2240 A100s in under 1 s, at least 50x the loop. The sweep
time is the median of five sweeps after one warm-up; the loop is timed on up to ~2,300 plans.
"""

import statistics
import time

from labs.core import Cluster, Model, estimate
from labs.core.search import plan_space, row_plan, sweep

CASES = (
    ("GPT-3 175B on 1024 H100", Model.get("gpt3-175b"), Cluster.get("dgx-h100", nodes=128), 1536),
    ("530B on 2240 A100", Model("MT-NLG 530B", 105, 20480, 128, 2048, 51200), Cluster.get("dgx-a100", nodes=280), 2240),
)


def main() -> None:
    for name, model, cluster, batch in CASES:
        df = sweep(model, cluster, global_batch=batch)  # warm-up
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            sweep(model, cluster, global_batch=batch)
            runs.append(time.perf_counter() - start)
        vector_s = statistics.median(runs)
        plans = [row_plan(r) for r in plan_space(model, cluster, batch).to_dict("records")]
        sample = plans[:: max(1, len(plans) // 2000)]
        start = time.perf_counter()
        for plan in sample:
            estimate(model, cluster, plan)
        loop_per_plan = (time.perf_counter() - start) / len(sample)
        print(
            f"{name}: {len(df)} plans in {vector_s * 1e3:.0f} ms ({len(df) / vector_s:,.0f} plans/s); "
            f"estimate() loop {1 / loop_per_plan:,.0f} plans/s (timed on {len(sample)}); "
            f"speed-up {loop_per_plan * len(df) / vector_s:.0f}x"
        )


if __name__ == "__main__":
    main()
