"""Plotly figure builders: engine results in, go.Figure out. No physics here."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sequential

from labs.core.engine.hardware import GB
from labs.core.engine.memory import MemoryBreakdown
from labs.core.engine.perf import Estimate
from labs.core.engine.pipeline import Timeline
from labs.core.style import COLORS, TERM_COLORS, apply_plotly_theme

# Log axes labelled 1, 2, 5, 10, 20, 50, ...: Plotly's default labels every minor tick, which
# crowds a decade into an unreadable column of digits.
_LOG_VALUES = [m * 10.0**k for k in range(-3, 7) for m in (1, 2, 5)]
LOG_TICKS = dict(tickvals=_LOG_VALUES, ticktext=[f"{v:,.0f}" if v >= 1 else f"{v:g}" for v in _LOG_VALUES])


def figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from plain trace and layout dicts, as Plotly.js reads them, without Plotly's
    property-by-property validation: add_scatter, add_bar and update_layout cost 20-100 ms of
    Python a chart (most of a slider move's), this under 1 ms. The JSON the page receives is
    the same as the validated build's (each chart built here was compared with it), so give
    every title as dict(text=...), never a bare string or a magic underscore name. The lab
    theme is the default template, applied here as for any figure; dragmode "zoom" is what
    marimo's formatter sets on a figure without one (with a validated update_layout, ~10 ms)."""
    return go.Figure(dict(data=data, layout={"dragmode": "zoom", **layout}), _validate=False)


def hline_shape(y: float, line: dict) -> dict:
    """A line across the plot at data y: the shape Plotly's add_hline draws, without add_hline's
    walk over every trace and subplot first (5-15 ms a call, most of a slider move's Python)."""
    return dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=y, y1=y, line=line)


def vline_shape(x: float, line: dict) -> dict:
    """A line up the plot at data x (see hline_shape)."""
    return dict(type="line", yref="y domain", y0=0, y1=1, xref="x", x0=x, x1=x, line=line)


def hline(fig: go.Figure, y: float, line: dict) -> None:
    fig.add_shape(**hline_shape(y, line))


def vline(fig: go.Figure, x: float, line: dict) -> None:
    fig.add_shape(**vline_shape(x, line))


OP_COLORS = {"F": COLORS["blue"], "B": COLORS["orange"], "W": COLORS["green"]}
OP_NAMES = {"F": "forward", "B": "backward", "W": "weight grad"}
BAR_OPS = 512  # up to this many ops a timeline is one bar per op; above, filled paths (_timeline_boxes)
RASTER_OPS = 2000  # above this many ops a timeline is drawn as one raster (one SVG shape per op is ~0.1-0.4 ms in Chromium)
RASTER_MAX_BINS = 4096  # time bins of the raster at most: finer than any plot is wide
IDLE_COLOR = COLORS["surface"]


def timeline_raster(t: Timeline, bins: int | None = None) -> tuple[np.ndarray, float]:
    """The timeline as a stage x time-bin grid of codes (0 idle, 1 F, 2 B, 3 W) and the bin
    width. By default two bins to the shortest op (at most RASTER_MAX_BINS). Each bin takes
    what fills most of it, by time covered, so an op shorter than a bin is not dropped and idle
    shows only where a stage is idle for most of a bin (the first of idle, F, B, W on a tie)."""
    if bins is None:
        shortest = float((t.end - t.start).min())
        bins = int(min(RASTER_MAX_BINS, max(64, np.ceil(2 * t.makespan / shortest))))
    width = t.makespan / bins
    span = 2 * t.makespan + 1  # one stage's times never reach the next stage's offset
    edges = (np.arange(t.p)[:, None] * span + np.linspace(0.0, t.makespan, bins + 1)[None, :]).ravel()  # rising: stage by stage
    cover = []
    for op in ("F", "B", "W"):
        sel = t.op == op
        if not sel.any():
            cover.append(np.zeros((t.p, bins)))
            continue
        stage = t.stage[sel]
        start = stage * span + t.start[sel]
        # The ops by start: a stage's rows come in its order, so sorting by stage alone (a radix
        # sort) is the sort by start, unless rows were given otherwise.
        order = np.argsort(stage.astype(np.int16) if t.p < 1 << 15 else stage, kind="stable")
        if not (np.diff(start[order]) >= 0).all():
            order = np.argsort(start, kind="stable")
        start, dur = start[order], (t.end[sel] - t.start[sel])[order]
        done = np.r_[0.0, np.cumsum(dur)]
        # The last op starting at or before each edge: the ops' starts placed among the edges
        # (fewer searches than the edges among the starts), counted up to each edge.
        i = np.cumsum(np.bincount(np.searchsorted(edges, start, side="left"), minlength=len(edges) + 1)[:len(edges)]) - 1
        at = np.maximum(i, 0)
        # time covered by this kind of op from the first stage's 0 up to each edge
        covered = edges - start[at]
        np.minimum(covered, dur[at], out=covered)
        covered = done[at] + covered
        covered[i < 0] = 0.0
        cover.append(np.diff(covered.reshape(t.p, bins + 1), axis=1))
    idle = np.full((t.p, bins), width) - cover[0] - cover[1] - cover[2]
    code, most = np.zeros((t.p, bins), dtype=np.uint8), idle
    for kind, c in enumerate(cover, start=1):  # the first largest, as argmax over (idle, F, B, W)
        code[c > most] = kind
        most = np.maximum(most, c)
    return code, width


def _axes(row: int) -> dict:
    """The x and y axes of a subplot row (1: the figure's first axes)."""
    return dict(xaxis="x" if row == 1 else f"x{row}", yaxis="y" if row == 1 else f"y{row}")


def _legend(op: str, shown: set | None) -> dict:
    """Legend entry for an op kind once per figure: stacked timelines share one legend (each
    kind a legend group, so a click hides it in every timeline)."""
    if shown is None:
        return {}
    first = op not in shown
    shown.add(op)
    return dict(legendgroup=op, showlegend=first)


def _timeline_bars(t: Timeline, row: int = 1, shown: set | None = None) -> list[dict]:
    """One bar per op, coloured by kind and shaded by micro-batch, hover naming its micro-batch and
    chunk (trace dicts): up to BAR_OPS ops, where a browser draws them as fast as filled paths."""
    shade = 0.45 + 0.55 * (1 - t.microbatch / max(1, t.m - 1))
    traces = []
    for op in ("F", "B", "W"):
        sel = t.op == op
        if not sel.any():
            continue
        traces.append(dict(
            type="bar", y=t.stage[sel], x=t.end[sel] - t.start[sel], base=t.start[sel].tolist(), orientation="h", name=OP_NAMES[op],  # a list: Plotly sends `base` as one
            marker=dict(color=OP_COLORS[op], opacity=shade[sel], line=dict(width=0.5, color="white")),
            customdata=np.stack([t.microbatch[sel], t.chunk[sel]], axis=1),
            hovertemplate="micro-batch %{customdata[0]}, chunk %{customdata[1]}<extra></extra>", **_axes(row), **_legend(op, shown),
        ))
    return traces


BOX_SHADES = 8  # micro-batch shades of a timeline's boxes at most: one trace per op kind and shade
BOX_HALF_HEIGHT = 0.4  # a stage row's box spans stage +- this (Plotly's horizontal bars: 0.8 of a row)


def box_gap(t: Timeline) -> float:
    """How far each box is drawn inside its op's start and end: about half a pixel of a plot
    1,000 px wide, the white edge a bar had (a tenth of the shortest op at most)."""
    return min(t.makespan / 2000, float((t.end - t.start).min()) / 10)


def box_outlines(start: np.ndarray, end: np.ndarray, row: np.ndarray, gap: float = 0.0) -> tuple[list, list]:
    """x and y of one closed rectangle per op (start + gap .. end - gap, row +- BOX_HALF_HEIGHT),
    each ended by a None: a scatter trace filled 'toself' draws them all as one SVG path."""
    lo, hi, x0, x1 = row - BOX_HALF_HEIGHT, row + BOX_HALF_HEIGHT, start + gap, end - gap
    x = np.stack([x0, x1, x1, x0, x0], axis=1).tolist()
    y = np.stack([lo, lo, hi, hi, lo], axis=1).tolist()
    return [v for box in x for v in (*box, None)], [v for box in y for v in (*box, None)]


def box_shade(t: Timeline) -> np.ndarray:
    """Each op's shade level, 0 (the first micro-batches, full colour) .. BOX_SHADES - 1."""
    return (t.microbatch * min(BOX_SHADES, t.m) // max(1, t.m)).astype(int)


def _timeline_boxes(t: Timeline, row: int = 1, shown: set | None = None) -> list[dict]:
    """One box per op, coloured by kind and shaded by micro-batch (trace dicts): the boxes of a
    kind and shade are one scatter trace filled 'toself' (one SVG path, no outline), where one
    bar per op was an SVG element each. Lab 07's figure in Chromium (Plotly.react to two frames,
    bars and boxes alternated, median of 14, load 7 on 2 cores): ZB-H1 + ZB-H2 at p = 16, m = 32
    (3,072 ops) 280 against 501 ms; 1F1B + interleaved at p = 16, m = 16 211 against 275;
    1F1B at p = 64, m = 8 119 against 141; at p = 8, m = 8 (384 ops) 115 against 103, so up to
    BAR_OPS ops bars stay, with their hover. Hover names the op kind."""
    shown = set() if shown is None else shown
    gap, shade, levels, traces = box_gap(t), box_shade(t), min(BOX_SHADES, t.m), []
    for op in ("F", "B", "W"):
        for level in range(levels):
            sel = (t.op == op) & (shade == level)
            if not sel.any():
                continue
            x, y = box_outlines(t.start[sel], t.end[sel], t.stage[sel], gap)
            traces.append(dict(
                type="scatter", x=x, y=y, mode="none", fill="toself", fillcolor=OP_COLORS[op], hoveron="fills", hoverinfo="name",
                opacity=0.45 + 0.55 * (1 - level / max(1, levels - 1)), name=OP_NAMES[op], **_axes(row), **_legend(op, shown),
            ))
    return traces


def _timeline_heatmap(t: Timeline, row: int = 1, shown: set | None = None) -> list[dict]:
    """The raster as one heatmap trace, with legend entries for the op kinds (trace dicts)."""
    z, width = timeline_raster(t)
    colors = [IDLE_COLOR, OP_COLORS["F"], OP_COLORS["B"], OP_COLORS["W"]]
    scale = [[edge, c] for k, c in enumerate(colors) for edge in (k / 4, (k + 1) / 4)]
    traces = [dict(type="heatmap", z=z, x0=width / 2, dx=width, y0=0, dy=1, zmin=-0.5, zmax=3.5, colorscale=scale, showscale=False,
                   zsmooth=False, hovertemplate="stage %{y}, time %{x:.1f}<extra></extra>", name="ops", **_axes(row))]
    for op in ("F", "B", "W"):
        if (t.op == op).any():
            traces.append(dict(type="scatter", x=[None], y=[None], mode="markers", marker=dict(symbol="square", size=12, color=OP_COLORS[op]), name=OP_NAMES[op],
                               **_axes(row), **_legend(op, shown)))
    return traces


def palette_png(codes: np.ndarray, colors: Sequence[str]) -> str:
    """A grid of small whole-number codes (rows top to bottom) as a data URI of an 8-bit palette
    PNG, code k drawn in colors[k] ("#rrggbb"): a browser draws it as one image, where a heatmap
    of the same grid maps every cell through its colour scale in script."""
    import base64
    import struct
    import zlib

    rows, cols = codes.shape

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    palette = b"".join(bytes.fromhex(c.lstrip("#")) for c in colors)
    lines = np.zeros((rows, cols + 1), dtype=np.uint8)  # each line starts with filter type 0 (none)
    lines[:, 1:] = codes
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", cols, rows, 8, 3, 0, 0, 0)) + chunk(b"PLTE", palette)
           + chunk(b"IDAT", zlib.compress(lines.tobytes(), 6)) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


TIMELINE_IMAGE_COLORS = (IDLE_COLOR, OP_COLORS["F"], OP_COLORS["B"], OP_COLORS["W"])  # timeline_raster's codes 0 idle, 1 F, 2 B, 3 W


def _timeline_traces(t: Timeline, raster: bool | None, row: int = 1, shown: set | None = None) -> list[dict]:
    """Up to BAR_OPS ops one bar per op, up to RASTER_OPS filled boxes (a trace per kind and
    shade), above one raster (raster=True/False forces the raster or boxes)."""
    if raster if raster is not None else len(t.op) > RASTER_OPS:
        return _timeline_heatmap(t, row, shown)
    return _timeline_bars(t, row, shown) if len(t.op) <= BAR_OPS else _timeline_boxes(t, row, shown)


def timeline_figure(t: Timeline, title: str | None = None, until: float | None = None, raster: bool | None = None) -> go.Figure:
    """One row per stage, ops coloured by kind; gaps are idle. Up to RASTER_OPS ops one box per
    op (shaded by micro-batch: bars up to BAR_OPS, filled paths above); above, one raster of stage x time bins
    (timeline_raster), which a browser draws as one image. raster=True/False forces either.
    `until` marks how far the schedule has played (play_marker)."""
    fig = go.Figure()
    for trace in _timeline_traces(t, raster):
        fig.add_trace(trace)
    fig.update_layout(barmode="overlay", height=140 + 28 * min(t.p, 32), title=title, xaxis=dict(title="time (one forward = 1)", range=[0, t.makespan * 1.01]),
                      yaxis=dict(autorange="reversed", title="stage", tickmode="array", tickvals=list(range(0, t.p, max(1, t.p // 16))), range=None),
                      margin=dict(t=95), legend=dict(y=1.0, yanchor="bottom"), title_y=0.98, title_yanchor="top")
    fig = apply_plotly_theme(fig)
    return play_marker(fig, t, until) if until is not None else fig


def play_marker(fig: go.Figure, t: Timeline, until: float | None) -> go.Figure:
    """Set (replacing the figure's shapes) a line at `until` and a veil over what runs after
    it: how far the schedule has played. The ops stay drawn, so moving the marker sends shapes,
    not a new drawing. None or the makespan: no marker."""
    shapes = []
    if until is not None and until < t.makespan:
        shapes = [
            dict(type="rect", xref="x", yref="paper", x0=until, x1=t.makespan * 1.01, y0=0, y1=1, fillcolor="white", opacity=0.8, line=dict(width=0), layer="above"),
            dict(type="line", xref="x", yref="paper", x0=until, x1=until, y0=0, y1=1, line=dict(color=COLORS["ink"], width=2)),
        ]
    fig.layout.shapes = shapes
    return fig


MEMORY_TERMS = {"weights": "bf16 weights", "gradients": "bf16 gradients", "optimizer": "optimizer state", "activations": "activations", "buffers": "allocator + runtime"}


def _hbm_marks(hbm: Sequence[tuple[str, float, bool]], log_axis: bool = True) -> tuple[list[dict], list[dict]]:
    """(shapes, annotations): horizontal lines at each GPU's HBM: (label, bytes, confirmed);
    unconfirmed ones dashed. On a log axis Plotly places the line in data units but its
    annotation in log10 units."""
    shapes, annotations = [], []
    for i, (label, nbytes, confirmed) in enumerate(sorted(hbm, key=lambda item: item[1])):
        value = nbytes / GB
        shapes.append(hline_shape(value, dict(color=COLORS["red"], width=2, dash="solid" if confirmed else "dash")))
        # Neighbouring capacities sit close on a log axis: stagger the labels along the line.
        annotations.append(dict(
            x=1 - 0.3 * i, xref="paper", xanchor="right", y=float(np.log10(value)) if log_axis else value, yanchor="bottom", showarrow=False,
            text=f"{label} {value:.1f} GB" + ("" if confirmed else " (unconfirmed)"), font=dict(color=COLORS["red"], size=13), bgcolor="rgba(255,255,255,0.85)",
        ))
    return shapes, annotations


def _hbm_lines(fig: go.Figure, hbm: Sequence[tuple[str, float, bool]], log_axis: bool = True) -> None:
    shapes, annotations = _hbm_marks(hbm, log_axis)
    for shape, annotation in zip(shapes, annotations):
        fig.add_shape(**shape)
        fig.add_annotation(**annotation)


def memory_wall(wall: dict[str, MemoryBreakdown], hbm: Sequence[tuple[str, float, bool]]) -> go.Figure:
    """What one GPU holds under plain data parallelism, per model: a bar per term side by side
    and the total as a marker, on a log axis. The models span two orders of magnitude, so on a
    linear axis the smallest is a sliver and the HBM lines crowd at the bottom; a stack on a log
    axis would misstate the terms' proportions, so they are grouped, not stacked."""
    names = list(wall)
    data = [dict(type="bar", x=names, y=[wall[n].as_dict()[term] / GB for n in names], name=label, marker=dict(color=TERM_COLORS[term]), hovertemplate=f"{label}: %{{y:,.1f}} GB<extra></extra>")
            for term, label in MEMORY_TERMS.items()]
    data.append(dict(type="scatter", x=names, y=[wall[n].total / GB for n in names], mode="markers+text", text=[f"total {wall[n].total / GB:,.0f} GB" for n in names], textposition="top center",
                     marker=dict(symbol="line-ew", size=40, line=dict(width=3, color=COLORS["ink"])), name="total", hoverinfo="skip"))
    shapes, annotations = _hbm_marks(hbm)
    return figure(data, dict(shapes=shapes, annotations=annotations, barmode="group", height=460, yaxis=dict(type="log", title=dict(text="GB per GPU (log)"), **LOG_TICKS),
                             xaxis=dict(title=dict(text="model, plain data parallelism"))))


STAGE_COLORS = (COLORS["purple"], COLORS["orange"], COLORS["green"], COLORS["blue"])  # red is kept for HBM lines


def zero_sweep(dps: Sequence[int], curves: dict[int, Sequence[MemoryBreakdown]], hbm: Sequence[tuple[str, float, bool]], current: tuple[int, float] | None = None) -> go.Figure:
    """Per-GPU memory against data-parallel size (log-log), one line per ZeRO stage, with the
    activations every stage keeps drawn as the floor none of them can go below."""
    data = [dict(type="scatter", x=list(dps), y=[p.total / GB for p in points], name=f"ZeRO-{stage}", mode="lines+markers", line=dict(color=STAGE_COLORS[stage], width=3),
                 hovertemplate=f"ZeRO-{stage}, DP %{{x}}: %{{y:,.1f}} GB<extra></extra>") for stage, points in curves.items()]
    floor = next(iter(curves.values()))
    data.append(dict(type="scatter", x=list(dps), y=[(p.activations) / GB for p in floor], name="activations (not sharded)", mode="lines", line=dict(color=TERM_COLORS["activations"], width=2, dash="dot")))
    if current is not None:
        data.append(dict(type="scatter", x=[current[0]], y=[current[1] / GB], name="your setting", mode="markers", marker=dict(symbol="diamond", size=16, color=COLORS["ink"])))
    shapes, annotations = _hbm_marks(hbm)
    return figure(data, dict(shapes=shapes, annotations=annotations, height=440, xaxis=dict(type="log", title=dict(text="data-parallel GPUs"), tickvals=list(dps)),
                             yaxis=dict(type="log", title=dict(text="GB per GPU (log)"), **LOG_TICKS)))


def published_vs_engine(gpus: Sequence[int], series: dict[str, tuple[Sequence[float], Sequence[float]]]) -> go.Figure:
    """TFLOP/s per GPU against GPU count: the paper's points and the engine's line, per scheme."""
    fig = go.Figure()
    for (name, (paper, engine)), color in zip(series.items(), (COLORS["red"], COLORS["blue"])):
        fig.add_scatter(x=list(gpus), y=list(engine), name=f"{name}, engine", mode="lines+markers", line=dict(color=color, width=3))
        fig.add_scatter(x=list(gpus), y=list(paper), name=f"{name}, paper", mode="markers", marker=dict(symbol="x", size=14, color=color, line=dict(width=1, color=color)))
    fig.update_layout(height=380, xaxis=dict(type="log", title="A100 GPUs", tickvals=list(gpus)), yaxis=dict(title="TFLOP/s per GPU", rangemode="tozero"))
    return apply_plotly_theme(fig)


GRID_AXES = {"tp": "TP group", "pp": "PP stage", "dp": "DP group"}
# Plotly's named scale as its validation spells it out (stop i of n at i / (n - 1)), written from
# its colour list: validating a marker here loaded Plotly's validators when a lab's setup imported
# this module, ~30-60 ms of CPU before its first prediction.
VIRIDIS = [[i / (len(sequential.Viridis) - 1), color] for i, color in enumerate(sequential.Viridis)]


def gpu_grid(est: Estimate, color_by: str = "tp") -> go.Figure:
    """Every GPU of the cluster as a cell (a row per node, a frame per NVLink domain: one node on a
    DGX, 18 on a GB200 NVL72), coloured by its TP group, PP stage or DP group under the plan's rank
    order; the hops of the chosen axis's groups that leave an NVLink domain drawn as lines; the GPU's
    memory on hover; GPUs over their HBM crossed out."""
    return figure(*gpu_grid_parts(est, color_by))


def gpu_grid_parts(est: Estimate, color_by: str = "tp") -> tuple[list[dict], dict]:
    """gpu_grid's traces and layout as plain dicts (Lab 09 draws them as SVG: reading a figure's
    properties back costs ~1 ms each)."""
    from labs.core.engine.layout import AXES, cross_node_links, groups, rank_coordinates

    p, gpn, dom = est.plan, est.cluster.gpus_per_node, est.cluster.domain_gpus
    per_domain = dom // gpn  # node rows per NVLink domain
    across = "nodes" if per_domain == 1 else "NVLink domains"
    coords = rank_coordinates(p.rank_order, p.tp, p.cp, p.dp, p.pp)
    ranks = np.arange(len(coords))
    col = {a: coords[:, i] for i, a in enumerate(AXES)}
    group_of = np.zeros(len(ranks), dtype=int)
    for index, members in enumerate(groups(p.rank_order, p.tp, p.cp, p.dp, p.pp, color_by)):
        group_of[members] = index
    shade = col["pp"] if color_by == "pp" else group_of
    x, y = ranks % gpn, ranks // gpn
    memory = np.array([est.stage_memory(int(s)) for s in col["pp"]]) / GB
    hbm = est.cluster.gpu.hbm_bytes / GB
    data = []
    links = cross_node_links(p.rank_order, p.tp, p.cp, p.dp, p.pp, color_by, dom)
    lx, ly = [], []
    for a, b in links:
        lx += [int(x[a]), int(x[b]), None]  # Python ints: what Plotly's validation makes of this mixed list
        ly += [int(y[a]), int(y[b]), None]
    if links:
        data.append(dict(type="scatter", x=lx, y=ly, mode="lines", line=dict(color=COLORS["red"], width=2), opacity=0.6, name=f"{GRID_AXES[color_by]} hops across {across} ({len(links)})", hoverinfo="skip"))
    top = max(int(shade.max()), 1)
    data.append(dict(
        type="scatter", x=x, y=y, mode="markers+text", text=[f"{GRID_AXES[color_by].split()[0]}{s}" for s in shade], textfont=dict(size=11, color="white"),
        marker=dict(symbol="square", size=58, color=shade.tolist(), colorscale=VIRIDIS, cmin=0, cmax=top, line=dict(width=1, color="white")),
        customdata=np.stack([ranks, y, x, col["tp"], col["dp"], col["pp"], memory], axis=1),
        hovertemplate="rank %{customdata[0]} · node %{customdata[1]} GPU %{customdata[2]}<br>TP index %{customdata[3]}, DP index %{customdata[4]}, PP stage %{customdata[5]}"
                      f"<br>memory %{{customdata[6]:.1f}} GB of {hbm:.1f}<extra></extra>",
        name=GRID_AXES[color_by], showlegend=False,
    ))
    over = memory > hbm
    if over.any():
        data.append(dict(type="scatter", x=x[over], y=y[over], mode="markers", marker=dict(symbol="x-thin", size=40, line=dict(width=4, color=COLORS["red"])),
                         name=f"out of memory ({int(over.sum())} GPUs)", hoverinfo="skip"))
    nodes = int(y.max()) + 1
    return data, dict(  # one frame per NVLink domain (a DGX node, or an NVL72 rack's 18): NVLink inside it, the NICs between them
        shapes=[dict(type="rect", x0=-0.5, x1=gpn - 0.5, y0=first - 0.45, y1=min(first + per_domain, nodes) - 1 + 0.45, line=dict(color=COLORS["muted"], width=1),
                     layer="below") for first in range(0, nodes, per_domain)],
        height=80 * nodes + 150, width=110 * gpn + 200, legend=dict(orientation="h", y=-0.08),
        xaxis=dict(title=dict(text="GPU in the node"), tickvals=list(range(gpn)), range=[-0.6, gpn - 0.4], showgrid=False, zeroline=False),
        yaxis=dict(title={}, tickvals=list(range(nodes)), ticktext=[f"node {i}" for i in range(nodes)], autorange="reversed", showgrid=False, zeroline=False),
    )


def design_front(plans, mine: Estimate | None = None) -> go.Figure:
    """Every plan of a sweep (labs.core.engine.search.sweep's frame) as memory per GPU against step
    time: the memory-versus-time front marked, the HBM line, and the student's plan."""
    fits = plans["fits"].to_numpy(dtype=bool)
    front = plans["pareto"].to_numpy(dtype=bool)
    label = [f"TP {r.tp} x PP {r.pp} x DP {r.dp}, ZeRO-{r.zero_stage}, micro-batch {r.micro_batch}" for r in plans.itertuples()]
    fig = go.Figure()
    for mask, name, color in ((~fits, "does not fit", COLORS["muted"]), (fits & ~front, "fits", COLORS["sky"]), (front, "memory-time front", COLORS["blue"])):
        if mask.any():
            fig.add_scatter(x=plans["step_time_s"].to_numpy()[mask], y=plans["memory_bytes"].to_numpy()[mask] / GB, mode="markers", name=name,
                            marker=dict(color=color, size=9 if name == "memory-time front" else 6), text=[t for t, k in zip(label, mask) if k],
                            hovertemplate="%{text}<br>%{x:.2f} s per step, %{y:.1f} GB per GPU<extra></extra>")
    if mine is not None:
        fig.add_scatter(x=[mine.step_time_s], y=[mine.memory.total / GB], mode="markers", name="your design",
                        marker=dict(symbol="star", size=18, color=COLORS["orange"], line=dict(width=1, color=COLORS["ink"])))
        hbm = mine.cluster.gpu.hbm_bytes / GB  # a trace, not add_hline: an annotation on a log axis is placed in log units
        steps = plans["step_time_s"].to_numpy()
        fig.add_scatter(x=[steps.min(), steps.max()], y=[hbm, hbm], mode="lines", name=f"{hbm:.1f} GB HBM", line=dict(color=COLORS["red"], width=2, dash="dash"), hoverinfo="skip")
    fig.update_layout(height=420, xaxis=dict(title="seconds per step", type="log", **LOG_TICKS), yaxis=dict(title="GB per GPU", type="log", **LOG_TICKS))
    return apply_plotly_theme(fig)
