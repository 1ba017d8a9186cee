"""Python time of a slider-driven re-run of each lab's heaviest cell, and of exporting the lab.

    python benchmarks/bench_labs.py

Targets: under 100 ms for a re-run of the flagship lab's heaviest cell; the pipeline lab's
64 stages x 256 micro-batches timeline built and drawn in under 300 ms.
"""

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from labs.core.perf import Plan, estimate
from labs.core.charts import timeline_figure
from labs.core.pipeline import timeline
from labs.core.scenarios import DP_WALL_GLOBAL_BATCH, design_inputs, dp_wall_curve, dp_wall_estimate

ROOT = Path(__file__).resolve().parents[1]


def act1_rerun(gpus: int) -> None:
    """What the Act I cells do when the GPU slider moves: the whole curve and the current point."""
    inputs = dict(gpus=gpus, global_batch=DP_WALL_GLOBAL_BATCH, fixed_per_gpu=False, fabric="ib-ndr", algorithm="ring", overlap=True, params_b=7)
    dp_wall_curve(inputs)
    dp_wall_estimate(**inputs)


def act2_rerun(tp: int) -> None:
    """What the Act II cells do when the TP dropdown moves: the estimate and the timeline preview."""
    model, cluster = design_inputs()
    est = estimate(model, cluster, Plan(tp=tp, pp=8, dp=1024 // (tp * 8), micro_batch=1, global_batch=1536, zero_stage=1, recompute="selective", sequence_parallel=tp > 1, flash_attention=True))
    timeline(est.plan.pp, min(est.plan.microbatches, 4 * est.plan.pp), est.plan.schedule)


def timed(fn, values) -> float:
    fn(values[0])
    runs = []
    for v in values * 3:
        start = time.perf_counter()
        fn(v)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def main() -> None:
    a1 = timed(act1_rerun, [64, 128, 256])
    a2 = timed(act2_rerun, [4, 8, 2])
    print(f"05_parallelism Act I re-run (curve of 7 points + current): {a1 * 1e3:.1f} ms; target 100 ms: {a1 / 0.1:.2f} of the budget")
    print(f"05_parallelism Act II re-run (estimate + timeline preview): {a2 * 1e3:.1f} ms; target 100 ms: {a2 / 0.1:.2f} of the budget")
    for schedule in ("1f1b", "zb-h1"):
        big = timed(lambda s: timeline_figure(timeline(64, 256, s)), [schedule])
        print(f"07_pipeline_visualizer 64 x 256 {schedule} timeline, built and drawn: {big * 1e3:.0f} ms; target 300 ms: {big / 0.3:.2f} of the budget")
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "marimo", "export", "html", str(ROOT / "labs" / "05_parallelism.py"), "-o", f"{out}/lab.html"], check=True, capture_output=True, cwd=ROOT)
        print(f"05_parallelism export html: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
