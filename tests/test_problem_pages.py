"""What a problem set's page runs (issue 40: a problem's page answers within 1.5x of the floor
page): a click on an answer runs no cell (the commit cell reads the widget through
problem_ui.Answer, so only a commit or a skip runs it), and each problem is two cells (its
heading, field and buttons; its commit, which shows the solution), for every chapter's notebook."""

import importlib
from pathlib import Path

import marimo as mo
import pytest
from test_notebooks import shared_app

from labs.core import problem_ui

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = {m.CHAPTER.name: m.CHAPTER for m in (importlib.import_module(f"labs.core.scenarios.{path.stem}")
                                               for path in sorted((ROOT / "labs" / "core" / "scenarios").glob("problems_*.py")))}
SHARED_CELLS = 10  # header, name, PIN, identity, lecture clock, lecture poll, variant, commitments, submit button, submit and HUD


def test_nine_problem_sets():
    assert len(CHAPTERS) == 9, CHAPTERS


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_a_click_on_an_answer_runs_no_cell(name):
    graph = _graph(name)
    for pid in CHAPTERS[name].ids:
        assert graph.get_referring_cells(f"{pid}_question", language="python") == set(), (name, pid)
        made = graph.get_defining_cells(f"{pid}_answer")
        assert len(made) == 1 and graph.get_defining_cells(f"{pid}_question") == made == graph.get_defining_cells(f"{pid}_commit_buttons"), (name, pid)
        readers = graph.get_referring_cells(f"{pid}_answer", language="python")
        assert len(readers) == 1 and readers == graph.get_referring_cells(f"{pid}_commit_buttons", language="python"), (name, pid)


@pytest.mark.parametrize("name", sorted(CHAPTERS))
def test_two_cells_a_problem(name):
    graph = _graph(name)
    n = len(CHAPTERS[name].ids)
    print(f"{name}: {n} problems, {len(graph.cells)} cells")
    assert len(graph.cells) == SHARED_CELLS + 2 * n + 1  # + the setup cell


def test_the_answer_reads_the_widget_when_read():
    field = mo.ui.number(value=3)
    answer = problem_ui.answer_of(field)
    assert answer.value == 3
    field._update(7)
    assert answer.value == 7



def _graph(name: str):
    app = shared_app(ROOT / "labs" / "problems" / f"{name}.py")
    app._maybe_initialize()  # marimo registers the cells in its graph on first use
    return app._graph


def test_the_commit_cell_shows_the_solution_only_once_committed_and_not_held():
    from labs.core.ui import Commitment
    from labs.variants import variant

    chapter = CHAPTERS["ps02_memory"]
    v, pid, row = variant(chapter.name, "student"), chapter.ids[0], mo.md("the row")
    record = {"answer": "16", "committed": "2026-11-28T00:00:00+00:00", "changes": []}
    assert problem_ui.committed(chapter, v, pid, row, Commitment(None)) is row
    held = problem_ui.committed(chapter, v, pid, row, Commitment(record, held=True)).text
    assert "is holding" in held and "Worked back-of-envelope" not in held
    shown = problem_ui.committed(chapter, v, pid, row, Commitment(record)).text
    assert "the row" in shown and "Worked back-of-envelope" in shown and "is holding" not in shown
