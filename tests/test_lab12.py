"""Lab 12: the casts against ml_dtypes and hand-derived expectations, each reveal's key against an
independently derived one at every variant, and the notebook headless (locked, unlocked, submit,
grade)."""

import itertools
import json
import math

import ml_dtypes
import numpy as np
import pytest

import marimo as mo
from labs import grade
from labs.core.engine import precision
from labs.core.engine.models import Model
from labs.core.scenarios import lab12
from labs.variants import Draw, variant
from test_notebooks import LABS, Commit, Pressed, committed, shared_app, text_of

pytestmark = pytest.mark.usefixtures("ledger_dir")

LAB12 = next(p for p in LABS if p.name == "12_precision_and_memory.py")
ALL_SETTINGS = [dict(zip(("grad_low_exp", "grad_high_exp", "sample_seed", "fp8_case"), combo))
                for combo in itertools.product(lab12.LOW_EXPS, lab12.HIGH_EXPS, lab12.SAMPLE_SEEDS, sorted(lab12.FP8_CASES))]


# ---- the formats, against ml_dtypes and by hand ------------------------------------------------------
def test_format_limits_are_the_published_ones():
    # OCP FP8 spec (Micikevicius et al. 2022 Table 1): E4M3 max 448, min subnormal 2^-9; E5M2 max 57344, min subnormal 2^-16
    f = precision.FORMATS
    assert (f["e4m3"].max, f["e4m3"].smallest_subnormal, f["e4m3"].mantissa_bits) == (448.0, 2.0**-9, 3)
    assert (f["e5m2"].max, f["e5m2"].smallest_subnormal, f["e5m2"].mantissa_bits) == (57344.0, 2.0**-16, 2)
    assert (f["fp16"].max, f["fp16"].smallest_subnormal) == (65504.0, 2.0**-24)
    assert f["bf16"].smallest_normal == 2.0**-126 and f["bf16"].mantissa_bits == 7


def test_round_trip_is_ml_dtypes_own_cast_and_rounds_to_nearest_even():
    x = np.random.default_rng(3).standard_normal(10_000) * 50
    for name, dtype in (("bf16", ml_dtypes.bfloat16), ("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2)):
        expected = x.astype(np.float32).astype(dtype).astype(np.float64)
        got = precision.round_trip(x, name)
        assert np.array_equal(np.isnan(got), np.isnan(expected))
        assert np.array_equal(got[~np.isnan(got)], expected[~np.isnan(expected)])
    # by hand: E4M3 spacing is 1/8 on [1, 2): 1.0625 is a tie (to even: 1.0), 1.1 rounds to 1.125
    assert list(precision.round_trip(np.array([1.0625, 1.1, 1.19, 448.0, 1e-3]), "e4m3")) == [1.0, 1.125, 1.25, 448.0, 2.0**-10 * 2]


def test_fp16_flushes_the_share_a_log_uniform_sample_puts_below_half_its_smallest_subnormal():
    for s in ALL_SETTINGS:
        lo, hi = s["grad_low_exp"], s["grad_high_exp"]
        expected = (math.log10(2.0**-25) - lo) / (hi - lo)  # P(|g| < 2^-25) for log10|g| ~ U(lo, hi)
        got = precision.cast_report(lab12.gradients(s), "fp16")["flushed"]
        sd = math.sqrt(expected * (1 - expected) / lab12.GRADIENT_SAMPLE)
        assert abs(got - expected) < 5 * sd, (s, got, expected)
    assert precision.cast_report(lab12.gradients(ALL_SETTINGS[0]), "bf16")["flushed"] == 0  # bf16's floor is 1e-40


def test_safe_loss_scales_are_those_that_lift_the_smallest_and_spare_the_largest():
    for s in ALL_SETTINGS[:: len(lab12.FP8_CASES)]:
        g = np.abs(lab12.gradients(s))
        lo, hi = g.min(), g.max()
        # fp16 keeps S|g| > 2^-25 (above half the smallest subnormal) and < 65520 (max + half an ulp)
        expected = [k for k in range(lab12.LOSS_SCALE_RANGE[0], lab12.LOSS_SCALE_RANGE[1] + 1) if 2.0**k * lo > 2.0**-25 and 2.0**k * hi < 65520]
        assert lab12.safe_loss_scales(s) == expected


def test_per_tile_scaling_beats_per_tensor_only_where_outliers_stretch_the_range():
    x = precision.activation_sample(outlier_scale=1.0, **lab12.ACTIVATION_SHAPE)
    same = [precision.quantisation_error(x, "e4m3", s)["median_rel_error"] for s in precision.SCALINGS]
    assert max(same) / min(same) < 1.05  # no outliers: every granularity keeps 3 mantissa bits, ~2% median error
    assert 0.01 < same[0] < 0.04
    rows = {(r["format"], r["scaling"]): r for r in lab12.scaling_rows(100_000)}
    assert rows[("e4m3", "tensor")]["flushed"] > 0.3  # ordinary values land below E4M3's floor
    assert rows[("e4m3", "tile")]["median_rel_error"] < rows[("e4m3", "tensor")]["median_rel_error"] / 10
    assert rows[("e5m2", "tensor")]["flushed"] < 1e-3  # E5M2's range absorbs the outliers


def test_a_constant_block_comes_back_to_the_rounding_of_its_fp32_scale():
    x = np.full((128, 256), 3.0)  # amax maps to 448 exactly; only the fp32 scale 3/448 is rounded
    for s in precision.SCALINGS:
        assert np.allclose(precision.quantise(x, "e4m3", s), x, rtol=2.0**-23, atol=0)


def test_accumulation_in_fp32_is_exact_and_promotion_every_128_cuts_the_bf16_error():
    a, b = precision.dot_products(32, 4096)
    assert precision.accumulation_error(a, b, "fp32") < 1e-6
    plain, promoted = precision.accumulation_error(a, b, "bf16"), precision.accumulation_error(a, b, "bf16", 128)
    assert promoted < plain / 2
    assert precision.accumulation_error(*precision.dot_products(32, 16384), "bf16") > precision.accumulation_error(*precision.dot_products(32, 512), "bf16")


def test_the_narrow_accumulator_rounds_on_the_bits_as_significant_bits_does():
    """The ~14-bit accumulator keeps its bits on the float64's bit pattern (precision._keep_bits_in_place):
    the same bits as significant_bits' frexp and rounding, on values over 60 decades and on
    hand-made ties: 1 + 2^-14 is half way between 1 and 1 + 2^-13 (to even: 1), 1 + 3 x 2^-14
    between 1 + 2^-13 and 1 + 2^-12 (to even: 1 + 2^-12), 2 - 2^-14 rounds up into the next binade."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(200_000) * 10.0 ** rng.integers(-30, 30, 200_000), [0.0, -0.0]])
    ties = np.array([1 + 2.0**-14, 1 + 3 * 2.0**-14, -(1 + 3 * 2.0**-14), 2 - 2.0**-14])
    hand = {"h800-nearest": [1.0, 1 + 2.0**-12, -(1 + 2.0**-12), 2.0], "h800-truncated": [1.0, 1 + 2.0**-13, -(1 + 2.0**-13), 2 - 2.0**-13]}
    for name, rounding in precision.NARROW_ACCUMULATORS.items():
        for values in (x, ties):
            got = values.copy()
            precision._keep_bits_in_place(name)(got)
            assert np.array_equal(got.view(np.uint64), precision.significant_bits(values, precision.H800_ACCUMULATOR_BITS, rounding).view(np.uint64)), name
        got = ties.copy()
        precision._keep_bits_in_place(name)(got)
        print(name, got, hand[name])
        assert got.tolist() == hand[name]


def _one_row_at_a_time(a, b, accumulator, every):
    """The narrow accumulator as the docstring says it: one row, one product at a time, each
    partial sum kept to 14 bits by significant_bits, each run of `every` into an fp32 total."""
    rounding, sums = precision.NARROW_ACCUMULATORS[accumulator], []
    for row_a, row_b in zip(a, b):
        products, total = row_a * row_b, np.float32(0)
        n = every or len(products)
        partials = []
        for start in range(0, len(products), n):
            partial = 0.0
            for p in products[start:start + n]:
                partial = float(precision.significant_bits(np.float64(partial + p), precision.H800_ACCUMULATOR_BITS, rounding))
            partials.append(partial)
        total = np.array(partials, dtype=np.float32).sum(dtype=np.float32)
        sums.append(float(total))
    return np.array(sums)


def test_the_narrow_accumulator_is_its_one_product_at_a_time_reference():
    """accumulate and accumulation_error (every row at once, bits kept in place; significant_bits
    where a product is subnormal-small or huge) give each row's sum of the step-by-step reference."""
    a, b = precision.dot_products(6, 512, seed=2)
    for accumulator in precision.NARROW_ACCUMULATORS:
        for every in (None, 128):
            want = _one_row_at_a_time(a, b, accumulator, every)
            assert np.array_equal(precision.accumulate(a * b, accumulator, every), want), (accumulator, every)
            exact = (a * b).sum(axis=1)
            assert precision.accumulation_error(a, b, accumulator, every) == float(np.median(np.abs(want - exact) / np.abs(exact)))
            odd = a * b
            odd[:, 300] = 1e-310  # a subnormal product: the bits are kept by significant_bits from there on
            assert np.array_equal(precision.accumulate(odd, accumulator, every), _one_row_at_a_time(odd, np.ones_like(odd), accumulator, every))


def test_bad_input_is_refused_by_name():
    for call, name in ((lambda: precision.round_trip([1.0], "fp4"), "format"), (lambda: precision.quantise(np.ones((3, 3)), "e4m3", "tile"), "tile"),
                       (lambda: precision.accumulate(np.ones((2, 100)), "bf16", 128), "promote_every"),
                       (lambda: lab12.check_settings({**lab12.DEFAULT_SETTINGS, "fp8_case": "gpt5"}), "fp8_case"), (lambda: lab12.check_inputs({"log2_loss_scale": 99}), "log2_loss_scale")):
        with pytest.raises(ValueError, match=name):
            call()


# ---- the keys, at every variant ------------------------------------------------------------------------
def korthikanti_extra_flops(model: Model) -> tuple[float, float]:
    """Korthikanti et al. 2022 App. A: model FLOPs 72 BLsh^2 (1 + s/6h + V/12hL); selective recompute
    adds 12 BLs^2h = 72 BLsh^2 * s/6h, full recompute a forward of every layer, 24 BLsh^2 (1 + s/6h)."""
    s, h, L, V = model.seq_len, model.hidden, model.layers, model.vocab
    base = 1 + s / (6 * h) + V / (12 * h * L)
    return (s / (6 * h)) / base, (1 + s / (6 * h)) / 3 / base


def test_recompute_key_is_korthikantis_appendix():
    sel, full = lab12.recompute_measured()
    want_sel, want_full = korthikanti_extra_flops(Model.get(lab12.RECOMPUTE_CASE))
    assert sel == pytest.approx(want_sel, rel=0.02) and full == pytest.approx(want_full, rel=0.02)
    assert lab12.recompute_answer() == "few_percent"  # (2.7%, 33%) lies nearest (3%, 33%)
    rows = {r["recompute"]: r for r in lab12.recompute_rows(True)}
    assert rows["selective"]["extra_flops"] == pytest.approx(rows["none"]["extra_flops"])  # flash attention recomputes already


@pytest.mark.parametrize("settings", ALL_SETTINGS, ids=lambda s: "_".join(map(str, s.values())))
def test_every_variant_keeps_one_right_answer_with_a_margin(settings):
    q = lab12.build_questions(settings)
    lo, hi = settings["grad_low_exp"], settings["grad_high_exp"]
    assert q["underflow"].answer == pytest.approx(100 * (math.log10(2.0**-25) - lo) / (hi - lo), abs=1.0)
    assert 25 < q["underflow"].answer < 60
    est = lab12.fp8_estimates(settings)
    gpu = est["bf16"].cluster.gpu
    assert 1.2 < q["fp8"].answer < gpu.fp8_mamf_flops / gpu.mamf_flops  # under what the measured FP8 GEMMs allow, let alone 2x
    assert abs(q["fp8"].answer - 2.0) > 2 * q["fp8"].tolerance  # "2x, as the peak says" is graded wrong
    assert q["recompute"].correct == "few_percent"
    claims = sorted(abs(c[0] - 0.027) + abs(c[1] - 0.332) for c in lab12.RECOMPUTE_CLAIMS.values())
    assert claims[1] - claims[0] > 0.05


def test_a_students_variant_is_drawn_from_the_ranges():
    for student in ("ada", "grace", "alan", "barbara"):
        v = variant(lab12.LAB, student)
        assert lab12.check_settings(v.settings) == v.settings
        assert v.questions["recompute"].key in "ABCD"
    assert lab12.draw_settings(Draw("x")) == lab12.draw_settings(Draw("x"))


def test_bytes_zoo_has_its_sources_and_fp8_adds_two_bytes_on_hopper():
    rows = {r["recipe"]: r for r in lab12.bytes_rows(lab12.DEFAULT_SETTINGS)}
    assert [rows[k]["bytes"] for k in ("ZeRO", "Megatron bf16", "MaxText", "scaling book")] == [16, 18, 12, 10]
    # by hand: 16 + the FP8 copy and its transpose on the case's H100s, 1 byte each
    assert rows["FP8 GEMMs (Transformer Engine)"]["bytes"] == pytest.approx(16.0 + 2 * 1.0)
    assert all(r["source"] for r in rows.values())


def test_zero2_sends_its_gradients_once_per_micro_batch():
    # by hand: fp32 gradients (4 bytes) reduce-scattered and bf16 weights (2) all-gathered, each
    # rank sending (N-1)/N of them; ZeRO-1 once a step, ZeRO-2's reduce-scatter once per micro-batch
    params, n = Model.get(lab12.ACCUMULATION_CASE[0]).params, lab12.ACCUMULATION_CASE[3]["dp"]
    for m in (1, 8, 64):
        est = lab12.accumulation_estimates(m)
        assert est[1].comm_bytes_per_gpu["dp"] == pytest.approx((n - 1) / n * params * (4 + 2), rel=1e-6)
        assert est[2].comm_bytes_per_gpu["dp"] == pytest.approx((n - 1) / n * params * (4 * m + 2), rel=1e-6)


# ---- the notebook --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def app():
    return shared_app(LAB12)


def _answers(v, underflow=None, recompute=None, fp8=None):
    q = v.questions
    return {
        "underflow_question": mo.ui.number(value=q["underflow"].spec.answer if underflow is None else underflow), "underflow_commit_buttons": Commit(),
        **committed("recompute", q["recompute"].options, q["recompute"].key if recompute is None else recompute),
        "fp8_question": mo.ui.number(value=q["fp8"].spec.answer if fp8 is None else fp8), "fp8_commit_buttons": Commit(),
    }


def test_locked_by_default(app):
    outputs, defs = app.run()
    assert "loss_curves" not in defs and "submitted" not in defs
    text = text_of(outputs)
    assert "Commit to a prediction above" in text
    assert "few percent" in text  # the options show; nothing says which is right
    assert "Right" not in text and "the engine:" not in text


def test_the_stakeholder_numbers_are_the_engines(app):
    outputs, _ = app.run()
    est = lab12.fp8_estimates(variant(lab12.LAB, "student").settings)["bf16"]
    assert f"{est.mfu:.0%} MFU" in text_of(outputs)


def test_right_answers_are_judged_right_and_wrong_ones_wrong(app):
    v = variant(lab12.LAB, "student")
    outputs, defs = app.run(defs=_answers(v))
    text = text_of(outputs)
    assert text.count("Right") >= 3 and "Not quite" not in text
    assert defs["fp16_safe"] == lab12.safe_loss_scales(v.settings)


def test_wrong_answers_are_judged_wrong(app):
    v = variant(lab12.LAB, "student")
    wrong = next(o.key for o in v.questions["recompute"].options if o.key != v.questions["recompute"].key)
    outputs, _ = app.run(defs=_answers(v, underflow=v.questions["underflow"].spec.answer + 10, recompute=wrong, fp8=2.0))
    assert text_of(outputs).count("Not quite") == 3


def test_submit_lands_in_the_ledger_and_the_grader_recomputes_it(app, ledger_dir):
    v = variant(lab12.LAB, "student")
    _, defs = app.run(defs={**_answers(v), "submit_button": Pressed()})
    doc = defs["submitted"]
    step = doc["labs"][lab12.LAB][lab12.STEP]
    assert step["outcomes"]["underflow_correct"] and step["outcomes"]["recompute_correct"] and step["outcomes"]["fp8_correct"]
    assert step["outcomes"]["underflow_percent"] == pytest.approx(v.questions["underflow"].spec.answer)
    table, problems = grade.grade([str(ledger_dir)])
    row = table[(table["lab"] == lab12.LAB)].iloc[0]
    assert not problems and row["status"] == "ok" and row["right"] == 3 and row["variant"] == v.seed


def test_the_instruments_at_both_ends_of_their_ranges_read_finite_numbers():
    for scale, outlier, k, steps in itertools.product(lab12.LOSS_SCALE_RANGE, (lab12.OUTLIER_SCALES[0], lab12.OUTLIER_SCALES[-1]),
                                                     (lab12.ACCUMULATION_KS[0], lab12.ACCUMULATION_KS[-1]), (lab12.ACCUMULATION_STEPS[0], lab12.ACCUMULATION_STEPS[-1])):
        out = lab12.precision_outcomes({"log2_loss_scale": scale, "outlier_scale": outlier, "accumulation_k": k, "accumulation_steps": steps}, {})
        assert all(math.isfinite(v) for v in out.values() if isinstance(v, float)), out
    json.dumps(out)


def test_the_recompute_table_is_the_students_own_case(app):
    """The question asks about the variant's layout and flash setting (edition 2): the table after the
    commit shows that case, the box starts at the variant's flash setting, and its selective row's
    extra FLOPs are the engine's at that case."""
    sid = next(s for s in (f"s{i}" for i in range(200))
               if variant(lab12.LAB, s).settings["recompute_case"] != lab12.RECOMPUTE_CASE)
    v = variant(lab12.LAB, sid)
    case, flash = v.settings["recompute_case"], v.settings["recompute_flash"]
    outputs, defs = app.run(defs={**_answers(v), "student_input": mo.ui.text(value=sid)})
    text = text_of(outputs)
    assert defs["flash_checkbox"].value == flash
    assert lab12.recompute_setting(case) in text
    rows = {r["recompute"]: r for r in lab12.recompute_rows(flash, case)}
    print(sid, case, flash, f"selective {rows['selective']['extra_flops']:.1%}")
    assert f"{rows['selective']['extra_flops']:.1%}" in text and f"{rows['full']['extra_flops']:.1%}" in text
