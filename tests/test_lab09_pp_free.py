"""Lab 09, seed 000's "PP across nodes is free" as a committed prediction (review 38bda0b, X8):
the engine decides the key at the student's batch and pipeline depth (the bubble, counted by
hand as (p-1)/(m+p-1), against the sends and TP across nodes); the misconceptions section and the
takeaways stay locked until it is committed; the reveal gives the variant's own numbers; the
worksheet's outcome judges it when the prediction is recorded."""

import pytest

pytestmark = pytest.mark.usefixtures("ledger_dir")

from labs.core.scenarios import lab09
from labs.variants import variant
from test_notebooks import LABS, committed, load_app, mine, text_of

LAB09 = next(p for p in LABS if p.name == "09_64gpu_design.py")
IDS = [f"student-{i:03d}" for i in range(200)]


@pytest.fixture(scope="module")
def app():
    return load_app(LAB09)


def _both(pp_key):
    dp64, pp = mine(lab09.LAB, "dp64"), mine(lab09.LAB, "pp_free")
    return {**committed("dp64", dp64, dp64.key), **committed("pp_free", pp, pp_key)}


def test_misconceptions_wait_for_the_pp_prediction(app):
    dp64 = mine(lab09.LAB, "dp64")
    outputs, defs = app.run(defs=committed("dp64", dp64, dp64.key))
    text = text_of(outputs)
    assert "PP across nodes is free" in text and "pp_free_question" in defs
    assert "Misconceptions, met with numbers" not in text and "Key takeaways" not in text


@pytest.mark.parametrize("right", (True, False))
def test_the_reveal_judges_at_the_variant_and_opens_the_misconceptions(app, right):
    pp = mine(lab09.LAB, "pp_free")
    answer = pp.key if right else next(o.key for o in pp.options if o.key != pp.key)
    outputs, _ = app.run(defs=_both(answer))
    text = text_of(outputs)
    assert "Misconceptions, met with numbers" in text and "Key takeaways" in text
    s = variant(lab09.LAB, "student").settings
    f = lab09.pp_free_facts(int(s["pp_batch"]), int(s["pp_depth"]))
    assert f"is {f['bubble']:.1%} of the step" in text  # the reveal's line, the variant's own bubble


def test_the_key_follows_the_bubble_counted_by_hand():
    """Over 200 ids: the bubble (p-1)/(m+p-1), m = batch / DP with DP = 8 / p nodes' worth of TP 8
    groups, decides the key: under 1% at 1,024 sequences ("next to nothing"), 5.9-9.9% at 64 (the
    bubble); the sends never, and both keys are drawn for at least a third of the class."""
    keys = []
    for student in IDS:
        v = variant(lab09.LAB, student)
        batch, p = int(v.settings["pp_batch"]), int(v.settings["pp_depth"])
        m = batch // (8 // p)
        bubble = (p - 1) / (m + p - 1)
        expected = "free" if bubble < 0.01 else "bubble" if bubble > 0.03 else None
        assert expected is not None and v.questions["pp_free"].spec.correct == expected, (student, batch, p, bubble)
        keys.append(expected)
    shares = {k: keys.count(k) / len(keys) for k in set(keys)}
    print(f"pp_free keys over {len(IDS)} ids: {shares}")
    assert min(shares.values()) >= 1 / 3 and len(shares) == 2


def test_the_sends_cost_little_against_tp_across_nodes():
    """PP 8 at 64 sequences: the sends expose under 0.2% of the step (about 6 ms), TP 16 across two
    nodes exposes seconds; the bubble, 7/71 = 9.9% by hand, is the cost."""
    f = lab09.pp_free_facts(64, 8)
    assert f["bubble"] == pytest.approx(7 / 71)
    assert f["sends"] < 0.002 and f["tp16_s"] > 1.0 and f["tp16_s"] > 100 * f["sends_s"], f
    print(f"PP 8 at 64 sequences: bubble {f['bubble']:.1%}, sends {f['sends_s'] * 1e3:.1f} ms exposed; TP 16 across nodes {f['tp16_s']:.1f} s")


def test_the_worksheet_outcome_judges_the_pp_prediction():
    v = variant(lab09.LAB, "student")
    q = v.questions["pp_free"]
    wrong = next(o.key for o in q.options if o.key != q.key)
    inputs = dict(scenario="70b-h100", tp=8, pp=1, zero_stage=1, micro_batch=1)
    assert lab09.worksheet_outcomes(inputs, {"dp64": None, "pp_free": q.key}, variant=v)["pp_free_correct"] is True
    assert lab09.worksheet_outcomes(inputs, {"dp64": None, "pp_free": wrong}, variant=v)["pp_free_correct"] is False
    assert "pp_free_correct" not in lab09.worksheet_outcomes(inputs, {"dp64": None}, variant=v)  # an old submit records none


def test_a_submit_records_the_pp_prediction_and_the_grader_judges_it(app, ledger_dir):
    """The worksheet's submit carries pp_free beside dp64 once it is committed; the grader reads it
    (SPECS: pp_free_correct) and judges it at the student's variant, right and wrong."""
    import marimo as mo
    from test_notebooks import Pressed

    from labs.grade import grade

    pp = mine(lab09.LAB, "pp_free")
    wrong = next(o.key for o in pp.options if o.key != pp.key)
    for key, right in ((pp.key, True), (wrong, False)):
        for f in ledger_dir.glob("*.json"):
            f.unlink()
        _, defs = app.run(defs={**_both(key), "student_input": mo.ui.text(value="student"),
                                "paragraph_area": mo.ui.text_area(value="TP inside the node, PP across nodes, DP outermost. " * 3),
                                "submit_button": Pressed()})
        assert defs["submitted"]["labs"][lab09.LAB]["worksheet"]["predictions"]["pp_free"] == key
        table, problems = grade([str(ledger_dir)])
        row = table[(table.lab == lab09.LAB) & (table.step == "worksheet")].iloc[0]
        assert not problems and row["status"] == "ok" and bool(row["pp_free_correct"]) is right
