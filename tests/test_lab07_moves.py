"""What one instrument move of Lab 07 re-runs (issue 35: each cell's run and output is a round of
messages to the page), read from the notebook's cells as marimo's dataflow sees them: a schedule
instrument re-runs the cell that plays the timelines, draws their ops and shows the counted bubble
beside the formula, and the cells that show them (the chart with its play marker, the HUD); the
play slider the chart alone. The submit reads the
instruments through pipeline_inputs() when pressed, so no move re-runs it."""

from pathlib import Path

import pytest

from test_lab11_12_moves import rerun_by

pytestmark = pytest.mark.usefixtures("ledger_dir")

LAB07 = Path(__file__).resolve().parents[1] / "labs" / "07_pipeline_visualizer.py"
SCHEDULE_INSTRUMENTS = ("p_slider", "m_slider", "v_slider", "tb_slider", "tw_slider", "schedule_a", "schedule_b")


@pytest.mark.parametrize("instrument", SCHEDULE_INSTRUMENTS)
def test_a_schedule_move_reruns_the_timelines_and_what_shows_them(instrument):
    hit = rerun_by(LAB07, instrument)
    bodies = [c["body"] for c in hit]
    print(instrument, [sorted(c["refs"]) for c in hit])
    assert not any("submit_to_ledger" in b for b in bodies)
    assert sum("timeline(" in b and "timelines_panels(" in b for b in bodies) == 1  # played and its ops drawn in one cell
    assert any("timelines_svg(" in b for b in bodies) and any("run_report(" in b for b in bodies) and any("hud(" in b for b in bodies)
    # the timelines' cell (with the table), the chart, the HUD; the p slider also the schedule-cost table
    assert len(hit) == 3 + (instrument == "p_slider"), [sorted(c["refs"]) for c in hit]


def test_the_play_slider_moves_the_marker_alone():
    hit = rerun_by(LAB07, "play_slider")
    assert len(hit) == 1 and "timelines_svg(" in hit[0]["body"] and "timeline(" not in hit[0]["body"] and "timelines_panels(" not in hit[0]["body"]


def test_the_submit_reads_the_instruments_when_pressed():
    """pipeline_inputs() returns what the sliders show, as the ledger records it, read when called."""
    from test_notebooks import load_app

    _, defs = load_app(LAB07).run()
    assert defs["pipeline_inputs"]() == dict(p=4, m=8, schedule="1f1b", v=1, tf=1.0, tb=1.0, tw=1.0)
    defs["m_slider"]._update(8)  # the slider's index into its steps, as the page sends it: m = 256
    defs["schedule_a"]._update(["interleaved 1F1B"])
    assert defs["pipeline_inputs"]() == dict(p=4, m=256, schedule="interleaved", v=2, tf=1.0, tb=1.0, tw=1.0)
