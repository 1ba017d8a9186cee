"""Number formats on real arrays: what bf16, fp16 and the two FP8 formats keep of a tensor.

Every cast is ml_dtypes' own (the NumPy dtypes JAX uses: bfloat16, float8_e4m3fn, float8_e5m2;
fp16 is NumPy's). Nothing here rounds by hand: a quantisation error is the difference between
an array and its round trip through the format.

- Loss scaling (Micikevicius et al. 2018, arXiv:1710.03740, Sec. 3.2): gradients below fp16's
  smallest subnormal flush to zero; multiplying the loss by S shifts them into range.
- Scaling granularity (DeepSeek-V3, arXiv:2412.19437, Sec. 3.3.2): one scale per tensor, per
  1x128 tile of activations, or per 128x128 block of weights, each amax / the format's max.
- Accumulation (same section): a dot product summed in a narrow accumulator, against partial
  sums promoted to an fp32 total every 128 elements.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache

import ml_dtypes
import numpy as np

from labs.core.engine.validation import check_choice, check_positive


@dataclass(frozen=True)
class Format:
    """A number format as its dtype reports it (ml_dtypes.finfo / numpy.finfo)."""

    name: str
    dtype: np.dtype
    source: str

    @property
    def info(self):
        return ml_dtypes.finfo(self.dtype)

    @property
    def max(self) -> float:
        return float(self.info.max)

    @property
    def smallest_normal(self) -> float:
        return float(self.info.smallest_normal)

    @property
    def smallest_subnormal(self) -> float:
        return float(self.info.smallest_subnormal)

    @property
    def mantissa_bits(self) -> int:
        return int(self.info.nmant)

    @property
    def exponent_bits(self) -> int:
        return int(self.info.nexp)

    @property
    def bytes(self) -> int:
        return int(np.dtype(self.dtype).itemsize)


FORMATS: dict[str, Format] = {
    "fp32": Format("fp32", np.dtype(np.float32), "IEEE 754 binary32"),
    "bf16": Format("bf16", np.dtype(ml_dtypes.bfloat16), "bfloat16: fp32's 8 exponent bits, 7 stored mantissa bits"),
    "fp16": Format("fp16", np.dtype(np.float16), "IEEE 754 binary16"),
    "e4m3": Format("e4m3", np.dtype(ml_dtypes.float8_e4m3fn), "OCP FP8 E4M3 (no infinities): Micikevicius et al. 2022, arXiv:2209.05433"),
    "e5m2": Format("e5m2", np.dtype(ml_dtypes.float8_e5m2), "OCP FP8 E5M2 (IEEE-like): Micikevicius et al. 2022, arXiv:2209.05433"),
}
SCALINGS = ("tensor", "tile", "block")  # one scale per tensor, per 1 x 128 tile, per 128 x 128 block
TILE = 128  # DeepSeek-V3's tile and block edge, and its accumulation interval
# DeepSeek-V3 (arXiv:2412.19437, Sec. 3.3.2): FP8 GEMM accumulation on H800 tensor cores "is limited
# to retaining around 14 bits", "a maximum relative error of nearly 2%" at K = 4096. Emulated as
# fp32's exponent with 14 significant bits (1-8-13), after every addition either rounded to nearest
# or truncated toward zero: the hardware's rounding is not public, and the two bracket that figure.
H800_ACCUMULATOR_BITS = 14
NARROW_ACCUMULATORS = {"h800-nearest": np.rint, "h800-truncated": np.trunc}
ACCUMULATORS = ("bf16", "fp16", "fp32", *NARROW_ACCUMULATORS)


def fmt(name: str) -> Format:
    check_choice("format", name, FORMATS)
    return FORMATS[name]


def round_trip(x: np.ndarray, name: str) -> np.ndarray:
    """x cast to the format and back to float64 (values past the format's max become inf, or
    NaN for E4M3, which has no infinity: both count as overflow)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, dtype=np.float32).astype(fmt(name).dtype).astype(np.float64)


# ---- samples --------------------------------------------------------------------------------
def gradient_sample(n: int = 100_000, low_exp: float = -12.0, high_exp: float = -1.0, seed: int = 0) -> np.ndarray:
    """Gradients whose magnitudes spread log-uniformly over 10^low_exp..10^high_exp, random
    signs: the many decades a real gradient tensor spans (Micikevicius et al. 2018 Fig. 3)."""
    check_positive("n", n, integer=True, maximum=10_000_000)
    if not -40 <= low_exp < high_exp <= 4:
        raise ValueError(f"low_exp and high_exp must satisfy -40 <= low_exp < high_exp <= 4, got {low_exp}, {high_exp}")
    rng = np.random.default_rng(seed)
    magnitude = 10.0 ** rng.uniform(low_exp, high_exp, n)
    return np.where(rng.random(n) < 0.5, -magnitude, magnitude)


def activation_sample(tokens: int = 256, channels: int = 1024, outlier_channels: int = 4, outlier_scale: float = 100.0, seed: int = 0) -> np.ndarray:
    """Activations (tokens x channels), unit normal, with a few channels `outlier_scale` times
    larger: the outlier features of large transformers (Dettmers et al. 2022, LLM.int8())."""
    for name, value in (("tokens", tokens), ("channels", channels)):
        check_positive(name, value, integer=True, maximum=1 << 16)
    check_positive("outlier_channels", outlier_channels, integer=True, allow_zero=True, maximum=channels)
    check_positive("outlier_scale", outlier_scale, maximum=1e6)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((tokens, channels))
    x[:, rng.choice(channels, outlier_channels, replace=False)] *= outlier_scale
    return x


# ---- what a cast keeps ------------------------------------------------------------------------
def cast_report(x: np.ndarray, name: str, scale: float = 1.0) -> dict[str, float]:
    """Cast x * scale to the format and back, divide by scale: the share of non-zero values
    flushed to zero, the share that overflowed, and the median relative error of the others."""
    check_positive("scale", scale, maximum=1e30)
    x = np.asarray(x, dtype=np.float64)
    back = round_trip(x * scale, name) / scale
    nonzero = x != 0
    overflow = ~np.isfinite(back) & nonzero
    flushed = (back == 0) & nonzero
    kept = nonzero & ~overflow & ~flushed
    rel = np.abs(back[kept] - x[kept]) / np.abs(x[kept])
    count = max(int(nonzero.sum()), 1)
    return {
        "flushed": float(flushed.sum() / count),
        "overflow": float(overflow.sum() / count),
        "median_rel_error": float(np.median(rel)) if rel.size else 0.0,
    }


def cast_shares(magnitudes: np.ndarray, name: str, scale: float = 1.0) -> dict[str, float]:
    """cast_report's flushed and overflow shares of x, from x's non-zero magnitudes sorted
    ascending (np.sort(np.abs(x[x != 0]))), without casting them all: the round trip keeps their
    order, so the flushed ones are the first run of them and the overflowed ones the last; each
    run's edge is found by casting a few values at a time."""
    check_positive("scale", scale, maximum=1e30)
    m = np.asarray(magnitudes, dtype=np.float64)
    back = lambda v: round_trip(v * scale, name) / scale  # noqa: E731 (cast_report's arithmetic, on a few values)
    flushed = _first(lambda v: back(v) != 0, m)
    overflow = m.size - _first(lambda v: ~np.isfinite(back(v)), m)
    count = max(m.size, 1)
    return {"flushed": float(np.int64(flushed) / count), "overflow": float(np.int64(overflow) / count)}


def _first(predicate, values: np.ndarray) -> int:
    """The index of the first of `values` on which `predicate` holds (values.size if none), for a
    predicate false and then true along them: 65 probes a round, each round 64 times narrower."""
    lo, hi = 0, values.size  # the index is in lo..hi
    while lo < hi:
        probe = np.arange(lo, hi) if hi - lo <= 65 else np.linspace(lo, hi - 1, 65).astype(np.int64)  # lo, hi - 1 and 63 between
        hit = np.asarray(predicate(values[probe]))
        j = int(hit.argmax()) if hit.any() else probe.size
        if j < probe.size:
            hi = int(probe[j])
        if j > 0:
            lo = int(probe[j - 1]) + 1
    return lo


def loss_scale_curve(x: np.ndarray, name: str, log2_scales) -> dict[str, np.ndarray]:
    """cast_report's flushed and overflow shares over loss scales 2^k."""
    rows = [cast_report(x, name, 2.0 ** k) for k in log2_scales]
    return {"log2_scale": np.asarray(list(log2_scales)), "flushed": np.array([r["flushed"] for r in rows]), "overflow": np.array([r["overflow"] for r in rows])}


def quantise(x: np.ndarray, name: str, scaling: str = "tensor") -> np.ndarray:
    """x (2-D, both sides multiples of 128 for tile/block scaling) through the format with one
    scale amax / max per tensor, per 1 x 128 tile along a row, or per 128 x 128 block; the
    scales are kept in fp32 (DeepSeek-V3 Sec. 3.3.2)."""
    check_choice("scaling", scaling, SCALINGS)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D (tokens x channels), got shape {x.shape}")
    rows, cols = x.shape
    if scaling != "tensor" and (cols % TILE or (scaling == "block" and rows % TILE)):
        raise ValueError(f"{scaling} scaling needs sides that are multiples of {TILE}, got shape {x.shape}")
    if scaling == "tensor":
        groups = x.reshape(1, 1, -1)
    elif scaling == "tile":
        groups = x.reshape(rows, cols // TILE, TILE)
    else:
        groups = x.reshape(rows // TILE, TILE, cols // TILE, TILE).transpose(0, 2, 1, 3).reshape(rows // TILE, cols // TILE, TILE * TILE)
    amax = np.abs(groups).max(axis=-1, keepdims=True)
    scale = np.where(amax > 0, amax / fmt(name).max, 1.0).astype(np.float32).astype(np.float64)
    back = round_trip(groups / scale, name) * scale
    if scaling != "block":
        return back.reshape(rows, cols)
    return back.reshape(rows // TILE, cols // TILE, TILE, TILE).transpose(0, 2, 1, 3).reshape(rows, cols)


def quantisation_error(x: np.ndarray, name: str, scaling: str = "tensor") -> dict[str, float]:
    """How much of x survives quantise(): the share of non-zero values flushed to zero and the
    median relative error per element (the ordinary channels, not the outliers, set it)."""
    x = np.asarray(x, dtype=np.float64)
    back = quantise(x, name, scaling)
    nonzero = x != 0
    rel = np.abs(back[nonzero] - x[nonzero]) / np.abs(x[nonzero])
    return {"flushed": float(((back == 0) & nonzero).sum() / max(int(nonzero.sum()), 1)), "median_rel_error": float(np.median(rel))}


# ---- accumulation -----------------------------------------------------------------------------
def dot_products(rows: int = 64, k: int = 4096, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """`rows` pairs of length-k vectors, already rounded to E4M3 (unit scale): the inputs of an
    FP8 GEMM's dot products."""
    check_positive("rows", rows, integer=True, maximum=1 << 14)
    check_positive("k", k, integer=True, maximum=1 << 17)
    codes = _e4m3_codes(2 * rows * k, seed).reshape(2, rows, k)
    return _E4M3_VALUES[codes[0]], _E4M3_VALUES[codes[1]]


def dot_product_errors(rows: int, k: int, cases, seed: int = 0) -> tuple[float, ...]:
    """accumulation_error(*dot_products(rows, k, seed), accumulator, promote_every) for each
    (accumulator, promote_every) of `cases`: the same numbers, each product read from a table of
    E4M3 products by its pair of codes, and the float64 sums made once."""
    check_positive("rows", rows, integer=True, maximum=1 << 14)
    check_positive("k", k, integer=True, maximum=1 << 17)
    codes = _e4m3_codes(2 * rows * k, seed).reshape(2, rows, k)
    pairs = (codes[0].astype(np.uint16) << np.uint16(8)) | codes[1]  # a product's index in _E4M3_PRODUCTS
    exact, wide = [], {case: [] for case in cases if case[0] not in NARROW_ACCUMULATORS}
    for accumulator, every in wide:
        check_choice("accumulator", accumulator, ACCUMULATORS)
        _promotion_interval(k, every)
    # index and product buffers, written again for each block: no large array is made
    index, buffer = np.empty(min(rows, _ROW_BLOCK) * k, dtype=np.intp), np.empty(min(rows, _ROW_BLOCK) * k)
    for i in range(0, rows, _ROW_BLOCK):  # as accumulation_error: a block of rows at a time
        block = pairs[i:i + _ROW_BLOCK]
        at = index[:block.size].reshape(block.shape)
        np.copyto(at, block)
        products = np.take(_E4M3_PRODUCTS, at, out=buffer[:block.size].reshape(block.shape), mode="clip")  # every index is in the table
        exact.append(products.sum(axis=1))
        for (accumulator, every), sums in wide.items():  # accumulate(products, accumulator, every), the cast read from a table
            values = np.take(_e4m3_products_in(FORMATS[accumulator].dtype), at, mode="clip")
            sums.append(_promoted_total(_wide_partials(values, accumulator, _promotion_interval(k, every))))
    exact = np.concatenate(exact)
    # finite E4M3 values lie within 2^-9..448, so sums of up to 2^17 of their products stay normal
    # float64 (_sums_stay_normal): unless a NaN code made a NaN product, and so a NaN row sum
    stays_normal = not np.isnan(exact).any()
    columns, errors = None, []
    for accumulator, every in cases:
        if accumulator not in NARROW_ACCUMULATORS:
            summed = np.concatenate(wide[accumulator, every])
        elif stays_normal:  # every row at once, as accumulate adds them
            n = _promotion_interval(k, every)
            if columns is None:
                columns = np.ascontiguousarray(pairs.T)  # (k, rows): each column's pairs side by side
            runs = columns.reshape(k // n, n, rows).transpose(1, 0, 2)  # (n, chunks, rows): the p-th product of each chunk
            step = max(1, index.size // runs[0].size)
            blocks = (_take_into(runs[p:p + step], index, buffer) for p in range(0, n, step))
            summed = _promoted_total(np.ascontiguousarray(_narrow_partials(blocks, runs.shape[1:], accumulator, k, stays_normal=True).T))
        else:
            summed = accumulate(_E4M3_PRODUCTS[pairs], accumulator, every)
        errors.append(_median_relative_error(summed, exact))
    return tuple(errors)


def _take_into(pairs: np.ndarray, index: np.ndarray, buffer: np.ndarray) -> np.ndarray:
    """The products of `pairs` (any view), in its shape, made in the start of `index` and `buffer`."""
    at = index[:pairs.size].reshape(pairs.shape)
    np.copyto(at, pairs)
    return np.take(_E4M3_PRODUCTS, at, out=buffer[:pairs.size].reshape(pairs.shape), mode="clip")


def _e4m3_codes(n: int, seed) -> np.ndarray:
    """The first n E4M3 codes (uint8) of seed's stream of unit normals, each drawn in float64 and
    cast to float32, then to E4M3: dot_products' a and then b, row by row. An int seed's codes are
    kept (up to _KEPT_CODES) and drawn further when more are asked: every K's inputs are the start
    of one stream."""
    with _STREAMS_LOCK:
        rng, codes = _STREAMS.get(seed, (None, None)) if type(seed) is int else (None, None)
        if rng is None:
            rng, codes = np.random.default_rng(seed), np.empty(0, dtype=np.uint8)
        if codes.size < n:
            more = np.empty(n - codes.size, dtype=np.uint8)
            size = min(more.size, _DRAW)
            normal, single, index, sticky = np.empty(size), np.empty(size, dtype=np.float32), np.empty(size, dtype=np.uint32), np.empty(size, dtype=np.uint32)
            for start in range(0, more.size, _DRAW):
                out = more[start:start + _DRAW]
                m = out.size
                rng.standard_normal(out=normal[:m])  # drawn in pieces: the generator's stream is the same numbers
                single[:m] = normal[:m]
                _e4m3_of_float32(single[:m], out, index[:m], sticky[:m])
            codes = np.concatenate([codes, more])
            codes.flags.writeable = False  # shared by every caller
            if type(seed) is int and codes.size <= _KEPT_CODES:
                if seed not in _STREAMS and len(_STREAMS) >= _KEPT_STREAMS:
                    _STREAMS.clear()
                _STREAMS[seed] = (rng, codes)
        return codes[:n]


def _e4m3_of_float32(x: np.ndarray, out: np.ndarray, index: np.ndarray, sticky: np.ndarray) -> None:
    """ml_dtypes' float32 -> E4M3 cast of x, as uint8 codes in `out`, read from a table (index
    and sticky: uint32 scratch of x's size). Rounding to 3 mantissa bits (or fewer, below E4M3's
    normals) depends only on the sign, the exponent, the 4 leading mantissa bits and whether any
    of the other 19 is set: the table holds ml_dtypes' cast of one float32 of each of these 2^14
    classes (the same code as ml_dtypes on every one of the 2^32 float32 values, checked)."""
    bits = x.view(np.uint32)
    np.bitwise_and(bits, np.uint32(_STICKY), out=sticky)
    np.minimum(sticky, np.uint32(1), out=sticky)
    np.right_shift(bits, np.uint32(_LOW_BITS), out=index)
    np.left_shift(index, np.uint32(1), out=index)
    np.bitwise_or(index, sticky, out=index)
    np.take(_E4M3_OF_FLOAT32, index, out=out, mode="clip")  # every index is below 2^14


_LOW_BITS = 19  # float32 mantissa bits below E4M3's 3 and its rounding bit
_STICKY = (1 << _LOW_BITS) - 1
with np.errstate(over="ignore", invalid="ignore"):
    _E4M3_OF_FLOAT32 = (((np.arange(1 << 14, dtype=np.uint32) >> np.uint32(1)) << np.uint32(_LOW_BITS)) | (np.arange(1 << 14, dtype=np.uint32) & np.uint32(1))
                        ).view(np.float32).astype(FORMATS["e4m3"].dtype).view(np.uint8)
_E4M3_VALUES = np.arange(256, dtype=np.uint8).view(FORMATS["e4m3"].dtype).astype(np.float64)  # every E4M3 code's value (two NaNs)
_E4M3_PRODUCTS = np.multiply.outer(_E4M3_VALUES, _E4M3_VALUES).ravel()  # [a << 8 | b]: the product of codes a and b's values


@lru_cache(maxsize=None)
def _e4m3_products_in(dtype: np.dtype) -> np.ndarray:
    """_E4M3_PRODUCTS cast to an accumulator's format (fp16 overflows on the largest)."""
    with np.errstate(over="ignore"):
        return _E4M3_PRODUCTS.astype(dtype)


_DRAW = 1 << 16  # normals drawn at a time
_KEPT_CODES = 1 << 25  # E4M3 codes kept per seed (32 MB): Lab 12's K = 16,384 over 512 rows takes 2^24
_KEPT_STREAMS = 4
_STREAMS: dict[int, tuple[np.random.Generator, np.ndarray]] = {}
_STREAMS_LOCK = threading.Lock()


def forget_streams() -> None:
    """Drop the kept streams of E4M3 codes (labs.core.scenarios.forget_computed)."""
    with _STREAMS_LOCK:
        _STREAMS.clear()


_ROW_BLOCK = 64  # rows of dot products multiplied and accumulated at once: each row is on its own, and 512 x 16,384 float64 temporaries were 300 MB


def accumulate(products: np.ndarray, accumulator: str, promote_every: int | None = None) -> np.ndarray:
    """Row sums of `products` added one at a time in the accumulator's format; with
    promote_every = n, each run of n partial sums is added into an fp32 total (the fp32
    promotion DeepSeek-V3 does on CUDA cores every 128 elements). "h800-nearest" and
    "h800-truncated" are the ~14-bit tensor-core accumulator DeepSeek-V3 describes."""
    check_choice("accumulator", accumulator, ACCUMULATORS)
    products = np.asarray(products, dtype=np.float64)
    k = products.shape[1]
    n = _promotion_interval(k, promote_every)
    if accumulator in NARROW_ACCUMULATORS:
        chunks = products.reshape(products.shape[0], k // n, n)
        step = max(1, _BLOCK_ELEMENTS // chunks[:, :, 0].size)
        blocks = (np.ascontiguousarray(chunks[:, :, j:j + step].transpose(2, 0, 1)) for j in range(0, n, step))
        partial = _narrow_partials(blocks, chunks.shape[:2], accumulator, k)
    else:
        partial = _wide_partials(products.astype(FORMATS[accumulator].dtype), accumulator, n)
    return _promoted_total(partial)


def _wide_partials(values: np.ndarray, accumulator: str, n: int) -> np.ndarray:
    """Partial sums (rows, chunks) of `values`, already in the accumulator's format: each run of n
    added one at a time in that format."""
    chunks = values.reshape(values.shape[0], -1, n)
    return np.add.accumulate(chunks, axis=2, dtype=FORMATS[accumulator].dtype)[:, :, -1]


def _promotion_interval(k: int, promote_every: int | None) -> int:
    n = k if promote_every is None else promote_every
    check_positive("promote_every", n, integer=True, maximum=k)
    if k % n:
        raise ValueError(f"promote_every must divide the {k} products, got {n}")
    return n


def _promoted_total(partial: np.ndarray) -> np.ndarray:
    """Each row's partial sums (rows, chunks) added into an fp32 total."""
    return partial.astype(np.float32).sum(axis=1, dtype=np.float32).astype(np.float64)


def _narrow_partials(blocks, shape: tuple[int, int], accumulator: str, k: int, stays_normal: bool = False) -> np.ndarray:
    """The narrow accumulator's partial sums, (rows, chunks): `blocks` yields (m, rows, chunks)
    arrays (or any other `shape` of independent sums), the next m products of every chunk, in
    order; each is added to its chunk's partial sum, which keeps 14 significant bits after every
    addition. stays_normal: every block is known to pass _sums_stay_normal."""
    partial = np.zeros(shape)
    bits = partial.view(np.uint64)
    keep_bits = _keep_bits_of(accumulator)
    for columns in blocks:
        if keep_bits is not None and not stays_normal and not _sums_stay_normal(columns, k):
            keep_bits = None  # the bits so far are significant_bits' own: it carries on from them
        for column in columns:
            if keep_bits is None:
                partial = significant_bits(partial + column, H800_ACCUMULATOR_BITS, NARROW_ACCUMULATORS[accumulator])
            else:
                partial += column
                keep_bits(bits)
    return partial


_BLOCK_ELEMENTS = 1 << 20  # products taken at once (8 MB, a 64-row block's at K = 16,384) when a narrow accumulator adds them one at a time
_DROPPED_BITS = 52 - (H800_ACCUMULATOR_BITS - 1)  # of a float64's 52 stored mantissa bits, those the narrow accumulator drops


def _sums_stay_normal(products: np.ndarray, k: int) -> bool:
    """Whether every partial sum of k such products is zero or a normal float64: each is a
    multiple of the smallest product's last bit (and stays one when rounded to 14 bits), so if
    no product is below 2^-960 none is subnormal, and none overflows if each is below 2^1000 / k."""
    magnitude = np.abs(products)
    largest = magnitude.max(initial=0.0)
    smallest = magnitude.min(where=magnitude > 0, initial=np.inf)
    return bool(largest * k < 2.0 ** 1000 and smallest >= 2.0 ** -960)  # a NaN fails both


def _keep_bits_in_place(accumulator: str):
    """significant_bits(x, 14, rounding) for zero or normal float64 x, done on x's bits in place:
    clearing the 39 low mantissa bits truncates the magnitude toward zero; adding half their
    weight less one, plus the lowest kept bit, first rounds to nearest with ties to even (a carry
    into the exponent is the next power of two, as frexp's rounding gives). The same bits as
    significant_bits: tests/test_lab12.py compares the two on random and tie-breaking values."""
    keep = _keep_bits_of(accumulator)
    return lambda x: keep(x.view(np.uint64))


def _keep_bits_of(accumulator: str):
    """_keep_bits_in_place, done on a float64 array's uint64 view."""
    mask = np.uint64(~((1 << _DROPPED_BITS) - 1) & (2 ** 64 - 1))
    if NARROW_ACCUMULATORS[accumulator] is np.trunc:
        def keep_truncated(u: np.ndarray) -> None:
            np.bitwise_and(u, mask, out=u)
        return keep_truncated
    half_less_one, shift, one = np.uint64((1 << (_DROPPED_BITS - 1)) - 1), np.uint64(_DROPPED_BITS), np.uint64(1)

    def keep_nearest(u: np.ndarray) -> None:
        lowest_kept = (u >> shift) & one
        lowest_kept += half_less_one
        u += lowest_kept
        u &= mask
    return keep_nearest


def significant_bits(x: np.ndarray, bits: int, rounding=np.rint) -> np.ndarray:
    """x kept to `bits` significant bits (the exponent unbounded), by `rounding` (np.rint: to
    nearest, ties to even; np.trunc: toward zero)."""
    mantissa, exponent = np.frexp(x)  # x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1
    return np.ldexp(rounding(mantissa * 2.0 ** bits) / 2.0 ** bits, exponent)


def accumulation_error(a: np.ndarray, b: np.ndarray, accumulator: str, promote_every: int | None = None) -> float:
    """Median relative error of the dot products a_i . b_i accumulated so, against float64."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    exact = np.concatenate([(a[i:i + _ROW_BLOCK] * b[i:i + _ROW_BLOCK]).sum(axis=1) for i in range(0, a.shape[0], _ROW_BLOCK)])
    if accumulator in NARROW_ACCUMULATORS:
        # one product at a time for every row at once, taken from a and b a block of columns at a
        # time (a loop of k short steps: over 64 rows, the steps' own cost was the time)
        rows, k = a.shape
        n = _promotion_interval(k, promote_every)
        a3, b3 = a.reshape(rows, k // n, n), b.reshape(rows, k // n, n)
        step = max(1, _BLOCK_ELEMENTS // (rows * (k // n)))
        blocks = ((a3[:, :, j:j + step] * b3[:, :, j:j + step]).transpose(2, 0, 1).copy() for j in range(0, n, step))
        summed = _promoted_total(_narrow_partials(blocks, (rows, k // n), accumulator, k))
    else:  # each row's sum is its own: a block at a time
        summed = np.concatenate([accumulate(a[i:i + _ROW_BLOCK] * b[i:i + _ROW_BLOCK], accumulator, promote_every) for i in range(0, a.shape[0], _ROW_BLOCK)])
    return _median_relative_error(summed, exact)


def _median_relative_error(summed: np.ndarray, exact: np.ndarray) -> float:
    return float(np.median(np.abs(summed - exact) / np.maximum(np.abs(exact), 1e-300)))


# ---- the GEMMs' precision: Plan.precision ------------------------------------------------------
# What each value of Plan.precision stores and moves; the GEMM rates are labs.core.engine.gemm's
# (GEMM_KERNELS, PRECISION_KERNELS). Codes: the index in PRECISIONS (0, bf16, is falsy: the step
# model's "fp8" column holds the code, so "any low-precision GEMMs" reads as its truth).
# - fp8: one FP32 scale per tensor (Transformer Engine's DelayedScaling / Float8CurrentScaling).
# - mxfp8: OCP MX v1.0 (opencompute.org ocp-microscaling-formats-mx-v1-0-spec-final): E4M3 values,
#   one E8M0 scale (1 byte) per 32 along the GEMM's reduction axis; Blackwell's tensor cores take
#   the scales (TE's MXFP8BlockScaling). A block runs along K, so a tensor read transposed by a
#   backward GEMM needs its own column-wise quantized copy (TE's "rowwise" and "columnwise" usages).
# - nvfp4: E2M1 values (half a byte), one E4M3 scale per 16 and an FP32 scale per tensor (Blackwell's
#   tensor cores; TE's NVFP4BlockScaling). Its training recipe (NVIDIA, "Pretraining Large Language
#   Models with NVFP4", arXiv:2509.25149, Sec. 4): 16 x 16 blocks for weights (one copy serves both
#   usages' scales), 1 x 16 for activations and gradients, random Hadamard transforms on the weight
#   gradient GEMM's inputs, stochastic rounding of gradients, and "a few sensitive linear layers in
#   higher precision (15% of the network, with the majority of high precision layers at the end of
#   the network)": NVFP4_BF16_LAYER_SHARE.
# - fp8_blockwise: DeepSeek-V3's recipe (arXiv:2412.19437, Sec. 3.3.2; deepseek-ai/DeepGEMM): E4M3 with
#   an FP32 scale per 1 x 128 tile of activations and per 128 x 128 block of weights, partial sums
#   promoted to FP32 every 128 along K; Hopper and later (TE's Float8BlockScaling). Sec. 3.3.1 keeps
#   the embedding, the output head, MoE gating, normalisation and attention in higher precision:
#   the engine prices those in BF16 under every precision.
# Every format keeps attention (its BMMs or the fused kernel), the router, the embedding and the
# output layer in BF16; the optimizer's FP32 master weights, the BF16 weights and the gradients are
# the same bytes under every format (labs.core.engine.memory): only the cached low-precision weight
# copies (weight_cache_bytes) and the saved GEMM inputs differ.
PRECISIONS = ("bf16", "fp8", "mxfp8", "nvfp4", "fp8_blockwise")
BF16, FP8, MXFP8, NVFP4, FP8_BLOCKWISE = range(len(PRECISIONS))
MX_BLOCK = 32  # OCP MX v1.0 Sec. 5: k = 32 elements share one E8M0 scale, in every concrete MX format
NVFP4_BLOCK = 16  # NVIDIA NVFP4: 16 E2M1 elements share one E4M3 scale (and one FP32 scale a tensor)
NVFP4_BF16_LAYER_SHARE = 0.15  # arXiv:2509.25149 Sec. 4's "15% of the network" kept in higher precision


@dataclass(frozen=True)
class GemmPrecision:
    """One Plan.precision: the bytes a value and its scales take, in activations (tiles along a
    row) and weights, the tensor cores that run it, and the share of layers its recipe keeps in BF16."""

    name: str
    element_bytes: float
    activation_scale_bytes: float  # scale bytes per activation (or gradient) element
    weight_scale_bytes: float  # scale bytes per weight element
    archs: tuple[str, ...]  # GPU architectures whose tensor cores run it (labs.core.engine.hardware.GPU.arch)
    tensor_amax_pass: bool  # a per-tensor scale: the tensor's amax is read before the cast (block scales come from the block itself)
    bf16_layer_share: float = 0.0

    @property
    def activation_bytes(self) -> float:
        return self.element_bytes + self.activation_scale_bytes

    @property
    def weight_bytes(self) -> float:
        return self.element_bytes + self.weight_scale_bytes


_TENSOR_SCALE = 0.0  # one FP32 scale a tensor: nothing per element
GEMM_PRECISIONS = {
    "bf16": GemmPrecision("bf16", 2.0, 0.0, 0.0, ("ampere", "hopper", "blackwell", "cdna3", "cdna4"), False),
    "fp8": GemmPrecision("fp8", 1.0, _TENSOR_SCALE, _TENSOR_SCALE, ("hopper", "blackwell", "cdna3", "cdna4"), True),
    "mxfp8": GemmPrecision("mxfp8", 1.0, 1.0 / MX_BLOCK, 1.0 / MX_BLOCK, ("blackwell",), False),
    # NVFP4 weights: one scale per 16 x 16 block, counted as the tensor cores read scales, one per 1 x 16 along K
    # (unconfirmed with "cache nvfp4 blackwell": TE's packing of the 2D scales not measured)
    "nvfp4": GemmPrecision("nvfp4", 0.5, 1.0 / NVFP4_BLOCK, 1.0 / NVFP4_BLOCK, ("blackwell",), True, NVFP4_BF16_LAYER_SHARE),
    "fp8_blockwise": GemmPrecision("fp8_blockwise", 1.0, 4.0 / TILE, 4.0 / (TILE * TILE), ("hopper", "blackwell"), False),
}

# Low-precision weight copies Transformer Engine keeps between micro-batches (its weight cache: a
# weight is quantized once a step, is_first_microbatch), copies a parameter: the row-wise copy the
# forward GEMM reads and, where the backward's data-gradient GEMM cannot read it transposed, a
# column-wise one.
# - Hopper's FP8 tensor cores take only the "TN" layout, so TE keeps the FP8 transpose too (TE docs,
#   "Handling transposes": "for FP8 on Hopper architecture, some tensors need to be physically
#   transposed in memory to perform needed GEMMs"; expert review 38bda0b M4): 2 copies, per-tensor
#   and 128 x 128 blockwise alike.
# - Blackwell reads per-tensor FP8 in any layout: 1 copy. MXFP8's 1 x 32 blocks run along K, and K
#   is the other axis for the transposed GEMM: 2 copies, each with its own scales. NVFP4's weights
#   are scaled in 16 x 16 blocks so both usages agree, yet TE stores each usage's packed data: 2
#   copies (unconfirmed: TE's NVFP4 weight cache size is not measured here). Blockwise FP8 on
#   Blackwell keeps Hopper's 2 (unconfirmed).
# - Instinct (cdna3, cdna4): 1 copy (unconfirmed: ROCm TE's FP8 weight cache not measured).
WEIGHT_CACHE_COPIES = {
    ("hopper", "fp8"): 2, ("hopper", "fp8_blockwise"): 2,
    ("blackwell", "fp8"): 1, ("blackwell", "mxfp8"): 2, ("blackwell", "nvfp4"): 2, ("blackwell", "fp8_blockwise"): 2,
    ("cdna3", "fp8"): 1, ("cdna4", "fp8"): 1,
}


# Tensor cores that run a format for which no GEMM rate is stored: refused, saying so.
NO_STORED_RATE = {
    ("cdna4", "mxfp8"): "CDNA4's matrix cores run the OCP MX formats (its FP6 and FP4 peaks: ds_mi355x_fp6_dense_peak, ds_mi355x_fp4_dense_peak), but no MXFP8 GEMM row (hipBLASLt) is stored to price them",
}


def gemm_precision(name: str) -> GemmPrecision:
    if type(name) is str and name in GEMM_PRECISIONS:  # a known name (a Plan's, checked where it was built): check_choice's answer, sooner
        return GEMM_PRECISIONS[name]
    check_choice("precision", name, GEMM_PRECISIONS)
    return GEMM_PRECISIONS[name]


def precision_code(name: str) -> int:
    check_choice("precision", name, GEMM_PRECISIONS)
    return PRECISIONS.index(name)


def check_precision_on(gpu, name: str) -> None:
    """Refuse a precision the GPU has no tensor cores (or no measured FP8 rate) for, by name."""
    spec = gemm_precision(name)
    if (gpu.arch, name) in NO_STORED_RATE:
        raise ValueError(f"precision={name!r} on {gpu.name}: {NO_STORED_RATE[(gpu.arch, name)]}; use 'bf16' or 'fp8'")
    if gpu.arch not in spec.archs or (name != "bf16" and not gpu.fp8_mamf_flops):
        raise ValueError(f"precision={name!r} needs {name.upper()} tensor cores, which {gpu.name} ({gpu.arch}) does not have "
                         f"(it runs on {', '.join(spec.archs)}); use 'bf16'")


def weight_cache_bytes(name: str, arch: str) -> float:
    """Bytes a parameter's cached low-precision weights take (0 in BF16): copies x (value + scale
    bytes), on the share of layers the recipe quantizes."""
    spec = gemm_precision(name)
    if name == "bf16":
        return 0.0
    return WEIGHT_CACHE_COPIES.get((arch, name), 1) * spec.weight_bytes * (1.0 - spec.bf16_layer_share)



# What the block-scaled formats' pricing assumes with no row or code behind it ("which": assumption);
# tests/test_unconfirmed.py lists them so the list only changes on purpose.
UNCONFIRMED = {
    "gemm mxfp8 blackwell": "MXFP8 GEMMs at the per-tensor FP8 kernel and share (labs.core.engine.gemm): no MXFP8 GEMM row is stored; the datasheets give one dense FP8 peak for both",
    "gemm fp8_blockwise blackwell": "blockwise FP8 on Blackwell at the per-tensor FP8 kernel and share: no blockwise GEMM row on Blackwell",
    "gemm nvfp4 b200 b300 gb300": "GB200's FP4 fit (gemm_azure_gb200_fp4_*) taken for the other Blackwell parts, each at its own dense FP4 peak",
    "cache nvfp4 blackwell": "2 copies of NVFP4 weights (row- and column-wise packed data): TE's NVFP4 weight cache not measured",
    "cache fp8_blockwise blackwell": "2 copies, as on Hopper: TE's Float8BlockScaling cache on Blackwell not measured",
    "cache fp8 cdna": "1 copy on Instinct (cdna3, cdna4): ROCm TE's FP8 weight cache not measured",
    "activations block-scaled": "DeepSeek-V3's FP8 activation cache under norms_up_proj recompute counted at 1 byte an element under every format (its 1 x 128 tile scales, and a 4-bit format's half byte, not counted); Transformer Engine's saved inputs are counted at each format's bytes (labs.core.engine.stages.memory: saved_input_savings)",
    "quantize block-scaled": "NVFP4's random Hadamard transform and stochastic rounding, and the blockwise casts, at QUANTIZE_HBM_SHARE (fitted on TE's MXFP8 cast rows) in one pass",
}
