"""estimate()'s compiled step model (labs.core.engine.stages.trace) gives the interpreted SCALAR path's
numbers: every output of labs.core.engine.step.evaluate, on plans of every stack, schedule, ZeRO stage,
recompute mode, rank order, CP kind, precision, offload, DP algorithm, dense and MoE models and
several clusters; plans whose compiled run raises go to numpy as SCALAR's do; no key falls back
to SCALAR for want of a trace; the cache serves every node count with one function."""

from __future__ import annotations

import dataclasses
import math
import runpy
from pathlib import Path

import numpy as np
import pytest

from labs.core import Cluster, Model
from labs.core.engine import search
from labs.core.engine.eras import stack_of
from labs.core.engine.memory import MemoryBreakdown
from labs.core.engine.collectives import CollectiveCost
from labs.core.engine.perf import CollectiveUse, Estimate, Plan, TimeBreakdown, estimate, plan_columns, validate
from labs.core.engine.plan import CP_ALGORITHMS, PLAN_SCHEDULES
from labs.core.engine.layout import RANK_ORDERS
from labs.core.engine.models import ALL_RECOMPUTE_MODES
from labs.core.engine.eras import ERA_NAMES
from labs.core.engine.stages import trace
from labs.core.engine.stages.xp import NUMPY, SCALAR
from labs.core.engine.step import evaluate, evaluate_plan
from labs.core.engine.topology import DP_ALGORITHMS

# the equivalence harness's combinations (model, cluster, nodes, global batch, era, fixed sweep
# options, DP algorithm) but two, then the DualPipe ones
SHARED = runpy.run_path(str(Path(__file__).resolve().parents[1] / "benchmarks" / "plan_combos.py"))
UNTESTED = {("llama3-405b", "meta-h100-roce"), ("seed-100m", "dgx-a100")}
COMBOS = [c for c in SHARED["COMBOS"] if c[:2] not in UNTESTED] + SHARED["DUALPIPE_COMBOS"]
KEYS_PER_COMBO = 16  # compiled functions tested per combination
PLANS_PER_KEY = 24  # plans (numeric columns varied) per compiled function


def _interpreted(model, cluster, columns, algorithm, stack):
    """The interpreted path: the stages on Python numbers (SCALAR), numpy where that raises."""
    try:
        return {k: float(v) for k, v in evaluate(model, cluster, columns, algorithm, stack, SCALAR).items()}
    except (ZeroDivisionError, OverflowError, ValueError):
        out = evaluate(model, cluster, {k: np.asarray([v]) for k, v in columns.items()}, algorithm, stack, NUMPY)
        return {k: float(v[0]) for k, v in out.items()}


def _relative(a: float, b: float) -> float:
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def _extras(base: dict, model, rng) -> dict:
    """Columns the sweep leaves at their defaults, drawn: offload, rank order, grad sync, FSDP
    resharding, recompute grains and layers, pipeline ends, group size, SP with TP overlap,
    capacity and node-limited routing, hybrid sharding, schedules, optimizer state, overlaps."""
    extra = {}
    r = rng.random
    if r() < 0.5:
        extra["rank_order"] = RANK_ORDERS[rng.integers(len(RANK_ORDERS))]
    if r() < 0.3 and base["zero_stage"] >= 1:
        extra["offload_optimizer"] = True
    if r() < 0.3:
        extra["grad_sync"] = ["step", "microbatch"][rng.integers(2)]
    if r() < 0.2 and base["zero_stage"] == 3:
        extra["reshard_after_forward"] = False
    if r() < 0.2:
        extra["recompute"] = ["ops", "norms_up_proj", "full"][rng.integers(3)]
    if r() < 0.3 and extra.get("recompute", base["recompute"]) == "full":
        extra["recompute_layers"] = int(rng.integers(0, 3))
    if r() < 0.2 and base["pp"] >= 3:
        extra["first_stage_layers"], extra["last_stage_layers"] = int(rng.integers(0, 2)), int(rng.integers(0, 2))
    if r() < 0.2 and base["schedule"] == "interleaved":
        extra["microbatch_group_size"] = 2 * int(base["pp"])
    if r() < 0.2 and base["tp"] > 1:
        extra.update(sequence_parallel=True, tp_comm_overlap=True)
    if r() < 0.2 and model.experts:
        extra["capacity_factor"], extra["max_nodes_per_token"] = 1.25, 4
    if r() < 0.2 and base["zero_stage"] >= 1 and (base["dp"] * base["cp"]) % 2 == 0:
        extra["shard_group_size"] = int(base["dp"] * base["cp"]) // 2
    if r() < 0.2 and base["pp"] > 1:
        extra["schedule"] = PLAN_SCHEDULES[rng.integers(len(PLAN_SCHEDULES))]
        extra["virtual_stages"] = 2 if extra["schedule"] == "interleaved" else 1
    if r() < 0.2:
        extra["optimizer_state"] = ["bf16-moments", "8bit"][rng.integers(2)]
    if r() < 0.2:
        extra.update(dp_overlap=bool(rng.integers(2)), pp_overlap=bool(rng.integers(2)), grad_reduce_dtype=["bf16", "fp32"][rng.integers(2)])
    if r() < 0.1:
        extra["bucket_bytes"] = 2.5e7
    return extra


def _key(plan: Plan) -> tuple:
    """The plan's compiled function's key, but for model, cluster, stack and DP algorithm."""
    columns = plan_columns(plan)
    return tuple((k, v if k not in trace.OPTIONAL_COLUMNS else v == trace.OPTIONAL_COLUMNS[k])
                 for k, v in columns.items() if k not in trace.NUMERIC_COLUMNS)


def _plans(combo, rng):
    """Valid plans of the combination: its plan space's rows with drawn extra columns, grouped by
    compiled function, the most populated keys first."""
    name, cluster_name, nodes, batch, era, fixed, algorithm = combo
    model, cluster = Model.get(name), Cluster.get(cluster_name, nodes=nodes)
    frame = search.plan_space(model, cluster, batch, era, **{k: v for k, v in fixed.items() if k in search.SWEPT})
    by_key: dict[tuple, list[Plan]] = {}
    for j in rng.permutation(len(frame))[:2500]:
        base = {k: (v.item() if hasattr(v, "item") else v) for k, v in frame.iloc[j].items() if k in Plan.__dataclass_fields__}
        fields = {**base, **{k: v for k, v in fixed.items() if k not in search.SWEPT}, **_extras(base, model, rng),
                  "dp_algorithm": algorithm, "stack": era}
        try:
            plan = Plan(**fields)
            validate(model, cluster, plan)
        except ValueError:
            continue
        for batch_scale in (1, 2, 3):  # the same compiled function at other global batches
            try:
                scaled = dataclasses.replace(plan, global_batch=plan.global_batch * batch_scale)
            except ValueError:
                continue
            by_key.setdefault(_key(scaled), []).append(scaled)
    keys = sorted(by_key, key=lambda k: -len(by_key[k]))[:KEYS_PER_COMBO]
    return model, cluster, [p for k in keys for p in by_key[k][:PLANS_PER_KEY]]


@pytest.fixture(autouse=True, scope="module")
def compile_at_once():
    """Every key compiled on its first call (estimate() waits for trace.COMPILE_AFTER calls)."""
    from labs.core.engine.step import COMPILED

    COMPILED.compile_after, saved = 0, COMPILED.compile_after
    yield
    COMPILED.compile_after = saved


@pytest.fixture(scope="module")
def tested():
    rng = np.random.default_rng(24)
    return [(model, cluster, plan) for combo in COMBOS for model, cluster, plans in [_plans(combo, rng)] for plan in plans]


def test_compiled_equals_interpreted(tested):
    untraced = trace.FALLBACKS["untraced_keys"]
    worst, worst_at, numpy_plans = 0.0, None, 0
    for model, cluster, plan in tested:
        columns, stack = plan_columns(plan), stack_of(plan.stack)
        before = trace.FALLBACKS["numpy_plans"]
        compiled = evaluate_plan(model, cluster, columns, plan.dp_algorithm, stack)
        numpy_plans += trace.FALLBACKS["numpy_plans"] - before
        interpreted = _interpreted(model, cluster, columns, plan.dp_algorithm, stack)
        assert compiled.keys() == interpreted.keys()
        assert all(type(v) is float for v in compiled.values()), plan
        for key, value in interpreted.items():
            error = _relative(compiled[key], value)
            if error > worst:
                worst, worst_at = error, (key, model.name, plan)
            assert error <= 1e-12, (key, compiled[key], value, model.name, plan)
    print(f"\n{len(tested)} plans on {len({(m.name, c.name, p.stack, p.dp_algorithm, _key(p)) for m, c, p in tested})} compiled "
          f"functions: worst relative difference {worst:.2g} {worst_at and worst_at[0]}; {numpy_plans} compiled runs fell back to numpy")
    assert trace.FALLBACKS["untraced_keys"] == untraced, "a key could not be traced: a stage uses Python control flow on a plan value"
    assert len(tested) >= 3000


def test_plans_span_every_choice(tested):
    """The compared plans cover each stack, schedule, ZeRO stage, recompute mode, rank order, CP
    algorithm, precision, offload, DP algorithm, dense and MoE models, and several clusters."""
    seen = lambda get: {get(m, c, p) for m, c, p in tested}  # noqa: E731
    assert seen(lambda m, c, p: p.stack) == set(ERA_NAMES) | {None}
    assert seen(lambda m, c, p: p.schedule) == set(PLAN_SCHEDULES)
    assert seen(lambda m, c, p: p.zero_stage) == {0, 1, 2, 3}
    assert seen(lambda m, c, p: p.recompute) == set(ALL_RECOMPUTE_MODES)
    assert seen(lambda m, c, p: p.rank_order) == set(RANK_ORDERS)
    assert seen(lambda m, c, p: p.cp_algorithm if p.cp > 1 else None) == set(CP_ALGORITHMS) | {None}
    assert seen(lambda m, c, p: p.precision) == {"bf16", "fp8"}
    assert seen(lambda m, c, p: p.offload_optimizer) == {True, False}
    assert seen(lambda m, c, p: p.dp_algorithm) == set(DP_ALGORITHMS)
    assert seen(lambda m, c, p: bool(m.experts)) == {True, False}
    assert len(seen(lambda m, c, p: c.name)) >= 6


def test_a_compiled_run_that_raises_goes_to_numpy():
    """No plan Plan and validate() accept divides by zero in the taken branches any more (the last
    one, a ZeRO-3 pipeline end holding no layer, is tested in test_bad_input). Columns no Plan
    makes still must not crash the step model: with dp = 0 the compiled run divides by zero, goes
    to numpy, is counted, and gives the interpreted numbers (nan where numpy has it)."""
    model, cluster = Model.get("seed-12l-512"), Cluster.get("dgx-h100", nodes=2)
    for zero_stage in (0, 3):
        plan = Plan(tp=1, pp=8, dp=2, micro_batch=1, global_batch=64, zero_stage=zero_stage)
        columns = {**plan_columns(plan), "dp": 0}
        with pytest.raises(ZeroDivisionError):
            evaluate(model, cluster, columns, "auto", stack_of(None), SCALAR)
        before = trace.FALLBACKS["numpy_plans"]
        with np.errstate(all="ignore"):
            compiled = evaluate_plan(model, cluster, columns, "auto", stack_of(None))
            interpreted = _interpreted(model, cluster, columns, "auto", stack_of(None))
        assert trace.FALLBACKS["numpy_plans"] == before + 1
        assert all(_relative(compiled[k], v) <= 1e-12 for k, v in interpreted.items()), zero_stage


def test_untraceable_stage_falls_back_to_scalar():
    """Python control flow on a plan value cannot be traced: the node refuses bool(), the key is
    counted and runs SCALAR, with SCALAR's numbers."""
    def branching(model, cluster, c, dp_algorithm, stack, xp, collectives=True):
        if c["tp"] > 1:  # a stage that branches on a plan value
            pass
        return evaluate(model, cluster, c, dp_algorithm, stack, xp, collectives)

    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-h100", nodes=16)
    plan = Plan(tp=8, pp=4, dp=4, micro_batch=1, global_batch=512)
    with pytest.raises(trace.TraceError):
        bool(trace.Graph().input("tp") > 1)
    cache, before = trace.StepCache(branching, compile_after=0), trace.FALLBACKS["untraced_keys"]
    assert cache.lookup(model, cluster, plan_columns(plan), "auto", stack_of(None)) is None
    assert trace.FALLBACKS["untraced_keys"] == before + 1


def test_one_function_serves_every_node_count():
    """The node count is no part of the key (the stages never read it): a GPU slider that builds
    a new Cluster per move reuses the function, with SCALAR's numbers at every size."""
    model = Model.get("llama2-70b")
    cache = trace.StepCache(evaluate, compile_after=0)
    for nodes in (4, 8, 16, 32, 64):
        cluster = Cluster.get("dgx-h100", nodes=nodes)
        plan = Plan(tp=8, pp=4, dp=nodes * 2, micro_batch=1, global_batch=1024)
        columns = plan_columns(plan)
        step, inputs_of = cache.lookup(model, cluster, columns, "auto", stack_of(None))
        assert step(*inputs_of(columns)) == _interpreted(model, cluster, columns, "auto", stack_of(None))
    assert cache.compiled == 1


def test_a_key_is_compiled_after_its_first_calls():
    """Plans seen a few times run SCALAR (tracing and compiling costs ~100 estimates); the call
    after the first `compile_after` of one key compiles its function, which later calls reuse."""
    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-h100", nodes=16)
    cache = trace.StepCache(evaluate, compile_after=3)
    columns = [plan_columns(Plan(tp=8, pp=pp, dp=16 // pp, micro_batch=1, global_batch=512)) for pp in (1, 2, 4, 8, 16)]
    found = [cache.lookup(model, cluster, c, "auto", stack_of(None)) for c in columns]
    assert found[:3] == [None] * 3 and found[3] is not None and found[4] is found[3] and cache.compiled == 1
    assert trace.COMPILE_AFTER >= 8  # estimate()'s default: a one-off plan never pays a compilation


def test_a_key_is_counted_by_value():
    """A lab that builds its Cluster anew on every run (Cluster.get returns a new object) still
    reaches its key's compilation: the calls are counted by the key's value, not by the objects."""
    model = Model.get("gpt3-175b")
    cache = trace.StepCache(evaluate, compile_after=3)
    columns = plan_columns(Plan(tp=8, pp=2, dp=8, micro_batch=1, global_batch=512))
    clusters = [Cluster.get("dgx-h100", nodes=16) for _ in range(5)]
    assert len({id(c) for c in clusters}) == 5
    found = [cache.lookup(model, c, columns, "auto", stack_of(None)) for c in clusters]
    assert found[:3] == [None] * 3 and found[3] is not None and found[4] is found[3] and cache.compiled == 1


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


def test_a_constant_changed_at_run_time_runs_interpreted():
    """A compiled function keeps the module constants it was traced with; code that changes one
    between calls (the calibration's fit) runs inside COMPILED.interpreted() and sees it."""
    from labs.core.engine import gemm
    from labs.core.engine.step import COMPILED

    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-a100", nodes=16)
    plan = Plan(tp=8, pp=4, dp=4, micro_batch=1, global_batch=512)
    columns, stack = plan_columns(plan), stack_of(None)
    before = evaluate_plan(model, cluster, columns, "auto", stack)
    saved = gemm.LAYER_GEMM_SHARE
    try:
        gemm.LAYER_GEMM_SHARE = 0.5
        with COMPILED.interpreted():
            slower = evaluate_plan(model, cluster, columns, "auto", stack)
        assert slower == _interpreted(model, cluster, columns, "auto", stack)
        assert slower["compute_s"] > 1.5 * before["compute_s"]
    finally:
        gemm.LAYER_GEMM_SHARE = saved
    assert evaluate_plan(model, cluster, columns, "auto", stack) == before
