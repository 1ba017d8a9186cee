"""A mixture-of-experts router run on arrays: which experts each token goes to, step after step,
and how the balancing schemes move that load (NumPy; seeded, so a setting always gives the same run).

The tokens. Each step routes `tokens` tokens (a sample of the step's batch) over `experts`
experts. A token's logit for expert e is its own noise, N(0, 1), plus the expert's popularity:
skew x base_e + drift x W_e(step), base_e ~ N(0, 1) drawn once, W_e a random walk (N(0, 1) a
step). The popularity stands in for what the language-model loss wants from the router; it is
not trained here. Each scheme then picks the top_k experts of every token:

- "none": top-k of the logits (a softmax router: Switch Transformer, GShard, Mixtral).
- "aux_loss": the same router with a per-expert logit bias c trained by the auxiliary
  load-balancing loss of Switch Transformer (Fedus et al. 2021, arXiv:2101.03961, Sec. 2.2 eq. 4)
  in the top-k form Megatron-Core uses (moe_utils.switch_load_balancing_loss_func):
      L_aux = alpha E sum_i f_i P_i,  f_i = (tokens sent to i) / (T k),  P_i = mean_t softmax(z_t)_i.
  f is a count (no gradient); through P, dL/dc_j = alpha E mean_t p_tj (f_j - sum_i f_i p_ti), and
  c takes a plain SGD step at ROUTER_LR each step. Why a logit bias: it is the part of the
  router's weights that moves every token's logit for one expert alike, which is exactly what
  balancing needs; the real router also moves its weights per token, and under Adam, together
  with the language-model loss, so read this curve for its direction and shape (a pull in
  proportion to the imbalance), not for the speed of any real run.
- "bias": DeepSeek-V3's auxiliary-loss-free balancing (arXiv:2412.19437 Sec. 2.1.2; Wang et al.
  2024, arXiv:2408.15664): affinities s = sigmoid(logits), the top-k of s + b chosen (b routes,
  it never weighs the output), and after each step b_i -= gamma if expert i was overloaded,
  += gamma if underloaded (Megatron-Core's get_updated_expert_bias: sign(mean load - load_i)).
  DeepSeek-V3 ran gamma = 0.001 for its first 14.3T tokens (Sec. 4.2).

Node-limited routing (DeepSeek-V3 Sec. 2.1.2, M = 4 of 8 nodes): with `max_nodes` = M, each
token first keeps the M nodes whose experts have the highest sum of their top k/M routing scores,
then picks its top_k experts among those nodes only (Megatron-Core's group_limited_topk with the
nodes as groups). It applies on top of any scheme.

Capacity (GShard Sec. 2.2, Switch Sec. 2.2): an expert keeps at most
ceil(capacity_factor x T k / E) tokens a step (Megatron-Core's get_capacity) and drops the rest;
dropped() counts them from the loads. The experts sit on `gpus` GPUs in order (E / gpus each) and
the GPUs on `nodes` nodes; a token starts on GPU floor(t x gpus / T). all_to_all_copies() counts
what its dispatch sends, as DeepSeek-V3 Sec. 3.2.2 routes it and labs.core.engine.experts prices it:
one copy over the NIC to each other node that holds one of its experts (to the GPU with its own
index there), then one copy over NVLink for each expert not on the GPU it landed on.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from labs.core.engine.validation import check_choice, check_positive

SCHEMES = ("none", "aux_loss", "bias")
ROUTER_LR = 100.0  # plain SGD on the logit bias under the auxiliary loss (see the docstring)
MAX_WORK = 1 << 27  # steps x tokens x experts: about 3 s of routing on one core; more is refused


@dataclass(frozen=True)
class RouterSetting:
    """One router run. Counts are whole numbers; skew and drift in logit units."""

    experts: int = 256  # DeepSeek-V3: 256 routed experts, 8 a token, EP 64 over 8 nodes
    top_k: int = 8
    tokens: int = 256  # tokens routed a step (a sample of the step's batch)
    steps: int = 500
    gpus: int = 64  # the EP group: experts split evenly over its GPUs
    nodes: int = 8
    skew: float = 0.5  # std of the experts' popularity
    drift: float = 0.0  # std of each step's change of an expert's popularity
    scheme: str = "none"
    aux_coeff: float = 0.01  # alpha (Switch: 0.01)
    gamma: float = 0.001  # the bias update's rate (DeepSeek-V3: 0.001)
    max_nodes: int | None = None  # node-limited routing: at most this many nodes a token
    seed: int = 0

    def __post_init__(self):
        for name in ("experts", "top_k", "tokens", "steps", "gpus", "nodes"):
            check_positive(name, getattr(self, name), integer=True, maximum=1 << 20)
        check_positive("seed", self.seed, integer=True, allow_zero=True, maximum=1 << 62)
        for name in ("skew", "drift"):
            check_positive(name, getattr(self, name), allow_zero=True, maximum=10.0)
        check_positive("aux_coeff", self.aux_coeff, allow_zero=True, maximum=10.0)
        check_positive("gamma", self.gamma, allow_zero=True, maximum=1.0)
        check_choice("scheme", self.scheme, SCHEMES)
        if self.top_k > self.experts:
            raise ValueError(f"top_k must be at most experts ({self.experts}), got {self.top_k}")
        if self.experts % self.gpus:
            raise ValueError(f"gpus must divide experts ({self.experts}), got {self.gpus}")
        if self.gpus % self.nodes:
            raise ValueError(f"nodes must divide gpus ({self.gpus}), got {self.nodes}")
        if self.tokens % self.gpus:
            raise ValueError(f"gpus must divide tokens ({self.tokens}), got {self.gpus}")
        if self.max_nodes is not None:
            check_positive("max_nodes", self.max_nodes, integer=True, maximum=self.nodes)
            if self.top_k % self.max_nodes:
                raise ValueError(f"max_nodes must divide top_k ({self.top_k}) (each node kept by its top k/M scores), got {self.max_nodes}")
            if self.top_k // self.max_nodes > self.experts // self.nodes:
                raise ValueError(f"max_nodes must leave top_k / max_nodes at most the experts a node holds ({self.experts // self.nodes}), got {self.max_nodes}")
        if self.steps * self.tokens * self.experts > MAX_WORK:
            raise ValueError(f"steps x tokens x experts must be at most {MAX_WORK:,}, got {self.steps * self.tokens * self.experts:,}")

    @property
    def mean_load(self) -> float:
        """Tokens an expert receives a step when the router is balanced: T k / E."""
        return self.tokens * self.top_k / self.experts


@dataclass(frozen=True)
class RouterRun:
    """What a run leaves: per step (or summed over every `every` steps, as a stored run keeps
    them: save_runs), each expert's tokens; every COPY_EVERY-th step, the network and NVLink
    copies of token vectors the dispatch sends per GPU; under "aux_loss", the loss's value each
    step (Switch's form, coefficient alpha); the balancing state (the logit bias c or the score
    bias b) after the last step."""

    setting: RouterSetting
    loads: np.ndarray  # (steps / every, experts) tokens, int32
    network_copies: np.ndarray  # (steps / COPY_EVERY,) per GPU, token vectors sent over the NICs
    nvlink_copies: np.ndarray  # (steps / COPY_EVERY,) per GPU, token vectors forwarded over NVLink
    aux_loss: np.ndarray | None  # (steps,) under "aux_loss" (its value each step), else None
    bias: np.ndarray  # (experts,)
    every: int = 1  # steps summed in a row of loads
    _memo: dict = field(default_factory=dict, repr=False, compare=False)  # what readers derived from the run, by key: a lab reads a few, many times

    def memo(self, key, make):
        """make(), made once per run and key (a run never changes): window_loads by window, and
        what a lab reads of a run (its summary) for every ledger of a class."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def window_loads(self, window: int = 1) -> np.ndarray:
        """(steps / window, experts), read-only: each expert's tokens summed over windows of
        `window` steps (a batch of window x tokens: one step's sample is small, and its counts noisy)."""
        s = self.setting
        check_positive("window", window, integer=True, maximum=s.steps)
        if s.steps % window:
            raise ValueError(f"window must divide steps ({s.steps}), got {window}")
        if window % self.every:
            raise ValueError(f"window must be a multiple of {self.every} (this run keeps its loads summed over {self.every} steps), got {window}")
        rows = window // self.every
        return self.memo(("window_loads", window), lambda: _read_only(self.loads.reshape(s.steps // window, rows, s.experts).sum(axis=1)))

    def gpu_loads(self, window: int = 1) -> np.ndarray:
        """(steps / window, gpus): the tokens each GPU's experts receive, over windows."""
        s = self.setting
        w = self.window_loads(window)
        return w.reshape(w.shape[0], s.gpus, s.experts // s.gpus).sum(axis=2)

    def busiest_expert_over_mean(self, window: int = 1) -> np.ndarray:
        """(steps / window,): the busiest expert's tokens over the mean expert's, per window."""
        w = self.window_loads(window)
        return w.max(axis=1) / w.mean(axis=1)

    def busiest_gpu_over_mean(self, window: int = 1) -> np.ndarray:
        """(steps / window,): the busiest GPU's tokens over the mean GPU's, per window: what the
        EP group waits for."""
        g = self.gpu_loads(window)
        return g.max(axis=1) / g.mean(axis=1)

    def dropped_share(self, capacity_factor: float, window: int = 1) -> float:
        """Share of all routed token copies dropped over the run when each expert keeps at most
        ceil(c x its balanced load) of each window's tokens."""
        s = self.setting
        cap = capacity(s, capacity_factor, window)
        return float(dropped(self.window_loads(window), cap).sum() / (s.steps * s.tokens * s.top_k))


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def capacity(setting: RouterSetting, capacity_factor: float, window: int = 1) -> int:
    """Tokens an expert keeps of a batch of `window` steps' tokens: ceil(c x window T k / E)
    (Megatron-Core get_capacity)."""
    check_positive("capacity_factor", capacity_factor, maximum=1024)
    if capacity_factor < 1:
        raise ValueError(f"capacity_factor must be at least 1 (1: exactly the balanced load), got {capacity_factor!r}")
    return math.ceil(capacity_factor * window * setting.tokens * setting.top_k / setting.experts)


def dropped(loads: np.ndarray, cap: int) -> np.ndarray:
    """Tokens dropped per row (over every expert) when each keeps at most `cap`: sum max(load - cap, 0)."""
    return np.maximum(np.asarray(loads) - cap, 0).sum(axis=-1)


def aux_loss_value(probs: np.ndarray, chosen: np.ndarray, coeff: float) -> float:
    """Switch Transformer's load-balancing loss, alpha E sum_i f_i P_i, for probabilities
    (tokens, experts) and a boolean choice of the same shape (k per token): alpha at balance."""
    t, e = probs.shape
    k = chosen.sum(axis=1).max()
    f = chosen.sum(axis=0) / (t * k)
    return float(coeff * e * np.dot(f, probs.mean(axis=0)))


def top_k_mask(scores: np.ndarray, k: int) -> np.ndarray:
    """(..., tokens, experts) boolean: each row's k highest scores (a tie at the k-th score keeps
    every tied expert: with continuous scores, never)."""
    return _top_k(scores, k)[0]


def _top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """top_k_mask, and each row's highest score (keeping its axis), which the sort finds anyway."""
    e = scores.shape[-1]
    ranked = np.sort(scores, axis=-1)  # the k-th highest from a sort (a SIMD sort of 256 beats a partition)
    return scores >= ranked[..., e - k, None], ranked[..., e - 1:]


def node_limited_mask(scores: np.ndarray, k: int, nodes: int, max_nodes: int) -> np.ndarray:
    """Top-k within the max_nodes nodes of highest summed top-(k / max_nodes) scores
    (DeepSeek-V3 Sec. 2.1.2; experts in node order). Rows over the last axis, any leading axes."""
    return _node_limited(scores, k, nodes, max_nodes, row_max=False)[0]


def _node_limited(scores: np.ndarray, k: int, nodes: int, max_nodes: int, row_max: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """node_limited_mask, and with `row_max` each row's highest score (keeping its axis), from the
    nodes' highest where their sort put them (the nodes on the outer axis: a reduction over an axis
    of 8 costs more than a copy)."""
    shape, e = scores.shape, scores.shape[-1]
    per, top = e // nodes, k // max_nodes
    flat = scores.reshape(-1, e)
    n = flat.shape[0]
    # each node's scores sorted (a SIMD sort of 32; np.partition returns rows this short sorted too)
    ranked = np.sort(flat.reshape(n, nodes, per), axis=-1)
    best = _node_scores(ranked, top)
    ordered = np.sort(best, axis=-1)  # each row's node scores, ascending (their order is not needed, only the M-th)
    mth = ordered[:, nodes - max_nodes, None]  # the M-th highest node score
    keep = best >= mth  # the M nodes of highest score, and every node tied with the M-th
    if max_nodes < nodes and (ordered[:, nodes - max_nodes - 1, None] >= mth).any():  # a tie at the M-th keeps more nodes
        kth = _kth_of_kept(ranked, keep, k)
    elif max_nodes == 1:  # one node: its k-th highest, where the sort put it
        kth = ranked[:, :, per - top][keep]
    else:  # the k-th highest of the kept nodes is among each kept node's own k highest (M of them a row, in node order)
        near = min(k, per)
        candidates = ranked[:, :, per - near:][keep].reshape(n, max_nodes * near)
        kth = np.sort(candidates, axis=-1)[:, max_nodes * near - k]
    # a node not kept compares against +inf: none of its (finite) scores is chosen
    chosen = flat.reshape(n, nodes, per) >= np.where(keep, kth[:, None], np.inf)[:, :, None]
    highest = np.ascontiguousarray(ranked[:, :, per - 1].T).max(axis=0).reshape(shape[:-1] + (1,)) if row_max else None
    return chosen.reshape(shape), highest


def _node_scores(ranked: np.ndarray, top: int) -> np.ndarray:
    """Each node's score, the sum of its top `top` scores (`ranked`: each node's scores ascending).
    Added in the order np.sum adds a row this short (one by one up to 7, pairwise at 8), written
    out: a reduction over a short axis costs more than the adds (a float sum depends on its order)."""
    per = ranked.shape[-1]
    col = [ranked[..., per - top + i] for i in range(top)]
    if top == 8:
        return ((col[0] + col[1]) + (col[2] + col[3])) + ((col[4] + col[5]) + (col[6] + col[7]))
    if top < 8:
        total = col[0]
        for c in col[1:]:
            total = total + c
        return total
    return ranked[..., per - top:].sum(axis=-1)


def _kth_of_kept(ranked: np.ndarray, keep: np.ndarray, k: int) -> np.ndarray:
    """The k-th highest score of each row's kept nodes (`ranked`: rows (n, nodes, per), each node
    sorted), any number of nodes kept per row: each kept node's top k ranked together."""
    n, nodes, per = ranked.shape
    near = min(k, per)
    candidates = np.where(keep[..., None], ranked[..., per - near:], -np.inf).reshape(n, nodes * near)
    return np.sort(candidates, axis=-1)[:, nodes * near - k]


def _choose(scores: np.ndarray, s: RouterSetting, row_max: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The chosen experts, and each row's highest score (keeping its axis) where the choice's sort
    finds it anyway or `row_max` asks for it (else None)."""
    if s.max_nodes is None or s.max_nodes == s.nodes:
        return _top_k(scores, s.top_k)
    return _node_limited(scores, s.top_k, s.nodes, s.max_nodes, row_max)


def _counts(chosen: np.ndarray, axis: int) -> np.ndarray:
    """np.count_nonzero(chosen, axis), summed as bytes (fewer than 256 rows: in one byte)."""
    return chosen.view(np.uint8).sum(axis=axis, dtype=np.uint8 if chosen.shape[axis] < 256 else np.int32)


def _softmax(z: np.ndarray, out: np.ndarray, row_max: np.ndarray) -> np.ndarray:
    """Each row's softmax, into out; row_max: z.max(axis=1, keepdims=True)."""
    p = np.subtract(z, row_max, out=out)
    np.exp(p, out=p)
    p /= p.sum(axis=1, keepdims=True)
    return p


@lru_cache(maxsize=64)
def _copy_maps(s: RouterSetting) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For _copies: each expert's node as a (E, nodes) 0/1 matrix, each token's home node, and
    (T, E) whether an expert sits on the GPU of its node with the token's own GPU's index."""
    t, e, g = s.tokens, s.experts, s.gpus // s.nodes
    gpu = np.arange(e) * s.gpus // e
    source = np.arange(t) * s.gpus // t  # the GPU a token starts on
    on_node = np.zeros((e, s.nodes), dtype=np.float32)
    on_node[np.arange(e), gpu // g] = 1
    return on_node, source // g, gpu[None, :] % g == source[:, None] % g


def _copies(chosen: np.ndarray, s: RouterSetting) -> tuple[float, float]:
    """(network, NVLink) copies of a token vector per GPU in one dispatch (see the docstring)."""
    on_node, home, landed = _copy_maps(s)
    by_node = chosen.astype(np.float32) @ on_node  # each token's experts on each node (whole numbers: exact)
    network = np.count_nonzero(by_node) - np.count_nonzero(by_node[np.arange(len(home)), home])
    nvlink = np.count_nonzero(chosen) - np.count_nonzero(chosen & landed)  # all but those on the GPU the copy lands on, in every node
    return float(network) / s.gpus, float(nvlink) / s.gpus


COPY_EVERY = 10  # the dispatch's copies are counted every 10th step (the run's mean, sampled)
CHUNK = 25  # steps drawn and chosen at once (25 x 256 x 256 float32: 6.5 MB)


def _stream_key(s: RouterSetting) -> tuple:
    """Settings with the same key draw the same numbers from their generator: the token noise
    and the popularity walk's steps do not depend on skew, drift, the scheme or the node limit
    (the walk is drawn even without drift, and then weighs nothing)."""
    return (s.seed, s.tokens, s.experts, s.steps)


def _draws(s: RouterSetting):
    """The experts' base popularity (E,), then (first step, walk steps (n, E) or None, token noise
    (n, T, E)) for consecutive chunks of steps, drawn in this order: the base, step 0's noise,
    then for every later step the walk's step and that step's noise. One draw of many numbers
    fills them in the same order as many draws of few."""
    rng = np.random.default_rng(s.seed)
    t, e = s.tokens, s.experts
    yield rng.standard_normal(e).astype(np.float32)
    yield 0, None, rng.standard_normal((1, t, e), dtype=np.float32)
    for first in range(1, s.steps, CHUNK):
        n = min(CHUNK, s.steps - first)
        block = rng.standard_normal((n, t + 1, e), dtype=np.float32)
        yield first, block[:, 0, :], block[:, 1:, :]


class _Run:
    """One setting's state while its stream is read: the walk, the balancing state, what it records."""

    def __init__(self, s: RouterSetting):
        self.s = s
        self.base = None
        self.walk = np.zeros(s.experts, dtype=np.float32)
        self.bias = np.zeros(s.experts, dtype=np.float64)
        self.loads = np.zeros((s.steps, s.experts), dtype=np.int32)  # at most `tokens` (2^20) a cell: half int64's memory in a cache of runs
        n = len(range(0, s.steps, COPY_EVERY))
        self.network, self.nvlink = np.zeros(n), np.zeros(n)
        self.aux = np.zeros(s.steps) if s.scheme == "aux_loss" else None
        self.buffers: dict = {}  # a step's arrays, written again for the next step (fresh ones cost their pages each time)

    def popularity(self, walk_steps: np.ndarray | None, n: int) -> np.ndarray:
        """(n, E) float32: skew x base + drift x walk for each step of the chunk (the walk summed
        step by step in float32, as `walk += step` does)."""
        s = self.s
        if walk_steps is None or not s.drift:  # no drift: the walk weighs nothing (skew x base + 0 is skew x base, bit for bit)
            walks = np.broadcast_to(self.walk, (n, s.experts))
        else:
            walks = np.cumsum(np.concatenate([self.walk[None], walk_steps]), axis=0, dtype=np.float32)[1:]
            self.walk = walks[-1].copy()
        return s.skew * self.base + s.drift * walks

    def advance(self, first: int, walk_steps, noise: np.ndarray, shared: dict) -> None:
        """Route the chunk's steps; `shared` holds the chunk's logits by (skew, drift) and their
        sigmoid affinities, each made by the first run of the stream that reads them (the same
        noise and walk give them the same bits)."""
        s = self.s
        n = noise.shape[0]
        popularity = self.popularity(walk_steps, n)[:, None, :]  # every chunk: it carries the walk on

        def logits_of_chunk():
            return _made(shared, ("logits", s.skew, s.drift), first, noise.shape, lambda out: np.add(noise, popularity, out=out))

        if s.scheme == "none":  # no state: the whole chunk at once
            chosen, _ = _choose(logits_of_chunk(), s)
            self.loads[first:first + n] = _counts(chosen, axis=1)
            for i in range(n):
                if (first + i) % COPY_EVERY == 0:
                    self.network[(first + i) // COPY_EVERY], self.nvlink[(first + i) // COPY_EVERY] = _copies(chosen[i], s)
            return
        if s.scheme == "bias":
            scores = _made(shared, ("scores", s.skew, s.drift), first, noise.shape, lambda out: _sigmoid(logits_of_chunk(), out))
        else:
            logits = logits_of_chunk()
        step_shape = noise.shape[1:]
        tokens = np.intp(s.tokens)
        for i in range(n):
            step = first + i
            bias = self.bias.astype(np.float32)
            if s.scheme == "bias":
                chosen, _ = _choose(np.add(scores[i], bias, out=_buffer(self.buffers, "biased", step_shape)), s)
            else:
                z = np.add(logits[i], bias, out=_buffer(self.buffers, "z", step_shape))  # the aux loss's logit bias
                chosen, row_max = _choose(z, s, row_max=True)  # the softmax's row max
            self.loads[step] = _counts(chosen, axis=0)
            count = self.loads[step]
            if step % COPY_EVERY == 0:
                self.network[step // COPY_EVERY], self.nvlink[step // COPY_EVERY] = _copies(chosen, s)
            if s.scheme == "bias":
                self.bias += s.gamma * np.sign(np.add.reduce(count, dtype=np.float64) / s.experts - count)  # count.mean(), without its Python wrapper
            else:
                probs = _softmax(z, _buffer(self.buffers, "probs", step_shape), row_max)
                f = count / (s.tokens * s.top_k)
                mean_p = np.true_divide(np.add.reduce(probs, axis=0), tokens, casting="unsafe")  # probs.mean(axis=0), as np.mean divides (by an intp)
                self.aux[step] = s.aux_coeff * s.experts * float(np.dot(f, mean_p))
                # probs in float64 once: `probs @ f` and the product with it each cast them (the same values)
                wide = _buffer(self.buffers, "weighted", step_shape, np.float64)
                np.copyto(wide, probs)
                weighted = np.multiply(wide, (wide @ f)[:, None], out=wide)
                grad = s.aux_coeff * s.experts * (mean_p * f - np.add.reduce(weighted, axis=0) / s.tokens)  # the mean over tokens
                self.bias -= ROUTER_LR * grad

    def result(self) -> RouterRun:
        return RouterRun(self.s, self.loads, self.network, self.nvlink, self.aux, self.bias)


def route_many(settings) -> list[RouterRun]:
    """route() for several settings, in their order. Settings that draw the same numbers (same
    seed, sizes and steps) read one stream together: the draw is made once for them, and each
    chunk's logits (and affinities) once per (skew, drift)."""
    settings = list(settings)
    runs = [_Run(s) for s in settings]
    groups: dict[tuple, list[_Run]] = {}
    for r in runs:
        groups.setdefault(_stream_key(r.s), []).append(r)
    for group in groups.values():
        draws = _draws(group[0].s)
        base = next(draws)
        for r in group:
            r.base = base
        shared: dict = {}  # the chunk's arrays by (what, skew, drift): the same bits for every run of the group that reads them
        for first, walk_steps, noise in draws:
            for r in group:
                r.advance(first, walk_steps, noise, shared)
    return [r.result() for r in runs]


def _buffer(buffers: dict, key, shape: tuple, dtype=np.float32) -> np.ndarray:
    """buffers[key], an array of this shape and dtype, made anew only when the shape changes."""
    if key not in buffers or buffers[key].shape != shape:
        buffers[key] = np.empty(shape, dtype=dtype)
    return buffers[key]


def _made(shared: dict, key, first: int, shape: tuple, make) -> np.ndarray:
    """shared[key] for the chunk starting at step `first`: made into its buffer by make(out) when
    the chunk's first reader asks, read as it is by the others."""
    out = _buffer(shared, key, shape)
    if shared.get(("made", key)) != first:
        make(out)
        shared[("made", key)] = first
    return out


def _sigmoid(logits: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The bias scheme's affinities, 1 / (1 + exp(-logits))."""
    np.negative(logits, out=out)
    np.exp(out, out=out)
    out += 1.0
    return np.reciprocal(out, out=out)


def route(setting: RouterSetting) -> RouterRun:
    """Run the router for setting.steps steps (see the module docstring)."""
    return route_many([setting])[0]


def expected_copies(setting: RouterSetting) -> tuple[float, float]:
    """(network, NVLink) copies per GPU per dispatch for a router that spreads a token's k experts
    uniformly (without node limits), as labs.core.engine.experts prices them: N (1 - (1 - 1/N)^k)
    (N - 1) / N network copies per token and k (g - 1) / g NVLink ones, g GPUs a node. (Its
    distinct-node count treats the k picks as independent; the array run picks k distinct experts.)"""
    s = setting
    n, g = s.nodes, s.gpus // s.nodes
    per_token_net = n * (1 - (1 - 1 / n) ** s.top_k) * (n - 1) / n
    per_token_nvl = s.top_k * (g - 1) / g
    tokens_per_gpu = s.tokens / s.gpus
    return tokens_per_gpu * per_token_net, tokens_per_gpu * per_token_nvl


# ---- runs kept in a file ---------------------------------------------------------------------------------------
# A lab whose instruments reach a few hundred settings ships their runs (Lab 15: 252, about 40 s of
# routing in all, 60-190 ms a move): a move reads its run, and every machine shows the same bits
# whatever its NumPy or its CPU's vector unit. The file names the router's source and the settings
# it was made for; it is read only when both are today's (load_runs), else the caller routes. Each
# run is its own members of the .npz, read when first asked for: a lab or a class reads a few.

RUN_FIELDS = ("loads", "network_copies", "nvlink_copies", "aux_loss", "bias")


def runs_fingerprint(settings, every: int) -> str:
    """What a file of runs was made by and for: this module's source, each setting, the rows' step count."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(f"every={every};".encode())
    for s in settings:
        h.update(repr(s).encode())
    return h.hexdigest()


def save_runs(path: Path, runs, every: int) -> None:
    """Write runs (of one shape: same steps and experts) to an .npz, each expert's loads summed over
    `every` steps (whole numbers in 16 bits: tokens x every must stay under 2^16)."""
    runs = list(runs)
    s = runs[0].setting
    if s.steps % every or s.tokens * every >= 1 << 16:
        raise ValueError(f"every must divide steps ({s.steps}) and keep tokens x every under 65,536, got {every}")
    if any((r.setting.steps, r.setting.experts) != (s.steps, s.experts) or r.every != 1 for r in runs):
        raise ValueError("runs must share steps and experts, each with its loads per step")
    members = {"fingerprint": np.array(runs_fingerprint([r.setting for r in runs], every)), "every": np.array(every)}
    for i, r in enumerate(runs):
        members[f"{i}.loads"] = r.loads.reshape(s.steps // every, every, s.experts).sum(axis=1).astype(np.uint16)
        for name in RUN_FIELDS[1:]:
            if getattr(r, name) is not None:
                members[f"{i}.{name}"] = getattr(r, name)
    np.savez_compressed(path, **members)


class StoredRuns:
    """The runs of a file save_runs wrote, in its settings' order, each read when first asked for."""

    def __init__(self, data, settings: list[RouterSetting], every: int):
        self._data, self._settings, self._every = data, settings, every
        self._read: dict[int, RouterRun] = {}

    def __len__(self) -> int:
        return len(self._settings)

    def __getitem__(self, i: int) -> RouterRun:
        if not 0 <= i < len(self._settings):
            raise IndexError(f"run {i} of {len(self._settings)}")
        if i not in self._read:
            files = self._data.files
            arrays = {name: _read_only(self._data[f"{i}.{name}"]) if f"{i}.{name}" in files else None for name in RUN_FIELDS}
            arrays["loads"] = _read_only(arrays["loads"].astype(np.int32))
            self._read[i] = RouterRun(self._settings[i], **arrays, every=self._every)
        return self._read[i]


def load_runs(path: Path, settings) -> StoredRuns | None:
    """The runs save_runs wrote for these settings (in this order), or None when the file is
    missing or was made by another router or for other settings."""
    settings = list(settings)
    try:
        data = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        return None
    every = int(data["every"])
    if str(data["fingerprint"]) != runs_fingerprint(settings, every):
        data.close()
        return None
    return StoredRuns(data, settings, every)
