"""Block-scaled formats on real arrays: what MXFP8, MXFP4 and NVFP4 keep of a tensor, beside
bf16 and FP8 with one scale per tensor (labs.core.engine.precision).

Every cast is ml_dtypes' own (float8_e4m3fn, float8_e5m2, float4_e2m1fn values and
float8_e8m0fnu scales); nothing rounds by hand. Blocks run along the last axis (the GEMM's
reduction dimension, as the hardware scales them).

- MX (OCP Microscaling Formats Specification v1.0, Sec. 5 and 6.3,
  opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf): 32 elements
  share one E8M0 scale, a bare power of two X = 2^(floor(log2 amax) - emax_elem), emax_elem the
  exponent of the element format's largest normal (E4M3 8, E5M2 15, E2M1 2); elements are V / X
  cast to the element format, normal values past its max clamped to it.
- NVFP4 (NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference",
  developer.nvidia.com/blog, 2025; pytorch/ao torchao/prototype/mx_formats/nvfp4_tensor.py,
  per_tensor_amax_to_scale and nvfp4_quantize): 16 E2M1 elements share one E4M3 scale, and
  one FP32 scale per tensor, amax_tensor / (448 x 6), lets the block scales use E4M3's whole
  range: block scale = e4m3(amax_block / 6 / tensor scale); elements x / (block scale x tensor
  scale) cast to E2M1, clamped to +-6.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ml_dtypes
import numpy as np

from labs.core.engine import precision
from labs.core.engine.precision import MX_BLOCK, NVFP4_BLOCK
from labs.core.engine.validation import check_choice, check_positive

ELEMENTS = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2, "e2m1": ml_dtypes.float4_e2m1fn}
E8M0 = ml_dtypes.float8_e8m0fnu  # 8 exponent bits, no sign, no mantissa: 2^-127 .. 2^127
E8M0_EXPONENTS = (-127, 127)
FP32_SCALE_BITS = 32


def element_max(element: str) -> float:
    check_choice("element", element, ELEMENTS)
    return float(ml_dtypes.finfo(ELEMENTS[element]).max)


def element_emax(element: str) -> int:
    """Exponent of the element format's largest normal: 448 = 1.75 x 2^8 gives 8."""
    return int(np.frexp(element_max(element))[1]) - 1


def element_bits(element: str) -> int:
    check_choice("element", element, ELEMENTS)
    return int(ml_dtypes.finfo(ELEMENTS[element]).bits)


def element_grid(element: str) -> tuple[float, ...]:
    """Every non-negative finite value the element format holds, decoded by ml_dtypes from each
    code with the sign bit clear (E2M1: 0, 0.5, 1, 1.5, 2, 3, 4, 6)."""
    codes = np.arange(1 << (element_bits(element) - 1), dtype=np.uint8)
    values = codes.view(ELEMENTS[element]).astype(np.float64)
    return tuple(float(v) for v in values[np.isfinite(values)])


def _cast(x: np.ndarray, dtype) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(dtype).astype(np.float64)


def _blocks(x, block: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim not in (1, 2) or x.size == 0:
        raise ValueError(f"x must be a non-empty 1-D or 2-D array, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x must be finite (no NaN or inf)")
    if x.shape[-1] % block:
        raise ValueError(f"x's last axis must be a multiple of the {block}-element block, got {x.shape[-1]}")
    return x.reshape(*x.shape[:-1], x.shape[-1] // block, block)


@dataclass(frozen=True)
class BlockQuantised:
    """A tensor through a block-scaled format: `values` is what it decodes to (float64, x's
    shape): elements x block_scales x tensor_scale. `elements` are the element-format values,
    `block_scales` one stored scale per block (E8M0 for MX, E4M3 for NVFP4), `tensor_scale`
    NVFP4's FP32 per-tensor scale (1 for MX)."""

    values: np.ndarray
    elements: np.ndarray
    block_scales: np.ndarray
    tensor_scale: float


def mx_quantise(x, element: str = "e4m3", block: int = MX_BLOCK) -> BlockQuantised:
    """x through MX: an E8M0 power-of-two scale per `block` elements (OCP MX v1.0 Sec. 6.3)."""
    check_choice("element", element, ELEMENTS)
    check_positive("block", block, integer=True, maximum=1 << 16)
    groups = _blocks(x, block)
    amax = np.abs(groups).max(axis=-1, keepdims=True)
    exponent = np.frexp(np.where(amax > 0, amax, 1.0))[1] - 1 - element_emax(element)  # floor(log2 amax) - emax
    exponent = np.where(amax > 0, np.clip(exponent, *E8M0_EXPONENTS), E8M0_EXPONENTS[0])
    scale = _cast(np.ldexp(1.0, exponent), E8M0)
    top = element_max(element)
    codes = _cast(np.clip(groups / scale, -top, top), ELEMENTS[element])
    return BlockQuantised((codes * scale).reshape(np.shape(x)), codes.reshape(np.shape(x)), scale[..., 0], 1.0)


def nvfp4_quantise(x, block: int = NVFP4_BLOCK) -> BlockQuantised:
    """x through NVFP4: E2M1 elements, an E4M3 scale per `block`, an FP32 scale per tensor."""
    check_positive("block", block, integer=True, maximum=1 << 16)
    groups = _blocks(x, block)
    fp4_max, e4m3_max = element_max("e2m1"), element_max("e4m3")
    tensor_amax = float(np.abs(groups).max())
    tensor_scale = float(np.float32(tensor_amax / (e4m3_max * fp4_max))) if tensor_amax > 0 else 1.0
    amax = np.abs(groups).max(axis=-1, keepdims=True)
    block_scale = _cast(np.minimum(amax / fp4_max / tensor_scale, e4m3_max), ELEMENTS["e4m3"])
    scale = block_scale * tensor_scale  # a block scale E4M3 flushes to 0 flushes its whole block
    safe = np.where(scale > 0, scale, 1.0)
    codes = np.where(scale > 0, _cast(np.clip(groups / safe, -fp4_max, fp4_max), ELEMENTS["e2m1"]), 0.0)
    return BlockQuantised((codes * scale).reshape(np.shape(x)), codes.reshape(np.shape(x)), block_scale[..., 0], tensor_scale)


def kept(x, back) -> dict[str, float]:
    """What `back` keeps of x: the share of non-zero values flushed to zero, and over the values
    kept the median and the largest relative error."""
    x = np.asarray(x, dtype=np.float64)
    back = np.asarray(back, dtype=np.float64)
    nonzero = x != 0
    flushed = nonzero & (back == 0)
    alive = nonzero & ~flushed & np.isfinite(back)
    rel = np.abs(back[alive] - x[alive]) / np.abs(x[alive])
    return {
        "flushed": float(flushed.sum() / max(int(nonzero.sum()), 1)),
        "median_rel_error": float(np.median(rel)) if rel.size else 0.0,
        "max_rel_error": float(rel.max()) if rel.size else 0.0,
    }


# ---- the formats side by side --------------------------------------------------------------------
# name: (label, bits per element, scale bits per block, elements per block)
FORMATS = {
    "bf16": ("BF16", 16, 0, None),
    "fp8-tensor": ("FP8 E4M3, one scale per tensor", 8, 0, None),
    "mxfp8-e4m3": ("MXFP8 (E4M3, E8M0 scale per 32)", 8, 8, MX_BLOCK),
    "mxfp8-e5m2": ("MXFP8 (E5M2, E8M0 scale per 32)", 8, 8, MX_BLOCK),
    "mxfp4": ("MXFP4 (E2M1, E8M0 scale per 32)", 4, 8, MX_BLOCK),
    "nvfp4": ("NVFP4 (E2M1, E4M3 scale per 16, FP32 per tensor)", 4, 8, NVFP4_BLOCK),
}


def decode(x, name: str) -> np.ndarray:
    """x through the format `name` of FORMATS, decoded back to float64."""
    check_choice("format", name, FORMATS)
    x = np.asarray(x, dtype=np.float64)
    if name == "bf16":
        return precision.round_trip(x, "bf16")
    if name == "fp8-tensor":
        return precision.quantise(x.reshape(-1, x.shape[-1]), "e4m3", "tensor").reshape(x.shape)
    if name == "nvfp4":
        return nvfp4_quantise(x).values
    return mx_quantise(x, {"mxfp8-e4m3": "e4m3", "mxfp8-e5m2": "e5m2", "mxfp4": "e2m1"}[name]).values


def bits_per_value(name: str, size: int) -> float:
    """Storage per element, scales included (NVFP4's FP32 tensor scale spread over `size`)."""
    check_choice("format", name, FORMATS)
    check_positive("size", size, integer=True)
    _, bits, scale_bits, block = FORMATS[name]
    per_tensor = FP32_SCALE_BITS / size if name in ("nvfp4", "fp8-tensor") else 0.0
    return bits + (scale_bits / block if block else 0.0) + per_tensor


def compare(x) -> list[dict]:
    """One row per format: its bits per value and what it keeps of x (kept())."""
    x = np.asarray(x, dtype=np.float64)
    return [{"format": name, "label": FORMATS[name][0], "bits": bits_per_value(name, x.size), **kept(x, decode(x, name))} for name in FORMATS]


# ---- Lab 12's samples ----------------------------------------------------------------------------
@lru_cache(maxsize=16)
def _gradients(n: int, low_exp: float, high_exp: float, seed: int) -> np.ndarray:
    x = precision.gradient_sample(n, low_exp, high_exp, seed)[: n - n % MX_BLOCK]
    x.setflags(write=False)
    return x


@lru_cache(maxsize=16)
def _activations(outlier_scale: float, tokens: int, channels: int, outlier_channels: int) -> np.ndarray:
    x = precision.activation_sample(tokens, channels, outlier_channels, outlier_scale)
    x.setflags(write=False)
    return x


def gradient_sample(n: int = 50_000, low_exp: float = -12.0, high_exp: float = -1.0, seed: int = 0) -> np.ndarray:
    """precision.gradient_sample(n, low_exp, high_exp, seed) cut to whole 32-element blocks (its
    first n - n % 32 values; read-only, shared by every caller)."""
    check_positive("n", n, integer=True, maximum=10_000_000)
    if n < MX_BLOCK:
        raise ValueError(f"n must be at least one {MX_BLOCK}-element block, got {n}")
    return _gradients(int(n), float(low_exp), float(high_exp), int(seed))


def activation_sample(outlier_scale: float = 100.0, tokens: int = 256, channels: int = 1024, outlier_channels: int = 4) -> np.ndarray:
    """precision.activation_sample (tokens x channels, unit normal, `outlier_channels` channels
    `outlier_scale` times larger; read-only, shared by every caller)."""
    check_positive("outlier_scale", outlier_scale, maximum=1e6)
    return _activations(float(outlier_scale), tokens, channels, outlier_channels)


@lru_cache(maxsize=64)
def _rows_of(key: tuple) -> tuple[dict, ...]:
    kind, args = key
    return tuple(compare(_gradients(*args) if kind == "gradients" else _activations(*args)))


def gradient_rows(n: int = 50_000, low_exp: float = -12.0, high_exp: float = -1.0, seed: int = 0) -> list[dict]:
    """compare() on gradient_sample(n, low_exp, high_exp, seed)."""
    gradient_sample(n, low_exp, high_exp, seed)
    return [dict(r) for r in _rows_of(("gradients", (int(n), float(low_exp), float(high_exp), int(seed))))]


def activation_rows(outlier_scale: float = 100.0, tokens: int = 256, channels: int = 1024, outlier_channels: int = 4) -> list[dict]:
    """compare() on activation_sample(...), blocks along the channels."""
    activation_sample(outlier_scale, tokens, channels, outlier_channels)
    return [dict(r) for r in _rows_of(("activations", (float(outlier_scale), tokens, channels, outlier_channels)))]


def worked_block(x) -> dict:
    """The NVFP4 block (16 values) holding x's largest magnitude, and what MXFP4 (its 32-block) and
    NVFP4 make of it: the values, their decodings and each format's scales for that block."""
    x = np.asarray(x, dtype=np.float64)
    rows = x.reshape(-1, x.shape[-1])
    r, c = np.unravel_index(int(np.abs(rows).argmax()), rows.shape)
    row = rows[r]  # it holds the tensor's amax, so NVFP4's tensor scale is the whole tensor's
    mx, nv = mx_quantise(row, "e2m1"), nvfp4_quantise(row)
    start = c - c % NVFP4_BLOCK
    cut = slice(start, start + NVFP4_BLOCK)
    return {
        "values": row[cut].tolist(), "mxfp4": mx.values[cut].tolist(), "nvfp4": nv.values[cut].tolist(),
        "mx_scale": float(mx.block_scales[c // MX_BLOCK]), "nv_block_scale": float(nv.block_scales[c // NVFP4_BLOCK]),
        "nv_tensor_scale": nv.tensor_scale,
    }
