"""Published layouts against the memory model: NVIDIA's H100 BF16 recipes and Meta's Llama 3 405B
layout (tests/data/nvidia_h100_layouts.json), and the Llama 405B layer counted by hand."""

import json

import pytest

from conftest import DATA, report
from labs.core import Model
from labs.core.engine.calibration import deepseek_v3_estimate, layout_estimate
from labs.core.engine.memory import activation_bytes_per_layer, layer_activation_columns
from labs.core.engine.models import RECOMPUTE_MODES

LAYOUTS = json.loads((DATA / "nvidia_h100_layouts.json").read_text())["layouts"]


@pytest.mark.parametrize("row", LAYOUTS, ids=[r["id"] for r in LAYOUTS])
def test_published_layout_fits(row):
    est = layout_estimate(row)
    hbm = est.cluster.gpu.hbm_bytes
    print(f"{row['id']}: {est.memory.total / 1e9:.1f} GB of {hbm / 1e9:.1f} on pipeline rank {est.busiest_rank}, "
          f"margin {est.hbm_margin_bytes / 1e9:+.1f} GB; " + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in est.memory.as_dict().items()))
    report(f"{row['id']} memory / HBM", est.memory.total / hbm, 1.0)
    assert est.fits and est.hbm_margin_bytes > 0


def test_deepseek_v3_layout_fits():
    """DeepSeek-V3 at its published layout on 2,048 H800s (labs.core.engine.calibration.DEEPSEEK_V3_LAYOUT)."""
    est = deepseek_v3_estimate()
    print(f"deepseek_v3_2048_h800: {est.memory.total / 1e9:.1f} GB of {est.cluster.gpu.hbm_bytes / 1e9:.1f}, margin {est.hbm_margin_bytes / 1e9:+.1f} GB; "
          + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in est.memory.as_dict().items()))
    assert est.fits and est.hbm_margin_bytes > 0


def test_llama3_405b_layer_by_hand():
    """One Llama 3 405B layer, TP8 + SP, flash attention, 8,192 tokens, micro-batch 1, bf16:
    per token, sharded over 8 ranks: RMSNorm inputs 2 x 2h, the QKV and FFN-in GEMM inputs
    2 x 2h, Q 2h, K and V 2 x 2 x 1024, attention output 2h, gate and up 2 x 2f, SwiGLU product
    2f, softmax statistics 4 x 128 heads (fp32)."""
    model = Model.get("llama3-405b")
    h, f, kv, heads, s, t = 16384, 53248, 1024, 128, 8192, 8
    by_hand = s * (2 * h * 4 + 2 * h + 2 * 2 * kv + 2 * h + 2 * 2 * f + 2 * f + 4 * heads) / t
    got = float(layer_activation_columns(model, s, 1, t, True, RECOMPUTE_MODES.index("selective")))
    report("Llama 3 405B layer, TP8+SP, bytes", got, by_hand)
    report("  in units of s b h / t", got / (s * h / t), 31.75)
    assert abs(got / by_hand - 1) < 0.02


def test_gpt_layers_stay_korthikanti():
    """GPT layers through the architecture-aware path equal Korthikanti's formulas exactly."""
    model = Model.get("gpt3-175b")
    for sp in (False, True):
        for code, mode in enumerate(RECOMPUTE_MODES):
            got = float(layer_activation_columns(model, 2048, 1, 8, sp, code))
            assert got == activation_bytes_per_layer(2048, 1, 12288, 96, 8, sp, mode)
