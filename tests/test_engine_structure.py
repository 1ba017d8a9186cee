"""The step model's two paths agree: estimate() runs the stages on one plan's Python numbers,
sweep() on numpy columns (labs.core.engine.stages.xp), and both must give the same numbers."""

from __future__ import annotations

import numpy as np
import pytest

from labs.core import Cluster, Model, estimate, sweep
from labs.core.engine.eras import stack_of
from labs.core.engine.perf import plan_columns
from labs.core.engine.search import row_plan
from labs.core.engine.stages.xp import SCALAR
from labs.core.engine.step import evaluate, evaluate_plan

# Plan spaces across models, clusters and software stacks; each sweep row is rebuilt as a Plan
# and estimated on its own.
SPACES = [
    ("gpt3-175b", "dgx-a100", 128, 1536, "megatron-2021", {}),
    ("gpt3-175b", "dgx-a100", 96, 1536, "deepspeed-2021", {}),
    ("gpt3-175b", "dgx-h100", 64, 1024, "megatron-core-2024", {"precision": "fp8"}),
    ("llama2-7b", "dgx-a100", 4, 256, "pytorch-fsdp1-2023", {}),
    ("llama2-70b", "dgx-h100", 32, 1024, "pytorch-fsdp2-2024", {"dp_algorithm": "ring"}),
    ("llama3-8b", "dgx-h100", 8, 512, None, {"cp_algorithm": "ulysses", "dp_algorithm": "tree"}),
    ("llama3-405b", "meta-h100-roce", 256, 2048, "llama3-2024", {"cp_algorithm": "all_gather"}),
    ("deepseek-v3", "h800-ib", 256, 4096, None, {"precision": "fp8"}),
]
COMPARED = ("step_time_s", "memory_bytes", "bubble_fraction", "mfu", "hfu", "dp_comm_exposed_s", "dp_comm_latency_s")


def _relative(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


@pytest.mark.parametrize("space", SPACES, ids=[f"{s[0]}-{s[4]}" for s in SPACES])
def test_estimate_equals_sweep(space):
    """estimate() (the scalar path) gives the numbers sweep() (numpy columns) gives, row by row."""
    name, cluster_name, nodes, batch, era, fixed = space
    model, cluster = Model.get(name), Cluster.get(cluster_name, nodes=nodes)
    frame = sweep(model, cluster, batch, era=era, **fixed)
    rows = frame.iloc[np.random.default_rng(0).permutation(len(frame))[:400]]
    worst = 0.0
    for _, row in rows.iterrows():
        plan = row_plan(row)
        e = estimate(model, cluster, plan)
        got = {"step_time_s": e.step_time_s, "memory_bytes": e.memory.total, "bubble_fraction": e.bubble_fraction, "mfu": e.mfu, "hfu": e.hfu,
               "dp_comm_exposed_s": e.time.dp_comm, "dp_comm_latency_s": e.dp_exposed_latency_s}
        for key in COMPARED:
            worst = max(worst, _relative(got[key], float(row[key])))
            assert got[key] == pytest.approx(float(row[key]), rel=1e-12, abs=1e-300), (key, plan)
    print(f"{name} {era}: {len(rows)} plans, worst relative difference {worst:.2g}")


def test_scalar_and_numpy_paths_agree_on_every_output():
    """Every number evaluate returns, on plans that vary every column (offload, rank order,
    hybrid sharding, grad_sync, recompute grains, schedules), on one plan's numbers and as a
    numpy column of many."""
    from labs.core.engine.perf import Plan

    model, cluster = Model.get("llama3-70b"), Cluster.get("dgx-h100", nodes=16)
    rng = np.random.default_rng(1)
    plans = []
    for _ in range(600):
        tp, pp = int(rng.choice([1, 2, 4, 8])), int(rng.choice([1, 2, 4, 8]))
        dp = 128 // (tp * pp)
        fields = dict(tp=tp, pp=pp, dp=dp, micro_batch=int(rng.choice([1, 2])), global_batch=512, zero_stage=int(rng.integers(0, 4)),
                      recompute=str(rng.choice(["none", "selective", "full", "ops", "norms_up_proj"])),
                      rank_order=str(rng.choice(["tp-cp-dp-pp", "tp-pp-cp-dp", "cp-dp-tp-pp"])), stack=rng.choice([None, "pytorch-fsdp2-2024"]),
                      dp_algorithm=str(rng.choice(["auto", "ring", "tree", "nvls"])))
        if fields["zero_stage"] and rng.random() < 0.3:
            fields["offload_optimizer"] = True
        if fields["zero_stage"] and rng.random() < 0.3:
            fields["shard_group_size"] = dp // 2 if dp > 1 else 1
        if pp > 1 and rng.random() < 0.4:
            fields["schedule"] = str(rng.choice(["gpipe", "zb-h1"]))
        if rng.random() < 0.3 and not fields.get("offload_optimizer"):
            fields["grad_sync"] = str(rng.choice(["step", "microbatch"]))
        try:
            plans.append(Plan(**fields))
        except ValueError:
            continue
    by_stack = {}
    for plan in plans:
        by_stack.setdefault((plan.stack, plan.dp_algorithm), []).append(plan)
    compared = 0
    for (stack, algorithm), group in by_stack.items():
        columns = [plan_columns(p) for p in group]
        vector = evaluate(model, cluster, {k: np.array([c[k] for c in columns]) for k in columns[0]}, algorithm, stack_of(stack))
        for i, c in enumerate(columns):
            one = evaluate(model, cluster, c, algorithm, stack_of(stack), SCALAR)
            for key, value in vector.items():
                assert float(one[key]) == pytest.approx(float(value[i]), rel=1e-12, abs=1e-300), (key, group[i])
            assert evaluate_plan(model, cluster, c, algorithm, stack_of(stack)) == {k: float(v) for k, v in one.items()}
            compared += 1
    assert compared > 300
