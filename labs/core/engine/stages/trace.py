"""One plan's step model as generated Python: trace the stages once, run straight-line code per plan.

`estimate()` evaluates one plan at a time. The stages (labs.core.engine.step.evaluate) run on Python
numbers there (SCALAR, labs.core.engine.stages.xp), but most of their work repeats from plan to plan of
the same model, cluster and software: the `where`s on the ZeRO stage, the schedule or the
recompute mode, NCCL's protocol tables, the model's sizes. TRACE is a third namespace whose plan
values are symbolic nodes. `trace_step` runs the unchanged `evaluate` once over it, with the
plan's categorical columns as constants (so their `where`s are decided while tracing and
arithmetic on constants is folded) and its numeric columns (tp, pp, dp, cp, batch sizes, layer
counts...) as inputs, and writes the resulting expression graph as one Python function;
`compile_step` compiles it and `StepCache` keeps it (bounded, keyed by everything but the numeric
columns and the node count; labs.core.engine.step.COMPILED is estimate()'s).

The generated code does the same Python operations in the same order as SCALAR, so its numbers
are SCALAR's to the bit. Nodes used more than once become locals; a `where` whose condition is a
plan value becomes an if/else that runs only the chosen branch, with everything only that branch
needs inside it. Python's errors are SCALAR's: a ZeroDivisionError, OverflowError or ValueError
sends the plan to the numpy evaluation (labs.core.engine.step.evaluate_plan), as SCALAR's do.

Module constants (a fitted share, an efficiency) are folded into the code like the model's sizes:
code that changes one at run time must run inside `StepCache.interpreted()` (the calibration's
fit does). Python control flow on a plan value cannot be traced: a node refuses `bool()`, and a
stage that needs one raises TraceError while tracing; that key then runs SCALAR (counted in
FALLBACKS).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import fields
from operator import eq, itemgetter
from types import SimpleNamespace

import numpy as np

from labs.core.engine.stages.xp import SCALAR

# Plan columns that are numbers a slider moves: inputs of the generated function. The optional
# ones are inputs only when set; their "not set" value (Plan's None) is a constant of the key.
NUMERIC_COLUMNS = ("tp", "pp", "dp", "cp", "micro_batch", "global_batch", "virtual_stages", "ep")
OPTIONAL_COLUMNS = {"bucket_bytes": 0.0, "first_stage_layers": -1, "last_stage_layers": -1, "microbatch_group_size": -1,
                    "shard_group_size": -1, "capacity_factor": 0.0, "max_nodes_per_token": 0, "recompute_layers": -1}
CACHE_SIZE = 256  # compiled functions kept (least recently used dropped)
# Calls of a key (the same model, cluster and stack objects, DP algorithm and constant columns)
# that run SCALAR before its function is compiled: tracing and compiling costs ~15 ms, ~100
# SCALAR estimates, so plans seen once (a lab's table of variants, a class's graded designs)
# are not worth it and a loop over the same settings is.
COMPILE_AFTER = 32
FALLBACKS = {"untraced_keys": 0, "numpy_plans": 0}  # keys that could not be traced; plans whose compiled run raised


class TraceError(Exception):
    """The stage code used a plan value where tracing cannot follow it (Python control flow)."""


# ---------------------------------------------------------------- the expression graph

class Node:
    """A value of the traced plan: an operation on inputs, constants and other nodes."""

    __slots__ = ("graph", "id", "op", "args", "kind", "extra")
    __array_ufunc__ = None  # numpy scalars defer to the node's reflected operators

    def __init__(self, graph, op, args, kind, extra=None):
        self.graph, self.op, self.args, self.kind, self.extra = graph, op, args, kind, extra
        self.id = len(graph.nodes)
        graph.nodes.append(self)

    def __bool__(self):
        raise TraceError(f"Python control flow on a plan value ({self.op} node): use xp.where")

    def __float__(self):
        raise TraceError("float() of a plan value: use xp.floats")

    __int__ = __index__ = __float__
    __hash__ = object.__hash__

    def __add__(self, o): return _binary("+", self, o)
    def __radd__(self, o): return _binary("+", o, self)
    def __sub__(self, o): return _binary("-", self, o)
    def __rsub__(self, o): return _binary("-", o, self)
    def __mul__(self, o): return _binary("*", self, o)
    def __rmul__(self, o): return _binary("*", o, self)
    def __truediv__(self, o): return _binary("/", self, o)
    def __rtruediv__(self, o): return _binary("/", o, self)
    def __pow__(self, o): return _binary("**", self, o)
    def __rpow__(self, o): return _binary("**", o, self)
    def __lt__(self, o): return _binary("<", self, o)
    def __le__(self, o): return _binary("<=", self, o)
    def __gt__(self, o): return _binary(">", self, o)
    def __ge__(self, o): return _binary(">=", self, o)
    def __eq__(self, o): return _binary("==", self, o)
    def __ne__(self, o): return _binary("!=", self, o)
    def __and__(self, o): return _binary("&", self, o)
    def __rand__(self, o): return _binary("&", o, self)
    def __or__(self, o): return _binary("|", self, o)
    def __ror__(self, o): return _binary("|", o, self)
    def __neg__(self): return _node("neg", (self,), self.kind)


class Graph:
    """The nodes of one trace, in creation order (a topological order), with common
    subexpressions shared: the same operation on the same operands is one node."""

    def __init__(self):
        self.nodes: list[Node] = []
        self.seen: dict = {}
        self.objects: dict = {}  # id -> (name in the generated code, the object: a function it calls, or an argument)

    def input(self, name):
        return Node(self, "input", (), "f", name)

    def name_of(self, obj) -> "_Global":
        if id(obj) not in self.objects:
            self.objects[id(obj)] = (_Global(f"_g{len(self.objects)}"), obj)
        return self.objects[id(obj)][0]


class _Global:
    """An object the generated code reads from its globals (a function, a model)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


def _is(x):
    return type(x) is Node


def _const(x):
    """A constant as the Python number SCALAR would hold (numpy scalars unwrapped)."""
    if isinstance(x, np.generic):
        return x.item()
    return x


def _node(op, args, kind, extra=None):
    graph, key = None, [op, extra]
    for a in args:  # a node by its id, a constant by its type and repr (1 and 1.0, 0.0 and -0.0 differ)
        if type(a) is Node:
            graph = a.graph
            key.append(a.id)
        else:
            key.append((type(a), repr(a)))
    key = tuple(key)
    found = graph.seen.get(key)
    if found is None:
        found = graph.seen[key] = Node(graph, op, args, kind, extra)
    return found


_NUMBER = {"+", "-", "*", "/", "**"}


def _binary(op, a, b):
    if isinstance(a, np.generic) or isinstance(b, np.generic):
        a, b = _const(a), _const(b)
    if op in _NUMBER:
        kind = "f" if (op == "/" or _kind(a) == "f" or _kind(b) == "f") else "i"
        same = _identity(op, a, b)
        if same is not None and same.kind == kind:
            return same
        return _node(op, (a, b), kind)
    if op in ("&", "|") and (type(a) is bool or type(b) is bool):
        const, other = (a, b) if type(a) is bool else (b, a)
        if _is(other) and other.kind == "b":
            if const == (op == "|"):
                return const  # False & x, True | x
            return other
    return _node(op, (a, b), "b")


def _identity(op, a, b):
    """x where `a op b` is x's value: 1 x, x 1, x / 1, 0 + x, x + 0, x - 0 (x + 0 turns -0.0 into
    0.0, equal to it)."""
    if op == "*":
        return b if _number(a, 1) else (a if _number(b, 1) else None)
    if op == "/" and _number(b, 1) or op in ("+", "-") and _number(b, 0):
        return a
    if op == "+" and _number(a, 0):
        return b
    return None


def _number(x, value):
    return (type(x) is float or type(x) is int) and x == value


def _unary(op, fn, x, kind="f"):
    x = _const(x)
    return _node(op, (x,), kind) if _is(x) else fn(x)


def _select(cond, then, otherwise):
    """where(cond, then, otherwise) on tuples of values: the chosen tuple."""
    cond = _const(cond)
    if not _is(cond):
        return then if cond else otherwise
    then = tuple(_known(_const(x), cond, 1) for x in then)  # where(c, where(c, a, b), d) is where(c, a, d)
    otherwise = tuple(_known(_const(x), cond, 2) for x in otherwise)
    if all(_same(a, b) for a, b in zip(then, otherwise)):
        return then
    select = _node("select", (cond,) + then + otherwise, "f", len(then))
    return tuple(_node("out", (select,), _branch_kind(a, b), i) for i, (a, b) in enumerate(zip(then, otherwise)))


def _known(value, cond, branch):
    """`value` where `cond` is known to be true (branch 1) or false (branch 2): an output of a
    select on the same condition is its value in that branch."""
    while type(value) is Node and value.op == "out" and value.args[0].op == "select" and value.args[0].args[0] is cond:
        select = value.args[0]
        value = select.args[value.extra + 1 + (branch - 1) * select.extra]
    return value


def _kind(x):
    """"b" (a bool), "i" (an int) or "f" (a float) at run time: outputs that are not floats are
    converted as SCALAR's evaluate_plan converts them."""
    if type(x) is Node:
        return x.kind
    return "b" if type(x) is bool else ("i" if type(x) is int else "f")


def _branch_kind(a, b):
    kinds = {_kind(a), _kind(b)}
    return "f" if "f" in kinds else ("i" if "i" in kinds else "b")


def _same(a, b):
    """The same value for certain: one node, or equal numbers of one type (other constants, such
    as the stages' namespaces of nodes, by identity)."""
    if a is b:
        return True
    return type(a) is type(b) and type(a) in (bool, int, float, str) and a == b


# ---------------------------------------------------------------- the TRACE namespace

def _where(cond, a, b):
    return _select(cond, (a,), (b,))[0]


def _maximum(a, b):
    a, b = _const(a), _const(b)
    return _node("max", (a, b), _branch_kind(a, b)) if _is(a) or _is(b) else max(a, b)


def _minimum(a, b):
    a, b = _const(a), _const(b)
    return _node("min", (a, b), _branch_kind(a, b)) if _is(a) or _is(b) else min(a, b)


def _floats(x):
    x = _const(x)
    if _is(x):
        return x if x.kind == "f" else _node("float", (x,), "f")
    return float(x)


def _col(c, key, dtype=float, default=None):
    value = c[key] if key in c else default
    if _is(value):
        if dtype is not float:
            raise TraceError(f"column {key!r} is an input but is read as {dtype.__name__}")
        return value
    return dtype(value)


def _each(fn, *args):
    ranks = list(zip(*[a if type(a) is tuple else (a, a, a) for a in args]))
    outs = [fn(*ranks[0])]
    for rank in ranks[1:]:  # ranks with the same inputs have the same outputs (SCALAR's shortcut)
        same = all(_same(x, y) for x, y in zip(rank, ranks[0]))
        outs.append(outs[0] if same else fn(*rank))
    return tuple(zip(*outs)) if type(outs[0]) is tuple else tuple(outs)


class _Argmax:
    """SCALAR's argmax of 3 ranks (the first largest) as its two comparisons."""

    def __init__(self, s):
        self.second = s[1] > s[0]
        self.third_over_second, self.third_over_first = s[2] > s[1], s[2] > s[0]


def _argmax(stacked):
    if all(_same(x, stacked[0]) for x in stacked):
        return 0
    return _Argmax(stacked)


def _pick(x, index):
    if type(x) is not tuple:
        return x
    if type(index) is int:
        return x[index]
    return _where(index.second, _where(index.third_over_second, x[2], x[1]), _where(index.third_over_first, x[2], x[0]))


def _cheapest(latencies, bandwidths):
    best = (latencies[0], bandwidths[0], latencies[0] + bandwidths[0])
    for lat, bw in zip(latencies[1:], bandwidths[1:]):
        total = lat + bw
        best = _select(total < best[2], (lat, bw, total), best)
    return best[0], best[1]


def _only_if(cond, fn, args, otherwise):
    cond = _const(cond)
    if _is(cond):
        out = fn(*args)
        return _select(cond, out, otherwise) if type(out) is tuple else _where(cond, out, otherwise)
    return fn(*args) if cond else otherwise


def _call(fn, *args):
    """fn(*args) at run time when an argument is a plan value (its Python control flow stays
    Python's); now when all are constants. fn returns a tuple of numbers."""
    args = tuple(_const(a) for a in args)
    if not any(_is(a) for a in args):
        return fn(*args)
    graph = next(a.graph for a in args if _is(a))
    probe = fn(*[1.0 if _is(a) else a for a in args])  # the tuple's length
    args = tuple(a if _is(a) or type(a) in (bool, int, float) else graph.name_of(a) for a in args)
    call = _node("call", args, "f", (graph.name_of(fn).name, len(probe)))
    return tuple(_node("out", (call,), "f", i) for i in range(len(probe)))


TRACE = SimpleNamespace(
    scalar=True, where=_where, maximum=_maximum, minimum=_minimum,
    ceil=lambda x: _unary("ceil", SCALAR.ceil, x), floor=lambda x: _unary("floor", SCALAR.floor, x),
    log2=lambda x: _unary("log2", SCALAR.log2, x), not_=lambda x: _unary("not", lambda v: not v, x, "b"),
    inf=math.inf, floats=_floats, col=_col, stack=lambda *xs: xs, each=_each, argmax=_argmax, pick=_pick,
    options=SCALAR.options, cheapest=_cheapest, full_like=lambda x, value: float(value), only_if=_only_if, call=_call,
    distinct=SCALAR.distinct,
)


# ---------------------------------------------------------------- code generation

_INLINE_DEPTH = 40  # deeper expressions are split into locals (the parser's nesting limit)
_BINARY = {"+", "-", "*", "/", "**", "<", "<=", ">", ">=", "==", "!=", "&", "|"}
# How each operation reads in the generated code, as SCALAR runs it: max(a, b) is b if b > a else
# a (Python's max keeps the first of equals, and so for nan), min likewise with <; SCALAR's ceil
# and floor are float(math.ceil(x)) and float(math.floor(x)).
_FORMS = {"max": "({1} if {1} > {0} else {0})", "min": "({1} if {1} < {0} else {0})", "ceil": "float(_ceil({0}))",
          "floor": "float(_floor({0}))", "log2": "_log2({0})", "float": "float({0})", "neg": "(-{0})", "not": "(not {0})"}
_ATOMS = {"max", "min"}  # their operands are read twice: names or literals, never expressions
_GLOBALS = {"_ceil": math.ceil, "_floor": math.floor, "_log2": math.log2, "_inf": math.inf, "_nan": math.nan}


class _Scope:
    """A block of the generated function: the body, or one branch of an if/else."""

    def __init__(self, parent=None):
        self.parent, self.depth = parent, (parent.depth + 1 if parent else 0)
        self.nodes: list[Node] = []
        self.branches: dict = {}

    def branch(self, select, which):
        key = (select.id, which)
        if key not in self.branches:
            self.branches[key] = _Scope(self)
        return self.branches[key]


def _common(a, b):
    while a.depth > b.depth:
        a = a.parent
    while b.depth > a.depth:
        b = b.parent
    while a is not b:
        a, b = a.parent, b.parent
    return a


def _literal(x):
    if type(x) is _Global:
        return x.name
    if type(x) is bool:
        return repr(x)
    if type(x) is int:
        return f"({x})" if x < 0 else repr(x)
    if type(x) is float:
        if math.isnan(x):
            return "_nan"
        if math.isinf(x):
            return "_inf" if x > 0 else "(-_inf)"
        return f"({x!r})" if x < 0 or (x == 0 and math.copysign(1, x) < 0) else repr(x)
    raise TraceError(f"a constant of type {type(x).__name__} in the step's arithmetic")


def generate_source(outputs: dict, inputs: list[str]) -> str:
    """The body of `def step(inputs...)` returning `outputs` (names to nodes or constants): each
    node placed in the innermost if/else branch that holds all its uses, inlined where it is
    used once."""
    reachable, stack = {}, [v for v in outputs.values() if _is(v)]
    while stack:
        node = stack.pop()
        if node.id not in reachable:
            reachable[node.id] = node
            stack.extend(a for a in node.args if _is(a))
    order = [reachable[i] for i in sorted(reachable)]
    root = _Scope()
    uses: dict[int, list] = {n.id: [] for n in order}
    for value in outputs.values():
        if _is(value):
            uses[value.id].append(root)
    scope_of = {}
    for node in reversed(order):  # users come after what they use
        if node.op == "input":
            continue
        where = uses[node.id][0]
        for other in uses[node.id][1:]:
            where = _common(where, other)
        scope_of[node.id] = where
        where.nodes.append(node)
        if node.op == "select":
            k = node.extra
            arg_scopes = [where] + [where.branch(node, 0)] * k + [where.branch(node, 1)] * k
        else:
            arg_scopes = [where] * len(node.args)
        for arg, scope in zip(node.args, arg_scopes):
            if _is(arg):
                uses[arg.id].append(scope)
    inlined, depth = set(), {}
    operands_of_atoms = {a.id for n in order if n.op in _ATOMS for a in n.args if _is(a)}
    for node in order:
        if node.op in ("input", "select", "call", "out") or len(uses[node.id]) != 1 or node.id in operands_of_atoms:
            continue
        d = 1 + max((depth.get(a.id, 0) for a in node.args if _is(a) and a.id in inlined), default=0)
        if d <= _INLINE_DEPTH:
            inlined.add(node.id)
            depth[node.id] = d

    def expr(x):
        if not _is(x):
            return _literal(x)
        if x.op == "input":
            return x.extra
        if x.op == "out":
            return f"{x.args[0].op[0]}{x.args[0].id}_{x.extra}"
        if x.id not in inlined:
            return f"v{x.id}"
        return _form(x, expr)

    outs: dict[int, set] = {}
    for node in order:
        if node.op == "out":
            outs.setdefault(node.args[0].id, set()).add(node.extra)
    lines = []

    def subtree(select):
        """The nodes of a select's branches, nested branches included."""
        stack, found = [scope_of[select.id].branch(select, 0), scope_of[select.id].branch(select, 1)], []
        while stack:
            branch = stack.pop()
            found.extend(branch.nodes)
            stack.extend(branch.branches.values())
        return found

    def joins(later, first, group, scopes):
        """Whether `later`, a select on first's condition in the same block, can share first's
        if/else: what it reads in the block is computed before first, and none of the group's."""
        members = {s.id for s in group}
        for node in [later] + subtree(later):
            for a in node.args:
                if _is(a) and (scope_of.get(a.id) in scopes and a.id > first.id or a.op == "out" and a.args[0].id in members):
                    return False
        return True

    def emit(scopes, indent):
        """The statements of one block: the nodes of `scopes` (a branch, or the same branch of
        selects that share an if/else), in creation order."""
        pad = "    " * indent
        nodes = sorted((n for scope in scopes for n in scope.nodes if n.op not in ("input", "out") and n.id not in inlined), key=lambda n: n.id)
        merged = set()
        for i, node in enumerate(nodes):
            if node.id in merged:
                continue
            if node.op == "select":  # with the later selects on the same condition that can join it
                group = [node]
                for later in nodes[i + 1:]:
                    if later.op == "select" and later.args[0] is node.args[0] and later.id not in merged and joins(later, node, group, scopes):
                        group.append(later)
                        merged.add(later.id)
                lines.append(f"{pad}if {expr(node.args[0])}:")
                for which in (0, 1):
                    if which:
                        lines.append(f"{pad}else:")
                    emit([scope_of[select.id].branch(select, which) for select in group], indent + 1)
                    for select in group:
                        k = select.extra
                        values = select.args[1 + which * k:1 + (which + 1) * k]
                        for j in sorted(outs[select.id]):
                            lines.append(f"{pad}    s{select.id}_{j} = {expr(values[j])}")
            elif node.op == "call":
                name, n = node.extra
                targets = "".join(f"c{node.id}_{j}, " for j in range(n))
                lines.append(f"{pad}{targets}= {name}({', '.join(expr(a) for a in node.args)})")
            else:
                lines.append(f"{pad}v{node.id} = {_form(node, expr)}")

    emit([root], 1)
    out = ", ".join(f"{k!r}: {_output(v, expr)}" for k, v in outputs.items())
    head = [f"    {name} = float({name})" for name in inputs]
    return f"def step({', '.join(inputs)}):\n" + "\n".join(head + lines) + f"\n    return {{{out}}}\n"


def _form(node, expr):
    args = [expr(a) for a in node.args]
    if node.op in _BINARY:
        return f"({args[0]} {node.op} {args[1]})"
    return _FORMS[node.op].format(*args)


def _output(value, expr):
    if not _is(value):
        return _literal(float(value))
    return expr(value) if value.kind == "f" else f"float({expr(value)})"


# ---------------------------------------------------------------- tracing and the cache

class _NodelessCluster:
    """The cluster, minus its size: the cache serves one function for every node count, so a
    stage that reads it cannot be traced."""

    def __init__(self, cluster):
        self._cluster = cluster

    def __getattr__(self, name):
        if name in ("nodes", "gpus"):
            raise TraceError(f"the step model reads cluster.{name}: the cache key must hold the node count")
        return getattr(self._cluster, name)


def trace_step(evaluate, model, cluster, columns: dict, dp_algorithm, stack):
    """(source, inputs) of the step model for plans whose constant columns are `columns`'."""
    graph = Graph()
    inputs, traced = [], dict(columns)
    for name, value in columns.items():
        if name in NUMERIC_COLUMNS or (name in OPTIONAL_COLUMNS and value != OPTIONAL_COLUMNS[name]):
            inputs.append(name)
            traced[name] = graph.input(name)
    outputs = evaluate(model, _NodelessCluster(cluster), traced, dp_algorithm, stack, TRACE)
    return generate_source(outputs, inputs), inputs, {name.name: obj for name, obj in graph.objects.values()}


def compile_step(evaluate, model, cluster, columns, dp_algorithm, stack):
    """A function of the plan's input columns (in `columns`' order) returning evaluate's outputs
    as floats, or None when the stages cannot be traced for these constants."""
    try:
        source, inputs, functions = trace_step(evaluate, model, cluster, columns, dp_algorithm, stack)
        code = compile(source, f"<step model: {model.name}>", "exec")
    except (TraceError, SyntaxError, RecursionError):  # SyntaxError: nesting beyond the parser's limits
        FALLBACKS["untraced_keys"] += 1
        return None
    namespace = dict(_GLOBALS, **functions)
    exec(code, namespace)
    return namespace["step"], _getter(inputs)


class StepCache:
    """Compiled step functions by (model, cluster without its node count, stack, DP algorithm,
    the plan's constant columns): the node count and the numeric columns are the function's
    inputs or unused, so a slider over them reuses one function. Least recently used first out.
    A key is compiled on its call after the first `compile_after`, counted by value (a lab that
    builds its Cluster anew on every run counts as one); until then, lookup answers None and the
    plan runs SCALAR."""

    def __init__(self, evaluate, size=CACHE_SIZE, compile_after=COMPILE_AFTER):
        self.evaluate, self.size, self.compile_after = evaluate, size, compile_after
        self.functions: OrderedDict = OrderedDict()
        self.recent: dict = {}  # the same lookups by the objects' identity (hashing a Cluster is slow)
        self.calls: dict = {}  # key -> calls so far, for keys not compiled yet
        self.splits: dict = {}  # column names -> _split
        self.compiled = 0
        self.paused = 0  # interpreted() blocks open

    @contextmanager
    def interpreted(self):
        """Within it every lookup answers None, so evaluate_plan runs SCALAR: for code that changes
        the stages' module constants between calls (labs.core.engine.calibration's fit), since a
        compiled function keeps the constants it was traced with."""
        self.paused += 1
        try:
            yield
        finally:
            self.paused -= 1

    def clear(self):
        """Forget every compiled function (benchmarks/bench_sweep.py times the cold calls)."""
        self.functions.clear()
        self.recent.clear()
        self.calls.clear()

    def lookup(self, model, cluster, columns, dp_algorithm, stack):
        """(step, inputs_of): step(*inputs_of(columns)) is evaluate's outputs as floats; None
        when the stages cannot be traced for these constants."""
        if self.paused:
            return None
        names = tuple(columns)
        split = self.splits.get(names)
        if split is None:
            split = self.splits[names] = _split(names)
        constants_of, optional_of, unset_values = split
        constants, unset = constants_of(columns), tuple(map(eq, optional_of(columns), unset_values))
        fast = (id(model), id(cluster), id(stack), dp_algorithm, names, constants, unset)
        hit = self.recent.get(fast)
        if hit is not None and hit[0] is model and hit[1] is cluster and hit[2] is stack:
            if hit[3] is _PENDING:
                hit[3] = self._function(model, cluster, columns, dp_algorithm, stack, names, constants, unset)
            return None if hit[3] is _PENDING else hit[3]
        entry = self._function(model, cluster, columns, dp_algorithm, stack, names, constants, unset)
        if len(self.recent) >= 4 * self.size:
            self.recent.clear()
        self.recent[fast] = [model, cluster, stack, entry]
        return None if entry is _PENDING else entry

    def _function(self, model, cluster, columns, dp_algorithm, stack, names, constants, unset):
        """The compiled function of this key (compiled now if this is its call after the first
        compile_after), or _PENDING."""
        layout = tuple(getattr(cluster, f.name) for f in fields(cluster) if f.name != "nodes")
        key = (model, layout, stack, dp_algorithm, names, constants, unset)
        if key in self.functions:
            self.functions.move_to_end(key)
            return self.functions[key]
        calls = self.calls[key] = self.calls.get(key, 0) + 1
        if calls <= self.compile_after:
            return _PENDING
        del self.calls[key]
        if len(self.calls) >= 4 * self.size:
            self.calls.clear()
        self.compiled += 1
        entry = self.functions[key] = compile_step(self.evaluate, model, cluster, columns, dp_algorithm, stack)
        if len(self.functions) > self.size:
            self.functions.popitem(last=False)
        return entry


_PENDING = object()  # a key whose calls still run SCALAR (StepCache.compile_after)


def _getter(names):
    """A function of the columns returning the tuple of `names`' values."""
    if len(names) > 1:
        return itemgetter(*names)
    return lambda c: tuple(c[k] for k in names)


def _split(names):
    """Getters of the constant columns' values and of the optional ones', and the optional
    columns' "not set" values, for columns with these names."""
    optional = [k for k in names if k in OPTIONAL_COLUMNS]
    constant = [k for k in names if k not in NUMERIC_COLUMNS and k not in OPTIONAL_COLUMNS]
    return _getter(constant), _getter(optional), tuple(OPTIONAL_COLUMNS[k] for k in optional)
