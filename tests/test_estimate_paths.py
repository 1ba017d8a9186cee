"""estimate() is the step model on one plan's Python numbers (labs.core.engine.step.evaluate_plan,
SCALAR), with numpy for a plan whose Python evaluation divides by zero; no generated code, so a
module constant changed at run time is read on the next call."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from labs.core import Cluster, Model
from labs.core.engine import step
from labs.core.engine.collectives import CollectiveCost
from labs.core.engine.eras import stack_of
from labs.core.engine.memory import MemoryBreakdown
from labs.core.engine.perf import CollectiveUse, Estimate, Plan, TimeBreakdown, estimate, plan_columns
from labs.core.engine.stages.xp import NUMPY, SCALAR
from labs.core.engine.step import evaluate, evaluate_plan


def _relative(a: float, b: float) -> float:
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def test_a_plan_that_divides_by_zero_goes_to_numpy():
    """No plan Plan and validate() accept divides by zero in the taken branches (the last one, a
    ZeRO-3 pipeline end holding no layer, is tested in test_bad_input). Columns no Plan makes
    still must not crash the step model: with dp = 0 SCALAR divides by zero, the plan runs as a
    numpy row, is counted, and gives numpy's numbers (nan where numpy has it)."""
    model, cluster = Model.get("seed-12l-512"), Cluster.get("dgx-h100", nodes=2)
    for zero_stage in (0, 3):
        plan = Plan(tp=1, pp=8, dp=2, micro_batch=1, global_batch=64, zero_stage=zero_stage)
        columns = {**plan_columns(plan), "dp": 0}
        with pytest.raises(ZeroDivisionError):
            evaluate(model, cluster, columns, "auto", stack_of(None), SCALAR)
        before = step.FALLBACKS["numpy_plans"]
        with np.errstate(all="ignore"):
            one = evaluate_plan(model, cluster, columns, "auto", stack_of(None))
            row = evaluate(model, cluster, {k: np.asarray([v]) for k, v in columns.items()}, "auto", stack_of(None), NUMPY)
        assert step.FALLBACKS["numpy_plans"] == before + 1
        assert all(_relative(one[k], float(v[0])) == 0.0 for k, v in row.items()), zero_stage


def test_estimate_parts_equal_their_constructors():
    """perf builds the Estimate and its parts without their dataclass __init__ (perf._new): each
    holds exactly its fields and equals the instance its constructor builds."""
    model, cluster = Model.get("llama3-70b"), Cluster.get("dgx-h100", nodes=16)
    for plan in (Plan(tp=8, pp=2, dp=8, micro_batch=1, global_batch=512, cp=1, offload_optimizer=True, zero_stage=1),
                 Plan(tp=4, pp=4, dp=4, cp=2, micro_batch=1, global_batch=512, schedule="interleaved", virtual_stages=2)):
        e = estimate(model, cluster, plan)
        for part in (e, e.time, e.memory, e.dp_comm_cost, *e.collectives):
            cls = type(part)
            assert "__post_init__" not in vars(cls)
            assert set(vars(part)) == {f.name for f in dataclasses.fields(cls)}
            assert dataclasses.replace(part) == part
    assert {Estimate, TimeBreakdown, MemoryBreakdown, CollectiveCost, CollectiveUse} >= {type(e), type(e.time), type(e.memory), type(e.dp_comm_cost)}


def test_a_constant_changed_at_run_time_is_read_on_the_next_call():
    """The calibration's fit changes module constants between calls: estimate() reads them each
    call (halving the GEMMs' share of peak makes compute at least 1.5x slower), and the old value
    gives the old numbers back, to the bit."""
    from labs.core.engine import gemm

    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-a100", nodes=16)
    columns, stack = plan_columns(Plan(tp=8, pp=4, dp=4, micro_batch=1, global_batch=512)), stack_of(None)
    before = evaluate_plan(model, cluster, columns, "auto", stack)
    saved = gemm.LAYER_GEMM_SHARE
    try:
        gemm.LAYER_GEMM_SHARE = 0.5
        slower = evaluate_plan(model, cluster, columns, "auto", stack)
        assert slower["compute_s"] > 1.5 * before["compute_s"]
    finally:
        gemm.LAYER_GEMM_SHARE = saved
    assert evaluate_plan(model, cluster, columns, "auto", stack) == before
