"""What one instrument move of Lab 14 re-runs (issue 35: each cell's run and output is a round of
messages to the page), read from the notebook's cells as marimo's dataflow sees them (the same
reading as test_lab11_12_moves). Each instrument is shown by a cell of its own through a copy of
its HTML, and the submit reads the four the ledger records through diagnosis_inputs() when
pressed: a move re-runs the one cell that shows what it changed."""

import ast
from pathlib import Path

import pytest
from test_lab11_12_moves import cells, rerun_by

LAB14 = Path(__file__).resolve().parents[1] / "labs" / "14_debugging_at_scale.py"


@pytest.mark.parametrize("instrument, shows", [("axis_dropdown", ("seq_heatmap(", "not_arrived(")), ("outlier_dropdown", ("flagged(", "metric_cards(")),
                                               ("threshold_slider", ("flagged(", "metric_cards(")), ("timeout_slider", ("timeout_figure(", "metric_cards(")),
                                               ("rank_input", ("flight_record(",))])
def test_a_lab14_move_reruns_the_one_cell_that_shows_it(instrument, shows):
    """Before this change a process-group move re-ran three cells (the heatmap and its dropdown,
    the table, the submit with its HUD), a group or threshold move two with the step chart drawn
    again, a timeout move three (its cell, the key takeaways, the submit)."""
    hit = rerun_by(LAB14, instrument)
    print(instrument, [sorted(c["refs"]) for c in hit])
    assert len(hit) == 1, [sorted(c["refs"]) for c in hit]
    assert all(f in hit[0]["body"] for f in shows)
    assert "submit_to_ledger" not in hit[0]["body"] and "step_figure(" not in hit[0]["body"]


def test_no_cell_shows_an_instrument_element():
    """The instruments are shown through their panels (copies of their HTML): a cell that reads
    an instrument reads its value only (every use is `x.value`), never shows the element."""
    instruments = {"axis_dropdown", "outlier_dropdown", "threshold_slider", "timeout_slider", "rank_input"}
    for node in ast.parse(LAB14.read_text()).body:
        if isinstance(node, ast.FunctionDef) and {a.arg for a in node.args.args} & instruments:
            values = {id(n.value) for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr == "value"}
            bare = [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in instruments and id(n) not in values]
            assert not bare, (bare, ast.unparse(node)[:300])


def test_the_submit_records_every_instrument(ledger_dir):
    """The getter returns what the instruments show (the ledger's inputs, lab14.INPUT_FIELDS),
    read when the button is pressed; the panels are copies, not the elements."""
    import marimo as mo

    from labs.core.scenarios import lab14
    from test_notebooks import shared_app

    _, defs = shared_app(LAB14).run()
    assert defs["diagnosis_inputs"]() == {"view_axis": "tp", "timeout_min": 10, "outlier_group": "world", "threshold_pct": 5.0}
    assert set(defs["diagnosis_inputs"]()) == set(lab14.INPUT_FIELDS)
    defs["timeout_slider"]._update(0)  # the slider's index into its steps, as the page sends it
    defs["axis_dropdown"]._update(["world (default group)"])
    assert defs["diagnosis_inputs"]()["timeout_min"] == lab14.TIMEOUT_SETTINGS_MIN[0]
    assert defs["diagnosis_inputs"]()["view_axis"] == "world"
    for panel, element in (("axis_panel", "axis_dropdown"), ("timeout_panel", "timeout_slider"), ("outlier_panel", "threshold_slider"),
                           ("outlier_panel", "outlier_dropdown")):
        assert not isinstance(defs[panel], mo.ui.dropdown | mo.ui.slider), panel
        assert defs[element].text in defs[panel].text, panel
