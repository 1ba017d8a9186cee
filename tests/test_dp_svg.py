"""Lab 05's Act I charts as plain SVG (labs.core.dp_svg), read back from the markup: each MFU point
sits at its estimate's GPU count and MFU, each bar's height is its part's seconds over the step's,
each ratio point at the all-reduce over compute, through the axis mappings written out here by hand
from the charts' fixed layout. The SVG is parsed as XML here, not by the code under test."""

import re
import xml.etree.ElementTree as ET

import pytest
from svg_readback import SVG, log_px, parsed

from labs.core import dp_svg
from labs.core.scenarios.lab05 import dp_wall_curve, dp_wall_estimate

# The MFU chart: 960 x 380 px, margins left 70, right 20, top 60, bottom 62: x 70 .. 940, y 318 .. 60.
MFU_X, MFU_Y = (70.0, 940.0), (318.0, 60.0)
# The step chart: 960 x 440 px, margins left 70, right 20, top 80, bottom 130: the plot x 70 .. 940
# (870 px), y 310 .. 80; the bars on its left 0.45 (x 70 .. 461.5), the ratio on its right 0.45 (x 548.5 .. 940).
STEP_Y, BARS_X, RATIO_X = (310.0, 80.0), (70.0, 461.5), (548.5, 940.0)
STRONG = {"global_batch": 512, "fixed_per_gpu": False, "fabric": "ib-ndr", "algorithm": "ring", "overlap": True, "params_b": 13, "grad_reduce_dtype": "bf16"}


def circles(root: ET.Element, name: str) -> list[tuple[float, float, str]]:
    group = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "line" and g.get("data-name") == name)
    return [(float(c.get("cx")), float(c.get("cy")), c.find(f"{SVG}title").text) for c in group.iter(f"{SVG}circle")]


def test_mfu_points_are_the_engines_gpus_and_mfu():
    curve = dp_wall_curve(STRONG)
    fits = [e for e in curve if e.fits]
    current = dp_wall_estimate(gpus=64, **STRONG)
    assert current.fits
    marked = {"stakeholder's runs": ([64, 256], [0.41, 0.33])}
    root = parsed(dp_svg.mfu_chart({"engine": curve}, marked, current))
    xs = [e.cluster.gpus for e in fits] + [64, 256, current.cluster.gpus, 8]  # 8: the one-node line is in the x range
    ys = [100 * e.mfu for e in fits] + [41, 33, 100 * current.mfu]
    lo, hi, top = min(xs), max(xs), 1.05 * max(ys)  # y from 0 (rangemode tozero), 5% room above the highest
    drawn = circles(root, "engine")
    assert len(drawn) == len(fits)
    for (cx, cy, title), e in zip(drawn, fits):
        x, y = log_px(e.cluster.gpus, lo, hi, *MFU_X), MFU_Y[0] + 100 * e.mfu / top * (MFU_Y[1] - MFU_Y[0])
        print(e.cluster.gpus, f"MFU {100 * e.mfu:.2f}%: drawn at ({cx}, {cy}), expected ({x:.2f}, {y:.2f})")
        assert cx == pytest.approx(x, abs=0.01) and cy == pytest.approx(y, abs=0.01)
        assert title == f"engine: {e.cluster.gpus:,} GPUs, MFU {100 * e.mfu:.1f}%"
    crosses = [(float(g.get("data-x")), float(g.get("data-y"))) for m in root.iter(f"{SVG}g") if m.get("class") == "marked" for g in m.findall(f"{SVG}g")]
    assert crosses == [(64, pytest.approx(41)), (256, pytest.approx(33))]
    you = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "your-setting")
    x, y = log_px(64, lo, hi, *MFU_X), MFU_Y[0] + 100 * current.mfu / top * (MFU_Y[1] - MFU_Y[0])
    tip = re.fullmatch(r"M([\d.]+),([\d.]+)L.*", you.find(f"{SVG}path").get("d"))
    assert float(tip[1]) == pytest.approx(x, abs=0.06) and float(tip[2]) + 9 == pytest.approx(y, abs=0.06)  # the diamond's top vertex, 9 px above
    assert you.find(f"{SVG}title").text == f"your setting: 64 GPUs, MFU {100 * current.mfu:.1f}%"
    ticks = [t.text for t in root.iter(f"{SVG}text") if t.get("y") == "340"]
    assert ticks == ["8", "16", "32", "64", "128", "256", "512"]
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {"GPUs (data-parallel)", "MFU (%)", "one node", "engine", "stakeholder's runs", "your setting"} <= texts



def test_step_bars_are_each_parts_seconds_over_the_step():
    ests = [e for e in dp_wall_curve(STRONG) if e.fits]
    root = parsed(dp_svg.dp_step_chart(ests))
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("data-gpus")]
    assert len(bars) == 4 * len(ests)
    plot_h = STEP_Y[0] - STEP_Y[1]
    group = (BARS_X[1] - BARS_X[0]) / len(ests)
    for i, e in enumerate(ests):
        parts = [e.time.compute, e.dp_exposed_bandwidth_s, e.dp_exposed_latency_s, e.time.optimizer]
        mine = bars[4 * i: 4 * i + 4]
        below = STEP_Y[0]
        for rect, s, name in zip(mine, parts, ("compute", "exposed all-reduce: bandwidth term", "exposed all-reduce: latency term", "optimizer step")):
            h = float(rect.get("height"))
            print(e.cluster.gpus, name, f"{1e3 * s:.1f} ms: {h:.2f} px of {plot_h}, expected {plot_h * s / sum(parts):.2f}")
            assert int(rect.get("data-gpus")) == e.cluster.gpus and float(rect.get("data-seconds")) == s
            assert h == pytest.approx(plot_h * s / sum(parts), abs=0.02)
            assert float(rect.get("y")) + h == pytest.approx(below, abs=0.02)  # stacked: each on the one below
            assert float(rect.get("x")) == pytest.approx(BARS_X[0] + group * (i + 0.1), abs=0.01)
            assert rect.find(f"{SVG}title").text == f"{name}: {1e3 * s:,.0f} ms ({100 * s / sum(parts):.0f}% of the step)"
            below -= h
        assert below == pytest.approx(STEP_Y[1], abs=0.05)  # the four parts fill the step: 100%
    bandwidth = [float(r.get("height")) for r in bars[1::4]]
    assert bandwidth[-1] > 10 * bandwidth[0]  # the exposed bandwidth term's growth with the GPU count, as a share of the step


def test_ratio_points_are_the_all_reduce_over_compute():
    ests = [e for e in dp_wall_curve(STRONG) if e.fits]
    root = parsed(dp_svg.dp_step_chart(ests))
    ratios = [e.dp_comm_cost.total_s / e.time.compute for e in ests]
    gpus = [e.cluster.gpus for e in ests]
    ylo, yhi = min(ratios + [1.0]), max(ratios + [1.0])  # the range holds the line at 1
    drawn = circles(root, "all-reduce / compute")
    assert len(drawn) == len(ests)
    for (cx, cy, title), g, r in zip(drawn, gpus, ratios):
        x, y = log_px(g, min(gpus), max(gpus), *RATIO_X), log_px(r, ylo, yhi, *STEP_Y)
        print(g, f"ratio {r:.4f}: drawn at ({cx}, {cy}), expected ({x:.2f}, {y:.2f})")
        assert cx == pytest.approx(x, abs=0.01) and cy == pytest.approx(y, abs=0.01)
        assert title == f"{g:,} GPUs: all-reduce / compute {r:.3g}"
    assert ratios[-1] > 10 * ratios[0]  # the growth the chart is there to show
    texts = [t.text for t in root.iter(f"{SVG}text")]
    for text in ("Where each step's time goes", "Gradient reduction against compute", "share of the step (%)", "reduction time / compute time",
                 "communication = compute", "compute", "exposed all-reduce: bandwidth term", "exposed all-reduce: latency term", "optimizer step"):
        assert text in texts
    assert texts.count("GPUs") == 2


def test_charts_refuse_nothing_to_draw():
    with pytest.raises(ValueError):
        dp_svg.dp_step_chart([])
