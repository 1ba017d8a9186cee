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
