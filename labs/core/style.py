"""One look for every lab: a named palette (Okabe-Ito, colour-blind safe), CSS, a Plotly theme
with fonts large enough for a projector. The seed notebooks' names (COLORS["BlueLine"], ...)
keep working."""

from __future__ import annotations

import sys

import plotly.graph_objects as go
import plotly.io as pio
from _plotly_utils import optional_imports

# plotly.io's renderers import nbformat, where it is installed, only for Jupyter's notebook
# renderer; nbformat imports jsonschema, which with rfc3987-syntax installed (Jupyter installs
# pull it in) builds a grammar for 2-3 s when a lab draws its first chart. marimo never uses
# that renderer, so plotly is told nbformat is absent (its own cache of failed imports).
if "nbformat" not in sys.modules:
    getattr(optional_imports, "_not_importable", set()).add("nbformat")

# Okabe & Ito (2008) palette, plus neutrals.
COLORS = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "red": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "ink": "#1f2933",
    "muted": "#5f6b7a",
    "grid": "#e4e7eb",
    "surface": "#ffffff",
    "panel": "#f5f7fa",
}
# Names used by the seed notebooks.
COLORS.update({
    "BlueLine": COLORS["blue"], "BlueL": "#e6f1f8", "GreenLine": COLORS["green"], "GreenL": "#e6f5f0",
    "OrangeLine": COLORS["orange"], "OrangeL": "#fdf3e0", "RedLine": COLORS["red"], "RedL": "#fbebe3",
    "Cloud": COLORS["sky"], "Surface0": COLORS["surface"], "Surface1": COLORS["panel"],
    "Text": COLORS["ink"], "TextMuted": COLORS["muted"], "Border": COLORS["grid"],
})

# Stacked memory and time terms keep one colour each across every chart.
TERM_COLORS = {
    "weights": COLORS["blue"], "gradients": COLORS["sky"], "optimizer": COLORS["purple"],
    "activations": COLORS["orange"], "logits": COLORS["red"], "buffers": COLORS["muted"],
    "compute": COLORS["blue"], "bubble": COLORS["yellow"], "tp_comm": COLORS["purple"],
    "pp_comm": COLORS["sky"], "dp_comm": COLORS["red"], "optimizer_step": COLORS["green"],
    "dp_bandwidth": COLORS["red"], "dp_latency": COLORS["orange"], "offload": COLORS["ink"], "ep_comm": COLORS["orange"],
}

LAB_CSS = """
<style>
.lab-hud { font-family: ui-monospace, monospace; font-size: 0.9rem; padding: 0.5rem 0.8rem;
  border-radius: 6px; background: #f5f7fa; border: 1px solid #e4e7eb; }
.lab-card { display: inline-block; min-width: 9rem; padding: 0.6rem 0.9rem; margin: 0.2rem;
  border-radius: 8px; border: 1px solid #e4e7eb; background: #fff; }
.lab-card .value { font-size: 1.6rem; font-weight: 600; color: #1f2933; }
.lab-card .label { font-size: 0.8rem; color: #5f6b7a; }
.lab-message { border-left: 4px solid #0072B2; background: #e6f1f8; padding: 0.8rem 1rem; border-radius: 4px; }
.lab-table { border-collapse: collapse; font-size: 0.9rem; margin: 0.4rem 0; }
.lab-table th { text-align: left; color: #5f6b7a; font-weight: 600; border-bottom: 1px solid #e4e7eb; padding: 0.35rem 0.8rem; }
.lab-table td { border-bottom: 1px solid #f0f2f5; padding: 0.35rem 0.8rem; }
.lab-bar { margin: 0.6rem 0 0.8rem; font-size: 0.85rem; color: #3e4c59; }
.lab-bar .track { position: relative; display: flex; height: 30px; background: #f5f7fa; border-radius: 3px; margin: 1.3rem 0 0.4rem; }
.lab-bar .part { height: 100%; }
.lab-bar .limit { position: absolute; top: 0; bottom: 0; border-left: 3px solid #D55E00; }
.lab-bar .limit span { position: absolute; bottom: 100%; left: 4px; white-space: nowrap; line-height: 1.2rem; }
.lab-bar .legend span { display: inline-block; margin-right: 1rem; }
.lab-bar .legend i { display: inline-block; width: 0.8rem; height: 0.8rem; margin-right: 0.3rem; vertical-align: middle; border-radius: 2px; }
/* A button beside a long note (commit, skip, submit, download) keeps its width: in a flex row
   the note wraps instead, and the label never spills out of its border. */
marimo-ui-element:has(marimo-button), marimo-ui-element:has(marimo-download) { flex-shrink: 0; }
marimo-button, marimo-download { white-space: nowrap; }
</style>
"""


PLOTLY_TEMPLATE = "labs"


THEME_LAYOUT = dict(
    font=dict(family="Inter, Helvetica, Arial, sans-serif", size=15, color=COLORS["ink"]),
    colorway=[COLORS[k] for k in ("blue", "orange", "green", "red", "purple", "sky", "yellow")],
    margin=dict(l=60, r=20, t=50, b=55),
    legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
    hoverlabel=dict(font=dict(size=14)),
    xaxis=dict(gridcolor=COLORS["grid"], zeroline=False),
    yaxis=dict(gridcolor=COLORS["grid"], zeroline=False),
)


def _merged(base: dict, changes: dict) -> dict:
    """`base` with `changes` merged in, nested dicts key by key (as Plotly's update merges them)."""
    out = dict(base)
    for key, value in changes.items():
        out[key] = _merged(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


def _theme() -> go.layout.Template:
    """plotly_white with the labs' fonts, palette, margins, legend and grid. Built from plain
    dicts without Plotly's validation: validating plotly_white's templates of every trace type
    imported their validators, ~0.1 s of CPU before a lab's first prediction could show (the
    same template: its JSON equal to the validated one's)."""
    spec = pio.templates["plotly_white"].to_plotly_json()
    spec["layout"] = _merged(spec.get("layout", {}), THEME_LAYOUT)
    return go.layout.Template(spec, _validate=False)


def register_plotly_theme() -> None:
    """Register the theme as pio.templates["labs"] and make it the default, once per process:
    every figure made afterwards starts from it, so no figure pays for re-applying it. Plotly's
    registry validates a template set through it (a deep copy of every trace type's template,
    ~0.2 s of CPU on a lab's start); this one is built from plotly_white's own, so it is stored as
    it is, where the registry keeps its templates (plotly 5 to 7: `_templates`, `_default`)."""
    templates = pio.templates
    kept = getattr(templates, "_templates", None)
    if PLOTLY_TEMPLATE not in templates:
        if isinstance(kept, dict):
            kept[PLOTLY_TEMPLATE] = _theme()
        else:
            templates[PLOTLY_TEMPLATE] = _theme()
    if templates.default != PLOTLY_TEMPLATE:
        if isinstance(kept, dict) and hasattr(templates, "_default"):
            templates._default = PLOTLY_TEMPLATE
        else:
            templates.default = PLOTLY_TEMPLATE


def apply_plotly_theme(fig: go.Figure) -> go.Figure:
    """Kept for the labs that call it: the theme is the registered default, so a figure made
    after labs.core.style was imported has it already; one made before gets it here."""
    register_plotly_theme()
    if fig.layout.template.layout.font.family is None:  # made before the theme was the default
        fig.update_layout(template=PLOTLY_TEMPLATE)
    return fig


register_plotly_theme()
