"""Lab 06's section 3 chart as plain SVG (mo.Html), not a Plotly figure: the step time of each
ZeRO stage, a bar per placement (charts.stage_step_times drew it with Plotly). Once both
predictions are in, every activation move, the model menu and the accumulation slider redraw it;
a Plotly redraw measures its legend and tick labels in the browser (labs.core.svg_charts' note).
Same bars, colours, axis title and legend, a fixed size; each bar's step time, exposed ZeRO/DP
communication and bytes sent per GPU on hover (an SVG <title>), as the figure's hover showed them.
No physics: every number is an Estimate's.
"""

from __future__ import annotations

from html import escape

from labs.core.engine.hardware import GB
from labs.core.engine.perf import Estimate
from labs.core.style import COLORS
from labs.core.svg_charts import (
    PAD,
    WIDTH,
    _legend,
    _swatch,
    linear_scale,
    nice_ticks,
    svg_page,
)

PLACEMENT_COLORS = (COLORS["blue"], COLORS["red"])  # charts.stage_step_times': the first placement blue, the second red
# 960 x 360 px (the figure's height); margins left, right, top (the legend), bottom (the stage names).
HEIGHT, MARGIN = 360, (80, 20, 50, 45)
GROUP_GAP, BAR_GAP = 0.2, 0.1  # Plotly's grouped bars: a fifth of a category between groups, a tenth of a bar between bars


def stage_step_chart(costs: dict[str, dict[int, Estimate]]) -> str:
    """Seconds per step under each ZeRO stage (a group per stage), a bar per placement
    (`costs`: placement name -> {stage: Estimate}, the stages the same for each)."""
    if not costs or not all(costs.values()):
        raise ValueError("costs: no estimate to draw")
    stages = list(next(iter(costs.values())))
    if any(list(ests) != stages for ests in costs.values()):
        raise ValueError(f"costs: every placement must price the same stages, got {[list(e) for e in costs.values()]}")
    left, right_m, top, bottom_m = MARGIN
    right, bottom = WIDTH - right_m, HEIGHT - bottom_m
    hi = max(e.step_time_s for ests in costs.values() for e in ests.values()) * (1 + PAD) or 1.0  # bars from zero
    py = linear_scale(0.0, hi, bottom, top)
    parts = [f'<line x1="{left}" x2="{right}" y1="{py(v):.2f}" y2="{py(v):.2f}" stroke="{COLORS["grid"]}"/>'
             f'<text x="{left - 8}" y="{py(v) + 5:.2f}" text-anchor="end">{v:g}</text>' for v in nice_ticks(0.0, hi)]
    group = (right - left) / len(stages)
    bar = group * (1 - GROUP_GAP) / len(costs)
    for i, stage in enumerate(stages):
        parts.append(f'<text x="{left + group * (i + 0.5):.2f}" y="{bottom + 22}" text-anchor="middle">ZeRO-{stage}</text>')
        for j, ((placement, ests), color) in enumerate(zip(costs.items(), PLACEMENT_COLORS)):
            e = ests[stage]
            x, y = left + group * (i + GROUP_GAP / 2) + bar * (j + BAR_GAP / 2), py(e.step_time_s)
            parts.append(f'<rect x="{x:.2f}" y="{y:.2f}" width="{bar * (1 - BAR_GAP):.2f}" height="{bottom - y:.2f}" fill="{color}" '
                         f'data-placement="{escape(placement)}" data-stage="{stage}" data-seconds="{e.step_time_s!r}">'
                         f'<title>{escape(placement)}, ZeRO-{stage}: {e.step_time_s:.2f} s per step; exposed ZeRO/DP comm {e.time.dp_comm:.2f} s; '
                         f'{e.comm_bytes_per_gpu["dp"] / GB:.1f} GB sent per GPU</title></rect>')
    parts += _legend([(name, _swatch(color)) for name, color in zip(costs, PLACEMENT_COLORS)], left, top, right)
    parts.append(f'<text transform="translate(22,{(top + bottom) / 2:.1f}) rotate(-90)" text-anchor="middle" font-size="17">seconds per step</text>')
    return svg_page(WIDTH, HEIGHT, "step time per ZeRO stage, in one server and spread over 8 servers", parts)
