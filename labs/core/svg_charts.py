"""Charts a slider redraws on every move, as plain SVG (mo.Html) instead of Plotly figures.

A Plotly redraw measures its legend, tick labels and annotations in the browser (forced layouts
of the page): Lab 06's memory wall and ZeRO sweep, redrawn on every activation move, cost the
page about 90 ms of main-thread CPU a move against 77 ms for the floor page's whole move (CDP
ThreadTime in Chromium, load 12-16). Drawn here they are markup the page only parses and lays
out. Same data, titles, log ticks (charts.LOG_TICKS), colours and legend; each point's value on
hover (an SVG <title>, as Lab 10's MTBF chart). No physics here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from labs.core.charts import LOG_TICKS, MEMORY_TERMS, STAGE_COLORS
from labs.core.engine.hardware import GB
from labs.core.engine.memory import MemoryBreakdown
from labs.core.style import COLORS, TERM_COLORS

WIDTH = 960  # px of the viewBox; the chart scales to the cell's width up to this
FONT = "Inter, Helvetica, Arial, sans-serif"


def text_px(text: str, size: float = 15) -> float:
    """About how wide `text` runs in the charts' sans-serif at `size` px (for laying out the
    legend: capitals and digits ~0.6 em, lower case ~0.45, spaces ~0.28)."""
    return size * sum(0.28 if c == " " else 0.6 if c.isupper() or c.isdigit() else 0.45 for c in text)


PAD = 0.05  # share of an axis's data span left free at each end (a marker's room, as Plotly's autorange)


def tick_step(span: float, target: int) -> float:
    """The step between about `target` ticks over `span`: 1, 2 or 5 times a power of 10."""
    raw = span / target
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(s * magnitude for s in (1, 2, 5, 10) if s * magnitude >= raw)


def nice_ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Tick values inside [lo, hi], about `target` of them (tick_step)."""
    step = tick_step(max(hi - lo, 1e-12), target)
    return [round(k * step, 12) for k in range(math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9) + 1)]


def padded(values: Sequence[float]) -> tuple[float, float]:
    """A linear axis's range: the data's, widened by PAD of its span at each end (a flat line by 1)."""
    lo, hi = float(min(values)), float(max(values))
    span = hi - lo if hi > lo else 1.0
    return lo - PAD * span, hi + PAD * span


def linear_scale(lo: float, hi: float, p0: float, p1: float):
    """The linear map of data [lo, hi] onto pixels [p0, p1]."""
    return lambda v: p0 + (v - lo) / (hi - lo) * (p1 - p0)


class LogAxis:
    """A log10 axis from `lo` to `hi` (data units) onto pixels `p0` (at lo) to `p1` (at hi),
    padded by `pad` of its span on each side."""

    def __init__(self, lo: float, hi: float, p0: float, p1: float, pad: float = PAD):
        if not (lo > 0 and hi > 0):
            raise ValueError(f"a log axis needs positive bounds, got {lo} and {hi}")
        a, b = math.log10(lo), math.log10(hi)
        if b <= a:
            a, b = a - 0.5, b + 0.5
        span = b - a
        self.a, self.b, self.p0, self.p1 = a - pad * span, b + pad * span, p0, p1

    def __call__(self, value: float) -> float:
        return self.p0 + (math.log10(value) - self.a) / (self.b - self.a) * (self.p1 - self.p0)

    def ticks(self) -> list[tuple[float, str]]:
        """charts.LOG_TICKS inside the axis's range: (value, label)."""
        return [(v, t) for v, t in zip(LOG_TICKS["tickvals"], LOG_TICKS["ticktext"]) if self.a <= math.log10(v) <= self.b]


def svg_page(width: int, height: int, label: str, parts: Sequence[str], capped: bool = True) -> str:
    """The <svg> around a chart's `parts`: a `width` x `height` viewBox that scales to the cell's
    width (up to `width` px when `capped`), the charts' font and ink, `label` for screen readers."""
    cap = f"max-width:{width}px;" if capped else ""
    return (f'<svg viewBox="0 0 {width} {height}" style="width:100%;{cap}height:auto;font-family:{FONT};font-size:15px;'
            f'fill:{COLORS["ink"]}" role="img" aria-label="{escape(label)}">{"".join(parts)}</svg>')


def _y_grid(axis: LogAxis, left: float, right: float) -> list[str]:
    return [f'<line x1="{left}" x2="{right}" y1="{axis(v):.1f}" y2="{axis(v):.1f}" stroke="{COLORS["grid"]}"/>'
            f'<text x="{left - 8}" y="{axis(v) + 5:.1f}" text-anchor="end">{t}</text>' for v, t in axis.ticks()]


def _titles(x_title: str, y_title: str, left: float, right: float, top: float, bottom: float, height: int) -> str:
    return (f'<text x="{(left + right) / 2:.1f}" y="{height - 12}" text-anchor="middle" font-size="17">{escape(x_title)}</text>'
            f'<text transform="translate(22,{(top + bottom) / 2:.1f}) rotate(-90)" text-anchor="middle" font-size="17">{escape(y_title)}</text>')


def _legend(items: Sequence[tuple[str, str]], left: float, top: float, right: float) -> list[str]:
    """Legend entries (name, mark drawn around (13, -5)) in rows above the plot, left to right."""
    rows: list[list[tuple[float, str, str]]] = [[]]
    x = left
    for name, mark in items:
        width = 48 + text_px(name)
        if rows[-1] and x + width > right:
            rows.append([])
            x = left
        rows[-1].append((x, name, mark))
        x += width
    parts = []
    for i, row in enumerate(rows):
        y = top - 14 - 22 * (len(rows) - 1 - i)
        parts += [f'<g transform="translate({x:.1f},{y})">{mark}<text x="32" y="0">{escape(name)}</text></g>' for x, name, mark in row]
    return parts


def _hbm(hbm: Sequence[tuple[str, float, bool]], axis: LogAxis, left: float, right: float) -> list[str]:
    """Each GPU's HBM (label, bytes, confirmed) as a red line across the plot, dashed when
    unconfirmed, its label staggered along the line from the right (as charts._hbm_marks)."""
    parts = []
    for i, (label, nbytes, confirmed) in enumerate(sorted(hbm, key=lambda item: item[1])):
        value, y = nbytes / GB, axis(nbytes / GB)
        text = f"{label} {value:.1f} GB" + ("" if confirmed else " (unconfirmed)")
        x = left + (1 - 0.3 * i) * (right - left)
        dash = "" if confirmed else ' stroke-dasharray="9,9"'
        parts.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="{COLORS["red"]}" stroke-width="2"{dash}/>'
                     f'<text x="{x:.1f}" y="{y - 5:.1f}" text-anchor="end" font-size="13" fill="{COLORS["red"]}" stroke="rgba(255,255,255,0.85)" '
                     f'stroke-width="4" paint-order="stroke">{escape(text)}</text>')
    return parts


def _swatch(color: str) -> str:
    return f'<rect x="4" y="-13" width="18" height="14" fill="{color}"/>'


def diamond(x: float, y: float, d: float, color: str) -> str:
    return f'<path d="M{x:.1f},{y - d:.1f}L{x + d:.1f},{y:.1f}L{x:.1f},{y + d:.1f}L{x - d:.1f},{y:.1f}Z" fill="{color}"/>'


# Left margins: the widest tick labels each chart can show and its axis title (the wall's
# '2,000,000' at micro-batch 8, 32,768 tokens, no recompute; the sweep's '500,000'), as the Plotly
# charts' automargin found them in Chromium (107 and 95 px); below, the x tick labels and title.
WALL_MARGIN, SWEEP_MARGIN = (110, 20, 60, 62), (100, 20, 60, 62)


def memory_wall(wall: dict[str, MemoryBreakdown], hbm: Sequence[tuple[str, float, bool]], margin: tuple[int, int, int, int] = WALL_MARGIN, height: int = 460) -> str:
    """charts.memory_wall as SVG: per model (plain data parallelism) a bar per memory term side
    by side and the total as a bar-wide line with its value above, on a log axis, with the HBM
    lines. `margin` is (left, right, top, bottom) px."""
    left, right_m, top, bottom_m = margin
    right, bottom = WIDTH - right_m, height - bottom_m
    names = list(wall)
    terms = {n: wall[n].as_dict() for n in names}
    values = [terms[n][t] / GB for n in names for t in MEMORY_TERMS if terms[n][t] > 0] + [wall[n].total / GB for n in names] + [b / GB for _, b, _ in hbm]
    axis = LogAxis(min(values), max(values), bottom, top, pad=0.06)
    group = (right - left) / max(len(names), 1)
    bar = 0.8 * group / len(MEMORY_TERMS)  # Plotly's grouped bars: 0.2 of a category left as a gap
    parts = _y_grid(axis, left, right)
    for i, name in enumerate(names):
        x0 = left + group * (i + 0.1)
        for j, (term, label) in enumerate(MEMORY_TERMS.items()):
            gb = terms[name][term] / GB
            if gb <= 0:
                continue
            y = max(axis(gb), top)
            parts.append(f'<rect x="{x0 + j * bar:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{max(bottom - y, 0):.1f}" fill="{TERM_COLORS[term]}">'
                         f'<title>{escape(name)}, {label}: {gb:,.1f} GB</title></rect>')
        cx, total = left + group * (i + 0.5), wall[name].total / GB
        parts.append(f'<line x1="{cx - 20:.1f}" x2="{cx + 20:.1f}" y1="{axis(total):.1f}" y2="{axis(total):.1f}" stroke="{COLORS["ink"]}" stroke-width="3"/>'
                     f'<text x="{cx:.1f}" y="{axis(total) - 8:.1f}" text-anchor="middle">total {total:,.0f} GB</text>'
                     f'<text x="{cx:.1f}" y="{bottom + 22}" text-anchor="middle">{escape(name)}</text>')
    parts += _hbm(hbm, axis, left, right)
    total_mark = f'<line x1="2" x2="24" y1="-6" y2="-6" stroke="{COLORS["ink"]}" stroke-width="3"/>'
    parts += _legend([*((label, _swatch(TERM_COLORS[term])) for term, label in MEMORY_TERMS.items()), ("total", total_mark)], left, top, right)
    parts.append(_titles("model, plain data parallelism", "GB per GPU (log)", left, right, top, bottom, height))
    return svg_page(WIDTH, height, "per-GPU memory of each model under plain data parallelism", parts)


def zero_sweep(dps: Sequence[int], curves: dict[int, Sequence[MemoryBreakdown]], hbm: Sequence[tuple[str, float, bool]], current: tuple[int, float] | None = None,
               margin: tuple[int, int, int, int] = SWEEP_MARGIN, height: int = 440) -> str:
    """charts.zero_sweep as SVG: per-GPU memory against data-parallel size (log-log), a line per
    ZeRO stage, the activations every stage keeps as a dotted line, the current setting as a
    diamond, the HBM lines. `margin` is (left, right, top, bottom) px."""
    left, right_m, top, bottom_m = margin
    right, bottom = WIDTH - right_m, height - bottom_m
    floor = next(iter(curves.values()))
    lines = {f"ZeRO-{stage}": ([p.total / GB for p in points], STAGE_COLORS[stage]) for stage, points in curves.items()}
    acts = [p.activations / GB for p in floor]
    values = [v for ys, _ in lines.values() for v in ys] + [v for v in acts if v > 0] + [b / GB for _, b, _ in hbm] + ([current[1] / GB] if current else [])
    x_axis = LogAxis(min(dps), max(dps), left, right, pad=0.03)
    y_axis = LogAxis(min(values), max(values), bottom, top, pad=0.06)
    parts = [f'<line x1="{x_axis(n):.1f}" x2="{x_axis(n):.1f}" y1="{top}" y2="{bottom}" stroke="{COLORS["grid"]}"/>'
             f'<text x="{x_axis(n):.1f}" y="{bottom + 22}" text-anchor="middle">{n:,}</text>' for n in dps]
    parts += _y_grid(y_axis, left, right)
    for name, (ys, color) in lines.items():
        points = " ".join(f"{x_axis(n):.1f},{y_axis(y):.1f}" for n, y in zip(dps, ys))
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="3" points="{points}"/>')
        parts += [f'<circle cx="{x_axis(n):.1f}" cy="{y_axis(y):.1f}" r="4" fill="{color}"><title>{name}, DP {n}: {y:,.1f} GB</title></circle>' for n, y in zip(dps, ys)]
    shown = [(n, a) for n, a in zip(dps, acts) if a > 0]
    parts.append(f'<polyline fill="none" stroke="{TERM_COLORS["activations"]}" stroke-width="2" stroke-dasharray="3,4" '
                 f'points="{" ".join(f"{x_axis(n):.1f},{y_axis(a):.1f}" for n, a in shown)}"/>')
    parts += [f'<circle cx="{x_axis(n):.1f}" cy="{y_axis(a):.1f}" r="5" fill="transparent"><title>activations (not sharded), DP {n}: {a:,.1f} GB</title></circle>'
              for n, a in shown]
    parts += _hbm(hbm, y_axis, left, right)
    items = [(name, f'<line x1="0" x2="26" y1="-5" y2="-5" stroke="{color}" stroke-width="3"/><circle cx="13" cy="-5" r="4" fill="{color}"/>') for name, (_, color) in lines.items()]
    items.append(("activations (not sharded)", f'<line x1="0" x2="26" y1="-5" y2="-5" stroke="{TERM_COLORS["activations"]}" stroke-width="2" stroke-dasharray="3,4"/>'))
    if current is not None:
        n, nbytes = current
        parts.append(f'<g class="your-setting">{diamond(x_axis(n), y_axis(nbytes / GB), 8, COLORS["ink"])}<title>your setting, DP {n}: {nbytes / GB:,.1f} GB</title></g>')
        items.append(("your setting", diamond(13, -5, 8, COLORS["ink"])))
    parts += _legend(items, left, top, right)
    parts.append(_titles("data-parallel GPUs", "GB per GPU (log)", left, right, top, bottom, height))
    return svg_page(WIDTH, height, "per-GPU memory against data-parallel GPUs, per ZeRO stage", parts)
