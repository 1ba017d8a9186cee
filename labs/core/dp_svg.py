"""Lab 05's Act I charts as plain SVG (mo.Html), not Plotly figures: MFU against the GPU count
and each step's parts beside the all-reduce / compute ratio (the Plotly figures they replace were
charts.mfu_vs_gpus and charts.dp_step_figure, removed). Every Act I move redrew both Plotly figures, and the "Gradients reduced
in" move took the bench 228 ms against the floor page's 124 with the run done at 70 ms: the rest
was the page, Plotly's layout and text measuring, as in Labs 06, 07, 09, 10 and 15 (svg_charts,
failure_svg, routing_svg). Same data, colours, titles, axis titles, ticks and legend entries as
those figures, a fixed size; each point's and bar's value on hover (an SVG <title>). No physics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from labs.core.engine.perf import Estimate
from labs.core.style import COLORS, TERM_COLORS
from labs.core.svg_charts import (
    PAD,
    WIDTH,
    LogAxis,
    diamond,
    linear_scale,
    nice_ticks,
    svg_page,
    text_px,
)

GPU_TICKS = (8, 16, 32, 64, 128, 256, 512, 1024)  # the GPU counts Act I's slider offers
SERIES_COLORS = (COLORS["blue"], COLORS["green"], COLORS["purple"])
# The MFU chart: 960 x 380 px (the figure's height), margins left, right, top, bottom.
MFU_HEIGHT, MFU_MARGIN = 380, (70, 20, 60, 62)
# The step chart: 960 x 440 px, margins as the figure's (top 80 for the two titles, bottom 130 for
# the legend below); the bars on the left 0.45 of the plot, the ratio on the right 0.45.
STEP_HEIGHT, STEP_MARGIN = 440, (70, 20, 80, 130)
STEP_DOMAINS = ((0.0, 0.45), (0.55, 1.0))
STEP_PARTS = {"compute": "compute", "dp_bandwidth": "exposed all-reduce: bandwidth term",
              "dp_latency": "exposed all-reduce: latency term", "optimizer_step": "optimizer step"}
def _x_grid(ticks: Sequence[tuple[float, str]], px, top: float, bottom: float) -> list[str]:
    return [f'<line x1="{px(v):.2f}" x2="{px(v):.2f}" y1="{top}" y2="{bottom}" stroke="{COLORS["grid"]}"/>'
            f'<text x="{px(v):.2f}" y="{bottom + 22}" text-anchor="middle">{label}</text>' for v, label in ticks]


def _y_grid(ticks: Sequence[tuple[float, str]], py, left: float, right: float) -> list[str]:
    return [f'<line x1="{left}" x2="{right}" y1="{py(v):.2f}" y2="{py(v):.2f}" stroke="{COLORS["grid"]}"/>'
            f'<text x="{left - 8}" y="{py(v) + 5:.2f}" text-anchor="end">{label}</text>' for v, label in ticks]


def _x_title(text: str, left: float, right: float, y: float) -> str:
    return f'<text x="{(left + right) / 2:.1f}" y="{y:.1f}" text-anchor="middle" font-size="17">{escape(text)}</text>'


def _y_title(text: str, x: float, top: float, bottom: float) -> str:
    return f'<text transform="translate({x:.1f},{(top + bottom) / 2:.1f}) rotate(-90)" text-anchor="middle" font-size="17">{escape(text)}</text>'


def _legend(items: Sequence[tuple[str, str]], x: float, y: float) -> list[str]:
    """Legend entries (name, mark drawn around (13, -5)) left to right from (x, y)."""
    parts = []
    for name, mark in items:
        parts.append(f'<g class="legend" transform="translate({x:.1f},{y:.1f})">{mark}<text x="32" y="0">{escape(name)}</text></g>')
        x += 56 + text_px(name)
    return parts


def cross(x: float, y: float, d: float, color: str) -> str:
    return f'<path d="M{x - d:.1f},{y - d:.1f}L{x + d:.1f},{y + d:.1f}M{x - d:.1f},{y + d:.1f}L{x + d:.1f},{y - d:.1f}" stroke="{color}" stroke-width="3"/>'


def mfu_chart(curves: dict[str, Sequence[Estimate]], marked: dict[str, tuple[Sequence[int], Sequence[float]]] | None = None,
              current: Estimate | None = None, node_size: int = 8) -> str:
    """MFU (%) against the GPU count (log x) for named series of
    estimates (those that fit), `marked` points as crosses, the current setting as a diamond, a
    dotted line at one node."""
    left, right_m, top, bottom_m = MFU_MARGIN
    right, bottom = WIDTH - right_m, MFU_HEIGHT - bottom_m
    lines = [(name, [(e.cluster.gpus, 100 * e.mfu) for e in ests if e.fits], color) for (name, ests), color in zip(curves.items(), SERIES_COLORS)]
    points = [(name, [(x, 100 * y) for x, y in zip(xs, ys)]) for name, (xs, ys) in (marked or {}).items()]
    you = (current.cluster.gpus, 100 * current.mfu) if current is not None and current.fits else None
    xy = [p for _, pts, _ in lines for p in pts] + [p for _, pts in points for p in pts] + ([you] if you else [])
    xs, ys = [x for x, _ in xy] + [node_size], [y for _, y in xy]
    px = LogAxis(min(xs), max(xs), left, right, pad=PAD)
    y_hi = (max(ys) if ys and max(ys) > 0 else 1.0) * (1 + PAD)  # rangemode "tozero"
    py = linear_scale(0.0, y_hi, bottom, top)
    parts = _x_grid([(t, str(t)) for t in GPU_TICKS if px.a <= math.log10(t) <= px.b], px, top, bottom)
    parts += _y_grid([(v, f"{v:g}") for v in nice_ticks(0.0, y_hi)], py, left, right)
    node_x = px(node_size)
    parts.append(f'<line x1="{node_x:.2f}" x2="{node_x:.2f}" y1="{top}" y2="{bottom}" stroke="{COLORS["muted"]}" stroke-width="2" stroke-dasharray="3,3"/>'
                 f'<text x="{node_x + 3:.2f}" y="{top + 15}">one node</text>')
    items = []
    for name, pts, color in lines:
        coords = " ".join(f"{px(x):.2f},{py(y):.2f}" for x, y in pts)
        parts.append(f'<g class="line" data-name="{escape(name)}"><polyline fill="none" stroke="{color}" stroke-width="3" points="{coords}"/>'
                     + "".join(f'<circle cx="{px(x):.2f}" cy="{py(y):.2f}" r="4" fill="{color}"><title>{escape(name)}: {x:,} GPUs, MFU {y:.1f}%</title></circle>'
                               for x, y in pts) + "</g>")
        items.append((name, f'<line x1="0" x2="26" y1="-5" y2="-5" stroke="{color}" stroke-width="3"/><circle cx="13" cy="-5" r="4" fill="{color}"/>'))
    for name, pts in points:
        parts.append(f'<g class="marked" data-name="{escape(name)}">'
                     + "".join(f'<g data-x="{x!r}" data-y="{y!r}">{cross(px(x), py(y), 7, COLORS["orange"])}<title>{escape(name)}: {x:,} GPUs, MFU {y:.1f}%</title></g>'
                               for x, y in pts) + "</g>")
        items.append((name, cross(13, -5, 7, COLORS["orange"])))
    if you:
        parts.append(f'<g class="your-setting">{diamond(px(you[0]), py(you[1]), 9, COLORS["red"])}<title>your setting: {you[0]:,} GPUs, MFU {you[1]:.1f}%</title></g>')
        items.append(("your setting", diamond(13, -5, 9, COLORS["red"])))
    parts += _legend(items, left, top - 16)
    parts += [_x_title("GPUs (data-parallel)", left, right, MFU_HEIGHT - 12), _y_title("MFU (%)", 22, top, bottom)]
    return svg_page(WIDTH, MFU_HEIGHT, "MFU against data-parallel GPUs", parts)


def _step_shares(ests: Sequence[Estimate]) -> dict[str, list[float]]:
    """Each part's seconds of each step ."""
    return {"compute": [e.time.compute for e in ests], "dp_bandwidth": [e.dp_exposed_bandwidth_s for e in ests],
            "dp_latency": [e.dp_exposed_latency_s for e in ests], "optimizer_step": [e.time.optimizer for e in ests]}


def dp_step_chart(ests: Sequence[Estimate]) -> str:
    """On the left each GPU count's step as shares of its own time
    (stacked to 100%: compute, exposed bandwidth term, exposed latency term, optimizer step; the
    milliseconds on hover), on the right the all-reduce time (before overlap) over compute time,
    log-log, with a dashed line where they are equal; one legend below both."""
    if not ests:
        raise ValueError("ests: no estimate to draw")
    left, right_m, top, bottom_m = STEP_MARGIN
    plot_right, bottom = WIDTH - right_m, STEP_HEIGHT - bottom_m
    span = plot_right - left
    (l0, l1), (r0, r1) = ((left + a * span, left + b * span) for a, b in STEP_DOMAINS)
    parts = [f'<text x="{x:.1f}" y="{top - 28}" font-size="21">{escape(t)}</text>'
             for x, t in ((l0, "Where each step's time goes"), (r0, "Gradient reduction against compute"))]
    # Left: the stacked shares, a category per GPU count (Plotly's bars: 0.2 of a category a gap).
    py = linear_scale(0.0, 100.0, bottom, top)
    parts += _y_grid([(v, f"{v:g}") for v in range(0, 101, 20)], py, l0, l1)
    group = (l1 - l0) / max(len(ests), 1)
    seconds = _step_shares(ests)
    totals = [sum(v) for v in zip(*seconds.values())]
    for i, e in enumerate(ests):
        x, below = l0 + group * (i + 0.1), 0.0
        parts.append(f'<text x="{l0 + group * (i + 0.5):.2f}" y="{bottom + 22}" text-anchor="middle">{e.cluster.gpus}</text>')
        for key, name in STEP_PARTS.items():
            s = seconds[key][i]
            share = 100 * s / totals[i]
            y0, y1 = py(below), py(below + share)
            parts.append(f'<rect x="{x:.2f}" y="{y1:.2f}" width="{0.8 * group:.2f}" height="{y0 - y1:.2f}" fill="{TERM_COLORS[key]}" '
                         f'data-gpus="{e.cluster.gpus}" data-seconds="{s!r}"><title>{escape(name)}: {1e3 * s:,.0f} ms ({share:.0f}% of the step)</title></rect>')
            below += share
    parts += [_x_title("GPUs", l0, l1, bottom + 50), _y_title("share of the step (%)", 22, top, bottom)]
    # Right: the ratio, log-log, its range holding the line at 1 (Plotly's autorange takes shapes in).
    gpus = [e.cluster.gpus for e in ests]
    ratio = [e.dp_comm_cost.total_s / e.time.compute for e in ests]
    px = LogAxis(min(gpus), max(gpus), r0, r1, pad=PAD)
    ry = LogAxis(min(ratio + [1.0]), max(ratio + [1.0]), bottom, top, pad=PAD)
    parts += _x_grid([(g, str(g)) for g in gpus], px, top, bottom)
    decades = range(math.ceil(ry.a - 1e-9), math.floor(ry.b + 1e-9) + 1)
    parts += _y_grid([(10.0 ** k, f"{10.0 ** k:g}") for k in decades], ry, r0, r1)
    parts.append(f'<line x1="{r0:.2f}" x2="{r1:.2f}" y1="{ry(1.0):.2f}" y2="{ry(1.0):.2f}" stroke="{COLORS["muted"]}" stroke-width="2" stroke-dasharray="9,9"/>'
                 f'<text x="{r1:.2f}" y="{ry(1.0) - 5:.2f}" text-anchor="end">communication = compute</text>')
    name, color = "all-reduce / compute", COLORS["red"]
    coords = " ".join(f"{px(g):.2f},{ry(r):.2f}" for g, r in zip(gpus, ratio))
    parts.append(f'<g class="line" data-name="{name}"><polyline fill="none" stroke="{color}" stroke-width="3" points="{coords}"/>'
                 + "".join(f'<circle cx="{px(g):.2f}" cy="{ry(r):.2f}" r="4" fill="{color}"><title>{g:,} GPUs: {name} {r:.3g}</title></circle>'
                           for g, r in zip(gpus, ratio)) + "</g>")
    parts += [_x_title("GPUs", r0, r1, bottom + 50), _y_title("reduction time / compute time", r0 - 50, top, bottom)]
    swatch = lambda c: f'<rect x="4" y="-13" width="18" height="14" fill="{c}"/>'
    parts += _legend([(name, swatch(TERM_COLORS[key])) for key, name in STEP_PARTS.items()], left, bottom + 88)
    return svg_page(WIDTH, STEP_HEIGHT, "each step's time by part, and the all-reduce against compute", parts)
