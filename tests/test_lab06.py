"""Lab 06 headless: locked by default, both predictions judged by the engine, the sweep and
the cost table agree with labs.core, submit lands in the ledger."""

import pytest

pytestmark = pytest.mark.usefixtures("ledger_dir")

from labs.core.scenarios.lab06 import FIT_ACTIVATIONS, FIT_MODEL, FIT_OPTIONS, FIT_STAGE, ZERO2_OPTIONS, fit_answer, zero2_answer
from labs.core.scenarios.lab06 import dp_memory
from test_notebooks import LABS, Pressed, committed, load_app, text_of

LAB06 = next(p for p in LABS if p.name == "06_zero_sweep.py")


@pytest.fixture(scope="module")
def app():
    return load_app(LAB06)


def test_locked_by_default(app):
    outputs, defs = app.run()
    assert "sweep_estimate" not in defs and "costs" not in defs and "submitted" not in defs
    assert "Commit to a prediction above (or skip it) to unlock the memory instruments" in text_of(outputs)


def test_instruments_show_the_engine_numbers(app):
    """Unlocked with the default widgets (the question's own setting): the lab's estimate is
    the engine's, and the failure-free card reads the same per-GPU memory."""
    outputs, defs = app.run(defs={**committed("fit", FIT_OPTIONS, "B")})
    est = defs["sweep_estimate"]
    expected = dp_memory(FIT_MODEL, 8, FIT_STAGE, FIT_ACTIVATIONS).total
    assert est.memory.total == pytest.approx(expected)
    assert f"{expected / 1e9:,.1f} GB" in text_of(outputs)
    assert "costs" not in defs  # the communication instruments wait for the second prediction


@pytest.mark.parametrize("key", [o.key for o in FIT_OPTIONS])
def test_fit_feedback_agrees_with_the_engine(app, key):
    outputs, _ = app.run(defs={**committed("fit", FIT_OPTIONS, key)})
    assert ("Right." in text_of(outputs)) == (key == fit_answer())


@pytest.mark.parametrize("key", [o.key for o in ZERO2_OPTIONS])
def test_zero2_feedback_agrees_with_the_engine(app, key):
    wrong_fit = next(o.key for o in FIT_OPTIONS if o.key != fit_answer())  # so "Right." can only come from this reveal
    outputs, defs = app.run(defs={**committed("fit", FIT_OPTIONS, wrong_fit), **committed("zero2", ZERO2_OPTIONS, key)})
    assert ("Right." in text_of(outputs)) == (key == zero2_answer())
    costs = defs["costs"]
    for ests in costs.values():
        assert ests[1].comm_bytes_per_gpu["dp"] == pytest.approx(ests[2].comm_bytes_per_gpu["dp"])  # one micro-batch by default
        assert ests[3].comm_bytes_per_gpu["dp"] == pytest.approx(1.5 * ests[0].comm_bytes_per_gpu["dp"])


def test_nic_placement_is_slower_for_zero3(app):
    _, defs = app.run(defs={**committed("fit", FIT_OPTIONS, "B"), **committed("zero2", ZERO2_OPTIONS, "A")})
    packed, spread = defs["costs"].values()
    assert spread[3].step_time_s > 1.5 * packed[3].step_time_s


def test_submit_lands_in_the_ledger(app):
    _, defs = app.run(defs={
        **committed("fit", FIT_OPTIONS, fit_answer()),
        **committed("zero2", ZERO2_OPTIONS, zero2_answer()),
        "submit_button": Pressed(),
    })
    step = defs["submitted"]["labs"]["06_zero_sweep"]["sweep"]
    assert step["outcomes"]["fit_correct"] and step["outcomes"]["zero2_correct"]
    assert step["inputs"]["zero_stage"] == FIT_STAGE
    assert step["outcomes"]["memory_gb"] == pytest.approx(dp_memory(FIT_MODEL, 8, FIT_STAGE, FIT_ACTIVATIONS).total / 1e9)
