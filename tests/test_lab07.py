"""Lab 07 headless: locked by default, predictions judged by the timeline, submit to ledger."""

import pytest

pytestmark = pytest.mark.usefixtures("ledger_dir")

from labs.core.scenarios.lab07 import microbatch_answer
from labs.core.engine.pipeline import bubble_fraction
from labs.variants import variant
from test_notebooks import LABS, Pressed, committed, load_app, mine, right, text_of, wrong

# The questions as a headless run sees them: its variant (labs.variants)
U, M = mine("07_pipeline_visualizer", "utilisation"), mine("07_pipeline_visualizer", "microbatches")
SETTING = variant("07_pipeline_visualizer", "student").settings

LAB07 = next(p for p in LABS if p.name == "07_pipeline_visualizer.py")


@pytest.fixture(scope="module")
def app():
    return load_app(LAB07)


def test_locked_by_default(app):
    outputs, defs = app.run()
    assert "pipeline_runs" not in defs and "submitted" not in defs
    assert "Commit to a prediction" in text_of(outputs)


def test_timelines_match_the_formula(app):
    _, defs = app.run(defs={**committed("utilisation", U, right(U))})
    for name, t in defs["pipeline_runs"].items():
        assert t.bubble_fraction("total") == pytest.approx(bubble_fraction(t.p, t.m, name, t.v, "total", t.costs))


@pytest.mark.parametrize("typed", [right(U), right(U) + 0.9 * U.spec.tolerance, wrong(U)])
def test_utilisation_feedback_agrees_with_the_timeline(app, typed):
    outputs, _ = app.run(defs={**committed("utilisation", U, typed)})
    assert ("Right:" in text_of(outputs)) == (abs(typed - U.spec.answer) <= U.spec.tolerance)
    assert 100 * (1 - bubble_fraction(SETTING["seed_p"], SETTING["seed_m"], "1f1b", 1, "total")) == pytest.approx(U.spec.answer)


def _misreadings():
    """The counts the usual misreadings give at the headless variant (edition 2's candidates)."""
    from labs.core.scenarios.lab07 import microbatch_candidates

    near = microbatch_candidates(SETTING["deep_p"], SETTING["target"])
    return [int(near[k].label) for k in ("ideal", "slots", "whole_stages")]


@pytest.mark.parametrize("typed", [right(M), right(M) - 1, right(M) + 1, *_misreadings()])
def test_microbatch_feedback_agrees_with_the_formula(app, typed):
    """The fewest typed is right; one fewer (a bubble of the target or more), one more (not the
    fewest) and each misreading's count are not."""
    outputs, _ = app.run(defs={**committed("microbatch", M, typed)})
    p, t = SETTING["deep_p"], SETTING["target"]
    fewest = int(M.spec.answer)
    assert bubble_fraction(p, fewest, "1f1b", 1, "total") < t <= bubble_fraction(p, fewest - 1, "1f1b", 1, "total")
    assert ("Right:" in text_of(outputs)) == (typed == fewest)


def test_submit_lands_in_the_ledger(app):
    _, defs = app.run(defs={
        **committed("utilisation", U, right(U)),
        **committed("microbatch", M, right(M)),
        "submit_button": Pressed(),
    })
    step = defs["submitted"]["labs"]["07_pipeline_visualizer"]["pipeline"]
    assert step["outcomes"]["utilisation_correct"] and step["outcomes"]["microbatches_correct"]
    assert step["outcomes"]["bubble_measured"] == pytest.approx(step["outcomes"]["bubble_formula"])


# ---- issue 13: what Lab 07 teaches, what it gates, and what it draws -------------------------

import itertools
import math
import re

import marimo as mo
import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from labs.core import charts
from labs.core.engine.memory import in_flight_columns
from labs.core.scenarios.common import Option
from labs.core.scenarios.lab07 import (
    BUBBLE_TARGET,
    DEEP_P,
    closed_form_holds,
    interleaving_rows,
    microbatch_explanations,
    pipeline_setting,
    run_report,
    schedule_cost_rows,
    share_against,
    stage0_in_flight,
    table5_rows,
)
from labs.core.engine.pipeline import SCHEDULES, OpCosts, timeline

BOTH = {**committed("utilisation", U, right(U)), **committed("microbatch", M, right(M))}
GATED = ("Key takeaways", "What each schedule pays", "The equations behind the bubble", "Deep pipelines are run interleaved", "Qi et al. Table 5")


def controls(p=4, m=8, v=2, tb=1.0, tw=1.0, a="1F1B", b="interleaved 1F1B", play=100):
    """The lab's widgets at a setting, as defs for app.run (its widget cell also defines the panel
    that lays them out and the reader the submit calls)."""

    names = {"GPipe": "gpipe", "1F1B": "1f1b", "interleaved 1F1B": "interleaved", "ZB-H1": "zb-h1", "ZB-H2": "zb-h2"}
    return with_reader({
        "schedule_a": mo.ui.dropdown(options=names, value=a), "schedule_b": mo.ui.dropdown(options=names, value=b),
        "p_slider": mo.ui.slider(steps=[1, 2, 4, 8, 16, 32, 64], value=p), "m_slider": mo.ui.slider(steps=[1, 2, 4, 8, 16, 32, 64, 128, 256], value=m),
        "v_slider": mo.ui.slider(steps=[2, 3, 4], value=v), "tb_slider": mo.ui.slider(start=0.5, stop=2.0, step=0.1, value=tb),
        "tw_slider": mo.ui.slider(start=0.5, stop=2.0, step=0.1, value=tw), "play_slider": mo.ui.slider(start=0, stop=100, step=5, value=play),
        "instruments": mo.md("instruments"),
    })


def with_reader(widgets: dict) -> dict:
    """The widgets with the notebook's pipeline_inputs() reading them (the submit calls it when
    pressed), as the widget cell defines it."""
    def pipeline_inputs() -> dict:
        return pipeline_setting(*(widgets[k].value for k in ("p_slider", "m_slider", "schedule_a", "v_slider", "tb_slider", "tw_slider")))

    return {**widgets, "pipeline_inputs": pipeline_inputs}


@pytest.mark.parametrize("answers", [{}, {**committed("utilisation", U, right(U))}, {**committed("microbatch", M, right(M))}])
def test_nothing_that_ranks_the_options_shows_before_both_predictions(app, answers):
    outputs, _ = app.run(defs=answers)
    text = text_of(outputs)
    for heading in GATED:
        assert heading not in text
    assert "bubble with T_F = T_B = T_W" not in text and "\\frac{p-1}{m+p-1}" not in text


def test_after_both_predictions_the_lab_shows_table5_interleaving_and_costs(app):
    outputs, _ = app.run(defs=BOTH)
    text = text_of(outputs)
    for heading in GATED:
        assert heading in text
    for row in table5_rows():  # the paper's numbers, read by labs.core from the data files
        assert f"{row['paper']:.2%}" in text and f"{row['counted']:.2%}" in text
    h2 = [r for r in table5_rows() if r["schedule"] == "ZB-H2"]
    assert f"ZB-H2 is not bubble-free there:</strong> {h2[0]['paper']:.2%} at m = 24" in text
    assert "as a formula only" not in text
    for row in interleaving_rows(SETTING["deep_p"], SETTING["target"]):
        assert f"{row['bubble_counted']:.2%}" in text
    for row in schedule_cost_rows(4):
        assert f"{row['activation_bytes'] / 1e9:.1f} GB" in text


def test_table5_counted_on_the_timelines_is_the_paper_and_zb_h2_idles(published):
    rows = table5_rows()
    assert len(rows) == 9
    for r in rows:
        assert abs(r["counted"] - r["paper"]) <= 5e-5  # the printed four decimals
        assert r["formula"] < r["counted"]  # messages add idle time the closed form leaves out
    for r in (r for r in rows if r["schedule"] == "ZB-H2"):
        assert r["paper"] > 0.04 and r["idle_per_stage_ms"] == pytest.approx(7 * (r["tf_ms"] + r["tb_ms"] - 2 * r["tw_ms"] + 2 * r["comm_ms"]), rel=1e-9)
        assert r["paper"] == published[f"zb_t5_1.5B_m{r['m']}"]["outputs"]["ZB-H2"]


def test_interleaving_divides_the_microbatches_needed_by_v():
    rows = {r["v"]: r for r in interleaving_rows()}
    one = rows[1]["fewest_m_runs"]
    assert one == 286  # 15 / (m + 15) < 5%: m > 285
    for v, r in rows.items():
        assert r["bubble_counted"] < BUBBLE_TARGET
        assert r["fewest_m_formula"] == math.floor((DEEP_P - 1) / v * (1 / BUBBLE_TARGET - 1)) + 1
        assert r["fewest_m_runs"] == (r["fewest_m_formula"] if v == 1 else DEEP_P * math.ceil(r["fewest_m_formula"] / DEEP_P))
        assert r["fewest_m_formula"] == pytest.approx(one / v, abs=1)
    assert (rows[2]["fewest_m_runs"], rows[4]["fewest_m_runs"]) == (144, 80)


def test_exactly_five_percent_is_not_under():
    options = (Option("A", "285"), Option("B", "286"))  # 16 stages: 15 / 300 is exactly 5%
    assert microbatch_answer(options=options) == "B"
    lines = microbatch_explanations(options=options)
    assert "bubble 5.0% of the wall time, not under 5%" in lines["A"]
    assert "bubble 4.98% of the wall time, under 5%" in lines["B"]
    assert share_against(0.0495) == "4.95%" and share_against(0.05) == "5.0%" and share_against(0.0501) == "5.01%"
    assert "bubble 4.95% of the wall time, under 5%" in microbatch_explanations()["C"]  # 288: no "5.0%" that is under


def test_microbatch_wording_says_strictly(app):
    target = SETTING["target"]
    assert f"strictly below: a bubble of exactly {target:.1%} is not under" in text_of(app.run()[0])
    outputs, _ = app.run(defs={**committed("microbatch", M, right(M))})
    text = text_of(outputs)
    fewest = int(M.spec.answer)
    assert f"you said {fewest}, the engine says {fewest} micro-batches" in text
    assert f", under {target:.0%}; at m = {fewest - 1} it is" in text and "not under" in text


EXTREMES = dict(p=(1, 8, 64), m=(1, 256), tb=(0.5, 2.0), tw=(0.5, 2.0))


def _extreme_runs():
    for p, m, tb, tw in itertools.product(*EXTREMES.values()):
        for schedule, v in (("gpipe", 1), ("1f1b", 1), ("zb-h1", 1), ("zb-h2", 1), ("interleaved", 2), ("interleaved", 4)):
            if schedule == "interleaved" and p > 1 and m % p:
                continue  # the lab shows the engine's refusal instead
            yield timeline(p, m, schedule, v, OpCosts(1.0, tb, tw))


def test_every_slider_extreme_reads_a_bubble_in_range_and_the_formula_only_where_it_holds():
    """ZB-H1 at T_B/T_F = 0.5, T_W/T_F = 2, p = 8, m = 1 and every other corner: no negative
    bubble, nothing divided by zero, and a closed form shown only where the timeline bears it out."""
    seen = 0
    for t in _extreme_runs():
        r = run_report(t)
        for key in ("counted_total", "counted_ideal", "counted_stage", "utilisation"):
            assert math.isfinite(r[key]) and r[key] >= 0, (t.schedule, t.p, t.m, t.costs, key, r[key])
        assert r["counted_total"] < 1 and r["counted_stage"] <= r["counted_total"] + 1e-12
        assert r["held_stage0"] == pytest.approx(float(t.peak_in_flight()[0]))  # the memory model is what the timeline holds
        if r["formula_total"] is not None:
            window = "stage" if t.schedule == "zb-h2" else "makespan"
            assert r["formula_total"] == pytest.approx(t.bubble_fraction("total", window=window), abs=1e-9)
            assert r["formula_ideal"] >= 0
        seen += 1
    assert seen > 80
    zb1 = run_report(timeline(8, 1, "zb-h1", costs=OpCosts(1.0, 0.5, 2.0)))
    assert zb1["formula_total"] is None and zb1["counted_total"] == pytest.approx(1 - 8 * 3.5 / (8 * timeline(8, 1, "zb-h1", costs=OpCosts(1.0, 0.5, 2.0)).makespan))
    assert closed_form_holds(64, 256, "zb-h1", OpCosts(1.0, 1.0, 1.0)) and not closed_form_holds(64, 256, "zb-h1", OpCosts(1.0, 0.5, 1.0))


def test_the_lab_at_zb_h1s_worst_corner_shows_no_negative_or_undefined_number(app):
    outputs, defs = app.run(defs={**BOTH, **controls(p=8, m=1, tb=0.5, tw=2.0, a="ZB-H1", b="ZB-H2")})
    text = text_of(outputs)
    assert "does not hold here" in text
    assert not re.search(r"[\s>(]-\d", text), re.search(r".{80}[\s>(]-\d.{20}", text)  # no negative number
    assert not re.search(r"\bnan\b|\binf\b|Traceback", text)
    assert set(defs["pipeline_runs"]) == {"zb-h1", "zb-h2"}


def test_interleaved_memory_follows_the_per_rank_model_with_the_group_size():
    p, m, v = 8, 32, 4
    assert stage0_in_flight("interleaved", p, m, v) == pytest.approx(((p - 1) * 2 + (v - 1) * p + 1) / v)
    assert stage0_in_flight("interleaved", p, m, v, group=2 * p) == pytest.approx(((p - 1) * 2 + (v - 1) * 2 * p + 1) / v)
    assert stage0_in_flight("interleaved", p, m, v) == float(timeline(p, m, "interleaved", v).peak_in_flight()[0])
    assert stage0_in_flight("zb-h2", p, m) == 2 * p - 1 == float(in_flight_columns(SCHEDULES.index("zb-h2"), p, m, 1))


def test_lab_memory_numbers_come_from_the_model(app):
    outputs, defs = app.run(defs={**BOTH, **controls(p=8, m=32, v=4)})
    t = defs["pipeline_runs"]["interleaved"]
    held = stage0_in_flight("interleaved", 8, 32, 4)
    assert f"{held:g}" in text_of(outputs) and held == 9.75 and t.v == 4


def test_large_timelines_are_one_raster_and_small_ones_boxes():
    big, small = timeline(64, 256, "1f1b"), timeline(4, 8, "1f1b")
    fig = charts.timeline_figure(big)
    assert [tr.type for tr in fig.data] == ["heatmap", "scatter", "scatter"]
    z, width = charts.timeline_raster(big)
    assert z.shape == (64, 1914) and width == pytest.approx(big.makespan / 1914)
    assert (z == 0).mean() == pytest.approx(big.bubble_fraction("total"), abs=1e-3)  # idle bins are the idle time
    assert {tr.type for tr in charts.timeline_figure(small).data} == {"bar"}
    middle = timeline(16, 32, "1f1b")
    assert {(tr.type, tr.fill) for tr in charts.timeline_figure(middle).data} == {("scatter", "toself")}
    assert len(small.op) <= charts.BAR_OPS < len(middle.op) <= charts.RASTER_OPS < len(big.op)


def drawn_boxes(fig, gap: float, xaxis: str = "x") -> list[tuple]:
    """(kind, stage, start, end) of every box the figure draws on one subplot: each scatter trace
    filled 'toself' is rectangles of 5 corners and a None, stage +- 0.4, drawn `gap` inside
    the op at both ends (the white edge between neighbours)."""
    boxes = []
    for tr in fig.data:
        if tr.type != "scatter" or tr.fill != "toself" or (tr.xaxis or "x") != xaxis:
            continue
        x, y = list(tr.x), list(tr.y)
        assert len(x) % 6 == 0 and x[5::6] == [None] * (len(x) // 6)
        for i in range(0, len(x), 6):
            xs, ys = x[i:i + 5], y[i:i + 5]
            assert xs[0] == xs[3] == xs[4] and xs[1] == xs[2] and ys[0] == ys[1] == ys[4] and ys[2] == ys[3]
            assert ys[2] - ys[0] == pytest.approx(0.8)
            boxes.append((tr.name, round((ys[0] + ys[2]) / 2), xs[0] - gap, xs[1] + gap))
    return sorted(boxes)


@pytest.mark.parametrize("schedule, p, m, v", [("1f1b", 16, 32, 1), ("interleaved", 8, 32, 2), ("zb-h1", 16, 32, 1), ("zb-h2", 8, 24, 1)])
def test_the_drawn_boxes_are_the_engines_schedule(schedule, p, m, v):
    """Every op's box, as drawn (one filled path per kind and shade), starts and ends where the
    engine's timeline has the op, on its stage's row (Lab 05's figure; Lab 07's: test_lab07_svg)."""
    t = timeline(p, m, schedule, v, OpCosts(1.0, 1.3, 0.7))
    engine = sorted((charts.OP_NAMES[o], int(s), float(a), float(b)) for o, s, a, b in zip(t.op, t.stage, t.start, t.end))
    gap = charts.box_gap(t)
    assert charts.BAR_OPS < len(t.op) <= charts.RASTER_OPS and 0 < gap <= (t.end - t.start).min() / 10 and gap <= t.makespan / 2000
    for drawn, want in zip(drawn_boxes(charts.timeline_figure(t), gap), engine, strict=True):
        assert drawn[:2] == want[:2] and drawn[2:] == pytest.approx(want[2:], abs=1e-12)


def test_the_drawn_bars_are_the_engines_schedule():
    """Up to BAR_OPS ops, one bar per op: its base and length are the op's start and duration."""
    t = timeline(8, 16, "zb-h1", 1, OpCosts(1.0, 1.3, 0.7))
    assert len(t.op) <= charts.BAR_OPS
    drawn = sorted((tr.name, int(s), float(b), float(b + x)) for tr in charts.timeline_figure(t).data for s, b, x in zip(tr.y, tr.base, tr.x))
    engine = sorted((charts.OP_NAMES[o], int(s), float(a), float(b)) for o, s, a, b in zip(t.op, t.stage, t.start, t.end))
    assert [d[:2] for d in drawn] == [e[:2] for e in engine] and np.allclose([d[2:] for d in drawn], [e[2:] for e in engine], rtol=0, atol=1e-12)


def test_the_play_marker_moves_shapes_not_the_drawing():
    t = timeline(64, 256, "zb-h1")
    fig = charts.timeline_figure(t)
    data = pio.to_json(go.Figure(data=fig.data))
    marked = charts.play_marker(fig, t, 0.4 * t.makespan)
    assert marked is fig and pio.to_json(go.Figure(data=fig.data)) == data
    assert [s.x0 for s in fig.layout.shapes] == [pytest.approx(0.4 * t.makespan)] * 2
    assert charts.play_marker(fig, t, t.makespan).layout.shapes == ()


def test_the_plotly_theme_is_registered_once_as_the_default():
    from labs.core.style import PLOTLY_TEMPLATE, apply_plotly_theme

    assert pio.templates.default == PLOTLY_TEMPLATE
    fig = go.Figure()
    assert fig.layout.template.layout.font.family.startswith("Inter") and apply_plotly_theme(fig) is fig
    assert fig.layout.template.layout.xaxis.gridcolor == charts.COLORS["grid"]


def test_invalid_design_is_explained_at_submit(app):
    """Interleaved with m = 4 micro-batches on p = 8 stages (m not a multiple of p): the submit
    row says the design was not saved and why, and nothing lands in the ledger."""
    from test_notebooks import with_instruments

    schedules = app.run()[1]["SCHEDULE_NAMES"]
    outputs, defs = app.run(defs={
        **committed("utilisation", U, right(U)),
        **committed("microbatch", M, right(M)),
        **with_reader(with_instruments(app, "instruments",
                                       schedule_a=mo.ui.dropdown(options=schedules, value="interleaved 1F1B"),
                                       p_slider=mo.ui.slider(steps=[8], value=8), m_slider=mo.ui.slider(steps=[4], value=4))),
        "submit_button": Pressed(),
    })
    assert defs["pipeline_inputs"]() == dict(p=8, m=4, schedule="interleaved", v=2, tf=1.0, tb=1.0, tw=1.0)
    assert defs["submitted"] is None
    text = text_of(outputs)
    assert "the pipeline design not saved: its setting is invalid" in text and "Nothing saved." in text
