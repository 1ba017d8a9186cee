"""Activation bytes one transformer layer keeps per micro-batch (the memory stage's per-layer
term, also the bytes the compute stage's element-wise kernels stream): Korthikanti et al. 2022
(arXiv:2205.05198) for GPT layers, counted tensor by tensor for Llama-style layers, MLA and MoE.
labs.core.engine.memory documents the conventions and re-exports these functions."""

from __future__ import annotations

from labs.core.engine.models import ALL_RECOMPUTE_MODES, RECOMPUTE_MODES
from labs.core.engine.stages.xp import NUMPY

_NONE, _FULL = RECOMPUTE_MODES.index("none"), RECOMPUTE_MODES.index("full")
_OPS, _NORMS_UP = ALL_RECOMPUTE_MODES.index("ops"), ALL_RECOMPUTE_MODES.index("norms_up_proj")


def gpt_layer(model) -> bool:
    """Whether Korthikanti's count applies: an ungated FFN, multi-head attention and heads of
    hidden / heads (GPT's layer); every other layer is counted tensor by tensor."""
    return not model.gated_ffn and model.kv_heads is None and model.head_dim is None


def activation_columns(s, b, h, a, t, sp, recompute_code, xp=NUMPY):
    """activation_bytes_per_layer over numpy columns (recompute_code indexes RECOMPUTE_MODES)."""
    s, b, t = xp.floats(s), xp.floats(b), xp.floats(t)
    sbh = s * b * h
    attention = xp.where(recompute_code == _NONE, 5 * a * s / h, 0.0)
    kept = xp.where(sp, sbh * (34 + attention) / t, sbh * (10 + 24 / t + attention / t))
    return xp.where(recompute_code == _FULL, 2 * sbh / xp.where(sp, t, 1.0), kept)


def layer_activation_columns(model, s, b, t, sp, recompute_code, xp=NUMPY):
    """Bytes one layer of `model` keeps per micro-batch, over numpy columns.

    GPT layers (multi-head attention, 4h GeLU MLP, dropout): Korthikanti's formulas
    (activation_columns). Llama-style layers (GQA, SwiGLU of width f, RMSNorm, no dropout),
    counted tensor by tensor in bf16, per token:
      replicated under TP, sharded by SP: the two RMSNorm inputs and the two GEMM inputs they
        feed (QKV, FFN in), 4 x 2h
      sharded by TP: Q (2h), K and V (2 x 2 kv), the attention output (2h), gate and up (2 x 2f),
        the SwiGLU product that feeds the FFN out (2f); flash attention's softmax statistics
        (fp32, 4 a); without flash attention the s x s softmax output, 2 a s
    = s b (12h + 4 kv + 6f + 4a) / t with SP: 31.8 s b h / t for Llama 3 405B. Where head_dim is
    not hidden / heads, Q and the attention output are q = heads x head_dim wide: 8h + 4q + ....
    Ungated FFNs without dropout (Nemotron-4's squared ReLU, and any grouped-query or head_dim
    layer that is not gated: Korthikanti's count is for GPT's multi-head layers) keep the FFN
    in's output and the activation's, 4f, instead of 6f.
    Selective recompute (or flash attention) drops the s x s term; full recompute keeps the layer
    input only, 2 s b h (/ t with SP)."""
    if gpt_layer(model):
        return activation_columns(s, b, model.hidden, model.heads, t, sp, recompute_code, xp)
    s, b, t = xp.floats(s), xp.floats(b), xp.floats(t)
    # Q and the attention output: q_dim wide (MLA's are still counted as h, as before head_dim)
    h, a, kv, f = model.hidden, model.heads, model.kv_dim, model.ffn
    q = h if model.mla else model.q_dim
    scores = xp.where(recompute_code == _NONE, 2 * a * s, 0.0)
    ffn = (6 if model.gated_ffn else 4) * f
    if model.experts:  # routed tokens keep their dispatched input and the experts' gate, up and product
        k, fe = model.experts_per_token, model.expert_ffn
        moe = k * (2 * h + 6 * fe) + 6 * model.shared_experts * fe + 4 * model.experts
        ffn = (1 - model.moe_share) * 6 * f + model.moe_share * moe
    per_token = 8 * h / xp.where(sp, t, 1.0) + (4 * q + 4 * kv + ffn + 4 * a + scores) / t
    kept = s * b * per_token
    kept = xp.where(recompute_code == _OPS, s * b * _ops_per_token(model, h, q, kv, a, ffn, sp, t, xp), kept)
    kept = xp.where(recompute_code == _NORMS_UP, s * b * _norms_up_proj_per_token(model, sp, t, xp), kept)
    return xp.where(recompute_code == _FULL, 2 * s * b * h / xp.where(sp, t, 1.0), kept)


def _ops_per_token(model, h, q, kv, a, ffn, sp, t, xp):
    """Op-level selective checkpointing (every other matmul's output saved): the layer input, the
    attention output (2q) and its softmax statistics, and half the matmul outputs (Q 2q, K and V
    4 kv, the projection 2h, the FFN's gate and up, two thirds of its stored bytes (ungated: its
    FFN in's output, half), and its output 2h)."""
    matmul_outputs = 2 * q + 4 * kv + 2 * h + ffn * (2 / 3 if model.gated_ffn else 0.5) + 2 * h
    return 2 * h / xp.where(sp, t, 1.0) + (2 * q + 4 * a + 0.5 * matmul_outputs) / t


def _norms_up_proj_per_token(model, sp, t, xp):
    """DeepSeek-V3's recomputation (Sec. 3.2.3): the norms' inputs stay (4h), their outputs are
    re-run; MLA keeps its latents (query, key-value and the shared RoPE key) instead of the
    up-projected Q, K and V; the attention output and softmax statistics stay; gated FFNs keep
    the inputs of SwiGLU (gate and up) and re-run its product; routed tokens keep their
    dispatched copy. Without MLA only the norms and SwiGLU are re-run."""
    h, a = model.hidden, model.heads
    if model.mla:
        attention = 2 * (model.q_lora_rank + model.kv_lora_rank + model.qk_rope_dim) + 2 * a * model.v_head_dim + 4 * a
    else:
        attention = 4 * model.q_dim + 4 * model.kv_dim + 4 * a
    ffn = (4 if model.gated_ffn else 2) * model.ffn  # the activation's inputs: gate and up (ungated: the FFN in's output)
    if model.experts:
        k, fe = model.experts_per_token, model.expert_ffn
        moe = k * (2 * h + 4 * fe) + 4 * model.shared_experts * fe + 4 * model.experts
        ffn = (1 - model.moe_share) * 4 * model.ffn + model.moe_share * moe
    return 4 * h / xp.where(sp, t, 1.0) + (attention + ffn) / t


def fp8_norms_up_proj_savings(model, s, b, t, xp=NUMPY):
    """DeepSeek-V3's FP8 activation caching (Sec. 3.3.3) on top of its recomputation: the Linear
    inputs it keeps are cached in FP8 (1 byte of 2): the MLA latents, the attention output (in
    E5M6, 1.5 bytes), the SwiGLU inputs, and the routed tokens as dispatched (in FP8)."""
    s, b, t = xp.floats(s), xp.floats(b), xp.floats(t)
    h, a = model.hidden, model.heads
    latents = (model.q_lora_rank + model.kv_lora_rank + model.qk_rope_dim) if model.mla else 0.0
    out = 0.25 * 2 * (a * model.v_head_dim if model.mla else model.q_dim)
    ffn = (1 if not model.gated_ffn and not gpt_layer(model) else 2) * model.ffn  # ungated: the FFN in's output (GPT's as before)
    if model.experts:
        k, fe = model.experts_per_token, model.expert_ffn
        ffn = (1 - model.moe_share) * 2 * model.ffn + model.moe_share * (k * (h + 2 * fe) + 2 * model.shared_experts * fe)
    return s * b * (latents + out + ffn) / t


def fp8_activation_savings(model, s, b, t, sp, xp=NUMPY):
    """Bytes per layer and micro-batch that FP8 GEMMs save: Transformer Engine keeps the FP8
    copy (1 byte) of a GEMM input that no other op needs in BF16: the QKV and FFN-in inputs (the
    norm outputs) and the FFN-out input (GeLU output 4h for GPT, the SwiGLU product f for
    Llama). The attention output stays: flash attention keeps it in BF16 for its backward."""
    s, b, t = xp.floats(s), xp.floats(b), xp.floats(t)
    return s * b * (2 * model.hidden / xp.where(sp, t, 1.0) + model.ffn / t)
