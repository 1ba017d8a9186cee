"""Problem set 1, collectives and alpha-beta: engine vs formula at 50 ids, the texts' errors
named, the notebook headless, marimo check and export."""

import pytest

from labs.core.scenarios.problems_collectives import CHAPTER
from problem_checks import check_engine_and_formula_agree, check_locked, check_marimo, check_reveal_and_submit, check_texts_say_what_is_wrong

pytestmark = pytest.mark.usefixtures("ledger_dir")


def test_engine_and_formula_agree_at_50_ids():
    check_engine_and_formula_agree(CHAPTER)


def test_the_two_way_nvlink_figure_and_the_tree_priced_as_a_ring_are_named():
    check_texts_say_what_is_wrong(CHAPTER, {"tp_twoway", "crossover"})


def test_nvlink_is_one_way_in_every_statement():
    from labs.core.engine.hardware import Cluster

    s = {"node": "dgx-h100", "mb": 32}
    text = CHAPTER.problem("tp_twoway").statement(s) + CHAPTER.problem("tp_twoway").solution(s)
    assert "900" in text and "450" in text  # the datasheet's two-way figure, and the one way a ring uses
    assert Cluster.get("dgx-h100").intra.bandwidth_bytes_per_s == 450e9


def test_locked_before_the_commits():
    check_locked(CHAPTER)


def test_reveal_submit_and_grade(ledger_dir):
    check_reveal_and_submit(CHAPTER, ledger_dir)


def test_marimo_check_and_export(tmp_path):
    check_marimo(CHAPTER, tmp_path)
