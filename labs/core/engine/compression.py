"""Gradient compression for data parallelism: the bytes each scheme all-reduces, and what its
kernels cost beside the bytes saved.

- 8-bit: each gradient as int8 with one scale per tensor (ZeRO++'s qgZ quantises gradients for
  its all-to-all reduce-scatter; Wang et al. 2023, arXiv:2306.10209): a byte a parameter.
- 1-bit with error feedback (1-bit Adam, Tang et al. 2021, arXiv:2102.02888; signSGD with error
  feedback, Karimireddy et al. 2019): one sign bit a parameter and one scale per tensor.
- PowerSGD rank r (Vogels et al. 2019, arXiv:1905.13727, Algorithm 1; PyTorch's
  torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook): each m x n weight gradient M sends
  P = M Q (m x r) and Q = M^T P (n x r), two all-reduces, so r(m + n) values; vectors (norms,
  biases) go uncompressed. Its kernels are three skinny GEMMs per matrix (M Q, M^T P, and P Q^T
  to rebuild M), priced by labs.core.engine.gemm, and the error-feedback pass.

Every scheme's traffic is priced as an all-reduce of its bytes by labs.core.engine.topology
(1-bit Adam and qgZ move the same bytes through all-to-all and all-gather).
"""

from __future__ import annotations

from labs.core.engine.gemm import gemm_time
from labs.core.engine.hardware import Cluster
from labs.core.engine.models import Model
from labs.core.engine.topology import group_cost
from labs.core.engine.validation import check_choice, check_positive

GRAD_BYTES = {"bf16": 2, "fp32": 4}  # the dtype DDP all-reduces: fp32 under PyTorch's autocast (fp32 parameters)
SCHEMES = ("none", "int8", "1bit", "powersgd")
SCHEME_NAMES = {"none": "none", "int8": "8-bit (int8, a scale per tensor)", "1bit": "1-bit with error feedback", "powersgd": "PowerSGD"}


def pass_bytes_per_param(scheme: str, g: float) -> float:
    """HBM bytes per parameter the scheme's elementwise passes move, gradients of g bytes
    (hand-counted):
    int8: quantise reads the gradient (g) and writes int8 (1); dequantise reads int8 (1), writes g.
    1bit: add the fp32 error buffer to the gradient (read g + 4), write the signs (1/8) and the new
      error (4); unpack the signs (1/8) into the gradient (g).
    powersgd: add the error buffer (kept in the gradient's dtype by PyTorch's hook): read 2g, write
      g; after the rebuild, the new error M - P Q^T: read 2g, write g."""
    return {"none": 0.0, "int8": 2 * g + 2, "1bit": 2 * g + 8 + 2 / 8, "powersgd": 6 * g}[scheme]


def weight_matrices(model: Model) -> list[tuple[int, int, int]]:
    """(rows, cols, count) of every weight matrix of a dense model: Q, K, V and the output
    projection, the FFN's two (three if gated), the embedding and an untied output head."""
    if not isinstance(model, Model):
        raise ValueError(f"model must be a Model from labs.core.engine.models, got {model!r}")
    if model.experts or model.mla:
        raise ValueError(f"model must be a dense model without MLA (PowerSGD's matrices are counted for those), got {model.name}")
    h, n = model.hidden, model.layers
    mats = [(h, model.q_dim, n), (h, model.kv_dim, 2 * n), (model.q_dim, h, n), (h, model.ffn, (3 if model.gated_ffn else 2) * n), (model.vocab, h, 1)]
    if not model.tied_embeddings:
        mats.append((model.vocab, h, 1))
    return mats


def compressed_elements(model: Model, scheme: str, rank: int = 4) -> float:
    """Values one rank all-reduces per step under `scheme` (PowerSGD: P and Q together)."""
    check_choice("scheme", scheme, SCHEMES)
    check_positive("rank", rank, integer=True, maximum=1 << 12)
    if scheme != "powersgd":
        return float(model.params)
    mats = weight_matrices(model)
    in_matrices = sum(m * k * c for m, k, c in mats)
    return float(model.params - in_matrices + sum(rank * (m + k) * c for m, k, c in mats))


def _grad_bytes(grad_dtype: str) -> int:
    check_choice("grad_dtype", grad_dtype, GRAD_BYTES)
    return GRAD_BYTES[grad_dtype]


def payload_bytes(model: Model, scheme: str, rank: int = 4, grad_dtype: str = "bf16") -> float:
    """Bytes one rank all-reduces per step (PowerSGD's P and Q in the gradient's dtype)."""
    g = _grad_bytes(grad_dtype)
    per_value = {"none": g, "int8": 1.0, "1bit": 1 / 8, "powersgd": g}[scheme]
    return compressed_elements(model, scheme, rank) * per_value


def kernel_seconds(model: Model, cluster: Cluster, scheme: str, rank: int = 4, grad_dtype: str = "bf16") -> float:
    """Seconds of the scheme's compression and decompression kernels on one GPU per step."""
    check_choice("scheme", scheme, SCHEMES)
    if not isinstance(cluster, Cluster):
        raise ValueError(f"cluster must be a Cluster from labs.core.engine.hardware, got {cluster!r}")
    gpu = cluster.gpu
    passes = model.params * pass_bytes_per_param(scheme, _grad_bytes(grad_dtype)) / (gpu.hbm_bytes_per_s * gpu.hbm_efficiency)
    if scheme != "powersgd":
        return float(passes)
    gemms = sum(c * (gemm_time(gpu, m, rank, k) + gemm_time(gpu, k, rank, m) + gemm_time(gpu, m, k, rank)) for m, k, c in weight_matrices(model))
    return float(passes + gemms)


def comm_seconds(model: Model, cluster: Cluster, dp: int, scheme: str, rank: int = 4, grad_dtype: str = "bf16") -> float:
    """Seconds of the scheme's all-reduce(s) over `dp` ranks (PowerSGD: one for P, one for Q)."""
    check_positive("dp", dp, integer=True, maximum=1 << 20)
    if scheme != "powersgd":
        return group_cost("all_reduce", payload_bytes(model, scheme, rank, grad_dtype), cluster, dp).total_s
    mats = weight_matrices(model)
    p_elems = sum(rank * m * c for m, _, c in mats)
    q_elems = compressed_elements(model, "powersgd", rank) - p_elems  # Q, with the uncompressed vectors
    return sum(group_cost("all_reduce", e * _grad_bytes(grad_dtype), cluster, dp).total_s for e in (p_elems, q_elems))


def compression_rows(model: Model, cluster: Cluster, dp: int, rank: int = 4, grad_dtype: str = "bf16") -> list[dict]:
    """One row per scheme: bytes all-reduced, communication and kernel seconds, their sum, and
    the seconds saved against the uncompressed all-reduce of `grad_dtype` gradients (negative:
    compression costs)."""
    rows = []
    for scheme in SCHEMES:
        comm, kernels = comm_seconds(model, cluster, dp, scheme, rank, grad_dtype), kernel_seconds(model, cluster, scheme, rank, grad_dtype)
        name = f"none ({grad_dtype} all-reduce)" if scheme == "none" else SCHEME_NAMES[scheme] + (f" rank {rank}" if scheme == "powersgd" else "")
        rows.append({"scheme": scheme, "name": name, "bytes": payload_bytes(model, scheme, rank, grad_dtype), "comm_s": comm, "kernel_s": kernels, "total_s": comm + kernels})
    base = rows[0]["total_s"]
    for r in rows:
        r["saved_s"] = base - r["total_s"]
        r["ratio"] = rows[0]["bytes"] / r["bytes"]
    return rows
