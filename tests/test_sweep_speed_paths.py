"""The sweep's fast paths against their plain definitions: the plan space against Plan's and
validate()'s own checks, the row order and Pareto front against a sort and a scan by
definition, run-by-run collective pricing against pricing every row, and the NUMPY namespace's
cheapest option and busiest rank against np.argmin / np.argmax (nan rules included)."""

import itertools

import numpy as np
import pytest

from labs.core import Cluster, Model, topology
from labs.core.eras import get_era
from labs.core.models import ALL_RECOMPUTE_MODES
from labs.core.perf import Plan, validate
from labs.core.pipeline import SCHEDULES
from labs.core.search import _best_first, _pareto, _settings, _space
from labs.core.stages.xp import NUMPY


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
    from labs.core.search import _radix_argsort

    rng = np.random.default_rng(17)
    for rows in (0, 1, 2, 1000, 37_068):
        step = rng.random(rows) * 10.0 ** rng.integers(-6, 6, rows)
        step[rng.random(rows) < 0.3] = 0.25  # ties
        assert np.array_equal(_radix_argsort(step), np.argsort(step, kind="stable")), rows


def test_distinct_rows_group_equal_rows_only():
    """distinct_rows against np.unique over the rows: each row's representative has the same
    values in every column, and there is one representative per distinct row (runs, repeats far
    apart, constant columns, nan and a weighted-sum collision all included)."""
    from labs.core.stages.xp import distinct_rows

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
    from labs.core.stages.xp import _WEIGHTS

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

    from labs.core.stages import xp

    assert rows >= xp.DISTINCT_MIN_ROWS
    spread, (summed, ranks) = NUMPY.distinct(fn, p, ("tp", "b", "s", "ranks"), 2.0)
    assert len(spread._reduced.work) == len(np.unique(np.stack([p.tp, p.b, p.ranks[0]]), axis=1).T)  # once per distinct row
    direct, (summed_all, ranks_all) = fn(p, 2.0)
    assert np.array_equal(spread.work, direct.work) and np.array_equal(spread.per_rank, direct.per_rank)
    assert spread.constant == 3.0 and np.array_equal(summed, summed_all) and np.array_equal(ranks, ranks_all)
    with pytest.raises(AttributeError):  # fn may read only the columns it names
        NUMPY.distinct(lambda q: q.unread, p, ("tp",))
