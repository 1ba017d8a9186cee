"""Lab 11's CP chart as plain SVG (labs.core.cp_svg), read back from the markup: each point sits at
its cp_point's sequence length and step time, a cross where the busiest GPU overflows its HBM,
through the axis mapping written out here by hand from the chart's fixed layout. The SVG is parsed
as XML here, not by the code under test."""

import xml.etree.ElementTree as ET

import pytest
from svg_readback import SVG, log_px, parsed

from labs.core import cp_svg
from labs.core.engine.perf import CP_ALGORITHMS
from labs.core.scenarios.lab11 import CP_LABELS, SEQ_CHOICES, cp_curves

# 960 x 420 px, margins left 70, right 20, top 80, bottom 120: the plot x 70 .. 940, y 300 .. 80.
X, Y = (70.0, 940.0), (300.0, 80.0)


def chart(cp: int, kv: int) -> ET.Element:
    return parsed(cp_svg.cp_chart(cp_curves(cp, kv), cp, kv, CP_ALGORITHMS, CP_LABELS, SEQ_CHOICES))


@pytest.mark.parametrize(("cp", "kv"), [(16, 8), (4, 8), (32, 128), (1, 8)])
def test_points_are_the_engines_step_times(cp, kv):
    points = cp_curves(cp, kv)
    priced = [p for p in points if p["error"] is None]
    root = chart(cp, kv)
    seqs, steps = [p["seq_len"] for p in priced], [p["step"] for p in priced]
    drawn = 0
    for alg in CP_ALGORITHMS:
        mine = [p for p in priced if p["algorithm"] == alg]
        groups = [g for g in root.iter(f"{SVG}g") if g.get("class") == "line" and g.get("data-algorithm") == alg]
        if not mine:
            assert groups == []
            continue
        (group,) = groups
        assert group.get("data-name") == CP_LABELS[alg]
        marks = [g for g in group.iter(f"{SVG}g") if g.get("class") == "point"]
        assert len(marks) == len(mine)
        for mark, p in zip(marks, mine):
            x, y = log_px(p["seq_len"], min(seqs), max(seqs), *X), log_px(p["step"], min(steps), max(steps), *Y)
            assert int(mark.get("data-seq")) == p["seq_len"] and float(mark.get("data-step")) == p["step"]
            circle = mark.find(f"{SVG}circle")
            if p["fits"]:
                cx, cy = float(circle.get("cx")), float(circle.get("cy"))
            else:
                assert circle is None  # over HBM: a cross centred on the point
                x0, y0 = (float(v) for v in mark.find(f"{SVG}path").get("d")[1:].split("L")[0].split(","))
                cx, cy = x0 + 6, y0 + 6
            print(alg, p["seq_len"], f"{p['step']:.3f} s: drawn at ({cx:.2f}, {cy:.2f}), expected ({x:.2f}, {y:.2f})")
            assert cx == pytest.approx(x, abs=0.02) and cy == pytest.approx(y, abs=0.02)
            over = "" if p["fits"] else "; over HBM on the busiest GPU"
            assert mark.find(f"{SVG}title").text == f"{CP_LABELS[alg]}: {p['seq_len'] // 1024}K tokens, {p['step']:.2f} s per step{over}"
            drawn += 1
    assert drawn == len(priced)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert f"CP {cp}, {kv} KV heads: step time (x: over HBM)" in texts
    assert {"sequence length (tokens)", "step time (s)", "over HBM (busiest GPU)"} <= set(texts)
    assert [t for t in texts if t in {f"{s // 1024}K" for s in SEQ_CHOICES}] == [f"{s // 1024}K" for s in SEQ_CHOICES if s % cp == 0]


def test_crosses_mark_the_points_over_hbm():
    points = [p for p in cp_curves(16, 8) if p["error"] is None]
    root = chart(16, 8)
    fits = [g.get("data-fits") for g in root.iter(f"{SVG}g") if g.get("class") == "point"]
    assert fits == [str(p["fits"]).lower() for p in points]
    assert "true" in fits and "false" in fits  # the chart shows both at Llama 3's CP 16


def test_refused_algorithms_are_named_in_red():
    points = cp_curves(32, 8)
    refused = [a for a in CP_ALGORITHMS if all(p["error"] for p in points if p["algorithm"] == a)]
    assert refused == ["ulysses"]  # 16 query heads per TP rank: Ulysses cannot split them 32 ways
    note = next(t for t in chart(32, 8).iter(f"{SVG}text") if t.get("class") == "refused")
    assert note.text == f"refused by the engine at CP 32: {CP_LABELS['ulysses']}"
    assert all(t.get("class") != "refused" for t in chart(16, 8).iter(f"{SVG}text"))


def test_nothing_to_draw_is_refused():
    with pytest.raises(ValueError, match="points"):
        cp_svg.cp_chart([], 16, 8, CP_ALGORITHMS, CP_LABELS, SEQ_CHOICES)
