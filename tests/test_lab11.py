"""Lab 11 headless: long context and experts are locked until each prediction is committed, the
options are judged by the engine, the CP and EP byte counts on the page equal closed forms
written out by hand, Ulysses past its KV heads is refused on the page by name, moving a slider
redraws the chart, and the grader recomputes the submitted step."""

import json
import re

import marimo as mo
import pytest

pytestmark = pytest.mark.usefixtures("ledger_dir")

from labs.core import Model
from labs.core.scenarios.lab11 import (
    LAB,
    STEP,
    context_outcomes,
    cp_curves,
    fit_answer,
    fit_answer_stack,
    fit_estimates,
    moe_answer,
    moe_estimate,
    moe_time_answer,
)
from labs.variants import variant
from test_notebooks import LABS, Pressed, committed, shared_app, mine, text_of, with_instruments

LAB11 = next(p for p in LABS if p.name == "11_long_context_moe.py")
# The questions as a headless run sees them: its variant (labs.variants)
FIT, MOE = mine(LAB, "fit"), mine(LAB, "moe")
SETTING = variant(LAB, "student").settings
SKIP_MOE = committed("moe", MOE, None)
SKIP_FIT = committed("fit", FIT, None)
BOTH = {**committed("fit", FIT, FIT.key), **committed("moe", MOE, MOE.key)}


@pytest.fixture(scope="module")
def app():
    return shared_app(LAB11)


def _plain(text: str) -> str:
    import html
    import re

    text = html.unescape(html.unescape(text)).replace("\\u003c", "<").replace("\\u003e", ">")  # callouts carry their HTML in an attribute
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))


# ---- the notebook -----------------------------------------------------------------------------
def test_locked_by_default(app):
    outputs, defs = app.run()
    assert "cp_curve_points" not in defs and "submitted" not in defs
    text = text_of(outputs)
    assert "Commit to a prediction" in text
    for hidden in ("engine says", "Right.", "Key takeaways", "The equations behind", "Reflection", "Llama 3 Table 4", "dense twin"):
        assert hidden not in text


def test_stakeholder_quotes_the_catalog(app):
    text = _plain(text_of(app.run()[0]))
    m = Model.get("llama3-405b")
    assert m.name in text and f"{m.params / 1e9:.0f}B parameters" in text and f"{SETTING['seq_len']:,} tokens per sequence" in text
    assert f"{m.seq_len:,} tokens on TP 8 x PP 16" in text


@pytest.mark.parametrize("key", [o.key for o in FIT.options])
def test_fit_feedback_agrees_with_the_engine(app, key):
    outputs, defs = app.run(defs={**committed("fit", FIT, key), **SKIP_MOE})
    text = text_of(outputs)
    assert ("Right." in text) == (key == FIT.key)
    assert FIT.spec.correct == fit_answer_stack(SETTING["seq_len"], SETTING["cp"], SETTING["flash"])
    assert "cp_curve_points" in defs


@pytest.mark.parametrize("key", [o.key for o in MOE.options])
def test_moe_feedback_agrees_with_the_engine(app, key):
    outputs, _ = app.run(defs={**SKIP_FIT, **committed("moe", MOE, key)})
    assert ("Right." in text_of(outputs)) == (key == MOE.key)
    assert MOE.spec.correct == moe_time_answer(SETTING["platform"], SETTING["moe_gpus"], SETTING["ep"], SETTING["moe_batch"])


def test_fit_answer_follows_from_activations_by_hand():
    """Llama 3 405B's layer keeps s b (12h + 4 kv + 6f + 4a) / t bytes with SP and flash
    attention (labs.core.engine.memory), 8.5 GB per 131,072-token sequence at TP 8. PP 16 with
    7 + 14 x 8 + 7 layers: a middle stage holds 8 layers x 15 micro-batches in flight under 1F1B
    (p - 1 of 16). That alone is over a terabyte; CP 16 divides it by 16."""
    m = Model.get("llama3-405b")
    s, h, kv, f, a = 131072, m.hidden, m.kv_dim, m.ffn, m.heads
    per_layer = s * (12 * h + 4 * kv + 6 * f + 4 * a) / 8
    e = fit_estimates()
    assert e["TP 8 + SP"].memory.activations == pytest.approx(8 * 15 * per_layer)
    assert e["TP 8 + SP + CP 16"].memory.activations == pytest.approx(8 * 15 * per_layer / 16)
    assert 8 * 15 * per_layer > 10 * e["TP 8 + SP"].cluster.gpu.hbm_bytes
    assert fit_answer() == "C" and moe_answer() == "C"


def test_cp_and_ep_bytes_on_the_page_equal_closed_forms(app):
    """The default instrument point (131,072 tokens, CP 16, ring, TP 8, 16 micro-batches, 8 of
    a middle stage's layers, K/V of 8 heads x 128): 3 (cp - 1) blocks of 2 x 8,192 tokens x
    1,024/8 bf16 values per layer. The EP table's DeepSeek-V3 row (see test_context) and the
    dense twin's TP 8 row: 10 x 7/8 x b s h bf16 per layer (SP's 8 collectives and Megatron's 2
    backward re-gathers), 960 micro-batches x 4 layers."""
    text = _plain(text_of(app.run(defs=BOTH)[0]))
    ring = 16 * 8 * 15 * 3 * (2 * 8192 * 1024 / 8 * 2)
    assert f"{ring / 1e9:.2f} GB / GPU / step" in text
    T, h = 4096, 7168
    # Each token's vector crosses the NICs once per other destination node (3.5 of 4) and is
    # forwarded over NVLink to its 8 experts' GPUs (7/8 of them elsewhere in the node): the table
    # gives each link its own column (about a third of the bytes cross nodes).
    common = 120 * 4 * 2 * 58 / 61 * 2
    network, nvlink = common * T * h * 2 * 4 * 7 / 8, common * T * 8 * h * 2 * 7 / 8
    tp = 960 * 4 * 10 * 7 / 8 * T * h * 2
    assert f"EP all-to-all {network / 1e9:,.0f} GB {nvlink / 1e9:,.0f} GB" in text and f"reduce-scatter 0 GB {tp / 1e9:,.0f} GB" in text
    e = moe_estimate(dense=True, tp=8)
    assert next(c for c in e.collectives if c.key == "tp").sent_bytes == pytest.approx(tp)


def test_ulysses_and_all_gather_on_the_page_by_hand(app):
    """MHA (128 KV heads) at CP 16: Ulysses is allowed (16 KV heads per TP rank) and sends
    (cp-1)/cp of Q, K, V and the output, s/cp x 4h/t bf16, twice a pass; all-gather (cp-1)/cp of
    the whole sequence's K and V."""
    pts = {p["algorithm"]: p for p in cp_curves(16, 128) if p["seq_len"] == 131072}
    h = 16384
    ulysses = 16 * 8 * 2 * 15 / 16 * (8192 * 4 * h / 8 * 2)
    gather = 16 * 8 * 2 * 15 / 16 * (2 * 131072 * h / 8 * 2)
    assert pts["ulysses"]["cp_sent"] == pytest.approx(ulysses) and pts["all_gather"]["cp_sent"] == pytest.approx(gather)
    kv = mo.ui.slider(steps=[8, 16, 32, 64, 128], value=128)
    alg = mo.ui.dropdown(options={"u": "ulysses"}, value="u")
    text = _plain(text_of(app.run(defs={**BOTH, **with_instruments(app, "cp_panel", kv_slider=kv, algorithm_dropdown=alg)})[0]))
    assert f"{ulysses / 1e9:.2f} GB / GPU / step" in text and "CP all-to-all" in text


def test_ulysses_repeats_kv_heads_and_stops_at_the_query_heads_on_the_page(app):
    """Llama 3 405B at TP 8: 16 query heads and 1 KV head per rank. CP 16 runs, each KV head
    sent to all 16 CP ranks (its K/V bytes 16-fold: s/cp x (h + 2 x 16 kv)/t per rank); CP 32
    would split 16 query heads 32 ways and is refused."""
    alg = mo.ui.dropdown(options={"u": "ulysses"}, value="u")
    text = _plain(text_of(app.run(defs={**BOTH, **with_instruments(app, "cp_panel", algorithm_dropdown=alg)})[0]))
    assert "each TP rank holds 16 query heads and 1 KV head(s)" in text
    assert "At CP 16 each KV head is repeated to 16 ranks, so the all-to-all carries 16x the K and V bytes" in text
    pts = {p["algorithm"]: p for p in cp_curves(16, 8) if p["seq_len"] == 131072}
    h, kv = 16384, 1024
    assert pts["ulysses"]["cp_sent"] == pytest.approx(16 * 8 * 2 * 15 / 16 * (8192 * (2 * h + 2 * 16 * kv) / 8 * 2))
    cp = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32], value=32)
    text = _plain(text_of(app.run(defs={**BOTH, **with_instruments(app, "cp_panel", algorithm_dropdown=alg, cp_slider=cp)})[0]))
    assert "The engine refuses this setting: cp=32 with cp_algorithm='ulysses'" in text
    assert "16 query head(s) and 1 K/V head(s) on each TP rank" in text


def test_moving_the_cp_slider_redraws_the_chart(app):
    _, before = app.run(defs=BOTH)
    cp = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32], value=4)
    _, after = app.run(defs={**BOTH, **with_instruments(app, "cp_panel", cp_slider=cp)})
    assert after["cp_curve_points"] == cp_curves(4, 8)
    ring = next(p for p in after["cp_curve_points"] if p["algorithm"] == "ring" and p["seq_len"] == 131072)
    assert ring["cp_sent"] == pytest.approx(16 * 8 * 3 * 3 * (2 * 32768 * 1024 / 8 * 2))  # 3 (cp-1) K/V blocks of s/cp tokens
    y0 = re.findall(r'data-step="([^"]+)"', before["cp_figure_view"].text)
    y1 = re.findall(r'data-step="([^"]+)"', after["cp_figure_view"].text)
    assert y1 == [repr(p["step"]) for p in cp_curves(4, 8) if p["error"] is None]
    assert y0 != y1 and "CP 4, 8 KV heads: step time" in after["cp_figure_view"].text


def test_submit_lands_in_the_ledger_and_the_grader_recomputes_it(app, ledger_dir):
    from labs.grade import grade

    fit, moe = mine(LAB, "fit", "lab eleven"), mine(LAB, "moe", "lab eleven")
    outputs, defs = app.run(defs={**committed("fit", fit, fit.key), **committed("moe", moe, moe.key),
                                  "student_input": mo.ui.text(value="lab eleven"), "submit_button": Pressed()})
    step = defs["submitted"]["labs"][LAB][STEP]
    assert step["inputs"] == {"seq_len": 131072, "cp": 16, "kv_heads": 8, "algorithm": "ring", "capacity": 1.25}
    assert step["predictions"] == {"fit": fit.key, "moe": moe.key}
    assert step["outcomes"]["fits"] and step["outcomes"]["fit_correct"] and step["outcomes"]["moe_correct"]
    table, problems = grade([str(ledger_dir)])
    assert not problems
    row = table[(table.lab == LAB) & (table.step == STEP)].iloc[0]
    assert row["status"] == "ok" and bool(row["fit_correct"]) and bool(row["moe_correct"])


def test_grader_flags_tampering_and_refuses_ulysses_past_its_heads():
    from labs.grade import grade_document

    inputs = {"seq_len": 131072, "cp": 16, "kv_heads": 8, "algorithm": "ring", "capacity": 1.25}
    out = context_outcomes(inputs, {"fit": "A", "moe": "C"})
    assert not out["fit_correct"] and out["moe_correct"]
    doc = {"student": "s", "predictions": {}, "labs": {LAB: {STEP: {
        "saved": "now", "inputs": inputs, "predictions": {"fit": "A", "moe": "C"}, "outcomes": {**out, "fit_correct": True}}}}}
    row = grade_document(json.loads(json.dumps(doc)), "f.json")[0]
    assert row["tampered"] and "fit_correct" in row["status"]
    bad = {**inputs, "cp": 32, "seq_len": 131072, "algorithm": "ulysses"}  # 16 query heads per TP rank cannot split 32 ways
    doc["labs"][LAB][STEP]["inputs"] = bad
    row = grade_document(json.loads(json.dumps(doc)), "f.json")[0]
    assert row["status"].startswith("invalid inputs") and "ulysses" in row["status"]
    with pytest.raises(ValueError, match="ulysses"):
        context_outcomes(bad, {})


# ---- issue 38 item 5: EP 64 inside one NVL72 rack against across nodes -------------------------------------
def test_ep64_inside_an_nvl72_rack_against_across_nodes():
    """DeepSeek-V3's layout on 2,048 GPUs of three catalog platforms: its EP 64 crosses 8 nodes'
    InfiniBand on H800 and on DGX B200 alike (the same exposed all-to-all: the same NICs), and stays
    on NVLink 5 inside a GB200 NVL72 rack (64 of its 72 GPUs: one domain per group), over 4x less exposed."""
    from labs.core.engine.hardware import LINKS
    from labs.core.scenarios.lab11 import ep_platform_cluster, ep_platform_rows

    rows = {r["platform"]: r for r in ep_platform_rows()}
    h800, dgx, rack = rows["h800-ib"], rows["dgx-b200"], rows["gb200-nvl72"]
    assert all(r["gpus"] == 2048 for r in rows.values())
    assert (h800["ep_crosses"], h800["ep_nodes"], dgx["ep_crosses"], dgx["ep_nodes"]) == (True, 8, True, 8)
    assert (rack["ep_crosses"], rack["ep_nodes"], rack["ep_link"]) == (False, 1, LINKS["nvlink5"].name)
    assert dgx["ep_exposed"] == pytest.approx(h800["ep_exposed"], rel=0.05) and dgx["compute"] < 0.6 * h800["compute"]
    assert rack["ep_exposed"] < dgx["ep_exposed"] / 4 and rack["step"] < 0.7 * dgx["step"]
    c = ep_platform_cluster("gb200-nvl72")
    assert (c.name, c.gpus_per_node, c.domain_gpus, c.domains) == ("gb200-nvl72", 4, 64, 32)
    assert "attention_flops" in rack["unconfirmed"] and "mamf_flops" in h800["unconfirmed"]


def test_ep64_rack_section_reads_the_engine(app):
    import html
    import re

    from labs.core.scenarios.lab11 import ep_platform_rows

    text = html.unescape(text_of(app.run(defs=BOTH)[0]))
    rows = {r["platform"]: r for r in ep_platform_rows()}
    assert "EP 64 inside one NVL72 rack" in text
    assert f"<strong>{rows['gb200-nvl72']['ep_exposed']:.1f} s</strong> against <strong>{rows['dgx-b200']['ep_exposed']:.1f} s</strong>" in text
    plain = re.sub(r"<[^>]+>", "", text)
    assert "2,048 GB200, GB200 NVL72 racks, 64 GPUs each" in plain and "inside one domain" in plain
    assert "GB200's attention_flops" in plain
