"""Lab 11's context-parallel chart as plain SVG (mo.Html), not a Plotly figure: step time against
sequence length, a line per CP algorithm (the Plotly figure it replaces was the notebook's
cp_figure). Every CP-degree or KV-heads move redrew it, and the bench read that move at 1.43-1.70x
the floor page with the run done at 60-115 ms: the rest was the page redrawing the Plotly figure
(svg_charts' note). Same data, colours, title, axis titles, ticks and legend, the points where the
busiest GPU overflows its HBM drawn as crosses, the algorithms the engine refuses named in red; each
point's step time on hover (an SVG <title>). No physics: every number is a cp_point's.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from labs.core.style import COLORS
from labs.core.svg_charts import PAD, WIDTH, LogAxis, svg_page, text_px

ALGORITHM_COLORS = {"ring": COLORS["blue"], "all_gather": COLORS["green"], "ulysses": COLORS["purple"], "ring_contiguous": COLORS["orange"]}
DOTTED = {"all_gather"}  # drawn dotted, as the figure's all-gather line
# 960 x 420 px (the figure's height); margins left, right, top (the title and the refusal note),
# bottom (the x ticks, the x title and the legend below).
HEIGHT, MARGIN = 420, (70, 20, 80, 120)


def cross(x: float, y: float, d: float, color: str) -> str:
    return f'<path d="M{x - d:.2f},{y - d:.2f}L{x + d:.2f},{y + d:.2f}M{x - d:.2f},{y + d:.2f}L{x + d:.2f},{y - d:.2f}" stroke="{color}" stroke-width="3"/>'


def seq_label(seq_len: int) -> str:
    return f"{seq_len // 1024}K"


def _legend(items: Sequence[tuple[str, str]], left: float, right: float, y: float) -> list[str]:
    """Legend entries (name, mark drawn around (13, -5)) in rows from (left, y) down."""
    parts, x = [], left
    for name, mark in items:
        width = 56 + text_px(name)
        if x > left and x + width > right:
            x, y = left, y + 24
        parts.append(f'<g class="legend" transform="translate({x:.1f},{y:.1f})">{mark}<text x="32" y="0">{escape(name)}</text></g>')
        x += width
    return parts


def cp_chart(points: Sequence[dict], cp: int, kv_heads: int, algorithms: Sequence[str], labels: dict[str, str], seq_choices: Sequence[int]) -> str:
    """Step time (s, log) against sequence length (log, ticks at `seq_choices` as 32K ...) for each
    of `algorithms` (named by `labels`) from the cp_point dicts `points`; a point over HBM drawn
    as a cross, the algorithms with no point the engine prices named in red above the plot."""
    if not points:
        raise ValueError("points: no CP point to draw")
    left, right_m, top, bottom_m = MARGIN
    right, bottom = WIDTH - right_m, HEIGHT - bottom_m
    lines, refused = [], []
    for alg in algorithms:
        ok = [p for p in points if p["algorithm"] == alg and p["error"] is None]
        if ok:
            lines.append((alg, ok))
        else:
            refused.append(labels[alg])
    priced = [p for _, ok in lines for p in ok]
    seqs = [p["seq_len"] for p in (priced or points)]
    px = LogAxis(min(seqs), max(seqs), left, right, pad=PAD)
    steps = [p["step"] for p in priced] or [1.0]
    py = LogAxis(min(steps), max(steps), bottom, top, pad=PAD)
    parts = [f'<line x1="{px(s):.2f}" x2="{px(s):.2f}" y1="{top}" y2="{bottom}" stroke="{COLORS["grid"]}"/>'
             f'<text x="{px(s):.2f}" y="{bottom + 22}" text-anchor="middle">{seq_label(s)}</text>' for s in seq_choices if min(seqs) <= s <= max(seqs)]
    if priced:
        parts += [f'<line x1="{left}" x2="{right}" y1="{py(v):.2f}" y2="{py(v):.2f}" stroke="{COLORS["grid"]}"/>'
                  f'<text x="{left - 8}" y="{py(v) + 5:.2f}" text-anchor="end">{t}</text>' for v, t in py.ticks()]
    items = []
    for alg, ok in lines:
        color, label = ALGORITHM_COLORS[alg], labels[alg]
        dash = ' stroke-dasharray="3,4"' if alg in DOTTED else ""
        coords = " ".join(f"{px(p['seq_len']):.2f},{py(p['step']):.2f}" for p in ok)
        marks = []
        for p in ok:
            x, y = px(p["seq_len"]), py(p["step"])
            mark = f'<circle cx="{x:.2f}" cy="{y:.2f}" r="5" fill="{color}"/>' if p["fits"] else cross(x, y, 6, color)
            over = "" if p["fits"] else "; over HBM on the busiest GPU"
            marks.append(f'<g class="point" data-seq="{p["seq_len"]}" data-step="{p["step"]!r}" data-fits="{str(p["fits"]).lower()}">{mark}'
                         f'<title>{escape(label)}: {seq_label(p["seq_len"])} tokens, {p["step"]:.2f} s per step{over}</title></g>')
        parts.append(f'<g class="line" data-algorithm="{alg}" data-name="{escape(label)}">'
                     f'<polyline fill="none" stroke="{color}" stroke-width="3"{dash} points="{coords}"/>{"".join(marks)}</g>')
        items.append((label, f'<line x1="0" x2="26" y1="-5" y2="-5" stroke="{color}" stroke-width="3"{dash}/><circle cx="13" cy="-5" r="5" fill="{color}"/>'))
    items.append(("over HBM (busiest GPU)", cross(13, -5, 6, COLORS["ink"])))
    title = f"CP {cp}, {kv_heads} KV heads: step time (x: over HBM)"
    parts.append(f'<text class="chart-title" x="{left}" y="{top - 48}" font-size="21">{escape(title)}</text>')
    if refused:
        parts.append(f'<text class="refused" x="{left}" y="{top - 12}" fill="{COLORS["red"]}">refused by the engine at CP {cp}: {escape(", ".join(refused))}</text>')
    parts += _legend(items, left, right, bottom + 82)
    parts.append(f'<text x="{(left + right) / 2:.1f}" y="{bottom + 50}" text-anchor="middle" font-size="17">sequence length (tokens)</text>'
                 f'<text transform="translate(22,{(top + bottom) / 2:.1f}) rotate(-90)" text-anchor="middle" font-size="17">step time (s)</text>')
    return svg_page(WIDTH, HEIGHT, title, parts)
