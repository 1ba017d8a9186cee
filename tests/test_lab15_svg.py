"""Lab 15's router and drops charts as plain SVG (labs.core.routing_svg), read back from the
markup: each line point sits at the engine's value (run.busiest_gpu_over_mean, dropped_share)
through the axis mapping written out here by hand from the charts' fixed layout, the heatmap's
PNG (decoded by hand, test_lab07_raster_image.decode_png) holds each 10-step window's tokens per
expert as palette indices on the Viridis scale, the capacity line stands at the capacity, the
legends name the reference router and the student's. The SVG is parsed as XML here, not by the
code under test."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from plotly.colors import sample_colorscale
from test_lab07_raster_image import decode_png

from labs.core import routing_svg
from labs.core.scenarios import lab15
from labs.core.style import COLORS

NS = "{http://www.w3.org/2000/svg}"
# The router chart's plot, by hand: 960 x 640 px, margins left 70, right 110, top 70, bottom 110;
# the heatmap on the top 0.6 of the 460 px plot (y 70 .. 346), the lines on the bottom 0.32
# (y 382.8 .. 530); the step axis 5 .. 505 (the 50 ten-step windows' edges) onto x 70 .. 850.
ROUTER_X = (5.0, 505.0, 70.0, 850.0)
HEAT_Y, LINES_Y = (70.0, 346.0), (382.8, 530.0)
# The drops chart: 960 x 340 px, margins left 60, right 20, top 70, bottom 90: x 60 .. 940, y 70 .. 250.
DROPS_X, DROPS_Y = (60.0, 940.0), (70.0, 250.0)


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg.replace('xmlns="http://www.w3.org/2000/svg"', ""))


def runs(**setting):
    inputs = {k: lab15.DEFAULT_INPUTS[k] for k in ("scheme", "aux_coeff", "gamma", "max_nodes", "skew", "drift")} | setting
    run = lab15.router_run(**inputs)
    reference = lab15.router_run("none", max_nodes=lab15.NODES, skew=inputs["skew"], drift=inputs["drift"])
    return run, reference


def padded(values) -> tuple[float, float]:
    """The range the charts give a line axis: the data's, 5% of its span more at each end."""
    lo, hi = min(values), max(values)
    return lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)


def to_px(v, lo, hi, p0, p1):
    return p0 + (v - lo) / (hi - lo) * (p1 - p0)


def drawn_lines(root: ET.Element) -> dict[str, list[tuple[float, float, str]]]:
    """Each line's points (x px, y px, hover text) by its name."""
    return {g.get("data-name"): [(float(c.get("cx")), float(c.get("cy")), c.find("title").text) for c in g.iter("circle")]
            for g in root.iter("g") if g.get("class") == "line"}


def legend_labels(root: ET.Element) -> list[str]:
    return [g.find("text").text for g in root.iter("g") if g.get("class") == "legend"]


def check_heatmap(svg: str, run) -> None:
    """The router chart's image spans the heatmap's plot; its rows, bottom up, are experts 0 ..,
    its columns the 10-step windows, each cell the window's tokens above the fewest (one palette
    entry per whole number when the range has at most 256, else 256 levels), the palette Viridis
    sampled at those levels, the colour bar the same scale from the fewest tokens to the most."""
    root = parse(svg)
    (image,) = [e for e in root.iter("image") if e.get("class") == "heatmap"]
    z = run.window_loads(10).T
    pixels, palette = decode_png(image.get("href"))
    low, high = int(z.min()), int(z.max())
    levels = min(high - low + 1, 256)
    expected = z - low if levels == high - low + 1 else np.round((z - low) * (levels - 1) / (high - low))
    assert pixels.shape == z.shape and np.array_equal(pixels[::-1], expected)
    scale = [tuple(round(float(v)) for v in c[4:-1].split(",")) for c in sample_colorscale("Viridis", [i / (levels - 1) for i in range(levels)])]
    assert [tuple(bytes.fromhex(c[1:])) for c in palette] == scale
    box = [float(image.get(k)) for k in ("x", "y", "width", "height")]
    assert box == pytest.approx([ROUTER_X[2], HEAT_Y[0], ROUTER_X[3] - ROUTER_X[2], HEAT_Y[1] - HEAT_Y[0]], abs=0.01)
    (bar,) = [g for g in root.iter("g") if g.get("class") == "colorbar"]
    assert (int(bar.get("data-low")), int(bar.get("data-high"))) == (low, high)
    labels = [t.text for t in bar.iter("text")]
    assert labels[0] == "tokens" and str(low) in labels and str(high) in labels
    stops = [(float(s.get("offset")), s.get("stop-color").lower()) for s in root.iter("stop")]
    assert (stops[0], stops[-1]) == ((0.0, "#440154"), (1.0, "#fde725"))  # Viridis's ends, low at the bar's bottom
    print(f"{run.setting.scheme} skew {run.setting.skew}: tokens {low}-{high}, {levels} palette levels, image {pixels.shape}")


@pytest.mark.parametrize("setting", [{}, {"scheme": "none", "max_nodes": lab15.NODES, "skew": max(lab15.SKEWS), "drift": 0.0}])
def test_router_chart_heatmap_is_the_windows_tokens(setting):
    """At the default and at no balancing, the largest skew (more than 256 whole numbers of tokens:
    256 levels)."""
    run, reference = runs(**setting)
    check_heatmap(routing_svg.router_chart(run, reference, lab15.SCHEME_LABELS[run.setting.scheme]), run)


def check_router_lines(svg: str, run, reference, label: str) -> None:
    root = parse(svg)
    lines = drawn_lines(root)
    assert list(lines) == [lab15.BASELINE_LABEL, label] and legend_labels(root) == [lab15.BASELINE_LABEL, label]
    values = {name: r.busiest_gpu_over_mean(lab15.WINDOW) for name, r in ((lab15.BASELINE_LABEL, reference), (label, run))}
    lo, hi = padded(np.concatenate(list(values.values())))
    worst = 0.0
    for name, points in lines.items():
        assert len(points) == len(values[name]) == lab15.STEPS // lab15.WINDOW
        for i, ((x, y, hover), v) in enumerate(zip(points, values[name])):
            step = lab15.WINDOW * (i + 1)
            want = (to_px(step, *ROUTER_X), to_px(v, lo, hi, LINES_Y[1], LINES_Y[0]))
            worst = max(worst, abs(x - want[0]), abs(y - want[1]))
            assert hover == f"{name}, step {step}: {v:.3f}x"
    assert worst <= 0.01
    print(f"{label}: worst point off by {worst:.4f} px")


def test_router_chart_lines_are_the_busiest_gpu_over_mean():
    run, reference = runs()
    label = lab15.SCHEME_LABELS[run.setting.scheme]
    svg = routing_svg.router_chart(run, reference, label)
    check_router_lines(svg, run, reference, label)
    root = parse(svg)
    texts = [t.text for t in root.iter("text")]
    assert f"{label}: tokens per expert, and the busiest GPU" in texts
    assert {"expert", "busiest GPU / mean", "step (heatmap: 10-step windows; line: 50-step windows)"} <= set(texts)
    colors = {g.get("data-name"): g.find("polyline").get("stroke") for g in root.iter("g") if g.get("class") == "line"}
    assert colors == {lab15.BASELINE_LABEL: COLORS["red"], label: COLORS["blue"]}
    assert root.get("viewBox") == "0 0 960 640" and "width:100%" in root.get("style")


@pytest.mark.parametrize("capacity", [min(lab15.CAPACITIES), 1.25, max(lab15.CAPACITIES)])
def test_drops_chart_points_and_capacity_line(capacity):
    run, reference = runs()
    label = lab15.SCHEME_LABELS[run.setting.scheme]
    root = parse(routing_svg.drops_chart(run, reference, label, capacity))
    values = {name: [100 * r.dropped_share(c, lab15.WINDOW) for c in lab15.CAPACITIES] for name, r in ((lab15.BASELINE_LABEL, reference), (label, run))}
    x_lo, x_hi = padded(lab15.CAPACITIES)
    y_lo, y_hi = padded([v for vs in values.values() for v in vs])
    lines = drawn_lines(root)
    assert list(lines) == [lab15.BASELINE_LABEL, label] and legend_labels(root) == [lab15.BASELINE_LABEL, label]
    worst = 0.0
    for name, points in lines.items():
        for (x, y, hover), c, v in zip(points, lab15.CAPACITIES, values[name], strict=True):
            worst = max(worst, abs(x - to_px(c, x_lo, x_hi, *DROPS_X)), abs(y - to_px(v, y_lo, y_hi, DROPS_Y[1], DROPS_Y[0])))
            assert hover == f"{name}, c = {c:g}: {v:.2f}% dropped"
    assert worst <= 0.01
    (line,) = [e for e in root.iter("line") if e.get("class") == "capacity"]
    x = to_px(capacity, x_lo, x_hi, *DROPS_X)
    assert float(line.get("x1")) == pytest.approx(x, abs=0.01) and float(line.get("x2")) == pytest.approx(x, abs=0.01)
    assert (float(line.get("y1")), float(line.get("y2"))) == DROPS_Y and line.get("stroke") == COLORS["green"]
    texts = [t.text for t in root.iter("text")]
    assert f"dropped tokens by capacity factor (yours: {capacity:g})" in texts and {"capacity factor", "% of token copies dropped"} <= set(texts)
    assert root.get("viewBox") == "0 0 960 340"
    print(f"c = {capacity}: worst point off by {worst:.4f} px, capacity line at x {x:.2f}")
