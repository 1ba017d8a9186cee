"""Two array namespaces the step model's formulas run on, so that each formula is written once.

NUMPY evaluates numpy columns, one row per plan (`sweep()`); SCALAR evaluates one plan's Python
floats, ints and bools (`estimate()`), where numpy's fixed cost per operation would dominate.
Both offer the same operations with numpy's meaning: `where` picks elementwise (SCALAR evaluates
both branches, as numpy does), `maximum`/`minimum`/`ceil`/`floor`/`log2` are elementwise,
`not_` is the logical not (`~` would flip a Python bool's bits).

All offer `only_if(cond, fn, args, otherwise)`: fn(*args) where cond holds, `otherwise`
elsewhere, running fn only where it is used (NUMPY: when any row is), and `distinct(fn, rows,
names, *args)`: fn(rows, *args), where NUMPY runs fn once per distinct combination of the
columns `names` of the namespace `rows` and spreads its outputs back to every row. The one-plan
namespace (SCALAR) also offers `call(fn, *args)`, a Python function of plan values called as it is.

The pipeline's first, middle and last ranks ride on a leading axis of 3: `stack` builds it (a
numpy axis, or a tuple of 3), `each` runs a per-rank function over it (once on the stacked
columns, or once per rank), `argmax` finds the rank with the most and `pick` takes that rank's
value. NCCL's protocols ride the same way on `options`.

A SCALAR evaluation may divide by zero where numpy would write inf or nan into a row that a later
`where` discards; it then raises ZeroDivisionError (or ValueError, OverflowError) and the caller
runs the plan through NUMPY instead (labs.core.engine.step.evaluate_plan).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np


def _np_col(c, key, dtype=float, default=None):
    """Column `key` of the plan columns (`default` where an older caller left it out)."""
    if key not in c:
        return np.full(np.shape(c["tp"]), default, dtype=dtype)
    return np.asarray(c[key], dtype=dtype)


def _np_cols(c, columns):
    """_np_col of each (term, key, dtype, default) of `columns`."""
    return [_np_col(c, key, dtype, default) for _, key, dtype, default in columns]


def _np_pick(x, chosen):
    """Each row's value of x at the rank `argmax` chose (its flat index into a (3,) + shape array)."""
    if np.shape(x) == (3,) + np.shape(chosen):  # one take: ~10x faster than x[index, arange]
        return np.ravel(x).take(chosen)
    if np.shape(x) == np.shape(chosen):  # the same on every rank
        return x
    index = np.asarray(chosen // max(np.size(chosen), 1))
    return np.take_along_axis(np.broadcast_to(x, (3,) + np.shape(index)), index[None], 0)[0]


def _first_best(options, better, extreme):
    """Index of the first option that `better` prefers along the leading axis, with np.argmin's
    and np.argmax's handling of nan (the first nan wins): elementwise passes over the options,
    many times faster than the reductions along a short leading axis. `extreme` (np.minimum or
    np.maximum) finds the best value; the first option equal to it wins, counted from the last."""
    best = options[0]
    for x in options[1:]:
        best = extreme(best, x)  # nan wherever an option is nan
    if np.isnan(best).any():
        return _first_best_nan(options, better)
    index = np.full(np.shape(best), len(options) - 1, dtype=np.int64)
    for i in range(len(options) - 2, -1, -1):
        index = np.where(options[i] == best, i, index)
    return index


def _first_best_nan(options, better):
    """_first_best where some option is nan: a running comparison, the first nan winning."""
    best, index = options[0], np.zeros(np.shape(options[0]), dtype=np.int64)
    for i in range(1, len(options)):
        x = options[i]
        wins = better(x, best) | (np.isnan(x) & ~np.isnan(best))
        index = np.where(wins, i, index)
        best = np.where(wins, x, best)
    return index


def _np_argmax(stacked):
    """The rank with the most, per row, as `pick` reads it: the flat index rank x rows + row of
    its entry in the (3, rows) stack (computed once, not in every pick)."""
    if np.ndim(stacked) < 1:
        return np.argmax(stacked, axis=0)
    index = _first_best(stacked, np.greater, np.maximum)
    return index * index.size + np.arange(index.size).reshape(index.shape)


def _np_options(tables):
    """NCCL's per-protocol constants, each table as one (protocols, 1) column: a formula over
    them prices every protocol of every row at once."""
    return [[np.asarray(table, dtype=float)[:, None]] for table in tables]


def _np_cheapest(latencies, bandwidths):
    """Per row, the (latency, bandwidth) of the option with the least total (the first on ties)."""
    options = [(lat, bw) for lats, bws in zip(latencies, bandwidths) for lat, bw in zip(np.atleast_2d(lats), np.atleast_2d(bws))]
    totals = [lat + bw for lat, bw in options]
    least = totals[0]
    for total in totals[1:]:
        least = np.minimum(least, total)  # nan wherever an option is nan
    if np.isnan(least).any():  # np.argmin's choice: the first nan
        index = _first_best_nan(totals, np.less)
        return (np.choose(index, [lat for lat, _ in options]), np.choose(index, [bw for _, bw in options]))
    best_lat, best_bw = options[-1]
    for (lat, bw), total in zip(options[-2::-1], totals[-2::-1]):  # the first least wins
        first = total == least
        best_lat, best_bw = np.where(first, lat, best_lat), np.where(first, bw, best_bw)
    return best_lat, best_bw


def _np_rows(x, cond):
    """x as a column of cond's rows (a copy where it broadcasts)."""
    if type(x) is float and np.ndim(cond) == 1:  # a constant: a column of it
        return np.full(len(cond), x)
    shape = np.broadcast_shapes(np.shape(x), np.shape(cond))
    return x if np.shape(x) == shape else np.broadcast_to(np.asarray(x, dtype=float), shape).copy()


def _np_only_if(cond, fn, args, otherwise):
    """fn(*args) in the rows where cond holds, `otherwise` elsewhere (SCALAR's only_if, row by
    row); fn runs only if some row needs it, and only on those rows where they are at most half
    of many (_on_rows). fn returns a value or a tuple, otherwise the same."""
    if not np.any(cond):  # otherwise, as columns of cond's rows
        return tuple(_np_rows(x, cond) for x in otherwise) if type(otherwise) is tuple else _np_rows(otherwise, cond)
    if np.ndim(cond) == 1 and len(cond) >= ONLY_IF_MIN_ROWS:
        rows = np.flatnonzero(cond)
        if 2 * len(rows) <= len(cond):
            return _on_rows(cond, rows, fn, args, otherwise)
    out = fn(*args)
    if type(out) is tuple:
        return tuple(np.where(cond, value, other) for value, other in zip(out, otherwise))
    return np.where(cond, out, otherwise)


# Rows from which only_if runs fn on the rows that need it alone, when at most half of them do:
# taking its arguments there and placing its outputs back costs less than its formulas on every
# row (a sweep's ZeRO-3 exposure on a quarter of GPT-3's 16,104 rows, the interleaved ranks'
# layer-passes on a third of its 4,026 ZeRO groups); below it each operation's fixed cost rules.
ONLY_IF_MIN_ROWS = 2048


def _on_rows(cond, rows, fn, args, otherwise):
    """_np_only_if's outputs from fn evaluated on the rows `rows` (where cond holds) alone: its
    arguments' columns (and namespaces' columns, as at_rows takes them) taken there, its outputs
    placed there in columns of `otherwise` (each what np.where(cond, out, otherwise) returns)."""
    size = len(cond)
    out = fn(*(_arg_at(x, rows, size) for x in args))
    if type(out) is tuple:
        return tuple(_placed(value, other, rows, cond) for value, other in zip(out, otherwise))
    return _placed(out, otherwise, rows, cond)


def _arg_at(x, rows, size):
    if type(x) is tuple:
        return tuple(_arg_at(v, rows, size) for v in x)
    if isinstance(x, SimpleNamespace):
        return _Taken(x, rows, size, (), None)
    if type(x) is np.ndarray or type(x) is dict:
        return _take_rows(x, rows, size)
    return x


def _placed(value, other, rows, cond):
    """np.where(cond, v, other) for the v whose rows `rows` (cond's true ones) hold `value`."""
    rows_axis = np.ndim(value) and np.shape(value)[-1] == len(rows)
    shape = np.broadcast_shapes(np.shape(value)[:-1] + cond.shape if rows_axis else np.shape(value), np.shape(other), cond.shape)
    out = np.empty(shape, dtype=np.result_type(value, other))
    out[...] = other
    out[..., rows] = value
    return out


class _Spread(SimpleNamespace):
    """A namespace of columns computed on distinct rows, read as columns of every row: each
    attribute taken through `index` when first read (a stage reads only some)."""

    def __init__(self, reduced, index):
        self._reduced, self._index = reduced, index

    def __getattr__(self, name):
        value = _spread(getattr(self._reduced, name), self._index)
        setattr(self, name, value)
        return value


def distinct_rows(columns, rows):
    """(representatives, index): the first row of each distinct combination of `columns` and, for
    every row, which of them it equals. Neighbouring rows of a plan space mostly repeat (the
    settings that vary fastest are ones a stage does not read), so equal neighbours are merged
    first; the runs are then grouped by a weighted sum of their columns, each group checked
    equal column by column (runs stay apart where a check fails)."""
    varying = [x for x in columns if np.ndim(x) and (x != x[0]).any()]
    if not varying:
        return np.zeros(1, dtype=np.intp), np.zeros(rows, dtype=np.intp)
    change = varying[0][1:] != varying[0][:-1]
    for x in varying[1:]:
        change |= x[1:] != x[:-1]
    starts = np.concatenate([[0], np.flatnonzero(change) + 1])
    run = np.cumsum(np.concatenate([[False], change]))  # each row's run
    at_starts = [x.take(starts) for x in varying]
    key = at_starts[0].astype(float)
    for x, weight in zip(at_starts[1:], _WEIGHTS):
        key = key + x * weight
    _, first, of_run = np.unique(key, return_index=True, return_inverse=True)
    group = first.take(of_run)  # each run's group's first run
    if not all(np.array_equal(x, x.take(group)) for x in at_starts):
        return starts, run
    return starts.take(first), of_run.take(run)


# Weights of the grouping sum: irrational-looking, so distinct combinations of small integers
# rarely collide (a collision only costs the grouping: the check keeps runs apart).
_WEIGHTS = (np.pi * 10 ** np.arange(1, 40) % 1 + 1) * 1e3


# Rows from which NUMPY's distinct looks for repeats: grouping 4,000 rows (a sweep's rows at one
# ZeRO stage, labs.core.engine.step.evaluate's groups) cost less than the layer's stages on all of them
# (bench_sweep's cases, interleaved runs: ~3% of a sweep at 1,024 against 4,096).
DISTINCT_MIN_ROWS = 1024


def _np_distinct(fn, rows, names, *args):
    """fn(rows, *args) evaluated once per distinct combination of the columns `names` of the
    namespace `rows` (the only ones fn may read of it), its outputs spread back to every row.
    fn returns columns, namespaces of columns or a tuple of them; a column may carry the
    pipeline's ranks on a leading axis (labs.core.engine.stages.xp's stack)."""
    columns = [getattr(rows, name) for name in names]
    size = max((np.shape(x)[-1] for x in columns if np.ndim(x)), default=1)
    if size < DISTINCT_MIN_ROWS:  # finding the distinct rows would cost more than it saves
        return fn(rows, *args)
    columns = [np.broadcast_to(x, np.shape(x)[:-1] + (size,)) if np.ndim(x) else x for x in columns]
    reps, index = distinct_rows([row for x in columns for row in (x if np.ndim(x) > 1 else [x])], size)
    reduced = SimpleNamespace(**{name: x.take(reps, axis=-1) if np.ndim(x) else x for name, x in zip(names, columns)})
    return _spread(fn(reduced, *args), index)


class _Taken(SimpleNamespace):
    """The namespace `rows` at the rows `reps` of its `size`: each column taken when first read;
    reading a name of `varying`, or one not in `only` (when given), raises AttributeError."""

    def __init__(self, rows, reps, size, varying, only):
        self._rows, self._reps, self._size, self._varying, self._only = rows, reps, size, varying, only
        # a namespace that computes its columns when read (stages.inputs.PlanColumns) computes them at these rows
        self._at = rows.at_rows(reps, size) if hasattr(type(rows), "at_rows") else None

    def __getattr__(self, name):
        if name in self._varying or (self._only is not None and name not in self._only):
            raise AttributeError(f"{name} may differ within a group of rows (labs.core.engine.stages.xp.at_rows)")
        rows = self._rows
        reduced = getattr(rows._reduced, name) if type(rows) is _Spread and name not in rows.__dict__ else None
        if self._at is not None and name not in rows.__dict__:  # not computed for every row: computed at these
            value = getattr(self._at, name)
        elif type(reduced) is np.ndarray and np.ndim(reduced):  # a column of a _Spread not yet spread: taken from its distinct rows
            value = np.take(reduced, rows._index.take(self._reps), axis=-1)
        else:
            value = _take_rows(getattr(rows, name), self._reps, self._size)
        setattr(self, name, value)
        return value


def _take_rows(x, reps, size):
    if type(x) is dict:
        return {k: _take_rows(v, reps, size) for k, v in x.items()}
    if type(x) is tuple:  # (latency, bandwidth) pairs and the like
        return tuple(_take_rows(v, reps, size) for v in x)
    return x.take(reps, axis=-1) if np.ndim(x) and np.shape(x)[-1] == size else x


def at_rows(rows, groups, varying=(), only=None):
    """A namespace of numpy columns at one row of each group, for a caller that knows its rows
    come in groups differing only in the names `varying` (or in every name but those `only`
    lists): reading any other raises. groups: (representatives, index), a row of each group and
    every row's group (sweep()'s space knows them: labs.core.engine.search._row_groups)."""
    reps, index = groups
    return _Taken(rows, reps, len(index), varying, only)


def spread_groups(out, groups):
    """Outputs computed at_rows (columns, namespaces or tuples of them) as every row's."""
    return _spread(out, groups[1])


def on_groups(fn, rows, groups, varying, *args):
    """fn(rows, *args) evaluated at_rows(rows, groups, varying) and spread back to every row."""
    return spread_groups(fn(at_rows(rows, groups, varying), *args), groups)


def _spread(out, index):
    """fn's outputs on the distinct rows as every row's: columns (on the last axis) taken through
    `index`, namespaces of them as _Spread, tuples item by item."""
    if type(out) is tuple:
        return tuple(_spread(o, index) for o in out)
    if isinstance(out, SimpleNamespace):
        return _Spread(out, index)
    return np.take(out, index, axis=-1) if np.ndim(out) else out


NUMPY = SimpleNamespace(
    scalar=False, where=np.where, maximum=np.maximum, minimum=np.minimum, ceil=np.ceil, floor=np.floor, log2=np.log2,
    not_=np.logical_not, inf=np.inf, floats=lambda x: np.asarray(x, dtype=float), col=_np_col, cols=_np_cols,
    stack=lambda *xs: np.stack(xs), each=lambda fn, *args: fn(*args), argmax=_np_argmax,
    pick=_np_pick, options=_np_options, cheapest=_np_cheapest, full_like=lambda x, value: np.full(np.shape(x), value, dtype=float),
    only_if=_np_only_if, distinct=_np_distinct,
)


def _where(cond, a, b):
    return a if cond else b


def _col(c, key, dtype=float, default=None):
    return dtype(c.get(key, default))


def _cols(c, columns):
    return [dtype(c.get(key, default)) for _, key, dtype, default in columns]


def _each(fn, *args):
    ranked = [i for i, a in enumerate(args) if type(a) is tuple]  # the arguments given as their three ranks' values
    if not ranked:  # every rank the same
        out = fn(*args)
        return tuple(zip(out, out, out)) if type(out) is tuple else (out, out, out)
    first, middle, last = list(args), list(args), list(args)  # each rank's arguments
    for i in ranked:
        first[i], middle[i], last[i] = args[i]
    # ranks with the same inputs (every rank when pp = 1) have the same outputs
    out = fn(*first)
    mid = out if middle == first else fn(*middle)
    outs = (out, mid, out if last == first else mid if last == middle else fn(*last))  # pp = 2: the middle rank is the last
    return tuple(zip(*outs)) if type(out) is tuple else outs


def _maximum(a, b):
    return b if b > a else a  # noqa: FURB136 (max(a, b) to the object, a on ties and nan, at a third of max()'s cost)


def _minimum(a, b):
    return b if b < a else a  # noqa: FURB136 (min(a, b), likewise)


def _argmax(stacked):
    best = 0
    for i in (1, 2):
        if stacked[i] > stacked[best]:
            best = i
    return best


def _cheapest(latencies, bandwidths):
    best = 0
    for i in range(1, len(latencies)):
        if latencies[i] + bandwidths[i] < latencies[best] + bandwidths[best]:
            best = i
    return latencies[best], bandwidths[best]


SCALAR = SimpleNamespace(
    scalar=True, where=_where, maximum=_maximum, minimum=_minimum, ceil=lambda x: float(math.ceil(x)), floor=lambda x: float(math.floor(x)),
    log2=math.log2, not_=lambda x: not x, inf=math.inf, floats=float, col=_col, cols=_cols,
    stack=lambda *xs: xs, each=_each, argmax=_argmax, pick=lambda x, index: x[index] if type(x) is tuple else x,
    options=lambda tables: tables,  # tuples of floats, one entry per protocol
    cheapest=_cheapest, full_like=lambda x, value: float(value),
    only_if=lambda cond, fn, args, otherwise: fn(*args) if cond else otherwise, call=lambda fn, *args: fn(*args),
    distinct=lambda fn, rows, names, *args: fn(rows, *args),
)
