"""Problem set 6, context and expert parallelism: engine vs formula at 50 ids, the notebook
headless, marimo check and export, and the lessons' anchor values."""

import pytest

from labs.core.scenarios.problems_context_experts import CHAPTER
from problem_checks import check_engine_and_formula_agree, check_locked, check_marimo, check_reveal_and_submit, check_texts_say_what_is_wrong

pytestmark = pytest.mark.usefixtures("ledger_dir")


def test_engine_and_formula_agree_at_50_ids():
    check_engine_and_formula_agree(CHAPTER)


def test_no_printed_answer_is_named():
    check_texts_say_what_is_wrong(CHAPTER, set())


def test_llama3_405b_ring_block_and_ulysses_limit():
    # Llama 3 405B: 8 K/V heads of 128; 128K tokens over CP 16, TP 8: 2 x 8,192 x 1,024 / 8 x 2 bytes = 4.19 MB a hop
    assert CHAPTER.problem("ring_kv").answer({"model": "llama3-405b", "seq": 131072, "cp": 16, "tp": 8}) == pytest.approx(4.194304)
    # 128 query heads / TP 8 = 16 per rank: Ulysses to 16 (K/V repeated), 1 without repeating the single K/V head
    s = {"model": "llama3-405b", "tp": 8}
    assert CHAPTER.problem("ulysses_degree").answer(s) == 16 and CHAPTER.problem("ulysses_degree").refined(s) == 1


def test_ring_hop_hides_at_a_few_hundred_tokens_on_nvlink():
    # H100: 989.4 TFLOP/s against 450 GB/s, Llama 3 70B's 8 of 64 heads: 989.4e12 x 8 / (450e9 x 64) = 275 tokens
    assert CHAPTER.problem("ring_hides").answer({"model": "llama3-70b", "gpu": "h100-sxm", "link": "nvlink"}) == pytest.approx(274.83, rel=1e-4)


def test_causal_contiguous_and_zigzag():
    s = {"cp": 8, "seq": 131072}
    assert CHAPTER.problem("causal").answer(s) == pytest.approx(1.875, rel=1e-4)
    assert CHAPTER.problem("causal").refined(s) == pytest.approx(1.0)


def test_moe_bytes_are_tokens_topk_hidden_bytes_and_do_not_shrink_with_ep():
    p = CHAPTER.problem("moe_bytes")
    s = {"model": "deepseek-v3", "tokens": 4096, "ep": 64, "dispatch": 1}
    assert p.answer(s) == pytest.approx(4096 * 8 * 7168 * 3 * 63 / 64 / 1e6)
    assert p.answer({**s, "ep": 8}) == pytest.approx(4096 * 8 * 7168 * 3 * 7 / 8 / 1e6)


def test_locked_before_the_commits():
    check_locked(CHAPTER)


def test_reveal_submit_and_grade(ledger_dir):
    check_reveal_and_submit(CHAPTER, ledger_dir)


def test_marimo_check_and_export(tmp_path):
    check_marimo(CHAPTER, tmp_path)
