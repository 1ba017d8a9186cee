"""Issue #25's fixed statements (labs_expert_review_e349cc8, newcomer_e349cc8), each pinned to
the engine number it rests on or to a number derived independently of the code that prints it."""

import html
import re
from pathlib import Path

import marimo as mo
import pytest

from labs.core.engine.hardware import Cluster
from test_notebooks import LABS, Pressed, committed, shared_app, mine, right, text_of

pytestmark = pytest.mark.usefixtures("ledger_dir")

ROOT = Path(__file__).resolve().parents[1]
LAB = {p.stem[:2]: p for p in LABS}


def _plain(text: str) -> str:
    """The page's words: a callout keeps its HTML in an attribute, HTML- and JSON-escaped, so
    unescape both first."""
    text = html.unescape(text).replace("\\u003c", "<").replace("\\u003e", ">").replace('\\"', '"').replace("\\n", " ")
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text))


# ---- W7: no control character in any lab source --------------------------------------------
def test_no_lab_source_holds_a_control_character():
    """A BEL byte in an rf-string rendered Act I's '\\approx' as 'B pprox'."""
    bad = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
    sources = sorted((ROOT / "labs").rglob("*.py"))
    assert len(sources) > 20
    found = {str(p.relative_to(ROOT)): [i + 1 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines()) if bad.search(line)] for p in sources}
    assert not {k: v for k, v in found.items() if v}, found


# ---- W6: Lab 05 Act II offers only what its era allows ------------------------------------------
def test_act2_instruments_offer_only_the_eras_values():
    from labs.core.engine.eras import ERAS
    from labs.core.scenarios.lab05 import DESIGN_ERA, design_estimate, plan_from_inputs

    q = mine("05_parallelism", "cause")
    d = mine("05_parallelism", "design")
    _, defs = shared_app(LAB["05"]).run(defs={**committed("act1", q, right(q)), **committed("act2", d, right(d))})
    era = ERAS[DESIGN_ERA]
    offered = {"zero_stage": set(defs["zero_dropdown"].options.values()), "schedule": set(defs["schedule_dropdown"].options.values()),
               "recompute": set(defs["recompute_dropdown"].options.values())}
    assert offered == {"zero_stage": set(era.zero_stage), "schedule": set(era.schedule), "recompute": set(era.recompute)}
    base = dict(tp=8, pp=8, dp=16, micro_batch=1, global_batch=1536, flash_attention=True)
    for field, values in offered.items():
        for value in values:  # every offered value gives a layout, none an "Invalid layout"
            extra = {"virtual_stages": 2} if value == "interleaved" else {}
            assert design_estimate(plan_from_inputs({**base, field: value, **extra})).step_time_s > 0


# ---- W3 and the batch-size limit: the scaling book's B/X > C/W --------------------------------------
def test_scaling_book_threshold_from_the_catalog_is_the_books():
    """The book's GPU chapter: about 2,500 tokens per GPU on an H100 (C = 990 TFLOP/s, W = 400 GB/s
    of node egress). The page computes C/W from the catalog; it must land on the book's figure."""
    from labs.core.scenarios.prose import scaling_book_dp_tokens

    got = scaling_book_dp_tokens(Cluster.get("dgx-h100", nodes=64))
    assert got == pytest.approx(2500, rel=0.02), f"{got:.0f} tokens per GPU against the book's ~2,500"


def test_engine_threshold_is_the_unoverlapped_crossing():
    """The engine's figure is where the exposed (unoverlapped) reduction equals the compute: at
    that many tokens per GPU, half of a step waits."""
    from labs.core.scenarios.lab05 import DP_WALL_GPUS, dp_comm_bound_tokens, dp_wall_estimate

    e = dp_wall_estimate(DP_WALL_GPUS[-1], grad_reduce_dtype="bf16")
    tokens = e.plan.global_batch * e.model.seq_len / DP_WALL_GPUS[-1]
    assert dp_comm_bound_tokens("bf16") == pytest.approx(tokens * e.time.dp_comm / e.time.compute)
    assert not e.plan.dp_overlap


# ---- M10: weak scaling's batch, priced ----------------------------------------------------------
def test_weak_scaling_price():
    """At 512 GPUs weak scaling runs 32,768 sequences of 2,048 tokens (67.1M tokens, 64x the
    stakeholder's); its tokens/s gain is its MFU gain (same model, same FLOPs per token), ~2x."""
    from labs.core.scenarios.prose import weak_scaling_price

    p = weak_scaling_price(512)
    assert p["weak_tokens"] == 512 * 64 * 2048 and p["batch_ratio"] == 64
    assert p["throughput_ratio"] == pytest.approx(p["weak_mfu"] / p["strong_mfu"], rel=1e-9)
    assert 1 < p["throughput_ratio"] < p["batch_ratio"] / 8


# ---- M6: ZeRO-1 is a reduce-scatter of fp32 gradients and an all-gather of bf16 weights -----------
@pytest.mark.parametrize("dtype, grad_bytes", [("fp32", 4), ("bf16", 2)])
def test_act1_messages_are_the_gradients_and_the_weights(dtype, grad_bytes):
    from labs.core.scenarios.lab05 import dp_wall_estimate

    n = 64
    e = dp_wall_estimate(n, grad_reduce_dtype=dtype)
    sent = {c.key: c.sent_bytes for c in e.collectives}
    share = (n - 1) / n
    assert sent["dp_reduce"] / share == pytest.approx(grad_bytes * e.model.params, rel=0.01)
    assert sent["dp_gather"] / share == pytest.approx(2 * e.model.params, rel=0.01)
    assert e.comm_bytes_per_gpu["dp"] == pytest.approx(sent["dp_reduce"] + sent["dp_gather"])


# ---- W2: the 70B at DP = 64 fits FSDP-only with full recompute, not with the worksheet's selective --
def test_dp64_recompute_statement():
    from labs.core.scenarios.prose import dp64_recompute

    r = dp64_recompute("70b-h100")
    assert r["full"].fits and not r["selective"].fits
    assert r["full"].plan.dp == 64 and r["full"].plan.zero_stage == 3 and r["full"].plan.tp == r["full"].plan.pp == 1
    # full recompute runs each forward twice: hardware FLOPs 8 per parameter-token against 6
    assert r["full"].hfu / r["full"].mfu == pytest.approx(4 / 3, rel=0.06)
    assert r["selective"].hfu == pytest.approx(r["selective"].mfu, rel=0.02)


def test_lab09_question_states_the_recompute_setting():
    q = mine("09_64gpu_design", "dp64")
    assert "selective recompute" in q.prompt


# ---- W4: the all-to-all's bytes by link ------------------------------------------------------------
def test_ep_bytes_split_by_link_deepseek_v3():
    """DeepSeek-V3's layout (EP 64 over 8 nodes, at most 4 nodes a token, k = 8): a token's
    vector crosses the NICs min(8(1-(7/8)^8), 4) x 7/8 = 3.5 times and is forwarded over NVLink
    8 x 7/8 = 7 times: a third of the bytes cross nodes (review W4)."""
    from labs.core.scenarios.lab11 import moe_estimate
    from labs.core.scenarios.prose import ep_bytes_by_link

    e = moe_estimate()
    links = ep_bytes_by_link(e)
    remote, fan = min(8 * (1 - (7 / 8) ** 8), 4) * 7 / 8, 8 * 7 / 8
    assert links["network_share"] == pytest.approx(remote / (remote + fan))
    assert links["network"] + links["nvlink"] == pytest.approx(next(c.sent_bytes for c in e.collectives if c.key == "ep"))
    assert ep_bytes_by_link(moe_estimate(ep=8, max_nodes=None))["network"] == 0.0


# ---- M2: Narayanan et al.'s ZeRO-3 step stopped shrinking ----------------------------------------
def test_table2_zero3_step_did_not_shrink():
    """PHYSICS.md: ZeRO-3's aggregate throughput in Table 2 stays flat as the GPUs double; the
    lab's speed-up is the engine's, within 20% of flat."""
    from labs.core.engine.calibration import TABLE2_GPUS, table2_estimate

    mid, hi = TABLE2_GPUS[-2], TABLE2_GPUS[-1]
    speedup = (hi * table2_estimate("ZeRO-3", hi).hardware_tflops_per_gpu) / (mid * table2_estimate("ZeRO-3", mid).hardware_tflops_per_gpu)
    assert speedup == pytest.approx(1.0, abs=0.2)


# ---- Lab 06: recompute's cost, HSDP ----------------------------------------------------------------
def test_full_checkpointing_is_what_fits_and_what_it_costs():
    from labs.core.scenarios.lab06 import FIT_ACTIVATIONS, FIT_GPU, FIT_MODEL, FIT_STAGE, fit_fewest
    from labs.core.scenarios.prose import recompute_rows

    rows = {r["recompute"]: r for r in recompute_rows(FIT_MODEL, FIT_GPU, fit_fewest(), FIT_STAGE, FIT_ACTIVATIONS)}
    assert rows["full"]["fits"] and not rows["selective"]["fits"]
    assert rows["full"]["hfu"] / rows["full"]["mfu"] == pytest.approx(4 / 3, rel=0.06)
    assert rows["full"]["step"] > rows["selective"]["step"]


def test_hsdp_shards_less_and_gathers_over_its_group():
    """HSDP over groups of 16 of 128 GPUs: the sharded state is 8x full sharding's (16 bytes per
    parameter over 16 GPUs, not 128); what stays whole on every GPU is the same in both."""
    from labs.core.scenarios.lab06 import FIT_ACTIVATIONS, FIT_GPU, FIT_MODEL, dp_memory
    from labs.core.scenarios.prose import hsdp_rows

    full, hybrid = hsdp_rows(FIT_MODEL, FIT_GPU, 128, 16, FIT_ACTIVATIONS)
    sharded = {n: dp_memory(FIT_MODEL, n, 3, FIT_ACTIVATIONS).model_state for n in (16, 128)}
    assert hybrid["model_state"] == pytest.approx(sharded[16], rel=0.01) and full["model_state"] == pytest.approx(sharded[128], rel=0.01)
    assert hybrid["fits"] and full["fits"]


# ---- charts: no MFU for a setting that does not fit; step bars as shares --------------------------
def test_mfu_chart_skips_settings_that_do_not_fit():
    """Lab 05's MFU chart (labs.core.dp_svg.mfu_chart, SVG): a point per fitting GPU count, no
    "your setting" for a setting that does not fit."""
    import xml.etree.ElementTree as ET

    from labs.core import dp_svg
    from labs.core.scenarios.lab05 import dp_wall_curve

    curve = dp_wall_curve(dict(global_batch=512, fixed_per_gpu=True, fabric="ib-ndr", algorithm="ring", overlap=True, params_b=13, grad_reduce_dtype="bf16"))
    assert any(not e.fits for e in curve) and any(e.fits for e in curve)
    root = ET.fromstring(dp_svg.mfu_chart({"engine": curve}, {}, next(e for e in curve if not e.fits)))
    hovers = [c.find("title").text for g in root.iter("g") if g.get("data-name") == "engine" for c in g.iter("circle")]
    plotted = {int(t.split(":")[1].split("GPUs")[0].replace(",", "")) for t in hovers}
    assert len(hovers) == len(plotted) and plotted == {e.cluster.gpus for e in curve if e.fits}
    assert all(g.get("class") != "your-setting" for g in root.iter("g"))


# ---- the pages ----------------------------------------------------------------------------------
def test_lab08_states_no_answer_before_the_commits():
    outputs, _ = shared_app(LAB["08"]).run()
    text = _plain(text_of(outputs))
    assert "whatever $N$ is" not in text and "whatever N is" not in text
    assert "lceil" not in text and "1.750 GB" not in text


def test_lab06_milestones_wait_for_the_commit():
    outputs, _ = shared_app(LAB["06"]).run()
    text = _plain(text_of(outputs))
    assert "Milestones to verify" not in text and "141.38" not in text


def test_lab07_prints_no_stray_none():
    u, m = mine("07_pipeline_visualizer", "utilisation"), mine("07_pipeline_visualizer", "microbatches")
    outputs, _ = shared_app(LAB["07"]).run(defs={**committed("utilisation", u, right(u)), **committed("microbatch", m, right(m))})
    assert not re.search(r">\s*None\s*<", text_of(outputs))


def test_lab09_checks_the_spoken_bottleneck_only_after_the_submit():
    q, pp = mine("09_64gpu_design", "dp64"), mine("09_64gpu_design", "pp_free")  # the submit waits for both predictions
    base = {**committed("dp64", q, right(q)), **committed("pp_free", pp, right(pp)), "bottleneck_dropdown": mo.ui.dropdown(options={"dp_reduce": "dp_reduce"}, value="dp_reduce")}
    outputs, defs = shared_app(LAB["09"]).run(defs={**base, "time_number": mo.ui.number(value=-5)})
    text = _plain(text_of(outputs))
    assert "The map says" not in text and "collective ✘" not in text and "collective ✔" not in text
    assert "is not recorded" in text and defs["spoken"]["bottleneck_time_ms"] is None
    outputs, _ = shared_app(LAB["09"]).run(defs={**base, "student_input": mo.ui.text(value="review nine"), "submit_button": Pressed()})
    assert "collective ✘" in _plain(text_of(outputs))


def test_lab10_sdc_check_follows_the_sharding_and_cadence_reads_one_goodput():
    from labs.core.engine.reliability import goodput
    from labs.core.scenarios.lab10 import CLAIM_INTERVALS_MIN, CLAIM_SETTING, setting_costs

    m, c = mine("10_failures_at_scale", "mtbf"), mine("10_failures_at_scale", "cadence")
    outputs, defs = shared_app(LAB["10"]).run(defs={**committed("mtbf", m, right(m)), **committed("cadence", c, right(c))})
    text = _plain(text_of(outputs))
    assert "no two GPUs hold the same shard" in text  # the lab's default sharding is FSDP / ZeRO-3
    assert "at most nothing" not in text
    from labs.core.scenarios.lab10 import CADENCE_INTERVALS_MIN, cadence_setting

    # the reveal (the four intervals) and the takeaways (every minute) price in one setting: the variant's
    s = setting_costs(strategy="sharded", **cadence_setting(defs["variant"].settings))
    assert s["restart_s"] == setting_costs(strategy="sharded", **{**CLAIM_SETTING, "gpus": defs["run_gpus"], "storage_gbps": defs["variant"].settings["storage_gbps"]})["restart_s"]
    for minutes in (*CADENCE_INTERVALS_MIN, CLAIM_INTERVALS_MIN[0]):
        assert f"{goodput(minutes * 60, s['cost'].stall_s, s['restart_s'], s['mtbf_s']):.1%}" in text, minutes


def test_lab11_names_llama3s_order_and_no_negative_change():
    f, m = mine("11_long_context_moe", "fit"), mine("11_long_context_moe", "moe")
    outputs, _ = shared_app(LAB["11"]).run(defs={**committed("fit", f, right(f)), **committed("moe", m, right(m))})
    text = _plain(text_of(outputs))
    assert "[TP, CP, PP, DP]" in text and "Best:" not in text
    assert "changes by -" not in text and "drops no tokens" in text
    assert "InfiniBand" in text and "over NVLink" in text  # the all-to-all's bytes name their links
