"""Lab 08's ring stepper drawing as plain SVG (mo.Html) instead of a Plotly figure.

A "Ranks N" move redrew the Plotly ring (its layout, text measuring and arrow markers in the
browser): the bench read the move at 1.68x the floor page's, with the kernel's run done at 52-94
ms and the figure's Python at 2.4 ms; the rest was the page. Drawn here it is markup the page
only parses and lays out. Same drawing as the Plotly figure: the N ranks on a circle from the top
clockwise (grey ring, labelled GPU 0..N-1), in a step the arrow from each rank to its right
neighbour in the phase's colour (blue reduce-scatter, green all-gather) with the chunk it sends,
the same title; each rank's and each send's numbers on hover (an SVG <title>). No physics here.
"""

from __future__ import annotations

import math
from html import escape

from labs.core.style import COLORS
from labs.core.svg_charts import linear_scale, svg_page

WIDTH, HEIGHT = 420, 400
TOP, BOTTOM = 60, 10  # px: the title's room above the plot, a margin below
SPAN = 1.3  # the plot shows -SPAN..SPAN on both axes (the unit circle with room for the ranks)
ARROW_RADIUS, LABEL_RADIUS = 0.8, 0.56  # the arrows run between ranks at 0.8 of the ring; chunk labels at 0.56 of the two ranks' sum
PHASE_COLORS = {"reduce-scatter": COLORS["blue"], "all-gather": COLORS["green"]}


def rank_points(n: int) -> list[tuple[float, float]]:
    """Rank r's place on the unit circle: from the top (r = 0), clockwise."""
    return [(math.cos(math.pi / 2 - 2 * math.pi * r / n), math.sin(math.pi / 2 - 2 * math.pi * r / n)) for r in range(n)]


def ring_title(view: dict) -> str:
    phase = view["phase"] if view["step"] else "before the first step"
    return f"Ring all-reduce, N = {view['n']}: step {view['step']} of {view['steps']} ({phase})"


def _arrow(x0: float, y0: float, x1: float, y1: float, color: str, title: str) -> str:
    """A line from (x0, y0) to (x1, y1) px with a filled head at its end, `title` on hover."""
    length = math.hypot(x1 - x0, y1 - y0)
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    head, half = 11.0, 5.5
    bx, by = x1 - head * ux, y1 - head * uy
    return (f'<g><title>{escape(title)}</title><line x1="{x0:.1f}" y1="{y0:.1f}" x2="{bx:.1f}" y2="{by:.1f}" stroke="{color}" stroke-width="2"/>'
            f'<path d="M{x1:.1f},{y1:.1f}L{bx - half * uy:.1f},{by + half * ux:.1f}L{bx + half * uy:.1f},{by - half * ux:.1f}Z" fill="{color}"/></g>')


def ring_chart(view: dict) -> str:
    """The ring at one step of ring_state's `view`: ranks on a circle and the chunk each sends."""
    n = view["n"]
    side = HEIGHT - TOP - BOTTOM
    left = (WIDTH - side) / 2
    px = linear_scale(-SPAN, SPAN, left, left + side)
    py = linear_scale(-SPAN, SPAN, TOP + side, TOP)  # y up, as the figure's axes
    points = [(px(x), py(y)) for x, y in rank_points(n)]
    small = n <= 8
    radius, font = (17, 10) if small else (13, 8)
    ring = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    parts = [f'<polygon points="{ring}" fill="none" stroke="{COLORS["grid"]}" stroke-width="2"/>']
    sends = view["sends"]
    for r, (x, y) in enumerate(points):
        held = ", ".join(f"c{c} {view['holds'][r][c]} of {n}" for c in range(n))
        parts.append(f'<g class="rank"><title>GPU {r}: {escape(held)}</title><circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{COLORS["panel"]}" stroke="{COLORS["ink"]}"/>'
                     f'<text x="{x:.1f}" y="{y + font * 0.35:.1f}" text-anchor="middle" font-size="{font}">GPU {r}</text></g>')
    if sends is not None:
        color = PHASE_COLORS[view["phase"]]
        unit = rank_points(n)
        for r, chunk in enumerate(sends):
            nxt = (r + 1) % n
            (x0, y0), (x1, y1) = unit[r], unit[nxt]
            title = f"GPU {r} to GPU {nxt}: chunk c{chunk}, {view['link_bytes'][r] / 1e6:,.1f} MB"
            parts.append(_arrow(px(ARROW_RADIUS * x0), py(ARROW_RADIUS * y0), px(ARROW_RADIUS * x1), py(ARROW_RADIUS * y1), color, title))
            parts.append(f'<text class="chunk" x="{px(LABEL_RADIUS * (x0 + x1)):.1f}" y="{py(LABEL_RADIUS * (y0 + y1)) + 3.5:.1f}" '
                         f'text-anchor="middle" font-size="10" fill="{color}">c{chunk}</text>')
    parts.append(f'<text x="{0.05 * WIDTH:.1f}" y="{TOP / 2 + 5:.1f}" font-size="14">{escape(ring_title(view))}</text>')
    return svg_page(WIDTH, HEIGHT, f"ring all-reduce of {n} ranks at step {view['step']}", parts)
