"""Lab 10 headless: locked before the commit, every option judged by the engine, the numbers on
the page are the engine's, submit lands in the ledger and the grader recomputes it."""

import json

import pytest

pytestmark = pytest.mark.usefixtures("ledger_dir")

from labs.core import failure_svg
from labs.core.engine.reliability import goodput, job_mtbf_s
from labs.core.scenarios.lab10 import (
    MTBF_RANGES,
    cadence_answer,
    cadence_claims,
    inverse_rows,
    mtbf_answer,
)
from labs.variants import variant
from test_notebooks import LABS, Pressed, committed, load_app, mine, right, text_of, with_instruments, wrong

LAB10 = next(p for p in LABS if p.name == "10_failures_at_scale.py")
# The questions as a headless run sees them: its variant (labs.variants)
MT, CA = mine("10_failures_at_scale", "mtbf"), mine("10_failures_at_scale", "cadence")
SETTING = variant("10_failures_at_scale", "student").settings
BOTH = {**committed("mtbf", MT, right(MT)), **committed("cadence", CA, CA.key)}
GATED = ("Key takeaways", "The equations behind cadence", "Even a free checkpoint needs R under", "mean goodput (simulated)", "Reflection")


@pytest.fixture(scope="module")
def app():
    return load_app(LAB10)


def test_locked_by_default(app):
    outputs, defs = app.run()
    assert "setting" not in defs and "submitted" not in defs and "simulation" not in defs
    text = text_of(outputs)
    assert "Commit to a prediction" in text
    for heading in GATED:
        assert heading not in text


def test_the_mtbf_answer_is_the_range_holding_llama3s_3_1_hours():
    lo, hi = MTBF_RANGES[mtbf_answer()]
    assert lo <= 54 * 24 / 419 * 3600 < hi  # hand-derived from the paper, not from the engine
    assert mtbf_answer() == "C"


def test_the_interruptions_asked_for_are_llama3s_rate_at_the_variant():
    """Llama 3's 419 unexpected interruptions on 16,384 GPUs in 54 days, scaled to the variant's
    GPUs and days: derived from the paper by hand, not from the engine."""
    assert MT.spec.answer == pytest.approx(419 * SETTING["gpus"] / 16384 * SETTING["days"] / 54, rel=1e-9)
    assert MT.judge(f"{MT.spec.answer:.0f}") and not MT.judge("0") and not MT.judge(str(2 * MT.spec.answer))


def test_the_cadence_claims_are_judged_false_except_one():
    claims = cadence_claims()
    assert sum(claims.values()) == 1 and claims[cadence_answer()]
    # The variant's question (second edition): the interval of the four with the most goodput, by the closed form
    from labs.core.engine.reliability import goodput
    from labs.core.scenarios.lab10 import CADENCE_INTERVALS_MIN, cadence_setting, setting_costs

    s = setting_costs(strategy="sharded", **cadence_setting(SETTING))
    g = [goodput(m * 60, s["cost"].stall_s, s["restart_s"], s["mtbf_s"]) for m in CADENCE_INTERVALS_MIN]
    assert CA.spec.correct == "ABCD"[g.index(max(g))]
    assert max(g) - sorted(g)[-2] > 0.005


@pytest.mark.parametrize("mtbf, cadence", list(zip([right(MT), wrong(MT)] * 2, [o.key for o in CA.options])))
def test_each_options_feedback_agrees_with_the_engine(app, mtbf, cadence):
    outputs, _ = app.run(defs={**committed("mtbf", MT, mtbf), **committed("cadence", CA, cadence)})
    text = text_of(outputs)
    first, second = text.split("B1 · Cadence", 1)  # the MTBF reveal sits above part B, the cadence reveal below
    assert ("Right:" in first) == (mtbf == right(MT))
    assert ("Right." in second) == (cadence == CA.key)
    assert f"{job_mtbf_s(SETTING['gpus']) / 3600:.1f} hours" in first


def test_unlocked_page_shows_the_engines_numbers(app):
    outputs, defs = app.run(defs=BOTH)
    text = text_of(outputs)
    for heading in GATED:
        assert heading in text
    s, v = defs["setting"], defs["cadence_view"]
    assert v["goodput"] == pytest.approx(goodput(v["tau"], v["stall"], s["restart_s"], s["mtbf_s"]))
    assert f"{v['goodput']:.1%}" in text
    sim = defs["simulation"]
    assert abs(sim.goodput.mean() / sim.closed_form - 1) < 0.02
    for row in inverse_rows():
        if row["interval_s"] is not None:
            assert f"{row['interval_s'] / 60:.1f} min" in text


def test_submit_lands_in_the_ledger_and_the_grader_recomputes_it(app, ledger_dir):
    from labs.grade import grade_document

    _, defs = app.run(defs={**BOTH, "submit_button": Pressed()})
    doc = defs["submitted"]
    step = doc["labs"]["10_failures_at_scale"]["cadence"]
    assert step["outcomes"]["mtbf_correct"] and step["outcomes"]["cadence_correct"]
    assert step["outcomes"]["job_mtbf_h"] == pytest.approx(54 * 24 / 419 * 16384 / SETTING["gpus"])
    assert float(doc["predictions"]["10_failures_at_scale"]["mtbf"]["answer"]) == pytest.approx(right(MT), rel=1e-5)
    rows = grade_document(doc, "ledger.json")
    assert rows[0]["status"] == "ok" and not rows[0]["tampered"] and rows[0]["right"] == 2
    forged = json.loads(json.dumps(doc))
    forged["labs"]["10_failures_at_scale"]["cadence"]["outcomes"]["goodput"] = 0.99
    assert grade_document(forged, "forged.json")[0]["tampered"]
    bad = json.loads(json.dumps(doc))
    bad["labs"]["10_failures_at_scale"]["cadence"]["inputs"]["gpus"] = 1000  # not a multiple of TP x PP = 128
    assert grade_document(bad, "bad.json")[0]["status"].startswith("invalid inputs")


def test_a_setting_too_broken_to_simulate_is_explained(app):
    """405B written by one writer over a 0.5 GB/s file system at 65,536 GPUs: hours of stall
    against a 46-minute MTBF. The page says so instead of drawing millions of failures."""
    import marimo as mo

    from labs.core.scenarios.lab10 import STRATEGY_LABELS

    # each instrument is made in a cell with its panel (and the dropdowns together): the cell's other names keep theirs
    slow = {**BOTH, **with_instruments(app, "storage_panel", storage_slider=mo.ui.slider(steps=[0.5, 2000], value=0.5)),
            **with_instruments(app, "gpus_panel", gpus_slider=mo.ui.slider(steps=[16384, 65536], value=65536)),
            **with_instruments(app, "dropdowns_panel", strategy_dropdown=mo.ui.dropdown(options=STRATEGY_LABELS, value="sync (gathered to one writer)"))}
    outputs, defs = app.run(defs=slow)
    assert defs["simulation"] is None and "expected failures" in defs["simulation_error"]
    assert job_mtbf_s(65536) == pytest.approx(54 * 24 * 3600 / 419 / 4)  # 46 minutes, by hand
    assert "This setting is not simulated" in text_of(outputs)


@pytest.mark.parametrize("model", [["llama3-405b"], {"a": 1}])
def test_an_unhashable_model_is_refused_by_name(model):
    """A direct call with a list for the model (the grader checks inputs first) is refused with a
    ValueError naming the field, not a TypeError from the layouts' lookup."""
    from labs.core.scenarios.lab10 import cadence_outcomes

    inputs = dict(model=model, gpus=16384, zero_stage=3, strategy="sharded", storage_gbps=2000.0, relaunch_min=10.0, swap_min=60.0,
                  hot_spares=False, interval_min=30.0)
    with pytest.raises(ValueError, match="model must be one of"):
        cadence_outcomes(inputs, {})


@pytest.mark.parametrize("gpus", [4096, 16384, 65536])
def test_the_mtbf_chart_draws_the_engines_line_and_the_job_on_it(gpus):
    """The MTBF chart is plain SVG (a GPU move redraws it): every point's hover text reads Llama 3's
    rate by hand (54 days x 24 h / 419 stops at 16,384 GPUs, scaled by 16,384 / N), the line falls
    one decade of hours per decade of GPUs, and the job's diamond sits on the line's point at N."""
    import itertools
    import re

    svg = failure_svg.mtbf_svg(gpus)
    hours = lambda n: 54 * 24 / 419 * 16384 / n
    titles = re.findall(r"<title>([\d,]+) GPUs: ([\d,.]+) h</title>", svg)
    assert [int(n.replace(",", "")) for n, _ in titles] == [2**k for k in range(3, 18)]
    for n, h in titles:
        assert h == f"{hours(int(n.replace(',', ''))):,.2f}"
    points = [tuple(map(float, p.split(","))) for p in re.search(r'<polyline[^>]*points="([^"]+)"', svg).group(1).split()]
    slopes = [(y2 - y1) / (x2 - x1) for (x1, y1), (x2, y2) in itertools.pairwise(points)]
    assert max(slopes) - min(slopes) < 0.01 * max(slopes)  # a straight line in log-log (to the SVG's 0.1 px)
    you = re.search(r'<g class="your-job"><path d="M([\d.]+),([\d.]+)L.*?<title>your job: ([\d,]+) GPUs, ([\d,.]+) h</title>', svg)
    assert int(you.group(3).replace(",", "")) == gpus and you.group(4) == f"{hours(gpus):,.2f}"
    top = points[[2**k for k in range(3, 18)].index(gpus)]
    assert float(you.group(1)) == pytest.approx(top[0], abs=0.06)  # the diamond's top vertex: the point's x, 8 px above it
    assert float(you.group(2)) == pytest.approx(top[1] - 8, abs=0.06)


@pytest.mark.parametrize("gpus, minutes", [(4096, 1), (16384, 30), (65536, 1440)])
def test_the_cadence_chart_draws_goodput_by_hand(gpus, minutes):
    """The cadence chart is plain SVG (every GPU, checkpoint, restart and interval move redraws it):
    its marker carries the interval and goodput tau / ((M + R)(exp((tau + C)/M) - 1)) written out
    here with math.exp, not the engine's; its hover texts (every other point of the 80) read the
    goodput line's values; the four shares of a point add up to 100 with the goodput; Young's line
    stands at sqrt(2CM) on the same log axis as the marker."""
    import math
    import re

    from labs.core.engine.reliability import cadence_curve, daly_interval, young_interval
    from labs.core.scenarios.lab10 import RUN_MODEL, setting_costs

    s = setting_costs(RUN_MODEL, gpus, 3, "sharded", 2000, 10, 60, False)
    c, r, m, tau = s["cost"].stall_s, s["restart_s"], s["mtbf_s"], minutes * 60.0
    by_hand = lambda t: t / ((m + r) * (math.exp((t + c) / m) - 1))
    curve = cadence_curve(c, r, m, points=80)
    view = {"tau": tau, "goodput": by_hand(tau), "young": young_interval(c, m), "daly": daly_interval(c, m), "curve": curve}
    svg = failure_svg.cadence_svg(view)
    marker = re.search(r'<g class="your-interval" data-minutes="([^"]+)" data-goodput="([^"]+)"><path d="M([\d.]+),', svg)
    assert float(marker.group(1)) == minutes and float(marker.group(2)) == pytest.approx(100 * by_hand(tau), rel=1e-12)
    hovers = re.findall(r"<title>([\d.e+]+) min: goodput ([\d.]+)%, lost ([\d.]+)%, stalls ([\d.]+)%, restarts ([\d.]+)%</title>", svg)
    assert len(hovers) == 40
    for (x, g, lost, stalls, restarts), t in zip(hovers, curve["interval_s"][::2]):
        assert float(x) == pytest.approx(t / 60, rel=5e-3)  # 3 significant digits and float(g) == pytest.approx(100 * by_hand(t), abs=0.051)
        assert float(g) + float(lost) + float(stalls) + float(restarts) == pytest.approx(100, abs=0.21)
    young_x = float(re.search(r'<line x1="([\d.]+)"[^>]*stroke-dasharray="3,3"/><text[^>]*>Young', svg).group(1))
    # the x axis is log10: the marker's x (its top vertex) and Young's line sit log10(tau / young) apart, in px per decade
    first, last = (float(p.split(",")[0]) for p in re.search(r'<polyline[^>]*points="([^"]+)"', svg).group(1).split()[::79])
    per_decade = (last - first) / math.log10(curve["interval_s"][-1] / curve["interval_s"][0])
    assert float(marker.group(3)) - young_x == pytest.approx(per_decade * math.log10(tau / math.sqrt(2 * c * m)), abs=0.15)
