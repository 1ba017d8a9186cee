"""Megatron's tensor parallelism computed on real arrays: a transformer MLP and attention block
split over n simulated ranks, with every message the ranks exchange built and counted.

Shoeybi et al. 2019 (arXiv:1909.08053) Sec. 3: the first linear is split by columns (each rank
holds f/n of the MLP's hidden units, or a/n of the heads), the second by rows, so each rank's
partial output is summed by one all-reduce. Operator f is the identity forward and an
all-reduce backward; g is an all-reduce forward and the identity backward (picotron's
tp_communications.py names them the same way). Sequence parallelism (Korthikanti et al. 2022,
arXiv:2205.05198, Sec. 4.2.2) cuts the same arrays along the sequence outside the split: g
becomes a reduce-scatter, f an all-gather, and each costs half an all-reduce.

The collectives are rings (Patarasuk and Yuan 2009) played chunk by chunk: what a rank sends
is the sum of the `nbytes` of the arrays it hands its neighbour, cast to the wire's dtype.
Biases and dropout are left out; the block is x + Block(x).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from labs.core.engine.precision import FORMATS
from labs.core.engine.validation import check_bool, check_choice, check_positive

BLOCKS = ("mlp-gelu", "mlp-swiglu", "attention")
WIRES = ("fp64", "fp32", "bf16")  # the dtype the partial sums travel in
_WIRE_DTYPES = {"fp64": np.dtype(np.float64), "fp32": FORMATS["fp32"].dtype, "bf16": FORMATS["bf16"].dtype}


def wire_itemsize(wire: str) -> int:
    """Bytes per element on the wire."""
    check_choice("wire", wire, WIRES)
    return int(_WIRE_DTYPES[wire].itemsize)


# ---- the ring, counted ----------------------------------------------------------------------
@dataclass
class Wire:
    """Messages sent so far: bytes per rank, and one entry per collective call."""

    ranks: int
    dtype: str = "fp64"
    sent: np.ndarray = field(init=False)
    calls: list = field(default_factory=list)

    def __post_init__(self):
        check_choice("wire", self.dtype, WIRES)
        self.sent = np.zeros(self.ranks)

    def send(self, rank: int, array: np.ndarray) -> np.ndarray:
        """What arrives: the array in the wire's dtype (and back), its bytes charged to `rank`."""
        on_wire = np.asarray(array).astype(_WIRE_DTYPES[self.dtype])
        self.sent[rank] += on_wire.nbytes
        return on_wire.astype(np.float64)

    def _log(self, op: str, before: np.ndarray, payload_bytes: float) -> None:
        self.calls.append({"op": op, "payload_bytes": payload_bytes, "sent_per_rank": (self.sent - before).tolist()})


def reduce_scatter(parts: list[np.ndarray], wire: Wire, axis: int = 0) -> list[np.ndarray]:
    """Rank r ends with chunk r (along `axis`) of the sum of every rank's array: n - 1 ring
    steps, each rank passing on one chunk of its running sums."""
    n = len(parts)
    before = wire.sent.copy()
    chunks = [np.array_split(np.asarray(p, dtype=np.float64), n, axis=axis) for p in parts]
    for step in range(n - 1):
        moving = [(r, (r - step - 1) % n, wire.send(r, chunks[r][(r - step - 1) % n])) for r in range(n)]
        for r, c, data in moving:
            chunks[(r + 1) % n][c] = chunks[(r + 1) % n][c] + data
    wire._log("reduce-scatter", before, float(np.asarray(parts[0]).size * _WIRE_DTYPES[wire.dtype].itemsize))
    return [chunks[r][r] for r in range(n)]  # after n - 1 steps rank r holds the finished chunk r


def all_gather(parts: list[np.ndarray], wire: Wire, axis: int = 0) -> list[np.ndarray]:
    """Every rank ends with all ranks' arrays concatenated along `axis`: n - 1 ring steps, each
    rank passing on the chunk it received last."""
    n = len(parts)
    before = wire.sent.copy()
    held = [{r: np.asarray(parts[r], dtype=np.float64)} for r in range(n)]
    for step in range(n - 1):
        moving = [(r, (r - step) % n, wire.send(r, held[r][(r - step) % n])) for r in range(n)]
        for r, c, data in moving:
            held[(r + 1) % n][c] = data
    wire._log("all-gather", before, float(sum(np.asarray(p).size for p in parts) * _WIRE_DTYPES[wire.dtype].itemsize))
    return [np.concatenate([held[r][c] for c in range(n)], axis=axis) for r in range(n)]


def all_reduce(parts: list[np.ndarray], wire: Wire) -> list[np.ndarray]:
    """Every rank ends with the sum: a ring reduce-scatter, then a ring all-gather of the chunks."""
    n = len(parts)
    if n == 1:
        wire._log("all-reduce", wire.sent.copy(), float(np.asarray(parts[0]).size * _WIRE_DTYPES[wire.dtype].itemsize))
        return [np.asarray(parts[0], dtype=np.float64)]
    shape = np.asarray(parts[0]).shape
    before = wire.sent.copy()
    flat = [np.asarray(p, dtype=np.float64).ravel() for p in parts]
    scattered = reduce_scatter(flat, wire)
    wire.calls.pop()
    gathered = all_gather(scattered, wire)
    wire.calls.pop()
    wire._log("all-reduce", before, float(flat[0].size * _WIRE_DTYPES[wire.dtype].itemsize))
    return [g.reshape(shape) for g in gathered]


# ---- the block's weights and its local pieces --------------------------------------------------
@dataclass(frozen=True)
class BlockShape:
    """A transformer block's sizes: `batch` sequences of `seq` tokens, width `hidden`, `heads`
    attention heads, MLP width `ffn` (4 x hidden by default)."""

    batch: int = 2
    seq: int = 64
    hidden: int = 256
    heads: int = 8
    ffn: int | None = None

    def __post_init__(self):
        for name in ("batch", "seq", "hidden", "heads"):
            check_positive(name, getattr(self, name), integer=True, maximum=1 << 16)
        if self.ffn is not None:
            check_positive("ffn", self.ffn, integer=True, maximum=1 << 18)
        if self.hidden % self.heads:
            raise ValueError(f"heads must divide hidden ({self.hidden}), got {self.heads}")

    @property
    def width(self) -> int:
        return self.ffn if self.ffn is not None else 4 * self.hidden

    @property
    def tokens(self) -> int:
        return self.batch * self.seq


def make_weights(shape: BlockShape, block: str, seed: int = 0, dtype=np.float64) -> dict[str, np.ndarray]:
    """Random weights (scaled 1/sqrt(fan-in)) for the block, full size: the unsplit model."""
    check_choice("block", block, BLOCKS)
    rng = np.random.default_rng(seed)
    d, f = shape.hidden, shape.width

    def w(rows, cols):
        return (rng.standard_normal((rows, cols)) / np.sqrt(rows)).astype(dtype)

    if block == "attention":
        return {"wq": w(d, d), "wk": w(d, d), "wv": w(d, d), "wo": w(d, d)}
    if block == "mlp-swiglu":
        return {"w_gate": w(d, f), "w_up": w(d, f), "w_down": w(f, d)}
    return {"w_in": w(d, f), "w_out": w(f, d)}


def split_weights(weights: dict[str, np.ndarray], block: str, n: int, heads: int) -> list[dict[str, np.ndarray]]:
    """Rank r's shard: the first linears' columns (hidden units or whole heads) r of n, the
    last linear's matching rows."""
    check_choice("block", block, BLOCKS)
    if block == "attention" and heads % n:
        raise ValueError(f"ranks must divide the {heads} heads, got {n}")
    width = next(iter(weights.values())).shape[1] if block != "attention" else weights["wq"].shape[1]
    if width % n:
        raise ValueError(f"ranks must divide the split width {width}, got {n}")
    cols = np.array_split(np.arange(width), n)
    last = {"attention": "wo", "mlp-swiglu": "w_down", "mlp-gelu": "w_out"}[block]
    return [{k: (v[c, :] if k == last else v[:, c]) for k, v in weights.items()} for c in cols]


_GELU_C = np.sqrt(2 / np.pi)


def gelu(x):
    """GeLU, tanh form (GPT-2's, Megatron's): local to each rank under the column split."""
    return 0.5 * x * (1 + np.tanh(_GELU_C * (x + 0.044715 * x * x * x)))


def gelu_grad(x):
    t = np.tanh(_GELU_C * (x + 0.044715 * x * x * x))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _GELU_C * (1 + 3 * 0.044715 * x * x)


def silu(x):
    return x / (1 + np.exp(-x))


def silu_grad(x):
    s = 1 / (1 + np.exp(-x))
    return s * (1 + x * (1 - s))


def local_forward(x: np.ndarray, w: dict, block: str, shape: BlockShape, heads: int) -> tuple[np.ndarray, dict]:
    """One rank's partial output for the whole input x (tokens x hidden) and what its backward
    needs. Everything between the two linears is local: GeLU, SwiGLU, each head's attention."""
    if block == "mlp-gelu":
        a = x @ w["w_in"]
        return gelu(a) @ w["w_out"], {"a": a}
    if block == "mlp-swiglu":
        g, u = x @ w["w_gate"], x @ w["w_up"]
        return (silu(g) * u) @ w["w_down"], {"g": g, "u": u}
    b, s, hd = shape.batch, shape.seq, shape.hidden // shape.heads

    def heads_of(t):  # tokens x (heads * hd) -> batch x heads x seq x hd
        return t.reshape(b, s, heads, hd).transpose(0, 2, 1, 3)

    q, k, v = (heads_of(x @ w[n]) for n in ("wq", "wk", "wv"))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    scores = np.where(np.tril(np.ones((s, s), dtype=bool)), scores, -np.inf)  # causal
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    o = (p @ v).transpose(0, 2, 1, 3).reshape(b * s, heads * hd)
    return o @ w["wo"], {"q": q, "k": k, "v": v, "p": p, "o": o}


def local_backward(x: np.ndarray, dz: np.ndarray, w: dict, saved: dict, block: str, shape: BlockShape, heads: int) -> tuple[np.ndarray, dict]:
    """One rank's partial input gradient (to be all-reduced: operator f's backward) and its
    own weight gradients (local, nothing to send), from the full output gradient dz."""
    if block == "mlp-gelu":
        dh = dz @ w["w_out"].T
        da = dh * gelu_grad(saved["a"])
        return da @ w["w_in"].T, {"w_in": x.T @ da, "w_out": gelu(saved["a"]).T @ dz}
    if block == "mlp-swiglu":
        g, u = saved["g"], saved["u"]
        dh = dz @ w["w_down"].T
        dg, du = dh * u * silu_grad(g), dh * silu(g)
        return dg @ w["w_gate"].T + du @ w["w_up"].T, {"w_gate": x.T @ dg, "w_up": x.T @ du, "w_down": (silu(g) * u).T @ dz}
    b, s, hd = shape.batch, shape.seq, shape.hidden // shape.heads
    q, k, v, p, o = (saved[n] for n in ("q", "k", "v", "p", "o"))
    do = (dz @ w["wo"].T).reshape(b, s, heads, hd).transpose(0, 2, 1, 3)
    dv = p.transpose(0, 1, 3, 2) @ do
    dp = do @ v.transpose(0, 1, 3, 2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) / np.sqrt(hd)
    dq, dk = ds @ k, ds.transpose(0, 1, 3, 2) @ q

    def tokens_of(t):
        return t.transpose(0, 2, 1, 3).reshape(b * s, heads * hd)

    dq, dk, dv = tokens_of(dq), tokens_of(dk), tokens_of(dv)
    dx = dq @ w["wq"].T + dk @ w["wk"].T + dv @ w["wv"].T
    return dx, {"wq": x.T @ dq, "wk": x.T @ dk, "wv": x.T @ dv, "wo": o.T @ dz}


# ---- the block, split over n ranks ----------------------------------------------------------------
@dataclass
class TPRun:
    """One forward and backward of x + Block(x) over n ranks: the output, the input gradient and
    the weight gradients (reassembled full size), the bytes each rank sent, every collective
    call, and the activation bytes each rank holds outside the split region (the block's input
    and output)."""

    ranks: int
    sequence_parallel: bool
    output: np.ndarray
    grad_input: np.ndarray
    grad_weights: dict[str, np.ndarray]
    sent_per_rank: np.ndarray
    calls: list
    replicated_bytes_per_rank: float
    forward_calls: int  # how many of `calls` the forward pass made

    @property
    def forward_sent_per_rank(self) -> np.ndarray:
        """Bytes each rank sent in the forward pass alone."""
        return np.sum([c["sent_per_rank"] for c in self.calls[: self.forward_calls]], axis=0)


def run_block(x: np.ndarray, dz: np.ndarray, weights: dict, block: str, shape: BlockShape, ranks: int, sequence_parallel: bool = False, wire: str = "fp64") -> TPRun:
    """x + Block(x) forward and its backward for the output gradient dz, Megatron-split over
    `ranks` ranks (1: the unsplit block). Without SP every rank holds all of x: g all-reduces the
    partial outputs (forward), f all-reduces the partial input gradients (backward). With SP rank
    r holds tokens r of n: f all-gathers x before the split, g reduce-scatters the partial
    outputs back to token shards; backward, the reverse."""
    check_choice("block", block, BLOCKS)
    check_positive("ranks", ranks, integer=True, maximum=64)
    check_bool("sequence_parallel", sequence_parallel)
    x, dz = np.asarray(x, dtype=np.float64), np.asarray(dz, dtype=np.float64)
    if x.shape != (shape.tokens, shape.hidden) or dz.shape != x.shape:
        raise ValueError(f"x and dz must be tokens x hidden = {(shape.tokens, shape.hidden)}, got {x.shape} and {dz.shape}")
    if sequence_parallel and shape.tokens % ranks:
        raise ValueError(f"sequence parallelism needs ranks to divide the {shape.tokens} tokens, got {ranks}")
    shards = split_weights(weights, block, ranks, shape.heads)
    heads = shape.heads // ranks if block == "attention" else shape.heads
    link = Wire(ranks, wire)
    if sequence_parallel:
        x_shards = np.array_split(x, ranks, axis=0)
        x_full = all_gather(x_shards, link)  # f forward: all-gather along the sequence
        partial, saved = zip(*(local_forward(x_full[r], shards[r], block, shape, heads) for r in range(ranks)))
        z = reduce_scatter(list(partial), link)  # g forward: reduce-scatter back to token shards
        forward_calls = len(link.calls)
        out_shards = [x_shards[r] + z[r] for r in range(ranks)]
        output = np.concatenate(out_shards, axis=0)
        dz_full = all_gather(np.array_split(dz, ranks, axis=0), link)  # g backward
        grads = [local_backward(x_full[r], dz_full[r], shards[r], saved[r], block, shape, heads) for r in range(ranks)]
        dx = reduce_scatter([g[0] for g in grads], link)  # f backward
        grad_input = np.concatenate([np.array_split(dz, ranks, axis=0)[r] + dx[r] for r in range(ranks)], axis=0)
        held = x_shards[0].nbytes + out_shards[0].nbytes
    else:
        partial, saved = zip(*(local_forward(x, shards[r], block, shape, heads) for r in range(ranks)))
        z = all_reduce(list(partial), link)  # g forward
        forward_calls = len(link.calls)
        output = x + z[0]
        grads = [local_backward(x, dz, shards[r], saved[r], block, shape, heads) for r in range(ranks)]  # g backward: identity
        dx = all_reduce([g[0] for g in grads], link)  # f backward
        grad_input = dz + dx[0]
        held = x.nbytes + output.nbytes
    last = {"attention": "wo", "mlp-swiglu": "w_down", "mlp-gelu": "w_out"}[block]
    grad_weights = {k: np.concatenate([g[1][k] for g in grads], axis=0 if k == last else 1) for k in weights}
    return TPRun(ranks, sequence_parallel, output, grad_input, grad_weights, link.sent.copy(), link.calls, float(held), forward_calls)


def block_inputs(shape: BlockShape, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A random block input x and output gradient dz, tokens x hidden."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((shape.tokens, shape.hidden)), rng.standard_normal((shape.tokens, shape.hidden))


def forward_all_reduce_bytes(shape: BlockShape, ranks: int, wire: str = "bf16", seed: int = 0) -> dict[str, float]:
    """One MLP forward at `shape`, split over `ranks`, in fp32: the payload of its all-reduce and
    what each rank sent for it, both counted on the partial outputs in the wire's dtype (what
    Megatron sends in bf16 training). Forward only: the seed's milestone counts forward passes."""
    weights = make_weights(shape, "mlp-gelu", seed, np.float32)
    x = np.random.default_rng(seed + 1).standard_normal((shape.tokens, shape.hidden)).astype(np.float32)
    link = Wire(ranks, wire)
    partial = [local_forward(x, w, "mlp-gelu", shape, shape.heads)[0] for w in split_weights(weights, "mlp-gelu", ranks, shape.heads)]
    all_reduce(partial, link)
    call = link.calls[-1]
    return {"payload_bytes": call["payload_bytes"], "sent_per_rank": float(max(call["sent_per_rank"]))}
