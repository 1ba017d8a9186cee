"""Problem set 5, pipelines and their bubbles: engine vs formula at 50 ids, the texts' errors
named (the seed's (p-1)/(p m), ZB-H1 printed 4x too small), the notebook headless, marimo check and export."""

import pytest

from labs.core.engine import pipeline as pl
from labs.core.scenarios.problems_pipelines import CHAPTER
from problem_checks import check_engine_and_formula_agree, check_locked, check_marimo, check_reveal_and_submit, check_texts_say_what_is_wrong

pytestmark = pytest.mark.usefixtures("ledger_dir")


def test_engine_and_formula_agree_at_50_ids():
    check_engine_and_formula_agree(CHAPTER)


def test_the_texts_wrong_answers_are_named():
    check_texts_say_what_is_wrong(CHAPTER, {"bubble", "zb_h1"})


def test_the_seeds_layout_idles_27_percent_not_9():
    assert CHAPTER.problem("bubble").answer({"p": 4, "m": 8}) == pytest.approx(100 * 3 / 11)
    assert "9.4%" in CHAPTER.problem("bubble").texts


@pytest.mark.parametrize("p, m", [(8, 32), (4, 16), (16, 64)])
def test_zb_h1_is_a_third_of_1f1b_on_the_generated_timeline(p, m):
    # Qi et al. Table 2 at T_F = T_B = T_W: (p-1)/(3m) of the ideal time, counted slot by slot on the engine's timeline
    s = {"p": p, "m": m, "tw": 1.0}
    counted = pl.timeline(p, m, "zb-h1", costs=pl.OpCosts(1.0, 1.0, 1.0)).bubble_fraction("ideal")
    assert counted == pytest.approx((p - 1) / (3 * m))
    assert CHAPTER.problem("zb_h1").answer(s) == pytest.approx(100 * counted)
    assert CHAPTER.problem("zb_h1").answer(s) == pytest.approx(4 * 100 * (p - 1) / (12 * m))  # four times the printed (p-1)/(12m)
    one_f_one_b = pl.timeline(p, m, "1f1b").bubble_fraction("ideal")
    assert counted == pytest.approx(one_f_one_b / 3)


def test_a_5_percent_bubble_on_16_stages_needs_285_micro_batches():
    assert CHAPTER.problem("fewest_m").answer({"p": 16, "target_pct": 5}) == 285
    assert pl.bubble_fraction(16, 285) <= 0.05 < pl.bubble_fraction(16, 284)


def test_gpipe_holds_m_over_p_times_1f1bs_activations():
    s = {"model": "gpt3-175b", "p": 8, "m": 64}
    assert CHAPTER.problem("gpipe_memory").answer(s) == pytest.approx(8 * CHAPTER.problem("gpipe_memory").refined(s))


def test_a_stage_sends_b_s_h_per_micro_batch_each_way():
    # gpt3-175b, TP 1, 1F1B, m 32: 2 x 32 x 2 x 2048 x 12288 bytes
    s = {"model": "gpt3-175b", "tp": 1, "v": 1, "m": 32}
    assert CHAPTER.problem("p2p").answer(s) == pytest.approx(2 * 32 * 2 * 2048 * 12288 / 1e9)


def test_locked_before_the_commits():
    check_locked(CHAPTER)


def test_reveal_submit_and_grade(ledger_dir):
    check_reveal_and_submit(CHAPTER, ledger_dir)


def test_marimo_check_and_export(tmp_path):
    check_marimo(CHAPTER, tmp_path)
