"""Lab 15's router chart (tokens per expert as a heatmap, the busiest GPU below) and drops chart
as plain SVG (mo.Html), not Plotly figures.

Every instrument move redrew both Plotly figures: with them a Router move took the page about
640 ms of main-thread time in Chromium, 218 ms without the router chart, 474 without the drops
chart (load 14-16), the kernel's part ~30 ms; Plotly.react's layout and text measuring was the
cost, as in Labs 06, 07, 09 and 10 (svg_charts, timeline_svg, failure_svg). Drawn here the charts
are markup the page only parses and lays out. Same data, colours, titles, axis titles, legend
entries and colour bar as those figures; the heatmap one palette PNG (charts.palette_png), each
line point's step and value on hover (an SVG <title>). No physics here.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import numpy as np
from plotly.colors import get_colorscale, sample_colorscale

from labs.core.charts import palette_png
from labs.core.scenarios.lab15 import BASELINE_LABEL, CAPACITIES, WINDOW
from labs.core.style import COLORS
from labs.core.svg_charts import WIDTH, linear_scale, nice_ticks, padded, svg_page

HEAT_COLORSCALE = get_colorscale("Viridis")  # the router heatmap's: its image's palette and its colour bar
HEAT_WINDOW = 10  # steps summed in a heatmap column

# The router chart: 640 px high as the Plotly figure; the heatmap on the top 0.6 of the plot, the
# busiest-GPU lines on the bottom 0.32 (the figure's two y domains), the colour bar at the right.
ROUTER_HEIGHT, ROUTER_MARGIN = 640, (70, 110, 70, 110)  # left, right, top, bottom px
HEAT_DOMAIN, LINE_DOMAIN = (0.4, 1.0), (0.0, 0.32)
# The drops chart: 340 px high, the margins the Plotly figure had fixed (left 60, right 20, top 70, bottom 90).
DROPS_HEIGHT, DROPS_MARGIN = 340, (60, 20, 70, 90)
def _label(v: float) -> str:
    return f"{v:g}"


def heat_palette(low: int, high: int) -> tuple[int, list[str]]:
    """(levels, their colours "#rrggbb"): one level per whole number of tokens from low to high
    when the range has at most 256, else 256 levels, each HEAT_COLORSCALE sampled at its place."""
    span = max(high - low, 1)
    levels = min(span + 1, 256)
    samples = sample_colorscale(HEAT_COLORSCALE, [i / (levels - 1) for i in range(levels)])
    return levels, ["#" + "".join(f"{round(float(v)):02x}" for v in c[4:-1].split(",")) for c in samples]


def heat_codes(z: np.ndarray, low: int, high: int) -> np.ndarray:
    """Each value's palette index (heat_palette): its tokens above low, or its level of 256."""
    span = max(high - low, 1)
    levels = min(span + 1, 256)
    codes = (z - low) if levels == span + 1 else ((z - low) * ((levels - 1) / span)).round()
    return codes.astype("uint8")


def _line_marks(xs: Sequence[float], ys: Sequence[float], px, py, name: str, color: str, hover) -> list[str]:
    points = " ".join(f"{px(x):.2f},{py(y):.2f}" for x, y in zip(xs, ys))
    return [f'<g class="line" data-name="{escape(name)}"><polyline fill="none" stroke="{color}" stroke-width="3" points="{points}"/>',
            *(f'<circle cx="{px(x):.2f}" cy="{py(y):.2f}" r="4" fill="{color}"><title>{escape(hover(x, y))}</title></circle>' for x, y in zip(xs, ys)),
            "</g>"]


def _legend_below(items: Sequence[tuple[str, str]], x: float, y: float) -> list[str]:
    """Legend entries (name, colour) left to right from (x, y): a line with a marker, then the name."""
    parts = []
    for name, color in items:
        parts.append(f'<g class="legend" transform="translate({x:.1f},{y:.1f})"><line x1="0" x2="30" y1="-5" y2="-5" stroke="{color}" stroke-width="3"/>'
                     f'<circle cx="15" cy="-5" r="4" fill="{color}"/><text x="36" y="0">{escape(name)}</text></g>')
        x += 60 + 8.0 * len(name)
    return parts


def _x_axis(ticks, px, top: float, bottom: float, labels: bool) -> list[str]:
    return [f'<line x1="{px(v):.2f}" x2="{px(v):.2f}" y1="{top:.1f}" y2="{bottom:.1f}" stroke="{COLORS["grid"]}"/>'
            + (f'<text x="{px(v):.2f}" y="{bottom + 20:.1f}" text-anchor="middle" font-size="14">{_label(v)}</text>' if labels else "")
            for v in ticks]


def _y_axis(ticks, py, left: float, right: float) -> list[str]:
    return [f'<line x1="{left}" x2="{right}" y1="{py(v):.2f}" y2="{py(v):.2f}" stroke="{COLORS["grid"]}"/>'
            f'<text x="{left - 6}" y="{py(v) + 5:.2f}" text-anchor="end" font-size="14">{_label(v)}</text>' for v in ticks]


def _y_title(text: str, top: float, bottom: float) -> str:
    return f'<text transform="translate(20,{(top + bottom) / 2:.1f}) rotate(-90)" text-anchor="middle">{escape(text)}</text>'


def _lines_panel(xs, values, lines, px, py, ticks, box, titles, legend_y: float, hover, under=()) -> list[str]:
    """A panel of lines (one per (run, name, colour) of `lines`): its axes and ticks (x, y), what
    lies under the lines (`under`), each line's points with their hover, the axis titles (x, y) and
    the legend below."""
    left, right, top, bottom = box
    parts = [*_x_axis(ticks[0], px, top, bottom, labels=True), *_y_axis(ticks[1], py, left, right), *under]
    for (_, name, color), ys in zip(lines, values):
        parts += _line_marks(xs, ys, px, py, name, color, lambda x, y, name=name: hover(name, x, y))
    parts.append(_y_title(titles[1], top, bottom))
    parts.append(f'<text x="{(left + right) / 2:.1f}" y="{bottom + 44:.1f}" text-anchor="middle">{titles[0]}</text>')
    return parts + _legend_below([(name, color) for _, name, color in lines], left, legend_y)


def router_chart(run, baseline, label: str) -> str:
    """Above, tokens per expert over the run, summed over 10-step windows (one palette PNG, expert
    0 on the bottom row, window i's column centred on step 10 (i + 1), as the Plotly image at
    x0=10, dx=10), its colour bar (a gradient from the fewest tokens to the most) at the right;
    below, the busiest GPU's tokens over the mean GPU's per WINDOW-step window for the reference
    router (`baseline`, red) and this one (blue), on the same step axis (5 .. steps + 5)."""
    left, right_m, top, bottom_m = ROUTER_MARGIN
    right, bottom = WIDTH - right_m, ROUTER_HEIGHT - bottom_m
    plot_h = bottom - top
    heat_top, heat_bottom = top + (1 - HEAT_DOMAIN[1]) * plot_h, top + (1 - HEAT_DOMAIN[0]) * plot_h
    line_top, line_bottom = top + (1 - LINE_DOMAIN[1]) * plot_h, top + (1 - LINE_DOMAIN[0]) * plot_h
    steps = run.setting.steps
    px = linear_scale(HEAT_WINDOW / 2, steps + HEAT_WINDOW / 2, left, right)
    z = run.window_loads(HEAT_WINDOW).T  # experts x windows
    experts = z.shape[0]
    low, high = int(z.min()), int(z.max())
    _, colors = heat_palette(low, high)
    image = palette_png(heat_codes(z, low, high)[::-1], colors)  # PNG rows top down: the last expert first
    ey = linear_scale(-0.5, experts - 0.5, heat_bottom, heat_top)
    x_ticks = nice_ticks(HEAT_WINDOW / 2, steps + HEAT_WINDOW / 2)
    parts = [f'<text x="{WIDTH / 2}" y="{0.02 * ROUTER_HEIGHT + 18:.1f}" text-anchor="middle" font-size="18">{escape(f"{label}: tokens per expert, and the busiest GPU")}</text>']
    parts.append(f'<image class="heatmap" x="{left}" y="{heat_top:.2f}" width="{right - left}" height="{heat_bottom - heat_top:.2f}" preserveAspectRatio="none" '
                 f'style="image-rendering:pixelated" href="{image}"><title>tokens per expert, {HEAT_WINDOW}-step windows: {low} to {high}</title></image>')
    parts += _y_axis(nice_ticks(0, experts - 1), ey, left, left)  # tick labels only over the image
    parts.append(_y_title("expert", heat_top, heat_bottom))
    # the colour bar: 0.6 of the plot high from its top, the fewest tokens at the bottom
    bar_x, bar_top, bar_bottom = right + 20, top, top + 0.6 * plot_h
    stops = "".join(f'<stop offset="{float(s):.4f}" stop-color="{c}"/>' for s, c in HEAT_COLORSCALE)
    by = linear_scale(low, high if high > low else low + 1, bar_bottom, bar_top)
    parts.append(f'<defs><linearGradient id="lab15-heat" x1="0" y1="1" x2="0" y2="0">{stops}</linearGradient></defs>'
                 f'<g class="colorbar" data-low="{low}" data-high="{high}"><text x="{bar_x}" y="{bar_top - 22}" font-size="14">tokens</text>'
                 f'<rect x="{bar_x}" y="{bar_top}" width="20" height="{bar_bottom - bar_top:.2f}" fill="url(#lab15-heat)"/>'
                 + "".join(f'<text x="{bar_x + 26}" y="{by(v) + 5:.2f}" font-size="14">{_label(v)}</text>'
                           for v in sorted({low, high, *nice_ticks(low, high, 4)})) + "</g>")
    lines = [(baseline, BASELINE_LABEL, COLORS["red"]), (run, label, COLORS["blue"])]
    xs = [WINDOW * (i + 1) for i in range(steps // WINDOW)]
    values = [r.busiest_gpu_over_mean(WINDOW).tolist() for r, _, _ in lines]
    lo, hi = padded([v for ys in values for v in ys])
    py = linear_scale(lo, hi, line_bottom, line_top)
    parts += _lines_panel(xs, values, lines, px, py, (x_ticks, nice_ticks(lo, hi, 4)), (left, right, line_top, line_bottom),
                          ("step (heatmap: 10-step windows; line: 50-step windows)", "busiest GPU / mean"), ROUTER_HEIGHT - 20,
                          lambda name, x, y: f"{name}, step {x:g}: {y:.3f}x")
    return svg_page(WIDTH, ROUTER_HEIGHT, f"{label}: tokens per expert, and the busiest GPU", parts, capped=False)


def drops_chart(run, baseline, label: str, capacity: float) -> str:
    """Share of token copies dropped over the run (%) at each capacity factor, for the reference
    router (red) and this one (blue), the chosen capacity as a green dotted line up the plot."""
    left, right_m, top, bottom_m = DROPS_MARGIN
    right, bottom = WIDTH - right_m, DROPS_HEIGHT - bottom_m
    lines = [(baseline, BASELINE_LABEL, COLORS["red"]), (run, label, COLORS["blue"])]
    values = [[100 * r.dropped_share(c, WINDOW) for c in CAPACITIES] for r, _, _ in lines]
    px = linear_scale(*padded([*CAPACITIES, capacity]), left, right)
    y_lo, y_hi = padded([v for ys in values for v in ys])
    py = linear_scale(y_lo, y_hi, bottom, top)
    parts = [(f'<text x="{WIDTH / 2}" y="{0.03 * DROPS_HEIGHT + 18:.1f}" text-anchor="middle" font-size="18">'
              f'dropped tokens by capacity factor (yours: {capacity:g})</text>')]
    capacity_line = (f'<line class="capacity" data-capacity="{capacity!r}" x1="{px(capacity):.2f}" x2="{px(capacity):.2f}" y1="{top}" y2="{bottom}" '
                     f'stroke="{COLORS["green"]}" stroke-width="2" stroke-dasharray="3,3"/>')
    parts += _lines_panel(CAPACITIES, values, lines, px, py, (nice_ticks(*padded([*CAPACITIES, capacity]), 6), nice_ticks(y_lo, y_hi, 4)),
                          (left, right, top, bottom), ("capacity factor", "% of token copies dropped"), DROPS_HEIGHT - 12,
                          lambda name, x, y: f"{name}, c = {x:g}: {y:.2f}% dropped", under=[capacity_line])
    return svg_page(WIDTH, DROPS_HEIGHT, f"dropped tokens by capacity factor (yours: {capacity:g})", parts, capped=False)
