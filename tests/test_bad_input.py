"""Bad input is refused where it enters, by name; valid input never gives NaN, inf, a negative or
an MFU above 1.

Every public function of the engine, and every fixed argument of sweep(), is fed bad values of
each argument: counts that are zero, negative, fractional, floats, NaN, inf, huge, booleans,
strings or None; byte sizes that are negative, NaN, inf or not numbers; unknown choices; flags
that are not booleans; objects of the wrong kind. Each must raise ValueError whose message names
the argument (never TypeError, ZeroDivisionError, OverflowError, KeyError, AttributeError or
MemoryError). Sizes that cannot be built in reasonable time or memory are refused by name. Then
random valid inputs must give finite, non-negative outputs and 0 < MFU <= HFU <= 1.

Each bad value runs twice: a fixed list of the classic bad values (test_listed_*), and random
draws from the same kind (test_random_*, hypothesis).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from labs.core.engine import collectives, memory, pipeline, topology
from labs.core.engine.eras import ERA_NAMES
from labs.core.engine.hardware import CLUSTERS, GPUS, HOSTS, LINKS, Cluster
from labs.core.engine.memory import OPTIMIZER_STATES, ZERO_STAGES
from labs.core.engine.models import MODELS, RECOMPUTE_MODES, Model
from labs.core.engine.perf import GRAD_REDUCE_DTYPES, PLAN_SCHEDULES, Plan, estimate, memory_breakdown, validate
from labs.core.engine.perf import CP_ALGORITHMS
from labs.core.engine.pipeline import CONVENTIONS, SCHEDULES, TIMELINE_SCHEDULES, OpCosts
from labs.core.engine.search import FIXED_ONLY, MAX_PLANS, SWEPT, plan_space, sweep
from labs.core.engine.topology import DP_ALGORITHMS
from labs.core.engine.layout import RANK_ORDERS

NAN, INF = float("nan"), float("inf")
# numbers no float holds: math.isfinite(10**400) raised OverflowError in 13 entry points (audit M4/E1)
BEYOND_FLOAT = (10**400, -(10**400), 16 * 10**400, Fraction(10**400))
RANDOM = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- bad values by kind -------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """Listed bad values, and a strategy drawing more of them."""

    listed: tuple
    strategy: st.SearchStrategy


def _strict_member(value, allowed) -> bool:
    """value is one of allowed, and of the same kind (1.0 and True are not zero_stage 1)."""
    return any(type(value) is type(a) and value == a for a in allowed)


def count(maximum: int = 1 << 31, extra: tuple = ()) -> Kind:
    """A whole number >= 1 (at most `maximum`)."""
    listed = (0, -1, 2.5, 4.0, NAN, INF, -INF, 1e308, True, False, "8", None, 2**70, maximum + 1, [8], np.float64(4.0), 8 + 0j) + BEYOND_FLOAT + extra
    return Kind(listed, st.one_of(
        st.sampled_from(listed),
        st.integers(max_value=0),
        st.integers(min_value=maximum + 1),
        st.floats(),  # every float is wrong where a whole number is wanted
        st.text(),
    ))


def optional_count(maximum: int = 1 << 31, allow_zero: bool = False) -> Kind:
    """A whole number >= 1 (>= 0 with allow_zero), or None."""
    kind = count(maximum)
    ok = lambda v: v is not None and not (allow_zero and type(v) is int and v == 0)  # noqa: E731
    return Kind(tuple(v for v in kind.listed if ok(v)), kind.strategy.filter(ok))


def index(size: int) -> Kind:
    """A whole number in [0, size)."""
    listed = (-1, 2.5, 1.0, NAN, INF, "0", None, True, size, 2**70) + BEYOND_FLOAT
    return Kind(listed, st.one_of(st.sampled_from(listed), st.integers(max_value=-1), st.integers(min_value=size), st.floats(), st.text()))


def size(positive: bool = False, maximum: float = 1e300) -> Kind:
    """A non-negative number of bytes (or seconds, or bytes/s) of at most `maximum`; positive=True
    refuses 0 too."""
    listed = (-1, -1.5, NAN, INF, -INF, 1e308, "x", "1e9", None, True, False, [1.0], 1j) + BEYOND_FLOAT + ((0, 0.0) if positive else ())
    return Kind(listed, st.one_of(
        st.sampled_from(listed),
        st.floats(max_value=0.0, exclude_max=True),
        st.floats(min_value=maximum, exclude_min=True),
        st.integers(max_value=-1),
        st.text(),
    ))


def optional_size(positive: bool = False) -> Kind:
    kind = size(positive)
    return Kind(tuple(v for v in kind.listed if v is not None), kind.strategy.filter(lambda v: v is not None))


def optional_bytes() -> Kind:
    """A byte count that may be None but, when given, is at least one byte (5e-324 once passed)."""
    kind = optional_size(positive=True)
    listed = kind.listed + (5e-324, 0.5)
    return Kind(listed, st.one_of(kind.strategy, st.floats(min_value=0.0, max_value=1.0, exclude_max=True)))


def choice(allowed, extra: tuple = ()) -> Kind:
    allowed = tuple(allowed)
    listed = tuple(v for v in ("bogus", 7, None, True, False, 1.5, "", [], 1.0, "1", -1, 4, NAN) + extra if not _strict_member(v, allowed))
    return Kind(listed, st.one_of(st.sampled_from(listed), st.text(), st.integers(), st.floats()).filter(lambda v: not _strict_member(v, allowed)))


def flag() -> Kind:
    listed = ("yes", "True", 2, 1, 0, None, 1.0, NAN, [], np.int64(1))
    return Kind(listed, st.one_of(st.sampled_from(listed), st.text(), st.integers(), st.floats()))


def obj(*wrong, none_ok: bool = False) -> Kind:
    """An engine object (Model, Cluster, Plan, OpCosts, a GPU, a Link...): anything else is wrong."""
    listed = tuple(v for v in (None, "x", 7, 1.5, {}, [], object()) + wrong if not (none_ok and v is None))
    return Kind(listed, st.one_of(st.sampled_from(listed), st.text(), st.integers(), st.floats()))


def scalar(kind: Kind) -> Kind:
    """The kind without lists that hold something (sweep() takes a list of values as a choice)."""
    full = lambda v: isinstance(v, (list, tuple, set, range)) and len(v) > 0  # noqa: E731
    return Kind(tuple(v for v in kind.listed if not full(v)), kind.strategy.filter(lambda v: not full(v)))


def text() -> Kind:
    listed = (None, 7, 1.5, b"x", ["x"], True)
    return Kind(listed, st.one_of(st.sampled_from(listed), st.integers(), st.floats(), st.binary()))


# ---- the cases: one per (function, argument) ----------------------------------------------------
class Case:
    """One argument of one function: `call` takes the bad value, whose error must name one of
    `names`."""

    def __init__(self, id: str, call: Callable[[Any], Any], names: tuple[str, ...], kind: Kind):
        self.id, self.call, self.names, self.kind = id, call, names, kind

    def __repr__(self) -> str:
        return self.id

    @property
    def match(self) -> str:
        return "|".join(rf"(?<![A-Za-z0-9]){re.escape(n)}(?![A-Za-z0-9])" for n in self.names)


def _kw(fn, base: dict, arg: str):
    return lambda value: fn(**{**base, arg: value})


CASES: list[Case] = []


def add(label: str, fn, base: dict, kinds: dict, names: dict | None = None):
    for arg, kind in kinds.items():
        CASES.append(Case(f"{label}-{arg}", _kw(fn, base, arg), (names or {}).get(arg, (arg,)), kind))


H100 = Cluster.get("dgx-h100", 2)
A100 = Cluster.get("dgx-a100", 2)
LLAMA = Model.get("llama2-7b")
NOT_A_CLUSTER = (GPUS["h100-sxm"], LLAMA, "dgx-h100")
NOT_A_MODEL = (H100, "llama2-7b", Plan())

# labs.core.engine.collectives
COLLECTIVE = dict(nbytes=1e6, n=8, bandwidth=1e11, latency=1e-6, algorithm="ring")
COLLECTIVE_KINDS = dict(
    nbytes=size(maximum=collectives.MAX_BYTES), n=count(), bandwidth=size(positive=True, maximum=collectives.MAX_BANDWIDTH),
    latency=size(maximum=collectives.MAX_LATENCY_S), algorithm=choice(collectives.ALGORITHMS),
)
add("collective_cost", collectives.collective_cost, {"op": "all_reduce", **COLLECTIVE}, {"op": choice(collectives.OPS), **COLLECTIVE_KINDS})
CASES.append(Case("collective_cost-bandwidth-tiny", lambda v: collectives.collective_cost("all_reduce", 1e18, 1 << 31, v), ("bandwidth",), Kind((1e-300, 5e-324), st.floats(min_value=5e-324, max_value=1e-7))))
for _fn in (collectives.all_reduce_time, collectives.reduce_scatter_time, collectives.all_gather_time, collectives.all_to_all_time,
            collectives.broadcast_time, collectives.p2p_time):
    add(_fn.__name__, _fn, COLLECTIVE, COLLECTIVE_KINDS)
add("bytes_sent_per_rank", collectives.bytes_sent_per_rank, dict(op="all_reduce", nbytes=1e6, n=8),
    dict(op=choice(collectives.OPS), nbytes=size(maximum=collectives.MAX_BYTES), n=count()))
for _n in (1, 8):  # n = 1 takes a shortcut: it must check its arguments all the same
    add(f"busbw_from_algbw[n={_n}]", collectives.busbw_from_algbw, dict(op="all_reduce", algbw=1e11, n=_n),
        dict(op=choice(collectives.OPS), algbw=size(maximum=collectives.MAX_BANDWIDTH)))
    add(f"algbw_from_busbw[n={_n}]", collectives.algbw_from_busbw, dict(op="all_reduce", busbw=1e11, n=_n),
        dict(op=choice(collectives.OPS), busbw=size(maximum=collectives.MAX_BANDWIDTH)))
add("busbw_from_algbw", collectives.busbw_from_algbw, dict(op="all_reduce", algbw=1e11, n=8), dict(n=count()))
add("algbw_from_busbw", collectives.algbw_from_busbw, dict(op="all_reduce", busbw=1e11, n=8), dict(n=count()))
# n = 512 would keep 2 x 511 copies of a 512 x 512 table: refused by name.
add("simulate_ring_all_reduce", collectives.simulate_ring_all_reduce, dict(n=8, nbytes=1e6),
    dict(n=count(extra=(collectives.MAX_SIMULATED_RANKS + 1, 512, 100_000)), nbytes=size(maximum=collectives.MAX_BYTES)))
# Lab 08's ring clock and parameter server (issue 15): the same arguments as the collectives above.
_RING = dict(nbytes=1e6, n=8, bandwidth=1e11, latency=1e-6)
_RING_KINDS = {k: v for k, v in COLLECTIVE_KINDS.items() if k != "algorithm"}
for _fn in (collectives.ring_step_time, collectives.parameter_server_cost):
    add(_fn.__name__, _fn, _RING, _RING_KINDS)
add("ring_clock", collectives.ring_clock, _RING, {**_RING_KINDS, "n": count(extra=(collectives.MAX_SIMULATED_RANKS + 1, 100_000))})
add("ring_link_bytes", collectives.ring_link_bytes, dict(n=8, nbytes=1e6),
    dict(n=count(extra=(collectives.MAX_SIMULATED_RANKS + 1, 100_000)), nbytes=size(maximum=collectives.MAX_BYTES)))
add("parameter_server_ingress_bytes", collectives.parameter_server_ingress_bytes, dict(nbytes=1e6, n=8),
    dict(nbytes=size(maximum=collectives.MAX_BYTES), n=count()))

# labs.core.engine.topology
GROUP = dict(op="all_reduce", nbytes=1e6, cluster=H100, n=16, stride=1, algorithm="auto")
GROUP_KINDS = dict(
    op=choice(("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p")), nbytes=size(), cluster=obj(*NOT_A_CLUSTER),
    n=count(extra=((1 << 20) + 1,)), stride=count(), algorithm=choice(DP_ALGORITHMS),
)
for _fn in (topology.group_cost, topology.bus_bandwidth):
    add(_fn.__name__, _fn, GROUP, GROUP_KINDS, names={"algorithm": ("algorithm", "dp_algorithm")})
    CASES.append(Case(f"{_fn.__name__}-algorithm-nvls-without-sharp", lambda v, f=_fn: f(**{**GROUP, "cluster": A100, "algorithm": v}), ("algorithm", "dp_algorithm"), Kind(("nvls",), st.just("nvls"))))

# labs.core.engine.pipeline
PIPE = dict(p=4, m=8, schedule="1f1b", v=1)
INTERLEAVED = dict(p=4, m=8, schedule="interleaved", v=2)
PIPE_KINDS = dict(p=count(), m=count(), costs=obj((1.0, 1.0, 1.0), {"tf": 1.0}, none_ok=True))
add("bubble_fraction", pipeline.bubble_fraction, PIPE, {**PIPE_KINDS, "schedule": choice(SCHEDULES), "convention": choice(CONVENTIONS)})
add("bubble_fraction[interleaved]", pipeline.bubble_fraction, INTERLEAVED, dict(v=count()))
add("timeline", pipeline.timeline, PIPE, {**PIPE_KINDS, "schedule": choice(TIMELINE_SCHEDULES, extra=("zb-h2",))})
add("timeline[interleaved]", pipeline.timeline, INTERLEAVED, dict(v=count()))
add("peak_in_flight", pipeline.peak_in_flight, PIPE, dict(p=count(), m=count(), schedule=choice(TIMELINE_SCHEDULES)))
add("peak_in_flight[interleaved]", pipeline.peak_in_flight, INTERLEAVED, dict(v=count()))
add("OpCosts", OpCosts, {}, dict(tf=size(positive=True), tb=size(positive=True), tw=size(positive=True), comm=size()))
add("Timeline.bubble_fraction", pipeline.timeline(**PIPE).bubble_fraction, {}, dict(convention=choice(CONVENTIONS)))

# labs.core.engine.memory
STATE = dict(params=7e9, zero_stage=1, dp=8, offload=False, optimizer="fp32")
STATE_KINDS = dict(params=size(), zero_stage=choice(ZERO_STAGES), dp=count(), offload=flag(), optimizer=choice(OPTIMIZER_STATES))
add("model_state_bytes", memory.model_state_bytes, STATE, STATE_KINDS)
add("model_state_split", memory.model_state_split, STATE, STATE_KINDS)
add("activation_bytes_per_layer", memory.activation_bytes_per_layer,
    dict(seq_len=4096, micro_batch=1, hidden=4096, heads=32, tp=1, sequence_parallel=False, recompute="none"),
    dict(seq_len=count(), micro_batch=count(), hidden=count(), heads=count(), tp=count(), sequence_parallel=flag(), recompute=choice(RECOMPUTE_MODES)))
add("in_flight_microbatches", memory.in_flight_microbatches, dict(schedule="1f1b", p=4, m=8, v=1, stage=0),
    dict(schedule=choice(SCHEDULES), p=count(), m=count(), v=count(), stage=index(4)))
add("offloaded_bytes", memory.offloaded_bytes, dict(shard_params=1e9, optimizer="fp32"), dict(shard_params=size(), optimizer=choice(OPTIMIZER_STATES)))
add("optimizer_state", memory.optimizer_state, {}, dict(name=choice(OPTIMIZER_STATES)), names={"name": ("optimizer_state", "name")})

# labs.core.engine.models
TINY = dict(name="tiny", layers=2, hidden=64, heads=4, seq_len=128, vocab=1000)
add("Model", Model, TINY, dict(
    name=text(), layers=count(), hidden=count(), heads=count(), seq_len=count(), vocab=count(), ffn_hidden=optional_count(),
    kv_heads=optional_count(), gated_ffn=flag(), tied_embeddings=flag(), source=text(),
))
add("Model.get", Model.get, dict(key="llama2-7b"), dict(key=choice(MODELS, extra=NOT_A_MODEL)), names={"key": ("key", "model")})
add("Model.get-override", Model.get, dict(key="llama2-7b"), dict(layers=count(), hidden=count(), gated_ffn=flag()))
CASES.append(Case("Model.get-unknown-field", lambda v: Model.get("llama2-7b", **{v: 1}), ("bogus", "layer", "Layers"), Kind(("bogus", "layer", "Layers"), st.sampled_from(("bogus", "layer", "Layers")))))

# labs.core.engine.hardware
add("Cluster", Cluster, dict(gpu=GPUS["h100-sxm"]), dict(
    gpu=obj(LINKS["nvlink4"], "h100-sxm"), gpus_per_node=count(1024), nodes=count(1 << 17), intra=obj(GPUS["h100-sxm"], "nvlink4"),
    inter=obj(HOSTS["dgx-h100"], "ib-ndr"), nics_per_node=optional_count(1024), name=text(), host=obj(LINKS["pcie5"], "dgx-h100"),
    pod_gpus=optional_count(), oversubscription=Kind((0, 0.5, -1, NAN, INF, 1e308, 2**70, "x", None, True), st.one_of(st.floats(max_value=1.0, exclude_max=True), st.floats(min_value=1024, exclude_min=True), st.text())),
))
add("Cluster.get", Cluster.get, dict(key="dgx-h100", nodes=2), dict(key=choice(CLUSTERS, extra=NOT_A_CLUSTER), nodes=count(1 << 17)), names={"key": ("key", "cluster")})
add("Cluster.get-override", Cluster.get, dict(key="dgx-h100", nodes=2), dict(gpus_per_node=count(1024), oversubscription=size(positive=True)))
CASES.append(Case("Cluster.get-unknown-field", lambda v: Cluster.get("dgx-h100", **{v: 1}), ("bogus", "node", "Nodes"), Kind(("bogus", "node", "Nodes"), st.sampled_from(("bogus", "node", "Nodes")))))
add("Cluster.with_fabric", H100.with_fabric, {}, dict(inter_key=choice(LINKS, extra=(LINKS["ib-ndr"],))), names={"inter_key": ("inter_key", "inter")})

# labs.core.engine.perf (fields being added to Plan show up in test_every_plan_field_and_sweep_argument_is_covered)
_PLAN_KINDS = dict(
    tp=count(1 << 20), pp=count(1 << 20), dp=count(1 << 20), cp=count(1 << 20), micro_batch=count(1 << 20), global_batch=count(),
    virtual_stages=count(1 << 10), zero_stage=choice(ZERO_STAGES), recompute=choice(RECOMPUTE_MODES), schedule=choice(PLAN_SCHEDULES, extra=("zb-h2",)),
    dp_algorithm=choice(DP_ALGORITHMS), optimizer_state=choice(OPTIMIZER_STATES), grad_reduce_dtype=choice(GRAD_REDUCE_DTYPES),
    sequence_parallel=flag(), flash_attention=flag(), dp_overlap=flag(), pp_overlap=flag(), offload_optimizer=flag(), tp_comm_overlap=flag(),
    bucket_bytes=optional_bytes(), first_stage_layers=optional_count(1 << 20, allow_zero=True),
    last_stage_layers=optional_count(1 << 20, allow_zero=True), microbatch_group_size=optional_count(1 << 20),
    reshard_after_forward=flag(), shard_group_size=optional_count(1 << 20), cp_algorithm=choice(CP_ALGORITHMS), precision=choice(("bf16", "fp8")),
    ep=count(1 << 20), capacity_factor=optional_size(positive=True), max_nodes_per_token=optional_count(1 << 20),
    rank_order=choice(RANK_ORDERS),
    stack=choice(ERA_NAMES + (None,)), grad_sync=choice((None, "step", "microbatch")), torch_compile=flag(),
    recompute_layers=optional_count(1 << 20, allow_zero=True),
    expert_skew=Kind((0.5, 0, -1, NAN, INF, None, "x", True, float(1 << 21)),
                     st.one_of(st.floats(max_value=1.0, exclude_max=True), st.floats(min_value=1 << 20, exclude_min=True), st.text())),
)
PLAN_KINDS = {k: v for k, v in _PLAN_KINDS.items() if k in Plan.__dataclass_fields__}
add("Plan", Plan, {}, PLAN_KINDS)
add("Plan.for_era", Plan.for_era, dict(era="megatron-core-2024"), {"era": choice(ERA_NAMES + (None,)), **PLAN_KINDS})
add("Plan.for_era[None]", Plan.for_era, dict(era=None), PLAN_KINDS)
# The era's default schedule is interleaved: deciding whether it applies reads pp.
add("Plan.for_era[virtual_stages=2]", Plan.for_era, dict(era="megatron-core-2024", virtual_stages=2), dict(pp=count(1 << 20)))
add("Plan.for_era[interleaved]", Plan.for_era, dict(era="megatron-2021", schedule="interleaved"), dict(pp=count(1 << 20)))
CASES.append(Case("Plan.for_era-unknown-field", lambda v: Plan.for_era("megatron-core-2024", **{v: 1}), ("bogus", "layers", "TP"), Kind(("bogus", "layers", "TP"), st.sampled_from(("bogus", "layers", "TP")))))
PLAN_8 = Plan(tp=8, global_batch=8)
add("estimate", estimate, dict(model=LLAMA, cluster=Cluster.get("dgx-h100", 1), plan=PLAN_8),
    dict(model=obj(*NOT_A_MODEL), cluster=obj(*NOT_A_CLUSTER), plan=obj(LLAMA, {"tp": 8}, PLAN_8.as_dict())))
add("validate", validate, dict(model=LLAMA, cluster=Cluster.get("dgx-h100", 1), plan=PLAN_8),
    dict(model=obj(*NOT_A_MODEL), cluster=obj(*NOT_A_CLUSTER), plan=obj(LLAMA, {"tp": 8}, PLAN_8.as_dict())))
add("memory_breakdown", memory_breakdown, dict(model=LLAMA, plan=PLAN_8), dict(model=obj(*NOT_A_MODEL), plan=obj(LLAMA, {"tp": 8}, PLAN_8.as_dict())))

# labs.core.engine.reliability (Lab 10)
from labs.core.engine import reliability  # noqa: E402

_SEC, _SEC0 = size(positive=True, maximum=reliability.MAX_SECONDS), size(maximum=reliability.MAX_SECONDS)
_GPUS = count(reliability.MAX_GPUS)
_CKPT = reliability.checkpoint_size(LLAMA, 1, 1, 8, 1)
_RESTARTS = reliability.restart_by_cause(60.0, 600.0, False)
add("job_mtbf_s", reliability.job_mtbf_s, dict(gpus=16), dict(gpus=_GPUS))
add("job_failure_rates", reliability.job_failure_rates, dict(gpus=16), dict(gpus=_GPUS))
add("expected_interruptions", reliability.expected_interruptions, dict(gpus=16, wall_s=1e6), dict(gpus=_GPUS, wall_s=_SEC0))
for _fn in (reliability.young_interval, reliability.daly_interval, reliability.optimal_interval):
    add(_fn.__name__, _fn, dict(checkpoint_s=60.0, mtbf_s=1e4), dict(checkpoint_s=_SEC, mtbf_s=_SEC))
for _fn in (reliability.goodput, reliability.wall_breakdown):
    add(_fn.__name__, _fn, dict(interval_s=3600.0, checkpoint_s=60.0, restart_s=600.0, mtbf_s=1e4),
        dict(interval_s=_SEC, checkpoint_s=_SEC0, restart_s=_SEC0, mtbf_s=_SEC))
add("cadence_curve", reliability.cadence_curve, dict(checkpoint_s=60.0, restart_s=600.0, mtbf_s=1e4, points=20, write_s=0.0),
    dict(checkpoint_s=_SEC0, restart_s=_SEC0, mtbf_s=_SEC, points=count(100_000), write_s=_SEC0))
add("best_goodput", reliability.best_goodput, dict(checkpoint_s=60.0, restart_s=600.0, mtbf_s=1e4), dict(checkpoint_s=_SEC, restart_s=_SEC0, mtbf_s=_SEC))
add("checkpoint_size", reliability.checkpoint_size, dict(model=LLAMA, tp=1, pp=1, dp=8, zero_stage=1, optimizer="fp32"),
    dict(model=obj(*NOT_A_MODEL), tp=_GPUS, pp=_GPUS, dp=_GPUS, zero_stage=choice(ZERO_STAGES), optimizer=choice(OPTIMIZER_STATES)))
add("checkpoint_cost", reliability.checkpoint_cost, dict(size=_CKPT, strategy="sync", storage_bytes_per_s=2e12, cluster=H100),
    dict(size=obj(7e9, _CKPT.__dict__), strategy=choice(reliability.STRATEGIES), storage_bytes_per_s=size(positive=True, maximum=reliability.MAX_BANDWIDTH), cluster=obj(*NOT_A_CLUSTER)))
add("restore_s", reliability.restore_s, dict(size=_CKPT, storage_bytes_per_s=2e12, cluster=H100),
    dict(size=obj(7e9), storage_bytes_per_s=size(positive=True, maximum=reliability.MAX_BANDWIDTH), cluster=obj(*NOT_A_CLUSTER)))
add("CheckpointCost.stall_at", reliability.checkpoint_cost(_CKPT, "async", 2e12, H100).stall_at, {}, dict(interval_s=_SEC))
add("restart_by_cause", reliability.restart_by_cause, dict(relaunch_s=60.0, swap_s=600.0, hot_spares=False), dict(relaunch_s=_SEC0, swap_s=_SEC0, hot_spares=flag()))
add("simulate", reliability.simulate, dict(work_s=1e6, interval_s=3600.0, checkpoint_s=10.0, mtbf_s=1e5, restarts=_RESTARTS, runs=2, seed=0), dict(
    work_s=_SEC, interval_s=_SEC, checkpoint_s=_SEC0, mtbf_s=_SEC, restarts=obj({"faulty_gpu": 1.0}, {k: -1.0 for k in _RESTARTS}),
    runs=count(reliability.MAX_RUNS), seed=Kind((-1, 2.5, NAN, INF, None, "1", True, 1.0), st.one_of(st.integers(max_value=-1), st.floats(), st.text()))),
    names={"restarts": ("restarts",)})
add("straggler_all_reduce", reliability.straggler_all_reduce, dict(nbytes=1e9, cluster=H100, n=16, stride=1, slow_fraction=0.5), dict(
    nbytes=size(maximum=1e18), cluster=obj(*NOT_A_CLUSTER), n=count(1 << 20), stride=count(),
    slow_fraction=Kind((0, -0.5, 1.5, NAN, INF, None, "x", True, 1e-4), st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0, exclude_min=True), st.text()))))

# labs.core.engine.context and the capacity factor (Lab 11)
from labs.core.engine import context as _context, experts as _experts  # noqa: E402

add("causal_work", _context.causal_work, dict(cp=2, split="zigzag", seq_len=8), dict(cp=count(1 << 16), split=choice(_context.CP_SPLITS), seq_len=count(1 << 40)))
add("causal_imbalance", _context.causal_imbalance, dict(cp=2, split="zigzag", seq_len=8), dict(cp=count(1 << 16), split=choice(_context.CP_SPLITS), seq_len=count(1 << 40)))
add("kv_heads_per_tp_rank", _context.kv_heads_per_tp_rank, dict(model=LLAMA, tp=1), dict(model=obj(*NOT_A_MODEL), tp=count(1 << 20)))
add("check_ulysses", _context.check_ulysses, dict(model=LLAMA, tp=1, cp=1), dict(model=obj(*NOT_A_MODEL), tp=count(1 << 20), cp=count(1 << 20)))
add("tokens_per_expert", _experts.tokens_per_expert, dict(model=Model.get("deepseek-v3"), tokens=4096, ep=8),
    dict(model=obj(*NOT_A_MODEL), tokens=size(positive=True, maximum=1e12), ep=count(1 << 20)))
add("poisson_drop_fraction", _experts.poisson_drop_fraction, dict(mean_tokens=8.0, capacity_factor=1.25),
    dict(mean_tokens=size(positive=True, maximum=1e6), capacity_factor=Kind((0.5, 0, -1, NAN, INF, None, "x", True, 1025.0), st.one_of(st.floats(max_value=1.0, exclude_max=True), st.floats(min_value=1024, exclude_min=True), st.text()))))

# labs.core.engine.search: sweep's own arguments, then every fixed field, alone and inside a list
SWEEP = dict(model=LLAMA, cluster=Cluster.get("dgx-h100", 1), global_batch=16)
add("sweep", sweep, SWEEP, dict(model=obj(*NOT_A_MODEL), cluster=obj(*NOT_A_CLUSTER), global_batch=count(), era=choice(ERA_NAMES + (None,))))
SWEPT_KINDS = {k: PLAN_KINDS[k] for k in SWEPT + ("dp",) if k in PLAN_KINDS}
FIXED_KINDS = {k: PLAN_KINDS[k] for k in FIXED_ONLY if k in PLAN_KINDS}
add("plan_space", plan_space, SWEEP, dict(model=obj(*NOT_A_MODEL), cluster=obj(*NOT_A_CLUSTER), global_batch=count(), era=choice(ERA_NAMES + (None,))))
add("sweep-fixed", sweep, SWEEP, {**{k: scalar(v) for k, v in SWEPT_KINDS.items()}, **FIXED_KINDS})
for _name, _kind in SWEPT_KINDS.items():
    CASES.append(Case(f"sweep-fixed-{_name}-in-list", lambda v, n=_name: sweep(**SWEEP, **{n: [getattr(Plan(), n), v]}), (_name,), _kind))
    CASES.append(Case(f"sweep-fixed-{_name}-empty", lambda v, n=_name: sweep(**SWEEP, **{n: v}), (_name,), Kind(([], (), set(), range(0)), st.just([]))))
for _name in FIXED_KINDS:  # a fixed-only field takes one value, not a list
    CASES.append(Case(f"sweep-fixed-{_name}-as-list", lambda v, n=_name: sweep(**SWEEP, **{n: v}), (_name,), Kind(([getattr(Plan(), _name)],), st.just([getattr(Plan(), _name)]))))
CASES.append(Case("sweep-unknown-field", lambda v: sweep(**SWEEP, **{v: 1}), ("bogus", "offload_optimizer", "layers"), Kind(("bogus", "offload_optimizer", "layers"), st.sampled_from(("bogus",)))))
CASES.append(Case("sweep-era-field", lambda v: sweep(**SWEEP, era="megatron-2021", **{v[0]: v[1]}), ("zero_stage", "flash_attention", "schedule"),
                  Kind((("zero_stage", 1), ("flash_attention", True), ("schedule", "zb-h1")), st.sampled_from((("zero_stage", [1]), ("flash_attention", True))))))


def test_every_plan_field_and_sweep_argument_is_covered():
    assert set(PLAN_KINDS) == set(Plan.__dataclass_fields__)
    assert set(SWEPT + FIXED_ONLY + ("dp",)) <= set(PLAN_KINDS)


def _run(case: Case, value):
    with pytest.raises(ValueError, match=case.match):
        case.call(value)


def _outcome(case: Case, value) -> str | None:
    """None when the value is refused by name, else what happened instead."""
    try:
        case.call(value)
    except ValueError as err:
        return None if re.search(case.match, str(err)) else f"ValueError not naming {'/'.join(case.names)}: {err}"
    except Exception as err:  # noqa: BLE001 - the point is to see which
        return f"{type(err).__name__}: {err}"
    return "no error"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_listed_bad_values_are_refused_by_name(case):
    failures = [f"{case.id}={v!r}: {what}" for v in case.kind.listed if (what := _outcome(case, v))]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@RANDOM
@given(data=st.data())
def test_random_bad_values_are_refused_by_name(case, data):
    _run(case, data.draw(case.kind.strategy, label=case.id))


# ---- sizes that cannot be built are refused by name, quickly ------------------------------------
# (or, for sweep(), built in bounded memory: a plan space of repeated choices may be deduplicated)
@pytest.mark.parametrize("call, names", [
    (lambda: pipeline.timeline(1024, 100_000), ("m", "p")),
    (lambda: pipeline.timeline(100_000, 1), ("p",)),
    (lambda: pipeline.timeline(2048, 2, "gpipe"), ("p",)),
    (lambda: pipeline.timeline(4, 1 << 30, "interleaved", 1 << 20), ("m", "v")),
    (lambda: pipeline.peak_in_flight(1024, 100_000), ("m", "p")),
    (lambda: collectives.simulate_ring_all_reduce(512), ("n",)),
    (lambda: collectives.simulate_ring_all_reduce(1 << 20), ("n",)),
    # the plan space's product, before it is built: 10 layouts x 1000^4 x 8 schedules would be
    # 8e13 rows, beyond any machine's address space
    (lambda: sweep(**SWEEP, micro_batch=[1] * 1000, zero_stage=[0] * 1000, recompute=["none"] * 1000, sequence_parallel=[False] * 1000),
     ("micro_batch", "zero_stage", "recompute", "sequence_parallel")),
], ids=["timeline-p1024-m100000", "timeline-p100000", "timeline-p2048", "timeline-interleaved-huge", "peak_in_flight-huge",
        "ring-simulator-512", "ring-simulator-1M", "sweep-plan-space-too-large"])
def test_sizes_too_large_to_build_are_refused(call, names):
    try:
        built = call()
    except ValueError as err:
        assert re.search(Case("", call, names, count()).match, str(err)), err
    else:
        assert hasattr(built, "columns") and len(built) <= MAX_PLANS, "built something too large to refuse by name"


def test_largest_timeline_is_built_in_bounded_time():
    import time

    start = time.perf_counter()
    t = pipeline.timeline(pipeline.MAX_TIMELINE_STAGES, pipeline.MAX_TIMELINE_OPS // pipeline.MAX_TIMELINE_STAGES, "1f1b")
    peaks = t.peak_in_flight()
    assert len(peaks) == t.p and peaks[0] == min(t.p, t.m)
    assert time.perf_counter() - start < 20


# ---- valid input: finite, non-negative outputs ---------------------------------------------------
def finite_non_negative(label: str, value) -> None:
    arr = np.asarray(value, dtype=float)
    assert np.all(np.isfinite(arr)), f"{label} is not finite: {value!r}"
    assert np.all(arr >= 0), f"{label} is negative: {value!r}"


@RANDOM
@given(st.sampled_from(collectives.OPS), st.floats(0, collectives.MAX_BYTES), st.integers(1, 1 << 31),
       st.floats(collectives.MIN_BANDWIDTH, collectives.MAX_BANDWIDTH), st.floats(0, collectives.MAX_LATENCY_S), st.sampled_from(collectives.ALGORITHMS))
def test_collectives_outputs_finite(op, nbytes, n, bandwidth, latency, algorithm):
    cost = collectives.collective_cost(op, nbytes, n, bandwidth, latency, algorithm)
    finite_non_negative("latency_s", cost.latency_s)
    finite_non_negative("bandwidth_s", cost.bandwidth_s)
    finite_non_negative("bytes_sent_per_rank", collectives.bytes_sent_per_rank(op, nbytes, n))
    finite_non_negative("busbw", collectives.busbw_from_algbw(op, bandwidth, n))
    finite_non_negative("algbw", collectives.algbw_from_busbw(op, bandwidth, n))


@RANDOM
@given(st.sampled_from(("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p")), st.floats(0, 1e18),
       st.sampled_from(sorted(CLUSTERS)), st.integers(1, 4096), st.integers(1, 1 << 20), st.integers(1, 1 << 20), st.sampled_from(DP_ALGORITHMS))
def test_topology_outputs_finite(op, nbytes, key, nodes, n, stride, algorithm):
    cluster = Cluster.get(key, nodes)
    assume(algorithm != "nvls" or cluster.intra.nvls_bytes_per_s)
    cost = topology.group_cost(op, nbytes, cluster, n, stride, algorithm)
    finite_non_negative("latency_s", cost.latency_s)
    finite_non_negative("bandwidth_s", cost.bandwidth_s)
    try:
        busbw = topology.bus_bandwidth(op, nbytes, cluster, n, stride, algorithm)
    except ValueError as err:  # a busbw of p2p may be refused, by name
        assert op == "p2p" and re.search(r"\bop\b", str(err)), err
    else:
        finite_non_negative("bus_bandwidth", busbw)


costs = st.builds(OpCosts, st.floats(1e-6, 1e12), st.floats(1e-6, 1e12), st.floats(1e-6, 1e12), st.floats(0, 1e12))


@RANDOM
@given(st.integers(1, 1 << 31), st.integers(1, 1 << 31), st.sampled_from(SCHEDULES), st.integers(2, 64), st.sampled_from(CONVENTIONS), costs)
def test_bubble_fraction_in_unit_interval(p, m, schedule, v, convention, c):
    if schedule == "interleaved":
        m = p * max(1, m // p)
    else:
        v = 1
    if schedule == "dualpipe":  # dualpipe.py's asserts: p even, m even and at least 2p
        p = 2 * max(1, min(p, 1 << 30) // 2)  # so that m stays within the engine's limit of 2**31
        m = 2 * max(m // 2, p)
    b = pipeline.bubble_fraction(p, m, schedule, v, convention, c)
    finite_non_negative("bubble_fraction", b)
    assert convention == "ideal" or b < 1


@RANDOM
@given(st.integers(1, 12), st.integers(1, 24), st.sampled_from(TIMELINE_SCHEDULES), st.integers(2, 4), costs)
def test_timeline_outputs_finite(p, m, schedule, v, c):
    if schedule == "interleaved":
        m = p * max(1, m // p)
    else:
        v = 1
    if schedule == "dualpipe":  # dualpipe.py's asserts: p even, m even and at least 2p
        p = 2 * max(1, min(p, 1 << 30) // 2)  # so that m stays within the engine's limit of 2**31
        m = 2 * max(m // 2, p)
    t = pipeline.timeline(p, m, schedule, v, c)
    finite_non_negative("start", t.start)
    finite_non_negative("end", t.end)
    finite_non_negative("idle_per_stage", t.idle_per_stage() + 1e-9 * t.makespan)
    finite_non_negative("peak_in_flight", t.peak_in_flight())
    for convention in CONVENTIONS:
        finite_non_negative(f"bubble_fraction({convention})", t.bubble_fraction(convention))


@RANDOM
@given(st.floats(0, memory.MAX_PARAMS), st.sampled_from(ZERO_STAGES), st.integers(1, 1 << 31), st.booleans(), st.sampled_from(sorted(OPTIMIZER_STATES)),
       st.integers(1, 1 << 20), st.integers(1, 1 << 20), st.sampled_from([64, 4096, 16384]), st.sampled_from([1, 8, 64]), st.integers(1, 64),
       st.booleans(), st.sampled_from(RECOMPUTE_MODES))
def test_memory_outputs_finite(params, zero_stage, dp, offload, optimizer, s, b, h, a, t, sp, recompute):
    offload = offload and zero_stage >= 1
    finite_non_negative("model_state_split", memory.model_state_split(params, zero_stage, dp, offload, optimizer))
    finite_non_negative("model_state_bytes", memory.model_state_bytes(params, zero_stage, dp, offload, optimizer))
    finite_non_negative("offloaded_bytes", memory.offloaded_bytes(params, optimizer))
    finite_non_negative("activation_bytes_per_layer", memory.activation_bytes_per_layer(s, b, h, a, t, sp, recompute))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def valid_plans(draw):
    """A model, a cluster of 1-4 nodes and a plan that fits them (it may not fit in memory)."""
    model = Model.get(draw(st.sampled_from(["llama2-7b", "llama3-8b", "seed-100m", "llama2-70b"])))
    cluster = Cluster.get(draw(st.sampled_from(["dgx-h100", "dgx-a100", "pcie-a100"])), draw(st.integers(1, 4)))
    n = cluster.gpus
    tp = draw(st.sampled_from([t for t in _divisors(n) if model.heads % t == 0]))
    cp = draw(st.sampled_from([c for c in _divisors(n // tp) if model.seq_len % c == 0 and c <= 4]))
    pp = draw(st.sampled_from([p for p in _divisors(n // (tp * cp)) if p <= model.layers]))
    dp = n // (tp * pp * cp)
    schedule = draw(st.sampled_from(PLAN_SCHEDULES if pp > 1 else ("1f1b", "gpipe")))
    v = draw(st.sampled_from([v for v in (2, 3, 4) if pp * v <= model.layers] or [1])) if schedule == "interleaved" else 1
    if v == 1 and schedule == "interleaved":
        schedule = "1f1b"
    micro_batch = draw(st.sampled_from([1, 2, 4]))
    if schedule == "dualpipe" and pp % 2:
        schedule = "1f1b"
    if schedule == "interleaved":
        m = pp * draw(st.integers(1, 8))
    elif schedule == "dualpipe":  # dualpipe.py: an even number of micro-batches, at least 2 x pp
        m = 2 * pp * draw(st.integers(1, 4))
    else:
        m = draw(st.integers(1, 32))
    group = draw(st.sampled_from([None, pp, m])) if schedule == "interleaved" else None
    first = last = None
    if pp == 2 and v == 1 and draw(st.booleans()):
        first = draw(st.integers(0, model.layers))
        last = model.layers - first
    elif pp > 2 and v == 1 and draw(st.booleans()):
        first, last = draw(st.integers(0, model.layers // pp)), draw(st.integers(0, model.layers // pp))
    zero_stage = draw(st.sampled_from(ZERO_STAGES))
    sp = tp > 1 and draw(st.booleans())
    algorithms = [a for a in DP_ALGORITHMS if a != "nvls" or cluster.intra.nvls_bytes_per_s]
    plan = Plan(
        tp=tp, pp=pp, dp=dp, cp=cp, micro_batch=micro_batch, global_batch=m * micro_batch * dp, zero_stage=zero_stage,
        recompute=draw(st.sampled_from(RECOMPUTE_MODES)), sequence_parallel=sp, schedule=schedule, virtual_stages=v,
        flash_attention=draw(st.booleans()), dp_algorithm=draw(st.sampled_from(algorithms)), dp_overlap=draw(st.booleans()),
        pp_overlap=draw(st.booleans()), bucket_bytes=draw(st.sampled_from([None, 1e6, 1e9])),
        optimizer_state=draw(st.sampled_from(sorted(OPTIMIZER_STATES))), offload_optimizer=zero_stage >= 1 and draw(st.booleans()),
        tp_comm_overlap=sp and draw(st.booleans()), grad_reduce_dtype=draw(st.sampled_from(GRAD_REDUCE_DTYPES)),
        first_stage_layers=first, last_stage_layers=last, microbatch_group_size=group,
    )
    validate(model, cluster, plan)
    return model, cluster, plan


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_plans())
def test_estimate_outputs_finite_and_mfu_at_most_one(case):
    model, cluster, plan = case
    e = estimate(model, cluster, plan)
    for name, value in {**e.memory.as_dict(), **e.time.as_dict(), **e.comm_bytes_per_gpu}.items():
        finite_non_negative(name, value)
    for name in ("bubble_fraction", "model_flops_per_step", "hardware_flops_per_step", "dp_exposed_latency_s", "step_time_s",
                 "model_tflops_per_gpu", "hardware_tflops_per_gpu", "tokens_per_s", "mfu", "hfu"):
        finite_non_negative(name, getattr(e, name))
    finite_non_negative("dp_comm_cost", [e.dp_comm_cost.latency_s, e.dp_comm_cost.bandwidth_s])
    assert e.dp_exposed_bandwidth_s >= -1e-12 * e.step_time_s
    if e.offload is not None:
        finite_non_negative("offload", [getattr(e.offload, f) for f in e.offload.__dataclass_fields__])
    assert e.step_time_s > 0
    assert e.bubble_fraction < 1
    assert 0 < e.mfu <= e.hfu * (1 + 1e-12) and e.hfu <= 1, (e.mfu, e.hfu, plan)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["llama2-7b", "seed-100m", "llama3-8b"]), st.sampled_from(["dgx-h100", "dgx-a100"]), st.integers(1, 4),
       st.sampled_from([8, 16, 32, 64, 128, 96]), st.sampled_from((None,) + ERA_NAMES))
def test_sweep_rows_finite_and_mfu_at_most_one(model_key, cluster_key, nodes, global_batch, era):
    try:
        rows = sweep(Model.get(model_key), Cluster.get(cluster_key, nodes), global_batch, era)
    except ValueError as err:
        assert "no valid plan" in str(err) or "runs on AMD GPUs" in str(err)  # a ROCm stack on an NVIDIA cluster
        return
    assert len(rows)
    numeric = rows.select_dtypes(include=[np.number, bool])
    for column in numeric.columns:
        finite_non_negative(column, numeric[column].to_numpy(dtype=float))
    assert (rows.step_time_s > 0).all()
    assert (rows.bubble_fraction < 1).all()
    assert (rows.mfu > 0).all() and (rows.mfu <= rows.hfu * (1 + 1e-12)).all() and (rows.hfu <= 1).all(), rows[["mfu", "hfu"]].max()


# Attention-bound models: Megatron's MFU counts all of attention's s^2 work (4 b s^2 h per layer
# forward) while flash attention executes the causal half; HFU adds the recomputed attention. Each
# is a share of what the GPU can do, so neither may pass 1 at long context either.
LONG_CONTEXT = [
    ("dgx-a100", 32_768, 8, 1, "none"),
    ("dgx-a100", 131_072, 1, 8, "none"),
    ("dgx-a100", 1 << 20, 1, 8, "none"),
    ("dgx-h100", 131_072, 8, 1, "selective"),
    ("dgx-h100", 1 << 20, 1, 8, "full"),
]


@pytest.mark.parametrize("measure", ["mfu", "hfu"])
@pytest.mark.parametrize("key, seq_len, tp, cp, recompute", LONG_CONTEXT, ids=[f"{k}-s{s}-tp{t}-cp{c}-{r}" for k, s, t, c, r in LONG_CONTEXT])
def test_long_context_utilisation_at_most_one(measure, key, seq_len, tp, cp, recompute):
    e = estimate(Model.get("llama3-8b", seq_len=seq_len), Cluster.get(key, 1), Plan(tp=tp, cp=cp, global_batch=1, recompute=recompute))
    value = getattr(e, measure)
    assert math.isfinite(value) and 0 < value <= 1, f"{measure} = {value:.3f}"


@pytest.mark.parametrize("measure", ["mfu", "hfu"])
def test_long_context_sweep_utilisation_at_most_one(measure):
    rows = sweep(Model.get("llama3-8b", seq_len=131_072), Cluster.get("dgx-a100", 1), 8)
    assert (rows[measure] > 0).all() and rows[measure].max() <= 1, f"max {measure} = {rows[measure].max():.3f}"


# ---- the reliability audit's rows (reviews/reliability_e349cc8.md) -------------------------------
# M4/E1: each entry point it lists raised OverflowError on an integer no float holds
# (validation.check_positive called math.isfinite before comparing with the bound)
AUDIT_M4 = {
    "Plan(tp)": (lambda v: Plan(tp=v), "tp"),
    "Plan(global_batch)": (lambda v: Plan(global_batch=v), "global_batch"),
    "Model.get(layers)": (lambda v: Model.get("llama2-7b", layers=v), "layers"),
    "Cluster.get(nodes)": (lambda v: Cluster.get("dgx-h100", nodes=v), "nodes"),
    "collective_cost(n)": (lambda v: collectives.collective_cost("all_reduce", 1e9, v, 1e11), "n"),
    "bubble_fraction(p)": (lambda v: pipeline.bubble_fraction(v, 8), "p"),
    "timeline(p)": (lambda v: pipeline.timeline(v, 8), "p"),
    "OpCosts(tf)": (lambda v: OpCosts(tf=v), "tf"),
    "job_mtbf_s": (lambda v: reliability.job_mtbf_s(v), "gpus"),
    "young_interval": (lambda v: reliability.young_interval(v, 1e4), "checkpoint_s"),
    "causal_imbalance": (lambda v: _context.causal_imbalance(v, "zigzag", 8), "cp"),
    "model_state_bytes": (lambda v: memory.model_state_bytes(v, 1, 8), "params"),
    "sweep(global_batch)": (lambda v: sweep(**{**SWEEP, "global_batch": v}), "global_batch"),
}


@pytest.mark.parametrize("value", [10**400, -(10**400), 16 * 10**400, Fraction(10**400), Fraction(-(10**400), 3)], ids=["1e400", "-1e400", "16e400", "Fraction", "-Fraction/3"])
@pytest.mark.parametrize("entry", AUDIT_M4, ids=list(AUDIT_M4))
def test_integers_beyond_a_float_are_refused_by_name(entry, value):
    call, name = AUDIT_M4[entry]
    with pytest.raises(ValueError, match=rf"\b{name}\b") as err:
        call(value)
    assert len(str(err.value)) < 300, "the message quotes the whole number"


# E5: cadence_curve(1e-6, 1e10, 1e-9) returned NaN shares (restart_s * e^(C/M) over an infinite total)
@pytest.mark.parametrize("args, names", [
    ((1e-6, 1e10, 1e-9), ("checkpoint_s", "mtbf_s")),
    ((4179583659.88, 4179583659.88, 1e-12), ("checkpoint_s", "mtbf_s")),
    ((0.0, 1e10, 1e-3, 200, 1e3), ("write_s", "mtbf_s")),
])
def test_cadence_curve_refuses_stalls_no_segment_survives(args, names):
    with pytest.raises(ValueError, match=".*".join(names)):
        reliability.cadence_curve(*args)


@RANDOM
@given(c=st.floats(0, reliability.MAX_SECONDS), r=st.floats(0, reliability.MAX_SECONDS), m=st.floats(1e-12, reliability.MAX_SECONDS), w=st.floats(0, reliability.MAX_SECONDS))
def test_cadence_curve_is_finite_or_refused(c, r, m, w):
    try:
        curve = reliability.cadence_curve(c, r, m, 50, w)
    except ValueError:
        return
    for key, column in curve.items():
        assert np.isfinite(column).all(), key


def test_a_pipeline_rank_with_no_layer_prices_its_zero3_gathers():
    """first/last_stage_layers=0 leaves the end ranks only the embedding and the output layer; with
    a large vocabulary the first is the heaviest rank. Its ZeRO-3 gathers were 0 modules' worth,
    divided by 0 (a nan step time); it gathers what it holds in one call, so ZeRO-3 waits longer
    for its data parallelism than ZeRO-1 on the same plan."""
    model, cluster = Model.get("seed-12l-512"), Cluster.get("dgx-h100", 2)
    plans = {z: Plan(tp=1, pp=8, dp=2, micro_batch=1, global_batch=16, zero_stage=z, first_stage_layers=0, last_stage_layers=0)
             for z in (1, 3)}
    estimates = {z: estimate(model, cluster, p) for z, p in plans.items()}
    for e in estimates.values():
        finite_non_negative("step_time_s", e.step_time_s)
        finite_non_negative("dp_comm", e.time.dp_comm)
    assert estimates[3].time.dp_comm > estimates[1].time.dp_comm
