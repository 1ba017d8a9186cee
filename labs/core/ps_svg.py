"""Lab 08's parameter-server chart as plain SVG (mo.Html) instead of a Plotly figure.

A "Gradient per step" move redrew the Plotly figure (layout, legend and tick measuring in the
browser): the bench read the move at 1.6x the floor page's, with the kernel's run done at 43 ms.
Drawn here it is markup the page only parses and lays out. Same data as the Plotly chart
(exchange time in ms against workers N >= 2, log-log), the same colours (COLORS red for the
server, blue for the ring), legend entries, axis titles; the y ticks are charts.LOG_TICKS, the x
ticks each N drawn; each point's N and time on hover (an SVG <title>). No physics here.
"""

from __future__ import annotations

from html import escape

from labs.core.style import COLORS
from labs.core.svg_charts import WIDTH, LogAxis, svg_page, text_px

HEIGHT = 340
# left, right, top, bottom px: the y tick labels ('300,000' at 14 GB) and title on the left, the
# legend's row above the plot, the x tick labels and title below.
MARGIN = (100, 20, 50, 62)
X_TITLE, Y_TITLE = "workers N", "time per exchange (ms)"


def ps_lines(result: dict) -> list[tuple[str, str, list[tuple[int, float]]]]:
    """The chart's two lines from ps_vs_ring's result: (name, colour, [(N, ms)]) for N >= 2."""
    rows = [r for r in result["rows"] if r["n"] >= 2]
    return [(f"parameter server ({result['server']})", COLORS["red"], [(r["n"], r["ps_s"] * 1e3) for r in rows]),
            (f"ring ({result['worker']})", COLORS["blue"], [(r["n"], r["ring_s"] * 1e3) for r in rows])]


def _mark(color: str) -> str:
    return f'<line x1="0" x2="26" y1="-5" y2="-5" stroke="{color}" stroke-width="3"/><circle cx="13" cy="-5" r="4" fill="{color}"/>'


def ps_chart(result: dict) -> str:
    """Gradient-exchange time against workers: one parameter server against a ring, as SVG."""
    left, right_m, top, bottom_m = MARGIN
    right, bottom = WIDTH - right_m, HEIGHT - bottom_m
    lines = ps_lines(result)
    ns = [n for n, _ in lines[0][2]]
    values = [ms for _, _, points in lines for _, ms in points]
    x_axis = LogAxis(min(ns), max(ns), left, right, pad=0.03)
    y_axis = LogAxis(min(values), max(values), bottom, top, pad=0.06)
    parts = [f'<line x1="{x_axis(n):.1f}" x2="{x_axis(n):.1f}" y1="{top}" y2="{bottom}" stroke="{COLORS["grid"]}"/>'
             f'<text x="{x_axis(n):.1f}" y="{bottom + 22}" text-anchor="middle">{n:,}</text>' for n in ns]
    parts += [f'<line x1="{left}" x2="{right}" y1="{y_axis(v):.1f}" y2="{y_axis(v):.1f}" stroke="{COLORS["grid"]}"/>'
              f'<text x="{left - 8}" y="{y_axis(v) + 5:.1f}" text-anchor="end">{t}</text>' for v, t in y_axis.ticks()]
    for name, color, points in lines:
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="3" points="{" ".join(f"{x_axis(n):.1f},{y_axis(ms):.1f}" for n, ms in points)}"/>')
        parts += [f'<circle cx="{x_axis(n):.1f}" cy="{y_axis(ms):.1f}" r="4" fill="{color}"><title>{escape(name)}, N = {n:,}: {ms:,.3f} ms</title></circle>'
                  for n, ms in points]
    x = left
    for name, color, _ in lines:
        parts.append(f'<g class="legend" transform="translate({x:.1f},{top - 18})">{_mark(color)}<text x="32" y="0">{escape(name)}</text></g>')
        x += 48 + text_px(name)
    parts.append(f'<text x="{(left + right) / 2:.1f}" y="{HEIGHT - 12}" text-anchor="middle" font-size="17">{X_TITLE}</text>'
                 f'<text transform="translate(22,{(top + bottom) / 2:.1f}) rotate(-90)" text-anchor="middle" font-size="17">{escape(Y_TITLE)}</text>')
    return svg_page(WIDTH, HEIGHT, "time per gradient exchange against workers: one parameter server against a ring", parts)
