"""What one instrument move of Lab 10 re-runs (issue 35: each cell's run and output is a round of
messages to the page, and each instrument redrawn is more). Read from the notebook's cells as
marimo's dataflow sees them (tests/test_lab11_12_moves.py's reading): no cell that a move re-runs
shows an instrument; each is shown through a copy of its HTML made beside it."""

import ast
from pathlib import Path

import pytest
from test_lab11_12_moves import cells, rerun_by

LAB10 = Path(__file__).resolve().parents[1] / "labs" / "10_failures_at_scale.py"
INSTRUMENTS = ("gpus_slider", "model_dropdown", "sharding_dropdown", "strategy_dropdown", "storage_slider", "interval_slider", "relaunch_slider",
               "swap_slider", "spares_switch", "slow_slider")


def shown(body: str) -> set[str]:
    """Instruments a cell's source puts on the page: a bare name as a statement (the cell's
    output) or as an item of a list or tuple (a vstack's or hstack's)."""
    names = set()
    for node in ast.walk(ast.parse(body)):
        items = [node.value] if isinstance(node, ast.Expr) else node.elts if isinstance(node, (ast.List, ast.Tuple)) else []
        names |= {item.id for item in items if isinstance(item, ast.Name) and item.id in INSTRUMENTS}
    return names


@pytest.mark.parametrize("instrument", INSTRUMENTS)
def test_a_move_redraws_no_instrument(instrument):
    """Before this change a GPU move re-ran the cells that showed the GPU slider, the three
    dropdowns, the bandwidth slider and the NIC slider; a dropdown move showed the dropdowns again."""
    hit = rerun_by(LAB10, instrument)
    assert hit, instrument
    drawn = {name for cell in hit for name in shown(cell["body"])}
    print(instrument, len(hit), "cells;", sorted(drawn))
    assert not drawn


def test_every_instrument_is_on_the_page():
    """Each instrument is shown, once, by the panel made in its own cell (not by a cell that reads it)."""
    all_cells = cells(LAB10)
    panels = {name for cell in all_cells for name in cell["defs"] if name.endswith("_panel")}
    for instrument in INSTRUMENTS:
        made_in = next(cell for cell in all_cells if instrument in cell["defs"])
        assert made_in["defs"] & panels, instrument
    shown_by = [cell for cell in all_cells if cell["refs"] & panels]
    assert sorted(p for cell in shown_by for p in cell["refs"] & panels) == sorted(panels)


def test_a_gpu_move_reruns_the_cells_that_read_the_gpus():
    """Six cells, each showing a number that moves with the GPUs: the failure model, the
    checkpoint table, the setting with cadence, the inverse line with the simulation and part B4's
    corruption count, the stragglers' table, the HUD (nine before: the setting, the inverse line and
    the corruption count were cells of their own). The stragglers' table does not read `setting`,
    so a restart move leaves it alone; a restart move re-runs cadence, the simulation and the HUD."""
    hit = rerun_by(LAB10, "gpus_slider")
    print([sorted(cell["refs"]) for cell in hit])
    assert len(hit) == 6
    for instrument in ("relaunch_slider", "swap_slider", "spares_switch"):
        moved = rerun_by(LAB10, instrument)
        assert len(moved) == 3 and not any("straggler_all_reduce" in cell["body"] for cell in moved), instrument
    assert len(rerun_by(LAB10, "interval_slider")) == 3  # cadence, the simulation, the HUD: as before


def test_no_cell_a_move_reruns_draws_plotly():
    """The two charts a GPU move redraws are plain SVG (mtbf_figure, cadence_figure), as the goodput
    histogram is HTML: no Plotly.react on any move."""
    body = LAB10.read_text()
    assert "plotly.graph_objects" not in body and "charts.figure(" not in body and "go.Figure" not in body and "mo.ui.plotly" not in body


def test_the_submit_reads_the_instruments_when_pressed():
    """No move re-runs the submit: it reads the instruments through cadence_inputs_now(), which
    returns what the cadence cell records (same fields, same order) and follows a move made after
    the submit cell ran."""
    from test_lab10 import BOTH
    from test_notebooks import shared_app

    _, defs = shared_app(LAB10).run(defs=BOTH)
    assert list(defs["cadence_inputs_now"]().items()) == list(defs["cadence_inputs"].items())
    assert not any(cell["refs"] & set(INSTRUMENTS) for cell in cells(LAB10) if "submit_to_ledger" in cell["body"])
    defs["relaunch_slider"]._update(42)  # the page sends the slider's value
    assert defs["cadence_inputs_now"]()["relaunch_min"] == 42 != defs["cadence_inputs"]["relaunch_min"]


def test_the_stylesheet_is_on_the_page_once():
    """The cards, tables and status line a move re-sends carry no copy of the labs' stylesheet
    (each one a <style> mounted again): the page's one copy is its title (ui.with_stylesheet), at
    the top and never re-run; every lab-card and the status line are below it."""
    from test_lab10 import BOTH
    from test_notebooks import shared_app

    from labs.core.style import LAB_CSS

    outputs, _ = shared_app(LAB10).run(defs=BOTH)
    texts = [getattr(o, "text", "") or "" for o in outputs]
    holders = [k for k, t in enumerate(texts) if LAB_CSS in t]
    assert len(holders) == 1 and texts[holders[0]].startswith(LAB_CSS) and "Lab 10" in texts[holders[0]]
    drawn = [k for k, t in enumerate(texts) if k not in holders and any(f'class="lab-{c}"' in t for c in ("card", "hud", "table"))]
    assert len(drawn) >= 6 and min(drawn) > holders[0]
