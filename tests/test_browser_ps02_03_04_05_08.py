"""Problem sets 2, 3, 4, 5 and 8 in a real browser (Debian's Chromium, `marimo run`): sign in,
answer and commit every problem (typed numbers and the decisions), see each worked solution open,
submit, download a ledger that validates, and the grader recomputes them all right. Problem set
2's page shows ui's one stylesheet styling ui's components.

The five notebooks are served side by side and loaded in five pages of one Chromium, each signed
in before the first is driven: their servers start and their kernels draw each student's variant
at once, so the five cost about one server start and one first run on top of their commits."""

import pytest
from browser import assert_one_stylesheet, browser_pages, marimo_run_many
from problem_checks import sign_in_browser, solve_in_browser

from labs.core.scenarios import (
    problems_dataparallel,
    problems_failures,
    problems_memory,
    problems_pipelines,
    problems_tensorparallel,
)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("need_chromium")]

STUDENT = "problem set student"
CHAPTERS = [problems_memory.CHAPTER, problems_dataparallel.CHAPTER, problems_tensorparallel.CHAPTER, problems_pipelines.CHAPTER, problems_failures.CHAPTER]


@pytest.fixture(scope="module")
def pages(need_chromium, tmp_path_factory):
    """Each chapter's page, served, loaded and signed in (chapter name: page)."""
    notebooks = [f"problems/{c.name}.py" for c in CHAPTERS]
    envs = [{"LABS_LEDGER_DIR": str(tmp_path_factory.mktemp(f"ledgers_{c.name}"))} for c in CHAPTERS]  # a ledger each: one student's file, five servers
    with marimo_run_many(notebooks, envs) as urls, browser_pages(len(CHAPTERS)) as opened:
        for page, url in zip(opened, urls):
            page.goto(url, wait_until="commit")  # every kernel starts before any page is waited on
        for page in opened:
            sign_in_browser(page, STUDENT)
        yield {c.name: page for c, page in zip(CHAPTERS, opened)}


def test_the_one_stylesheet_styles_ps02(pages):
    """Before the problems are driven; the check leaves the page as it found it."""
    page = pages[problems_memory.CHAPTER.name]
    page.locator(".lab-hud").first.wait_for(timeout=120_000)
    assert_one_stylesheet(page, f"problems/{problems_memory.CHAPTER.name}.py")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_end_to_end(chapter, pages, tmp_path):
    solve_in_browser(pages[chapter.name], chapter, STUDENT, tmp_path / "downloaded.json")
