"""sweep(): agrees with estimate() row by row, restricts on request, orders best first."""

import numpy as np
import pytest

from labs.core import Cluster, Model, estimate, sweep
from labs.core.engine.search import row_plan

CASES = [
    ("gpt3-175b", "dgx-h100", 128, 1536, {"flash_attention": True}),
    ("gpt3-175b", "dgx-a100", 48, 1536, {"dp_algorithm": "tree", "flash_attention": False}),
    ("llama3-70b", "dgx-h100", 8, 128, {"flash_attention": True, "dp_overlap": False}),
    ("llama2-7b", "dgx-h100", 8, 64, {}),
]
COLUMNS = ("step_time_s", "memory_bytes", "mfu", "hfu", "bubble_fraction", "model_tflops_per_gpu")


@pytest.mark.parametrize("key, cluster_key, nodes, batch, fixed", CASES)
def test_vectorised_rows_equal_estimate(key, cluster_key, nodes, batch, fixed):
    model, cluster = Model.get(key), Cluster.get(cluster_key, nodes=nodes)
    df = sweep(model, cluster, global_batch=batch, **fixed)
    rng = np.random.default_rng(7)
    worst = 0.0
    for i in rng.choice(len(df), size=min(150, len(df)), replace=False):
        row = df.iloc[i]
        plan = row_plan(row)
        est = estimate(model, cluster, plan)
        got = dict(step_time_s=est.step_time_s, memory_bytes=est.memory.total, mfu=est.mfu, hfu=est.hfu,
                   bubble_fraction=est.bubble_fraction, model_tflops_per_gpu=est.model_tflops_per_gpu)
        for col in COLUMNS:
            worst = max(worst, abs(row[col] - got[col]) / max(abs(got[col]), 1e-12))
        assert bool(row["fits"]) == est.fits
    print(f"{key}: {len(df)} plans, worst relative disagreement {worst:.1e}")
    assert worst < 1e-9


def test_sorted_best_first_and_pareto_marked():
    df = sweep(Model.get("gpt3-175b"), Cluster.get("dgx-h100", nodes=128), global_batch=1536, flash_attention=True)
    fit = df[df.fits]
    assert df.fits.iloc[0] and (fit.step_time_s.diff().dropna() >= 0).all()
    front = fit[fit.pareto]
    assert len(front) >= 2 and front.memory_bytes.is_monotonic_decreasing


def test_fixed_fields_restrict_the_space():
    df = sweep(Model.get("gpt3-175b"), Cluster.get("dgx-h100", nodes=128), global_batch=1536, tp=[4, 8], zero_stage=1, schedule="1f1b")
    assert set(df.tp) == {4, 8} and set(df.zero_stage) == {1} and set(df.schedule) == {"1f1b"}


def test_unknown_field_is_named():
    with pytest.raises(ValueError, match="tensor_parallel"):
        sweep(Model.get("llama2-7b"), Cluster.get("dgx-h100", nodes=1), global_batch=8, tensor_parallel=2)
