"""Lab 07's stacked pipeline timelines as plain SVG (mo.Html), not a Plotly figure.

A schedule move redrew the Plotly figure (charts.timelines_figure, before this module) in full (Plotly.react re-lays out the axes, legend
and every bar on any change of data): about 90-130 ms of the page's main-thread CPU a move at the
default setting, the floor page's whole move 80 (CDP ThreadTime and a Chromium trace, load 11-18).
Drawn here the chart is markup the page only parses and lays out. Same ops, colours (charts.OP_COLORS),
micro-batch shading, titles, axes, legend and layout as that figure; up to charts.RASTER_OPS ops one
rectangle per op (its micro-batch and chunk on hover, an SVG <title>), above one image of
charts.timeline_raster's grid (charts.palette_png). No physics here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

import numpy as np

from labs.core.charts import (
    OP_COLORS,
    OP_NAMES,
    RASTER_OPS,
    TIMELINE_IMAGE_COLORS,
    palette_png,
    timeline_raster,
)
from labs.core.engine.pipeline import Timeline
from labs.core.style import COLORS
from labs.core.svg_charts import WIDTH, svg_page, tick_step

LEFT, RIGHT, TOP = 60, 20, 95  # the Plotly figure's margins: the theme's left and right, its top for the title and legend
# Below each time axis its tick labels and title (the bottom margin Plotly's automargin gave the
# figure in Chromium at every p, m and schedule), between timelines also the next one's title.
TIMELINES_AXIS_PX, TIMELINE_GAP_PX = 59, 110
ROW_BAR = 0.8  # a stage row's bar spans 0.8 of the row, as Plotly's horizontal bars
TIME_TITLE = "time (one forward = 1)"


def plot_height(t: Timeline) -> int:
    """A timeline's plot height in px, as the Plotly figure gave it (28 px a stage up to 32)."""
    return max(1, 28 * min(t.p, 32) - 10)


def time_ticks(hi: float, target: int = 8) -> np.ndarray:
    """Tick values from 0 to `hi`, about `target` of them (svg_charts.tick_step)."""
    step = tick_step(hi, target)
    return np.arange(0.0, hi + step * 1e-9, step)


def _fmt(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Panel:
    """One timeline's title and its ops drawn in the plot's own px (origin at its top left)."""
    title: str
    t: Timeline
    marks: str


def op_marks(t: Timeline, width: float, height: float) -> str:
    """The ops of `t` in a plot `width` x `height` px (time 0 .. 1.01 x makespan left to right,
    stage 0's row at the top): up to RASTER_OPS one rectangle per op, coloured by kind, shaded by
    micro-batch (as charts._timeline_bars) with a white edge, its micro-batch and chunk on hover;
    above, one image of timeline_raster's grid, a row per stage. The boxes of one micro-batch and
    chunk (one per stage) are one path."""
    sx, sy = width / (1.01 * t.makespan), height / t.p
    if len(t.op) > RASTER_OPS:
        z, bin_width = timeline_raster(t)
        return (f'<image x="0" y="0" width="{z.shape[1] * bin_width * sx:.2f}" height="{height}" preserveAspectRatio="none" '
                f'style="image-rendering:pixelated" href="{palette_png(z, TIMELINE_IMAGE_COLORS)}"/>')
    shade = 0.45 + 0.55 * (1 - np.arange(t.m) / max(1, t.m - 1))
    x0, x1 = t.start * sx, t.end * sx
    y0 = (t.stage + (1 - ROW_BAR) / 2) * sy
    bar = ROW_BAR * sy
    parts = []
    for op in ("F", "B", "W"):
        sel = np.flatnonzero(t.op == op)
        if not len(sel):
            continue
        # One path per micro-batch and chunk (its p stages' boxes): a p-th of the elements of a
        # rectangle per op, each a node the page parses, styles and lays out; the same hover.
        sel = sel[np.lexsort((t.stage[sel], t.chunk[sel], t.microbatch[sel]))]
        key = t.microbatch[sel].astype(np.int64) * t.v + t.chunk[sel]
        cuts = np.flatnonzero(np.diff(key)) + 1
        paths = []
        for group in np.split(sel, cuts):
            i = group[0]
            d = "".join(f"M{x0[j]:.2f},{y0[j]:.2f}h{x1[j] - x0[j]:.2f}v{bar:.2f}h{x0[j] - x1[j]:.2f}z" for j in group)
            paths.append(f'<path d="{d}" fill-opacity="{shade[t.microbatch[i]]:.3f}"><title>micro-batch {t.microbatch[i]}, chunk {t.chunk[i]}</title></path>')
        parts.append(f'<g fill="{OP_COLORS[op]}" stroke="white" stroke-width="0.5">{"".join(paths)}</g>')
    return "".join(parts)


def timelines_panels(runs: Sequence[tuple[str, Timeline]]) -> list[Panel]:
    """Each (title, timeline)'s panel: the ops drawn once, for timelines_svg to place (a play move
    redraws the marker only)."""
    return [Panel(title, t, op_marks(t, WIDTH - LEFT - RIGHT, plot_height(t))) for title, t in runs]


def timelines_svg(panels: Sequence[Panel], fraction: float = 1.0) -> str:
    """The panels stacked, top to bottom, as the Plotly figure laid them out: the first title at the
    top and the legend (the op kinds drawn) above the first plot, each timeline's time axis below
    it and the next one's title above it; a stage axis each (stage 0 at the top). `fraction` < 1
    marks how far each schedule has played: a line there and a veil over what runs after it."""
    width = WIDTH - LEFT - RIGHT
    height = TOP + TIMELINES_AXIS_PX + sum(plot_height(p.t) for p in panels) + (len(panels) - 1) * TIMELINE_GAP_PX
    parts, top = [], TOP
    kinds = [op for op in ("F", "B", "W") if any((p.t.op == op).any() for p in panels)]
    for row, panel in enumerate(panels):
        t, h = panel.t, plot_height(panel.t)
        sx, sy = width / (1.01 * t.makespan), h / t.p
        title_y = 30 if row == 0 else top - 14
        parts.append(f'<text x="{LEFT}" y="{title_y}" font-size="21">{escape(panel.title)}</text>')
        ticks = time_ticks(1.01 * t.makespan)
        grid = [f'<line x1="{v * sx:.2f}" x2="{v * sx:.2f}" y1="0" y2="{h}"/>' for v in ticks]
        stages = range(0, t.p, max(1, t.p // 16))
        grid += [f'<line x1="0" x2="{width}" y1="{(s + 0.5) * sy:.2f}" y2="{(s + 0.5) * sy:.2f}"/>' for s in stages]
        labels = [f'<text x="{v * sx:.2f}" y="{h + 20}" text-anchor="middle">{_fmt(v)}</text>' for v in ticks]
        labels += [f'<text x="-8" y="{(s + 0.5) * sy + 5:.2f}" text-anchor="end">{s}</text>' for s in stages]
        marker = ""
        until = t.makespan * fraction
        if until < t.makespan:
            marker = (f'<rect x="{until * sx:.2f}" y="0" width="{width - until * sx:.2f}" height="{h}" fill="white" fill-opacity="0.8"/>'
                      f'<line x1="{until * sx:.2f}" x2="{until * sx:.2f}" y1="0" y2="{h}" stroke="{COLORS["ink"]}" stroke-width="2"/>')
        parts.append(
            f'<g transform="translate({LEFT},{top})"><g stroke="{COLORS["grid"]}">{"".join(grid)}</g>{panel.marks}{marker}{"".join(labels)}'
            f'<text x="{width / 2}" y="{h + 45}" text-anchor="middle" font-size="17">{TIME_TITLE}</text>'
            f'</g><text transform="translate({LEFT - 40},{top + h / 2:.1f}) rotate(270)" text-anchor="middle" font-size="17">stage</text>'
        )
        top += h + TIMELINE_GAP_PX
    x = LEFT
    for op in kinds:
        parts.append(f'<rect x="{x}" y="{TOP - 28}" width="18" height="14" fill="{OP_COLORS[op]}"/><text x="{x + 26}" y="{TOP - 16}">{OP_NAMES[op]}</text>')
        x += 48 + 8.5 * len(OP_NAMES[op])
    label = "; ".join(p.title for p in panels)
    return svg_page(WIDTH, height, label, parts, capped=False)
