"""Problem set 2, memory: engine vs formula at 50 ids, the texts' errors
named, the notebook headless, marimo check and export."""

import pytest

from labs.core.scenarios.problems_memory import CHAPTER
from problem_checks import check_engine_and_formula_agree, check_locked, check_marimo, check_reveal_and_submit, check_texts_say_what_is_wrong

pytestmark = pytest.mark.usefixtures("ledger_dir")


def test_engine_and_formula_agree_at_50_ids():
    check_engine_and_formula_agree(CHAPTER)


def test_the_texts_wrong_answers_are_named():
    check_texts_say_what_is_wrong(CHAPTER, {"state_bytes", "fewest_gpus", "activations"})


def test_seventy_billion_under_zero3_needs_fourteen_h100s_not_two():
    assert CHAPTER.problem("fewest_gpus").answer({"model": "llama3-70b", "gpu": "h100-sxm"}) == 14


def test_activations_are_korthikantis_table_2():
    # GPT-3 175B, s 2048, b 1, t 8, SP + selective: 34 s b h / t per layer (Korthikanti Table 2)
    s = {"model": "gpt3-175b", "seq": 2048, "b": 1, "tp": 8, "recompute": "selective"}
    assert CHAPTER.problem("activations").answer(s) == pytest.approx(96 * 34 * 2048 * 12288 / 8 / 1e9)


def test_locked_before_the_commits():
    check_locked(CHAPTER)


def test_reveal_submit_and_grade(ledger_dir):
    check_reveal_and_submit(CHAPTER, ledger_dir)


def test_marimo_check_and_export(tmp_path):
    check_marimo(CHAPTER, tmp_path)
