"""Lab 06 headless: locked by default, both predictions judged by the engine, the sweep and
the cost table agree with labs.core, submit lands in the ledger."""

import pytest

pytestmark = pytest.mark.usefixtures("ledger_dir")

from labs.core.scenarios.lab06 import FIT_MODEL, FIT_STAGE, fewest_gpus, fit_activations
from labs.core.scenarios.lab06 import dp_memory
from labs.variants import variant
from test_notebooks import LABS, Pressed, committed, load_app, mine, right, text_of, wrong

# The questions as a headless run sees them: its variant (labs.variants)
FIT, ZERO2 = mine("06_zero_sweep", "fit"), mine("06_zero_sweep", "zero2")
SETTING = variant("06_zero_sweep", "student").settings
FIT_ACTIVATIONS = fit_activations(SETTING)

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
    outputs, defs = app.run(defs={**committed("fit", FIT, right(FIT))})
    est = defs["sweep_estimate"]
    expected = dp_memory(FIT_MODEL, 8, FIT_STAGE, FIT_ACTIVATIONS).total
    assert est.memory.total == pytest.approx(expected)
    assert f"{expected / 1e9:,.1f} GB" in text_of(outputs)
    assert "costs" not in defs  # the communication instruments wait for the second prediction


@pytest.mark.parametrize("typed", [right(FIT), right(FIT) - FIT.spec.tolerance, 8, wrong(FIT)])
def test_fit_feedback_agrees_with_the_engine(app, typed):
    outputs, _ = app.run(defs={**committed("fit", FIT, typed)})
    assert ("Right:" in text_of(outputs)) == (abs(typed - FIT.spec.answer) <= FIT.spec.tolerance)
    assert FIT.spec.answer == fewest_gpus(FIT_MODEL, SETTING["gpu"], FIT_STAGE, FIT_ACTIVATIONS)


@pytest.mark.parametrize("key", [o.key for o in ZERO2.options])
def test_zero2_feedback_agrees_with_the_engine(app, key):
    outputs, defs = app.run(defs={**committed("fit", FIT, wrong(FIT)), **committed("zero2", ZERO2, key)})  # a wrong fit: "Right." is this reveal's
    assert ("Right." in text_of(outputs)) == (key == ZERO2.key)
    costs = defs["costs"]
    for ests in costs.values():
        assert ests[1].comm_bytes_per_gpu["dp"] == pytest.approx(ests[2].comm_bytes_per_gpu["dp"])  # one micro-batch by default
        assert ests[3].comm_bytes_per_gpu["dp"] == pytest.approx(1.5 * ests[0].comm_bytes_per_gpu["dp"])


def test_nic_placement_is_slower_for_zero3(app):
    import marimo as mo

    from labs.core.engine.hardware import GPUS
    from test_notebooks import with_instruments

    gpus = app.run()[1]["GPU_CHOICES"]  # the lab before variants: H100s at 4,096 tokens
    lab_setting = with_instruments(app, "instruments", gpu_pick=mo.ui.dropdown(options=gpus, value=GPUS["h100-sxm"].name),
                                   seq_slider=mo.ui.slider(steps=[4096], value=4096), micro_batch_slider=mo.ui.slider(steps=[1], value=1))
    _, defs = app.run(defs={**committed("fit", FIT, right(FIT)), **committed("zero2", ZERO2, ZERO2.key), **lab_setting})
    packed, spread = defs["costs"].values()
    assert spread[3].step_time_s > 1.5 * packed[3].step_time_s


def test_submit_lands_in_the_ledger(app):
    _, defs = app.run(defs={
        **committed("fit", FIT, right(FIT)),
        **committed("zero2", ZERO2, ZERO2.key),
        "submit_button": Pressed(),
    })
    step = defs["submitted"]["labs"]["06_zero_sweep"]["sweep"]
    assert step["outcomes"]["fit_correct"] and step["outcomes"]["zero2_correct"]
    assert step["inputs"]["zero_stage"] == FIT_STAGE
    assert step["outcomes"]["memory_gb"] == pytest.approx(dp_memory(FIT_MODEL, 8, FIT_STAGE, FIT_ACTIVATIONS).total / 1e9)


def test_b200_step_times_name_their_unconfirmed_constants(app):
    """Issue 38 item 5: on B200 (GPU.unconfirmed: attention_flops, hbm_efficiency, sms) the offload
    table's step times say what they rest on; on H100 (nothing unconfirmed) no such line."""
    import html

    import marimo as mo

    from labs.core.engine.hardware import GPUS
    from test_notebooks import text_of, with_instruments

    gpus = app.run()[1]["GPU_CHOICES"]
    fields = [note.split(":")[0] for note in GPUS["b200"].unconfirmed]
    assert "attention_flops" in fields and not GPUS["h100-sxm"].unconfirmed
    for key, shown in (("b200", True), ("h100-sxm", False)):
        setting = with_instruments(app, "instruments", gpu_pick=mo.ui.dropdown(options=gpus, value=GPUS[key].name))
        text = html.unescape(text_of(app.run(defs={**committed("fit", FIT, right(FIT)), **committed("zero2", ZERO2, ZERO2.key), **setting})[0]))
        line = f"{GPUS[key].name}'s step times rest in part on constants the catalog marks unconfirmed: "
        assert (line + ", ".join(f"<code>{f}</code>" for f in fields)) in text if shown else line not in text


@pytest.mark.parametrize("m", (1, 3, 4, 8, 16))
def test_zero2_switches_by_hand(m):
    """Edition 3's switches, hand-counted per step at m micro-batches, in units of one gradient
    reduce-scatter (= one weight all-gather, both bf16): ZeRO-1 reduce-scatters once and gathers
    once (2); ZeRO-2 reduce-scatters every micro-batch and gathers once (m + 1); ZeRO-3 reduce-scatters
    and gathers the weights for the forward and the backward of every micro-batch (3m). So
    ZeRO-1 -> 2 is (m + 1)/2, ZeRO-2 -> 1 is 2/(m + 1), ZeRO-2 -> 3 is 3m/(m + 1)."""
    from labs.core.scenarios.lab06 import zero2_switch_answer, zero2_switch_facts

    by_hand = {(1, 2): (m + 1) / 2, (2, 1): 2 / (m + 1), (2, 3): 3 * m / (m + 1)}
    for (a, b), ratio in by_hand.items():
        f = zero2_switch_facts(a, b, m)
        print(f"ZeRO-{a} -> ZeRO-{b} at m = {m}: engine {f['total']:.4f}, by hand {ratio:.4f}")
        assert f["total"] == pytest.approx(ratio, rel=1e-9)
    expected = {(1, 2): "A" if m == 1 else "B", (2, 1): "A" if m == 1 else "D", (2, 3): "C"}
    assert {k: zero2_switch_answer(*k, m) for k in by_hand} == expected


def test_zero2_cases_spread_the_key_over_the_four_options():
    """Each option is right for three of edition 3's twelve switches; neither the accumulation alone
    nor, between ZeRO-1 and ZeRO-2, the direction alone gives the key."""
    from collections import Counter

    from labs.core.scenarios.lab06 import VARIANT_ACCUMULATION, ZERO2_SWITCHES, zero2_switch_answer

    keys = Counter(zero2_switch_answer(a, b, VARIANT_ACCUMULATION[0] if acc else 1) for a, b, acc in ZERO2_SWITCHES)
    assert keys == {"A": 3, "B": 3, "C": 3, "D": 3}
    for a, b in ((1, 2), (2, 1)):
        assert len({zero2_switch_answer(a, b, m) for m in (1, *VARIANT_ACCUMULATION)}) == 2
    assert len({zero2_switch_answer(a, b, 1) for a, b, _ in ZERO2_SWITCHES}) == 2  # one micro-batch: the same, or the weights
