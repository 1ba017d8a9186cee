"""`sweep()`: every valid plan for a model on a cluster, evaluated in one vectorised pass.

The plan space (tp, pp, dp, cp, micro_batch, zero_stage, recompute, sequence_parallel, schedule,
virtual_stages) is enumerated as integer columns; the step-time and memory model of
labs.core.perf is then applied to whole numpy columns at once. `estimate()` on any row gives
the same numbers (tests/test_search.py checks a random sample).
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from labs.core import perf
from labs.core.hardware import NCCL_BASE_LATENCY_S, Cluster
from labs.core.memory import GRAD_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES
from labs.core.models import Model

SWEPT = ("tp", "pp", "cp", "micro_batch", "zero_stage", "recompute", "sequence_parallel", "schedule", "virtual_stages")
FIXED_ONLY = ("flash_attention", "dp_algorithm", "dp_overlap", "pp_overlap", "bucket_bytes")
RECOMPUTE = perf.RECOMPUTE_MODES
SCHEDULE = perf.PLAN_SCHEDULES


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple, set, range, np.ndarray)) else [value]


def plan_space(model: Model, cluster: Cluster, global_batch: int, **fixed) -> pd.DataFrame:
    """Every plan that passes Plan and validate(), as a DataFrame (no estimates yet)."""
    return pd.DataFrame(_space(model, cluster, global_batch, **fixed))


def _space(model: Model, cluster: Cluster, global_batch: int, **fixed) -> dict[str, np.ndarray]:
    """The plan space as numpy columns: a product of the choices, filtered by the same rules
    Plan and validate() apply."""
    unknown = set(fixed) - set(SWEPT) - set(FIXED_ONLY) - {"dp"}
    if unknown:
        raise ValueError(f"unknown Plan field(s) {sorted(unknown)}; sweepable: {', '.join(SWEPT + FIXED_ONLY + ('dp',))}")
    n = cluster.gpus
    choices = {
        "tp": [t for t in _divisors(n) if model.heads % t == 0],
        "pp": [p for p in _divisors(n) if p <= model.layers],
        "cp": [1],
        "micro_batch": [1, 2, 4, 8],
        "zero_stage": [0, 1, 2, 3],
        "recompute": list(RECOMPUTE),
        "sequence_parallel": [False, True],
        "schedule": list(SCHEDULE),
        "virtual_stages": [1, 2, 3, 4, 6, 8],
    }
    for name in SWEPT:
        if name in fixed:
            choices[name] = _as_list(fixed[name])
    for name in ("recompute", "schedule"):
        allowed = RECOMPUTE if name == "recompute" else SCHEDULE
        bad = [c for c in choices[name] if c not in allowed]
        if bad:
            raise ValueError(f"{name} must be among {allowed}, got {bad}")
    # Stage 1: layouts whose degrees multiply to the GPUs. Stage 2: their product with the
    # other settings, pairing each schedule only with the chunk counts it accepts.
    t, p, c = (a.ravel() for a in np.meshgrid(choices["tp"], choices["pp"], choices["cp"], indexing="ij"))
    fits_gpus = (n % (t * p * c) == 0) & (model.seq_len % c == 0)
    layouts = np.flatnonzero(fits_gpus)
    interleaved_code = SCHEDULE.index("interleaved")
    sched_v = [(SCHEDULE.index(s), v) for s in choices["schedule"] for v in choices["virtual_stages"] if (v >= 2) == (s == "interleaved")]
    sched_v = np.array(sched_v, dtype=np.int64).reshape(-1, 2)
    rc_codes = np.array([RECOMPUTE.index(x) for x in choices["recompute"]], dtype=np.int64)
    li, mb, zero, rc, sp, sv = (a.ravel() for a in np.meshgrid(
        layouts, np.asarray(choices["micro_batch"]), np.asarray(choices["zero_stage"]), rc_codes,
        np.asarray(choices["sequence_parallel"], dtype=np.int64), np.arange(len(sched_v)), indexing="ij"))
    tp, pp, cp = t[li], p[li], c[li]
    sched, v = sched_v[sv, 0], sched_v[sv, 1]
    grid = {"zero_stage": zero, "recompute": rc, "sequence_parallel": sp}
    dp = n // (tp * pp * cp)
    ok = ~((sp == 1) & (tp == 1))
    ok &= global_batch % (mb * dp) == 0
    m = global_batch // (mb * dp)
    interleaved = sched == interleaved_code
    ok &= ~interleaved | ((pp >= 2) & (m % pp == 0) & (pp * v <= model.layers))
    ok &= (pp > 1) | (sched == SCHEDULE.index("1f1b"))
    if "dp" in fixed:
        ok &= np.isin(dp, _as_list(fixed["dp"]))
    return {
        "tp": tp[ok], "pp": pp[ok], "dp": dp[ok], "cp": cp[ok], "micro_batch": mb[ok],
        "zero_stage": grid["zero_stage"][ok],
        "recompute": np.asarray(RECOMPUTE, dtype=object)[grid["recompute"][ok]],
        "sequence_parallel": grid["sequence_parallel"][ok].astype(bool),
        "schedule": np.asarray(SCHEDULE, dtype=object)[sched[ok]],
        "virtual_stages": v[ok],
        "global_batch": np.full(int(ok.sum()), global_batch),
        "_recompute_code": grid["recompute"][ok],
        "_schedule_code": sched[ok],
    }


def _group_cost(op: str, nbytes, cluster: Cluster, n, stride, algorithm: str):
    """Vectorised labs.core.topology.group_cost: (latency, bandwidth) columns."""
    n = np.asarray(n, dtype=float)
    nbytes = np.asarray(nbytes, dtype=float)
    stride = np.asarray(stride, dtype=float)
    gpn = cluster.gpus_per_node
    g = np.minimum(n, np.where(stride < gpn, np.maximum(1, gpn // np.maximum(stride, 1)), 1))
    nodes = np.ceil(n / g)
    intra, inter = cluster.intra, cluster.inter
    intra_bw, inter_bw = intra.effective_bytes_per_s, cluster.inter_bytes_per_s_per_gpu
    share = {"all_reduce": 2.0, "reduce_scatter": 1.0, "all_gather": 1.0}[op]
    frac = np.where(n > 1, (n - 1) / np.maximum(n, 1), 0.0)

    def steps(k):
        if algorithm == "tree":
            return share * np.ceil(np.log2(np.maximum(k, 1)))
        return share * (k - 1)

    # one node
    lat1 = steps(n) * intra.latency_s
    bw1 = share * frac * nbytes / intra_bw
    # hierarchical across nodes
    g_frac = np.where(g > 1, (g - 1) / g, 0.0)
    k_frac = np.where(nodes > 1, (nodes - 1) / nodes, 0.0)
    inside_lat = (g - 1) * intra.latency_s
    inside_bw = g_frac * nbytes / intra_bw
    across_lat = share * (nodes - 1) * inter.latency_s
    across_bw = share * k_frac * (nbytes / g) / inter_bw
    reps = 2.0 if op == "all_reduce" else 1.0
    lat_h = reps * inside_lat + across_lat
    bw_h = reps * inside_bw + across_bw
    # flat across nodes
    bw_f = share * frac * nbytes / inter_bw
    if algorithm == "tree":
        lat_f = 2 * np.ceil(np.log2(np.maximum(n, 1))) * inter.latency_s
    else:
        net = share * (nodes - 1)
        lat_f = (share * (n - 1) - net) * intra.latency_s + net * inter.latency_s
    hier = (algorithm == "hierarchical") & (g > 1)
    lat = np.where(nodes == 1, lat1, np.where(hier, lat_h, lat_f))
    bw = np.where(nodes == 1, bw1, np.where(hier, bw_h, bw_f))
    active = (n > 1) & (nbytes > 0)
    return np.where(active, lat + NCCL_BASE_LATENCY_S, 0.0), np.where(active, bw, 0.0)


def _activation_bytes(s, b, h, tp, sp, attention):
    """Vectorised Korthikanti per-layer bytes (memory.activation_bytes_per_layer, recompute
    none or selective): `attention` is the 5as/h term, 0 where it is not stored."""
    return np.where(sp, s * b * h * (34 + attention) / tp, s * b * h * (10 + 24 / tp + attention / tp))


def evaluate(model: Model, cluster: Cluster, frame, flash_attention=False, dp_algorithm="ring", dp_overlap=True, pp_overlap=True, bucket_bytes=None) -> dict[str, np.ndarray]:
    """The Estimate's numbers for every row of a plan space (columns from _space or a
    DataFrame), in one numpy pass; returns the plan columns plus the results."""
    gpu = cluster.gpu
    f = {c: np.asarray(frame[c]) for c in (frame.columns if isinstance(frame, pd.DataFrame) else frame)}
    tp, pp, dp, cp, b = (f[k].astype(float) for k in ("tp", "pp", "dp", "cp", "micro_batch"))
    zero, v = f["zero_stage"], f["virtual_stages"].astype(float)
    rc = f["_recompute_code"] if "_recompute_code" in f else pd.Categorical(f["recompute"], categories=RECOMPUTE).codes
    sp = f["sequence_parallel"].astype(bool)
    sched = f["_schedule_code"] if "_schedule_code" in f else pd.Categorical(f["schedule"], categories=SCHEDULE).codes
    gb = f["global_batch"].astype(float)
    m = gb / (b * dp)
    h, a, L, V = model.hidden, model.heads, model.layers, model.vocab
    s = model.seq_len / cp
    matmul_rate = gpu.bf16_flops * gpu.matmul_efficiency
    hbm_rate = gpu.hbm_bytes_per_s * gpu.hbm_efficiency

    # one layer, one micro-batch
    gemm_fwd = b * (2 * s * model.layer_matmul_params + 4 * s * model.seq_len * h) / tp / matmul_rate
    attn_term = 0.0 if flash_attention else 5 * a * s / h
    written = _activation_bytes(s, b, h, tp, sp, attn_term)
    elementwise = perf.ELEMENTWISE_TRAFFIC * written / hbm_rate
    fwd = gemm_fwd + elementwise
    bwd = 2 * gemm_fwd + elementwise
    act = b * s * h * perf.ACTIVATION_BYTES
    lat, bw = _group_cost("all_reduce", act, cluster, tp, 1, "ring")
    comm_fwd = 2 * (lat + bw)
    comm_bwd = comm_fwd.copy()
    kv = 2 * b * model.seq_len * model.kv_dim / tp * perf.ACTIVATION_BYTES
    ag = sum(_group_cost("all_gather", kv, cluster, cp, tp, "ring"))
    rs = sum(_group_cost("reduce_scatter", kv, cluster, cp, tp, "ring"))
    comm_fwd = comm_fwd + ag
    comm_bwd = comm_bwd + rs
    full = rc == RECOMPUTE.index("full")
    selective = (rc == RECOMPUTE.index("selective")) & (not flash_attention)
    attention_gemm = b * 4 * s * model.seq_len * h / tp / matmul_rate
    attention_written = 0.0 if flash_attention else b * 5 * a * s * s / tp
    bwd = np.where(full, bwd + fwd, np.where(selective, bwd + attention_gemm + perf.ELEMENTWISE_TRAFFIC * attention_written / hbm_rate, bwd))
    comm_bwd = np.where(full, comm_bwd + comm_fwd, comm_bwd)
    tp_comm = comm_fwd + comm_bwd

    layers = np.ceil(L / (pp * v)) * v  # the heaviest stage, as perf.stage_layers
    logits = b * model.logits_forward_flops() / cp / tp / matmul_rate
    stage_fwd = layers * fwd + logits
    stage_bwd = layers * bwd + 2 * logits
    stage_tp = layers * tp_comm
    per_mb = stage_fwd + stage_bwd + stage_tp
    work = stage_fwd + stage_bwd
    zb = sched == SCHEDULE.index("zb-h1")
    idle = np.where(zb, (pp - 1) * stage_fwd, (pp - 1) * work / v)
    bubble = np.where(pp > 1, idle / (m * work + idle), 0.0)
    pipeline_time = m * per_mb / (1 - bubble)

    # pipeline send/recv
    pp_bytes = b * s * h * perf.ACTIVATION_BYTES
    crosses = (tp * cp * dp) >= cluster.gpus_per_node
    link = np.where(crosses, cluster.inter_bytes_per_s_per_gpu, cluster.intra.effective_bytes_per_s)
    plat = np.where(crosses, cluster.inter.latency_s, cluster.intra.latency_s)
    hop = plat + pp_bytes / tp / link
    hop = hop + np.where(crosses & (tp > 1), sum(_group_cost("all_gather", pp_bytes, cluster, tp, 1, "ring")), 0.0)
    pp_comm = np.where(pp > 1, 2 * (pp - 1) * v * hop + (0.0 if pp_overlap else 2 * m * v * hop), 0.0)

    # data parallel / ZeRO
    embed = V * h
    stage_params = np.where(pp > 1, layers * model.layer_params + embed, float(model.params))
    params = stage_params / tp
    n = dp * cp
    grads = params * perf.GRAD_REDUCE_BYTES
    bucket = bucket_bytes if bucket_bytes else np.maximum(perf.MEGATRON_BUCKET_PARAMS, 1_000_000 * dp) * perf.GRAD_REDUCE_BYTES
    calls = np.maximum(1, np.ceil(grads / bucket))
    ar = np.array(_group_cost("all_reduce", grads / calls, cluster, n, tp, dp_algorithm)) * calls
    rsg = np.array(_group_cost("reduce_scatter", grads / calls, cluster, n, tp, dp_algorithm)) * calls
    agg = np.array(_group_cost("all_gather", grads / calls, cluster, n, tp, dp_algorithm)) * calls
    z0, z12, z3 = zero == 0, (zero == 1) | (zero == 2), zero == 3
    z1, z2 = zero == 1, zero == 2
    reduce = np.where(z0, ar, np.where(z1, rsg, np.where(z2, m * rsg, m * rsg + 2 * m * agg)))
    gather = np.where(z12, agg, 0.0)
    reduce_t, gather_t = reduce.sum(0), gather.sum(0)
    window = np.where(z3, perf.ZERO3_OVERLAP * pipeline_time, np.where(z2, m * stage_bwd, stage_bwd)) if dp_overlap else 0.0
    last_bucket = reduce_t / calls
    exposed = np.where(reduce_t > 0, np.maximum(reduce_t - window, last_bucket if dp_overlap else reduce_t), 0.0)
    exposed_gather = np.where(gather_t > 0, np.maximum(gather_t - stage_fwd, gather_t / calls), 0.0) if dp_overlap else gather_t
    dp_exposed = np.where(n > 1, exposed + exposed_gather, 0.0)
    total_dp = reduce_t + gather_t
    latency_share = np.where(total_dp > 0, (reduce[0] + gather[0]) / np.where(total_dp > 0, total_dp, 1), 0.0)

    updated = params / np.where(zero >= 1, n, 1)
    optimizer = updated * perf.OPTIMIZER_BYTES_PER_PARAM / hbm_rate
    step = pipeline_time + pp_comm + dp_exposed + optimizer

    # memory
    weights = WEIGHT_BYTES * params / np.where(zero >= 3, n, 1)
    gradients = GRAD_BYTES * params / np.where(zero >= 2, n, 1)
    opt_state = OPTIMIZER_BYTES * params / np.where(zero >= 1, n, 1)
    mem_rc = np.where((rc == RECOMPUTE.index("none")) & flash_attention, RECOMPUTE.index("selective"), rc)
    attn_mem = np.where(mem_rc == RECOMPUTE.index("selective"), 0.0, 5 * a * s / h)
    per_layer = _activation_bytes(s, b, h, tp, sp, attn_mem)
    per_layer = np.where(mem_rc == RECOMPUTE.index("full"), 2 * s * b * h / np.where(sp, tp, 1), per_layer)
    held = np.minimum(m, pp)
    held = np.where((sched == SCHEDULE.index("interleaved")) & (m >= pp), held * (1 + (pp - 1) / (pp * v)), held)
    held = np.where(sched == SCHEDULE.index("gpipe"), m, held)
    activations = per_layer * layers * held
    working = _activation_bytes(s, b, h, tp, sp, attn_term)
    activations = activations + np.where(mem_rc == RECOMPUTE.index("full"), working, 0.0)
    activations = activations + np.where(pp == 1, b * s * V * 4 / tp, 0.0)
    computed = weights + gradients + opt_state + activations
    memory = computed * (1 + perf.ALLOCATOR_MARGIN) + perf.RUNTIME_RESERVED_BYTES

    model_flops = gb * model.model_flops_per_sequence()
    hw = np.array([model.hardware_flops_per_sequence(r) for r in RECOMPUTE])
    hardware_flops = gb * hw[mem_rc]
    gpus = cluster.gpus
    out = {k: v for k, v in f.items() if not k.startswith("_")}
    out["flash_attention"] = np.full(len(step), flash_attention)
    out["fits"] = memory <= gpu.hbm_bytes
    out["memory_bytes"] = memory
    out["step_time_s"] = step
    out["bubble_fraction"] = bubble
    out["model_tflops_per_gpu"] = model_flops / step / gpus / 1e12
    out["hardware_tflops_per_gpu"] = hardware_flops / step / gpus / 1e12
    out["mfu"] = out["model_tflops_per_gpu"] * 1e12 / gpu.bf16_flops
    out["hfu"] = out["hardware_tflops_per_gpu"] * 1e12 / gpu.bf16_flops
    out["tokens_per_s"] = gb * model.seq_len / step
    out["dp_comm_exposed_s"] = dp_exposed
    out["dp_comm_latency_s"] = dp_exposed * latency_share
    out["tp_spans_nodes"] = tp > cluster.gpus_per_node
    return out


def _pareto(fits: np.ndarray, step: np.ndarray, memory: np.ndarray) -> np.ndarray:
    """Plans that fit and that no other fitting plan beats on both memory and step time."""
    front = np.zeros(len(step), dtype=bool)
    idx = np.flatnonzero(fits)
    if len(idx) == 0:
        return front
    idx = idx[np.lexsort((memory[idx], step[idx]))]
    best_before = np.minimum.accumulate(np.concatenate([[np.inf], memory[idx][:-1]]))
    front[idx[memory[idx] < best_before]] = True
    return front


def sweep(model: Model, cluster: Cluster, global_batch: int, **fixed) -> pd.DataFrame:
    """Every valid plan, one row each: Plan fields and the Estimate's numbers under the same
    names, sorted best first (fitting plans by step time, then the rest); `pareto` marks the
    memory-vs-time front. Any Plan field in `fixed` (a value or a list) restricts the space."""
    options = {k: fixed.pop(k) for k in FIXED_ONLY if k in fixed}
    space = _space(model, cluster, global_batch, **fixed)
    if len(space["tp"]) == 0:
        raise ValueError(f"no valid plan for {model.name} on {cluster.gpus} GPUs with global_batch={global_batch} and {fixed}")
    out = evaluate(model, cluster, space, **options)
    out["pareto"] = _pareto(out["fits"], out["step_time_s"], out["memory_bytes"])
    order = np.lexsort((out["step_time_s"], ~out["fits"]))
    return pd.DataFrame({k: v[order] for k, v in out.items()})


def row_plan(row) -> perf.Plan:
    """The Plan of one sweep row (a pandas Series or dict)."""
    get = row.get if isinstance(row, dict) else row.__getitem__
    fields = ("tp", "pp", "dp", "micro_batch", "global_batch", "zero_stage", "recompute", "sequence_parallel", "schedule", "virtual_stages", "cp", "flash_attention")
    values = {k: get(k) for k in fields}
    for k in ("tp", "pp", "dp", "micro_batch", "global_batch", "zero_stage", "virtual_stages", "cp"):
        values[k] = int(values[k])
    values["sequence_parallel"] = bool(values["sequence_parallel"])
    values["flash_attention"] = bool(values["flash_attention"])
    return perf.Plan(**values)
