"""Equivalence harness for refactoring the engine: dump the step model's outputs from one source
tree, then compare another tree's against them.

It evaluates labs.core.engine.step.evaluate on ~3.4 million plan rows (search's plan spaces for the 21
model / cluster / era / option combinations of benchmarks/plan_combos.py, 8 draws each; all but
the first draw of every third combination vary every column the sweep leaves fixed: offload, rank
order, hybrid sharding, grad_sync, recompute grains and layers, ZB-H2, bucket size, first/last
stage layers, micro-batch group size, capacity factor, node-limited routing, optimizer state) and
estimate() on ~3,300 valid plans (every field of the Estimate, warnings and the communication map
included), and prints, per combination, how many rows moved and the step time's signed move (median,
range), then the worst relative difference (nan equal to nan).

    git archive <commit> labs | tar -x -C /tmp/base
    python benchmarks/engine_equivalence.py /tmp/base dump /tmp/eqv     # ~2.3 GB of .npz
    python benchmarks/engine_equivalence.py . cmp /tmp/eqv
    (a fourth argument, "quick": 3,000 rows a combination and 60 plans, for a first check)
"""
import dataclasses
import os
import pickle
import sys
import time

SRC, MODE, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
QUICK = len(sys.argv) > 4
sys.path.insert(0, SRC)
import numpy as np  # noqa: E402

import importlib.util  # noqa: E402

# The engine's package in either layout: labs.core.engine (since the engine moved), or labs.core
# (trees before it, such as 38bda0b), so two trees of either kind compare.
ENGINE = "labs.core.engine" if importlib.util.find_spec("labs.core.engine") else "labs.core"
search = importlib.import_module(f"{ENGINE}.search")
get_era, stack_of = (getattr(importlib.import_module(f"{ENGINE}.eras"), n) for n in ("get_era", "stack_of"))
Cluster = importlib.import_module(f"{ENGINE}.hardware").Cluster
Model = importlib.import_module(f"{ENGINE}.models").Model
step = importlib.import_module(f"{ENGINE}.step")
evaluate = step.evaluate
Plan, estimate = (getattr(importlib.import_module(f"{ENGINE}.perf"), n) for n in ("Plan", "estimate"))
from plan_combos import COMBOS  # noqa: E402  (this folder's, whichever tree SRC is)

np.seterr(all="ignore")
if hasattr(step, "COMPILED"):  # a tree with compiled step functions: estimate() through them from the first call
    step.COMPILED.compile_after = 0
os.makedirs(OUT, exist_ok=True)


def randomize(cols, model, rng):
    n = len(cols["tp"])
    r = lambda p: rng.random(n) < p  # noqa: E731
    cols = dict(cols)
    zero = np.asarray(cols["zero_stage"])
    cols["offload"] = r(0.2) & (zero >= 1)
    cols["rank_order"] = rng.integers(0, 3, n)
    pp, dp, cp = (np.asarray(cols[k]) for k in ("pp", "dp", "cp"))
    m = np.asarray(cols["global_batch"]) // (np.asarray(cols["micro_batch"]) * dp)
    cols["microbatch_group_size"] = np.where(r(0.3) & (cols["schedule"] == 2), pp * rng.integers(1, 3, n), -1)
    ends = r(0.15) & (pp >= 2)
    cols["first_stage_layers"] = np.where(ends, rng.integers(0, 3, n), -1)
    cols["last_stage_layers"] = np.where(ends & r(0.5), rng.integers(0, 3, n), -1)
    nd = dp * cp
    cols["shard_group_size"] = np.where(r(0.2) & (zero >= 1) & (nd % 2 == 0), nd // 2, -1)
    cols["reshard_after_forward"] = ~(r(0.15) & (zero == 3))
    cols["bucket_bytes"] = np.where(r(0.2), 2.5e7, 0.0)
    cols["grad_sync"] = rng.integers(0, 3, n)
    cols["torch_compile"] = r(0.3)
    rc = np.asarray(cols["recompute"]).copy()
    rc = np.where(r(0.1), 3, rc)
    rc = np.where(r(0.1), 4, rc)
    cols["recompute"] = rc
    cols["recompute_layers"] = np.where((rc == 2) & r(0.3), rng.integers(0, 4, n), -1)
    sched = np.asarray(cols["schedule"]).copy()
    cols["schedule"] = np.where((sched == 3) & r(0.3), 4, sched)
    cols["grad_fp32"] = r(0.5)
    cols["dp_overlap"] = r(0.8)
    cols["pp_overlap"] = r(0.8)
    cols["optimizer_bytes"] = rng.choice([12.0, 8.0, 6.0], n)
    if model.experts:
        cols["capacity_factor"] = np.where(r(0.3), 1.25, 0.0)
        cols["max_nodes_per_token"] = np.where(r(0.3), 4.0, 0.0)
    return cols


def rows_for(i, rep=0):
    mname, cname, nodes, gb, era, fixed, algo = COMBOS[i]
    model, cluster = Model.get(mname), Cluster.get(cname, nodes=nodes)
    choices, options = search._settings(cluster, era, dict(fixed))
    space = search._space(model, cluster, gb, choices, get_era(era))
    if options["cp_algorithm"] == "ulysses":
        keep = search.ulysses_fits(model.heads / space["tp"], model.kv_head_count / space["tp"], space["cp"])
        space = {k: v[keep] for k, v in space.items()}
    cols = search._columns(space, options)
    rng = np.random.default_rng(1234 + 100 * rep + i)
    if i % 3 != 0 or rep > 0:  # a third of the combos as the sweep runs them, the rest with every column varied
        cols = randomize(cols, model, rng)
    if QUICK:
        pick = np.random.default_rng(i).permutation(len(cols["tp"]))[:3000]
        cols = {k: np.asarray(v)[pick] for k, v in cols.items()}
    return model, cluster, cols, algo, stack_of(era)


def est_plans():
    rng = np.random.default_rng(7)
    out = []
    for i, (mname, cname, nodes, gb, era, fixed, algo) in enumerate(COMBOS):
        model, cluster = Model.get(mname), Cluster.get(cname, nodes=nodes)
        try:
            frame = search.plan_space(model, cluster, gb, era, **{k: v for k, v in fixed.items() if k in search.SWEPT})
        except ValueError:
            continue
        idx = rng.permutation(len(frame))[: (60 if QUICK else 1200)]
        for j in idx:
            row = dict(frame.iloc[j])
            base = {k: v for k, v in row.items() if k in Plan.__dataclass_fields__}
            extra = dict(fixed, dp_algorithm=algo, stack=era)
            if rng.random() < 0.5:
                extra["rank_order"] = ["tp-cp-dp-pp", "tp-pp-cp-dp", "cp-dp-tp-pp"][rng.integers(3)]
            if rng.random() < 0.3 and base["zero_stage"] >= 1:
                extra["offload_optimizer"] = True
            if rng.random() < 0.3:
                extra["grad_sync"] = ["step", "microbatch"][rng.integers(2)]
            if rng.random() < 0.2 and base["zero_stage"] == 3:
                extra["reshard_after_forward"] = False
            if rng.random() < 0.2 and base["recompute"] == "full":
                extra["recompute_layers"] = int(rng.integers(0, 3))
            if rng.random() < 0.2 and base["pp"] >= 3:
                extra["first_stage_layers"] = int(rng.integers(0, 2))
                extra["last_stage_layers"] = int(rng.integers(0, 2))
            if rng.random() < 0.2 and base["schedule"] == "interleaved":
                extra["microbatch_group_size"] = 2 * int(base["pp"])
            if rng.random() < 0.2 and base["tp"] > 1:
                extra.update(sequence_parallel=True, tp_comm_overlap=True)
            if rng.random() < 0.2:
                extra["recompute"] = ["ops", "norms_up_proj"][rng.integers(2)]
            if rng.random() < 0.2 and model.experts:
                extra["capacity_factor"], extra["max_nodes_per_token"] = 1.25, 4
            if rng.random() < 0.2 and base["zero_stage"] >= 1 and (base["dp"] * base["cp"]) % 2 == 0:
                extra["shard_group_size"] = int(base["dp"] * base["cp"]) // 2
            for attempt in (extra, {k: v for k, v in extra.items() if k in ("dp_algorithm", "stack")}):
                try:
                    plan = Plan(**{**base, **attempt})
                    estimate(model, cluster, plan)
                except ValueError:
                    continue
                out.append((model, cluster, plan))
                break
    return out


def fields(e):
    d = {}
    for f in dataclasses.fields(e):
        if f.name in ("model", "cluster", "plan"):
            continue
        d[f.name] = getattr(e, f.name)
    d["step_time_s"], d["mfu"], d["hfu"] = e.step_time_s, e.mfu, e.hfu
    return d


def flat(x, prefix=""):
    if dataclasses.is_dataclass(x):
        return flat(dataclasses.asdict(x), prefix)
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            out.update(flat(v, f"{prefix}.{k}"))
        return out
    if isinstance(x, (list, tuple)):
        out = {f"{prefix}#len": len(x)}
        for k, v in enumerate(x):
            out.update(flat(v, f"{prefix}[{k}]"))
        return out
    return {prefix: x}


def rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    both_nan = np.isnan(a) & np.isnan(b)
    same = (a == b) | both_nan
    d = np.abs(a - b) / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-300)
    return np.where(same, 0.0, np.where(np.isnan(d), np.inf, d))


def main():
    total, worst, worst_at = 0, 0.0, None
    t0 = time.time()
    for i, rep in [(i, rep) for i in range(len(COMBOS)) for rep in range(1 if QUICK else 8)]:
        model, cluster, cols, algo, stack = rows_for(i, rep)
        out = evaluate(model, cluster, cols, algo, stack)
        n = len(cols["tp"])
        total += n
        path = f"{OUT}/eval_{i}_{rep}.npz"
        if MODE == "dump":
            np.savez(path, **{k: np.asarray(v, dtype=float) for k, v in out.items()})
        else:
            base = np.load(path)
            keys = set(base.files) | set(out)
            moved, combo_worst = np.zeros(n, dtype=bool), 0.0
            for k in sorted(keys):
                if k not in base.files or k not in out:
                    print("KEY MISSING", i, k)
                    worst = np.inf
                    continue
                d = rel(base[k], out[k])
                moved |= np.broadcast_to(d > 1e-12, moved.shape)
                combo_worst = max(combo_worst, float(d.max()))
                if d.max() > worst:
                    worst, worst_at = float(d.max()), (i, k, int(d.argmax()))
            step = np.asarray(out["step_time_s"], dtype=float) / base["step_time_s"] - 1.0
            step = step[np.isfinite(step) & (np.abs(step) > 1e-12)]
            print(f"  rows moved {moved.sum()} of {n}, worst rel diff {combo_worst:.3g}; step time moved in {len(step)}"
                  + (f", by {np.median(step):+.2%} at the median ({step.min():+.2%} .. {step.max():+.2%})" if len(step) else ""), flush=True)
        print(f"combo {i}: {n} rows ({COMBOS[i][0]}, {COMBOS[i][1]}, {COMBOS[i][4]}) {time.time() - t0:.0f}s", flush=True)
    print(f"EVAL rows {total}, worst rel diff {worst:.3g} at {worst_at}")
    plans = est_plans()
    ests = [flat(fields(estimate(m, c, p))) for m, c, p in plans]
    path = f"{OUT}/estimates.pkl"
    if MODE == "dump":
        with open(path, "wb") as f:
            pickle.dump(([p.as_dict() for _, _, p in plans], ests), f)  # dicts: a tree's classes may move
    else:
        with open(path, "rb") as f:
            bplans, bests = pickle.load(f)
        # a field added since the dump compares at its default (the base tree's plans could not set it)
        defaults = {name: f.default for name, f in Plan.__dataclass_fields__.items()}
        now = [{k: v for k, v in p.as_dict().items() if k in old or v != defaults[k]} for (_, _, p), old in zip(plans, bplans)]
        assert bplans == now, "plan lists differ"
        ew, ew_at = 0.0, None
        for j, (a, b) in enumerate(zip(bests, ests)):
            if set(a) != set(b):
                print("FIELDS DIFFER", j, set(a) ^ set(b))
                ew = np.inf
                continue
            for k in a:
                if isinstance(a[k], (str, type(None), bool)) or isinstance(b[k], (str, type(None), bool)):
                    if a[k] != b[k]:
                        print("DIFF", j, k, a[k], b[k])
                        ew = np.inf
                    continue
                d = float(rel(a[k], b[k]))
                if d > ew:
                    ew, ew_at = d, (j, k)
        print(f"ESTIMATE plans {len(plans)}, worst rel diff {ew:.3g} at {ew_at}")
    print(f"estimates: {len(plans)} plans")


main()
