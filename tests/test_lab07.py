"""Lab 07 headless: locked by default, predictions judged by the timeline, submit to ledger."""

import pytest

pytestmark = pytest.mark.usefixtures("ledger_dir")

from labs.core.outcomes import MICROBATCH_OPTIONS, UTILISATION_OPTIONS, microbatch_answer, utilisation_answer
from labs.core.pipeline import bubble_fraction
from test_notebooks import LABS, Pressed, answered, load_app, text_of

LAB07 = next(p for p in LABS if p.name == "07_pipeline_visualizer.py")


@pytest.fixture(scope="module")
def app():
    return load_app(LAB07)


def test_locked_by_default(app):
    outputs, defs = app.run()
    assert "pipeline_runs" not in defs and "submitted" not in defs
    assert "Commit to a prediction" in text_of(outputs)


def test_timelines_match_the_formula(app):
    _, defs = app.run(defs={"utilisation_question": answered(UTILISATION_OPTIONS, "C")})
    for name, t in defs["pipeline_runs"].items():
        assert t.bubble_fraction("total") == pytest.approx(bubble_fraction(t.p, t.m, name, t.v, "total", t.costs))


@pytest.mark.parametrize("key", [o.key for o in UTILISATION_OPTIONS])
def test_utilisation_feedback_agrees_with_the_timeline(app, key):
    outputs, _ = app.run(defs={"utilisation_question": answered(UTILISATION_OPTIONS, key)})
    assert ("Right." in text_of(outputs)) == (key == utilisation_answer())


@pytest.mark.parametrize("key", [o.key for o in MICROBATCH_OPTIONS])
def test_microbatch_feedback_agrees_with_the_formula(app, key):
    outputs, _ = app.run(defs={"microbatch_question": answered(MICROBATCH_OPTIONS, key)})
    assert ("Right." in text_of(outputs)) == (key == microbatch_answer())


def test_submit_lands_in_the_ledger(app):
    _, defs = app.run(defs={
        "utilisation_question": answered(UTILISATION_OPTIONS, "C"),
        "microbatch_question": answered(MICROBATCH_OPTIONS, "C"),
        "submit_button": Pressed(),
    })
    step = defs["submitted"]["labs"]["07_pipeline_visualizer"]["pipeline"]
    assert step["outcomes"]["utilisation_correct"] and step["outcomes"]["microbatches_correct"]
    assert step["outcomes"]["bubble_measured"] == pytest.approx(step["outcomes"]["bubble_formula"])
