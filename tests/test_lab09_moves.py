"""What one design move of Lab 09 re-runs, and what its grid sends (issue 35): read from marimo's
own graph of the notebook (the cells that read the instrument and their descendants). The six design
instruments are made in one cell and shown through design_panel, so a move re-runs neither their
display nor the submit (it reads them through design_inputs() when pressed)."""

import importlib.util
import re
from pathlib import Path

import pytest

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



@pytest.mark.parametrize("field, cells", [("link_dropdown", 1), ("time_number", 1), ("paragraph_area", 1), ("bottleneck_dropdown", 2)])
def test_a_spoken_field_reruns_its_own_cell_and_not_the_submit(field, cells):
    """Section 7's fields are read by the cell that shows them, which keeps what they say for the
    submit (spoken_now): a change re-runs that cell (and the HUD for the bottleneck it names), not
    the submit and the two views below it (five cells before)."""
    bodies = rerun_by(field)
    print(field, [b.splitlines()[0] for b in bodies])
    assert len(bodies) == cells and any("spoken_now.update(" in b for b in bodies)
    assert not any("submit_to_ledger" in b or "mo.stop(submitted" in b for b in bodies)
    assert (cells == 2) == any("hud(" in b for b in bodies)

def test_the_submit_reads_the_instruments_when_pressed():
    spec = importlib.util.spec_from_file_location("lab09_moves", LAB09)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _, defs = module.app.run()
    assert defs["design_inputs"]() == {"scenario": "70b-h100", "tp": 8, "pp": 1, "zero_stage": 1, "micro_batch": 1, "rank_order": RANK_ORDERS[0]}
    defs["order_radio"]._update(list(defs["order_radio"].options)[2])  # the option's label, as the page sends it
    assert defs["design_inputs"]()["rank_order"] == RANK_ORDERS[2]


def test_the_grid_is_svg_placed_and_coloured_as_plotly_drew_it():
    """The grid is plain SVG: Plotly's redraw of its 64 cells was most of a rank-order move's work
    in the page. Each cell where Plotly drew charts.gpu_grid's figure in Chromium (centres at
    147.07 + 120.12 x GPU px across, 118.75 + 73.21 x node px down), in the colours it drew for 4
    PP stages (Viridis at 0, 1/3, 2/3, 1), labelled, and its hover text (rank, node, GPU, TP/DP
    index, PP stage, the stage's memory of the HBM) as its title."""
    spec = importlib.util.spec_from_file_location("lab09_grid", LAB09)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    est = worksheet_estimate("13b-a100", 2, 4, 1, 2, "tp-pp-cp-dp")
    svg = module.grid_view("13b-a100", 2, 4, 1, 2, "tp-pp-cp-dp", "pp").text
    drawn = {0: "rgb(68,1,84)", 1: "rgb(49,104,142)", 2: "rgb(53,183,121)", 3: "rgb(253,231,37)"}  # read from Plotly's SVG in Chromium
    cells = re.findall(r"<rect x='([\d.]+)' y='([\d.]+)' width='58' height='58' fill='([^']+)'><title>([^<]*)</title>", svg)
    labels = re.findall(r"<text x='[\d.]+' y='[\d.]+'>(PP\d)</text>", svg)
    assert len(cells) == 64 and len(labels) == 64 and "<path class='hops' d=''" in svg and "<g class='over' pointer-events='none'></g>" in svg
    for rank, (x, y, fill, title) in enumerate(cells):
        node, gpu, stage = rank // 8, rank % 8, (rank // 2) % 4  # TP 2 innermost, then PP 4, DP 8 outermost
        assert float(x) + 29 == pytest.approx(147.07 + 120.12 * gpu, abs=0.06) and float(y) + 29 == pytest.approx(118.75 + 73.21 * node, abs=0.06)
        assert fill == drawn[stage] and labels[rank] == f"PP{stage}"
        assert title == (f"rank {rank} · node {node} GPU {gpu}\nTP index {rank % 2}, DP index {rank // 8}, PP stage {stage}\n"
                         f"memory {est.stage_memory(stage) / 1e9:.1f} GB of {est.cluster.gpu.hbm_bytes / 1e9:.1f}")


def test_the_grid_draws_the_hops_and_the_crosses():
    """DP innermost puts each TP group's 8 GPUs on 8 nodes: 8 rings of 8 hops, all between nodes
    (64 segments); TP 1 with ZeRO-3 on the 70B fits no GPU (64 crosses, as charts.gpu_grid counts)."""
    spec = importlib.util.spec_from_file_location("lab09_hops", LAB09)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    svg = module.grid_view("70b-h100", 8, 1, 1, 1, "cp-dp-tp-pp", "tp").text
    hops = re.search(r"<path class='hops' d='([^']+)'", svg)[1]
    assert hops.count("M") == 64 and "TP group hops across nodes (64)" in svg and "<g class='over' pointer-events='none'></g>" in svg
    assert re.findall(r'>(TP\d)</text>', svg) == [f"TP{r % 8}" for r in range(64)]
    oom = module.grid_view("70b-h100", 1, 1, 3, 1, "tp-cp-dp-pp", "dp").text
    crosses = re.search(r"<g class='over'[^>]*>(.*?)</g>", oom)[1]
    assert crosses.count("<path") == 64 and "out of memory (64 GPUs)" in oom
