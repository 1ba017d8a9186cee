"""What one design move of Lab 09 re-runs, and what its grid sends (issue 35): read from marimo's
own graph of the notebook (the cells that read the instrument and their descendants). The six design
instruments are made in one cell and shown through design_panel, so a move re-runs neither their
display nor the submit (it reads them through design_inputs() when pressed)."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import plotly.io as pio
import pytest

from labs.core import charts
from labs.core.engine.layout import RANK_ORDERS
from labs.core.scenarios.lab09 import worksheet_estimate
from test_notebooks import load_app

LAB09 = Path(__file__).resolve().parents[1] / "labs" / "09_64gpu_design.py"
INSTRUMENTS = ["scenario_dropdown", "tp_dropdown", "pp_dropdown", "zero_dropdown", "microbatch_dropdown", "order_radio"]


def rerun_by(instrument: str) -> list[str]:
    """The code of the cells a move of `instrument` re-runs, as marimo's dataflow finds them."""
    from marimo._ast.app import InternalApp
    from marimo._runtime import dataflow

    graph = InternalApp(load_app(LAB09)).graph
    readers = {cid for cid, cell in graph.cells.items() if instrument in cell.refs}
    return [graph.cells[cid].code for cid in dataflow.transitive_closure(graph, readers)]


@pytest.mark.parametrize("instrument", INSTRUMENTS)
def test_a_design_move_reruns_the_design_the_grid_and_the_hud_only(instrument):
    bodies = rerun_by(instrument)
    print(instrument, [b.splitlines()[0] for b in bodies])
    assert not any("submit_to_ledger" in b or "design_panel" in b for b in bodies)
    assert any("design_sheet(" in b for b in bodies) and any("grid_view(" in b for b in bodies) and any("hud(" in b for b in bodies)
    assert len(bodies) == 4  # those three and the engine's best plan beside yours, which stops until a submit


def test_the_submit_reads_the_instruments_when_pressed():
    spec = importlib.util.spec_from_file_location("lab09_moves", LAB09)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _, defs = module.app.run()
    assert defs["design_inputs"]() == {"scenario": "70b-h100", "tp": 8, "pp": 1, "zero_stage": 1, "micro_batch": 1, "rank_order": RANK_ORDERS[0]}
    defs["order_radio"]._update(list(defs["order_radio"].options)[2])  # the option's label, as the page sends it
    assert defs["design_inputs"]()["rank_order"] == RANK_ORDERS[2]


def test_the_grid_sends_plain_lists_and_the_scatter_defaults():
    """NumPy arrays reach Plotly.js as base64 typed data, decoded into new arrays at each
    Plotly.react: marimo's page reacts twice to a new figure and the second found the data changed.
    The grid's numbers are the same as charts.gpu_grid's."""
    spec = importlib.util.spec_from_file_location("lab09_grid", LAB09)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    est = worksheet_estimate("70b-h100", 8, 2, 1, 1, "cp-dp-tp-pp")
    sent = json.loads(pio.to_json(module.grid_view("70b-h100", 8, 2, 1, 1, "cp-dp-tp-pp", "tp")))
    assert "bdata" not in json.dumps(sent["data"])
    assert set(sent["layout"]["template"]["data"]) == {"scatter"} and {t["type"] for t in sent["data"]} == {"scatter"}
    old = charts.gpu_grid(est, "tp")
    cells = next(t for t in sent["data"] if t["mode"] == "markers+text")
    old_cells = next(t for t in old.data if t.mode == "markers+text")
    assert cells["x"] == np.asarray(old_cells.x).tolist() and cells["customdata"] == np.asarray(old_cells.customdata).tolist()
    assert cells["marker"]["color"] == list(old_cells.marker.color) and cells["text"] == list(old_cells.text)
