"""`sweep()`: every valid plan for a model on a cluster, evaluated in one vectorised pass.

The plan space (tp, pp, dp, cp, micro_batch, zero_stage, recompute, sequence_parallel, schedule,
virtual_stages) is enumerated as integer columns and run through labs.core.engine.step.evaluate, the
same function `estimate()` runs on one plan. `era=` limits the space to what a published run's
software could do (labs.core.engine.eras) and sets the era's defaults for the fixed settings.
"""

from __future__ import annotations

import sys
from functools import lru_cache, partial
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from labs.core.engine.context import ulysses_fits
from labs.core.engine.eras import ERA_FIELDS, GRAD_SYNCS, check_stack_on_gpu, get_era, stack_of
from labs.core.engine.hardware import Cluster
from labs.core.engine.memory import optimizer_state
from labs.core.engine.models import ALL_RECOMPUTE_MODES, RECOMPUTE_MODES, Model
from labs.core.engine.perf import PLAN_SCHEDULES, Plan, check_plan_field, peak_flops
from labs.core.engine.pipeline import SCHEDULES
from labs.core.engine.precision import check_precision_on, precision_code
from labs.core.engine.step import evaluate
from labs.core.engine.topology import check_algorithm
from labs.core.engine.validation import check_positive

if TYPE_CHECKING:
    import pandas as pd

SWEPT = ("tp", "pp", "cp", "ep", "micro_batch", "zero_stage", "recompute", "sequence_parallel", "schedule", "virtual_stages")
FIXED_ONLY = ("flash_attention", "dp_algorithm", "dp_overlap", "pp_overlap", "bucket_bytes", "tp_comm_overlap", "grad_reduce_dtype", "optimizer_state", "cp_algorithm", "precision", "grad_sync", "torch_compile")
DEFAULT_CHOICES = {
    "micro_batch": [1, 2, 4, 8],
    "zero_stage": [0, 1, 2, 3],
    "recompute": list(RECOMPUTE_MODES),
    "sequence_parallel": [False, True],
    "schedule": [s for s in PLAN_SCHEDULES if s != "dualpipe"],  # DualPipe doubles the parameters: swept when asked for
    "virtual_stages": [1, 2, 3, 4, 6, 8],
    "cp": [1, 2, 4, 8],
}
# The sweep offers context parallelism down to 4,096 tokens a rank: NVIDIA's H100 recipes use CP=2
# at 8,192 tokens and none at 2,048 (NeMo model_configs_h100.csv). Shorter blocks run flash
# attention less efficiently, which the engine does not model, so it does not offer them.
MIN_TOKENS_PER_CP_RANK = 4096
MAX_PLANS = 5_000_000


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple, set, range, np.ndarray)) else [value]


def _model_cluster(model, cluster):
    if not isinstance(model, Model):
        raise ValueError(f"model must be a Model, got {model!r}")
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a Cluster, got {cluster!r}")


def _settings(cluster: Cluster, era, fixed: dict) -> tuple[dict, dict]:
    """(choices of the swept fields, values of the fixed-only fields), each value checked."""
    unknown = set(fixed) - set(SWEPT) - set(FIXED_ONLY) - {"dp"}
    if unknown:
        raise ValueError(f"unknown Plan field(s) {sorted(unknown)}; sweepable: {', '.join(SWEPT + FIXED_ONLY + ('dp',))}")
    spec = get_era(era)
    if spec is not None:
        check_stack_on_gpu(spec, cluster.gpu)
    plan_defaults = Plan()
    options = {k: (getattr(spec, k)[0] if spec and k in ERA_FIELDS else getattr(plan_defaults, k)) for k in FIXED_ONLY}
    for name in FIXED_ONLY:
        if name in fixed:
            check_plan_field(name, fixed[name])
            if spec and name in ERA_FIELDS and fixed[name] not in getattr(spec, name):
                raise ValueError(f"{name}={fixed[name]!r} is not available in era {spec.name!r}; it allows {getattr(spec, name)}")
            options[name] = fixed[name]
    check_algorithm(cluster, options["dp_algorithm"])
    if options["tp_comm_overlap"] and stack_of(era).tp_overlap_kind == "async_tp" and not options["torch_compile"]:
        raise ValueError(f"tp_comm_overlap in era {era!r} is AsyncTP, which needs torch_compile=True")
    check_precision_on(cluster.gpu, options["precision"])
    choices = {name: list(values) for name, values in DEFAULT_CHOICES.items()}
    if spec:
        for name in ("zero_stage", "recompute", "sequence_parallel", "schedule"):
            choices[name] = [x for x in choices[name] if x in getattr(spec, name)]
    for name in SWEPT + ("dp",):
        if name in fixed:
            values = _as_list(fixed[name])
            if not values:
                raise ValueError(f"{name} must list at least one value")
            for value in values:
                check_plan_field(name, value.item() if isinstance(value, np.generic) else value)
                if spec and name in ERA_FIELDS and value not in getattr(spec, name):
                    raise ValueError(f"{name}={value!r} is not available in era {spec.name!r}; it allows {getattr(spec, name)}")
            choices[name] = list(dict.fromkeys(v.item() if isinstance(v, np.generic) else v for v in values))
    return choices, options


def plan_space(model: Model, cluster: Cluster, global_batch: int, era: str | None = None, **fixed) -> pd.DataFrame:
    """Every plan that passes Plan and validate(), as a DataFrame (no estimates yet)."""
    _model_cluster(model, cluster)
    check_positive("global_batch", global_batch, integer=True, maximum=1 << 31)
    choices, options = _settings(cluster, era, dict(fixed))
    space = _space(model, cluster, global_batch, choices, get_era(era), options["cp_algorithm"])
    import pandas as pd  # here, not at the top: a lab that never sweeps starts 0.4 s sooner

    names = {"recompute": np.asarray(ALL_RECOMPUTE_MODES, dtype=object)[space["_recompute_code"]],
             "schedule": np.asarray(SCHEDULES, dtype=object)[space["_schedule_code"]]}
    return pd.DataFrame({k: names.get(k, space.get(k)) for k in PLAN_SPACE_COLUMNS})


PLAN_SPACE_COLUMNS = ("tp", "pp", "dp", "cp", "ep", "micro_batch", "zero_stage", "recompute", "sequence_parallel", "schedule", "virtual_stages", "global_batch")


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _space(model: Model, cluster: Cluster, global_batch: int, choices: dict, spec, cp_algorithm: str | None = None) -> dict[str, np.ndarray]:
    """The plan space as numpy columns (recompute and schedule as codes into ALL_RECOMPUTE_MODES
    and SCHEDULES): a product of the choices, in the order layout, micro_batch, zero_stage,
    recompute, sequence_parallel, schedule with virtual_stages, filtered by the same rules Plan
    and validate() apply. Each rule is checked on the fewest choices it reads (a layout's, with
    a micro-batch size, with a schedule) and the product keeps the rows that pass them all.
    No rule reads the ZeRO stage, so every row has a sibling at each ZeRO choice, the same but
    for it: `_zero_index` is a row's choice and `_zero_base` the row of its sibling at the first;
    `_layout` numbers a row's layout (its rows are consecutive) and `_batch_key` its layout, ZeRO
    stage and schedule (labs.core.engine.search._row_groups)."""
    n = cluster.gpus
    tps = [t for t in choices.get("tp", _divisors(n)) if model.heads % t == 0]
    pps = [p for p in choices.get("pp", _divisors(n)) if p <= model.layers and (not spec or p <= spec.max_pp)]
    eps = choices.get("ep", [e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256) if model.experts and model.experts % e == 0] or [1])
    eps = [e for e in eps if e == 1 or (model.experts and model.experts % e == 0)]
    t, p, c, e = (a.ravel() for a in np.meshgrid(*(np.asarray(x, dtype=np.int64) for x in (tps, pps, choices["cp"], eps or [0])), indexing="ij"))
    cp_ok = (c == 1) | ((model.seq_len % c == 0) & (model.seq_len // c >= MIN_TOKENS_PER_CP_RANK))
    if spec:
        cp_ok &= c <= spec.max_cp
    if cp_algorithm == "ulysses":  # whole query heads per CP rank, K/V heads split or repeated (labs.core.engine.context.check_ulysses)
        cp_ok &= ulysses_fits(model.heads / t, model.kv_head_count / t, c)
    fits_gpus = n % (t * p * c) == 0
    layouts = np.flatnonzero(fits_gpus & cp_ok & (e > 0) & ((np.where(fits_gpus, n // (t * p * c), 1) * c) % np.maximum(e, 1) == 0))
    sched_v = [(SCHEDULES.index(s), v) for s in choices["schedule"] for v in choices["virtual_stages"] if (v >= 2) == (s == "interleaved")]
    sched_v = np.array(sched_v, dtype=np.int64).reshape(-1, 2)
    rc_codes = np.array([ALL_RECOMPUTE_MODES.index(x) for x in choices["recompute"]], dtype=np.int64)
    mbs = np.asarray(choices["micro_batch"], dtype=np.int64)
    zeros_ = np.asarray(choices["zero_stage"], dtype=np.int64)
    sps = np.asarray(choices["sequence_parallel"], dtype=bool)
    shape = (len(layouts), len(mbs), len(zeros_), len(rc_codes), len(sps), len(sched_v))
    if np.prod(shape, dtype=float) > MAX_PLANS:
        raise ValueError(f"the plan space has {int(np.prod(shape, dtype=float)):,} candidates, more than {MAX_PLANS:,}: fix some of tp, pp, micro_batch, virtual_stages")
    t, p, c, e = t[layouts], p[layouts], c[layouts], e[layouts]
    dp = n // (t * p * c)
    # a layout with a micro-batch size: (layouts, micro_batch)
    batch_ok = global_batch % (mbs * dp[:, None]) == 0
    if "dp" in choices:
        batch_ok &= np.isin(dp, choices["dp"])[:, None]
    m = global_batch // (mbs * dp[:, None])
    # ... with a schedule: (layouts, micro_batch, schedule)
    pp, m, sched, v = p[:, None, None], m[:, :, None], sched_v[:, 0], sched_v[:, 1]
    min_pp = spec.interleave_min_pp if spec else 2
    sched_ok = batch_ok[:, :, None] & ((sched != SCHEDULES.index("interleaved")) | ((pp >= min_pp) & (m % pp == 0) & (pp * v <= model.layers)))
    sched_ok &= (pp > 1) | (sched == SCHEDULES.index("1f1b"))
    sched_ok &= (sched != SCHEDULES.index("dualpipe")) | ((pp % 2 == 0) & (m % 2 == 0) & (m >= 2 * pp))  # dualpipe.py's asserts (Plan's check)
    sp_ok = ~(sps & (t == 1)[:, None])  # (layouts, sequence_parallel)
    return _product(shape, sched_ok[:, :, None, :] & sp_ok[:, None, :, None], t, p, dp, c, e, mbs, zeros_, rc_codes, sps, sched_v, global_batch)


def _product(shape, ok, t, p, dp, c, e, mbs, zeros_, rc_codes, sps, sched_v, global_batch) -> dict[str, np.ndarray]:
    """_space's columns: the rows of the product `shape` (layouts, micro_batch, zero_stage,
    recompute, sequence_parallel, schedule) in that nesting order whose (layout, micro_batch,
    sequence_parallel, schedule) `ok` holds (no rule reads the ZeRO stage or recompute). A layout
    with a micro-batch size (a `group`) holds, ZeRO choice by ZeRO choice and recompute by
    recompute (a `block` each), its `ok` (SP, schedule) pairs in order, `same` rows each: every
    column is a short array repeated block by block or group by group, or taken at each row's
    pair (not numpy's unravel_index of the whole product's flat indices: ~3x the time)."""
    layouts, n_mb, n_zero, n_rc, n_sp, n_sv = shape
    pairs = np.flatnonzero(ok)  # (layout, micro_batch, SP, schedule) flat indices that pass
    same = np.count_nonzero(ok.reshape(layouts * n_mb, -1), axis=-1)  # pairs a group holds
    per_group = n_zero * n_rc
    rows_of_group = same * per_group
    rows = int(rows_of_group.sum())
    block_rows = np.repeat(same, per_group)  # blocks: (group, zero, recompute)
    block_start = np.cumsum(block_rows) - block_rows
    first_pair = np.repeat(np.cumsum(same) - same, per_group)  # a block's first pair in `pairs`
    row = np.arange(rows)
    at_pair = pairs.take(row - np.repeat(block_start - first_pair, block_rows))  # each row's pair
    sv = at_pair % n_sv
    rows_of_layout = rows_of_group.reshape(layouts, n_mb).sum(axis=1)
    layout = np.repeat(np.arange(layouts), rows_of_layout)
    zi = np.repeat(np.tile(np.repeat(np.arange(n_zero), n_rc), layouts * n_mb), block_rows)
    zero_offset = np.tile(np.repeat(np.arange(n_zero), n_rc), layouts * n_mb) * np.repeat(same * n_rc, per_group)
    batch_key = (np.repeat(np.arange(layouts), n_mb * per_group) * n_zero + np.tile(np.repeat(np.arange(n_zero), n_rc), layouts * n_mb)) * n_sv
    return {
        "tp": np.repeat(t, rows_of_layout), "pp": np.repeat(p, rows_of_layout), "dp": np.repeat(dp, rows_of_layout),
        "cp": np.repeat(c, rows_of_layout), "ep": np.repeat(e, rows_of_layout),
        "micro_batch": np.repeat(np.tile(mbs, layouts), rows_of_group), "zero_stage": np.repeat(np.tile(np.repeat(zeros_, n_rc), layouts * n_mb), block_rows),
        "sequence_parallel": sps.take(at_pair // n_sv % n_sp), "virtual_stages": sched_v[:, 1].take(sv), "global_batch": np.full(rows, global_batch),
        "_recompute_code": np.repeat(np.tile(rc_codes, layouts * n_mb * n_zero), block_rows), "_schedule_code": sched_v[:, 0].take(sv),
        "_layout": layout, "_zero_index": zi, "_zero_base": row - np.repeat(zero_offset, block_rows),
        "_batch_key": np.repeat(batch_key, block_rows) + sv,
    }


def _columns(space: dict, options: dict) -> dict:
    """The plan columns of labs.core.engine.step.evaluate; a setting every row shares is one value
    seen as a column (a read-only broadcast, no memory per row), in the dtype read_plan reads."""
    sp = space["sequence_parallel"]
    rows = len(sp)

    def same(value, dtype=float):
        return np.broadcast_to(np.asarray(value, dtype=dtype), (rows,))

    return {
        **{k: space[k] for k in ("tp", "pp", "dp", "cp", "micro_batch", "zero_stage", "sequence_parallel", "virtual_stages")},
        "global_batch": same(space["global_batch"][0]),
        "recompute": space["_recompute_code"], "schedule": space["_schedule_code"],
        "flash_attention": same(options["flash_attention"], bool),
        "tp_comm_overlap": _tp_comm_overlap(sp, options),
        "grad_fp32": same(options["grad_reduce_dtype"] == "fp32", bool),
        "dp_overlap": same(options["dp_overlap"], bool), "pp_overlap": same(options["pp_overlap"], bool),
        "bucket_bytes": same(float(options["bucket_bytes"] or 0.0)),
        "optimizer_bytes": same(float(optimizer_state(options["optimizer_state"]).bytes_per_param)),
        "offload": same(False, bool),
        "first_stage_layers": same(-1), "last_stage_layers": same(-1), "microbatch_group_size": same(-1),
        "reshard_after_forward": same(True, bool), "shard_group_size": same(-1),
        "cp_ring": same(options["cp_algorithm"] in ("ring", "ring_contiguous"), bool),
        "cp_ulysses": same(options["cp_algorithm"] == "ulysses", bool),
        "cp_contiguous": same(options["cp_algorithm"] == "ring_contiguous", bool),
        "fp8": same(precision_code(options["precision"]), int),
        "ep": space["ep"], "capacity_factor": same(0.0), "max_nodes_per_token": same(0.0),
        "grad_sync": same(GRAD_SYNCS.index(options["grad_sync"]), int), "torch_compile": same(options["torch_compile"], bool),
    }


def _tp_comm_overlap(sp: np.ndarray, options: dict) -> np.ndarray:
    """The tp_comm_overlap column of rows whose sequence_parallel column is `sp`: the option, on
    wherever SP allows it (sweep() reads it of its rows in order from their SP: no gather)."""
    return sp & options["tp_comm_overlap"]


# Rows evaluated at once: a block's temporary columns stay at most 192 KiB each (24,576 float64
# rows) however large the space, unless one layout has more rows. Larger columns make glibc's
# default allocator map fresh pages or trim its heap back after each sweep, so every call
# page-faults them again (bench_sweep.py's cases at 65,536: ~1 KB of faults a plan; none here);
# fewer rows a block cost more than they save: each block runs the stages' Python once.
BLOCK_ROWS = 24_576
SWEEP_OUTPUTS = ("memory_bytes", "step_time_s", "bubble_fraction", "model_flops", "hardware_flops", "dp_comm_s", "dp_exposed_latency_s")


def _row_groups(space: dict, start: int, stop: int) -> SimpleNamespace:
    """Which of the space's rows start:stop (whole layouts) differ only in a few fields
    (labs.core.engine.step.evaluate's groups), each as (a row of each group, every row's group): `zero`,
    only in the ZeRO stage (each row's sibling at the first ZeRO choice stands for it); `batch`,
    only in the micro-batch size, recompute and SP (rows of one layout, ZeRO stage and schedule)."""
    first = space["_zero_index"][start:stop] == 0
    base = space["_zero_base"][start:stop] - start
    zero = (np.flatnonzero(first), (np.cumsum(first) - 1).take(base)) if not first.all() else None
    key = space["_batch_key"][start:stop]
    present = np.zeros(int(key.max()) + 1, dtype=bool)
    present[key] = True
    index = (np.cumsum(present) - 1).take(key)
    reps = np.empty(int(index.max()) + 1, dtype=np.intp)
    reps[index] = np.arange(len(key))  # any row of a group stands for it
    # Groups of one or two rows would cost more to gather and spread than they save: none.
    return SimpleNamespace(zero=zero, batch=(reps, index) if 2 * len(reps) < len(key) else None)


def _blocks(layout: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of the blocks sweep() evaluates at once: whole layouts (whose rows hold every
    group of _row_groups), as many as fit in BLOCK_ROWS rows (a larger layout alone)."""
    rows = len(layout)
    if rows <= BLOCK_ROWS:
        return [(0, rows)]
    cuts, last = [0], 0
    for start in np.flatnonzero(layout[1:] != layout[:-1]).tolist() + [rows - 1]:
        start += 1  # a layout's first row (the end, last)
        if start - cuts[-1] > BLOCK_ROWS and last > cuts[-1]:
            cuts.append(last)
        last = start
    return list(zip(cuts, cuts[1:] + [rows]))


def _evaluate_blocks(model: Model, cluster: Cluster, cols: dict, dp_algorithm: str, stack, space: dict) -> dict[str, np.ndarray]:
    """The outputs sweep() shows of labs.core.engine.step.evaluate over the plan columns, run on blocks
    of whole layouts (_blocks), each with its rows' groups."""
    outs = [evaluate(model, cluster, {k: v[start:stop] for k, v in cols.items()}, dp_algorithm, stack, brief=True,
                     groups=_row_groups(space, start, stop)) for start, stop in _blocks(space["_layout"])]
    return {k: np.concatenate([out[k] for out in outs]) if len(outs) > 1 else outs[0][k] for k in SWEEP_OUTPUTS}


def _best_first(fits: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, int]:
    """The sweep's row order, fitting plans by step time and then the rest (ties keep the
    space's order), and how many fit."""
    fit, rest = np.flatnonzero(fits), np.flatnonzero(~fits)
    if not (np.signbit(step).any() or np.isnan(step).any()) and sys.byteorder == "little":  # non-negative floats sort as their bits
        order = _radix_argsort
    else:
        order = partial(np.argsort, kind="stable")
    return np.concatenate([fit.take(order(step.take(fit))), rest.take(order(step.take(rest)))]), len(fit)


def _radix_argsort(x: np.ndarray) -> np.ndarray:
    """np.argsort(x, kind="stable") of non-negative float64s (ordered as their bit patterns): four
    stable passes over their 16-bit digits, least significant first, each a radix sort in numpy
    (~2x faster than one stable sort of 37,000 step times)."""
    digits = x.view(np.uint16).reshape(-1, 4)  # little-endian: the least significant digit first
    order = np.argsort(digits[:, 0], kind="stable")
    for k in (1, 2, 3):
        order = order.take(np.argsort(digits[:, k].take(order), kind="stable"))
    return order


def _pareto(step: np.ndarray, memory: np.ndarray) -> np.ndarray:
    """Which of the fitting plans, sorted by step time (ties in the space's order), no other
    fitting plan beats on both memory and step time: of each run of equal step times, the first
    of least memory, when that memory is below every faster plan's."""
    front = np.zeros(len(step), dtype=bool)
    if len(step) == 0:
        return front
    tied = (step[1:] == step[:-1]) | (np.isnan(step[1:]) & np.isnan(step[:-1]))  # nan sorts last, as one run
    runs = np.cumsum(np.concatenate([[0], ~tied]))
    starts = np.flatnonzero(np.concatenate([[True], ~tied]))
    least = np.minimum.reduceat(memory, starts)
    faster = np.concatenate([[np.inf], np.minimum.accumulate(least)[:-1]])
    first_least = np.minimum.reduceat(np.where(memory == least.take(runs), np.arange(len(step)), len(step)), starts)
    front[first_least[least < faster]] = True
    return front


def sweep(model: Model, cluster: Cluster, global_batch: int, era: str | None = None, **fixed) -> pd.DataFrame:
    """Every valid plan, one row each: Plan fields and the Estimate's numbers under the same
    names, sorted best first (fitting plans by step time, then the rest); `pareto` marks the
    memory-vs-time front. Any Plan field in `fixed` (a value or a list) restricts the space;
    `era` keeps to what that era's software could do (labs.core.engine.eras.ERA_NAMES)."""
    import pandas as pd

    return pd.DataFrame(_sweep_columns(model, cluster, global_batch, era, fixed, named=True), copy=False)


def sweep_numbers(model: Model, cluster: Cluster, global_batch: int, era: str | None = None, **fixed) -> dict[str, np.ndarray]:
    """sweep()'s columns that vary by row and hold numbers (or bools), as numpy arrays in its row
    order, without pandas (its import costs ~0.2 s of CPU): no recompute or schedule names, and
    none of the settings every row shares."""
    return _sweep_columns(model, cluster, global_batch, era, fixed, named=False)


def _sweep_columns(model: Model, cluster: Cluster, global_batch: int, era: str | None, fixed: dict, named: bool) -> dict:
    """sweep()'s columns in its order; without `named`, sweep_numbers' only."""
    _model_cluster(model, cluster)
    check_positive("global_batch", global_batch, integer=True, maximum=1 << 31)
    choices, options = _settings(cluster, era, dict(fixed))
    space = _space(model, cluster, global_batch, choices, get_era(era), options["cp_algorithm"])
    if len(space["tp"]) == 0:
        raise ValueError(f"no valid plan for {model.name} on {cluster.gpus} GPUs with global_batch={global_batch} and {fixed}")
    cols = _columns(space, options)
    out = _evaluate_blocks(model, cluster, cols, options["dp_algorithm"], stack_of(era), space)
    gpus, peak = cluster.gpus, peak_flops(cluster.gpu, options["precision"])
    fits = out["memory_bytes"] <= cluster.gpu.hbm_bytes
    order, fitting = _best_first(fits, out["step_time_s"])
    step, memory = out["step_time_s"].take(order), out["memory_bytes"].take(order)
    # FLOP/s a GPU, divided in the same order as each column's formula reads (the same bits), once for both of its columns
    model_per_gpu, hardware_per_gpu = out["model_flops"].take(order) / step / gpus, out["hardware_flops"].take(order) / step / gpus
    frame = _layout_columns(space, order)
    frame.update({k: space[k].take(order) for k in ("micro_batch", "zero_stage")})
    if named:
        frame["recompute"] = _coded_names(ALL_RECOMPUTE_MODES, space["_recompute_code"].take(order))
    frame["sequence_parallel"] = space["sequence_parallel"].take(order)
    if named:
        frame["schedule"] = _coded_names(SCHEDULES, space["_schedule_code"].take(order))
    frame["virtual_stages"] = space["virtual_stages"].take(order)
    # Settings every row shares are given once: pandas repeats a number; a string is a column of
    # it (_same_name: pandas' own repeat of a string scalar takes several times longer)
    if named:
        frame.update({
            k: _same_name(value, len(order)) if isinstance(value, str) else value for k, value in {
                "global_batch": global_batch, "flash_attention": bool(options["flash_attention"]), "tp_comm_overlap": _tp_comm_overlap(frame["sequence_parallel"], options),
                "grad_reduce_dtype": options["grad_reduce_dtype"], "dp_algorithm": options["dp_algorithm"],
                "dp_overlap": bool(options["dp_overlap"]), "pp_overlap": bool(options["pp_overlap"]),
                "optimizer_state": options["optimizer_state"], "cp_algorithm": options["cp_algorithm"], "precision": options["precision"],
                "stack": era, "grad_sync": options["grad_sync"], "torch_compile": bool(options["torch_compile"]),
            }.items()})
    frame.update({
        "fits": np.arange(len(order)) < fitting,
        "memory_bytes": memory,
        "step_time_s": step,
        "bubble_fraction": out["bubble_fraction"].take(order),
        "model_tflops_per_gpu": model_per_gpu / 1e12,
        "hardware_tflops_per_gpu": hardware_per_gpu / 1e12,
        "mfu": model_per_gpu / peak,
        "hfu": hardware_per_gpu / peak,
        "tokens_per_s": global_batch * model.seq_len / step,
        "dp_comm_exposed_s": out["dp_comm_s"].take(order),
        "dp_comm_latency_s": out["dp_exposed_latency_s"].take(order),
        "tp_spans_nodes": frame["tp"] > cluster.domain_gpus,  # beyond one NVLink domain
        "pareto": np.concatenate([_pareto(step[:fitting], memory[:fitting]), np.zeros(len(order) - fitting, dtype=bool)]),
    })
    return frame


def _layout_columns(space: dict, order: np.ndarray) -> dict[str, np.ndarray]:
    """The columns a layout sets (tp, pp, dp, cp, ep) in `order`, each taken from its few layouts'
    values (a layout's rows are consecutive): a gather from the space's whole columns, cold by the
    time sweep() reads them, costs ~4x."""
    layout = space["_layout"]
    starts = np.flatnonzero(np.concatenate(([True], layout[1:] != layout[:-1])))
    ids, ordered = layout.take(starts), layout.take(order)
    columns = {}
    for k in ("tp", "pp", "dp", "cp", "ep"):
        of_layout = np.zeros(int(ids[-1]) + 1, dtype=space[k].dtype)
        of_layout[ids] = space[k].take(starts)
        columns[k] = of_layout.take(ordered)
    return columns


def _same_name(name: str, rows: int):
    """A pandas string array of `rows` times `name`: an object array filled with it, given to the
    one-name array's type as its values (its take copies each pointer through pandas' checks: ~2x
    slower), where pandas keeps strings in numpy (without pyarrow); its take elsewhere."""
    one = _names((name,))
    if not _numpy_backed(one):
        return one.take(np.zeros(rows, dtype=np.intp))
    values = np.empty(rows, dtype=object)
    values.fill(one[0])
    return one._from_backing_data(values)


def _coded_names(names: tuple[str, ...], codes: np.ndarray):
    """The pandas string array of names[code] for each code: numpy's take of the names' object
    array given to their array's type, as _same_name (pandas' own take ~1.5x slower), where
    pandas keeps strings in numpy; its take elsewhere."""
    named = _names(names)
    if not _numpy_backed(named):
        return named.take(codes)
    return named._from_backing_data(named._ndarray.take(codes))


def _numpy_backed(array) -> bool:
    """Whether a pandas string array keeps its strings in a numpy object array (no pyarrow)."""
    return hasattr(array, "_from_backing_data") and getattr(getattr(array, "_ndarray", None), "dtype", None) == object


@lru_cache(maxsize=None)
def _names(names: tuple[str, ...]):
    """A pandas string array of `names`, to take a column of them from their codes."""
    import pandas as pd

    return pd.array(names, dtype="str")


def row_plan(row) -> Plan:
    """The Plan of one sweep or plan_space row (a pandas Series or dict); a setting the row does
    not carry keeps Plan's default."""
    defaults = Plan().as_dict()
    values = {}
    for name, default in defaults.items():
        value = row.get(name, default)
        if isinstance(default, bool):
            value = bool(value)
        elif isinstance(default, int):
            value = int(value)
        elif isinstance(default, str):
            value = str(value)
        values[name] = value
    return Plan(**values)
