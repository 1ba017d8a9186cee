"""Lab 14: the fault generators against hand counts, determinism per student, the grader's
recomputation, and the notebook headless (locked, committed, every instrument at both ends, submit)."""

import json

import numpy as np
import pytest

from labs.core.engine import debugging as dbg
from labs.core.engine.topology import group_cost
from labs.core.scenarios import lab14
from labs.variants import variant

pytestmark = pytest.mark.usefixtures("ledger_dir")

J = lab14.run_job()
RANK = 1234  # node 154, TP index 2, DP index 26 under TP-CP-DP-PP: stage 1


def _hang(kind, site=0.37, rank=RANK):
    return dbg.hang(J, dbg.Fault(kind, rank, dbg.fault_site(J, kind, site)))


def test_the_layout_is_megatrons():
    tp, cp, dp, pp = J.coords[RANK]
    assert (tp, dp, pp) == (RANK % 8, (RANK // 8) % 128, RANK // 1024)
    assert list(J.members("tp", J.group_ids["tp"][RANK])) == list(range(1232, 1240))
    assert list(J.members("dp", J.group_ids["dp"][RANK])) == list(range(1026, 2048, 8))
    assert list(J.members("pp", J.group_ids["pp"][RANK])) == [210, 1234, 2258, 3282]


def test_the_program_holds_the_engines_calls_and_sizes():
    uses = {u.key: u for u in J.est.collectives}
    prog = J.program
    assert sum(c.axis == "tp" for c in prog) == uses["tp"].calls
    assert sum(c.axis == "pp" for c in prog) == uses["pp"].calls
    assert sum(c.axis == "dp" and c.op == "reduce_scatter" for c in prog) == uses["dp_reduce"].calls
    tp = next(c for c in prog if c.axis == "tp")
    assert tp.nbytes * 7 / 8 == pytest.approx(uses["tp"].sent_bytes / uses["tp"].calls)


def test_a_skipped_collective_stops_exactly_its_group_one_short():
    h = _hang("skipped_collective")
    group = J.members("tp", J.group_ids["tp"][RANK])
    done = h.last_completed_seq("tp")
    k = h.base("tp") + h.window.seq[len(J.program) + h.fault.at] + 1  # the skipped call's sequence id
    assert set(done[group]) == {k - 1}
    others = np.setdiff1d(np.arange(J.ranks), group)
    assert (done[others] != k - 1).all()
    assert all(h.waiting(r) is not None for r in others)  # every other rank waits in some call
    mine = dbg.flight_record(h, RANK)["entries"][-2]  # its entry at k: the call its peers issue next
    peer = dbg.flight_record(h, int(group[0]))["entries"][-2]
    assert mine["collective_seq_id"] == peer["collective_seq_id"] == k and mine["state"] == peer["state"] == "started"
    assert (mine["profiling_name"], peer["profiling_name"]) == ("nccl:reduce_scatter", "nccl:all_gather")


def test_a_size_mismatch_shows_in_input_sizes():
    h = _hang("size_mismatch")
    group = J.members("dp", J.group_ids["dp"][RANK])
    mine, peer = (dbg.flight_record(h, int(r)) for r in (RANK, group[0]))
    started = lambda rec: next(e for e in rec["entries"] if e["state"] == "started")  # noqa: E731
    assert started(mine)["collective_seq_id"] == started(peer)["collective_seq_id"]
    assert started(mine)["input_sizes"][0][0] - started(peer)["input_sizes"][0][0] == J.model.hidden


@pytest.mark.parametrize("kind", ["dead_nic", "flapping_nic"])
def test_a_dead_nic_leaves_every_member_arrived_and_none_done(kind):
    h = _hang(kind)
    row = next(r for r in h.not_arrived("dp") if r["group"] == J.group_ids["dp"][RANK])
    assert row["arrived"] == row["members"] == 128 and row["missing"] == []
    assert any(("IBV_WC_RETRY_EXC_ERR" if kind == "dead_nic" else "Link down") in line for line in dbg.log_lines(h))


def test_a_gpu_off_the_bus_leaves_no_dump():
    h = _hang("gpu_fell_off_bus")
    assert dbg.flight_record(h, RANK) is None and dbg.flight_record(h, RANK + 1) is not None
    assert any("Xid" in line and ": 79," in line for line in dbg.log_lines(h))


def test_the_deadlock_is_a_cycle_through_the_world_group():
    h = _hang("order_deadlock")
    assert h.waiting(RANK).axis == "world"
    dp = h.not_arrived("dp")
    assert len(dp) == 1 and dp[0]["missing"] == [RANK]
    world = h.not_arrived("world")[0]
    peers = set(J.members("dp", J.group_ids["dp"][RANK])) - {RANK}
    assert set(world["missing"]) == peers  # the world waits for its DP peers, who wait for it


def test_a_dataloader_stall_leaves_its_last_entry_completed():
    h = _hang("dataloader_stall")
    rec = dbg.flight_record(h, RANK)
    assert all(e["state"] == "completed" for e in rec["entries"])
    assert any(r["missing"] == [RANK] for r in h.not_arrived("pp"))


def test_ring_pacing_equals_the_slow_links_share():
    """One NIC at half speed: the DP ring's reduce-scatter takes the engine's group cost over a
    link at half speed, and its members' DP time grows by exactly that much wire time."""
    p = J.plan
    u = next(u for u in J.est.collectives if u.key == "dp_reduce")
    nbytes = u.sent_bytes / u.calls * 128 / 127
    from dataclasses import replace

    slow = replace(J.cluster, inter=replace(J.cluster.inter, efficiency=J.cluster.inter.efficiency * 0.5))
    expected = group_cost("reduce_scatter", nbytes, slow, 128, p.tp, "ring").total_s / group_cost("reduce_scatter", nbytes, J.cluster, 128, p.tp, "ring").total_s
    assert dbg.ring_pacing(J, 0.5) == pytest.approx(expected)
    t = dbg.slow_timings(J, dbg.Fault("slow_nic", RANK, 0, 0.5), steps=4)
    ring = J.members("dp", J.group_ids["dp"][RANK])
    mean = t.dp_comm_s.mean(axis=0)
    assert mean[ring].mean() - mean[np.setdiff1d(np.arange(J.ranks), ring)].mean() == pytest.approx(u.wire_s * (expected - 1), rel=0.02)


@pytest.mark.parametrize("kind", list(dbg.SLOW_FAULTS))
def test_each_slowness_fault_flags_its_rank(kind):
    mag = lab14.SLOW_MAGNITUDES[kind][-1]
    t = dbg.slow_timings(J, dbg.Fault(kind, RANK, 0, mag), steps=20)
    assert t.slowdown > 1.01 and np.isfinite(t.step_s).all()
    group = "world" if kind in ("slow_nic", "unbalanced_stage") else "tp" if kind == "throttled_gpu" else "world"
    assert RANK in lab14.flagged(t, J, group, 3)


STATS = ("compute_mean_s", "dp_comm_mean_s", "checkpoint_max_s", "step_s")


@pytest.mark.parametrize("kind", list(dbg.SLOW_FAULTS))
def test_the_graders_rank_stats_are_the_timings_to_the_bit(kind):
    """slow_stats (what the grader reads: no steps x ranks arrays) against the means and maxima of
    slow_timings' arrays: equal to the last bit, at both magnitudes, at seeds at the field's edges
    (offset 0, the last step, the last rank, past one lap) and at steps without a checkpoint."""
    cases = [(mag, seed, 40, 10) for mag in lab14.SLOW_MAGNITUDES[kind] for seed in (0, 1, 39, 40, RANK, 4095, 4096 + 41, 81_919)]
    cases += [(lab14.SLOW_MAGNITUDES[kind][0], RANK, 20, 7), (lab14.SLOW_MAGNITUDES[kind][0], 3, 5, 10)]
    for mag, seed, steps, every in cases:
        fault = dbg.Fault(kind, (seed * 7 + 11) % J.ranks, 0, mag)
        full = dbg.rank_stats(dbg.slow_timings(J, fault, steps=steps, seed=seed, checkpoint_every=every))
        fast = dbg.slow_stats(J, fault, steps=steps, seed=seed, checkpoint_every=every)
        for name in STATS:
            a, b = getattr(full, name), getattr(fast, name)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), (name, mag, seed, steps, f"largest difference {np.abs(a - b).max():.3g}")
        assert fast.slowdown == full.slowdown and fast.healthy_step_s == full.healthy_step_s


def test_outliers_divide_by_each_groups_median():
    values = np.random.default_rng(3).lognormal(0, 0.01, J.ranks)
    values[RANK] = 2.0
    for axis in ("tp", "dp", "pp", "world"):
        gid = J.group_ids[axis]
        median = {g: np.median(values[gid == g]) for g in np.unique(gid)}
        expected = values / np.array([median[g] for g in gid])
        assert np.array_equal(dbg.outliers(values, gid), expected), axis
        assert np.array_equal(dbg.group_outliers(values, J, axis), expected), axis
    assert dbg.outliers(values, J.group_ids["tp"])[RANK] > 1.9


@pytest.mark.parametrize("kind", list(dbg.HANG_FAULTS))
def test_the_watchdog_rank_is_the_one_the_log_names(kind):
    h = _hang(kind)
    line = next(x for x in dbg.log_lines(h) if "Watchdog caught" in x)
    assert dbg.watchdog_rank(h) == int(line.split("]")[0].removeprefix("[rank")) != h.fault.rank


def test_bad_input_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="fault.kind"):
        dbg.hang(J, dbg.Fault("cosmic_ray", 0))
    with pytest.raises(ValueError, match="fault.rank"):
        dbg.hang(J, dbg.Fault("dead_nic", J.ranks))
    with pytest.raises(ValueError, match="timeout_s"):
        dbg.timeout_loss(0, 4096, 600, 60, 10)


def test_the_timeout_answer_is_the_first_setting_above_the_healthy_wait():
    for gbps in lab14.VARIANT_SYNC_STORAGE_GBPS:
        f = lab14.timeout_facts(gbps, 60)
        above = [t for t in lab14.TIMEOUT_SETTINGS_MIN if t * 60 > f["wait_s"]]
        assert f["best_min"] == above[0]
        # hand count: 70B x 14 bytes (bf16 weights + fp32 master, m, v) through one writer
        assert f["wait_s"] == pytest.approx(J.model.params * 14 / min(gbps * 1e9, J.cluster.inter_bytes_per_s_per_gpu), rel=1e-6)


def test_variants_are_deterministic_and_differ_between_students():
    a1, a2 = variant(lab14.LAB, "alice"), variant(lab14.LAB, "alice")
    assert a1.settings == a2.settings and a1.questions["culprit"].options == a2.questions["culprit"].options
    keys = {variant(lab14.LAB, f"s{i}").questions["culprit"].spec.options[0].label for i in range(8)}
    assert len(keys) > 4  # the right answer's content differs between students
    kinds = {variant(lab14.LAB, f"s{i}").settings["hang"] for i in range(30)}
    assert len(kinds) >= 5


def test_the_grader_recomputes_the_outcome():
    v = variant(lab14.LAB, "student")
    q = v.questions
    preds = {"culprit": q["culprit"].key, "kind": q["kind"].key, "timeout": str(q["timeout"].spec.answer)}
    inputs = {"view_axis": "tp", "timeout_min": 10, "outlier_group": "tp", "threshold_pct": 5.0}
    out = lab14.diagnosis_outcomes(inputs, preds, v)
    assert out["culprit_correct"] and out["kind_correct"] and out["timeout_correct"]
    assert out["culprit_rank"] == v.settings["rank"]
    assert json.loads(json.dumps(out)) == out
    with pytest.raises(ValueError, match="timeout_min"):
        lab14.diagnosis_outcomes({**inputs, "timeout_min": 11}, preds, v)


# ---- the notebook, headless ----------------------------------------------------------------------
import marimo as mo  # noqa: E402

from test_notebooks import LABS, Pressed, committed, shared_app, mine, right, text_of, wrong  # noqa: E402

LAB14 = next(p for p in LABS if p.name == "14_debugging_at_scale.py")
CU, KI, TO = (mine(lab14.LAB, q) for q in ("culprit", "kind", "timeout"))
ALL = {**committed("culprit", CU, CU.key), **committed("kind", KI, KI.key), **committed("timeout", TO, right(TO))}
GATED = ("Who has not arrived", "The injected fault", "Key takeaways", "The rules behind", "GPU-hours lost a month")


@pytest.fixture(scope="module")
def app():
    return shared_app(LAB14)


def test_locked_by_default(app):
    outputs, defs = app.run()
    text = text_of(outputs)
    assert "Commit to a prediction" in text and "submitted" not in defs
    for hidden in (*GATED, "engine says", "Right"):
        assert hidden not in text
    t = lab14.slow_of(variant(lab14.LAB, "student").settings)
    assert f"{t.slowdown - 1:.0%} slower" in text  # the stakeholder's number is the engine's


@pytest.mark.parametrize("which", ["right", "wrong"])
def test_every_reveal_agrees_with_the_engine(app, which):
    pick = (lambda q: right(q)) if which == "right" else wrong
    outputs, defs = app.run(defs={**committed("culprit", CU, pick(CU)), **committed("kind", KI, pick(KI)), **committed("timeout", TO, pick(TO))})
    text = text_of(outputs)
    for heading in GATED:
        assert heading in text
    assert (text.count("Right.") + text.count("Right:")) == (3 if which == "right" else 0)
    h = lab14.variant_hang(variant(lab14.LAB, "student").settings)
    assert f"rank {h.fault.rank}" in text
    t = lab14.slow_of(variant(lab14.LAB, "student").settings)
    assert f"B · {t.slowdown - 1:.0%} slower: per-rank step timings" in text  # the section's number is the student's, not a typed-in 15%


def instruments(axis: str = "tp", group: str = "world", pct: int = 5, minutes: int = 10) -> dict:
    """defs standing in for the cell that makes the four instruments the ledger records (the
    notebook's: each shown through a copy of its HTML, read by diagnosis_inputs())."""
    axis_dropdown = mo.ui.dropdown(options={"a": axis}, value="a")
    outlier_dropdown = mo.ui.dropdown(options={"g": group}, value="g")
    threshold_slider = mo.ui.slider(steps=[1, pct] if pct != 1 else [1, 50], value=pct)
    timeout_slider = mo.ui.slider(steps=list(lab14.TIMEOUT_SETTINGS_MIN), value=minutes)
    return {"axis_dropdown": axis_dropdown, "outlier_dropdown": outlier_dropdown, "threshold_slider": threshold_slider, "timeout_slider": timeout_slider,
            "axis_panel": mo.Html(axis_dropdown.text), "timeout_panel": mo.Html(timeout_slider.text),
            "outlier_panel": mo.hstack([outlier_dropdown, threshold_slider]),
            "diagnosis_inputs": lambda: {"view_axis": axis, "timeout_min": minutes, "outlier_group": group, "threshold_pct": float(pct)}}


def rank_field(h, rank: int) -> dict:
    rank_input = mo.ui.number(start=0, stop=h.job.ranks - 1, value=rank)
    return {"rank_input": rank_input, "rank_panel": mo.Html(rank_input.text)}


def test_instruments_at_both_ends(app):
    h = lab14.variant_hang(variant(lab14.LAB, "student").settings)
    for axis in ("tp", "world"):
        for rank in (0, h.job.ranks - 1):
            outputs, _ = app.run(defs={**ALL, **instruments(axis=axis), **rank_field(h, rank)})
            text = text_of(outputs)
            assert f"Rank {rank}&#x27;s last" in text or f"Rank {rank}'s last" in text or f"Rank {rank} left no" in text
            assert f"last completed call in each rank&#x27;s {axis.upper()} group" in text or f"each rank's {axis.upper()} group" in text
    for group, pct in (("tp", 1), ("world", 50)):
        outputs, defs = app.run(defs={**ALL, **instruments(group=group, pct=pct)})
        t = lab14.slow_of(variant(lab14.LAB, "student").settings)
        flagged = lab14.flagged(t, h.job, group, float(pct))
        card = f'<div class="value">{len(flagged):,}</div><div class="label">ranks flagged</div>'
        assert card in text_of(outputs) or card.replace('"', "&quot;") in text_of(outputs), (group, pct, len(flagged))
        print(group, pct, "flagged", len(flagged))
    for minutes in (TIMEOUT := (lab14.TIMEOUT_SETTINGS_MIN[0], lab14.TIMEOUT_SETTINGS_MIN[-1])):
        outputs, defs = app.run(defs={**ALL, **instruments(minutes=minutes)})
        loss = defs["timeout_view"]["loss"][minutes]["gpu_hours"]
        assert f"{loss:,.0f}" in text_of(outputs)
    assert TIMEOUT[0] < TIMEOUT[1]


def test_a_change_is_recorded_and_the_first_commit_graded(app, ledger_dir):
    from labs.core.state import DesignLedger

    app.run(defs=committed("kind", KI, KI.key))
    outputs, defs = app.run(defs=committed("kind", KI, wrong(KI)))
    record = DesignLedger(None, ledger_dir).committed(lab14.LAB, "kind")
    assert record["answer"] == KI.key and [c["answer"] for c in record["changes"]] == [wrong(KI)]


def test_submit_lands_in_the_ledger_and_the_grader_recomputes_it(app, ledger_dir):
    from labs.grade import grade_document

    _, defs = app.run(defs={**ALL, "submit_button": Pressed()})
    doc = defs["submitted"]
    step = doc["labs"][lab14.LAB][lab14.STEP]
    assert step["outcomes"]["culprit_correct"] and step["outcomes"]["kind_correct"] and step["outcomes"]["timeout_correct"]
    rows = grade_document(doc, "ledger.json")
    assert rows[0]["status"] == "ok" and not rows[0]["tampered"] and rows[0]["right"] == 3
    forged = json.loads(json.dumps(doc))
    forged["labs"][lab14.LAB][lab14.STEP]["outcomes"]["culprit_rank"] = 0 if step["outcomes"]["culprit_rank"] else 1
    assert grade_document(forged, "forged.json")[0]["tampered"]


# ---- the live-lecture hold (ui.gate, the commits' held=): as tests/test_lecture_hold.py checks Labs 05-13 ----
@pytest.mark.parametrize("key", ["culprit", "kind", "timeout"])
def test_a_held_question_shows_nothing_of_its_answer_after_commit(key, tmp_path, monkeypatch):
    from pathlib import Path

    from lab_hold import check_held_question

    check_held_question(Path(__file__).resolve().parents[1] / "labs" / "14_debugging_at_scale.py", key, tmp_path, monkeypatch)
