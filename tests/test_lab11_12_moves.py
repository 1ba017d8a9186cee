"""What one instrument move of Labs 11 and 12 re-runs (issue 35: each cell's run and output is a
round of messages to the page). Read from the notebooks' cells as marimo's dataflow sees them: a
move re-runs the cells that read the instrument and, transitively, the cells that read what those
define. The submit reads the instruments through a function when pressed, so no move re-runs it."""

import ast
from pathlib import Path

import pytest

LABS = Path(__file__).resolve().parents[1] / "labs"
LAB11, LAB12 = LABS / "11_long_context_moe.py", LABS / "12_precision_and_memory.py"


def cells(path: Path) -> list[dict]:
    """Each @app.cell: the names it reads (its parameters), defines (returns) and its body's source."""
    out = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and any("app.cell" in ast.unparse(d) for d in node.decorator_list):
            returned = next((n.value for n in node.body if isinstance(n, ast.Return)), None)
            defs = set()
            if isinstance(returned, ast.Tuple):
                defs = {e.id for e in returned.elts if isinstance(e, ast.Name)}
            elif isinstance(returned, ast.Name):
                defs = {returned.id}
            out.append({"refs": {a.arg for a in node.args.args}, "defs": defs, "body": "\n".join(ast.unparse(b) for b in node.body)})
    return out


def rerun_by(path: Path, instrument: str) -> list[dict]:
    """The cells a move of `instrument` re-runs: its readers and their descendants."""
    all_cells, names, hit = cells(path), {instrument}, []
    changed = True
    while changed:
        changed = False
        for cell in all_cells:
            if cell not in hit and cell["refs"] & names:
                hit.append(cell)
                names |= cell["defs"]
                changed = True
    return hit


@pytest.mark.parametrize("instrument", ["cp_slider", "kv_slider", "seq_slider", "algorithm_dropdown", "capacity_slider"])
def test_a_lab11_move_reruns_no_submit(instrument):
    hit = rerun_by(LAB11, instrument)
    print(instrument, [sorted(c["refs"]) for c in hit])
    assert hit and not any("submit_to_ledger" in c["body"] or "hud(" in c["body"] for c in hit)


def test_a_lab11_cp_move_reruns_one_cell_the_chart_and_the_cards():
    """The curves, their chart and the cards in one cell: one cell a move of any of the four CP
    instruments (before this change a CP or KV-heads move re-ran five: the curves, the chart, the
    cards, the submit and the HUD)."""
    for instrument in ("cp_slider", "kv_slider", "seq_slider", "algorithm_dropdown"):
        hit = rerun_by(LAB11, instrument)
        assert len(hit) == 1, [sorted(c["refs"]) for c in hit]
        assert all(f in hit[0]["body"] for f in ("cp_curves(", "cp_figure(", "metric_cards("))


@pytest.mark.parametrize("instrument", ["loss_scale_slider", "outlier_slider", "k_slider", "steps_slider", "block_outlier_slider", "block_sample_pick",
                                        "flash_checkbox"])
def test_a_lab12_move_reruns_the_one_cell_that_shows_it(instrument):
    hit = rerun_by(LAB12, instrument)
    assert len(hit) == 1, [sorted(c["refs"]) for c in hit]
    assert "submit_to_ledger" not in hit[0]["body"]


def test_the_submit_still_records_every_instrument(ledger_dir):
    """The getters return what the sliders show (the ledger's inputs, lab12.INPUT_FIELDS and
    Lab 11's context step), read when the button is pressed."""
    import marimo as mo

    from labs.core.scenarios import lab11, lab12
    from test_notebooks import shared_app

    _, defs = shared_app(LAB12).run()
    assert set(defs["precision_inputs"]()) == set(lab12.INPUT_FIELDS)
    defs["k_slider"]._update(1)  # the slider's index into its steps, as the page sends it
    assert defs["precision_inputs"]()["accumulation_k"] == lab12.ACCUMULATION_KS[1]
    for panel in ("loss_scale_panel", "outlier_panel", "k_panel", "steps_panel", "block_panel"):  # a copy of the slider's HTML, not the element
        assert not isinstance(defs[panel], mo.ui.slider), panel
    assert defs["loss_scale_slider"].text in defs["loss_scale_panel"].text
    _, defs = shared_app(LAB11).run()
    assert defs["cp_inputs"]() == {"seq_len": lab11.LONG_SEQ, "cp": lab11.CP_LONG, "kv_heads": lab11.KV_HEAD_CHOICES[0], "algorithm": "ring"}
    assert defs["capacity_input"]() == lab11.CAPACITY_CHOICES[2]
    assert isinstance(defs["cp_slider"], mo.ui.slider)
