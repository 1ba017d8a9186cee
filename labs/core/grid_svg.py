"""Lab 09's GPU grid (charts.gpu_grid's traces and layout, charts.gpu_grid_parts) as plain SVG
text, for the notebook to wrap in mo.Html. Not a Plotly chart: every rank-order move redraws its
64 cells, and Plotly's redraw of them was most of the page's work on a move. No physics here.
"""

from __future__ import annotations

import html
import re
from functools import cache
from itertools import pairwise

import numpy as np

from labs.core.style import COLORS
from labs.core.svg_charts import FONT


def grid_svg(data: list[dict], lay: dict) -> str:
    """charts.gpu_grid's traces and layout (gpu_grid_parts) as SVG, placed as Plotly placed the
    figure (read in Chromium): its margins (75, 20, 50, 90 px), x range, the y axis reversed and
    autoranged (the cells' half size x 1.25 and 5% of the plot padded each end), the NVLink frames
    below, the hops under the cells, the crosses above; a cell's hover text (its hovertemplate) as
    its SVG title; the legend below."""
    traces = {"markers+text": None, "lines": None, "markers": None}
    traces.update({trace["mode"]: trace for trace in data})
    cells, hops, over = traces["markers+text"], traces["lines"], traces["markers"]
    marker = cells["marker"]
    size, cmin, cmax = marker["size"], marker["cmin"], marker["cmax"]
    (w, h), (left, right, top, bottom) = (lay["width"], lay["height"]), (75, 20, 50, 90)
    plot_w, plot_h = w - left - right, h - top - bottom
    (x_lo, x_hi), xaxis, yaxis = lay["xaxis"]["range"], lay["xaxis"], lay["yaxis"]
    rows = len(yaxis["tickvals"])
    pad = 1.25 * size / 2 + 0.05 * plot_h
    span = max(rows - 1, 1) / (1 - 2 * pad / plot_h)
    y_lo = (rows - 1 - span) / 2
    px = lambda x: left + (x - x_lo) / (x_hi - x_lo) * plot_w
    py = lambda y: top + (y - y_lo) / span * plot_h
    stops = [(pos, np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)) for pos, c in marker["colorscale"]]

    @cache  # a grid's 64 cells take a few values (a group's index, a stage's memory)
    def color(value):  # Plotly's colour scale: linear in RGB between the stops, rounded
        f = min(max((value - cmin) / (cmax - cmin), 0.0), 1.0)
        (p0, c0), (p1, c1) = next((a, b) for a, b in pairwise(stops) if f <= b[0])
        r, g, b = np.round(c0 + (c1 - c0) * ((f - p0) / (p1 - p0) if p1 > p0 else 0.0)).astype(int)
        return f"rgb({r},{g},{b})"

    field = re.compile(r"%\{customdata\[(\d+)\](?::([^}]*))?\}")
    hover_template = cells["hovertemplate"].replace("<extra></extra>", "").replace("<br>", "\n")

    def hover(row):
        return html.escape(field.sub(lambda m: format(row[int(m[1])], m[2] or "g"), hover_template))

    half = size / 2
    parts = [f'<path d="M{px(s["x0"]):.1f},{py(s["y0"]):.1f}H{px(s["x1"]):.1f}V{py(s["y1"]):.1f}H{px(s["x0"]):.1f}Z" fill="none" '
             f'stroke="{s["line"]["color"]}" stroke-width="{s["line"]["width"]}"/>' for s in lay["shapes"]]
    # the same elements in the same order at every design (the hops' path and the crosses' group
    # empty where there are none), so the page updates their attributes instead of re-making them
    hx, hy, hline = (hops["x"], hops["y"], hops["line"]) if hops is not None else ([], [], {})
    ends = [(a, b) for a, b in zip(zip(hx, hy), zip(hx[1:], hy[1:])) if None not in a + b]
    parts.append(f'<path class="hops" d="{"".join(f"M{px(a[0]):.1f},{py(a[1]):.1f}L{px(b[0]):.1f},{py(b[1]):.1f}" for a, b in ends)}" fill="none" '
                 f'stroke="{hline.get("color", "none")}" stroke-width="{hline.get("width", 0)}" opacity="{hops["opacity"] if hops is not None else 1}"/>')
    xs, ys = [px(x) for x in cells["x"]], [py(y) for y in cells["y"]]
    # a title on each cell's square (its hover text); the labels above ignore the pointer
    parts.append('<g class="cells" stroke="white">' + "".join(f'<rect x="{x - half:.1f}" y="{y - half:.1f}" width="{size}" height="{size}" fill="{color(c)}"><title>{hover(row)}</title></rect>'
                                                            for x, y, c, row in zip(xs, ys, marker["color"], cells["customdata"].tolist())) + "</g>")
    parts.append(f'<g class="labels" font-size="{cells["textfont"]["size"]}" fill="white" text-anchor="middle" dominant-baseline="central" pointer-events="none">'
                 + "".join(f'<text x="{x:.1f}" y="{y:.1f}">{html.escape(t)}</text>' for x, y, t in zip(xs, ys, cells["text"])) + "</g>")

    def cross(x, y, d, stroke):
        return f'<path d="M{x + d:.1f},{y + d:.1f}L{x - d:.1f},{y - d:.1f}M{x + d:.1f},{y - d:.1f}L{x - d:.1f},{y + d:.1f}" stroke="{stroke["color"]}" stroke-width="{stroke["width"]}"/>'

    over_line, d = (over["marker"]["line"], over["marker"]["size"] / 2) if over is not None else (None, 0)
    crosses = "".join(cross(px(x), py(y), d, over_line) for x, y in zip(over["x"], over["y"])) if over is not None else ""
    parts.append(f'<g class="over" pointer-events="none">{crosses}</g>')
    parts += [f'<text x="{px(v):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{v}</text>' for v in xaxis["tickvals"]]
    parts += [f'<text x="{left - 1}" y="{py(v):.1f}" dominant-baseline="central" text-anchor="end">{html.escape(t)}</text>' for v, t in zip(yaxis["tickvals"], yaxis["ticktext"])]
    parts.append(f'<text x="{left + plot_w / 2}" y="{h - 43.9:.1f}" text-anchor="middle" font-size="18">{html.escape(xaxis["title"]["text"])}</text>')
    legend = []
    if hops is not None:
        legend.append((f'<path d="M5,11h30" stroke="{hline["color"]}" stroke-width="{hline["width"]}" opacity="{hops["opacity"]}"/>', hops["name"]))
    if over is not None:
        legend.append((cross(20, 11, 8, over_line), over["name"]))
    items = "".join(f'<span style="display:inline-flex;align-items:center;margin-right:1.2rem"><svg width="40" height="22">{mark}</svg>{html.escape(name)}</span>'
                    for mark, name in legend)
    style = f"font-family:{FONT};font-size:15px;color:{COLORS['ink']}"
    page = (f'<div style="{style};max-width:{w}px"><svg class="gpu-grid" viewBox="0 0 {w} {h - 33}" style="width:100%;height:auto;fill:{COLORS["ink"]}" '
            f'role="img" aria-label="the GPU grid">{"".join(parts)}</svg><div style="margin-left:{left}px;min-height:33px">{items}</div></div>')
    # single-quoted attributes (no text here holds a quote: html.escape wrote them as entities): marimo
    # sends the HTML inside a JSON string, where each double quote costs a backslash
    return page.replace('"', "'")
