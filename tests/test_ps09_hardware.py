"""Problem set 9, hardware: engine vs formula at 50 ids, the texts' errors named, the notebook
headless, marimo check and export, and the anchor values (the catalog's datasheet figures)."""

import pytest

from labs.core.scenarios.problems_hardware import CHAPTER
from problem_checks import check_engine_and_formula_agree, check_locked, check_marimo, check_reveal_and_submit, check_texts_say_what_is_wrong

pytestmark = pytest.mark.usefixtures("ledger_dir")


def test_engine_and_formula_agree_at_50_ids():
    check_engine_and_formula_agree(CHAPTER)


def test_the_two_way_nvlink_figure_is_named():
    check_texts_say_what_is_wrong(CHAPTER, {"ib_vs_nvlink"})
    p = CHAPTER.problem("ib_vs_nvlink")
    s = {"platform": "dgx-h100"}
    text = p.statement(s) + p.solution(s) + p.texts
    assert "900" in text and "450" in text and p.answer(s) == pytest.approx(9.0)  # 450 GB/s one way over NDR's 50


def test_ridge_and_decode_sit_where_the_datasheets_put_them():
    assert CHAPTER.problem("ridge").answer({"gpu": "h100-sxm"}) == pytest.approx(989.4 / 3.35)
    # one token through a weight: about 1 FLOP a byte, far left of any ridge
    bound = CHAPTER.problem("bound")
    assert bound.decide({"model": "llama3-70b", "tokens": 1, "gpu": "b200"}) == "memory"
    assert bound.decide({"model": "llama3-70b", "tokens": 4096, "gpu": "h100-sxm"}) == "compute"


def test_rails_and_the_nvl72_rack():
    rails = CHAPTER.problem("rails")
    assert rails.answer({"cluster": "dgx-h100"}) == pytest.approx(50.0)  # one NDR NIC per GPU
    assert rails.answer({"cluster": "pcie-a100"}) == pytest.approx(25.0 * 2 / 8)  # 2 HDR NICs for 8 GPUs
    # a TP 16 group leaving the NVLink domain pays at least 2x at line rate for a large message
    assert CHAPTER.problem("tp16").answer({"mb": 1024}) > 2.0


def test_locked_before_the_commits():
    check_locked(CHAPTER)


def test_reveal_submit_and_grade(ledger_dir):
    check_reveal_and_submit(CHAPTER, ledger_dir)


def test_marimo_check_and_export(tmp_path):
    check_marimo(CHAPTER, tmp_path)
