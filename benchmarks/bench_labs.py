"""Python time of a slider-driven re-run of each lab's heaviest cell, and of exporting the lab.

    python benchmarks/bench_labs.py

Targets: under 100 ms for a re-run of the flagship lab's heaviest cell and for the ZeRO
lab's heaviest slider (accumulation: both placements' stage costs, offload, myths); the
pipeline lab's 64 stages x 256 micro-batches timeline built and drawn in under 300 ms.
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
from labs.core.scenarios.lab05 import DP_WALL_GLOBAL_BATCH, design_inputs, dp_wall_curve, dp_wall_estimate
from labs.core import charts
import plotly.io as pio
from labs.core.scenarios.lab06 import DP_SIZES, Activations, dp_estimate, fewest_gpus, memory_curves, stage_costs, traffic_ratio

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


def zero_dp_rerun(dp: int) -> None:
    """What Lab 06 recomputes when the data-parallel slider moves: curves, the current
    estimate, the fewest GPUs, the sweep figure, and the offload comparison."""
    act = Activations(1, 4096, "full", True)
    curves = memory_curves("llama2-70b", act)
    est = dp_estimate("llama2-70b", "h100-sxm", dp, 3, act)
    fewest_gpus("llama2-70b", "h100-sxm", 3, act)
    charts.zero_sweep(DP_SIZES, curves, [("H100", 80e9, True)], (dp, est.memory.total))
    dp_estimate("llama2-70b", "h100-sxm", dp, 3, act, offload=True)


def zero_accumulation_rerun(m: int) -> None:
    """What Lab 06 recomputes when the accumulation slider moves: eight stage costs and their
    figure, the offload comparison, and the myths' traffic ratios."""
    act = Activations(1, 4096, "full", True)
    costs = {p: stage_costs("llama2-70b", "h100-sxm", 8, act, m, p) for p in ("packed", "spread")}
    charts.stage_step_times(costs)
    for offload in (False, True):
        dp_estimate("llama2-70b", "h100-sxm", 8, 3, act, offload=offload, microbatches=m)
    traffic_ratio(3, 0, 1), traffic_ratio(3, 0, m)


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
    z1 = timed(zero_dp_rerun, [16, 32, 64])
    z2 = timed(zero_accumulation_rerun, [2, 4, 8])
    print(f"06_zero_sweep DP slider re-run (curves, estimate, fewest GPUs, figure, offload): {z1 * 1e3:.1f} ms; target 100 ms: {z1 / 0.1:.2f} of the budget")
    print(f"06_zero_sweep accumulation re-run (8 stage costs + figure, offload, myths): {z2 * 1e3:.1f} ms; target 100 ms: {z2 / 0.1:.2f} of the budget")
    for schedule in ("1f1b", "zb-h1"):
        big = timed(lambda s: timeline_figure(timeline(64, 256, s)), [schedule])
        print(f"07_pipeline_visualizer 64 x 256 {schedule} timeline, built and drawn: {big * 1e3:.0f} ms; target 300 ms: {big / 0.3:.2f} of the budget")
    t = timeline(64, 256, "interleaved", 4)
    fig = timeline_figure(t)
    bars = timed(lambda f: pio.to_json(charts.timeline_figure(t, raster=False)), [0])
    step = timed(lambda f: pio.to_json(charts.play_marker(fig, t, f * t.makespan)), [0.5, 0.6, 0.7])
    print(f"07_pipeline_visualizer play step at 64 x 256, v=4 (marker + figure JSON): {step * 1e3:.1f} ms; "
          f"one box per op instead, rebuilt: {bars * 1e3:.0f} ms ({bars / step:.0f}x)")
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "marimo", "export", "html", str(ROOT / "labs" / "05_parallelism.py"), "-o", f"{out}/lab.html"], check=True, capture_output=True, cwd=ROOT)
        print(f"05_parallelism export html: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
