"""The sweep's fast paths against their plain definitions: the plan space against Plan's and
validate()'s own checks, the row order and Pareto front against a sort and a scan by
definition, run-by-run collective pricing against pricing every row, and the NUMPY namespace's
cheapest option and busiest rank against np.argmin / np.argmax (nan rules included)."""

import itertools

import numpy as np
import pytest

from labs.core import Cluster, Model
from labs.core.engine import topology
from labs.core.engine.eras import get_era
from labs.core.engine.models import ALL_RECOMPUTE_MODES
from labs.core.engine.perf import Plan, validate
from labs.core.engine.pipeline import SCHEDULES
from labs.core.engine.search import _best_first, _pareto, _settings, _space
from labs.core.engine.stages.xp import NUMPY


@pytest.mark.parametrize("key, cluster_key, nodes, batch, era", [
    ("llama2-7b", "dgx-h100", 1, 64, None),
    ("gpt3-175b", "dgx-a100", 2, 96, "megatron-2022"),
])
def test_plan_space_is_every_valid_plan_in_product_order(key, cluster_key, nodes, batch, era):
    """Every combination of the choices, in the space's nesting order, kept when Plan and
    validate() accept it: the same rows, in the same order, as the masked product."""
    model, cluster = Model.get(key), Cluster.get(cluster_key, nodes=nodes)
    choices, _ = _settings(cluster, era, {})
    spec = get_era(era)
    space = _space(model, cluster, batch, choices, spec)
    n = cluster.gpus
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    sched_v = [(s, v) for s in choices["schedule"] for v in choices["virtual_stages"] if (v >= 2) == (s == "interleaved")]
    expected = []
    for tp, pp, cp in itertools.product(divisors, divisors, choices["cp"]):
        for mb, zero, rc, sp, (schedule, v) in itertools.product(
                choices["micro_batch"], choices["zero_stage"], choices["recompute"], choices["sequence_parallel"], sched_v):
            if n % (tp * pp * cp) or model.heads % tp or (spec and (pp > spec.max_pp or cp > spec.max_cp)):
                continue
            if (cp > 1 and model.seq_len // cp < 4096) or (pp == 1 and schedule != "1f1b") or (sp and tp == 1):
                continue  # the sweep's own rules: 4,096 tokens a CP rank at least, 1F1B without a pipeline, SP with TP
            try:
                plan = Plan(tp=tp, pp=pp, dp=n // (tp * pp * cp), cp=cp, micro_batch=mb, global_batch=batch, zero_stage=zero,
                            recompute=rc, sequence_parallel=sp, schedule=schedule, virtual_stages=v)
                validate(model, cluster, plan)
            except ValueError:
                continue
            if schedule == "interleaved" and spec and pp < spec.interleave_min_pp:
                continue
            expected.append((tp, pp, plan.dp, cp, mb, zero, rc, sp, schedule, v))
    got = list(zip(*(space[k].tolist() for k in ("tp", "pp", "dp", "cp", "micro_batch", "zero_stage")),
                   [ALL_RECOMPUTE_MODES[i] for i in space["_recompute_code"]], space["sequence_parallel"].tolist(),
                   [SCHEDULES[i] for i in space["_schedule_code"]], space["virtual_stages"].tolist()))
    print(f"{key} on {n} GPUs: {len(got)} plans, {len(expected)} by Plan and validate()")
    assert len(expected) > 20 and got == expected


def _pareto_by_definition(step, memory):
    """A fitting plan is on the front when no plan before it in (step, memory, index) order has
    less or equal memory (the scan the sweep ran before: lexsort, then a running minimum)."""
    order = np.lexsort((memory, step))
    front = np.zeros(len(step), dtype=bool)
    best = np.inf
    for i in order:
        if memory[i] < best:
            front[i] = True
        best = min(best, memory[i])
    return front


def test_row_order_and_pareto_front_by_definition():
    rng = np.random.default_rng(3)
    for trial in range(300):
        rows = int(rng.integers(1, 60))
        step = rng.integers(1, 8, rows) / 4.0  # many ties
        memory = rng.integers(1, 6, rows) * 1e9
        if trial % 5 == 0:
            step[rng.random(rows) < 0.2] = np.nan
        fits = rng.random(rows) < 0.7
        order, fitting = _best_first(fits, step)
        assert order.tolist() == np.lexsort((step, ~fits)).tolist() and fitting == fits.sum()
        front = np.zeros(rows, dtype=bool)
        front[order[:fitting]] = _pareto(step[order[:fitting]], memory[order[:fitting]])
        expected = np.zeros(rows, dtype=bool)
        idx = np.flatnonzero(fits)
        expected[idx] = _pareto_by_definition(step[idx], memory[idx])
        assert (front == expected).all(), trial


def test_collectives_priced_run_by_run_equal_every_row(monkeypatch):
    cluster = Cluster.get("dgx-a100", nodes=16)
    rng = np.random.default_rng(5)
    rows = 4000
    nbytes = np.repeat(rng.choice([0.0, 2e6, 5e7, 3e8], rows // 40), 40)
    n = np.repeat(rng.choice([1.0, 2.0, 8.0, 16.0, 64.0], rows // 80), 80)
    stride = np.repeat(rng.choice([1.0, 8.0]), rows)
    for op in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all"):
        for algorithm in ("ring", "auto", "tree", "nvls"):
            monkeypatch.setattr(topology, "RUNS_PRICED", 0.5)
            runs = topology.collective_columns(op, nbytes, cluster, n, stride, algorithm, NUMPY)
            monkeypatch.setattr(topology, "RUNS_PRICED", 0.0)  # every row priced on its own
            rows_each = topology.collective_columns(op, nbytes, cluster, n, stride, algorithm, NUMPY)
            for a, b in zip(runs, rows_each):
                assert (a == b).all(), (op, algorithm)


def test_cheapest_option_and_busiest_rank_follow_numpy():
    rng = np.random.default_rng(11)
    for trial in range(200):
        rows = 30
        value = lambda: np.where(rng.random(rows) < 0.1, np.nan, rng.integers(0, 4, rows).astype(float))  # noqa: E731
        if trial % 2:
            value = lambda: rng.integers(0, 4, rows).astype(float)  # noqa: E731
        lats, bws = np.stack([value() for _ in range(3)]), np.stack([value() for _ in range(3)])
        extra_lat, extra_bw = value(), value()
        lat, bw = NUMPY.cheapest([lats, extra_lat], [bws, extra_bw])
        all_lat, all_bw = np.vstack([lats, extra_lat]), np.vstack([bws, extra_bw])
        pick = np.argmin(all_lat + all_bw, axis=0)
        cols = np.arange(rows)
        assert np.array_equal(lat, all_lat[pick, cols], equal_nan=True) and np.array_equal(bw, all_bw[pick, cols], equal_nan=True)
        ranks = np.stack([value() for _ in range(3)])
        chosen = NUMPY.argmax(ranks)
        assert np.array_equal(NUMPY.pick(ranks, chosen), ranks[np.argmax(ranks, axis=0), cols], equal_nan=True)
        assert np.array_equal(NUMPY.pick(np.arange(3.0)[:, None], chosen), np.argmax(ranks, axis=0).astype(float))


def test_radix_order_is_a_stable_sort():
    """The radix argsort of non-negative step times equals np.argsort's stable order (ties in
    the space's order), on a sweep's sizes with repeated values and values of every scale."""
    from labs.core.engine.search import _radix_argsort

    rng = np.random.default_rng(17)
    for rows in (0, 1, 2, 1000, 37_068):
        step = rng.random(rows) * 10.0 ** rng.integers(-6, 6, rows)
        step[rng.random(rows) < 0.3] = 0.25  # ties
        assert np.array_equal(_radix_argsort(step), np.argsort(step, kind="stable")), rows


def test_distinct_rows_group_equal_rows_only():
    """distinct_rows against np.unique over the rows: each row's representative has the same
    values in every column, and there is one representative per distinct row (runs, repeats far
    apart, constant columns, nan and a weighted-sum collision all included)."""
    from labs.core.engine.stages.xp import distinct_rows

    rng = np.random.default_rng(19)
    for trial in range(200):
        rows = int(rng.integers(2, 400))
        columns = [np.repeat(rng.integers(0, 4, rows), 1 + trial % 5)[:rows].astype(float), rng.integers(0, 3, rows) > 0,
                   np.full(rows, 7.0), rng.choice([1.0, 2.0, 8.0], rows)]
        if trial % 7 == 0:
            columns[0][rng.random(rows) < 0.1] = np.nan
        reps, index = distinct_rows(columns, rows)
        for x in columns:  # every row equals its representative
            assert np.array_equal(x, x[reps][index], equal_nan=True), trial
        if trial % 7:  # without nan: one representative per distinct row, each the first of its kind
            distinct, first = np.unique(np.stack(columns, 1).astype(float), axis=0, return_index=True)
            assert sorted(reps.tolist()) == sorted(first.tolist()), trial
    # two rows whose weighted sums collide are still told apart
    from labs.core.engine.stages.xp import _WEIGHTS

    a = np.array([0.0, _WEIGHTS[0]])
    b = np.array([1.0, 0.0])
    reps, index = distinct_rows([a, b], 2)
    assert len(reps) == 2 and index.tolist() == [0, 1]


def test_numpy_distinct_equals_the_function_on_every_row():
    """NUMPY.distinct spreads what fn computes on the distinct rows back to every row: the same
    columns as fn on all rows, for namespaces, tuples and columns with ranks on a leading axis."""
    from types import SimpleNamespace

    rng = np.random.default_rng(23)
    rows = 6000  # above DISTINCT_MIN_ROWS (fewer rows run fn on them all)
    p = SimpleNamespace(tp=np.repeat(rng.choice([1.0, 2.0, 8.0], rows // 30), 30), b=rng.choice([1.0, 4.0], rows), s=2048.0,
                        ranks=np.stack([np.repeat(rng.integers(1, 5, rows // 10), 10).astype(float)] * 3), unread=np.arange(rows))

    def fn(q, scale):
        out = SimpleNamespace(work=q.b * q.s / q.tp * scale, per_rank=q.ranks * q.tp, constant=3.0)
        return out, (q.tp + q.b, q.ranks.sum(0))

    from labs.core.engine.stages import xp

    assert rows >= xp.DISTINCT_MIN_ROWS
    spread, (summed, ranks) = NUMPY.distinct(fn, p, ("tp", "b", "s", "ranks"), 2.0)
    assert len(spread._reduced.work) == len(np.unique(np.stack([p.tp, p.b, p.ranks[0]]), axis=1).T)  # once per distinct row
    direct, (summed_all, ranks_all) = fn(p, 2.0)
    assert np.array_equal(spread.work, direct.work) and np.array_equal(spread.per_rank, direct.per_rank)
    assert spread.constant == 3.0 and np.array_equal(summed, summed_all) and np.array_equal(ranks, ranks_all)
    with pytest.raises(AttributeError):  # fn may read only the columns it names
        NUMPY.distinct(lambda q: q.unread, p, ("tp",))


SPACE_COLUMNS = ("tp", "pp", "dp", "cp", "ep", "micro_batch", "zero_stage", "_recompute_code", "sequence_parallel", "_schedule_code", "virtual_stages")


@pytest.mark.parametrize("key, cluster_key, nodes, batch, era", [
    ("llama2-7b", "dgx-h100", 2, 128, None),
    ("gpt3-175b", "dgx-a100", 4, 96, "megatron-core-2024"),
])
def test_row_groups_differ_only_in_their_fields(key, cluster_key, nodes, batch, era):
    """search._row_groups against the space's columns: a row's `zero` representative is the
    row at the first ZeRO choice with every other column equal, one per group; rows of a `batch`
    group share everything but micro_batch, recompute and sequence_parallel, and rows that
    share all of that share a group."""
    from labs.core.engine.search import _row_groups

    model, cluster = Model.get(key), Cluster.get(cluster_key, nodes=nodes)
    choices, _ = _settings(cluster, era, {})
    space = _space(model, cluster, batch, choices, get_era(era))
    groups = _row_groups(space, 0, len(space["tp"]))
    rows = np.stack([space[k] for k in SPACE_COLUMNS], 1).astype(float)
    zero_col = SPACE_COLUMNS.index("zero_stage")
    reps, index = groups.zero
    assert (space["zero_stage"][reps] == choices["zero_stage"][0]).all()
    others = [i for i in range(len(SPACE_COLUMNS)) if i != zero_col]
    assert np.array_equal(rows[reps][index][:, others], rows[:, others])
    assert len(reps) == len({tuple(r) for r in rows[:, others]})  # one representative per group
    reps, index = groups.batch
    kept = [SPACE_COLUMNS.index(k) for k in ("tp", "pp", "dp", "cp", "ep", "zero_stage", "_schedule_code", "virtual_stages")]
    assert np.array_equal(rows[reps][index][:, kept], rows[:, kept])
    assert len(reps) == len({tuple(r) for r in rows[:, kept]})
    print(f"{key}: {len(rows)} rows, {len(groups.zero[0])} ZeRO groups, {len(reps)} batch groups")


@pytest.mark.parametrize("key, cluster_key, nodes, batch, era, fixed", [
    ("llama2-70b", "dgx-h100", 8, 512, None, {}),
    ("gpt3-175b", "dgx-a100", 8, 384, "deepspeed-2021", {}),  # ZeRO-3 gathers per parameter
    ("deepseek-v3", "h800-ib", 8, 256, None, {"cp_algorithm": "ulysses", "schedule": ["1f1b", "dualpipe"]}),
    ("llama3-8b", "dgx-h100", 2, 256, "pytorch-fsdp2-2024", {}),  # FSDP's layer times read the ZeRO stage: not grouped
])
def test_grouped_evaluation_equals_every_row(key, cluster_key, nodes, batch, era, fixed):
    """evaluate() with the space's row groups gives every output of every row exactly as
    without them, the full outputs (communication map included) as well as sweep()'s."""
    from labs.core.engine.eras import stack_of
    from labs.core.engine.search import _columns, _row_groups
    from labs.core.engine.step import evaluate

    model, cluster = Model.get(key), Cluster.get(cluster_key, nodes=nodes)
    choices, options = _settings(cluster, era, dict(fixed))
    space = _space(model, cluster, batch, choices, get_era(era), options["cp_algorithm"])
    cols, groups = _columns(space, options), _row_groups(space, 0, len(space["tp"]))
    for brief in (True, False):
        plain = evaluate(model, cluster, cols, options["dp_algorithm"], stack_of(era), brief=brief)
        grouped = evaluate(model, cluster, cols, options["dp_algorithm"], stack_of(era), brief=brief, groups=groups)
        assert plain.keys() == grouped.keys()
        for name in plain:
            assert np.array_equal(np.broadcast_to(plain[name], np.shape(grouped[name])), grouped[name], equal_nan=True), name
    print(f"{key} ({era}): {len(cols['tp'])} rows, {len(plain)} outputs equal")


def test_at_rows_refuses_what_may_differ_within_a_group():
    """A stage evaluated at_rows reads only what its groups share: a varying name, or one
    outside `only`, raises instead of reading a representative's value for every row."""
    from types import SimpleNamespace

    from labs.core.engine.stages.xp import at_rows, spread_groups

    rows = SimpleNamespace(tp=np.array([2.0, 2.0, 4.0, 4.0]), zero=np.array([0.0, 1.0, 0.0, 1.0]), s=2048.0,
                           stride={"pp": np.array([8.0, 8.0, 16.0, 16.0])})
    groups = (np.array([0, 2]), np.array([0, 0, 1, 1]))
    taken = at_rows(rows, groups, ("zero",))
    assert taken.tp.tolist() == [2.0, 4.0] and taken.s == 2048.0 and taken.stride["pp"].tolist() == [8.0, 16.0]
    with pytest.raises(AttributeError):
        taken.zero
    with pytest.raises(AttributeError):
        at_rows(rows, groups, only=("s",)).tp
    out = spread_groups((taken.tp * 2, SimpleNamespace(x=taken.tp + 1)), groups)
    assert out[0].tolist() == [4.0, 4.0, 8.0, 8.0] and out[1].x.tolist() == [3.0, 3.0, 5.0, 5.0]


def test_plan_space_keeps_whole_query_heads_per_ulysses_rank():
    """Under Ulysses, plan_space() and sweep() keep only layouts whose CP ranks get whole query
    heads (labs.core.engine.context.ulysses_fits), the same rows in both, each valid."""
    from labs.core.engine.search import plan_space, sweep

    model, cluster = Model.get("llama3-70b"), Cluster.get("dgx-h100", nodes=4)
    space = plan_space(model, cluster, 64, cp_algorithm="ulysses", micro_batch=1, recompute="full", zero_stage=1)
    assert ((model.heads // space["tp"]) % space["cp"] == 0).all() and (space["cp"] > 1).any()
    swept = sweep(model, cluster, 64, cp_algorithm="ulysses", micro_batch=1, recompute="full", zero_stage=1)
    assert len(swept) == len(space)
    for row in space.sample(20, random_state=3).itertuples():
        validate(model, cluster, Plan(tp=row.tp, pp=row.pp, dp=row.dp, cp=row.cp, micro_batch=1, global_batch=64, recompute="full",
                                      sequence_parallel=row.sequence_parallel, schedule=row.schedule, virtual_stages=row.virtual_stages,
                                      cp_algorithm="ulysses"))


def test_blocks_hold_whole_layouts(monkeypatch):
    """sweep()'s blocks cover every row once, each of whole layouts and at most BLOCK_ROWS rows
    unless a single layout has more; a space of 40,000-odd rows swept in blocks of ~5,000 gives the
    frame it gives in one block."""
    from labs.core.engine import search

    rng = np.random.default_rng(5)
    for trial in range(100):
        layout = np.repeat(np.arange(60), rng.integers(1, 400, 60))
        limit = int(rng.integers(50, 3000))
        monkeypatch.setattr(search, "BLOCK_ROWS", limit)
        blocks = search._blocks(layout)
        assert blocks[0][0] == 0 and blocks[-1][1] == len(layout) and all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
        for start, stop in blocks:
            assert start == 0 or layout[start] != layout[start - 1], trial  # whole layouts
            assert stop - start <= limit or layout[start] == layout[stop - 1], trial  # within the limit, or one layout
    model, cluster = Model.get("deepseek-v3"), Cluster.get("h800-ib", nodes=32)
    monkeypatch.setattr(search, "BLOCK_ROWS", 1 << 20)
    whole = search.sweep(model, cluster, 1024)
    monkeypatch.setattr(search, "BLOCK_ROWS", 5000)
    space = search._space(model, cluster, 1024, search._settings(cluster, None, {})[0], None)
    assert len(search._blocks(space["_layout"])) > 4
    assert whole.equals(search.sweep(model, cluster, 1024))
    print(f"{len(whole)} rows in {len(search._blocks(space['_layout']))} blocks: the same frame")


def test_only_if_on_its_rows_equals_every_row():
    """NUMPY's only_if, where at most half of many rows need fn, runs fn on those rows alone
    (their columns, namespaces' columns, rank stacks and tuples taken there) and places its
    outputs back: each output as np.where(cond, fn on every row, otherwise) gives it."""
    from types import SimpleNamespace

    from labs.core.engine.stages import xp

    rng = np.random.default_rng(11)
    rows = 3 * xp.ONLY_IF_MIN_ROWS
    cond = rng.random(rows) < 0.3
    ns = SimpleNamespace(a=rng.random(rows), ranks=rng.random((3, rows)), k=2.5, d={"pp": rng.random(rows)})
    seen = []

    def fn(n, pair, scale):
        seen.append(np.shape(n.a)[-1])
        return n.a * scale + n.d["pp"], n.ranks / pair[0], n.a > pair[1], 7.0

    pair = (rng.random(rows) + 1.0, 0.5)
    others = (0.0, rng.random((3, rows)), False, rng.random(rows))
    got = xp.NUMPY.only_if(cond, fn, (ns, pair, ns.k), others)
    assert seen == [np.count_nonzero(cond)]  # fn ran on the rows that need it only
    full = fn(ns, pair, ns.k)
    for value, other, out in zip(full, others, got):
        expected = np.where(cond, value, other)
        assert out.dtype == expected.dtype and np.array_equal(out, expected), (out, expected)
    print(f"{np.count_nonzero(cond)} of {rows} rows evaluated; 4 outputs equal np.where's")


def test_sweep_equals_every_row_only_if(monkeypatch):
    """sweep() with only_if on its rows alone gives the frame only_if on every row gives (GPT-3
    175B on 128 DGX H100: ZeRO-3's exposure on a quarter of 16,104 rows, the interleaved ranks'
    layer-passes on a third of 4,026 groups)."""
    import pandas as pd

    from labs.core.engine.search import sweep
    from labs.core.engine.stages import xp

    model, cluster = Model.get("gpt3-175b"), Cluster.get("dgx-h100", nodes=128)
    on_rows = sweep(model, cluster, 1536)
    monkeypatch.setattr(xp, "ONLY_IF_MIN_ROWS", 1 << 40)
    every_row = sweep(model, cluster, 1536)
    pd.testing.assert_frame_equal(on_rows, every_row, check_exact=True)
    print(f"{len(on_rows)} rows, {on_rows.shape[1]} columns equal")


def test_plan_columns_at_rows_equal_every_row_taken():
    """read_plan's numpy terms, each computed when read (PlanColumns), equal the terms computed
    all at once on every row, and at some rows (a sweep's groups) equal those rows of them; a term
    no one read is not computed."""
    from types import SimpleNamespace

    from labs.core.engine.eras import stack_of
    from labs.core.engine.search import _columns
    from labs.core.engine.stages import inputs
    from labs.core.engine.stages.xp import NUMPY, at_rows

    model, cluster = Model.get("llama3-8b"), Cluster.get("dgx-h100", nodes=2)
    for era in (None, "pytorch-fsdp1-2023", "megatron-2021"):
        choices, options = _settings(cluster, era, {})
        space = _space(model, cluster, 256, choices, get_era(era), options["cp_algorithm"])
        cols, stack = _columns(space, options), stack_of(era)
        eager = SimpleNamespace(**dict(zip(inputs._TERMS, NUMPY.cols(cols, inputs._COLUMNS))))
        for term, derive in inputs._DERIVED:
            setattr(eager, term, derive(eager, model, stack, NUMPY))
        lazy = inputs.read_plan(model, cols, stack, NUMPY)
        assert "redo" not in vars(lazy)
        rows = np.flatnonzero(np.arange(len(cols["tp"])) % 7 == 3)
        taken = at_rows(lazy, (rows, np.zeros(len(cols["tp"]), dtype=np.intp)))
        for term in inputs._TERMS + tuple(t for t, _ in inputs._DERIVED):
            full, at = getattr(eager, term), getattr(taken, term)
            for key in (full if isinstance(full, dict) else [None]):
                f, a = (full[key], at[key]) if key else (full, at)
                assert np.array_equal(np.broadcast_to(f, np.shape(cols["tp"])).take(rows), np.broadcast_to(a, rows.shape)), (era, term, key)
                assert np.array_equal(np.broadcast_to(f, np.shape(cols["tp"])), np.broadcast_to(getattr(lazy, term)[key] if key else getattr(lazy, term), np.shape(cols["tp"])))
        print(f"{era}: {len(cols['tp'])} rows, {len(rows)} taken, every term equal")


def test_product_rows_are_the_masked_product_in_nesting_order():
    """search._product against its definition: the flat indices of the product (layouts,
    micro_batch, zero_stage, recompute, SP, schedule) where the (layout, micro_batch, SP,
    schedule) mask holds, unravelled; each row's ZeRO sibling at the first choice the row with
    the same indices but zero; the batch key its (layout, zero, schedule) numbered in that order.
    Random masks, empty groups and layouts included."""
    from labs.core.engine.search import _product

    rng = np.random.default_rng(7)
    for trial in range(200):
        shape = tuple(int(x) for x in rng.integers(1, 5, 6))
        layouts, n_mb, n_zero, n_rc, n_sp, n_sv = shape
        ok = rng.random((layouts, n_mb, n_sp, n_sv)) < rng.choice([0.2, 0.6, 1.0])
        t, p, dp, c, e = (rng.integers(1, 64, layouts) for _ in range(5))
        mbs, zeros_, rc_codes = rng.integers(1, 9, n_mb), np.arange(n_zero), rng.permutation(n_rc)
        sps, sched_v = rng.random(n_sp) < 0.5, rng.integers(0, 6, (n_sv, 2))
        got = _product(shape, ok, t, p, dp, c, e, mbs, zeros_, rc_codes, sps, sched_v, 256)
        full = np.broadcast_to(ok[:, :, None, None, :, :], shape)
        li, mi, zi, ri, si, vi = np.unravel_index(np.flatnonzero(full), shape)
        expected = {"tp": t[li], "pp": p[li], "dp": dp[li], "cp": c[li], "ep": e[li], "micro_batch": mbs[mi], "zero_stage": zeros_[zi],
                    "sequence_parallel": sps[si], "virtual_stages": sched_v[vi, 1], "_recompute_code": rc_codes[ri], "_schedule_code": sched_v[vi, 0],
                    "_layout": li, "_zero_index": zi, "_batch_key": (li * n_zero + zi) * n_sv + vi, "global_batch": np.full(len(li), 256)}
        sibling = {(a, b, g, h, j): row for row, (a, b, z, g, h, j) in enumerate(zip(li, mi, zi, ri, si, vi)) if z == 0}
        expected["_zero_base"] = np.array([sibling[(a, b, g, h, j)] for a, b, g, h, j in zip(li, mi, ri, si, vi)], dtype=np.int64)
        assert got.keys() == expected.keys()
        for k, x in expected.items():
            assert np.array_equal(got[k], x) and got[k].dtype == np.asarray(x).dtype, (trial, shape, k)
    print(f"200 random masks: last {len(li)} rows of {np.prod(shape)}")
