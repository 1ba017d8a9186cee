"""The HTML bars (ui.memory_bar, ui.time_bar): each part's width is its share of the drawn scale,
the HBM line sits at the GPU's capacity, and the legend prints the engine's numbers."""

import re

import pytest

from labs.core import ui
from labs.core.scenarios.lab06 import FIT_ACTIVATIONS, FIT_GPU, FIT_MODEL, dp_estimate

GB = 1e9


def widths(text: str) -> dict[str, float]:
    return {name: float(w) for w, name in re.findall(r'style="width:([\d.]+)%;background:[^"]+" title="([^:]+):', text)}


@pytest.mark.parametrize("dp", [8, 16, 64])
def test_memory_bar_parts_and_hbm_line_are_the_estimates(dp):
    est = dp_estimate(FIT_MODEL, FIT_GPU, dp, 3, FIT_ACTIVATIONS)
    text = ui.memory_bar(est).text
    parts = {k: v / GB for k, v in est.memory.as_dict().items() if v > 0}
    hbm = est.cluster.gpu.hbm_bytes / GB
    scale = max(est.memory.total / GB, hbm) * 1.08
    drawn = widths(text)
    assert drawn.keys() == parts.keys()
    for name, value in parts.items():
        assert drawn[name] == pytest.approx(100 * value / scale, abs=1e-3), name
        assert f"{name} {value:,.1f} GB" in text if value >= 1 else f"{name} {value:.2g} GB" in text
    line = float(re.search(r'class="limit" style="left:([\d.]+)%"', text).group(1))
    assert line == pytest.approx(100 * hbm / scale, abs=1e-3)
    assert f"{hbm:.1f} GB HBM" in text
    assert f"total {est.memory.total / GB:,.1f} GB" in text
    print(f"DP {dp}: {est.memory.total / GB:.1f} GB of {hbm:.1f}, bar {sum(drawn.values()):.1f}% of the track, HBM line at {line:.1f}%")


def test_out_of_memory_bar_runs_past_the_hbm_line():
    est = dp_estimate(FIT_MODEL, FIT_GPU, 8, 3, FIT_ACTIVATIONS)  # 152 GB on an 85.5 GB H100
    assert not est.fits
    text = ui.memory_bar(est).text
    line = float(re.search(r'class="limit" style="left:([\d.]+)%"', text).group(1))
    assert line == pytest.approx(100 * 85.5 / (est.memory.total / GB * 1.08), rel=1e-3)
    assert line < sum(widths(text).values())


def test_offloaded_optimizer_keeps_its_legend_entry_at_zero():
    est = dp_estimate(FIT_MODEL, FIT_GPU, 16, 2, FIT_ACTIVATIONS, offload=True)
    assert est.memory.optimizer == 0
    text = ui.memory_bar(est).text
    assert "optimizer 0 GB" in text and "optimizer" not in widths(text)


def test_names_and_labels_are_escaped():
    text = ui.stacked_bar({"<script>x</script>": (1.0, "#000000")}, "GB", (2.0, '<img src=x onerror="y">')).text
    assert "<script>" not in text and "<img" not in text
    assert "&lt;script&gt;x&lt;/script&gt;" in text and "&lt;img src=x onerror=&quot;y&quot;&gt;" in text


@pytest.mark.parametrize("value, shown", [(152.04, "152.0"), (0.43, "0.43"), (0.0041, "0.0041"), (3e-5, "< 0.001"), (0.0, "0")])
def test_amounts_keep_small_terms_readable(value, shown):
    assert ui._amount(value) == shown


def test_time_bar_adds_up_to_the_step_and_skips_empty_terms():
    est = dp_estimate(FIT_MODEL, FIT_GPU, 16, 3, FIT_ACTIVATIONS)
    text = ui.time_bar(est).text
    assert f"total {est.step_time_s:,.1f} s" in text
    shown = widths(text)
    assert "offload (PCIe + CPU Adam)" not in shown and est.time.offload == 0
    assert sum(shown.values()) == pytest.approx(100 / 1.08, abs=1e-2)  # no limit line: the bar fills its scale
    small = {k: v for k, v in est.time.as_dict().items() if 0 < v < 0.1}
    assert small, "the scenario has a term under 0.1 s"
    for key, value in small.items():
        assert f"{ui.TIME_TERMS[key]} {value:.2g} s" in text
