"""Lab 07's timelines as plain SVG (labs.core.timeline_svg): read back from the markup, every box
is an op of the engine's timeline (kind, stage, start, end, micro-batch and chunk on hover), a
large timeline is timeline_raster's grid as one PNG spanning its step, and the play marker sits at
the played fraction of each schedule's step. The SVG is parsed as XML here, not by the code under
test; the PNG is decoded by hand (test_lab07_raster_image.decode_png)."""

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from labs.core import charts, timeline_svg
from labs.core.engine.pipeline import OpCosts, timeline
from test_lab07_raster_image import decode_png

PLOT_W = timeline_svg.WIDTH - timeline_svg.LEFT - timeline_svg.RIGHT
BOX = re.compile(r"M([-\d.]+),([-\d.]+)h([-\d.]+)v([-\d.]+)h([-\d.]+)z")


def panels_of(svg: str) -> list[ET.Element]:
    """Each timeline's plot group (translated to its plot's top left), top to bottom."""
    root = ET.fromstring(svg)
    return [g for g in root if g.tag == "g" and g.get("transform", "").startswith("translate(")]


def drawn_boxes(panel: ET.Element, t) -> list[tuple]:
    """(kind, stage, start, end, micro-batch, chunk) of every box drawn in a panel, in time units."""
    sx, sy = PLOT_W / (1.01 * t.makespan), timeline_svg.plot_height(t) / t.p
    kinds = {charts.OP_COLORS[k]: k for k in "FBW"}
    boxes = []
    for group in panel.iter("g"):
        if group.get("fill") not in kinds:
            continue
        for path in group.iter("path"):
            mb, chunk = map(int, re.fullmatch(r"micro-batch (\d+), chunk (\d+)", path.find("title").text).groups())
            for x, y, w, h, back in BOX.findall(path.get("d")):
                x, y, w, h, back = map(float, (x, y, w, h, back))
                assert back == -w and h == pytest.approx(timeline_svg.ROW_BAR * sy, abs=0.006)
                stage = (y + h / 2) / sy - 0.5
                assert stage == pytest.approx(round(stage), abs=1e-3)
                boxes.append((kinds[group.get("fill")], round(stage), x / sx, (x + w) / sx, mb, chunk))
    return sorted(boxes)


@pytest.mark.parametrize("schedule, p, m, v", [("1f1b", 4, 8, 1), ("interleaved", 4, 8, 3), ("zb-h1", 16, 32, 1), ("zb-h2", 8, 24, 1), ("interleaved", 8, 32, 2)])
def test_the_drawn_boxes_are_the_engines_ops(schedule, p, m, v):
    """One box per op, alone and as the second timeline: kind, stage, start and end (to the
    0.01 px the markup keeps), its micro-batch and chunk on hover."""
    t = timeline(p, m, schedule, v, OpCosts(1.0, 1.3, 0.7))
    assert len(t.op) <= charts.RASTER_OPS
    engine = sorted((str(o), int(s), float(a), float(b), int(i), int(c)) for o, s, a, b, i, c in zip(t.op, t.stage, t.start, t.end, t.microbatch, t.chunk))
    px = 0.0105 * 1.01 * t.makespan / PLOT_W  # the markup keeps 0.01 px: the start and the width rounded, in time units
    for runs, at in (([("a", t)], 0), ([("x", timeline(4, 8, "1f1b")), ("a", t)], 1)):
        drawn = drawn_boxes(panels_of(timeline_svg.timelines_svg(timeline_svg.timelines_panels(runs)))[at], t)
        assert len(drawn) == len(engine)
        for d, e in zip(drawn, engine):
            assert (d[0], d[1], d[4], d[5]) == (e[0], e[1], e[4], e[5]) and d[2:4] == pytest.approx(e[2:4], abs=px)
    # a path per micro-batch and chunk of each kind: a p-th of the boxes
    assert timeline_svg.op_marks(t, PLOT_W, 100).count("<path") == len(t.op) // p


def test_a_large_timeline_is_the_raster_as_one_image_spanning_its_step():
    big, small = timeline(64, 256, "1f1b"), timeline(4, 8, "1f1b")
    svg = timeline_svg.timelines_svg(timeline_svg.timelines_panels([("big", big), ("small", small)]))
    first, second = panels_of(svg)
    images = list(first.iter("image"))
    assert len(images) == 1 and not list(second.iter("image")) and not list(first.iter("path"))
    pixels, palette = decode_png(images[0].get("href"))
    z, width = charts.timeline_raster(big)
    assert np.array_equal(pixels, z) and [c.lower() for c in palette] == [c.lower() for c in charts.TIMELINE_IMAGE_COLORS]
    sx = PLOT_W / (1.01 * big.makespan)
    print(f"image {images[0].get('width')} px wide for a step of {big.makespan * sx:.2f} px")
    assert (float(images[0].get("x")), float(images[0].get("y"))) == (0, 0)
    assert float(images[0].get("width")) == pytest.approx(big.makespan * sx, abs=0.01)  # its bins span the step
    assert float(images[0].get("height")) == timeline_svg.plot_height(big)  # a row per stage


def test_the_play_marker_is_at_the_played_fraction_of_each_step():
    runs = [("a", timeline(64, 256, "1f1b")), ("b", timeline(8, 16, "zb-h2"))]
    panels = timeline_svg.timelines_panels(runs)
    for panel, (_, t) in zip(panels_of(timeline_svg.timelines_svg(panels, 0.4)), runs):
        sx = PLOT_W / (1.01 * t.makespan)
        veil = [r for r in panel.iter("rect") if r.get("fill") == "white"]
        line = [ln for ln in panel.iter("line") if ln.get("stroke-width") == "2"]
        assert len(veil) == len(line) == 1
        assert float(veil[0].get("x")) == pytest.approx(0.4 * t.makespan * sx, abs=0.01) == float(line[0].get("x1"))
        assert float(veil[0].get("x")) + float(veil[0].get("width")) == pytest.approx(PLOT_W)  # to the axis's end
    full = timeline_svg.timelines_svg(panels, 1.0)
    assert 'stroke-width="2"' not in full and 'fill="white"' not in full
    assert all(p.marks in full for p in panels)  # the ops are drawn once, the marker placed over them


def test_titles_legend_and_axes():
    runs = [("1F1B: p=4, m=8, v=1", timeline(4, 8, "1f1b")), ("ZB-H1: p=4, m=8, v=1", timeline(4, 8, "zb-h1"))]
    root = ET.fromstring(timeline_svg.timelines_svg(timeline_svg.timelines_panels(runs)))
    texts = [t.text for t in root.iter("text")]
    assert texts.count("1F1B: p=4, m=8, v=1") == 1 and texts.count("ZB-H1: p=4, m=8, v=1") == 1
    assert [texts.count(charts.OP_NAMES[k]) for k in "FBW"] == [1, 1, 1]  # one legend entry per kind drawn
    assert texts.count("time (one forward = 1)") == 2 and texts.count("stage") == 2
    assert list(timeline_svg.time_ticks(33.33)) == [0, 5, 10, 15, 20, 25, 30]
    assert list(timeline_svg.time_ticks(960)) == [0, 200, 400, 600, 800]  # 960 / 8 = 120: a step of 200
