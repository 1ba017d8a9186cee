"""Problem set 4, tensor and sequence parallelism: engine vs formula at 50 ids, the texts' errors
named, the notebook headless, marimo check and export."""

import pytest

from labs.core.scenarios.problems_tensorparallel import CHAPTER
from problem_checks import check_engine_and_formula_agree, check_locked, check_marimo, check_reveal_and_submit, check_texts_say_what_is_wrong

pytestmark = pytest.mark.usefixtures("ledger_dir")


def test_engine_and_formula_agree_at_50_ids():
    check_engine_and_formula_agree(CHAPTER)


def test_the_texts_wrong_answers_are_named():
    check_texts_say_what_is_wrong(CHAPTER, {"tp_across"})


def test_tp_sends_four_all_reduces_and_sp_a_quarter_more_with_its_regather():
    # llama2-70b, 4,096 tokens, TP 8: A = 2 x 4096 x 8192 bytes; 4 x 2 x 7/8 A plain, 10 x 7/8 A with SP's re-gather
    s = {"model": "llama2-70b", "seq": 4096, "b": 1, "tp": 8}
    a = 2 * 4096 * 8192
    assert CHAPTER.problem("tp_bytes").answer(s) == pytest.approx(4 * 2 * 7 / 8 * a / 1e6)
    assert CHAPTER.problem("sp_regather").answer(s) == pytest.approx(1.25 * CHAPTER.problem("tp_bytes").answer(s))


def test_tp_across_h100_nodes_is_nine_times_not_two_and_a_quarter():
    s = {"node": "dgx-h100", "model": "llama2-70b", "seq": 4096, "b": 1, "tp": 8}
    assert CHAPTER.problem("tp_across").answer(s) == pytest.approx(9.0)


def test_gpt3_hides_tp_up_to_the_scaling_books_1_plus_3hB_over_F():
    from labs.core.engine.hardware import Cluster

    s = {"node": "dgx-h100", "model": "gpt3-175b", "seq": 2048}
    gpu = Cluster.get("dgx-h100").gpu
    assert CHAPTER.problem("tp_hiding").answer(s) == pytest.approx(1 + 3 * 12288 * 450e9 / gpu.mamf_flops)


def test_sp_saves_ten_sbh_per_layer_korthikanti():
    # GPT-3 175B, s 2048, b 1, t 8: 96 x 10 x s b h x 7/8
    s = {"model": "gpt3-175b", "seq": 2048, "b": 1, "tp": 8, "recompute": "none"}
    assert CHAPTER.problem("sp_saving").answer(s) == pytest.approx(96 * 10 * 2048 * 12288 * 7 / 8 / 1e9)


def test_locked_before_the_commits():
    check_locked(CHAPTER)


def test_reveal_submit_and_grade(ledger_dir):
    check_reveal_and_submit(CHAPTER, ledger_dir)


def test_marimo_check_and_export(tmp_path):
    check_marimo(CHAPTER, tmp_path)
