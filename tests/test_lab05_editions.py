"""Lab 05's sixth edition (issue 38 items 2 and 5): Act I's cause is one of three mechanisms, each
right for a third of the class; Act II draws a GPU generation (DGX H100, DGX B200, GB200 NVL72)
and the layout that wins changes with it. Every right answer is checked here against the engine
with its margin, and the page is run headless for a student of each generation."""

from __future__ import annotations

import functools
import html
import re
from collections import Counter

import marimo as mo
import numpy as np
import pytest

from labs.core.engine.perf import Plan, estimate
from labs.core.engine.search import sweep
from labs.core.scenarios import lab05
from labs.core.variants import Specs
from labs.variants import variant

IDS = [f"student-{i:03d}" for i in range(200)]
LAB = "05_parallelism"
SETTINGS = dict(era="megatron-core-2024", zero_stage=1, recompute="selective", schedule="1f1b")


# ---- margins (tests/test_variants.py's MARGINS[("05_parallelism", 6)]) ----------------------------
def _cause_margins(s: dict, q: dict) -> None:
    """Exactly one of the three causes holds at the stakeholder's runs, by twice the next part."""
    f = lab05.act1_story_facts(s)
    held = [k for k, claim in lab05.ACT1_CLAIMS_V6.items() if claim(f)]
    assert held == [q["cause"].correct], (s, held)
    assert {o.key for o in q["cause"].options} == {"B", "C", "D"} and f["fits"], s
    regime = s["act1_scaling"]
    expected = {"strong": "B", "weak": "D", "buckets": "C"}[regime]
    assert q["cause"].correct == expected, (s, q["cause"].correct)
    if regime == "strong":  # the compute shrank 64x; the reduction grew by less than a quarter
        assert f["compute_ratio"] < 0.02 and f["exposed_growth"] < 1.3 and f["exposed_over_compute"] > 0.75, f
    else:  # the compute stayed put: the reduction's growth is the wall, its latency or its bandwidth part
        assert abs(f["compute_ratio"] - 1) < 1e-9 and f["exposed_growth"] > 2, f
        big, small = ("latency_growth_s", "bandwidth_growth_s") if regime == "buckets" else ("bandwidth_growth_s", "latency_growth_s")
        assert f[big] > 5 * f[small], f


_LAYOUT = re.compile(r"TP=(\d+) x PP=(\d+) x DP=(\d+), micro-batch (\d+)")


@functools.lru_cache(maxsize=32)
def _independent_table(model_key: str, batch: int, platform: str):
    model, cluster = lab05.design_inputs(model_key, platform)
    return sweep(model, cluster, global_batch=batch, **SETTINGS)


@functools.lru_cache(maxsize=32)
def _independent_top(model_key: str, batch: int, platform: str):
    """The independent sweep's fastest layout that fits in 90% of the GPU's memory."""
    table = _independent_table(model_key, batch, platform)
    hbm = lab05.design_inputs(model_key, platform)[1].gpu.hbm_bytes
    return table[table["fits"] & (table["memory_bytes"] <= 0.9 * hbm)].iloc[0]


@functools.lru_cache(maxsize=None)
def _option_estimate(model_key: str, platform: str, tp: int, pp: int, dp: int, mb: int, batch: int):
    """The engine on one option's layout (a pure function of these: test_variants' 2,160 settings
    of the sixth edition offer 4 options each, far fewer distinct ones)."""
    model, cluster = lab05.design_inputs(model_key, platform)
    plan = Plan.for_era(SETTINGS["era"], tp=tp, pp=pp, dp=dp, micro_batch=mb, global_batch=batch, zero_stage=1, recompute="selective",
                        schedule="1f1b", sequence_parallel=tp > 1, tp_comm_overlap=tp > 1)
    return estimate(model, cluster, plan)


def _design_margins(s: dict, q: dict) -> None:
    """The right layout is the fastest of an independent sweep that fits in 90% of the GPU's memory,
    on the variant's platform; every other option is 5% slower or needs 110% of the memory; TP of the
    right one stays inside the NVLink domain; four labels, four misconceptions."""
    design = q["design"]
    model, cluster = lab05.design_inputs(s["design_model"], s["design_platform"])
    batch, hbm = int(s["design_batch"]), cluster.gpu.hbm_bytes
    assert f"On {cluster.gpus:,} {cluster.gpu.name} GPUs" in design.prompt and f"Global batch {batch:,} sequences" in design.prompt
    ests = {}
    for o in design.options:
        tp, pp, dp, mb = map(int, _LAYOUT.fullmatch(o.label).groups())
        assert tp * pp * dp == cluster.gpus == 1024 and model.heads % tp == 0 and model.layers % pp == 0 and mb in (1, 2, 4, 8), (s, o.label)
        ests[o.key] = _option_estimate(s["design_model"], s["design_platform"], tp, pp, dp, mb, batch)
    top = _independent_top(s["design_model"], batch, s["design_platform"])
    right = ests[design.correct]
    assert (right.plan.tp, right.plan.pp, right.plan.micro_batch) == (top["tp"], top["pp"], top["micro_batch"]), (s, top)
    assert right.mfu == pytest.approx(top["mfu"], rel=1e-9) and right.memory.total <= 0.9 * hbm and right.plan.tp <= cluster.domain_gpus
    for key, e in ests.items():
        if key != design.correct:
            assert right.mfu >= 1.05 * e.mfu or e.memory.total >= 1.1 * hbm, (s, key, e.mfu, e.memory.total / 1e9)
    assert len({o.misconception for o in design.options}) == 4 and len({o.label for o in design.options}) == 4


def margins_05_v6(s: dict, q: dict) -> None:
    _cause_margins(s, q)
    _design_margins(s, q)


def test_every_sixth_edition_setting_keeps_its_margins():
    """Every (regime, batch per GPU) of Act I and (model, batch, platform) of Act II, at two slots each."""
    count = 0
    for regime, per_gpu in (("strong", 1), ("weak", 1), ("weak", 2), ("buckets", 1), ("buckets", 2)):
        act1 = {"act1_scaling": regime, "params_b": 7, **({} if regime == "strong" else {"per_gpu_batch": per_gpu})}
        for model_key, batch, platform in lab05.design_cases_v6():
            for shape in (0, 23):
                s = {**act1, "design_model": model_key, "design_batch": batch, "design_platform": platform, "design_shape": shape}
                margins_05_v6(s, Specs(lab05.build_questions_v6(s)))  # Act II's question built when read
                count += 1
    assert count == 5 * 18 * 2


# ---- the draw over 200 ids ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _drawn():
    return [variant(LAB, i, salt="") for i in IDS]


def test_each_generation_and_each_cause_is_drawn():
    drawn = _drawn()
    assert {v.version for v in drawn} == {6}
    platforms = Counter(v.settings["design_platform"] for v in drawn)
    causes = Counter(v.questions["cause"].spec.correct for v in drawn)
    print(f"platforms over 200 ids: {dict(platforms)}; causes: {dict(causes)}")
    assert set(platforms) == set(lab05.DESIGN_PLATFORMS) and min(platforms.values()) >= 40, platforms
    assert set(causes) == {"B", "C", "D"} and min(causes.values()) >= 40, causes


def test_the_best_layout_changes_with_the_generation():
    """For the same model and batch, the right layout differs between generations: for each model at
    some batch, and for some pair of drawn ids that differ only in their GPUs."""
    best = {}
    for model_key, batch, platform in lab05.design_cases_v6():
        best[(model_key, batch, platform)] = lab05.layout_label(lab05.design_best_plan(model_key, batch, platform, lab05.DESIGN_HEADROOM))
    for model_key in lab05.DESIGN_MODELS_V6:
        per_batch = {b: {p: best[(model_key, b, p)] for p in lab05.DESIGN_PLATFORMS} for b in lab05.VARIANT_DESIGN_BATCH_V3}
        print(model_key, per_batch)
        assert any(len(set(layouts.values())) > 1 for layouts in per_batch.values()), (model_key, per_batch)
    # the published contrast: GPT-3 175B needs a pipeline on H100 and none on the NVL72 racks
    assert lab05.design_best_plan("gpt3-175b", 1024, "dgx-h100", 0.9).pp > 1 == lab05.design_best_plan("gpt3-175b", 1024, "gb200-nvl72", 0.9).pp
    by_case = {}
    for v in _drawn():
        s = v.settings
        by_case.setdefault((s["design_model"], s["design_batch"]), {})[s["design_platform"]] = v.questions["design"].spec.correct
    assert any(len(set(keys.values())) > 1 for keys in by_case.values()), by_case


# ---- the distractor search reads the sweep's numbers, not pandas, nor estimate() per layout ------------
def test_the_wrong_layouts_are_the_ones_estimate_finds_plainly_wrong():
    """design_wrong_layouts judges a layout on its sweep row's MFU and memory (estimate() only within
    SWEEP_AGREEMENT of a threshold): the same layouts as estimate() of every candidate, in each case."""
    for model_key, batch, platform in lab05.design_cases_v6():
        model, cluster = lab05.design_inputs(model_key, platform)
        best = lab05.design_best_plan(model_key, batch, platform, lab05.DESIGN_HEADROOM)
        best_mfu = estimate(model, cluster, best).mfu
        table = sweep(model, cluster, batch, **SETTINGS)
        expected, count, seen = [], Counter(), {(best.tp, best.pp, best.micro_batch)}
        for row in table.itertuples():
            tp, pp, mb = int(row.tp), int(row.pp), int(row.micro_batch)
            if (row.sequence_parallel != (tp > 1) or mb > 8 or (tp, pp, mb) in seen or row.cp != 1 or row.ep != 1
                    or batch % (cluster.gpus // (tp * pp) * mb) or model.heads % tp or model.layers % pp):
                continue
            role = lab05.design_role(tp, pp, mb, best, cluster.domain_gpus)
            if count[role] == lab05.DESIGN_ROLE_CAP:
                continue
            e = estimate(model, cluster, lab05.design_plan(tp, pp, mb, batch))
            if best_mfu >= lab05.DESIGN_MARGIN * e.mfu or e.memory.total >= lab05.DESIGN_NO_FIT * cluster.gpu.hbm_bytes:
                count[role] += 1
                expected.append((role, lab05.design_plan(tp, pp, mb, batch)))
                seen.add((tp, pp, mb))
        assert lab05.design_wrong_layouts(model_key, batch, platform, lab05.DESIGN_HEADROOM) == tuple(expected), (model_key, batch, platform)
        assert len({r for r, _ in expected}) >= 3, (model_key, batch, platform)


def test_near_is_the_agreement_band_around_a_threshold():
    assert lab05._near(1.05, 1.05) and lab05._near(1.05 * (1 + 0.5e-9), 1.05) and lab05._near(1.05 * (1 - 0.5e-9), 1.05)
    assert not lab05._near(1.05 * (1 + 2e-9), 1.05) and not lab05._near(1.05 * (1 - 2e-9), 1.05)


def test_the_best_plan_and_its_row_are_the_tables_first_fitting_layout():
    """design_best_plan (from sweep_numbers) and design_best_row (pandas) name the layout of the first
    row of design_table that fits in the headroom, and it fits."""
    for model_key, batch, platform in lab05.design_cases_v6():
        table = lab05.design_table(model_key, batch, platform)
        hbm = lab05.design_inputs(model_key, platform)[1].gpu.hbm_bytes
        for headroom in (None, lab05.DESIGN_HEADROOM):
            rows = table[table["fits"] & (table["memory_bytes"] <= (headroom or 1) * hbm)]
            first = rows.iloc[0]
            plan = lab05.design_best_plan(model_key, batch, platform, headroom)
            assert (plan.tp, plan.pp, plan.micro_batch, plan.sequence_parallel) == (first.tp, first.pp, first.micro_batch, first.sequence_parallel)
            assert lab05.design_best_row(model_key, batch, platform, headroom).equals(first)
            assert estimate(*lab05.design_inputs(model_key, platform), plan).memory.total <= (headroom or 1) * hbm


def test_the_least_excess_is_the_full_sums_first_least():
    """_least_excess picks what argmin of the full sum of excesses picks: at every pick of the sixth
    edition's greedy, on rows with ties (each row twice), and where no rule is passed (all rows 0: the first)."""
    cases = lab05.design_cases_v6()
    candidates = lab05._design_candidates(tuple((*case, lab05.DESIGN_HEADROOM) for case in cases), joint_rules=True)
    profiles = [p[lab05._first_rows(p)] for _, _, p in candidates]
    share, totals, picks = lab05._design_shares(profiles[0].shape[1]), np.zeros(profiles[0].shape[1]), 0
    for _slot in range(len(lab05.DESIGN_SHAPES)):
        for rows in profiles:
            picks += 1
            target = share * picks
            full = int(np.argmin(lab05._excess(totals, rows, target).sum(axis=1)))
            twice = np.ascontiguousarray(np.repeat(rows, 2, axis=0)[::-1])  # every row tied with its copy, in another order
            assert lab05._least_excess(totals, rows, target, rows.max(axis=0)) == full
            assert lab05._least_excess(totals, twice, target, rows.max(axis=0)) == int(np.argmin(lab05._excess(totals, twice, target).sum(axis=1)))
            totals = totals + rows[full]
    assert lab05._least_excess(np.zeros(3), np.full((4, 3), 0.25), np.ones(3), np.full(3, 0.25)) == 0


def test_the_least_excess_sums_again_where_the_order_of_summing_decides():
    """Two rows holding the same excesses in other rules, among rules no row passes: summed without
    those rules they may tie the other way round; _least_excess still picks the full sum's first least."""
    differ = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        passed = np.sort(rng.choice(176, size=60, replace=False))
        values = rng.uniform(0.1, 1.0, 60)
        rows = np.zeros((2, 176))
        rows[0, passed], rows[1, passed] = values, rng.permutation(values)
        zero = np.zeros(176)
        full = int(np.argmin(lab05._excess(zero, rows, zero).sum(axis=1)))
        differ += int(np.argmin(lab05._excess(zero[passed], rows[:, passed], zero[passed]).sum(axis=1))) != full
        assert lab05._least_excess(zero, rows, zero, rows.max(axis=0)) == full, seed
    assert differ  # the case arose


def test_the_distractor_search_does_not_import_pandas():
    """design_trios_v6 runs on every student's page just after its first question: without pandas' import."""
    import subprocess
    import sys

    code = ("import sys; from labs.core.scenarios import lab05; lab05.design_trios_v6(); "
            "print(sorted(m for m in sys.modules if m == 'pandas' or m.startswith('pandas.')))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


# ---- the rank rules the wrong layouts are picked against (design_trios_v5, design_trios_v6) --------------
def test_the_rank_profile_of_a_small_trio_is_the_hand_counted_one():
    """The best TP 8 x PP 8 x DP 16, micro-batch 1, among TP 16 x PP 4 x DP 16 mb 1 and TP 4 x PP 8 x DP 32
    mb 2, each rule counted by hand: a rule picking t options, the key one of them, credits 1/t."""
    key, a, b = (8, 8, 16, 1), (16, 4, 16, 1), (4, 8, 32, 2)
    third = 1 / 3
    # per field: smallest, largest, 2nd smallest, 2nd largest distinct value; then per other field
    # (in field order), without the options holding its largest, then its smallest: smallest, largest;
    # then the value most options share
    tp = [0, 0, 1, 1,  0, 0, 0, 1,  1, 0, 0, 0,  1, 0, 0, 0,  third]  # TPs 8, 16, 4: the key's 8 is the middle one
    pp = [0, .5, 0, 0,  .5, .5, 0, 1,  0, 1, 0, 0,  0, 1, 0, 0,  .5]  # PPs 8, 4, 8: two distinct, no 2nd ones
    dp = [.5, 0, 0, 0,  1, 0, .5, .5,  0, 0, 1, 0,  .5, .5, 0, 0,  .5]  # DPs 16, 16, 32
    mb = [.5, 0, 0, 0,  1, 0, .5, .5,  0, 0, 1, 0,  .5, .5, 0, 0,  .5]  # micro-batches 1, 1, 2
    shared = [.5, 0]  # numbers shared with the others: key {8,16,1} 2 + 1, A {16,4,1} 2 + 1, B {4,8,32,2} 1 + 1
    sums = [1, 0, 0, 0]  # 33, 37, 46
    joint = [third, third,  # each option holds one of the extreme numbers (32 or 1)
             .5, 0, 0, 0,  .5, 0, 0, 0,  # largest numbers 16, 16, 32; smallest 1, 1, 2
             .5, 0, 0, 0]  # digits shown: 5, 6, 5
    options = np.array([key, a, b])[:, :, None]  # options x fields x one trio
    expected = tp + pp + dp + mb + shared + sums
    assert lab05._rank_profiles(options).tolist() == [expected]
    assert lab05._rank_profiles(options, joint_rules=True).tolist() == [expected + joint]
    # trios are rows of their own: the same trio next to another gives the same row
    other = np.array([key, (1, 1, 128, 8), (2, 64, 8, 1)])[:, :, None]
    both = lab05._rank_profiles(np.concatenate([other, options], axis=2), joint_rules=True)
    assert both[1].tolist() == expected + joint


# ---- headless: the page names the student's GPUs and reads its numbers from the engine ----------------
@pytest.fixture(scope="module")
def app():
    from test_notebooks import FLAGSHIP, shared_app

    return shared_app(FLAGSHIP)


def _student(platform: str, cause: str) -> str:
    return next(i for i in (f"gen-{k}" for k in range(2000)) if variant(LAB, i).settings["design_platform"] == platform
                and variant(LAB, i).questions["cause"].spec.correct == cause)


@pytest.mark.parametrize("platform, cause", [("dgx-h100", "D"), ("dgx-b200", "B"), ("gb200-nvl72", "C")])
def test_the_page_is_the_students_generation(app, ledger_dir, platform, cause):
    """A student of each generation (and each cause): the stakeholder names the GPUs with the
    catalog's numbers, Act I's story and reveal are the engine's at the runs, Act II's question names
    the GPUs, the reveal prints the engine's line for every option, the reflection quotes TP 8 against
    TP 16 and the ring's bus bandwidths on that platform, and the engine's best beside the design
    fits in 90% of the memory."""
    from test_notebooks import Pressed, committed, text_of, wrong

    student = _student(platform, cause)
    v = variant(LAB, student)
    c1, c2 = v.questions["cause"], v.questions["design"]
    outputs, defs = app.run(defs={**committed("act1", c1, c1.key), **committed("act2", c2, wrong(c2)), "student_input": mo.ui.text(value=student),
                                  "submit_button": Pressed()})
    text = html.unescape(text_of(outputs))
    model, cluster = lab05.design_inputs(v.settings["design_model"], platform)
    assert lab05.design_platform_text(platform) in text
    assert f"{cluster.gpus:,} {cluster.gpu.name} GPUs of {cluster.gpu.hbm_bytes / 1e9:.1f} GB" in text
    assert c2.prompt.startswith(f"On {cluster.gpus:,} {cluster.gpu.name} GPUs ({lab05.DESIGN_PLATFORM_NAMES[platform]})")
    before = html.unescape(text_of(app.run(defs={"student_input": mo.ui.text(value=student)})[0]))  # the question as it is asked
    assert f"On {cluster.gpus:,} {cluster.gpu.name} GPUs ({lab05.DESIGN_PLATFORM_NAMES[platform]}). Global batch" in before
    for mfu in lab05.act1_story_facts(v.settings)["mfu"]:
        assert f"{mfu:.0%}" in text
    for line in (*c1.explanations.values(), *c2.explanations.values()):
        assert line in text, line
    if cause == "C":
        assert "--ddp-bucket-size 10000000" in text
    assert defs["act2_estimate"].cluster == cluster and defs["act2_estimate"].cluster.gpu.name == cluster.gpu.name
    r = lab05.tp_reflection(v.settings)
    assert f"{r['inside'].time.tp_comm:.2f} s" in text and f"{r['across'].time.tp_comm:.2f} s" in text
    assert r["inside"].cluster == cluster and r["inside"].time.tp_comm < r["across"].time.tp_comm
    whole, one = lab05.design_ring_busbw(platform)
    assert f"{whole / 1e9:.0f} GB/s of bus" in text and f"{one / 1e9:.0f} GB/s inside one domain" in text
    inside_domain = r["across"].plan.tp <= cluster.domain_gpus
    assert (f"both stay inside one {cluster.domain_gpus}-GPU NVLink domain" in text) == inside_domain == (platform == "gb200-nvl72")
    best = lab05.best_design(v.settings["design_batch"], v.settings["design_model"], platform, headroom=lab05.DESIGN_HEADROOM)
    assert best["memory_bytes"] <= 0.9 * cluster.gpu.hbm_bytes and best["tp"] <= cluster.domain_gpus
    assert re.search(rf"MFU</td>\s*<td[^>]*>{defs['act2_estimate'].mfu:.1%}</td>\s*<td[^>]*>{best['mfu']:.1%}</td>", text), "the best's MFU beside yours"
    assert f"NVLink domain of {cluster.domain_gpus} GPUs (TP {best['tp']} here" in text
    steps = defs["submitted"]["labs"][LAB]
    assert steps["act1"]["outcomes"]["prediction_correct"] is True and steps["act2"]["outcomes"]["prediction_correct"] is False
    assert steps["act1"]["inputs"]["bucket_params"] == (lab05.ACT1_SMALL_BUCKET_PARAMS if cause == "C" else None)
