"""Engine v4 model shapes (issue 36 item 5): head_dim apart from hidden / heads, sliding-window and
chunked attention layers, attention sinks, and the 2025 catalog against its published counts."""

import dataclasses
import math

import numpy as np
import pytest

from conftest import report
from labs.core import Cluster, Model, Plan, estimate, sweep
from labs.core.engine.models import ACTIVE_WITHOUT_EMBEDDING, PUBLISHED_PARAMS, RECOMPUTE_MODES

NEW_MODELS = tuple(PUBLISHED_PARAMS)
_NONE = RECOMPUTE_MODES.index("none")
QWEN3 = Model.get("qwen3-30b-a3b")
GPT_OSS = Model.get("gpt-oss-120b")


def _attention_flops(model, flash):
    """A sequence's model FLOPs less every GEMM and the logits: the attention core, 3x forward."""
    s = model.seq_len
    model_flops = float(model.flops_per_sequence(_NONE, flash)[0])
    return model_flops - 3 * (model.layers * 2 * s * model.layer_matmul_params + model.logits_forward_flops())


def test_qwen3_head_dim_by_hand():
    """Qwen3-30B-A3B: hidden 2,048, 32 query heads of 128 (4,096 wide, twice hidden), 4 K/V heads
    of 128. Q 2,048 x 4,096, K and V 2,048 x 512 each, output 4,096 x 2,048 = 18,874,368 weights a
    layer (9,437,184 if head_dim were hidden / heads = 64); the attention core at 4K tokens does
    4 s^2 (32 x 128) FLOPs forward over the whole square, half of it with flash attention."""
    assert (QWEN3.q_dim, QWEN3.kv_dim, QWEN3.head_size) == (4096, 512, 128)
    qkv = 2048 * 4096 + 2 * 2048 * 4 * 128 + 4096 * 2048
    assert QWEN3.attention_params == qkv == 18_874_368
    s = 4096
    square = 4 * s * s * 32 * 128
    assert _attention_flops(QWEN3, False) == pytest.approx(3 * 48 * square, rel=1e-12)
    assert _attention_flops(QWEN3, True) == pytest.approx(3 * 48 * square / 2, rel=1e-12)


def test_head_dim_changes_exactly_the_attention_terms():
    """The same model with head_dim 64 (= hidden / heads) against 128: the experts, router, norms,
    embedding and logits stay; parameters move by the attention projections' difference, and
    model FLOPs by 2 s x that difference plus the attention core's 4 s^2 x 32 x 64, each 3x."""
    narrow = dataclasses.replace(QWEN3, head_dim=None)  # hidden // heads = 64
    assert narrow.head_size == 64 and narrow.attention_params == 2 * 2048 * 2048 + 2 * 2048 * 4 * 64
    d_attention = QWEN3.attention_params - narrow.attention_params
    assert QWEN3.layer_params - narrow.layer_params == d_attention
    assert QWEN3.params - narrow.params == 48 * d_attention
    assert QWEN3.layer_matmul_params - narrow.layer_matmul_params == d_attention
    assert (QWEN3.embedding_params, QWEN3.expert_params, QWEN3.logits_forward_flops()) == (
        narrow.embedding_params, narrow.expert_params, narrow.logits_forward_flops())
    s = 4096
    for flash, core in ((False, 1.0), (True, 0.5)):
        moved = float(QWEN3.flops_per_sequence(_NONE, flash)[0] - narrow.flops_per_sequence(_NONE, flash)[0])
        assert moved == pytest.approx(3 * 48 * (2 * s * d_attention + core * 4 * s * s * 32 * 64), rel=1e-12)


def test_head_dim_equal_to_hidden_over_heads_changes_nothing():
    """head_dim written out as hidden / heads is the default: Llama 3 8B's estimate is identical."""
    cluster = Cluster.get("dgx-h100", nodes=1)
    plan = Plan(tp=2, pp=1, dp=4, micro_batch=1, global_batch=32, zero_stage=1, recompute="selective", sequence_parallel=True)
    base = estimate(Model.get("llama3-8b"), cluster, plan)
    same = estimate(Model.get("llama3-8b", head_dim=128), cluster, plan)
    assert (same.step_time_s, same.memory.total, same.model_flops_per_step) == (base.step_time_s, base.memory.total, base.model_flops_per_step)


@pytest.mark.parametrize("seq_len", [4096, 131072])
def test_gpt_oss_sliding_window_flops_by_hand(seq_len):
    """GPT-OSS-120B: 36 layers alternating a 128-token sliding window (first) and full attention,
    64 heads of 64. With flash attention a full layer scores s^2 / 2 query-key pairs, a window
    layer s x 128 - 128^2 / 2 (query t sees min(t, 128) keys); each pair is 4 x 64 x 64 FLOPs
    forward (QK^T and AV), 3x for forward and backward. At 4K the windows do 6.2% of a full
    layer's work, at 128K 0.2%: attention falls to 53% and 50% of all-full."""
    model = Model.get("gpt-oss-120b", seq_len=seq_len)
    s, w, d = seq_len, 128, 64 * 64
    assert (model.layers_of_kind("sliding"), model.layers_of_kind("full")) == (18, 18)
    pairs = 18 * (s * s / 2) + 18 * (s * w - w * w / 2)
    assert _attention_flops(model, True) == pytest.approx(3 * 4 * d * pairs, rel=1e-12)
    all_full = dataclasses.replace(model, attention_pattern=("full",), window=0)
    share = _attention_flops(model, True) / _attention_flops(all_full, True)
    report(f"GPT-OSS attention FLOPs at {s:,} tokens over all-full", share, (1 + (s * w - w * w / 2) / (s * s / 2)) / 2)
    # without flash attention the kernels compute the whole square, windows too
    assert _attention_flops(model, False) == pytest.approx(_attention_flops(all_full, False), rel=1e-12)


def test_window_layers_cost_their_kernel_rate():
    """A 128-token window runs below the full layers' kernel rate (B200 cuDNN causal rows, the
    512-mean-key point): its attention time share exceeds its FLOP share, and the estimate's
    layer is faster than all-full attention but not by the FLOP ratio."""
    assert GPT_OSS.attention_time_share > GPT_OSS.attention_share
    full_rate, window_rate = 977.0, 627.0  # attn_cudnn_b200_hd64_causal_s4096 and _s1024
    window = (4096 * 128 - 128 * 128 / 2) / (4096 * 4096 / 2)
    assert GPT_OSS.attention_time_share == pytest.approx((1 + window * full_rate / window_rate) / 2, rel=1e-12)
    cluster = Cluster.get("dgx-h100", nodes=1)
    plan = Plan(tp=1, pp=1, dp=8, ep=8, micro_batch=1, global_batch=64, zero_stage=1, recompute="selective")
    sliding = estimate(GPT_OSS, cluster, plan)
    full = estimate(dataclasses.replace(GPT_OSS, attention_pattern=("full",), window=0), cluster, plan)
    assert sliding.time.compute < full.time.compute
    assert sliding.memory.activations == full.memory.activations  # flash attention keeps no window-sized tensor


def test_chunked_attention_pairs():
    """Llama 4's chunked layers (8,192-token chunks, every 4th layer full): at 8K one chunk is
    the sequence, as a full layer; at 32K four chunks score 4 x 8,192^2 / 2 pairs against
    32,768^2 / 2, a quarter."""
    scout = Model.get("llama4-scout")
    assert scout.attention_share == 1.0 and scout.attention_time_share == pytest.approx(1.0, rel=1e-12)
    long = Model.get("llama4-scout", seq_len=32768)
    assert long.causal_pairs("chunked") == 4 * 8192**2 / 2
    assert long.attention_share == pytest.approx((36 * 0.25 + 12) / 48, rel=1e-12)


def test_attention_sinks_are_one_parameter_per_head():
    """GPT-OSS's sinks: a learned logit per head a layer, 64 x 36 parameters; no FLOPs counted."""
    without = dataclasses.replace(GPT_OSS, attention_sinks=False)
    assert GPT_OSS.params - without.params == 64 * 36
    assert float(GPT_OSS.flops_per_sequence(_NONE, True)[0]) == float(without.flops_per_sequence(_NONE, True)[0])


@pytest.mark.parametrize("key", NEW_MODELS)
def test_parameter_counts_against_the_model_cards(key):
    """Total and activated parameters against each model card (PUBLISHED_PARAMS), the error
    reported. Llama 4's totals include the vision encoder the engine leaves out; Grok-1's 25%
    active is the blog's round figure."""
    model = Model.get(key)
    total, active, _ = PUBLISHED_PARAMS[key]
    ours = model.active_params - (model.vocab * model.hidden if key in ACTIVE_WITHOUT_EMBEDDING else 0)
    assert abs(report(f"{model.name} total parameters", model.params, total)) < 0.015
    assert abs(report(f"{model.name} active parameters", ours, active)) < (0.07 if key == "grok-1" else 0.02)


# A plan that fits on DGX H100 nodes for each new model (Megatron-Core 2024's stack), ZeRO-1.
_SEL = dict(zero_stage=1, recompute="selective")
FITTING = {
    "qwen3-30b-a3b": (2, dict(tp=1, pp=1, dp=16, ep=8, global_batch=128, **_SEL)),
    "qwen3-235b-a22b": (32, dict(tp=2, pp=16, dp=8, ep=8, global_batch=512, sequence_parallel=True, **_SEL)),
    "gpt-oss-120b": (8, dict(tp=1, pp=2, dp=32, ep=16, global_batch=512, zero_stage=1, recompute="none", schedule="interleaved", virtual_stages=6)),
    "llama4-scout": (8, dict(tp=2, pp=4, dp=4, cp=2, ep=8, global_batch=256, sequence_parallel=True, **_SEL)),
    "llama4-maverick": (32, dict(tp=2, pp=4, dp=16, cp=2, ep=32, global_batch=512, sequence_parallel=True, **_SEL)),
    "nemotron4-340b": (32, dict(tp=8, pp=8, dp=4, global_batch=256, sequence_parallel=True, **_SEL)),
    "mixtral-8x7b": (8, dict(tp=1, pp=1, dp=8, cp=8, ep=8, global_batch=64, **_SEL)),
    "mixtral-8x22b": (32, dict(tp=4, pp=8, dp=1, cp=8, ep=8, global_batch=32, sequence_parallel=True, **_SEL)),
    "grok-1": (32, dict(tp=1, pp=4, dp=32, cp=2, ep=8, global_batch=256, zero_stage=1, recompute="full", schedule="interleaved", virtual_stages=8)),
}


@pytest.mark.parametrize("key", NEW_MODELS)
def test_new_models_estimate_and_sweep(key):
    """Each new model: estimate() on a plan that fits DGX H100 nodes, and sweep() over them,
    with finite numbers throughout."""
    model = Model.get(key)
    nodes, layout = FITTING[key]
    cluster = Cluster.get("dgx-h100", nodes=nodes)
    est = estimate(model, cluster, Plan(micro_batch=1, **layout))
    assert est.fits, est.warnings
    numbers = (est.step_time_s, est.mfu, est.hfu, est.memory.total, est.model_flops_per_step, est.bubble_fraction)
    assert all(math.isfinite(x) for x in numbers) and 0 < est.mfu < 1
    print(f"{model.name}: {est.step_time_s:.2f} s a step, MFU {est.mfu:.1%}, {est.memory.total / 1e9:.1f} GB")
    df = sweep(model, cluster, global_batch=layout["global_batch"], era="megatron-core-2024", tp=[layout["tp"]], pp=[layout["pp"]])
    assert len(df) and df["fits"].any()
    numeric = df.select_dtypes(include=[np.number])
    assert np.isfinite(numeric.to_numpy(dtype=float)).all()


@pytest.mark.parametrize("field, value", [
    ("head_dim", 0), ("head_dim", -64), ("head_dim", 64.5), ("head_dim", True), ("head_dim", "64"), ("head_dim", 1 << 20),
    ("window", 8192), ("window", -1), ("window", 0), ("attention_chunk", 128), ("attention_pattern", ("sliding", "local")),
    ("attention_pattern", ()), ("attention_pattern", "full"), ("attention_sinks", 1), ("mtp_depth", -1),
])
def test_bad_shapes_refused_by_name(field, value):
    """A head_dim that is not a positive whole number, a window larger than the sequence (GPT-OSS
    at 4,096 tokens) or none for its sliding layers, a chunk with no chunked layer, an unknown
    attention kind, a non-boolean sinks flag: refused at construction, naming the field."""
    with pytest.raises(ValueError, match=field):
        Model.get("gpt-oss-120b", **{field: value})


def test_head_dim_refused_with_mla_and_hidden_heads_still_checked():
    with pytest.raises(ValueError, match="head_dim"):
        Model.get("deepseek-v3", head_dim=128)
    with pytest.raises(ValueError, match="heads must divide hidden"):
        Model("odd", 2, 100, 3, 128, 1000)
    assert Model("odd", 2, 100, 3, 128, 1000, head_dim=32).q_dim == 96  # head_dim given: hidden need not divide


def test_mtp_priced_in_flops_time_and_memory():
    """DeepSeek-V3's multi-token prediction (mtp_depth=1, off by default): one more block (the
    average layer), its 2h -> h projection and two norms in the parameters; 3 x (4 s h^2 + a
    layer's forward + one more output head's 2 s h V) more model FLOPs a sequence; the last
    pipeline stage holds the block and computes the second head, the first stage is unchanged;
    estimate() and sweep() agree on the plan."""
    base = Model.get("deepseek-v3")
    mtp = Model.get("deepseek-v3", mtp_depth=1)
    assert base.mtp_depth == 0
    h, s, V = 7168, 4096, 129280
    assert mtp.params - base.params == pytest.approx(base.layer_params + 2 * h * h + 2 * h, rel=1e-9)
    report("DeepSeek-V3 MTP module parameters (B)", (mtp.params - base.params) / 1e9, 14 - 2 * V * h / 1e9)  # 14B less the stored copies of the shared embedding and head
    layer_forward = 2 * s * base.layer_matmul_params + 0.5 * 4 * s * s * base.score_dim
    moved = float(mtp.flops_per_sequence(_NONE, True)[0] - base.flops_per_sequence(_NONE, True)[0])
    assert moved == pytest.approx(3 * (4 * s * h * h + layer_forward + 2 * s * h * V), rel=1e-12)
    cluster = Cluster.get("h800-ib", nodes=256)
    layout = dict(tp=1, pp=16, dp=128, ep=64, micro_batch=1, global_batch=15360, zero_stage=1, recompute="none", precision="fp8")
    without, with_mtp = (estimate(m, cluster, Plan(**layout)) for m in (base, mtp))
    assert with_mtp.stage_memory_bytes[2] > without.stage_memory_bytes[2]
    assert with_mtp.stage_memory_bytes[0] == without.stage_memory_bytes[0]
    assert with_mtp.step_time_s > without.step_time_s and with_mtp.model_flops_per_step > without.model_flops_per_step
    row = sweep(mtp, cluster, global_batch=15360, **{k: [v] for k, v in layout.items() if k not in ("global_batch", "precision")}, precision="fp8")
    row = row[(row.sequence_parallel == False) & (row.schedule == "1f1b")]  # noqa: E712
    assert row.step_time_s.iloc[0] == pytest.approx(with_mtp.step_time_s, rel=1e-9)
