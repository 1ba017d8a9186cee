"""Problem set 3, data parallelism and the critical batch: engine vs formula at 50 ids, the texts'
errors named, the notebook headless, marimo check and export."""

import pytest

from labs.core.engine import exercises as x
from labs.core.scenarios.problems_dataparallel import CHAPTER
from problem_checks import check_engine_and_formula_agree, check_locked, check_marimo, check_reveal_and_submit, check_texts_say_what_is_wrong

pytestmark = pytest.mark.usefixtures("ledger_dir")


def test_engine_and_formula_agree_at_50_ids():
    check_engine_and_formula_agree(CHAPTER)


def test_the_texts_wrong_answers_are_named():
    check_texts_say_what_is_wrong(CHAPTER, {"ring_time"})


def test_the_ring_sends_twice_the_gradients_whatever_the_ranks():
    # llama2-7b's bf16 gradients, 6.74e9 x 2 bytes: 2 x 1023/1024 of them at 1,024 ranks
    s = {"model": "llama2-7b", "n": 1024, "dtype": "bf16"}
    assert CHAPTER.problem("ring_bytes").answer(s) == pytest.approx(2 * 1023 / 1024 * 2 * 6_738_419_712 / 1e9)


def test_dp_hides_near_the_scaling_books_2500_tokens_on_h100():
    s = {"model": "llama2-7b", "nodes": 8, "dtype": "bf16"}
    assert 1_500 < CHAPTER.problem("hiding").answer(s) < 4_000
    assert CHAPTER.problem("hiding").refined(s) == pytest.approx(63 / 64 * 989.4e12 / 400e9, rel=1e-9)


def test_the_critical_batch_caps_dp():
    # at 2.6 nats B_crit is 2.1M tokens: on 1,024 GPUs that is ~2,000 tokens each, under the threshold
    s = {"model": "llama2-7b", "nodes": 128, "loss": 2.6}
    assert x.critical_batch_tokens(2.6) == pytest.approx(2e8 / 2.6 ** (1 / 0.21))
    assert CHAPTER.problem("grow").decide(s) == "bound"
    assert CHAPTER.problem("grow").decide({**s, "loss": 2.0}) == "hides"


def test_locked_before_the_commits():
    check_locked(CHAPTER)


def test_reveal_submit_and_grade(ledger_dir):
    check_reveal_and_submit(CHAPTER, ledger_dir)


def test_marimo_check_and_export(tmp_path):
    check_marimo(CHAPTER, tmp_path)
