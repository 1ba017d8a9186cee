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

from dataclasses import dataclass

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
    rng = np.random.default_rng(seed)
    a, b = (round_trip(rng.standard_normal((rows, k)), "e4m3") for _ in range(2))
    return a, b


def accumulate(products: np.ndarray, accumulator: str, promote_every: int | None = None) -> np.ndarray:
    """Row sums of `products` added one at a time in the accumulator's format; with
    promote_every = n, each run of n partial sums is added into an fp32 total (the fp32
    promotion DeepSeek-V3 does on CUDA cores every 128 elements). "h800-nearest" and
    "h800-truncated" are the ~14-bit tensor-core accumulator DeepSeek-V3 describes."""
    check_choice("accumulator", accumulator, ACCUMULATORS)
    products = np.asarray(products, dtype=np.float64)
    k = products.shape[1]
    n = k if promote_every is None else promote_every
    check_positive("promote_every", n, integer=True, maximum=k)
    if k % n:
        raise ValueError(f"promote_every must divide the {k} products, got {n}")
    if accumulator in NARROW_ACCUMULATORS:
        chunks = products.reshape(products.shape[0], k // n, n)
        partial = np.zeros(chunks.shape[:2])
        for j in range(n):
            partial = significant_bits(partial + chunks[:, :, j], H800_ACCUMULATOR_BITS, NARROW_ACCUMULATORS[accumulator])
    else:
        chunks = products.astype(FORMATS[accumulator].dtype).reshape(products.shape[0], k // n, n)
        partial = np.add.accumulate(chunks, axis=2, dtype=FORMATS[accumulator].dtype)[:, :, -1]
    return partial.astype(np.float32).sum(axis=1, dtype=np.float32).astype(np.float64)


def significant_bits(x: np.ndarray, bits: int, rounding=np.rint) -> np.ndarray:
    """x kept to `bits` significant bits (the exponent unbounded), by `rounding` (np.rint: to
    nearest, ties to even; np.trunc: toward zero)."""
    mantissa, exponent = np.frexp(x)  # x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1
    return np.ldexp(rounding(mantissa * 2.0 ** bits) / 2.0 ** bits, exponent)


def accumulation_error(a: np.ndarray, b: np.ndarray, accumulator: str, promote_every: int | None = None) -> float:
    """Median relative error of the dot products a_i . b_i accumulated so, against float64."""
    products = np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)
    exact = products.sum(axis=1)
    got = accumulate(products, accumulator, promote_every)
    return float(np.median(np.abs(got - exact) / np.maximum(np.abs(exact), 1e-300)))
