"""Lab 06's two charts a move redraws, drawn as plain SVG (labs.core.svg_charts): every bar, point
and line shows the engine's number, placed on a log axis where a decade is a fixed number of
pixels, as the Plotly charts (charts.memory_wall, charts.zero_sweep) drew them."""

import math
import re

import pytest
from svg_readback import SVG, parsed

from labs.core import svg_charts
from labs.core.charts import MEMORY_TERMS
from labs.core.engine.hardware import GB, GPUS
from labs.core.engine.models import MODELS
from labs.core.scenarios.lab06 import (
    DP_SIZES,
    Activations,
    dp_memory,
    memory_curves,
    memory_wall,
    wall_hbm,
)

ACT = Activations(2, 8192, "full", True)


def per_decade(points: list[tuple[float, float]]) -> list[float]:
    """Pixels per decade from the smallest (value, pixel) pair to each other more than 2x above
    it: one number on a log axis (pixels are written to 0.1 px)."""
    (v1, p1), *rest = sorted(points)
    return [(p1 - p2) / math.log10(v2 / v1) for v2, p2 in rest if v2 / v1 > 2]


def test_wall_bars_are_the_engine_terms_on_a_log_axis():
    wall = {MODELS[k].name: m for k, m in memory_wall(ACT).items()}
    root = parsed(svg_charts.memory_wall(wall, wall_hbm("a100-sxm-80gb")), words=("information",))
    bars = [(r, r.find(f"{SVG}title").text) for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert len(bars) == len(wall) * len(MEMORY_TERMS)  # every term of every model is above zero here
    seen = []
    for rect, title in bars:
        name, label, gb = re.fullmatch(r"(.+), (.+): ([\d,.]+) GB", title).groups()
        term = next(t for t, text in MEMORY_TERMS.items() if text == label)
        expected = wall[name].as_dict()[term] / GB
        print(title, f"engine {expected:,.3f} GB")
        assert float(gb.replace(",", "")) == pytest.approx(expected, abs=0.05)
        seen.append((expected, float(rect.get("y"))))
    decade = per_decade(seen)
    print("px per decade", min(decade), max(decade))
    assert max(decade) - min(decade) < 0.35  # 0.1 px over the smallest span, 2x: 0.33  # one scale: Plotly's log axis
    # Llama 2 70B's total (its bf16 weights 2 bytes per parameter, gradients 2, fp32 Adam 12: 16 bytes per parameter, plus activations)
    params = MODELS["llama2-70b"].params
    assert 16 * params / GB < wall[MODELS["llama2-70b"].name].total / GB
    assert f"total {wall[MODELS['llama2-70b'].name].total / GB:,.0f} GB" in "".join(root.itertext())


def test_wall_hbm_lines_sit_at_each_gpus_capacity():
    wall = {MODELS[k].name: m for k, m in memory_wall(ACT).items()}
    hbm = wall_hbm("a100-sxm-80gb")
    root = parsed(svg_charts.memory_wall(wall, hbm), words=("information",))
    red = [line for line in root.iter(f"{SVG}line") if line.get("stroke") == svg_charts.COLORS["red"]]
    assert len(red) == len(hbm)
    texts = "".join(root.itertext())
    for label, nbytes, confirmed in hbm:
        assert f"{label} {nbytes / GB:.1f} GB" in texts
    bars = []
    for rect in root.iter(f"{SVG}rect"):
        if rect.find(f"{SVG}title") is not None:
            name, label = re.fullmatch(r"(.+), (.+): [\d,.]+ GB", rect.find(f"{SVG}title").text).groups()
            bars.append((wall[name].as_dict()[next(t for t, text in MEMORY_TERMS.items() if text == label)] / GB, float(rect.get("y"))))
    lines = [(b / GB, float(line.get("y1"))) for (_, b, _), line in zip(sorted(hbm, key=lambda h: h[1]), red)]
    decade = per_decade(bars + lines)
    assert max(decade) - min(decade) < 0.2  # the lines on the bars' scale


def test_sweep_points_are_the_engine_memory_and_plain_dp_is_flat():
    gpu = GPUS["h100-sxm"]
    curves = memory_curves("llama2-70b", ACT)
    current = (32, dp_memory("llama2-70b", 32, 3, ACT).total)
    root = parsed(svg_charts.zero_sweep(DP_SIZES, curves, [(gpu.name, gpu.hbm_bytes, gpu.confirmed)], current), words=("information",))
    points = {}
    for circle in root.iter(f"{SVG}circle"):
        title = circle.find(f"{SVG}title")
        if title is None:
            continue
        m = re.fullmatch(r"(ZeRO-\d|activations \(not sharded\)), DP (\d+): ([\d,.]+) GB", title.text)
        points[m.group(1), int(m.group(2))] = (float(m.group(3).replace(",", "")), float(circle.get("cy")))
    for stage in range(4):
        for n, mem in zip(DP_SIZES, curves[stage]):
            assert points[f"ZeRO-{stage}", n][0] == pytest.approx(mem.total / GB, abs=0.05)
    # ZeRO-0 is plain DP: every GPU keeps everything, about the same height at any N (the engine's buffers move it by < 0.1%)
    flat = [points["ZeRO-0", n][1] for n in DP_SIZES]
    print("ZeRO-0 px", min(flat), max(flat), [m.total / GB for m in curves[0]][::5])
    assert max(flat) - min(flat) < 0.5
    # all four stages start from about the same point: one GPU shards nothing
    one = [points[f"ZeRO-{s}", 1][1] for s in range(4)]
    print("DP 1 px", one, [curves[s][0].total / GB for s in range(4)])
    assert max(one) - min(one) < 0.5
    diamond = root.find(f".//{SVG}g[@class='your-setting']")
    assert "your setting, DP 32: " in diamond.find(f"{SVG}title").text
    cx, cy = map(float, re.match(r"M([\d.]+),([\d.]+)", diamond.find(f"{SVG}path").get("d")).groups())
    zero3 = [c for c in root.iter(f"{SVG}circle") if c.find(f"{SVG}title") is not None and c.find(f"{SVG}title").text.startswith("ZeRO-3, DP 32:")][0]
    assert cx == pytest.approx(float(zero3.get("cx")), abs=0.1) and cy + 8 == pytest.approx(float(zero3.get("cy")), abs=0.1)  # the diamond's top is 8 px above its centre
    engine = {**{(f"ZeRO-{s}", n): m.total / GB for s in range(4) for n, m in zip(DP_SIZES, curves[s])},
              **{("activations (not sharded)", n): m.activations / GB for n, m in zip(DP_SIZES, curves[0])}}
    decade = per_decade([(engine[key], cy) for key, (_, cy) in points.items()])
    print("px per decade", min(decade), max(decade))
    assert max(decade) - min(decade) < 0.35  # 0.1 px over the smallest span, 2x: 0.33


def test_a_log_axis_refuses_non_positive_bounds():
    with pytest.raises(ValueError, match="positive"):
        svg_charts.LogAxis(0.0, 10.0, 0, 100)
