"""Lab 09 headless: the 64-GPU worksheet is locked until the prediction is committed, the options
are judged by the engine, the communication map's rows match byte counts derived by hand from
the model's shape, the grid's groups are the rank layout's, and the grader recomputes the
worksheet (and keeps the paragraph)."""

import json

import marimo as mo
import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("ledger_dir")

from labs.core import Cluster, Model, Plan, estimate
from labs.core import charts
from labs.core.engine.collectives import ring_ramp
from labs.core.engine.hardware import NCCL_BASE_LATENCY_S
from labs.core.engine.layout import RANK_ORDERS, axis_strides, cross_node_links, groups, rank_coordinates
from labs.core.engine.perf import plan_columns
from labs.core.scenarios.lab09 import (
    GLOBAL_BATCH,
    LAB,
    dp64_answer,
    dp64_answer_v6,
    dp64_estimate,
    map_rows,
    worksheet_estimate,
    worksheet_outcomes,
)
from labs.core.engine.step import evaluate
from labs.variants import variant
from test_notebooks import LABS, Pressed, committed, load_app, mine, text_of

DP64 = mine(LAB, "dp64")  # the question as a headless run sees it: its variant (labs.variants)
MICRO_BATCH = variant(LAB, "student").settings["micro_batch"]
RECOMPUTE = variant(LAB, "student").settings["recompute"]

LAB09 = next(p for p in LABS if p.name == "09_64gpu_design.py")
DP_INNER = "cp-dp-tp-pp"


@pytest.fixture(scope="module")
def app():
    return load_app(LAB09)


# ---- the notebook ---------------------------------------------------------------------------
def test_locked_by_default(app):
    outputs, defs = app.run()
    assert "design" not in defs and "submitted" not in defs and "grid_figure" not in defs
    text = text_of(outputs)
    assert "Commit to a prediction" in text
    for hidden in ("engine says", "Right.", "Key takeaways", "The equations behind", "Reflection", "Misconceptions"):
        assert hidden not in text


def test_stakeholders_quote_the_catalog(app):
    text = text_of(app.run()[0])
    for name, gb in (("llama2-13b", "13.0B"), ("llama2-70b", "69.0B")):
        assert Model.get(name).name in text and gb in text
    assert f"{GLOBAL_BATCH:,} sequences" in text


@pytest.mark.parametrize("key", [o.key for o in DP64.options])
def test_prediction_feedback_agrees_with_the_engine(app, key):
    outputs, defs = app.run(defs=committed("dp64", DP64, key))
    text = text_of(outputs)
    assert ("Right." in text) == (key == DP64.key)
    assert DP64.spec.correct == dp64_answer_v6(MICRO_BATCH, RECOMPUTE) and f"micro-batch {MICRO_BATCH}" in text
    assert "design" in defs and "grid_figure" in defs


def test_dp64_answer_follows_from_memory_by_hand():
    """Plain DP keeps at least 16 bytes per parameter on every GPU (18 here: the lab reduces fp32
    gradients, Megatron's bf16 convention): more than any 80 GB GPU holds for either model.
    ZeRO-3 over 64 GPUs leaves 18 P / 64 of state plus the two layers it holds gathered (bf16),
    which fits the 13B; the 70B's activations alone (80 layers x 34 s h bytes at micro-batch 1,
    no TP) exceed the HBM."""
    for name, cluster in (("llama2-13b", "dgx-a100"), ("llama2-70b", "dgx-h100")):
        hbm = Cluster.get(cluster, nodes=8).gpu.hbm_bytes
        assert 16 * Model.get(name).params > hbm
    m70 = Model.get("llama2-70b")
    assert m70.layers * 34 * m70.seq_len * m70.hidden > Cluster.get("dgx-h100", nodes=8).gpu.hbm_bytes
    m13 = Model.get("llama2-13b")
    z3 = worksheet_estimate("13b-a100", 1, 1, 3)
    assert z3.memory.model_state == pytest.approx((2 + 4 + 12) * m13.params / 64 + 2 * 2 * m13.layer_params, rel=1e-9)
    assert z3.fits and not worksheet_estimate("70b-h100", 1, 1, 3).fits
    assert dp64_answer() == "C"
    z3_4 = worksheet_estimate("13b-a100", 1, 1, 3, 4)  # at micro-batch 4 the 13B's activations no longer fit: no job does
    assert not z3_4.fits and z3_4.memory.activations > z3.memory.activations * 3
    assert dp64_answer(4) == "D"


def test_dp64_sixth_edition_follows_from_memory_by_hand():
    """Edition 6 (issue 38 item 2): ZeRO-2 keeps the whole bf16 weights on every GPU and 1/64 of the
    fp32 gradients and Adam state, 2 P + 16 P / 64 of state, ZeRO-3 18 P / 64 plus the two layers it
    holds gathered. With selective recompute the 13B's ZeRO-2 state is 2 x 13.0B + 16 x 13.0B / 64 =
    29.3 GB: with micro-batch 1's activations it fits 86 GB (key: the 13B with ZeRO-2), with
    micro-batch 2's it does not and ZeRO-3 does (the 13B with ZeRO-3 only); at 4 nothing fits; full
    recompute fits both jobs with ZeRO-3. Each of the four options is right at one case."""
    m13 = Model.get("llama2-13b")
    z2 = dp64_estimate("13b-a100", 2, 1, "selective")
    assert z2.memory.model_state == pytest.approx(2 * m13.params + 16 * m13.params / 64, rel=0.02), z2.memory.model_state / 1e9
    keys = {(mb, rc): dp64_answer_v6(mb, rc) for mb in (1, 2, 4) for rc in ("selective", "full")}
    print(keys)
    assert keys == {(1, "selective"): "C_zero2", (2, "selective"): "C_zero3", (4, "selective"): "D",
                    (1, "full"): "B", (2, "full"): "B", (4, "full"): "B"}
    hbm = z2.cluster.gpu.hbm_bytes
    assert z2.memory.total < 0.95 * hbm < 1.05 * hbm < dp64_estimate("13b-a100", 2, 2, "selective").memory.total
    assert dp64_estimate("13b-a100", 3, 2, "selective").memory.total < 0.95 * hbm


def test_rank_order_moves_tp_out_of_the_node(app):
    _, inner = app.run(defs=committed("dp64", DP64, DP64.key))
    order = mo.ui.radio(options={o: o for o in RANK_ORDERS}, value=DP_INNER)
    # the design's six instruments are made in one cell: its other definitions as the first run made them
    instruments = {k: inner[k] for k in ("scenario_dropdown", "tp_dropdown", "pp_dropdown", "zero_dropdown", "microbatch_dropdown", "design_panel", "design_inputs")}
    outputs, outer = app.run(defs={**committed("dp64", DP64, DP64.key), **instruments, "order_radio": order})
    assert inner["design"].plan.rank_order == RANK_ORDERS[0] and outer["design"].plan.rank_order == DP_INNER
    tp_in = next(c for c in inner["design"].collectives if c.key == "tp")
    tp_out = next(c for c in outer["design"].collectives if c.key == "tp")
    assert not tp_in.crosses_nodes and tp_out.crosses_nodes
    assert tp_out.sent_bytes == pytest.approx(tp_in.sent_bytes) and tp_out.exposed_s > 10 * tp_in.exposed_s
    assert "places the 8 GPUs of each TP group" in text_of(outputs)


def test_submit_lands_in_the_ledger_and_the_grader_recomputes_it(app, ledger_dir):
    from labs.grade import grade

    paragraph = "TP 8 inside each node for the per-layer collectives; DP 8 across nodes on the rails; ZeRO-1 for the optimizer. " * 5
    est = worksheet_estimate("70b-h100", 8, 1, 1)
    dominant = est.dominant_collective
    nine, pp = mine(LAB, "dp64", "lab nine"), mine(LAB, "pp_free", "lab nine")
    outputs, defs = app.run(defs={
        **committed("dp64", nine, nine.key), **committed("pp_free", pp, pp.key),
        "student_input": mo.ui.text(value="lab nine"),
        "paragraph_area": mo.ui.text_area(value=paragraph),
        "bottleneck_dropdown": mo.ui.dropdown(options={"tp": "tp"}, value="tp"),
        "link_dropdown": mo.ui.dropdown(options={"intra": "intra"}, value="intra"),
        "time_number": mo.ui.number(start=0, stop=1e7, value=round(dominant.exposed_s * 1e3, 1)),
        "submit_button": Pressed(),
    })
    step = defs["submitted"]["labs"][LAB]["worksheet"]
    text = text_of(outputs)
    assert "The engine's best plan beside yours" in text and "The recipe, applied" in text
    assert "collective ✔ · link ✔ · time ✔" in text
    assert step["inputs"]["paragraph"] == paragraph and len(paragraph) > 100
    assert step["predictions"] == {"dp64": nine.key, "pp_free": pp.key}
    out = step["outcomes"]
    assert out["dominant"] == "tp" and out["dominant_link"] == "intra"
    assert out["bottleneck_correct"] and out["link_correct"] and out["time_correct"] and out["prediction_correct"]
    table, problems = grade([str(ledger_dir)])
    assert not problems
    row = table[(table.lab == LAB) & (table.step == "worksheet")].iloc[0]
    assert row["status"] == "ok" and bool(row["prediction_correct"])
    assert row["input.paragraph"] == paragraph and row["dominant"] == "tp"


def test_grader_flags_a_tampered_bottleneck(ledger_dir):
    from labs.grade import grade_document

    inputs = {"scenario": "70b-h100", "tp": 8, "pp": 1, "zero_stage": 1, "micro_batch": 1, "rank_order": RANK_ORDERS[0],
              "bottleneck": "dp_reduce", "bottleneck_link": "inter", "bottleneck_time_ms": 1.0, "paragraph": "x" * 1500}
    outcomes = worksheet_outcomes(inputs, {"dp64": "A"})
    assert not outcomes["bottleneck_correct"] and not outcomes["prediction_correct"]
    doc = {"student": "s", "predictions": {}, "labs": {LAB: {"worksheet": {
        "saved": "now", "inputs": inputs, "predictions": {"dp64": "A"}, "outcomes": {**outcomes, "bottleneck_correct": True}}}}}
    row = grade_document(json.loads(json.dumps(doc)), "f.json")[0]
    assert row["tampered"] and "bottleneck_correct" in row["status"]


# ---- the communication map against hand-derived byte counts --------------------------------
def _row(est, key):
    return next(r for r in map_rows(est) if r["key"] == key)


def test_map_rows_tp8_dp8_by_hand():
    """Llama 2 70B, TP 8 x DP 8, ZeRO-1, micro-batch 1, 1,024 sequences: m = 128 micro-batches
    per GPU. TP with SP: an all-gather and a reduce-scatter of b s h bf16 activations twice per
    layer per pass, forward and backward, and in the backward two all-gathers more (Megatron's
    linears re-gather the QKV and FC1 inputs for their weight gradients): 10 a layer, each moving
    (t-1)/t of them. DP (ZeRO-1): a
    reduce-scatter of the fp32 gradients of the GPU's 1/8 of the model and an all-gather of its
    bf16 weights, (n-1)/n of each."""
    model = Model.get("llama2-70b")
    est = worksheet_estimate("70b-h100", 8, 1, 1)
    m, act = GLOBAL_BATCH // 8, model.seq_len * model.hidden * 2
    tp = next(c for c in est.collectives if c.key == "tp")
    assert tp.calls == m * model.layers * (4 * 2 + 2)
    assert tp.sent_bytes == pytest.approx(m * model.layers * 10 * 7 / 8 * act)
    assert _row(est, "tp")["GB sent / GPU / step"] == pytest.approx(tp.sent_bytes / 1e9)
    intra = est.cluster.intra
    # each rank's 1/8 slice rides NCCL's measured ramp inside the node (labs.core.engine.collectives.ring_ramp)
    per_call = 7 * intra.latency_s + NCCL_BASE_LATENCY_S + 7 / 8 * act / intra.effective_bytes_per_s * ring_ramp(act / 8)
    assert tp.wire_s == pytest.approx(tp.calls * per_call, rel=1e-9)
    assert (tp.group, tp.members_per_node, tp.link) == (8, 8, intra.name)
    shard = model.params / 8
    reduce, gather = (next(c for c in est.collectives if c.key == k) for k in ("dp_reduce", "dp_gather"))
    assert reduce.op == "reduce-scatter" and reduce.sent_bytes == pytest.approx(7 / 8 * 4 * shard)
    assert gather.sent_bytes == pytest.approx(7 / 8 * 2 * shard)
    assert (reduce.group, reduce.members_per_node, reduce.link) == (8, 1, est.cluster.inter.name)
    assert {c.key for c in est.collectives} == {"tp", "dp_reduce", "dp_gather"}  # no PP, no CP


def test_map_rows_are_the_estimates_collectives():
    """The lab's table shows the Estimate's per-collective numbers, unit-converted only."""
    for order in RANK_ORDERS:
        est = worksheet_estimate("70b-h100", 4, 4, 1, rank_order=order)
        rows = map_rows(est)
        assert [r["key"] for r in rows] == [c.key for c in est.collectives]
        for r, c in zip(rows, est.collectives):
            assert r["calls / step"] == c.calls and r["GB sent / GPU / step"] == c.sent_bytes / 1e9
            assert r["wire ms"] == c.wire_s * 1e3 and r["exposed ms"] == c.exposed_s * 1e3 and r["link"] == c.link
        assert sum(r["dominant"] for r in rows) == 1


def test_map_pp_row_by_hand():
    """TP 8 x PP 2 x DP 4: each GPU sends its 1/t share of a micro-batch's activations across
    the stage boundary forward and gets the gradient back: 2 m b s h x 2 / t bytes."""
    model = Model.get("llama2-70b")
    est = worksheet_estimate("70b-h100", 8, 2, 1)
    m = GLOBAL_BATCH // 4
    pp = next(c for c in est.collectives if c.key == "pp")
    assert pp.calls == 2 * m
    assert pp.sent_bytes == pytest.approx(2 * m * model.seq_len * model.hidden * 2 / 8)
    assert pp.crosses_nodes and pp.link == est.cluster.inter.name  # stages 32 ranks apart


def test_map_adds_up_to_the_step():
    """The map's exposed times are the step's own terms: TP's, PP's and DP's sum to them."""
    for args in ((8, 1, 1), (4, 4, 1), (8, 2, 2), (1, 1, 3), (2, 1, 0)):
        for order in RANK_ORDERS:
            est = worksheet_estimate("13b-a100", *args, rank_order=order)
            by = {c.key: c for c in est.collectives}
            assert (by["tp"].exposed_s if "tp" in by else 0.0) == pytest.approx(est.time.tp_comm)
            assert sum(by[k].exposed_s for k in ("dp_reduce", "dp_gather") if k in by) == pytest.approx(est.time.dp_comm)
            assert (by["pp"].exposed_s if "pp" in by else 0.0) == pytest.approx(est.time.pp_comm)
            assert est.dominant_collective is max(est.collectives, key=lambda c: c.exposed_s)


# ---- the rank layout and the grid ------------------------------------------------------------
def test_rank_coordinates_by_hand():
    tp8 = groups(RANK_ORDERS[0], 8, 1, 8, 1, "tp")
    assert tp8 == [list(range(8 * k, 8 * k + 8)) for k in range(8)]
    assert groups(DP_INNER, 8, 1, 8, 1, "tp")[0] == [0, 8, 16, 24, 32, 40, 48, 56]
    assert groups(DP_INNER, 8, 1, 8, 1, "dp")[0] == list(range(8))
    assert groups("tp-pp-cp-dp", 4, 1, 4, 4, "pp")[0] == [0, 4, 8, 12]
    coords = rank_coordinates(RANK_ORDERS[0], 4, 1, 4, 4)
    assert coords[37].tolist() == [37 % 4, 0, (37 // 4) % 4, 37 // 16]
    s = axis_strides(RANK_ORDERS[0], 4, 2, 8, 2)
    assert {k: float(v) for k, v in s.items()} == {"tp": 1, "cp": 4, "dp": 8, "pp": 64}
    with pytest.raises(ValueError, match="rank_order"):
        Plan(rank_order="pp-dp-tp")


def test_grid_draws_the_layout():
    inner = worksheet_estimate("70b-h100", 8, 1, 1)
    outer = worksheet_estimate("70b-h100", 8, 1, 1, rank_order=DP_INNER)
    assert cross_node_links(RANK_ORDERS[0], 8, 1, 8, 1, "tp", 8) == []
    assert len(cross_node_links(DP_INNER, 8, 1, 8, 1, "tp", 8)) == 8 * 8  # eight rings of eight, every hop between nodes
    fig_in, fig_out = charts.gpu_grid(inner, "tp"), charts.gpu_grid(outer, "tp")
    cells_in = next(t for t in fig_in.data if t.mode == "markers+text")
    cells_out = next(t for t in fig_out.data if t.mode == "markers+text")
    assert list(cells_in.marker.color) == [r // 8 for r in range(64)]
    assert list(cells_out.marker.color) == [r % 8 for r in range(64)]
    assert not any(t.mode == "lines" for t in fig_in.data) and any(t.mode == "lines" for t in fig_out.data)
    oom = charts.gpu_grid(worksheet_estimate("70b-h100", 1, 1, 3), "dp")
    assert any((t.name or "").startswith("out of memory (64 GPUs)") for t in oom.data)
    hover = np.asarray(cells_in.customdata)[:, 6]
    assert hover == pytest.approx([inner.memory.total / 1e9] * 64)


def test_grid_and_placements_read_the_nvlink_domain_not_the_host():
    """Issue 38 item 5: on two GB200 NVL72 racks (hosts of 4 GPUs in 72-GPU NVLink domains) TP 16 with
    DP innermost puts ranks 9 apart: each of the 9 TP rings has 8 members per rack and leaves a rack
    twice (the ring closes), 18 hops; the grid frames whole racks (18 node rows each) and draws those
    18, not the 144 that the host's 4 GPUs would give (every hop). Placements say "NVLink domain"."""
    from labs.core.scenarios.lab09 import placements

    plan = Plan(tp=16, pp=1, dp=9, micro_batch=1, global_batch=72, zero_stage=1, rank_order=DP_INNER)
    model = Model.get("llama2-70b")
    rack = estimate(model, Cluster.get("gb200-nvl72", domains=2), plan)
    fig = charts.gpu_grid(rack, "tp")
    frames = fig.layout.shapes
    assert len(frames) == 2 and [(f.y0, f.y1) for f in frames] == [(-0.45, 17.45), (17.55, 35.45)]
    by_hand = cross_node_links(DP_INNER, 16, 1, 9, 1, "tp", 72)
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(by_hand) == 9 * 2 and len(lines[0].x) // 3 == 18 and lines[0].name == "TP group hops across NVLink domains (18)"
    assert len(cross_node_links(DP_INNER, 16, 1, 9, 1, "tp", 4)) == 144  # what the host's 4 would have drawn
    assert placements(rack)["tp"] == "across 2 NVLink domains, 8 per domain (9 ranks apart)"
    inside = estimate(model, Cluster.get("gb200-nvl72", domains=1), Plan(tp=8, pp=1, dp=9, micro_batch=1, global_batch=72, zero_stage=1))
    assert placements(inside)["tp"] == "inside one NVLink domain (8 of its 72 GPUs, 1 apart)"
    assert placements(worksheet_estimate("70b-h100", 8, 1, 1))["tp"].startswith("inside one node (8 of its 8 GPUs")


def test_default_rank_order_is_megatrons():
    """A plan without a rank order and the step model without the column are today's."""
    model, cluster = Model.get("llama2-13b"), Cluster.get("dgx-a100", nodes=8)
    plan = Plan(tp=4, pp=2, dp=8, global_batch=64, zero_stage=1)
    assert plan.rank_order == "tp-cp-dp-pp"
    cols = {k: np.asarray([v]) for k, v in plan_columns(plan).items()}
    without = {k: v for k, v in cols.items() if k != "rank_order"}
    a, b = evaluate(model, cluster, cols), evaluate(model, cluster, without)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert estimate(model, cluster, plan).step_time_s == pytest.approx(float(a["step_time_s"][0]))


def test_map_cp_and_ep_rows_where_used():
    """CP (Llama 3 8B, 8,192 tokens, CP 2 as a ring, TP 2): each attention pass passes the K and V
    block of s/cp tokens (2 s/cp x kv_dim/t bf16 values) to the next rank, once forward and
    twice (K, V and their gradients) backward, cp-1 times. EP (DeepSeek-V3): one dispatch and
    one combine per MoE layer and pass, exposed in full, the step's own expert time."""
    model = Model.get("llama3-8b")
    est = estimate(model, Cluster.get("dgx-h100", nodes=2), Plan(tp=2, cp=2, dp=4, global_batch=32, zero_stage=1, sequence_parallel=True))
    cp = next(c for c in est.collectives if c.key == "cp")
    m, s = 32 // 4, model.seq_len // 2
    kv_block = 2 * s * model.kv_dim / 2 * 2
    assert cp.calls == m * model.layers * (2 - 1) * 2
    assert cp.sent_bytes == pytest.approx(m * model.layers * (2 - 1) * 3 * kv_block)
    assert (cp.group, cp.link) == (2, est.cluster.intra.name)
    moe = Model.get("deepseek-v3")
    est = estimate(moe, Cluster.get("dgx-h100", nodes=32), Plan(tp=1, pp=16, dp=16, ep=16, global_batch=512, zero_stage=1, recompute="full"))
    ep = next(c for c in est.collectives if c.key == "ep")
    assert ep.calls == (512 // 16) * -(-moe.layers // 16) * 2 * 3  # m x the slowest stage's ceil(61/16) layers x 2 x (fwd, bwd, re-run fwd)
    assert ep.exposed_s == pytest.approx(est.time.ep_comm) and ep.wire_s == ep.exposed_s
    assert (ep.group, ep.members_per_node) == (16, 8) and ep.crosses_nodes
