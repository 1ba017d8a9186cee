"""Lab 10's charts a slider redraws, as plain SVG/HTML text for the notebook to wrap in mo.Html:
the job's MTBF against GPUs, goodput and the wall-time shares against the checkpoint interval,
and the simulated runs' goodput histogram. A Plotly redraw of the MTBF chart cost the page more
main-thread CPU than the floor page's whole move (80 against 76 ms, Chromium, load 15-20), and
Plotly's redraw of the cadence chart (its text measured on each draw) was the largest part of a
move's main-thread time after marimo's own. Values come from engine.reliability; no physics here.
"""

from __future__ import annotations

import numpy as np

from labs.core.charts import LOG_TICKS
from labs.core.engine.reliability import (
    DAY,
    HOUR,
    LLAMA3_GPUS,
    LLAMA3_UNEXPECTED,
    LLAMA3_WINDOW_S,
    MINUTE,
    job_mtbf_s,
)
from labs.core.style import COLORS
from labs.core.svg_charts import LogAxis, diamond, svg_page


def mtbf_svg(gpus: int) -> str:
    """The job's MTBF (hours) against GPUs, log-log, with Llama 3's point and the current N: plain
    SVG, not a Plotly figure (as goodput_histogram). It is redrawn on every GPU move only to move
    the "your job" marker, and a Plotly redraw of it cost the page more main-thread CPU than the
    floor page's whole move (80 against 76 ms, Chromium, load 15-20). Hover a point for its value."""
    n = [2**k for k in range(3, 18)]  # whole GPU counts: rounding a geometric grid kinked the line below 10 GPUs
    llama = (LLAMA3_GPUS, LLAMA3_WINDOW_S / LLAMA3_UNEXPECTED / HOUR)
    you = (gpus, job_mtbf_s(gpus) / HOUR)
    line = [(x, job_mtbf_s(x) / HOUR) for x in n]
    w, h, (l, r, t, b) = 860, 340, (86, 20, 50, 59)  # Plotly's margins for this chart (automargin's, read in Chromium)
    xs, ys = [x for x, _ in line] + [llama[0], gpus], [y for _, y in line] + [llama[1], you[1]]

    px = LogAxis(min(xs), max(xs), l, w - r, pad=0.0)  # Plotly's autorange: the line's ends on x
    py = LogAxis(min(ys), max(ys), h - b, t, pad=0.04)
    parts = []
    x_ticks, y_ticks = dict(px.ticks()), dict(py.ticks())
    for v, label in zip(LOG_TICKS["tickvals"], LOG_TICKS["ticktext"]):  # each value's x tick, then its y tick
        if v in x_ticks:
            parts.append(f'<line x1="{px(v):.1f}" x2="{px(v):.1f}" y1="{t}" y2="{h - b}" stroke="{COLORS["grid"]}"/>'
                         f'<text x="{px(v):.1f}" y="{h - b + 20}" text-anchor="middle" font-size="14">{label}</text>')
        if v in y_ticks:
            parts.append(f'<line x1="{l}" x2="{w - r}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="{COLORS["grid"]}"/>'
                         f'<text x="{l - 6}" y="{py(v) + 5:.1f}" text-anchor="end" font-size="14">{label}</text>')
    parts.append(f'<polyline fill="none" stroke="{COLORS["blue"]}" stroke-width="3" points="{" ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in line)}"/>')
    parts += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="7" fill="transparent"><title>{x:,} GPUs: {y:,.2f} h</title></circle>' for x, y in line]
    cross = lambda x, y, d: (f'<path d="M{x - d:.1f},{y - d:.1f}L{x + d:.1f},{y + d:.1f}M{x - d:.1f},{y + d:.1f}L{x + d:.1f},{y - d:.1f}" '
                              f'stroke="{COLORS["orange"]}" stroke-width="3"/>')
    parts.append(f'<g>{cross(px(llama[0]), py(llama[1]), 6)}<title>Llama 3: {llama[0]:,} GPUs, {llama[1]:,.2f} h</title></g>')
    parts.append(f'<g class="your-job">{diamond(px(you[0]), py(you[1]), 8, COLORS["red"])}<title>your job: {you[0]:,} GPUs, {you[1]:,.2f} h</title></g>')
    legend = [("job MTBF = GPU MTBF / N", f'<line x1="0" x2="26" y1="-5" y2="-5" stroke="{COLORS["blue"]}" stroke-width="3"/>'),
               (f"Llama 3: {LLAMA3_WINDOW_S / DAY:.0f} days / {LLAMA3_UNEXPECTED}", cross(13, -5, 6)), ("your job", diamond(13, -5, 8, COLORS["red"]))]
    lx = l
    for name, mark in legend:
        parts.append(f'<g transform="translate({lx},{t - 16})">{mark}<text x="32" y="0">{name}</text></g>')
        lx += 60 + 8.0 * len(name)
    parts.append(f'<text x="{(l + w - r) / 2}" y="{h - 12}" text-anchor="middle">GPUs in the job</text>'
                  f'<text transform="translate(20,{(t + h - b) / 2}) rotate(-90)" text-anchor="middle">hours between unexpected stops</text>')
    return svg_page(w, h, "job MTBF against GPUs", parts)


def cadence_svg(view: dict) -> str:
    """Goodput and the wall-time shares against the checkpoint interval, with the optima: plain
    SVG, not a Plotly figure (as mtbf_figure). Every GPU, checkpoint, restart and interval move
    redraws it, and Plotly's redraw (its text measured on each draw) was the largest part of a
    move's main-thread time in Chromium after marimo's own. Hover the goodput line for the four
    shares at an interval (every other point of the curve); the marker carries its interval and
    goodput as data."""
    curve = view["curve"]
    x = curve["interval_s"] / MINUTE
    series = (("goodput", curve["goodput"], COLORS["blue"], 3, ""), ("work lost and redone", curve["lost"], COLORS["red"], 2, ""),
              ("checkpoint stalls", curve["checkpoint"], COLORS["green"], 2, ""), ("restarts", curve["restart"], COLORS["purple"], 2, "3,3"))
    tau_min, you = view["tau"] / MINUTE, 100 * view["goodput"]
    optima = (("Young √(2CM)", view["young"] / MINUTE, "3,3", 1.0), ("Daly", view["daly"] / MINUTE, "9,9", 0.92))
    w, h, (l, r, t, b) = 860, 380, (66, 20, 50, 59)  # Plotly's size and margins for this chart (automargin's at every setting)
    spanned = (x.min(), x.max(), tau_min, *(v for _, v, _, _ in optima))  # the line, the marker and the optima (Plotly's autorange)
    px = LogAxis(min(spanned), max(spanned), l, w - r, pad=0.0)
    py = lambda pct: h - b - pct / 100 * (h - t - b)
    parts = []
    for v in (0.1, 0.3, 1, 3, 10, 30, 60, 180, 600, 1440):
        if px.a <= np.log10(v) <= px.b:
            parts.append(f'<line x1="{px(v):.1f}" x2="{px(v):.1f}" y1="{t}" y2="{h - b}" stroke="{COLORS["grid"]}"/>'
                          f'<text x="{px(v):.1f}" y="{h - b + 20}" text-anchor="middle" font-size="14">{v:g}</text>')
    for v in range(0, 101, 20):
        parts.append(f'<line x1="{l}" x2="{w - r}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="{COLORS["grid"]}"/>'
                      f'<text x="{l - 6}" y="{py(v) + 5:.1f}" text-anchor="end" font-size="14">{v}</text>')
    for label, v, dash, y in optima:
        yt = t + (1 - y) * (h - t - b)
        parts.append(f'<line x1="{px(v):.1f}" x2="{px(v):.1f}" y1="{t}" y2="{h - b}" stroke="{COLORS["muted"]}" stroke-width="2" stroke-dasharray="{dash}"/>'
                      f'<text x="{px(v) + 3:.1f}" y="{yt + 15:.1f}">{label}</text>')
    for name, share, color, width, dash in series:
        pts = " ".join(f"{px(a):.1f},{py(100 * c):.1f}" for a, c in zip(x, share))
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="{width}" stroke-dasharray="{dash or "none"}" points="{pts}"/>')
    parts += [f'<circle cx="{px(a):.1f}" cy="{py(100 * g):.1f}" r="6" fill="transparent"><title>{a:.3g} min: goodput {100 * g:.1f}%, '
               f'lost {100 * lo:.1f}%, stalls {100 * c:.1f}%, restarts {100 * re:.1f}%</title></circle>'  # every other point: 10 a decade
               for a, g, lo, c, re in list(zip(x, curve["goodput"], curve["lost"], curve["checkpoint"], curve["restart"]))[::2]]
    parts.append(f'<g class="your-interval" data-minutes="{tau_min!r}" data-goodput="{you!r}">{diamond(px(tau_min), py(you), 9, COLORS["red"])}'
                  f'<title>your interval: every {tau_min:g} min, goodput {you:.2f}%</title></g>')
    lx = l
    for name, _, color, width, dash in series:
        parts.append(f'<g transform="translate({lx},{t - 16})"><line x1="0" x2="30" y1="-5" y2="-5" stroke="{color}" stroke-width="{width}" '
                      f'stroke-dasharray="{dash or "none"}"/><text x="36" y="0">{name}</text></g>')
        lx += 50 + 8.0 * len(name)
    parts.append(f'<g transform="translate({lx},{t - 16})">{diamond(15, -5, 8, COLORS["red"])}<text x="36" y="0">your interval</text></g>')
    parts.append(f'<text x="{(l + w - r) / 2}" y="{h - 12}" text-anchor="middle">checkpoint interval (minutes of training)</text>'
                  f'<text transform="translate(20,{(t + h - b) / 2}) rotate(-90)" text-anchor="middle">% of wall time</text>')
    return svg_page(w, h, "goodput and wall-time shares against the checkpoint interval", parts)


def goodput_histogram_html(values, closed_form: float, bins: int = 40) -> str:
    """Simulated runs' goodput in `bins` equal bins, with the closed form as a line. Plain HTML,
    not a second Plotly figure: it is redrawn on every interval move beside the cadence chart,
    and each Plotly redraw costs this CPU about as much as a whole move of a one-chart page."""
    pct = 100 * np.asarray(values, dtype=float)
    lo, hi = min(pct.min(), 100 * closed_form), max(pct.max(), 100 * closed_form)
    counts, edges = np.histogram(pct, bins=bins, range=(lo, hi) if hi > lo else (lo - 0.5, hi + 0.5))
    top = max(int(counts.max()), 1)
    left = 100 * (100 * closed_form - edges[0]) / (edges[-1] - edges[0])
    bars = "".join(
        f'<div title="{a:.2f}% to {b:.2f}%: {n} runs" style="flex:1;align-self:flex-end;height:{100 * n / top:.2f}%;'
        f'background:{COLORS["sky"]};margin-right:1px"></div>'
        for a, b, n in zip(edges[:-1], edges[1:], counts)
    )
    line = (f'<div title="closed form {100 * closed_form:.2f}%" style="position:absolute;top:0;bottom:0;left:{left:.2f}%;border-left:3px solid {COLORS["red"]}">'
             '<span style="position:absolute;top:0;left:4px;white-space:nowrap">closed form</span></div>')
    ticks = "".join(f'<span style="position:absolute;left:{100 * k / 4:.0f}%;transform:translateX(-50%)">{edges[0] + k * (edges[-1] - edges[0]) / 4:.1f}</span>' for k in range(5))
    return (
        '<div style="font-size:0.85rem;color:#3e4c59;margin:0.6rem 0 0.8rem 2.5rem;position:relative">'
        f'<div style="position:absolute;left:-2.5rem;top:0">{top}</div><div style="position:absolute;left:-2.5rem;top:45%">runs</div>'
        f'<div style="position:relative;display:flex;height:220px;border-left:1px solid #9aa5b1;border-bottom:1px solid #9aa5b1">{bars}{line}</div>'
        f'<div style="position:relative;height:1.3rem">{ticks}</div>'
        '<div style="text-align:center">goodput of one run (%)</div></div>'
    )
