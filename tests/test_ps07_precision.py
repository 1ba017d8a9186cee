"""Problem set 7, precision: engine vs formula at 50 ids, the notebook headless, marimo check and
export, and the formats' anchor values (ml_dtypes' finfo, the OCP MX and NVFP4 layouts)."""

import pytest

from labs.core.scenarios.problems_precision import CHAPTER
from problem_checks import check_engine_and_formula_agree, check_locked, check_marimo, check_reveal_and_submit, check_texts_say_what_is_wrong

pytestmark = pytest.mark.usefixtures("ledger_dir")


def test_engine_and_formula_agree_at_50_ids():
    check_engine_and_formula_agree(CHAPTER)


def test_no_printed_answer_is_named():
    check_texts_say_what_is_wrong(CHAPTER, set())


def test_the_formats_published_limits():
    largest, step = CHAPTER.problem("largest"), CHAPTER.problem("step_at_one")
    got = {f: largest.answer({"format": f}) for f in ("bf16", "fp16", "e4m3", "e5m2")}  # bf16 is not drawn (3.4e38 does not type into a number field)
    assert got["fp16"] == 65504 and got["e4m3"] == 448 and got["e5m2"] == 57344 and got["bf16"] == pytest.approx(3.3895e38, rel=1e-4)
    assert "3.39e+38" in largest.solution({"format": "fp16"})
    assert {f: step.answer({"format": f}) for f in ("bf16", "fp16", "e4m3", "e5m2")} == {"bf16": 2**-7, "fp16": 2**-10, "e4m3": 2**-3, "e5m2": 2**-2}


def test_loss_scale_and_the_lost_update():
    assert CHAPTER.problem("loss_scale").answer({"grad": 1e-7}) == 10  # 2^-14 / 1e-7 = 610: 2^10
    lost = CHAPTER.problem("update_lost")
    assert lost.decide({"w": 1.0, "u": 0.003}) == "lost" and lost.decide({"w": 1.0, "u": 0.005}) == "kept"  # half a step at 1: 2^-8 = 0.0039


def test_block_scales_per_element():
    p = CHAPTER.problem("block_bytes")
    assert p.answer({"format": "mxfp8", "model": "llama3-8b"}) == pytest.approx(1 + 1 / 32)
    assert p.answer({"format": "nvfp4", "model": "llama3-8b"}) == pytest.approx(0.5 + 1 / 16 + 4 / 4096**2)


def test_fp8_cache_is_two_bytes_a_parameter_of_the_shard_on_hopper():
    """By hand: the FP8 copy and its transpose (Hopper), one byte each, of the TP shard's parameters."""
    from labs.core.engine.models import Model

    assert CHAPTER.problem("fp8_cache").answer({"model": "llama3-8b", "tp": 4}) == pytest.approx(Model.get("llama3-8b").params / 4 * 2 / 1e9, rel=1e-6)


def test_locked_before_the_commits():
    check_locked(CHAPTER)


def test_reveal_submit_and_grade(ledger_dir):
    check_reveal_and_submit(CHAPTER, ledger_dir)


def test_marimo_check_and_export(tmp_path):
    check_marimo(CHAPTER, tmp_path)
